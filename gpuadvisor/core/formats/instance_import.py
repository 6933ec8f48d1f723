"""Price lists -> instance types: the offers a price list holds, one row per provider and instance.

The price list is read by :func:`~gpuadvisor.core.formats.pricelists.read_price_list` (the one
reader of gpuhunt and SkyPilot files, with its checks); this module only groups its offers:

- offers without an instance name (GCP's GPU-only rows, priced apart from the VM they attach to)
  and offers of a fraction of a GPU (a shared A10) are left out: neither is an instance one can
  rent whole for a job. A GCP list's machine types are priced whole instead, the VM's price plus
  its GPUs' (:mod:`gpuadvisor.core.formats.gcp_machines`, :func:`price_list_instance_types`);
- an instance whose name says ``pcie`` carries the PCIe part where the catalog has one
  (``gpu_1x_h100_pcie`` lists its GPU as plain "H100", which the matcher takes for the SXM part);
- per (provider, instance type, catalog GPU): the on-demand price is the cheapest region's
  (``usd_per_gpu_hour x gpu_count``), likewise the spot price; the regions are listed.

See :mod:`gpuadvisor.core.specs.instances` for how the rows are used.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from datetime import date
from pathlib import Path

from ..specs.hardware import GpuCatalog
from ..specs.instances import InstanceType
from .gcp_machines import whole_machine_text
from .pricelists import PriceImport, PriceOffer, parse_price_list


def _whole(count: float) -> int | None:
    """A whole GPU count, or None for a fraction of a GPU."""
    if count < 1 or abs(count - round(count)) > 1e-6:
        return None
    return int(round(count))


def _pcie_part(gpu_id: str, instance: str, gpu_ids: frozenset[str]) -> str:
    """The PCIe variant of ``gpu_id`` for an instance named ``...pcie...`` (when the catalog has one)."""
    if "pcie" not in instance.lower() or gpu_id.endswith("pcie"):
        return gpu_id
    for candidate in (gpu_id.removesuffix("-sxm") + "-pcie", gpu_id + "-pcie"):
        if candidate in gpu_ids:
            return candidate
    return gpu_id


def instance_types(imp: PriceImport, gpu_ids: Iterable[str] = (), source: str = "") -> list[InstanceType]:
    """The instance types of an import (see the module docstring), in first-seen order; ``gpu_ids``
    are the catalog's ids (for the PCIe rule)."""
    return instance_types_from_offers(imp.offers, imp.as_of, source or imp.origin, gpu_ids)


def instance_types_from_offers(
    offers: Iterable[PriceOffer], as_of: str, source: str, gpu_ids: Iterable[str] = ()
) -> list[InstanceType]:
    ids = frozenset(gpu_ids)
    groups: dict[tuple[str, str, str, int], dict[str, object]] = {}
    for o in offers:
        count = _whole(o.gpu_count)
        if not o.instance or count is None:
            continue
        key = (o.provider, o.instance, _pcie_part(o.gpu_id, o.instance, ids), count)
        g = groups.setdefault(key, {"od": None, "spot": None, "regions": {}})
        price = o.usd_per_gpu_hour * count
        slot = "spot" if o.spot else "od"
        current = g[slot]
        if current is None or price < current:  # type: ignore[operator]
            g[slot] = price
        if o.region:
            g["regions"][o.region] = None  # type: ignore[index]
    out = []
    for (provider, instance, gpu_id, count), g in groups.items():
        out.append(
            InstanceType(
                provider=provider,
                instance_type=instance,
                gpu_id=gpu_id,
                gpus_per_instance=count,
                usd_per_hour=g["od"],  # type: ignore[arg-type]
                spot_usd_per_hour=g["spot"],  # type: ignore[arg-type]
                regions=tuple(g["regions"]),  # type: ignore[arg-type]
                price_date=as_of,
                source=source,
            )
        )
    return out


def whole_machine_import(
    text: str, catalog: GpuCatalog, provider: str, origin: str, as_of: date | None = None
) -> PriceImport | None:
    """The machines a price list prices in parts (a GCP list: VM rows and GPU rows), priced whole and
    read by the application's reader; None when the list holds none."""
    machines = whole_machine_text(text)
    if machines is None:
        return None
    return parse_price_list(
        machines, catalog, provider, origin=f"{origin} (machines priced whole)", as_of=as_of
    )


def price_list_instance_types(
    path: str | os.PathLike[str], imp: PriceImport, catalog: GpuCatalog, source: str = ""
) -> list[InstanceType]:
    """The instance types of the price list at ``path``, already read as ``imp``: its whole-instance
    offers, plus its machines priced whole where it prices GPUs apart from the VM (GCP)."""
    ids = [g.id for g in catalog]
    types = instance_types(imp, ids, source)
    try:
        text = Path(path).read_bytes().decode("utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return types  # the list itself was readable a moment ago; without its text there are no machines
    machines = whole_machine_import(text, catalog, imp.provider, imp.origin, date.fromisoformat(imp.as_of))
    if machines is not None:
        types += instance_types(machines, ids, source)
    return types
