"""Cloud price lists: offline gpuhunt and SkyPilot catalog files -> per-GPU hourly prices.

Two public, offline CSV formats are read; the format is detected from the header:

- **gpuhunt** (dstack's catalog, one file per provider such as ``aws.csv``)::

      instance_name,location,price,cpu,memory,gpu_count,gpu_name,gpu_memory,spot,disk_size,gpu_vendor,flags

  ``price`` is USD per instance-hour, ``spot`` says whether the row is a spot offer,
  ``gpu_memory`` is the memory of one GPU in GB (only used to tell variants apart).
- **SkyPilot** (``catalogs/vN/<cloud>/vms.csv``): ``InstanceType, AcceleratorName,
  AcceleratorCount, Price, SpotPrice, Region`` and more, in any order. ``Price`` and
  ``SpotPrice`` are USD per instance-hour (an empty or zero ``SpotPrice`` means no spot offer);
  ``GpuInfo``/``GPUInfo`` may hold a Python-literal dict with the memory per GPU in MiB.

The price of one GPU is the instance price divided by its GPU count::

    usd_per_gpu_hour = instance_usd_per_hour / gpu_count

(the CPU, RAM and disk that come with the instance are charged to its GPUs, as a renter pays
them). Identical offers (same provider, instance, region, spot flag and price, e.g. one row
per availability zone) count once. For every catalog GPU the on-demand and spot prices are
summarised separately as low (minimum), median and high (maximum).

Provider spellings are mapped to catalog ids by :func:`match_gpu`: lower-case, vendor words
and separators dropped, memory and form-factor tokens taken out, then an exact lookup (so
``L40`` never becomes ``l40s`` and ``A10`` never ``a100``), with the memory and form factor
choosing among the variants of A100, H100 and V100. See ``docs/measurements.md`` for the
table of spellings.

References
----------
- dstack gpuhunt catalog files (github.com/dstackai/gpuhunt), column names as listed above.
- SkyPilot catalog schema (github.com/skypilot-org/skypilot-catalog, README "vms.csv").
"""

from __future__ import annotations

import ast
import csv
import io
import json
import math
import os
import re
import statistics
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import InputError
from ..files import MAX_NAME_CHARS, FileKind, csv_problem, expand_user, read_text
from ..specs.hardware import GpuCatalog
from .gpu_matching import MIB_THRESHOLD as MIB_THRESHOLD  # matching rules, kept importable here
from .gpu_matching import GpuMatch as GpuMatch
from .gpu_matching import explain_match as explain_match
from .gpu_matching import gib_from_gib_or_mib
from .gpu_matching import match_gpu as match_gpu

GPUHUNT_REQUIRED = ("instance_name", "price", "gpu_count", "gpu_name")
GPUHUNT_COLUMNS = (
    "instance_name",
    "location",
    "price",
    "cpu",
    "memory",
    "gpu_count",
    "gpu_name",
    "gpu_memory",
    "spot",
    "disk_size",
    "gpu_vendor",
    "flags",
)
SKYPILOT_REQUIRED = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Price")
#: Bounds of a price-list row: physical and market limits, named in the row's rejection.
MAX_INSTANCE_USD_PER_HOUR = 100_000.0
MAX_GPUS_PER_INSTANCE = 1024
MAX_GPU_INFO_CHARS = 10_000
SKYPILOT_OPTIONAL = ("SpotPrice", "Region", "AvailabilityZone", "GpuInfo", "vCPUs", "MemoryGiB")


class PriceOffer(NamedTuple):
    """One priced offer of one catalog GPU."""

    gpu_id: str
    provider: str
    instance: str
    region: str
    usd_per_gpu_hour: float
    spot: bool
    gpu_count: float
    line: int


class PriceStats(NamedTuple):
    """Low (minimum), median and high (maximum) USD per GPU-hour over ``count`` offers."""

    low: float
    median: float
    high: float
    count: int  # type: ignore[assignment]  # a field named like tuple.count, on purpose


@dataclass(frozen=True, slots=True)
class GpuPriceSummary:
    """The imported prices of one catalog GPU, in USD per GPU-hour."""

    gpu_id: str
    on_demand: PriceStats | None
    spot: PriceStats | None
    offers: int
    providers: tuple[str, ...]
    regions: int
    as_of: str
    names: tuple[str, ...] = ()  # the provider spellings that matched this GPU


@dataclass(frozen=True)
class PriceImport:
    """What one price-list file (or several, merged) says about the catalog's GPUs."""

    provider: str
    format: str  # "gpuhunt", "skypilot", or "merged"
    origin: str
    as_of: str
    rows_read: int
    prices: dict[str, GpuPriceSummary]
    unmatched: dict[str, int]  # provider GPU name -> rows
    rejected: list[tuple[int, str]]  # (physical line, 1-based with the header as line 1; reason)
    skipped_no_gpu: int
    offers: tuple[PriceOffer, ...] = ()
    assumptions: dict[str, str] = field(default_factory=dict)  # provider GPU name -> assumption made
    unmatched_reasons: dict[str, str] = field(default_factory=dict)

    def summary(self) -> str:
        """A few lines of text for a preview dialog or the CLI."""
        lines = [
            (
                f"{self.origin}: {self.format} price list from {self.provider}, as of {self.as_of}: "
                f"{self.rows_read} rows read, {len(self.offers)} offers for {len(self.prices)} catalog "
                "GPUs, "
                f"{self.skipped_no_gpu} rows without GPUs skipped, {len(self.rejected)} rows rejected, "
                f"{len(self.unmatched)} GPU names unmatched."
            )
        ]
        for gpu_id, s in self.prices.items():
            parts = []
            for label, stats in (("on-demand", s.on_demand), ("spot", s.spot)):
                if stats is not None:
                    parts.append(
                        f"{label} ${stats.low:.2f}-${stats.high:.2f} (median ${stats.median:.2f}, "
                        f"{stats.count} offers)"
                    )
            lines.append(
                f"  {gpu_id}: {'; '.join(parts)} per GPU-hour from {', '.join(s.providers)} "
                f"in {s.regions} regions"
            )
        for note in self.assumptions.values():
            lines.append(f"  Assumed: {note}")
        if self.unmatched:
            counts = sorted(self.unmatched.items())
            lines.append("  Unmatched: " + ", ".join(f"{n} ({c} rows)" for n, c in counts))
        for line, reason in self.rejected[:20]:
            lines.append(f"  Rejected line {line}: {reason}")
        if len(self.rejected) > 20:
            lines.append(f"  ... and {len(self.rejected) - 20} more rejected rows")
        return "\n".join(lines)


def _stats(values: list[float]) -> PriceStats | None:
    if not values:
        return None
    return PriceStats(min(values), statistics.median(values), max(values), len(values))


def summarise_offers(
    offers: Iterable[PriceOffer], as_of: str, names: Mapping[str, Iterable[str]] | None = None
) -> dict[str, GpuPriceSummary]:
    """Per-GPU price summaries from offers (duplicate offers counted once), in first-seen order."""
    unique: dict[tuple[object, ...], PriceOffer] = {}
    for o in offers:
        key = (o.gpu_id, o.provider, o.instance, o.region, o.spot, round(o.usd_per_gpu_hour, 6))
        unique.setdefault(key, o)
    by_gpu: dict[str, list[PriceOffer]] = {}
    for o in unique.values():
        by_gpu.setdefault(o.gpu_id, []).append(o)
    out = {}
    for gpu_id, group in by_gpu.items():
        providers = tuple(dict.fromkeys(o.provider for o in group))
        regions = len({(o.provider, o.region) for o in group if o.region})
        out[gpu_id] = GpuPriceSummary(
            gpu_id=gpu_id,
            on_demand=_stats([o.usd_per_gpu_hour for o in group if not o.spot]),
            spot=_stats([o.usd_per_gpu_hour for o in group if o.spot]),
            offers=len(group),
            providers=providers,
            regions=regions,
            as_of=as_of,
            names=tuple(dict.fromkeys((names or {}).get(gpu_id, ()))),
        )
    return out


class _RowError(Exception):
    """A bad row: skipped and reported with its line number."""


def _number(row: Mapping[str, str], column: str, label: str | None = None) -> float | None:
    """The cell as a finite float, None when empty; _RowError when unparseable."""
    raw = (row.get(column) or "").strip()
    if not raw:
        return None
    try:
        value = float(raw.replace(",", "").replace("$", ""))
    except ValueError:
        raise _RowError(f"{label or column} is not a number ({raw!r})") from None
    if not math.isfinite(value):
        raise _RowError(f"{label or column} is not a finite number ({raw!r})")
    return value


def _price(row: Mapping[str, str], column: str, label: str) -> float | None:
    value = _number(row, column, label)
    if value is not None and value <= 0:
        raise _RowError(f"{label} must be above 0 (got {value:g})")
    if value is not None and value > MAX_INSTANCE_USD_PER_HOUR:
        raise _RowError(
            f"{label} must be at most {MAX_INSTANCE_USD_PER_HOUR:,.0f} USD per instance-hour "
            f"(the dearest cloud instances cost about 100; got {value:g})"
        )
    return value


def _spot_price(row: Mapping[str, str]) -> float | None:
    """SkyPilot's ``SpotPrice``: None when there is no spot offer, which marketplaces such as
    Vast.ai (and Azure for some sizes) write as ``0`` or ``0.00`` rather than leaving it empty."""
    value = _number(row, "spotprice", "SpotPrice")
    if value == 0:
        return None
    if value is not None and value < 0:
        raise _RowError(f"SpotPrice must not be negative (got {value:g})")
    return value


def _gpu_fields(name: str, count: float | None, name_label: str, count_label: str) -> float | None:
    """The GPU count of a row; None for a row without GPUs (a CPU instance); _RowError when bad."""
    if count is not None and count < 0:
        raise _RowError(f"{count_label} must not be negative (got {count:g})")
    if not name and not count:
        return None
    if not name:
        raise _RowError(f"{name_label} is missing for a row with {count_label} {count:g}")
    if count is None:
        raise _RowError(f"{count_label} is missing for a GPU offer ({name})")
    if count == 0:
        raise _RowError(f"{count_label} must be above 0 for a GPU offer ({name})")
    if count > MAX_GPUS_PER_INSTANCE:
        raise _RowError(
            f"{count_label} must be at most {MAX_GPUS_PER_INSTANCE} (an instance has at most 16 GPUs; got {count:g})"
        )
    if len(name) > MAX_NAME_CHARS:
        raise _RowError(
            f"{name_label} is {len(name):,} characters long; at most {MAX_NAME_CHARS} are accepted"
        )
    return count


def _boolean(raw: str, label: str) -> bool:
    value = raw.strip().lower()
    if value in ("", "false", "0", "no"):
        return False
    if value in ("true", "1", "yes"):
        return True
    raise _RowError(f"{label} must be true or false ({raw!r})")


def _gpu_info_memory_gib(raw: str, count: float) -> float | None:
    """Memory of one GPU from SkyPilot's GpuInfo cell (a Python-literal or JSON dict), or None."""
    raw = raw.strip()
    if not raw.startswith("{") or len(raw) > MAX_GPU_INFO_CHARS:
        return None
    info = None
    try:
        info = ast.literal_eval(raw)  # literals only: nothing in the cell is ever executed
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        try:
            info = json.loads(raw)
        except (ValueError, RecursionError, MemoryError):
            return None
    if not isinstance(info, dict):
        return None
    gpus = info.get("Gpus")
    if isinstance(gpus, list) and gpus and isinstance(gpus[0], dict):
        mem = gpus[0].get("MemoryInfo")
        size = mem.get("SizeInMiB") if isinstance(mem, dict) else None
        if isinstance(size, (int, float)) and not isinstance(size, bool) and size > 0:
            return float(size) / 1024.0
    total = info.get("TotalGpuMemoryInMiB")
    if isinstance(total, (int, float)) and count > 0 and total > 0:
        return float(total) / 1024.0 / count
    return None


_GPUHUNT_LOWER = {c.lower() for c in GPUHUNT_REQUIRED}
_SKYPILOT_LOWER = {c.lower() for c in SKYPILOT_REQUIRED}


def detect_format(header: Sequence[str]) -> str | None:
    """``"gpuhunt"``, ``"skypilot"`` or None for a CSV header (case-insensitive)."""
    names = {h.strip().lower() for h in header}
    if _GPUHUNT_LOWER.issubset(names):
        return "gpuhunt"
    if _SKYPILOT_LOWER.issubset(names):
        return "skypilot"
    return None


def parse_price_list(
    text: str, catalog: GpuCatalog, provider: str, origin: str = "price list", as_of: date | None = None
) -> PriceImport:
    """Read price-list CSV text (gpuhunt or SkyPilot, detected from the header).

    Bad rows are skipped and listed in ``rejected`` with their physical line number; a file
    that is neither format raises :class:`InputError` naming ``origin``.
    """
    day = (as_of or date.today()).isoformat()
    if "\x00" in text:
        raise InputError(origin, "is not a text CSV file (binary content)")
    reader = csv.reader(io.StringIO(text.lstrip("\ufeff")))
    records = _csv_rows(reader, origin)
    header: list[str] | None = None
    for cells in records:
        if any(c.strip() for c in cells):
            header = [c.strip() for c in cells]
            break
    if header is None:
        raise InputError(origin, "is empty")
    fmt = detect_format(header)
    if fmt is None:
        skypilot = ", ".join(SKYPILOT_REQUIRED + SKYPILOT_OPTIONAL)
        raise InputError(
            origin,
            f"is neither a gpuhunt catalog (columns {', '.join(GPUHUNT_COLUMNS)}) nor "
            f"a SkyPilot catalog (columns {skypilot}); its header starts",
            ",".join(header[:6]),
        )
    lower = [h.lower() for h in header]
    offers: list[PriceOffer] = []
    unmatched: dict[str, int] = {}
    unmatched_reasons: dict[str, str] = {}
    assumptions: dict[str, str] = {}
    names: dict[str, list[str]] = {}
    rejected: list[tuple[int, str]] = []
    skipped = rows = 0
    matches: dict[tuple[str, float | None], GpuMatch] = {}
    for cells in records:
        if not any(c.strip() for c in cells):
            continue
        line = reader.line_num
        rows += 1
        if len(cells) != len(header):
            rejected.append((line, f"has {len(cells)} cells, the header has {len(header)}"))
            continue
        row = dict(zip(lower, cells, strict=True))
        try:
            parsed = _gpuhunt_row(row) if fmt == "gpuhunt" else _skypilot_row(row)
        except _RowError as exc:
            rejected.append((line, str(exc)))
            continue
        if parsed is None:
            skipped += 1
            continue
        name, count, memory, instance, region, prices = parsed
        key = (name, memory)
        if key not in matches:
            matches[key] = explain_match(name, memory, catalog)
        match = matches[key]
        if match.gpu_id is None:
            label = f"{name} ({gib_from_gib_or_mib(memory):g} GiB)" if match.by_memory else name
            unmatched[label] = unmatched.get(label, 0) + 1
            unmatched_reasons.setdefault(label, match.note)
            continue
        if match.note:
            assumptions.setdefault(name, match.note)
        names.setdefault(match.gpu_id, []).append(name)
        for usd, spot in prices:
            offers.append(
                PriceOffer(match.gpu_id, provider, instance, region, usd / count, spot, count, line)
            )
    return PriceImport(
        provider=provider,
        format=fmt,
        origin=origin,
        as_of=day,
        rows_read=rows,
        prices=summarise_offers(offers, day, names),
        unmatched=unmatched,
        rejected=rejected,
        skipped_no_gpu=skipped,
        offers=tuple(offers),
        assumptions=assumptions,
        unmatched_reasons=unmatched_reasons,
    )


def _csv_rows(reader: Any, origin: str) -> Iterator[list[str]]:
    """The reader's records; a CSV error (a cell over the csv module's limit) names the line."""
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise InputError(f"{origin}: line {reader.line_num}", csv_problem(exc)) from None
        yield cells


_Parsed = tuple[str, float, float | None, str, str, list[tuple[float, bool]]]


def _gpuhunt_row(row: Mapping[str, str]) -> _Parsed | None:
    """(GPU name, count, memory GiB, instance, region, [(price, spot)]) or None for a CPU-only row."""
    name = (row.get("gpu_name") or "").strip()
    count = _gpu_fields(name, _number(row, "gpu_count"), "gpu_name", "gpu_count")
    if count is None:
        return None
    price = _price(row, "price", "price")
    if price is None:
        raise _RowError("price is missing")
    spot = _boolean(row.get("spot", ""), "spot")
    memory = _number(row, "gpu_memory")
    instance, region = (row.get("instance_name") or "").strip(), (row.get("location") or "").strip()
    return (name, count, memory, instance, region, [(price, spot)])


def _skypilot_row(row: Mapping[str, str]) -> _Parsed | None:
    """As :func:`_gpuhunt_row` for a SkyPilot ``vms.csv`` row (on-demand and spot in one row)."""
    name = (row.get("acceleratorname") or "").strip()
    count = _gpu_fields(
        name, _number(row, "acceleratorcount", "AcceleratorCount"), "AcceleratorName", "AcceleratorCount"
    )
    if count is None:
        return None
    price = _price(row, "price", "Price")
    spot_price = _spot_price(row)
    if price is None and spot_price is None:
        raise _RowError("Price and SpotPrice are both missing")
    info = row.get("gpuinfo", row.get("gpu_info", "")) or ""
    memory = _gpu_info_memory_gib(info, count)
    prices = [(p, spot) for p, spot in ((price, False), (spot_price, True)) if p is not None]
    instance, region = (row.get("instancetype") or "").strip(), (row.get("region") or "").strip()
    return (name, count, memory, instance, region, prices)


def default_provider(path: str | os.PathLike[str]) -> str:
    """The provider named by a price-list path: the file stem (``aws.csv`` -> ``aws``), or the
    folder for SkyPilot's ``<cloud>/vms.csv`` layout."""
    p = Path(path)
    stem = p.stem.lower()
    if stem in ("vms", "catalog", "prices") and p.parent.name:
        return p.parent.name.lower()
    return stem


def read_price_list(
    path: str | os.PathLike[str], catalog: GpuCatalog, provider: str | None = None, as_of: date | None = None
) -> PriceImport:
    """Read a price-list file; errors name the file (by its name only)."""
    p = expand_user(path, "price list")
    text = read_text(p, FileKind.PRICE_LIST, what="a CSV price list")
    return parse_price_list(text, catalog, provider or default_provider(p), origin=p.name, as_of=as_of)


def merge_price_imports(imports: Sequence[PriceImport]) -> PriceImport:
    """Several price lists (providers) combined; rejected rows keep their file name in the reason."""
    if not imports:
        raise InputError("price lists", "give at least one imported price list")
    if len(imports) == 1:
        return imports[0]
    offers = tuple(o for imp in imports for o in imp.offers)
    as_of = max(imp.as_of for imp in imports)
    unmatched: dict[str, int] = {}
    reasons: dict[str, str] = {}
    assumptions: dict[str, str] = {}
    names: dict[str, list[str]] = {}
    for imp in imports:
        for name, count in imp.unmatched.items():
            unmatched[name] = unmatched.get(name, 0) + count
        for name, why in imp.unmatched_reasons.items():
            reasons.setdefault(name, why)
        for name, note in imp.assumptions.items():
            assumptions.setdefault(name, note)
        for gpu_id, s in imp.prices.items():
            names.setdefault(gpu_id, []).extend(s.names)
    formats = {imp.format for imp in imports}
    return PriceImport(
        provider=", ".join(dict.fromkeys(p.strip() for imp in imports for p in imp.provider.split(","))),
        format=formats.pop() if len(formats) == 1 else "merged",
        origin=", ".join(imp.origin for imp in imports),
        as_of=as_of,
        rows_read=sum(imp.rows_read for imp in imports),
        prices=summarise_offers(offers, as_of, names),
        unmatched=unmatched,
        rejected=[(line, f"{imp.origin}: {why}") for imp in imports for line, why in imp.rejected],
        skipped_no_gpu=sum(imp.skipped_no_gpu for imp in imports),
        offers=offers,
        assumptions=assumptions,
        unmatched_reasons=reasons,
    )


def format_price(usd: float) -> str:
    """A catalog price cell: at most 4 decimals, no trailing zeros (1.5, 2, 0.1235)."""
    text = f"{usd:.4f}".rstrip("0").rstrip(".")
    return text if text not in ("0", "") else f"{usd:.4g}"


_PRICE_CLAUSE = re.compile(r"\s*;?\s*Prices from [^;]*? price lists? imported \d{4}-\d{2}-\d{2}\.?")


def price_source_text(existing: str, providers: Sequence[str], as_of: str) -> str:
    """``existing`` with one "Prices from <providers> price lists imported <date>" clause
    (an earlier such clause is replaced, so repeated imports do not pile up)."""
    base = _PRICE_CLAUSE.sub("", existing).strip().rstrip(";").strip()
    clause = f"Prices from {', '.join(providers)} price lists imported {as_of}"
    return f"{base}; {clause}" if base else clause


def price_update_rows(
    imports: PriceImport | Sequence[PriceImport],
    catalog_rows: Sequence[Mapping[str, str]],
    as_of: date | None = None,
) -> list[tuple[str, dict[str, str]]]:
    """The cell updates that put imported on-demand prices into GPU catalog rows.

    For every row whose ``id`` has on-demand offers: ``cloud_usd_per_hour_low`` = minimum,
    ``_expected`` = median, ``_high`` = maximum USD per GPU-hour, ``price_as_of`` = ``as_of``
    (default: the import's date), and ``source`` with a "Prices from ... imported ..." clause.
    GPUs with spot offers only get no update (the catalog columns are on-demand prices).
    Returns ``[(gpu id, {column: new text})]`` in catalog order, for a preview and one undo step.
    """
    merged = merge_price_imports([imports] if isinstance(imports, PriceImport) else list(imports))
    day = as_of.isoformat() if as_of else merged.as_of
    out: list[tuple[str, dict[str, str]]] = []
    for row in catalog_rows:
        gpu_id = (row.get("id") or "").strip()
        summary = merged.prices.get(gpu_id)
        if summary is None or summary.on_demand is None:
            continue
        od = summary.on_demand
        providers = sorted({o.provider for o in merged.offers if o.gpu_id == gpu_id and not o.spot})
        out.append(
            (
                gpu_id,
                {
                    "cloud_usd_per_hour_low": format_price(od.low),
                    "cloud_usd_per_hour_expected": format_price(od.median),
                    "cloud_usd_per_hour_high": format_price(od.high),
                    "price_as_of": day,
                    "source": price_source_text(row.get("source") or "", providers, day),
                },
            )
        )
    return out
