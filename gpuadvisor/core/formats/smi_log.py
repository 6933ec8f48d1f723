"""nvidia-smi logs: ``nvidia-smi --query-gpu=... --format=csv -l 1`` output -> per-GPU summaries,
findings about utilization and memory, and a memory :class:`~gpuadvisor.core.formats.measurements.Measurement`.

The log is parsed into per-GPU series and summary statistics, and :func:`diagnose` turns a
summary into findings with the thresholds of :data:`THRESHOLDS`. ``utilization.gpu`` is the
share of the sample period in which any kernel ran (not how many SMs were busy); ``utilization.memory`` is the share in which device memory was read or
written; ``memory.used`` counts every process on the GPU.

References
----------
- NVIDIA, ``nvidia-smi --help-query-gpu`` (field names, units and meanings).
- Seed article for the thresholds: GPU utilization target above 80%; memory use 85 to 95% of
  VRAM; low utilization with high memory suggests bandwidth saturation, low utilization with
  low memory a CPU or data-pipeline bottleneck (see ``docs/measurements.md``).
"""

from __future__ import annotations

import csv
import math
import os
import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType
from typing import Any, NamedTuple

from ..errors import InputError
from ..files import FileKind, csv_problem, expand_user, read_text
from .measurements import Measurement

SMI_DEFAULT_COLUMNS = (
    "timestamp",
    "name",
    "memory.used",
    "memory.total",
    "utilization.gpu",
    "utilization.memory",
)
_SMI_TIME_FORMATS = ("%Y/%m/%d %H:%M:%S.%f", "%Y/%m/%d %H:%M:%S")
_NOT_AVAILABLE = ("[n/a]", "n/a", "[not supported]", "[unknown error]", "")


@dataclass(frozen=True, slots=True)
class GpuSeries:
    """The samples of one GPU from an nvidia-smi log (None where the log said N/A)."""

    gpu: str  # the index, bus id, or position within a timestamp block
    name: str
    seconds: tuple[float | None, ...]  # since the log's first timestamp
    memory_used_mib: tuple[float, ...]
    memory_total_mib: float | None
    gpu_util_pct: tuple[float | None, ...]
    memory_util_pct: tuple[float | None, ...]


@dataclass(frozen=True, slots=True)
class GpuLogSummary:
    """Summary statistics of one GPU's samples."""

    gpu: str
    name: str
    samples: int
    duration_s: float | None
    peak_memory_mib: float
    memory_total_mib: float | None
    mean_gpu_util_pct: float | None
    median_gpu_util_pct: float | None
    p95_gpu_util_pct: float | None
    mean_memory_util_pct: float | None

    @property
    def peak_memory_gib(self) -> float:
        return self.peak_memory_mib / 1024.0

    @property
    def peak_memory_fraction(self) -> float | None:
        """Peak memory used over the card's total (None when the log has no memory.total)."""
        if not self.memory_total_mib:
            return None
        return self.peak_memory_mib / self.memory_total_mib


@dataclass(frozen=True, slots=True)
class LogSummary:
    """Every GPU of a log, and the lines that could not be read."""

    origin: str
    gpus: tuple[GpuLogSummary, ...]
    bad_lines: tuple[tuple[int, str], ...] = ()


@dataclass(frozen=True, slots=True)
class SmiLog:
    """A parsed nvidia-smi log: one series per GPU, plus the skipped lines."""

    origin: str
    columns: tuple[str, ...]
    gpus: dict[str, GpuSeries]
    bad_lines: tuple[tuple[int, str], ...]

    def summary(self) -> LogSummary:
        return LogSummary(
            origin=self.origin,
            gpus=tuple(summarize_series(s) for s in self.gpus.values()),
            bad_lines=self.bad_lines,
        )


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100.0 * len(ordered)))
    return ordered[rank - 1]


def summarize_series(s: GpuSeries) -> GpuLogSummary:
    """Samples, duration, peak memory and utilization statistics of one GPU."""
    util = [u for u in s.gpu_util_pct if u is not None]
    mem_util = [u for u in s.memory_util_pct if u is not None]
    times = [t for t in s.seconds if t is not None]
    return GpuLogSummary(
        gpu=s.gpu,
        name=s.name,
        samples=len(s.memory_used_mib),
        duration_s=(max(times) - min(times)) if len(times) > 1 else (0.0 if times else None),
        peak_memory_mib=max(s.memory_used_mib) if s.memory_used_mib else 0.0,
        memory_total_mib=s.memory_total_mib,
        mean_gpu_util_pct=_mean(util),
        median_gpu_util_pct=statistics.median(util) if util else None,
        p95_gpu_util_pct=_percentile(util, 95),
        mean_memory_util_pct=_mean(mem_util),
    )


def _column_name(cell: str) -> str:
    """``'memory.used [MiB]'`` -> ``'memory.used'``."""
    return re.sub(r"\s*\[[^\]]*\]\s*$", "", cell.strip().lower())


def _smi_number(raw: str, unit: str, column: str, maximum: float | None = None) -> float | None:
    text = raw.strip()
    if text.lower() in _NOT_AVAILABLE:
        return None
    found = re.fullmatch(r"(-?\d+(?:\.\d+)?)\s*(" + re.escape(unit) + r")?", text, flags=re.IGNORECASE)
    if not found:
        raise ValueError(f"{column} is not a number in {unit} ({raw.strip()!r})")
    value = float(found.group(1))
    if value < 0 or (maximum is not None and value > maximum):
        raise ValueError(f"{column} is out of range ({raw.strip()!r})")
    return value


def _smi_time(raw: str) -> datetime:
    text = raw.strip()
    for fmt in _SMI_TIME_FORMATS:
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            pass
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"timestamp is not a date and time ({text!r}; expected e.g. 2026/11/20 10:00:01.123)"
        ) from None


def _cells(line: str) -> list[str] | str:
    """The cells of one log line, or why it is not CSV."""
    try:
        return next(csv.reader([line], skipinitialspace=True), [])
    except csv.Error as exc:
        return csv_problem(exc)


def read_nvidia_smi_log(path: str | os.PathLike[str], columns: Sequence[str] | None = None) -> SmiLog:
    """:func:`parse_nvidia_smi_log` of a file (a regular file of at most 128 MB, UTF-8); errors name it."""
    p = expand_user(path, "nvidia-smi log")
    text = read_text(p, FileKind.SMI_LOG, what="an nvidia-smi CSV log")
    return parse_nvidia_smi_log(text, columns, origin=p.name)


def _columns(
    rows: list[list[str] | str], columns: Sequence[str] | None, origin: str
) -> tuple[tuple[str, ...], int]:
    """The log's column names (from its header line, or ``columns`` for a log without one) and the
    index of its first data line."""
    start = 0
    if columns is None:
        while start < len(rows) and not any(c.strip() for c in rows[start]):
            start += 1
        if start == len(rows):
            raise InputError(origin, "is empty")
        header = rows[start]
        if isinstance(header, str):
            raise InputError(f"{origin}: line {start + 1}", header)
        cols = tuple(_column_name(c) for c in header)
        if "memory.used" not in cols:
            raise InputError(
                f"{origin}: line {start + 1}",
                "is not an nvidia-smi --query-gpu CSV header; expected columns like "
                "'timestamp, name, memory.used [MiB], memory.total [MiB], utilization.gpu [%], "
                "utilization.memory [%]' (for --format=csv,noheader pass the column list)",
                ",".join(header)[:80],
            )
        start += 1
    else:
        cols = tuple(_column_name(c) for c in columns)
        if "memory.used" not in cols:
            raise InputError("columns", "must include memory.used", ",".join(cols))
    return cols, start


def _sample(row: dict[str, str]) -> tuple[float, float | None, float | None, float | None, datetime | None]:
    """One line's (memory used MiB, total MiB, GPU utilization %, memory utilization %, time);
    a ValueError says what is wrong with it."""
    used = _smi_number(row["memory.used"], "MiB", "memory.used")
    if used is None:
        raise ValueError("memory.used is not available (N/A)")
    total = _smi_number(row["memory.total"], "MiB", "memory.total") if "memory.total" in row else None
    util = (
        _smi_number(row["utilization.gpu"], "%", "utilization.gpu", 100) if "utilization.gpu" in row else None
    )
    mutil = (
        _smi_number(row["utilization.memory"], "%", "utilization.memory", 100)
        if "utilization.memory" in row
        else None
    )
    stamp = _smi_time(row["timestamp"]) if "timestamp" in row else None
    if total is not None and used > total * 1.001:
        raise ValueError(f"memory.used ({used:g} MiB) exceeds memory.total ({total:g} MiB)")
    return used, total, util, mutil, stamp


def parse_nvidia_smi_log(
    text: str, columns: Sequence[str] | None = None, origin: str = "nvidia-smi log"
) -> SmiLog:
    """Parse an ``nvidia-smi --query-gpu=... --format=csv`` log.

    With ``--format=csv,noheader[,nounits]`` pass the ``--query-gpu`` field list as ``columns``.
    GPUs are told apart by an ``index`` or ``pci.bus_id`` column, else by their position among
    consecutive rows with the same timestamp. Bad lines are skipped and listed with their line
    number (1-based); a repeated header line is skipped silently.
    """
    # One line at a time, so a stray quote cannot swallow the lines after it.
    lines = text.lstrip("\ufeff").splitlines()
    rows = [_cells(line) for line in lines]
    cols, start = _columns(rows, columns, origin)
    if len(set(cols)) != len(cols):
        raise InputError(f"{origin}: header", "names a column twice", ",".join(cols))
    pos = {c: i for i, c in enumerate(cols)}
    bad: list[tuple[int, str]] = []
    series: dict[str, dict[str, Any]] = {}
    first_time: datetime | None = None
    block_stamp: str | None = None
    block_slot = 0
    for number, cells in enumerate(rows[start:], start=start + 1):
        if isinstance(cells, str):  # the line is not CSV (a cell over the csv module's limit)
            bad.append((number, cells))
            continue
        if not any(c.strip() for c in cells):
            continue
        if tuple(_column_name(c) for c in cells) == cols:
            continue  # a header repeated by concatenated logs
        if len(cells) != len(cols):
            bad.append((number, f"has {len(cells)} values, expected {len(cols)} ({', '.join(cols)})"))
            continue
        row = {c: cells[i] for c, i in pos.items()}
        if "index" not in row and "pci.bus_id" not in row:
            # The slot counts every row of the block, bad ones too, so a bad line shifts no GPU.
            raw_stamp = row.get("timestamp", "").strip()
            block_slot = block_slot + 1 if raw_stamp and raw_stamp == block_stamp else 0
            block_stamp = raw_stamp
        try:
            used, total, util, mutil, stamp = _sample(row)
        except ValueError as exc:
            bad.append((number, str(exc)))
            continue
        if "index" in row:
            key = row["index"].strip()
        elif "pci.bus_id" in row:
            key = row["pci.bus_id"].strip()
        else:
            key = str(block_slot)
        if stamp is not None and first_time is None:
            first_time = stamp
        s = series.setdefault(
            key,
            {
                "name": row.get("name", "").strip(),
                "seconds": [],
                "used": [],
                "total": None,
                "util": [],
                "mutil": [],
            },
        )
        s["seconds"].append((stamp - first_time).total_seconds() if stamp and first_time else None)
        s["used"].append(used)
        s["util"].append(util)
        s["mutil"].append(mutil)
        if total is not None:
            s["total"] = max(total, s["total"] or 0.0)
    gpus = {
        key: GpuSeries(
            gpu=key,
            name=s["name"],
            seconds=tuple(s["seconds"]),
            memory_used_mib=tuple(s["used"]),
            memory_total_mib=s["total"],
            gpu_util_pct=tuple(s["util"]),
            memory_util_pct=tuple(s["mutil"]),
        )
        for key, s in series.items()
    }
    return SmiLog(origin=origin, columns=cols, gpus=gpus, bad_lines=tuple(bad))


class Threshold(NamedTuple):
    """One diagnosis threshold with its unit and where it comes from."""

    value: float
    unit: str
    source: str


_SEED = "seed article, 'GPU Performance Monitoring and Optimization'"
#: Every threshold :func:`diagnose` uses. Memory fractions are peak memory.used over memory.total.
THRESHOLDS: Mapping[str, Threshold] = MappingProxyType(
    {
        "gpu_util_target": Threshold(80.0, "%", f"{_SEED}: GPU utilization target above 80%"),
        "memory_target_low": Threshold(
            0.85, "fraction of VRAM", f"{_SEED}: memory use target 85 to 95% of VRAM"
        ),
        "memory_target_high": Threshold(
            0.95,
            "fraction of VRAM",
            f"{_SEED}: memory use target 85 to 95% of VRAM; above it the estimate's "
            "'tight' verdict (TIGHT_UTILIZATION) applies too",
        ),
        "min_samples": Threshold(
            10.0, "samples", "gpuadvisor: fewer samples say little about a steady state"
        ),
        "uneven_util": Threshold(
            20.0, "percentage points", "gpuadvisor: spread of median utilization between GPUs"
        ),
        "uneven_memory": Threshold(
            0.15, "fraction of VRAM", "gpuadvisor: spread of peak memory between GPUs"
        ),
    }
)

SEVERITIES = ("ok", "info", "warning")


@dataclass(frozen=True, slots=True)
class Finding:
    """One diagnosis: a severity, a one-line title, the numbers it rests on and what to try."""

    severity: str  # ok, info or warning
    title: str
    numbers: tuple[tuple[str, float], ...] = ()
    advice: tuple[str, ...] = ()
    gpu: str = ""  # the GPU key, empty for a finding about the whole log

    def text(self) -> str:
        """One line for a list view or the CLI."""
        where = f"GPU {self.gpu}: " if self.gpu else ""
        nums = ", ".join(f"{k} {v:.3g}" for k, v in self.numbers)
        return f"[{self.severity}] {where}{self.title}" + (f" ({nums})" if nums else "")


def _t(name: str) -> float:
    return THRESHOLDS[name].value


def _diagnose_gpu(g: GpuLogSummary, label: str) -> list[Finding]:
    out: list[Finding] = []
    util = g.median_gpu_util_pct
    mem = g.peak_memory_fraction
    target, low, high = _t("gpu_util_target"), _t("memory_target_low"), _t("memory_target_high")
    if g.samples < _t("min_samples"):
        out.append(
            Finding(
                "info",
                f"Only {g.samples} samples: log a few minutes of the steady state "
                "(nvidia-smi ... -l 1) before drawing conclusions",
                (("samples", float(g.samples)),),
                gpu=label,
            )
        )
    if util is None or mem is None:
        missing = [c for c, v in (("utilization.gpu", util), ("memory.total", mem)) if v is None]
        out.append(
            Finding(
                "info",
                f"The log has no {' or '.join(missing)}: add it to --query-gpu for a diagnosis",
                gpu=label,
            )
        )
        return out
    nums = [
        ("median_gpu_util_pct", util),
        ("peak_memory_pct_of_vram", mem * 100),
        ("peak_memory_gib", g.peak_memory_gib),
    ]
    if g.mean_memory_util_pct is not None:
        nums.append(("mean_memory_controller_util_pct", g.mean_memory_util_pct))
    numbers = tuple(nums)
    busy = util >= target
    if busy:
        out.append(
            Finding(
                "ok",
                f"GPU busy: median utilization {util:.0f}% (target above {target:.0f}%)",
                numbers,
                gpu=label,
            )
        )
    elif mem >= low:
        out.append(
            Finding(
                "warning",
                "Low utilization with high memory use: likely memory-bandwidth saturation",
                numbers,
                (
                    (
                        "Decode and other memory-bound kernels wait on memory, not compute: fewer bytes per token help "
                        "(FP8/int8/int4 weights, an FP8 KV cache)."
                    ),
                    "Use fused kernels (FlashAttention) and a serving engine with continuous batching.",
                    "Check the batch is not so large that the allocator thrashes or activations are recomputed.",
                    "A GPU with more memory bandwidth (HBM3/HBM3e) speeds up memory-bound work.",
                ),
                gpu=label,
            )
        )
    else:
        out.append(
            Finding(
                "warning",
                "Low utilization with low memory use: CPU or data-pipeline bottleneck",
                numbers,
                (
                    "Raise DataLoader num_workers and set pin_memory=True with non_blocking copies.",
                    "Tokenize and pack the dataset ahead of time instead of on the fly.",
                    "Prefetch batches (prefetch_factor) and check CPU usage while the job runs.",
                    "A larger batch amortizes per-step overhead once the input pipeline keeps up.",
                ),
                gpu=label,
            )
        )
    if mem > high:
        out.append(
            Finding(
                "warning",
                f"Memory above {high:.0%} of VRAM: risk of out-of-memory errors and fragmentation",
                numbers,
                (
                    (
                        "Leave headroom for longer sequences and allocator spikes: lower the micro-batch and use "
                        "gradient accumulation."
                    ),
                    (
                        "Enable gradient checkpointing, or set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to "
                        "reduce fragmentation."
                    ),
                ),
                gpu=label,
            )
        )
    elif mem >= low:
        out.append(Finding("ok", f"Memory use in the {low:.0%}-{high:.0%} target band", numbers, gpu=label))
    elif busy:
        out.append(
            Finding(
                "info",
                f"Memory well below the {low:.0%} target: room for a larger batch or a smaller GPU",
                numbers,
                (
                    (
                        f"Raise the batch size until peak memory reaches {low:.0%}-{high:.0%} of VRAM for more "
                        "throughput."
                    ),
                    (
                        f"Or move to a cheaper GPU with at least {g.peak_memory_gib / high:.0f} GiB "
                        f"(peak {g.peak_memory_gib:.1f} GiB at {high:.0%})."
                    ),
                ),
                gpu=label,
            )
        )
    return out


def diagnose(summary: LogSummary | GpuLogSummary) -> list[Finding]:
    """Findings for every GPU of a log summary (see :data:`THRESHOLDS` for the rules)."""
    gpus = (summary,) if isinstance(summary, GpuLogSummary) else summary.gpus
    if not gpus:
        return [Finding("info", "The log holds no valid samples")]
    out: list[Finding] = []
    for g in gpus:
        out.extend(_diagnose_gpu(g, g.gpu if len(gpus) > 1 else ""))
    utils = [g.median_gpu_util_pct for g in gpus if g.median_gpu_util_pct is not None]
    mems = [g.peak_memory_fraction for g in gpus if g.peak_memory_fraction is not None]
    util_spread = max(utils) - min(utils) if len(utils) > 1 else 0.0
    mem_spread = max(mems) - min(mems) if len(mems) > 1 else 0.0
    if util_spread > _t("uneven_util") or mem_spread > _t("uneven_memory"):
        out.append(
            Finding(
                "info",
                "Uneven load across GPUs",
                (
                    ("util_spread_pct_points", util_spread),
                    ("peak_memory_spread_pct_points", mem_spread * 100),
                ),
                (
                    "Balance pipeline stages (layers per GPU) and keep logging and evaluation off rank 0.",
                    "Check that every data-parallel rank gets the same amount of data.",
                ),
            )
        )
    if isinstance(summary, LogSummary) and summary.bad_lines:
        out.append(
            Finding(
                "info",
                f"{len(summary.bad_lines)} log lines could not be read and were skipped "
                f"(first: line {summary.bad_lines[0][0]}: {summary.bad_lines[0][1]})",
                (("bad_lines", float(len(summary.bad_lines))),),
            )
        )
    return out


def measurement_from_log(
    gpu: GpuLogSummary,
    *,
    id: str,
    gpu_id: str,
    kind: str,
    model: str,
    engine: str | None = None,
    num_gpus: int = 1,
    batch_size: int = 1,
    seq_len: int | None = None,
    scenario: dict[str, Any] | None = None,
    measured_on: str = "",
    note: str = "",
) -> Measurement:
    """A memory measurement from one GPU of a log: the peak ``memory.used`` (a device total)."""
    return Measurement(
        id=id,
        gpu_id=gpu_id,
        kind=kind,
        model=model,
        engine=engine,
        num_gpus=num_gpus,
        batch_size=batch_size,
        seq_len=seq_len,
        peak_memory_gib=gpu.peak_memory_gib,
        source="nvidia-smi log",
        measured_on=measured_on,
        scenario=scenario,
        note=note or f"peak of {gpu.samples} nvidia-smi samples ({gpu.name or 'GPU ' + gpu.gpu})",
    )
