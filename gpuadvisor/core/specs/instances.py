"""Cloud instance types: where a setup can be rented, as a dated snapshot of public price lists.

``catalogs/instances.csv`` holds one row per (provider, instance type): the catalog GPU it carries,
how many, the cheapest on-demand and spot price per instance-hour over the regions listed, the
regions, the date of the prices and their source. It is built from SkyPilot-format price lists
(``scripts/instance_snapshot.py``) and refreshed by importing newer price lists
(``gpuadvisor-cli prices import``), which replace the rows of the providers they cover.

A setup of ``n`` GPUs on an instance type with ``k`` GPUs needs ``ceil(n / k)`` instances, and an
instance type holds it only if it holds a whole node of it (``k >= min(n, gpus_per_node)``: the
estimate's GPUs of a node share fast links that separate machines lack)::

    usd_per_hour      = ceil(n / k) x instance on-demand price
    usd_per_gpu_hour  = usd_per_hour / n          (idle GPUs of a part-filled instance are paid too)

:func:`offers_for` lists them cheapest first. With ``budget.providers`` set, the price a setup is
costed at is its cheapest offer's (:func:`instance_price_range`): low the cheapest spot price
(else on demand), expected the cheapest on-demand price, high the dearest on-demand offer of the
providers chosen.

References
----------
- SkyPilot catalog schema, ``vms.csv`` (github.com/skypilot-org/skypilot-catalog, README).
- ``docs/catalog.md``, "Cloud instance types": the snapshot, its sources and licence notes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import CatalogError
from ..files import MAX_NAME_CHARS, MAX_TEXT_CHARS, check_text
from .catalog_io import CatalogMeta, RowReader, read_catalog_file, read_catalog_text
from .hardware import PriceRange, bundled_catalog_dir

INSTANCE_SCHEMA_VERSIONS = (1,)
INSTANCE_COLUMNS = (
    "provider",
    "instance_type",
    "gpu_id",
    "gpus_per_instance",
    "usd_per_hour",
    "spot_usd_per_hour",
    "regions",
    "price_date",
    "source",
)
INSTANCE_REQUIRED_COLUMNS = ("provider", "instance_type", "gpu_id", "gpus_per_instance", "price_date")
#: An instance type with more GPUs than this, or a price above this per instance-hour, is refused.
MAX_GPUS_PER_INSTANCE = 1024
MAX_USD_PER_INSTANCE_HOUR = 100_000.0


@dataclass(frozen=True, slots=True)
class InstanceType:
    """One instance type of one provider carrying ``gpus_per_instance`` of catalog GPU ``gpu_id``."""

    provider: str
    instance_type: str
    gpu_id: str
    gpus_per_instance: int
    usd_per_hour: float | None  # on demand, cheapest region; None: spot only
    spot_usd_per_hour: float | None  # None: no spot offer
    regions: tuple[str, ...]
    price_date: str
    source: str = ""

    def row(self) -> dict[str, str]:
        """The row as CSV text (see :data:`INSTANCE_COLUMNS`)."""
        return {
            "provider": self.provider,
            "instance_type": self.instance_type,
            "gpu_id": self.gpu_id,
            "gpus_per_instance": str(self.gpus_per_instance),
            "usd_per_hour": _price_text(self.usd_per_hour),
            "spot_usd_per_hour": _price_text(self.spot_usd_per_hour),
            "regions": " ".join(self.regions),
            "price_date": self.price_date,
            "source": self.source,
        }


class InstanceOffer(NamedTuple):
    """Renting ``instances`` x ``instance_type`` for a setup of some GPU count (one candidate)."""

    provider: str
    instance_type: str
    gpus_per_instance: int
    instances: int
    usd_per_hour: float | None  # all the instances, on demand
    spot_usd_per_hour: float | None  # all the instances, spot
    price_date: str
    regions: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "instance_type": self.instance_type,
            "gpus_per_instance": self.gpus_per_instance,
            "instances": self.instances,
            "usd_per_hour": None if self.usd_per_hour is None else round(self.usd_per_hour, 4),
            "spot_usd_per_hour": None if self.spot_usd_per_hour is None else round(self.spot_usd_per_hour, 4),
            "price_date": self.price_date,
            "regions": self.regions,
        }


@dataclass(frozen=True)
class InstanceCatalog:
    """The instance types of a snapshot, with the file's metadata."""

    types: tuple[InstanceType, ...]
    meta: CatalogMeta
    _by_gpu: dict[str, tuple[InstanceType, ...]] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        by_gpu: dict[str, list[InstanceType]] = {}
        for t in self.types:
            by_gpu.setdefault(t.gpu_id, []).append(t)
        self._by_gpu.update({k: tuple(v) for k, v in by_gpu.items()})

    def __len__(self) -> int:
        return len(self.types)

    def providers(self) -> tuple[str, ...]:
        """Provider names, in the order of the file."""
        return tuple(dict.fromkeys(t.provider for t in self.types))

    def for_gpu(self, gpu_id: str) -> tuple[InstanceType, ...]:
        return self._by_gpu.get(gpu_id, ())

    @property
    def price_dates(self) -> tuple[str, ...]:
        """The distinct price dates of the snapshot, oldest first."""
        return tuple(sorted({t.price_date for t in self.types}))


EMPTY_INSTANCES = InstanceCatalog((), CatalogMeta("instances", 1, "", "no instance snapshot"))


def _price_text(usd: float | None) -> str:
    if usd is None:
        return ""
    return f"{usd:.4f}".rstrip("0").rstrip(".")


def provider_filter(providers: str | Sequence[str] | None) -> frozenset[str] | None:
    """The providers a budget rents from, lower case (None: any provider)."""
    if providers is None or isinstance(providers, str):
        return None
    return frozenset(p.strip().lower() for p in providers)


def offers_for(
    catalog: InstanceCatalog,
    gpu_id: str,
    gpu_count: int,
    providers: str | Sequence[str] | None = None,
    gpus_per_node: int | None = None,
) -> tuple[InstanceOffer, ...]:
    """Every way to rent ``gpu_count`` GPUs of ``gpu_id`` (of ``providers``, default any), cheapest
    on-demand first (spot-only offers last, by their spot price).

    With ``gpus_per_node``, an instance type smaller than one node of the setup
    (``min(gpu_count, gpus_per_node)`` GPUs) is left out: the estimate lets the GPUs of a node talk
    over its fast links, which separate machines (eight single-GPU rentals for an 8-GPU job) do not
    have."""
    chosen = provider_filter(providers)
    node = None if gpus_per_node is None else min(gpu_count, gpus_per_node)
    out = []
    for t in catalog.for_gpu(gpu_id):
        if chosen is not None and t.provider.lower() not in chosen:
            continue
        if node is not None and t.gpus_per_instance < node:
            continue
        n = math.ceil(gpu_count / t.gpus_per_instance)
        out.append(
            InstanceOffer(
                t.provider,
                t.instance_type,
                t.gpus_per_instance,
                n,
                None if t.usd_per_hour is None else n * t.usd_per_hour,
                None if t.spot_usd_per_hour is None else n * t.spot_usd_per_hour,
                t.price_date,
                len(t.regions),
            )
        )
    out.sort(
        key=lambda o: (
            o.usd_per_hour is None,
            o.usd_per_hour if o.usd_per_hour is not None else o.spot_usd_per_hour or math.inf,
            o.instances,
            o.provider,
            o.instance_type,
        )
    )
    return tuple(out)


def instance_price_range(
    offers: Sequence[InstanceOffer], gpu_count: int, choice: str = "expected"
) -> tuple[PriceRange, InstanceOffer] | None:
    """The price per GPU-hour a setup is costed at when rented as instances, and the offer it is
    (see the module docstring); ``choice`` picks the low, expected or high figure as the expected
    one, as with the catalog's range. None without an on-demand offer."""
    on_demand = [o for o in offers if o.usd_per_hour is not None]
    if not on_demand:
        return None
    cheapest = on_demand[0]
    assert cheapest.usd_per_hour is not None
    per_gpu = [o.usd_per_hour / gpu_count for o in on_demand if o.usd_per_hour is not None]
    spot = [o.spot_usd_per_hour / gpu_count for o in offers if o.spot_usd_per_hour is not None]
    expected = cheapest.usd_per_hour / gpu_count
    low = min([expected, *spot])
    high = max(per_gpu)
    chosen = {"low": low, "expected": expected, "high": high}.get(choice, expected)
    dearest = max(on_demand, key=lambda o: o.usd_per_hour or 0.0)
    return PriceRange(low, chosen, high), (cheapest if choice != "high" else dearest)


# -- reading and writing ------------------------------------------------------------------------------
def _parse_row(r: RowReader, gpu_ids: Iterable[str] | None) -> InstanceType:
    # A user's list may come from anywhere: names as short as a name is, the rest as free text.
    for column in INSTANCE_COLUMNS:
        limit = MAX_TEXT_CHARS if column in ("regions", "source") else MAX_NAME_CHARS
        check_text(r.where(column), r.row.get(column, ""), limit, error=CatalogError)
    provider = r.text("provider").strip()
    name = r.text("instance_type").strip()
    gpu_id = r.text("gpu_id").strip()
    if gpu_ids is not None and gpu_id not in gpu_ids:
        raise CatalogError(r.where("gpu_id"), "is not a GPU of the catalog", gpu_id)
    count = r.integer("gpus_per_instance", minimum=1)
    assert count is not None
    if count > MAX_GPUS_PER_INSTANCE:
        raise CatalogError(r.where("gpus_per_instance"), f"must be at most {MAX_GPUS_PER_INSTANCE}", count)
    prices = []
    for column in ("usd_per_hour", "spot_usd_per_hour"):
        value = r.number(column, required=False)
        if value is not None and value > MAX_USD_PER_INSTANCE_HOUR:
            raise CatalogError(r.where(column), f"must be at most {MAX_USD_PER_INSTANCE_HOUR:,.0f}", value)
        prices.append(value)
    if prices == [None, None]:
        raise CatalogError(r.where("usd_per_hour"), "is required (or spot_usd_per_hour)")
    return InstanceType(
        provider=provider,
        instance_type=name,
        gpu_id=gpu_id,
        gpus_per_instance=count,
        usd_per_hour=prices[0],
        spot_usd_per_hour=prices[1],
        regions=tuple(r.text("regions", required=False).split()),
        price_date=r.text("price_date"),
        source=r.text("source", required=False),
    )


def _catalog(
    meta: CatalogMeta, rows: list[tuple[int, dict[str, str]]], gpu_ids: Iterable[str] | None
) -> InstanceCatalog:
    ids = frozenset(gpu_ids) if gpu_ids is not None else None
    types = []
    seen: set[tuple[str, str, str]] = set()
    for line, row in rows:
        t = _parse_row(RowReader(meta.origin, line, row), ids)
        key = (t.provider, t.instance_type, t.gpu_id)
        if key in seen:
            raise CatalogError(
                f"{meta.origin}: line {line}, column instance_type", "duplicates an earlier row"
            )
        seen.add(key)
        types.append(t)
    return InstanceCatalog(tuple(types), meta)


def load_instance_catalog(
    path: str | Path | None = None, text: str | None = None, gpu_ids: Iterable[str] | None = None
) -> InstanceCatalog:
    """An instance snapshot from ``path`` (default: the bundled one) or ``text``; ``gpu_ids`` (when
    given) must hold every row's GPU."""
    if text is not None:
        meta, rows = read_catalog_text(
            text, "instances.csv", "instances", INSTANCE_SCHEMA_VERSIONS, INSTANCE_REQUIRED_COLUMNS
        )
    else:
        meta, rows = read_catalog_file(
            path or bundled_catalog_dir() / "instances.csv",
            "instances",
            INSTANCE_SCHEMA_VERSIONS,
            INSTANCE_REQUIRED_COLUMNS,
        )
    return _catalog(meta, rows, gpu_ids)


@cache
def bundled_instances() -> InstanceCatalog:
    """The bundled snapshot (read once per process; an installation without it rents nothing)."""
    try:
        return load_instance_catalog()
    except CatalogError:
        return EMPTY_INSTANCES


def merge_instances(base: InstanceCatalog, newer: Sequence[InstanceType], updated: str) -> InstanceCatalog:
    """``base`` with the rows of every provider in ``newer`` replaced by ``newer``'s."""
    replaced = {t.provider for t in newer}
    types = tuple(t for t in base.types if t.provider not in replaced) + tuple(newer)
    meta = CatalogMeta(
        "instances", INSTANCE_SCHEMA_VERSIONS[-1], max(updated, base.meta.updated), base.meta.origin
    )
    return InstanceCatalog(types, meta)


def dumps_instances(catalog: InstanceCatalog, note: str = "") -> str:
    """The snapshot as catalog text (metadata line, header, rows), for a file."""
    import csv
    import io

    buf = io.StringIO()
    extra = f"; source={note}" if note else ""
    buf.write(f"# catalog=instances; schema_version=1; updated={catalog.meta.updated}{extra}\n")
    writer = csv.DictWriter(buf, fieldnames=INSTANCE_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for t in catalog.types:
        writer.writerow(t.row())
    return buf.getvalue()
