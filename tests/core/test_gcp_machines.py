"""GCP machine types priced whole: the VM's price plus its GPUs', per zone."""

from __future__ import annotations

import csv
import io
from datetime import date

import pytest

from gpuadvisor.core.formats.gcp_machines import machine_gpus, whole_machine_rows, whole_machine_text
from gpuadvisor.core.formats.instance_import import price_list_instance_types
from gpuadvisor.core.formats.pricelists import read_price_list
from gpuadvisor.core.specs.hardware import load_gpu_catalog

H100_INFO = "\"{'Gpus': [{'MemoryInfo': {'SizeInMiB': 81920}}]}\""
# The layout of SkyPilot's gcp/vms.csv: VM rows without an accelerator, GPU rows without a machine.
GCP_LIST = "\n".join(
    [
        "InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,AvailabilityZone,Price,SpotPrice",
        "a3-highgpu-8g,208,1872,,,,us-central1,us-central1-a,9.46006,3.86318",
        "a3-highgpu-8g,208,1872,,,,us-central1,us-central1-b,9.46006,",  # no VM spot price here
        "a3-highgpu-8g,208,1872,,,,europe-west4,europe-west4-a,10.5,4.0",  # no GPU row in this zone
        f",,,H100,8,{H100_INFO},us-central1,us-central1-a,33.60608,32.0104",
        f",,,H100,8,{H100_INFO},us-central1,us-central1-b,33.60608,32.0104",
        f",,,H100,1,{H100_INFO},us-central1,us-central1-a,4.20076,4.0013",
        "a4-highgpu-8g,224,3968,,,,us-central1,us-central1-b,0.0,0.0",  # a VM price of 0: unknown
        ",,,B200,8,,us-central1,us-central1-b,90.216,34.2368",
        "g2-standard-24,24,96,,,,us-central1,us-central1-a,1.0,0.4",
        ",,,L4,2,,us-central1,us-central1-a,1.12008,0.4686",
        "n1-standard-8,8,30,,,,us-central1,us-central1-a,0.38,0.08",  # GPUs attach in any number
        ",,,T4,1,,us-central1,us-central1-a,0.35,0.14",
    ]
)


@pytest.mark.parametrize(
    ("machine", "expected"),
    [
        ("a3-highgpu-8g", ("H100", 8)),
        ("a3-highgpu-1g", ("H100", 1)),
        ("a3-megagpu-8g", ("H100-MEGA", 8)),
        ("a3-ultragpu-8g-nolssd", ("H200", 8)),
        ("a2-ultragpu-4g", ("A100-80GB", 4)),
        ("a2-megagpu-16g", ("A100", 16)),
        ("a4-highgpu-8g", ("B200", 8)),
        ("g2-standard-4", ("L4", 1)),
        ("g2-standard-48", ("L4", 4)),
        ("g2-standard-96", ("L4", 8)),
        ("g2-standard-6", None),
        ("n1-standard-8", None),
        ("ct5lp-hightpu-4t", None),
    ],
)
def test_the_gpus_a_machine_type_carries(machine, expected):
    assert machine_gpus(machine) == expected


def test_whole_machines_per_zone():
    rows = whole_machine_rows(csv.DictReader(io.StringIO(GCP_LIST)))
    got = {(r["InstanceType"], r["Region"], r["Price"], r["SpotPrice"]) for r in rows}
    assert got == {
        ("a3-highgpu-8g", "us-central1", "43.0661", "35.8736"),  # 9.46006 + 33.60608; 3.86318 + 32.0104
        ("a3-highgpu-8g", "us-central1", "43.0661", ""),  # zone b: no VM spot price, no spot offer
        ("g2-standard-24", "us-central1", "2.12008", "0.8686"),
    }
    # A list that already prices whole instances (or another provider's) has no machines to add.
    assert whole_machine_text("InstanceType,AcceleratorName,AcceleratorCount,Price\nx1,H100,8,30\n") is None


def test_an_imported_gcp_list_names_its_machines(tmp_path):
    path = tmp_path / "gcp" / "vms.csv"
    path.parent.mkdir()
    path.write_text(GCP_LIST + "\n", encoding="utf-8")
    catalog = load_gpu_catalog()
    imp = read_price_list(path, catalog, as_of=date(2026, 5, 20))
    types = {t.instance_type: t for t in price_list_instance_types(path, imp, catalog)}
    assert set(types) == {"a3-highgpu-8g", "g2-standard-24"}  # a4's VM price of 0 keeps it out
    a3 = types["a3-highgpu-8g"]
    assert (a3.provider, a3.gpu_id, a3.gpus_per_instance) == ("gcp", "h100-sxm", 8)
    assert a3.usd_per_hour == pytest.approx(43.0661) and a3.spot_usd_per_hour == pytest.approx(35.8736)
    assert a3.price_date == "2026-05-20" and types["g2-standard-24"].gpu_id == "l4"
