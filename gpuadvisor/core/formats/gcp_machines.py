"""Google Cloud's GPU machine types priced whole: the VM's price plus the price of its GPUs.

A SkyPilot-format Google Cloud list (``gcp/vms.csv``) prices a machine type's VM (vCPUs and
memory) and the GPUs attached to it on separate rows: VM rows name the machine type and no
accelerator, GPU rows name an accelerator and a count but no machine type. Nobody rents the GPUs
of an ``a3-highgpu-8g`` without its VM, so a whole machine is priced per zone as::

    usd_per_hour(machine, zone)      = vm_usd_per_hour(machine, zone) + gpus_usd_per_hour(gpu, k, zone)
    spot_usd_per_hour(machine, zone) = vm_spot(machine, zone)         + gpus_spot(gpu, k, zone)

where ``gpu`` and ``k`` are the GPU model and count the machine type carries (:data:`MACHINE_GPUS`,
:data:`G2_GPUS`). A zone where the VM or the GPUs have no on-demand price (or a price of 0) gives
no on-demand offer; likewise spot. The result is SkyPilot-format text of whole machines, read by
:func:`~gpuadvisor.core.formats.pricelists.parse_price_list` like any other list, so its checks
apply.

Machine types to which any number of GPUs can be attached (N1 with T4, V100, P100 or P4) are not
one instance type with a price and are left out, as are TPUs.

References
----------
- Google Cloud documentation, "GPU machine types" (A4, A3 Ultra/Mega/High/Edge, A2 Ultra/High and
  G2 series: GPU model and count per machine type).
- SkyPilot catalog schema, ``vms.csv`` (github.com/skypilot-org/skypilot-catalog, README).
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Iterable, Mapping

#: Machine family (the name up to the GPU count) -> the accelerator name of its GPU rows.
MACHINE_GPUS = {
    "a2-highgpu": "A100",
    "a2-megagpu": "A100",
    "a2-ultragpu": "A100-80GB",
    "a3-highgpu": "H100",
    "a3-edgegpu": "H100",
    "a3-megagpu": "H100-MEGA",
    "a3-ultragpu": "H200",
    "a4-highgpu": "B200",
    "g2-standard": "L4",
}
#: G2 machine types carry one L4 up to 32 vCPUs, then 2, 4 and 8 (Google Cloud, "G2 machine series").
G2_GPUS = {4: 1, 8: 1, 12: 1, 16: 1, 32: 1, 24: 2, 48: 4, 96: 8}
WHOLE_MACHINE_COLUMNS = (
    "InstanceType",
    "AcceleratorName",
    "AcceleratorCount",
    "GpuInfo",
    "Price",
    "SpotPrice",
    "Region",
)

_COUNT_RE = re.compile(r"^(?P<family>[a-z0-9]+-[a-z]+)-(?P<count>\d+)g(?:-[a-z0-9]+)?$")
_G2_RE = re.compile(r"^g2-standard-(?P<vcpus>\d+)$")


def machine_gpus(machine: str) -> tuple[str, int] | None:
    """(accelerator name, GPU count) of a GCP machine type, or None for one without fixed GPUs.

    ``a3-highgpu-8g`` -> ("H100", 8); ``a3-ultragpu-8g-nolssd`` -> ("H200", 8);
    ``g2-standard-24`` -> ("L4", 2); ``n1-standard-8`` -> None.
    """
    name = machine.strip().lower()
    g2 = _G2_RE.match(name)
    if g2:
        count = G2_GPUS.get(int(g2["vcpus"]))
        return ("L4", count) if count else None
    m = _COUNT_RE.match(name)
    if not m or m["family"] not in MACHINE_GPUS:
        return None
    return MACHINE_GPUS[m["family"]], int(m["count"])


def _price(cell: str | None) -> float | None:
    """A price cell as a positive finite number; None when empty, zero or unreadable."""
    try:
        value = float((cell or "").strip())
    except ValueError:
        return None
    return value if math.isfinite(value) and value > 0 else None


def _sum(a: float | None, b: float | None) -> str:
    return "" if a is None or b is None else f"{a + b:.6g}"


def whole_machine_rows(rows: Iterable[Mapping[str, str]]) -> list[dict[str, str]]:
    """SkyPilot rows of whole machines from a GCP list's VM rows and GPU rows (see the module
    docstring), one per machine type and zone that has an on-demand or spot price for both parts."""
    vms: list[tuple[str, str, str, Mapping[str, str]]] = []
    gpus: dict[tuple[str, int, str], Mapping[str, str]] = {}
    for raw in rows:
        row = {k.strip().lower(): (v or "") for k, v in raw.items() if k}
        machine = row.get("instancetype", "").strip()
        accelerator = row.get("acceleratorname", "").strip()
        zone = row.get("availabilityzone", "").strip() or row.get("region", "").strip()
        if machine and not accelerator:
            vms.append((machine, zone, row.get("region", "").strip(), row))
        elif accelerator and not machine:
            try:
                count = int(float(row.get("acceleratorcount", "")))
            except ValueError:
                continue
            gpus.setdefault((accelerator, count, zone), row)
    out = []
    for machine, zone, region, vm in vms:
        shape = machine_gpus(machine)
        gpu = gpus.get((shape[0], shape[1], zone)) if shape else None
        if shape is None or gpu is None:
            continue
        price = _sum(_price(vm.get("price")), _price(gpu.get("price")))
        spot = _sum(_price(vm.get("spotprice")), _price(gpu.get("spotprice")))
        if not price and not spot:
            continue
        out.append(
            {
                "InstanceType": machine,
                "AcceleratorName": shape[0],
                "AcceleratorCount": str(shape[1]),
                "GpuInfo": gpu.get("gpuinfo", ""),
                "Price": price,
                "SpotPrice": spot,
                "Region": region,
            }
        )
    return out


def whole_machine_text(text: str) -> str | None:
    """SkyPilot-format CSV text of the whole machines a GCP list prices in parts, or None when the
    text holds none (another provider's list, or a list that already prices whole instances)."""
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff")))
    names = {(n or "").strip().lower() for n in (reader.fieldnames or ())}
    if not {"instancetype", "acceleratorname", "acceleratorcount", "price"} <= names:
        return None
    rows = whole_machine_rows(reader)
    if not rows:
        return None
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(WHOLE_MACHINE_COLUMNS), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()
