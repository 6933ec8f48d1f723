"""The comparison report's content: plain data for a PDF that stands on its own (no rendering here).

:func:`build_report` turns an :class:`~gpuadvisor.core.estimation.estimate.Estimate` into a :class:`Report`:
the scenario in plain words, a recommendation, one table row per GPU, rent versus buy,
the method in brief, the engine profile and where its factors come from, whether the estimate
was calibrated to the user's own measurements (which GPUs, which values, on how many runs and
with what error), the catalog sources and every warning a reviewer should read before ordering
hardware.

Every figure in the report is read from :func:`gpuadvisor.core.presentation.serialize.candidate_to_dict`
(the same dictionaries as ``gpuadvisor-cli estimate --json``) and formatted by the ``fmt_*``
helpers of this module, so tests can rebuild each cell from the JSON with the same rules:

=================  =====================================================  ================
column             JSON key                                               rule
=================  =====================================================  ================
need / capacity    ``memory_per_gpu_gib.device_total``, ``capacity_gib``  1 decimal
headroom           ``headroom_gib``                                       1 decimal, sign
tokens/s           ``tokens_per_s``                                       :func:`fmt_rate`
job time           ``job_hours.low`` / ``.high``                          :func:`fmt_hours_range`
cost               ``cost_usd.low`` / ``.high``                           :func:`fmt_usd_range`
$ per 1M tokens    ``usd_per_million_tokens``                             :func:`fmt_usd_per_mtok`
deadline / budget  ``deadline`` / ``budget`` status                        yes / likely / no / ``—``
=================  =====================================================  ================

Ranges use an en dash (``–``) and share one unit, chosen by the upper end.

Pure: stdlib only. References: ``docs/estimation.md`` (the method), ``core/cost.py`` (rent
versus buy), ``core/engines.py`` (engine profiles and the rows they were fitted on).
"""

from __future__ import annotations

import datetime as _dt
import math
from dataclasses import dataclass
from typing import Any

from ... import __version__
from ..formats.user_catalog import months_before
from ..specs.catalog_io import CatalogMeta
from ..estimation.cost import HOURS_PER_MONTH, LOAD_FACTOR
from ..specs.engines import ARCH_MFU_FACTOR, ENGINES, EngineProfile
from ..estimation.estimate import Candidate, Estimate
from ..specs.hardware import GpuSpec
from .serialize import candidate_to_dict
from ..units import format_count

DASH = "\u2013"  # en dash: ranges
NONE_MARK = "\u2014"  # em dash: no value (no deadline, no budget, no price)
TIMES = "\u00d7"

TABLE_HEADER: tuple[str, ...] = (
    "GPU", "Setup", "Verdict", "Need per GPU (GiB)", "Capacity (GiB)", "Headroom (GiB)",
    "Tokens per s", "Job time", "Cost", "$ per 1M tokens", "Meets deadline", "Within budget")

RENT_BUY_HEADER: tuple[str, ...] = (
    "GPU", "Purchase price", "Power per hour", "Owned, per GPU-hour", "Rented, per GPU-hour",
    "Break-even utilization", "Cheaper at your utilization")

KIND_WORDS = {"inference": "Inference (serving requests)", "lora": "LoRA fine-tuning (adapters on a frozen base)",
              "qlora": "QLoRA fine-tuning (adapters on a 4-bit base)", "full_finetune": "Full fine-tuning",
              "pretrain": "Pre-training"}
OPTIMIZER_WORDS = {"adamw": "AdamW", "adamw_8bit": "8-bit AdamW", "sgd": "SGD with momentum",
                   "adafactor": "Adafactor"}
PARALLELISM_WORDS = {"none": "one GPU", "ddp": "data parallel (a full copy per GPU)",
                     "zero1": "ZeRO-1 (optimizer state sharded)", "zero2": "ZeRO-2 (optimizer state and gradients "
                     "sharded)", "zero3": "ZeRO-3 (everything sharded)", "fsdp": "FSDP (everything sharded)",
                     "tensor": "tensor parallel (each layer split)", "pipeline": "pipeline (layers in stages)"}
#: A runner-up within this share of the recommended cost is called a tie on cost.
NEAR_TIE = 0.05
#: Where the price part of a catalog source starts (``catalogs/gpus.csv`` convention).
PRICE_SOURCE_MARK = "Prices:"


# -- formatting rules (shared with the tests) ------------------------------------------------
def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def fmt_gib(gib: float | None) -> str:
    """GiB with one decimal: ``32.7``, ``1,024.0``."""
    return f"{gib:,.1f}" if _finite(gib) else NONE_MARK


def fmt_signed_gib(gib: float | None) -> str:
    """Headroom with a sign: ``+7.3``, ``-12.0`` (never ``-0.0``)."""
    if not _finite(gib):
        return NONE_MARK
    assert gib is not None
    text = f"{gib:+,.1f}"
    return "+0.0" if text == "-0.0" else text


def fmt_rate(tokens_per_s: float | None) -> str:
    """Tokens per second: no decimals from 100 up (``6,152``), 1 from 10 (``42.5``), 2 below (``3.14``)."""
    if not _finite(tokens_per_s):
        return NONE_MARK
    assert tokens_per_s is not None
    if tokens_per_s >= 100:
        return f"{tokens_per_s:,.0f}"
    if tokens_per_s >= 10:
        return f"{tokens_per_s:.1f}"
    return f"{tokens_per_s:.2f}"


def _hours_unit(hours: float) -> tuple[float, str]:
    """(divisor, unit) for a duration: minutes below 1 h, hours below 72 h, else days."""
    if hours < 1:
        return 1 / 60, "min"
    if hours < 72:
        return 1.0, "h"
    return 24.0, "days"


def _hours_value(hours: float, divisor: float, unit: str) -> str:
    value = hours / divisor
    return f"{value:,.0f}" if unit == "min" or value >= 1000 else f"{value:,.1f}"


def fmt_hours(hours: float | None) -> str:
    """A duration given in hours: ``25 min``, ``19.6 h``, ``3.8 days``."""
    if not _finite(hours):
        return NONE_MARK
    assert hours is not None
    div, unit = _hours_unit(hours)
    return f"{_hours_value(hours, div, unit)} {unit}"


def fmt_hours_range(low: float | None, high: float | None) -> str:
    """``19.6–32.3 h``: one unit for both ends, chosen by the upper end."""
    if not (_finite(low) and _finite(high)):
        return NONE_MARK
    assert low is not None and high is not None
    div, unit = _hours_unit(high)
    return f"{_hours_value(low, div, unit)}{DASH}{_hours_value(high, div, unit)} {unit}"


def fmt_deadline(hours: float) -> str:
    """A deadline as the user set it, in hours: ``24 h``, ``100 h (4.2 days)``, ``30 min``."""
    if hours < 1:
        return fmt_hours(hours)
    text = f"{hours:,.4g} h"
    return text + f" ({hours / 24:,.1f} days)" if hours >= 72 else text


def _usd_digits(usd: float) -> int:
    return 0 if abs(usd) >= 10 else 2


def fmt_usd(usd: float | None, digits: int | None = None) -> str:
    """Dollars: whole dollars from $10 up (``$41``, ``$1,234``), cents below (``$0.58``), ``$1.23M`` from a million."""
    if not _finite(usd):
        return NONE_MARK
    assert usd is not None
    if abs(usd) >= 1e6:
        return f"${usd / 1e6:,.2f}M"
    d = _usd_digits(usd) if digits is None else digits
    return f"${usd:,.{d}f}"


def fmt_usd_range(low: float | None, high: float | None) -> str:
    """``$27–$176``, ``$0.45–$3.20``: decimals chosen by the upper end (none from $10 up, 2 below)."""
    if not (_finite(low) and _finite(high)):
        return "no price"
    assert low is not None and high is not None
    if abs(high) >= 1e6:
        return f"{fmt_usd(low)}{DASH}{fmt_usd(high)}"
    d = _usd_digits(high)
    return f"${low:,.{d}f}{DASH}${high:,.{d}f}"


def fmt_usd_per_mtok(usd: float | None) -> str:
    """Dollars per million tokens: 2 decimals (``$0.13``), 4 below one cent (``$0.0042``)."""
    if not _finite(usd):
        return NONE_MARK
    assert usd is not None
    return f"${usd:,.2f}" if usd >= 0.01 else f"${usd:.4f}"


def fmt_usd_per_hour(usd: float | None) -> str:
    """A price per hour: ``$2.49``."""
    return f"${usd:,.2f}" if _finite(usd) else NONE_MARK


def fmt_share(fraction: float | None) -> str:
    """A fraction as a percentage: ``23%``; one decimal below 10% (``4.5%``)."""
    if not _finite(fraction):
        return NONE_MARK
    assert fraction is not None
    pct = fraction * 100
    return f"{pct:.1f}%" if abs(pct) < 10 else f"{pct:,.0f}%"


def fmt_flag(value: bool | None) -> str:
    """``yes``, ``no``, or ``—`` when there is nothing to check against (no deadline, no budget or no price)."""
    return NONE_MARK if value is None else ("yes" if value else "no")


#: How a deadline or budget status reads in a table cell.
STATUS_WORDS = {"meets": "yes", "within": "yes", "likely": "likely", "at risk": "no", "over": "no"}


def fmt_status(status: str | None) -> str:
    """``yes`` (even the range's far end is within the limit), ``likely`` (only the expected value is),
    ``no``, or ``—`` when there is nothing to check against."""
    return NONE_MARK if status is None else STATUS_WORDS.get(status, status)


def fmt_setup(gpu_count: int, parallelism: str) -> str:
    """``1 GPU`` or ``2 × tensor``."""
    return "1 GPU" if gpu_count == 1 else f"{gpu_count} {TIMES} {parallelism}"


#: Prefixes dropped from GPU names in the narrow table (in this order; AMD keeps its brand).
NAME_PREFIXES = ("NVIDIA ", "GeForce ", "Tesla ")
MAX_NAME_CHARS = 24


def plain_gpu_name(name: str) -> str:
    """A GPU name without the NVIDIA, GeForce and Tesla prefixes: ``NVIDIA GeForce RTX 4090`` -> ``RTX 4090``."""
    short = name.strip()
    for prefix in NAME_PREFIXES:
        if short.startswith(prefix) and len(short) > len(prefix):
            short = short[len(prefix):]
    return short


def display_gpu_name(name: str) -> str:
    """A GPU name for the narrow table: ``NVIDIA GeForce RTX 4090`` -> ``RTX 4090``.

    Drops the NVIDIA, GeForce and Tesla prefixes, then a trailing parenthesis when the name is
    still longer than :data:`MAX_NAME_CHARS` (``B200 (HGX, 180 GB)`` stays; the GH200's
    ``(96 GB HBM3)`` goes), then cuts what is still too long after a whole word, with an
    ellipsis (``GH200 Grace Hopper…``). The full names are in the report's sources section.
    """
    short = plain_gpu_name(name)
    if len(short) > MAX_NAME_CHARS and short.endswith(")") and " (" in short:
        short = short[:short.rindex(" (")]
    if len(short) > MAX_NAME_CHARS:
        cut = short[:MAX_NAME_CHARS]
        cut = cut[:cut.rindex(" ")] if " " in cut else cut
        short = cut.rstrip(" ,;-(") + "\u2026"
    return short


# -- the report ---------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class TableRow:
    """One GPU in the comparison table; ``cells`` follow :data:`TABLE_HEADER`."""

    gpu_id: str
    key: str
    cells: tuple[str, ...]
    fits: bool
    verdict: str
    recommended: bool = False


@dataclass(frozen=True, slots=True)
class RentBuyRow:
    """Owning against renting one GPU; ``cells`` follow :data:`RENT_BUY_HEADER`."""

    gpu_id: str
    cells: tuple[str, ...]
    buy_is_cheaper: bool


@dataclass(frozen=True, slots=True)
class SourceEntry:
    """Where a GPU's figures come from; ``price_ref`` is a 1-based index into ``Report.price_sources`` (0: none)."""

    gpu_name: str
    spec_source: str
    price_as_of: str
    price_ref: int


@dataclass(frozen=True, slots=True)
class Report:
    """Everything the PDF shows, as plain text and numbers (see the module docstring)."""

    title: str
    scenario_name: str
    date: str  # ISO date the report was made
    app_version: str
    catalog_version: str  # "gpus.csv, schema 1, updated 2026-11-29"
    catalog_updated: str
    price_as_of: tuple[str, ...]  # distinct as-of dates of the prices shown, oldest first
    scenario_lines: tuple[tuple[str, str], ...]  # (label, plain words)
    scenario_notes: str
    recommendation: str
    changes: tuple[str, ...]  # changes that make it work, when nothing fits or meets the limits
    recommended_key: str | None
    runner_up_key: str | None
    table_header: tuple[str, ...]
    table_rows: tuple[TableRow, ...]
    table_notes: tuple[str, ...]
    rent_buy_header: tuple[str, ...]
    rent_buy_rows: tuple[RentBuyRow, ...]
    rent_buy_settings: str
    rent_buy_findings: tuple[str, ...]
    method_lines: tuple[str, ...]
    engine_name: str
    engine_factors: tuple[tuple[str, str], ...]
    engine_calibrated_on: str
    engine_assumed: bool
    sources: tuple[SourceEntry, ...]
    price_sources: tuple[str, ...]
    warnings: tuple[str, ...]
    stale_price_gpus: tuple[str, ...]  # GPU ids whose price is older than the cut-off (or undated)
    #: Whether the estimate was calibrated to the user's measurements, for which GPUs, with what.
    calibration_lines: tuple[str, ...] = ()


def table_order(est: Estimate) -> list[Candidate]:
    """One candidate per GPU type, its best setup, in the decision's order (:mod:`.recommendation`):
    setups that meet the limits by expected cost, then those that likely meet them, then those
    that miss a limit (fastest first), then the ones that do not fit, closest to fitting first."""
    return list(est.best_per_gpu().values())


def _workable(c: Candidate) -> bool:
    return c.fits and (c.cost is None or c.cost.workable)


def _cost_of(c: Candidate) -> float:
    return c.cost.cost_usd.expected if c.cost is not None and c.cost.cost_usd is not None else math.inf


def _name(c: Candidate) -> str:
    """``1 × NVIDIA H100 SXM5 80 GB`` or ``2 × NVIDIA L4 (tensor)``."""
    return (f"1 {TIMES} {c.gpu.name}" if c.gpu_count == 1
            else f"{c.gpu_count} {TIMES} {c.gpu.name} ({c.parallelism})")


def _key_name(key: str | None, names: dict[str, str]) -> str:
    """``1x mi325x (none)`` (a candidate key) -> ``1 × AMD Instinct MI325X``; unknown ids stay as they are."""
    if not key:
        return "no GPU"
    count, _, rest = key.partition("x ")
    gpu_id, _, par = rest.partition(" (")
    par = par.rstrip(")")
    name = names.get(gpu_id, gpu_id)
    if not count.isdigit():
        return key
    return f"1 {TIMES} {name}" if count == "1" else f"{count} {TIMES} {name} ({par})"


def change_lines(est: Estimate, limit: int = 6) -> list[str]:
    """The cheapest changes that make the scenario work (``est.advice``), in words, best first."""
    names = {c.gpu.id: c.gpu.name for c in est.candidates}
    out = []
    for a in est.advice:
        if not a.fits:
            continue
        text = f"{a.change}: {_key_name(a.candidate, names)}"
        if a.memory_per_gpu_gib is not None:
            text += f", {fmt_gib(round(a.memory_per_gpu_gib, 2))} GiB per GPU"
        if a.job_hours is not None:
            text += f", about {fmt_hours(a.job_hours)}"
        if a.cost_usd is not None:
            text += f", about {fmt_usd(a.cost_usd)}"
        out.append(text + f" ({a.why}).")
        if len(out) == limit:
            break
    return out


def row_cells(d: dict[str, Any]) -> tuple[str, ...]:
    """The table cells of one candidate, from its :func:`candidate_to_dict` dictionary."""
    hours = d.get("job_hours") or {}
    cost = d.get("cost_usd") or {}
    has_cost = "job_hours" in d
    return (
        display_gpu_name(d["gpu_name"]),
        fmt_setup(d["gpu_count"], d["parallelism"]),
        d["verdict"],
        fmt_gib(d["memory_per_gpu_gib"]["device_total"]),
        fmt_gib(d["capacity_gib"]),
        fmt_signed_gib(d["headroom_gib"]),
        fmt_rate(d.get("tokens_per_s")),
        fmt_hours_range(hours.get("low"), hours.get("high")) if has_cost else NONE_MARK,
        fmt_usd_range(cost.get("low"), cost.get("high")) if has_cost else NONE_MARK,
        fmt_usd_per_mtok(d.get("usd_per_million_tokens")),
        fmt_status(d.get("deadline")) if has_cost else NONE_MARK,
        fmt_status(d.get("budget")) if has_cost else NONE_MARK,
    )


def rent_buy_cells(gpu: GpuSpec, b: dict[str, Any], utilization: float) -> tuple[str, ...]:
    """The rent-versus-buy cells of one GPU, from the ``buy_vs_rent`` dictionary of its candidate."""
    be = b["break_even_utilization"]
    if be is None:
        be_text = "never (rent is below the power bill)"
    elif be > 1:
        be_text = f"never (needs {fmt_share(be)})"
    else:
        be_text = fmt_share(be)
    return (plain_gpu_name(gpu.name), fmt_usd(b["purchase_usd"], 0), fmt_usd_per_hour(b["power_usd_per_hour"]),
            fmt_usd_per_hour(b["owned_usd_per_gpu_hour"]), fmt_usd_per_hour(b["rent_usd_per_gpu_hour"]),
            be_text, f"buy ({fmt_share(utilization)})" if b["buy_is_cheaper"] else "rent")


def _scenario_lines(est: Estimate) -> list[tuple[str, str]]:
    s, m, w, b = est.scenario, est.model, est.scenario.workload, est.scenario.budget
    model = f"{m.name}, {format_count(m.parameters)} parameters"
    if m.is_moe:
        model += (f" ({format_count(m.active_parameters)} active per token: {m.experts_per_token} of "
                  f"{m.num_experts} experts)")
    if m.architecture_assumed:
        model += "; architecture assumed from the parameter count (Llama-like)"
    lines = [("Model", model)]
    kind = KIND_WORDS.get(w.kind, w.kind)
    if w.uses_adapters:
        targets = ("all linear layers" if w.lora_targets == "all_linear"
                   else ", ".join(w.lora_targets) if not isinstance(w.lora_targets, str) else w.lora_targets)
        kind += f", rank {w.lora_rank} on {targets}"
    lines.append(("Workload", kind))
    if w.is_training:
        prec = f"weights {w.weights}, activations {'fp32' if w.weights == 'fp32' else '16-bit'}"
        opt = OPTIMIZER_WORDS.get(w.optimizer, w.optimizer)
        if w.trains_base and w.master_weights and w.weights in ("bf16", "fp16", "fp8"):
            opt += " with an fp32 master copy"
        prec += f"; optimizer {opt}"
        lines.append(("Precision", prec))
        extras = [f"gradient checkpointing {'on' if w.gradient_checkpointing else 'off'}",
                  f"FlashAttention {'on' if w.flash_attention else 'off'}"]
        lines.append(("Batch and sequence", f"{w.batch_size:,} sequences of {w.seq_len:,} tokens per GPU "
                      f"(micro-batch); {', '.join(extras)}"))
        if w.train_tokens:
            job = f"{format_count(w.train_tokens)} tokens to train"
        elif w.dataset_tokens:
            job = (f"{format_count(w.dataset_tokens)} tokens {TIMES} {w.epochs:g} epochs = "
                   f"{format_count(w.dataset_tokens * w.epochs)} tokens to train")
        else:
            job = "100M tokens to train (default: the scenario gives no job size)"
    else:
        lines.append(("Precision", f"weights {w.weights}, KV cache {w.kv_precision}"))
        lines.append(("Batch and sequence", f"{w.batch_size:,} concurrent requests, each a {w.prompt_tokens:,}-token "
                      f"prompt and {w.output_tokens:,} output tokens"))
        requests = w.requests or 10_000
        job = (f"{format_count(requests)} requests to serve ({format_count(requests * w.output_tokens)} output tokens)"
               + ("" if w.requests else " (default: the scenario gives no job size)"))
    lines.append(("Job size", job))
    limits = []
    if b.max_total_usd is not None:
        limits.append(f"at most {fmt_usd(b.max_total_usd)} for the whole job")
    if b.max_usd_per_hour is not None:
        limits.append(f"at most {fmt_usd_per_hour(b.max_usd_per_hour)} per hour for all GPUs together")
    price = (f"the catalog's {b.price} cloud price per GPU-hour" if isinstance(b.price, str)
             else f"{fmt_usd_per_hour(b.price)} per GPU-hour (the scenario's own price)")
    lines.append(("Budget", ("; ".join(limits) if limits else "no limit set") + f"; priced at {price}"))
    lines.append(("Deadline", fmt_deadline(b.deadline_hours) if b.deadline_hours is not None else "none set"))
    engine = ENGINES.get(est.engine)
    lines.append(("Engine profile", f"{engine.name} ({engine.id})" if engine else est.engine))
    hw = s.hardware
    if est.gpu_ids:
        gpus = f"{len(est.gpu_ids)} selected GPU type{'s' if len(est.gpu_ids) != 1 else ''}"
    else:
        gpus = f"the whole catalog ({len(est.best_per_gpu())} GPU types)"
    counts = (f"{hw.gpu_count} GPU{'s' if hw.gpu_count != 1 else ''}" if hw.gpu_count
              else "1, 2, 4 and 8 GPUs")
    pars = hw.parallelism or "every applicable split"
    lines.append(("GPUs compared", f"{gpus}; {counts} per setup; {pars}; {hw.gpus_per_node} GPUs per node"))
    lines.append(("Ownership", f"{b.purchase} cards kept {b.ownership_months:g} months at {fmt_share(b.utilization)} "
                  f"utilization; electricity {fmt_usd_per_hour(b.electricity_usd_per_kwh)} per kWh, PUE {b.pue:g}"))
    return lines


def _limits_phrase(est: Estimate) -> str:
    b = est.scenario.budget
    parts = []
    if b.deadline_hours is not None:
        parts.append(f"meets the {fmt_deadline(b.deadline_hours)} deadline")
    if b.max_total_usd is not None:
        parts.append(f"stays within the {fmt_usd(b.max_total_usd)} budget")
    if b.max_usd_per_hour is not None:
        parts.append(f"stays under {fmt_usd_per_hour(b.max_usd_per_hour)} per hour")
    return " and ".join(parts)


def _figures(c: Candidate) -> str:
    """``$41.00 expected ($26.74–$176), 22.0 h (17.8–29.3 h)`` for a candidate, from its JSON figures."""
    d = candidate_to_dict(c)
    out = []
    if d.get("cost_usd"):
        cost = d["cost_usd"]
        out.append(f"{fmt_usd(cost['expected'])} expected ({fmt_usd_range(cost['low'], cost['high'])})")
    if d.get("job_hours"):
        h = d["job_hours"]
        out.append(f"takes {fmt_hours(h['expected'])} ({fmt_hours_range(h['low'], h['high'])})")
    return ", ".join(out)


def _memory_phrase(c: Candidate) -> str:
    d = candidate_to_dict(c)
    return (f"{fmt_gib(d['memory_per_gpu_gib']['device_total'])} GiB needed of {fmt_gib(d['capacity_gib'])} GiB "
            f"per GPU ({fmt_signed_gib(d['headroom_gib'])} GiB headroom)")


def _why_lost(rec: Candidate, other: Candidate) -> str:
    """Why ``other`` ranks below ``rec``: cost first, then time and memory headroom."""
    reasons = []
    rc, oc = _cost_of(rec), _cost_of(other)
    if math.isfinite(rc) and math.isfinite(oc) and oc > rc:
        more = f"{fmt_usd(oc - rc)} ({fmt_share((oc - rc) / rc)}) more"
        if (oc - rc) < NEAR_TIE * rc:
            reasons.append(f"it costs only {more}: practically a tie on cost")
        else:
            reasons.append(f"it costs {more}")
    elif not math.isfinite(oc) and math.isfinite(rc):
        reasons.append("it has no known price")
    if rec.cost is not None and other.cost is not None:
        rh, oh = rec.cost.job_hours.expected, other.cost.job_hours.expected
        if oh > rh * 1.02:
            reasons.append(f"it is slower ({fmt_hours(oh)} against {fmt_hours(rh)})")
        elif oh < rh * 0.98:
            reasons.append(f"even though it finishes sooner ({fmt_hours(oh)} against {fmt_hours(rh)}); "
                           "choose it if time matters more than cost")
    if other.headroom_gib < rec.headroom_gib and other.verdict == "tight":
        reasons.append(f"and it leaves only {fmt_signed_gib(other.headroom_gib)} GiB of memory headroom")
    if not reasons:
        return "it ties on cost and time; either is a sound choice."
    text = reasons[0]
    for r in reasons[1:]:
        text += ", " + r if not r.startswith("and ") else " " + r
    return text + "."


def _likely_caveat(est: Estimate, c: Candidate) -> str:
    """Why a "likely" recommendation is not sure: the far end of its range crosses a limit."""
    b, cost = est.scenario.budget, c.cost
    out = []
    if cost is not None and cost.deadline_status == "likely" and b.deadline_hours is not None:
        out.append(f"its job time ({fmt_hours_range(cost.job_hours.low, cost.job_hours.high)}) may exceed the "
                   f"{fmt_deadline(b.deadline_hours)} deadline at the slow end of the range")
    if cost is not None and cost.budget_status == "likely" and cost.cost_usd is not None:
        out.append(f"its cost ({fmt_usd_range(cost.cost_usd.low, cost.cost_usd.high)}) may exceed the budget at "
                   "the expensive end of the range")
    return ("Not certain: " + " and ".join(out) + ".") if out else ""


def _recommendation(est: Estimate) -> tuple[str, Candidate | None, Candidate | None]:
    ranking = list(est.ranking)
    limits = _limits_phrase(est)
    if not ranking:
        names = {c.gpu.id: c.gpu.name for c in est.candidates}
        working = [a for a in est.advice if a.fits]
        if working:
            a = working[0]
            text = (f"Nothing fits on any GPU compared. The cheapest change that makes it fit: {a.change} "
                    f"({a.why}), which runs on {_key_name(a.candidate, names)} with "
                    f"{fmt_gib(round(a.memory_per_gpu_gib or 0.0, 2))} GiB per GPU"
                    + (f", about {fmt_hours(a.job_hours)}" if a.job_hours is not None else "")
                    + (f" for about {fmt_usd(a.cost_usd)}" if a.cost_usd is not None else "")
                    + "." + (" Other changes that work are listed below." if len(working) > 1 else ""))
        else:
            text = ("Nothing fits on any GPU compared, and no standard change (QLoRA, checkpointing, smaller "
                    "batches, sharding, quantization, more GPUs) makes it fit. A larger GPU or a smaller model "
                    "is needed.")
        return text, None, None
    decision = est.decision
    rec = est.recommended
    if rec is None:
        cheapest = ranking[0]
        fastest = min((c for c in ranking if c.cost is not None), key=lambda c: c.cost.job_hours.expected,
                      default=None)
        text = (f"No setup {limits or 'meets the limits'}. The cheapest that fits is {_name(cheapest)}: "
                f"{_figures(cheapest)}.")
        if fastest is not None and fastest.key != cheapest.key:
            text += f" The fastest is {_name(fastest)}: {_figures(fastest)}."
        names = {c.gpu.id: c.gpu.name for c in est.candidates}
        working = [a for a in est.advice if a.fits]
        if working:
            a = working[0]
            text += (f" The cheapest change that meets them: {a.change} ({a.why}), on "
                     f"{_key_name(a.candidate, names)}"
                     + (f", about {fmt_usd(a.cost_usd)}" if a.cost_usd is not None else "")
                     + ". The changes are listed below.")
        else:
            text += " No standard change meets them either: relax the deadline or the budget."
        return text, None, None
    what = "the cheapest setup that fits" if math.isfinite(_cost_of(rec)) else "the fastest-ranked setup that fits"
    likely = decision is not None and decision.status == "likely"
    text = f"Recommended: {_name(rec)}, {what}" + (f" and {'likely ' if likely else ''}{limits}" if limits else "")
    text += ". " + f"It costs {_figures(rec)}; {_memory_phrase(rec)}."
    if likely:
        text += " " + _likely_caveat(est, rec)
    if rec.verdict == "tight":
        text += " Memory is tight (above 95% of capacity): a longer sample or an allocator spike may not fit."
        roomy = [c for c in est.best_per_gpu().values() if c.verdict == "fits" and _workable(c)]
        if roomy:
            text += (f" The cheapest setup with room to spare is {_name(roomy[0])}: {_figures(roomy[0])}; "
                     f"{_memory_phrase(roomy[0])}.")
    runner = est.candidate(decision.runner_up_key) if decision and decision.runner_up_key else None
    if runner is not None:
        text += f" Runner-up: {_name(runner)} at {_figures(runner)}; it ranks second because {_why_lost(rec, runner)}"
    cheaper = [c for c in ranking if math.isfinite(_cost_of(c)) and _cost_of(c) < _cost_of(rec) and not _workable(c)]
    if cheaper:
        c = cheaper[0]
        missed = []
        if c.cost is not None and c.cost.meets_deadline is False:
            missed.append("the deadline")
        if c.cost is not None and c.cost.within_budget is False:
            missed.append("the budget")
        text += (f" A cheaper setup misses {' and '.join(missed) or 'a limit'}: {_name(c)} at {_figures(c)}.")
    return text, rec, runner


def _rent_buy(est: Estimate, table: list[Candidate], rec: Candidate | None, runner: Candidate | None
              ) -> tuple[list[RentBuyRow], list[str]]:
    b = est.scenario.budget
    with_buy = [c for c in table if c.fits and c.cost is not None and c.cost.buy is not None]
    chosen: list[Candidate] = []
    picks = [rec, runner,
             min(with_buy, key=lambda c: c.cost.buy.break_even_utilization  # type: ignore[union-attr]
                 if c.cost.buy.break_even_utilization is not None else math.inf, default=None),  # type: ignore
             min(with_buy, key=lambda c: c.cost.buy.purchase_usd, default=None)]  # type: ignore[union-attr]
    for c in picks:
        if c is None or c.cost is None or c.cost.buy is None:
            continue
        if all(c.gpu.id != x.gpu.id for x in chosen):
            chosen.append(c)
    for c in with_buy:  # up to four rows when the picks coincide
        if len(chosen) >= 4:
            break
        if all(c.gpu.id != x.gpu.id for x in chosen):
            chosen.append(c)
    chosen = chosen[:4]
    rows = []
    for c in chosen:
        d = candidate_to_dict(c)["buy_vs_rent"]
        rows.append(RentBuyRow(gpu_id=c.gpu.id, cells=rent_buy_cells(c.gpu, d, b.utilization),
                               buy_is_cheaper=d["buy_is_cheaper"]))
    findings = []
    if not rows:
        findings.append("No GPU that fits has both a purchase price and a rental price in the catalog, so owning "
                        "and renting cannot be compared.")
        return rows, findings
    buy = [plain_gpu_name(c.gpu.name) for c in chosen if c.cost.buy.buy_is_cheaper]  # type: ignore[union-attr]
    rent = [plain_gpu_name(c.gpu.name) for c in chosen if not c.cost.buy.buy_is_cheaper]  # type: ignore
    months = f"{b.ownership_months:g} months"
    verdict = f"At your planned {fmt_share(b.utilization)} utilization over {months}, "
    if buy and rent:
        verdict += f"buying is cheaper for {', '.join(buy)} and renting for {', '.join(rent)}."
    elif buy:
        verdict += f"buying is cheaper for every GPU shown ({', '.join(buy)})."
    else:
        verdict += f"renting is cheaper for every GPU shown ({', '.join(rent)})."
    findings.append(verdict)
    rule = ("The rule: buying pays back for continuous use (serving around the clock, a training queue that "
            "never empties) and renting wins for sporadic jobs. Precisely, buying wins only when the cards stay "
            "busy above their break-even utilization for the whole ownership period.")
    evens = sorted((c.cost.buy.break_even_utilization, plain_gpu_name(c.gpu.name))  # type: ignore[union-attr]
                   for c in chosen if c.cost.buy.break_even_utilization is not None)  # type: ignore[union-attr]
    if len(evens) >= 2:
        rule += (f" Here break-even ranges from {fmt_share(evens[0][0])} ({evens[0][1]}) to "
                 f"{fmt_share(evens[-1][0])} ({evens[-1][1]}) of the {months}.")
    elif evens:
        rule += f" Here break-even is {fmt_share(evens[0][0])} ({evens[0][1]}) of the {months}."
    findings.append(rule)
    ref = rec or chosen[0]
    if ref.cost is not None and ref.cost.buy is not None:
        life = b.ownership_months * HOURS_PER_MONTH
        share = ref.cost.gpu_hours.expected / ref.gpu_count / life
        be = ref.cost.buy.break_even_utilization
        text = (f"This job alone keeps {_name(ref)} busy for {fmt_hours(ref.cost.job_hours.expected)}: "
                f"{fmt_share(share)} of one GPU's {months}.")
        if be is not None and share < be:
            text += (f" That is below the {fmt_share(be)} break-even, so the job by itself does not justify a "
                     "purchase; buy only if other work will keep the cards busy afterwards.")
        elif be is not None:
            text += " That alone is above break-even: buying pays back on this job."
        findings.append(text)
    return rows, findings


def _engine(est: Estimate) -> tuple[str, tuple[tuple[str, str], ...], str, bool]:
    e: EngineProfile | None = ENGINES.get(est.engine)
    if e is None:
        return est.engine, (), "unknown", True
    eff = est.scenario.efficiency
    factors: list[tuple[str, str]] = []
    if e.kind == "training":
        mfu = f"{e.mfu:.2f} (Ampere)"
        if eff.mfu is not None:
            mfu = f"{eff.mfu:.2f} (set by the scenario; profile {e.mfu:.2f})"
        factors.append(("Model FLOPs utilization (MFU)", mfu))
        arch = sorted({c.gpu.architecture for c in est.candidates})
        scale = ", ".join(f"{a} {ARCH_MFU_FACTOR.get(a, 0.8):g}" for a in arch)
        factors.append(("MFU scale by GPU generation", scale + " (relative to Ampere)"))
        if est.scenario.workload.kind == "qlora":
            factors.append(("QLoRA dequantization", "0.7 of LoRA's MFU"))
    else:
        bw = f"{e.bandwidth_efficiency:.2f}"
        if eff.bandwidth_efficiency is not None:
            bw = f"{eff.bandwidth_efficiency:.2f} (set by the scenario; profile {e.bandwidth_efficiency:.2f})"
        pre = f"{e.prefill_mfu:.2f}"
        if eff.prefill_mfu is not None:
            pre = f"{eff.prefill_mfu:.2f} (set by the scenario; profile {e.prefill_mfu:.2f})"
        factors += [("Memory bandwidth efficiency (decode)", bw),
                    ("Quantized-weight kernel factor", f"{e.quantized_bandwidth_factor:.2f}"),
                    ("Fixed time per layer and decode step", f"{e.layer_overhead_s * 1e6:.0f} µs"),
                    ("Prefill MFU / large-batch decode MFU", f"{pre} / {e.decode_mfu:.2f}")]
        if e.prefill_chunk_tokens:
            factors.append(("Prefill chunk", f"{e.prefill_chunk_tokens:,} tokens"))
    factors.append(("Uncertainty (low/high spread)", f"{DASH}{e.spread * 100:.0f}% / +{e.spread * 50:.0f}% on speed"))
    assumed = e.calibrated_on.lower().startswith("assumed")
    return f"{e.name} ({e.id})", tuple(factors), e.calibrated_on, assumed


def _method(est: Estimate) -> list[str]:
    w, b = est.scenario.workload, est.scenario.budget
    lines = [
        "Memory per GPU = weights + gradients + optimizer state + activations + KV cache + adapters + overhead. "
        "Overhead is the CUDA context (0.6 GiB unless set) plus allocator fragmentation (8% of the tensors in "
        "training, 4% in inference). \u201cNeed per GPU\u201d is this device total, as nvidia-smi would show it; "
        "headroom = usable capacity \u2212 need. A setup fits when the need is at most the capacity and is "
        "\u201ctight\u201d above 95% of it.",
        "Multi-GPU splits: data parallel copies everything; ZeRO-1/2/3 and FSDP shard optimizer state, gradients "
        "and weights; tensor parallelism splits every layer; pipeline parallelism splits the layers into stages. "
        "Each GPU type's row shows its best setup under the deadline and budget (see the comparison notes).",
    ]
    if w.is_training:
        lines.append(
            "Training speed: FLOPs per token = 3F for full training, 2F for LoRA/QLoRA (no weight gradients for the "
            "frozen base), +F with gradient checkpointing, where F = 2 \u00d7 matmul parameters + 2 \u00d7 layers "
            "\u00d7 attention width \u00d7 sequence length. Step time = FLOPs / (GPUs \u00d7 dense peak \u00d7 MFU) + "
            "exposed communication (ring all-reduce, ZeRO-3/FSDP all-gathers, 70% hidden behind the backward pass; "
            "NVLink, PCIe or 400 Gb/s between nodes at 75% efficiency).")
    else:
        lines.append(
            "Inference speed: prefill is compute-bound (2 \u00d7 active parameters + attention FLOPs per prompt "
            "token at the prefill MFU); each decode step takes the larger of the memory time (weights and KV cache "
            "over bandwidth \u00d7 efficiency) and the compute time, plus a fixed time per layer. Tokens/s = batch "
            "\u00d7 output tokens / (prefill + output tokens \u00d7 step time).")
    lines.append(
        "Job time = job tokens / tokens per second (low\u2013high from the engine profile's spread). Cost = GPU-hours "
        "\u00d7 price per GPU-hour; the low cost pairs the fastest time with the lowest catalog price, the high cost "
        "the slowest time with the highest price. $ per 1M tokens uses the expected cost.")
    lines.append(
        f"Owning: cost per used GPU-hour = purchase price / (months \u00d7 {HOURS_PER_MONTH:g} h \u00d7 utilization) "
        f"+ power, with power = TDP \u00d7 {LOAD_FACTOR:g} (average load) \u00d7 PUE \u00d7 electricity price. "
        f"Break-even utilization = purchase / ((rent \u2212 power) \u00d7 months \u00d7 {HOURS_PER_MONTH:g} h). "
        "Resale value, hosting space, networking and staff are not counted.")
    if b.price != "expected" and isinstance(b.price, str):
        lines.append(f"Prices: the scenario asks for the catalog's {b.price} price as the expected figure.")
    lines.append("Full formulas and references: docs/estimation.md; published measurements the speed model was "
                 "checked against: docs/validation.md.")
    return lines


FACTOR_WORDS = {"bandwidth_efficiency": "memory bandwidth efficiency", "mfu": "MFU",
                "prefill_mfu": "prefill MFU", "runtime_overhead_gib": "runtime memory overhead"}


def _factor_value(name: str, value: float) -> str:
    return f"{value:.2f} GiB" if name == "runtime_overhead_gib" else f"{value:.3f}"


def _error_pct(value: float | None) -> str:
    return NONE_MARK if value is None else f"{value:.1f}%"


def _calibration(est: Estimate) -> list[str]:
    """Whether calibration to the user's measurements was applied, to which GPUs, and the values."""
    profile = est.calibration
    if profile is None:
        return ["Calibration to your own measurements: off. Speed and memory come from the engine profile "
                "and the catalog alone."]
    head = f"Calibration to your own measurements: on (profile of {profile.created})"
    if not est.calibration_fits:
        return [head + f", but it holds no values for the engine {est.engine} that this scenario leaves to "
                "the calibration, so no figure was changed."]
    names = {c.gpu.id: plain_gpu_name(c.gpu.name) for c in est.candidates}
    gpus = [names.get(g, g) for g in est.calibrated_gpus]
    lines = [head + f". Applied to {len(gpus)} GPU type{'s' if len(gpus) != 1 else ''}: {', '.join(gpus)}; "
             "the other GPUs use the engine profile. Efficiencies the scenario sets itself are kept."]
    for f in est.calibration_fits:
        factor = FACTOR_WORDS.get(f.factor_name, f.factor_name)
        lines.append(f"{names.get(f.gpu_id, f.gpu_id)} with {f.engine}: {factor} "
                     f"{_factor_value(f.factor_name, f.value)}, fitted on {f.n_measurements} measurement"
                     f"{'s' if f.n_measurements != 1 else ''} (median error {_error_pct(f.error_before_pct)} "
                     f"with the engine profile, {_error_pct(f.error_after_pct)} after calibration)."
                     + (f" {f.note[:1].upper()}{f.note[1:]}." if f.note else ""))
    return lines


def _sources(table: list[Candidate]) -> tuple[list[SourceEntry], list[str]]:
    price_sources: list[str] = []
    entries = []
    for c in table:
        spec, mark, price = c.gpu.source.partition(PRICE_SOURCE_MARK)
        spec = spec.strip().rstrip(";").strip()
        price = price.strip()
        ref = 0
        if mark and price:
            if price not in price_sources:
                price_sources.append(price)
            ref = price_sources.index(price) + 1
        entries.append(SourceEntry(gpu_name=c.gpu.name, spec_source=spec or c.gpu.source,
                                   price_as_of=c.gpu.price_as_of or "undated", price_ref=ref))
    return entries, price_sources


def decision_warnings(est: Estimate, today: _dt.date, stale_after_months: int = 6,
                      changes_where: str = "below") -> list[str]:
    """The warnings a decision needs (the core's, stale or undated prices of the compared GPUs,
    an assumed engine profile or architecture, overridden efficiencies): the report's section
    and the window's summary show the same list. ``changes_where`` says where the changes are."""
    engine_label, _factors, calibrated_on, assumed = _engine(est)
    return _warnings(est, table_order(est), today, stale_after_months, engine_label, calibrated_on, assumed,
                     changes_where)[0]


def _warnings(est: Estimate, table: list[Candidate], today: _dt.date, stale_after_months: int,
              engine_label: str, calibrated_on: str, engine_assumed: bool, changes_where: str = "in section 1"
              ) -> tuple[list[str], list[str]]:
    # The core's warnings point at the CLI's "changes below"; in the report they are in section 1.
    out = [w.replace("see the changes below", f"see the changes {changes_where}") for w in est.warnings]
    cutoff = months_before(today, stale_after_months)
    stale, undated, stale_ids = [], [], []
    for c in table:
        if c.gpu.cloud_usd_per_hour is None and not c.gpu.purchase_new_usd and not c.gpu.purchase_used_usd:
            continue
        try:
            as_of = _dt.date.fromisoformat(c.gpu.price_as_of)
        except ValueError:
            undated.append(plain_gpu_name(c.gpu.name))
            stale_ids.append(c.gpu.id)
            continue
        if as_of < cutoff:
            stale.append(f"{plain_gpu_name(c.gpu.name)} ({as_of.isoformat()})")
            stale_ids.append(c.gpu.id)
    if stale:
        out.append(f"Stale prices: {len(stale)} GPU{'s' if len(stale) != 1 else ''} carry prices older than "
                   f"{stale_after_months} months (before {cutoff.isoformat()}): {', '.join(stale)}. "
                   "Get current quotes before ordering.")
    if undated:
        out.append(f"Undated prices: {', '.join(undated)}. Get current quotes before ordering.")
    unpriced = [plain_gpu_name(c.gpu.name) for c in table if c.fits and c.cost is not None and c.cost.cost_usd is None]
    if unpriced:
        out.append(f"No rental price in the catalog for {', '.join(unpriced)}: their cost is not shown.")
    w = est.scenario.workload
    if w.weights == "fp8":
        fallback = [plain_gpu_name(c.gpu.name) for c in table
                    if c.performance is not None and c.performance.precision_used != "fp8"]
        if fallback and not any("FP8" in x and "No" in x for x in est.warnings):
            out.append(f"FP8 fallback: {', '.join(fallback)} have no FP8 tensor cores; FP8 weights run there at "
                       "FP16/BF16 speed.")
    if engine_assumed:
        out.append(f"Outside the calibrated range: the engine profile {engine_label} is an assumption "
                   f"({calibrated_on.removeprefix('assumed:').strip()}), not a fit to measurements. Speed, job time "
                   "and cost may be off by more than the low\u2013high range shows.")
    if est.model.architecture_assumed:
        out.append("Outside the calibrated range: the model's architecture is assumed from its parameter count, "
                   "so memory (activations, KV cache) and speed are approximate.")
    eff = est.scenario.efficiency
    overrides = [f"{k} {v:g}" for k, v in (("bandwidth efficiency", eff.bandwidth_efficiency), ("MFU", eff.mfu),
                                            ("prefill MFU", eff.prefill_mfu)) if v is not None]
    if overrides:
        out.append(f"The scenario overrides the engine profile's efficiency ({', '.join(overrides)}): speed figures "
                   "rest on those values, not on the calibration.")
    return list(dict.fromkeys(out)), stale_ids


def build_report(est: Estimate, catalog_meta: CatalogMeta, today: _dt.date, stale_after_months: int = 6,
                 max_rows: int = 40) -> Report:
    """The report's content for ``est`` (computed against the GPU catalog described by ``catalog_meta``).

    ``today`` dates the report and decides which prices are stale (as-of date more than
    ``stale_after_months`` calendar months before it). The table holds at most ``max_rows`` GPUs,
    best first; a note says how many were left out.
    """
    if max_rows < 1:
        raise ValueError("max_rows must be at least 1")
    if stale_after_months < 0:
        raise ValueError("stale_after_months must be >= 0")
    ordered = table_order(est)
    table = ordered[:max_rows]
    text, rec, runner = _recommendation(est)
    rows = []
    for c in table:
        d = candidate_to_dict(c)
        rows.append(TableRow(gpu_id=c.gpu.id, key=c.key, cells=row_cells(d), fits=c.fits, verdict=c.verdict,
                             recommended=rec is not None and c.key == rec.key))
    notes = ["One row per GPU type: its best setup under the deadline and budget. Rows that surely meet them "
             "(even the slow or expensive end of the range) come first, by expected cost; then those that likely "
             "meet them (yes/likely/no in the last two columns); then those that miss a limit, fastest first; "
             "then the ones that do not fit, closest to fitting first. The recommended setup is the first row."]
    notes.append("Setup: number of GPUs \u00d7 how the work is split (ddp: a full copy per GPU; zero1/2/3, fsdp: "
                 "sharded state; tensor: each layer split; pipeline: layers in stages). Need per GPU: the device "
                 "total (tensors + CUDA context + fragmentation). Tokens/s: aggregate over the setup's GPUs"
                 + (" (trained tokens)." if est.scenario.workload.is_training else " (output tokens).")
                 + " Job time and cost: low\u2013high. \u2014: no deadline, budget or price to check against.")
    if len(ordered) > len(table):
        left = len(ordered) - len(table)
        notes.append(f"{left} more GPU type{'s' if left != 1 else ''} left out (the table is limited to "
                     f"{max_rows} rows); `gpuadvisor-cli estimate` lists them all.")
    rent_rows, findings = _rent_buy(est, table, rec, runner)
    b = est.scenario.budget
    settings = (f"{b.purchase.capitalize()} purchase price (mean of the catalog's low and high), "
                f"{b.ownership_months:g} months of ownership at {fmt_share(b.utilization)} utilization, electricity "
                f"{fmt_usd_per_hour(b.electricity_usd_per_kwh)} per kWh, PUE {b.pue:g}. Rent is the expected price "
                "per GPU-hour.")
    engine_label, factors, calibrated_on, assumed = _engine(est)
    warnings, stale_ids = _warnings(est, table, today, stale_after_months, engine_label, calibrated_on, assumed)
    sources, price_sources = _sources(table)
    as_of = tuple(sorted({c.gpu.price_as_of for c in table if c.gpu.price_as_of}))
    meta = catalog_meta
    return Report(
        title="GPU comparison report", scenario_name=est.scenario.name, date=today.isoformat(),
        app_version=__version__,
        catalog_version=f"{meta.origin}, schema {meta.schema_version}, updated {meta.updated or 'undated'}",
        catalog_updated=meta.updated, price_as_of=as_of, scenario_lines=tuple(_scenario_lines(est)),
        scenario_notes=est.scenario.notes, recommendation=text, changes=tuple(change_lines(est)),
        recommended_key=rec.key if rec is not None else None, runner_up_key=runner.key if runner else None,
        table_header=TABLE_HEADER, table_rows=tuple(rows), table_notes=tuple(notes),
        rent_buy_header=RENT_BUY_HEADER, rent_buy_rows=tuple(rent_rows), rent_buy_settings=settings,
        rent_buy_findings=tuple(findings), method_lines=tuple(_method(est)), engine_name=engine_label,
        engine_factors=factors, engine_calibrated_on=calibrated_on, engine_assumed=assumed,
        sources=tuple(sources), price_sources=tuple(price_sources), warnings=tuple(warnings),
        stale_price_gpus=tuple(stale_ids), calibration_lines=tuple(_calibration(est)),
    )


def summary_line(est: Estimate) -> str:
    """The answer in one line, as the window's summary and the CLI print it (same decision as the report)."""
    rec = est.recommended
    limits = _limits_phrase(est)
    if rec is not None:
        likely = est.decision is not None and est.decision.status == "likely"
        cost = rec.cost
        figures = []
        if cost is not None:
            figures.append(f"{fmt_hours(cost.job_hours.expected)} ({fmt_hours_range(cost.job_hours.low, cost.job_hours.high)})")
            if cost.cost_usd is not None:
                figures.append(f"about {fmt_usd(cost.cost_usd.expected)}")
        text = f"Recommended: {_name(rec)}" + (": " + ", ".join(figures) if figures else "")
        if limits:
            text += f"; {'likely ' if likely else ''}{limits}"
            if likely:
                text += " (the slow or expensive end of the range does not)"
        return text + "."
    names = {c.gpu.id: c.gpu.name for c in est.candidates}
    working = [a for a in est.advice if a.fits]
    fix = (f" Cheapest change: {working[0].change}, on {_key_name(working[0].candidate, names)}."
           if working else "")
    if not est.ranking:
        return "Nothing fits on any GPU compared." + (fix or " No standard change makes it fit.")
    closest = next(iter(est.best_per_gpu().values()))
    cost = closest.cost
    when = f" ({fmt_hours(cost.job_hours.expected)}" + (
        f", about {fmt_usd(cost.cost_usd.expected)})" if cost and cost.cost_usd else ")") if cost else ""
    return (f"No setup {limits or 'meets the limits'}; closest: {_name(closest)}{when}." + fix)
