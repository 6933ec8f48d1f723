"""Catalog rows as text: the bundled tables (``column -> CSV text``) and the checks every row passes.

Shared by the user's catalog (:mod:`gpuadvisor.core.formats.user_catalog`), the exchange files
(:mod:`gpuadvisor.core.formats.catalog_exchange`) and the catalog editor. :func:`validate_row`
parses a row with the bundled catalog's parser plus plausibility checks (see
:data:`GPU_RATIO_LIMITS`); a failure names the column and the rule.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Mapping
from functools import cache
from types import MappingProxyType

from ..errors import CatalogError
from ..files import MAX_NAME_CHARS, MAX_TEXT_CHARS
from ..specs.catalog_io import CatalogMeta, RowReader, read_catalog_file
from ..specs.hardware import (
    GPU_REQUIRED_COLUMNS,
    GPU_SCHEMA_VERSIONS,
    GpuSpec,
    bundled_catalog_dir,
    parse_gpu_row,
)
from ..specs.models import ModelSpec
from ..specs.presets import MODEL_REQUIRED_COLUMNS, MODEL_SCHEMA_VERSIONS, parse_model_row

KINDS: tuple[str, ...] = ("gpus", "models")


#: Ids: a lowercase letter or digit, then lowercase letters, digits, ``.``, ``_``, ``+`` or ``-``.
ID_PATTERN = re.compile(r"[a-z0-9][a-z0-9._+-]*\Z")
_ID_RULE = "must be a lowercase letter or digit followed by lowercase letters, digits, '.', '_', '+' or '-'"
_DATE_PATTERN = re.compile(r"\d{4}-\d{2}-\d{2}\Z")

#: Tensor-core throughput columns and the most each may be, as a multiple of fp16_dense_tflops.
#: Lower precisions run at most 2x per halving of the bits on every GPU so far (FP8 2x, FP4 4x
#: of FP16 on Blackwell); the limits leave one more factor of 2 for sparse figures typed by mistake
#: to be caught while nothing real is rejected. FP16 with FP16 accumulate is at most twice the
#: FP32-accumulate rate (GeForce cards halve the latter).
GPU_RATIO_LIMITS: tuple[tuple[str, float], ...] = (
    ("tf32_dense_tflops", 1.0),
    ("bf16_dense_tflops", 2.0),
    ("fp8_dense_tflops", 4.0),
    ("int8_dense_tops", 8.0),
    ("fp4_dense_tflops", 8.0),
    ("fp16_acc16_dense_tflops", 2.0),
)
TDP_W_RANGE = (5.0, 5000.0)
MAX_CLOUD_USD_PER_HOUR = 1000.0
MAX_PCIE_GEN = 7
#: A model's parameter count computed from its shapes must be within this factor of published_params.
PUBLISHED_PARAMS_FACTOR = 1.5
MODEL_MAXIMA: tuple[tuple[str, int], ...] = (
    ("num_layers", 2000),
    ("hidden_size", 262_144),
    ("vocab_size", 4_000_000),
    ("max_context", 100_000_000),
)

#: The most each GPU figure may be, and why: far above every GPU made, so that a typing slip of a
#: few zeros (or a hostile file's 1e300) is refused with its reason instead of ranking first.
GPU_MAXIMA: tuple[tuple[str, float, str], ...] = (
    ("memory_gb", 4096.0, "the largest GPU memory is 288 GB"),
    ("memory_gib_usable", 4096.0, "the largest GPU memory is 288 GB"),
    ("memory_bandwidth_gb_s", 100_000.0, "the fastest GPU memory moves about 8,000 GB/s"),
    ("fp32_tflops", 100_000.0, "the fastest GPUs reach a few hundred"),
    ("fp16_dense_tflops", 100_000.0, "the fastest GPUs reach about 2,500"),
    ("nvlink_gb_s", 100_000.0, "the fastest links move 1,800 GB/s"),
    ("nvlink_domain_gpus", 100_000.0, "the largest NVLink domains join 576 GPUs"),
    ("mig_instances", 64.0, "GPUs split into at most 7 instances"),
    ("purchase_new_usd_low", 10_000_000.0, "the dearest GPUs cost tens of thousands of dollars"),
    ("purchase_new_usd_high", 10_000_000.0, "the dearest GPUs cost tens of thousands of dollars"),
    ("purchase_used_usd_low", 10_000_000.0, "the dearest GPUs cost tens of thousands of dollars"),
    ("purchase_used_usd_high", 10_000_000.0, "the dearest GPUs cost tens of thousands of dollars"),
)
#: Free-text columns, which may be longer than a name (``MAX_TEXT_CHARS``); every other text cell
#: is at most ``MAX_NAME_CHARS``.
LONG_TEXT_COLUMNS = ("source", "notes")

CLOUD_COLUMNS = ("cloud_usd_per_hour_low", "cloud_usd_per_hour_expected", "cloud_usd_per_hour_high")
PRICE_COLUMNS = CLOUD_COLUMNS + (
    "purchase_new_usd_low",
    "purchase_new_usd_high",
    "purchase_used_usd_low",
    "purchase_used_usd_high",
)


def check_kind(kind: str) -> None:
    """Raise CatalogError unless ``kind`` is ``"gpus"`` or ``"models"``."""
    if kind not in KINDS:
        raise CatalogError("kind", f"must be one of {', '.join(KINDS)}", kind)


# --- the bundled catalogs as text rows ----------------------------------------------------------
@cache
def bundled_table(kind: str) -> tuple[CatalogMeta, tuple[str, ...], tuple[Mapping[str, str], ...]]:
    """(meta, header, rows) of a bundled catalog file, read once per process."""
    required: tuple[str, ...]
    if kind == "gpus":
        versions, required = GPU_SCHEMA_VERSIONS, GPU_REQUIRED_COLUMNS
    else:
        versions, required = MODEL_SCHEMA_VERSIONS, MODEL_REQUIRED_COLUMNS
    meta, rows = read_catalog_file(bundled_catalog_dir() / f"{kind}.csv", kind, versions, required)
    header = tuple(rows[0][1]) if rows else tuple(required)
    return meta, header, tuple(MappingProxyType(dict(row)) for _, row in rows)


def columns(kind: str) -> tuple[str, ...]:
    """The canonical column order of a catalog kind: the bundled file's header."""
    check_kind(kind)
    return bundled_table(kind)[1]


def bundled_rows(kind: str) -> list[dict[str, str]]:
    """The bundled rows as ``column -> CSV text`` dicts, in file order (fresh copies; cached read)."""
    check_kind(kind)
    return [dict(row) for row in bundled_table(kind)[2]]


def bundled_meta(kind: str) -> CatalogMeta:
    """The metadata line of a bundled catalog (kind, schema version, updated date)."""
    check_kind(kind)
    return bundled_table(kind)[0]


def full_row(kind: str, row: Mapping[str, str]) -> dict[str, str]:
    """``row`` with every canonical column, in order (missing ones ``""``; other keys dropped)."""
    return {c: row.get(c, "") or "" for c in columns(kind)}


# --- validation -----------------------------------------------------------------------------------
class _Reader(RowReader):
    """A RowReader whose locations say ``origin: line N`` or, without a line, ``origin: id X``."""

    def __init__(self, origin: str, line: int | None, row: dict[str, str]) -> None:
        super().__init__(origin, line or 0, row)
        self.has_line = line is not None

    def where(self, column: str) -> str:
        if self.has_line:
            return f"{self.origin}: line {self.line}, column {column}"
        row_id = self.row.get("id", "")
        return f"{self.origin}: id {row_id}, column {column}" if row_id else f"{self.origin}: column {column}"


def error_column(exc: CatalogError) -> str | None:
    """The column an error from :func:`validate_row` is about (``"tdp_w"``), or None.

    Every row error's ``field`` ends with ``column <name>``; an editor uses this to mark the cell.
    """
    match = re.search(r"column (\w+)\Z", exc.field)
    return match.group(1) if match else None


def describe_error(exc: CatalogError) -> str:
    """A row error without its location prefix: ``column tdp_w: must be > 0 (got '-5')``."""
    column = error_column(exc)
    shown = "" if exc.value is None else f" (got {exc.value!r})"
    return f"{'column ' + column + ': ' if column else ''}{exc.reason}{shown}"


def _number(r: RowReader, column: str) -> float | None:
    return r.number(column, required=False, positive=False)


def _check_date(r: RowReader, column: str, today: _dt.date) -> None:
    value = r.row.get(column, "")
    if not value:
        return
    try:
        if not _DATE_PATTERN.match(value):
            raise ValueError(value)
        day = _dt.date.fromisoformat(value)
    except ValueError:
        raise CatalogError(r.where(column), "must be an ISO date YYYY-MM-DD", value) from None
    if day > today + _dt.timedelta(days=1):
        raise CatalogError(
            r.where(column), f"must not be in the future (today is {today.isoformat()})", value
        )


def _check_gpu(r: RowReader, spec: GpuSpec, today: _dt.date) -> None:
    for column, limit, why in GPU_MAXIMA:
        value = _number(r, column)
        if value is not None and value > limit:
            raise CatalogError(r.where(column), f"must be at most {limit:,g} ({why})", r.row.get(column))
    low, high = TDP_W_RANGE
    if spec.tdp_w is not None and not low <= spec.tdp_w <= high:
        raise CatalogError(r.where("tdp_w"), f"must be between {low:g} and {high:g} W", r.row.get("tdp_w"))
    if spec.memory_gb is not None and spec.memory_gib_usable > spec.memory_gb * 1.001:
        raise CatalogError(
            r.where("memory_gib_usable"),
            f"must not exceed memory_gb ({spec.memory_gb:g}): usable GiB are at most the marketed GB",
            r.row.get("memory_gib_usable"),
        )
    for column, limit in GPU_RATIO_LIMITS:
        value = getattr(spec, column)
        if value is not None and value > spec.fp16_dense_tflops * limit:
            raise CatalogError(
                r.where(column),
                f"must be at most {limit:g}x fp16_dense_tflops ({spec.fp16_dense_tflops:g}); "
                "is it a sparse figure?",
                r.row.get(column),
            )
    acc16 = spec.fp16_acc16_dense_tflops
    if acc16 is not None and acc16 < spec.fp16_dense_tflops:
        raise CatalogError(
            r.where("fp16_acc16_dense_tflops"),
            f"must be at least fp16_dense_tflops ({spec.fp16_dense_tflops:g}): accumulating in FP16 "
            "is never slower (leave it empty where the rates are the same)",
            r.row.get("fp16_acc16_dense_tflops"),
        )
    if spec.pcie_gen is not None and spec.pcie_gen > MAX_PCIE_GEN:
        raise CatalogError(r.where("pcie_gen"), f"must be 1 to {MAX_PCIE_GEN}", r.row.get("pcie_gen"))
    if spec.launch_year is not None and spec.launch_year > today.year + 2:
        raise CatalogError(
            r.where("launch_year"), f"must not be after {today.year + 2}", r.row.get("launch_year")
        )
    for column in CLOUD_COLUMNS:
        value = _number(r, column)
        if value is not None and value > MAX_CLOUD_USD_PER_HOUR:
            rule = f"must be at most {MAX_CLOUD_USD_PER_HOUR:g} USD per GPU-hour"
            raise CatalogError(r.where(column), rule, r.row.get(column))
    _check_date(r, "price_as_of", today)


def _check_model(r: RowReader, spec: ModelSpec) -> None:
    for column, maximum in MODEL_MAXIMA:
        if getattr(spec, column) > maximum:
            raise CatalogError(r.where(column), f"must be at most {maximum:,}", r.row.get(column))
    published = spec.published_params
    if published is not None:
        computed = spec.parameters
        if not published / PUBLISHED_PARAMS_FACTOR <= computed <= published * PUBLISHED_PARAMS_FACTOR:
            raise CatalogError(
                r.where("published_params"),
                f"must be within {PUBLISHED_PARAMS_FACTOR:g}x of the count computed from the "
                f"architecture columns ({computed:,}); check num_layers, hidden_size and "
                "intermediate_size",
                r.row.get("published_params"),
            )
    active = r.integer("published_active_params", required=False)
    if active is not None and published is not None and active > published:
        raise CatalogError(
            r.where("published_active_params"),
            "must not exceed published_params",
            r.row.get("published_active_params"),
        )


def validate_row(
    kind: str,
    row: Mapping[str, str],
    origin: str = "user catalog",
    line: int | None = None,
    *,
    today: _dt.date | None = None,
) -> GpuSpec | ModelSpec:
    """Parse one row (``column -> CSV text``) into a :class:`GpuSpec` or :class:`ModelSpec`.

    Values are stripped of surrounding spaces first; missing columns count as empty. Raises
    :class:`CatalogError` whose ``field`` ends with ``column <name>`` (see :func:`error_column`)
    and whose ``reason`` states the rule. Beyond the bundled parser's rules: the id's spelling
    (``ID_PATTERN``); for GPUs ``tdp_w`` within ``TDP_W_RANGE``, usable memory at most
    ``memory_gb``, lower-precision throughput within ``GPU_RATIO_LIMITS`` of FP16, ``pcie_gen``
    up to 7, ``launch_year`` at most two years ahead, cloud prices up to 1000 USD per GPU-hour,
    ``price_as_of`` an ISO date at most one day after ``today`` (default: the system date); for
    models upper bounds on shapes (``MODEL_MAXIMA``) and ``published_params`` within 1.5x of the
    count computed from the architecture.
    """
    check_kind(kind)
    today = today or _dt.date.today()
    clean = {k: (v or "").strip() for k, v in row.items() if isinstance(k, str) and isinstance(v, str)}
    r = _Reader(origin, line, clean)
    for column, value in clean.items():
        limit = MAX_TEXT_CHARS if column in LONG_TEXT_COLUMNS else MAX_NAME_CHARS
        if len(value) > limit:
            raise CatalogError(
                r.where(column),
                f"is {len(value):,} characters long; at most {limit:,} are accepted",
                value[:40],
            )
    row_id = r.text("id")
    if not ID_PATTERN.match(row_id):
        raise CatalogError(r.where("id"), _ID_RULE, row_id)
    if kind == "gpus":
        gpu = parse_gpu_row(r)
        _check_gpu(r, gpu, today)
        return gpu
    model = parse_model_row(r)
    _check_model(r, model)
    return model
