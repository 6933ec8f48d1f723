"""Cloud price lists: gpuhunt and SkyPilot files, name matching, per-GPU prices, catalog updates."""

import csv
import io
from datetime import date

import pytest

from gpuadvisor.core.errors import InputError
from gpuadvisor.core.formats.pricelists import (
    default_provider,
    explain_match,
    format_price,
    match_gpu,
    merge_price_imports,
    parse_price_list,
    price_source_text,
    price_update_rows,
    read_price_list,
)
from gpuadvisor.core.specs.catalog_io import read_catalog_file
from gpuadvisor.core.specs.hardware import (
    GPU_REQUIRED_COLUMNS,
    GPU_SCHEMA_VERSIONS,
    GpuCatalog,
    bundled_catalog_dir,
    load_gpu_catalog,
)

DAY = date(2026, 11, 30)
GPUHUNT_HEADER = (
    "instance_name,location,price,cpu,memory,gpu_count,gpu_name,gpu_memory,spot,disk_size,gpu_vendor,flags"
)


def gh(instance, location, price, gpu_count, gpu_name, gpu_memory, spot="false"):
    """One gpuhunt row (cpu, RAM, disk, vendor and flags filled with plausible values)."""
    return f"{instance},{location},{price},8,64,{gpu_count},{gpu_name},{gpu_memory},{spot},100,nvidia,"


AWS_LINES = [
    GPUHUNT_HEADER,  # line 1
    gh("p4d.24xlarge", "us-east-1", "32.7726", 8, "A100", 40.0),  # 2: 8 GPUs, 4.0966 per GPU
    gh("p4de.24xlarge", "us-east-1", "40.9657", 8, "A100", 80.0),  # 3: memory picks the 80 GB part
    gh("p4d.24xlarge", "us-west-2", "11.5", 8, "A100", 40.0, "true"),  # 4: spot
    gh("g5.xlarge", "us-east-1", "1.006", 1, "A10G", 24.0),  # 5
    gh("g5.xlarge", "us-east-2", "", 1, "A10G", 24.0),  # 6: no price
    "m5.large,us-east-1,0.096,2,8,0,,,false,20,,",  # 7: CPU instance
    gh("p2.xlarge", "us-east-1", "0.9", 1, "K80", 12.0),  # 8: not in the catalog
    gh("g4dn.xlarge", "us-east-1", "0.526", 1, "T4", 16.0),  # 9
    gh("g4dn.2xlarge", "us-east-1", "abc", 1, "T4", 16.0),  # 10: not a number
    gh("g4dn.4xlarge", "us-east-1", "1.2", 0, "T4", 16.0),  # 11: zero GPUs
    gh("g4dn.8xlarge", "us-east-1", "-2.0", 1, "T4", 16.0),  # 12: negative price
    gh("p5.48xlarge", "us-east-1", "98.32", 8, "H100", 80.0),  # 13: 12.29 per GPU
    gh("p2.8xlarge", "us-east-1", "7.2", 8, "K80", 12.0),  # 14: K80 again
    gh("g5.12xlarge", "us-east-1", "5.672", 4, "A10G", 24.0, "yes"),  # 15: spot spelled yes
    gh("g4dn.xlarge", "us-east-1", "0.2", 1, "T4", 16.0, "maybe"),  # 16: bad spot flag
    "",  # 17: blank line, ignored
    gh("g6.xlarge", "us-east-1", "0.805", -1, "L4", 24.0),  # 18: negative GPU count
]

LAMBDA_LINES = [
    GPUHUNT_HEADER,
    gh("gpu_1x_a100_sxm4", "us-east-1", "1.29", 1, "A100", 40.0),
    gh("gpu_8x_h100_sxm5", "us-east-1", "23.92", 8, "H100", 80.0),
    gh("gpu_1x_a6000", "us-west-1", "0.80", 1, "RTXA6000", 48.0),
    gh("gpu_1x_a10", "us-west-1", "0.75", 1, "A10", 24.0),
    gh("gpu_1x_rtx6000", "us-west-1", "0.50", 1, "RTX6000", 24.0),  # Quadro RTX 6000: not the A6000
    gh("gpu_1x_a10_slice", "us-west-1", "0.20", 1, "A10", 4.0),  # a 4 GiB slice, not a GPU
]

GPUINFO_A100 = (
    "\"{'Gpus': [{'Name': 'A100', 'Manufacturer': 'NVIDIA', 'Count': 8.0, "
    "'MemoryInfo': {'SizeInMiB': 81920}}], 'TotalGpuMemoryInMiB': 655360}\""
)
GPUINFO_V100 = (
    "\"{'Gpus': [{'Name': 'V100', 'Manufacturer': 'NVIDIA', 'Count': 1, "
    "'MemoryInfo': {'SizeInMiB': 32768}}], 'TotalGpuMemoryInMiB': 32768}\""
)
SKYPILOT_LINES = [
    (
        "InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,AvailabilityZone,Price,"
        "SpotPrice"
    ),
    f"a2-ultragpu-8g,96,1360,A100-80GB,8,{GPUINFO_A100},us-central1,us-central1-a,40.22,16.0",  # 2
    f"a2-ultragpu-8g,96,1360,A100-80GB,8,{GPUINFO_A100},us-central1,us-central1-c,40.22,16.0",  # 3: same
    "a2-highgpu-1g,12,85,A100,1,,us-central1,us-central1-a,3.67,1.1",  # 4
    "g2-standard-4,4,16,L4,1,,us-central1,us-central1-a,0.70,",  # 5: no spot
    "n1-standard-4,4,15,,,,us-central1,us-central1-a,0.19,0.04",  # 6: CPU only
    f"p3.2xlarge,8,61,V100,1,{GPUINFO_V100},us-east1,us-east1-b,3.06,0.92",  # 7: 32 GB by MiB
    "g-l40-2,16,128,L40,2,,europe-west4,europe-west4-a,2.00,",  # 8: 1.00 per GPU
    "g-l40s-1,8,64,L40S,1,{not a dict,europe-west4,europe-west4-a,1.50,",  # 9: bad GpuInfo ignored
    "bad-count,8,64,L4,-1,,us-central1,us-central1-a,0.70,",  # 10
    "no-price,8,64,L4,1,,us-central1,us-central1-a,,",  # 11
    "spot-only,8,64,T4,1,,us-central1,us-central1-a,,0.11",  # 12
    "bad-spot,8,64,T4,1,,us-central1,us-central1-a,0.35,cheap",  # 13
]


@pytest.fixture(scope="module")
def catalog():
    return load_gpu_catalog()


def write(path, lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def files(tmp_path):
    return (
        write(tmp_path / "aws.csv", AWS_LINES),
        write(tmp_path / "lambdalabs.csv", LAMBDA_LINES),
        write(tmp_path / "gcp" / "vms.csv", SKYPILOT_LINES),
    )


def test_gpuhunt_file(files, catalog):
    imp = read_price_list(files[0], catalog, as_of=DAY)
    assert (imp.format, imp.provider, imp.origin, imp.as_of) == ("gpuhunt", "aws", "aws.csv", "2026-11-30")
    assert imp.rows_read == 16  # lines 2-18, the blank line 17 is not a row
    assert imp.skipped_no_gpu == 1
    assert imp.rejected == [
        (6, "price is missing"),
        (10, "price is not a number ('abc')"),
        (11, "gpu_count must be above 0 for a GPU offer (T4)"),
        (12, "price must be above 0 (got -2)"),
        (16, "spot must be true or false ('maybe')"),
        (18, "gpu_count must not be negative (got -1)"),
    ]
    assert imp.unmatched == {"K80": 2}
    a100 = imp.prices["a100-40gb"]
    assert a100.on_demand.low == pytest.approx(32.7726 / 8)
    assert a100.spot.median == pytest.approx(11.5 / 8)
    assert (a100.offers, a100.providers, a100.regions) == (2, ("aws",), 2)
    assert imp.prices["a100-80gb"].on_demand.median == pytest.approx(40.9657 / 8)
    assert imp.prices["a100-80gb"].spot is None
    assert imp.prices["h100-sxm"].on_demand.high == pytest.approx(12.29)
    a10g = imp.prices["a10g"]
    assert a10g.on_demand.count == 1 and a10g.spot.low == pytest.approx(5.672 / 4)
    assert imp.prices["t4"].on_demand.median == pytest.approx(0.526)
    # Plain "H100" is an assumption, and the summary says so.
    assert "assumed h100-sxm" in imp.assumptions["H100"]
    text = imp.summary()
    assert "16 rows read" in text and "6 rows rejected" in text and "K80 (2 rows)" in text
    assert "Rejected line 6: price is missing" in text


def test_lambda_file_odd_spellings_and_slices(files, catalog):
    imp = read_price_list(files[1], catalog, as_of=DAY)
    assert imp.prices["rtx-a6000"].on_demand.median == pytest.approx(0.80)
    assert imp.prices["a10"].on_demand.count == 1  # the 4 GiB slice is not an A10
    assert imp.prices["h100-sxm"].on_demand.median == pytest.approx(23.92 / 8)
    assert imp.unmatched == {"RTX6000": 1, "A10 (4 GiB)": 1}
    assert "slice" in imp.unmatched_reasons["A10 (4 GiB)"]


def test_skypilot_file(files, catalog):
    imp = read_price_list(files[2], catalog, as_of=DAY)
    assert (imp.format, imp.provider) == ("skypilot", "gcp")  # provider from the <cloud>/vms.csv folder
    assert imp.skipped_no_gpu == 1
    assert imp.rejected == [
        (10, "AcceleratorCount must not be negative (got -1)"),
        (11, "Price and SpotPrice are both missing"),
        (13, "SpotPrice is not a number ('cheap')"),
    ]
    a100_80 = imp.prices["a100-80gb"]
    assert a100_80.on_demand.median == pytest.approx(40.22 / 8) and a100_80.spot.median == pytest.approx(2.0)
    assert a100_80.offers == 2  # one row per zone counts once per (instance, region, price)
    assert imp.prices["a100-40gb"].on_demand.median == pytest.approx(3.67)
    assert imp.prices["l4"].spot is None
    assert imp.prices["v100-32gb"].on_demand.median == pytest.approx(3.06)  # GpuInfo MiB decided 32 GB
    assert "v100-16gb" not in imp.prices
    assert imp.prices["l40"].on_demand.median == pytest.approx(1.00)
    assert imp.prices["l40s"].on_demand.median == pytest.approx(1.50)
    t4 = imp.prices["t4"]
    assert t4.on_demand is None and t4.spot.median == pytest.approx(0.11)


def test_skypilot_columns_in_another_order_with_gpuinfo_spelling(catalog):
    text = (
        "Region,Price,AcceleratorCount,GPUInfo,AcceleratorName,InstanceType,SpotPrice,vCPUs\n"
        "eastus,27.197,8,\"{'Gpus': [{'Name': 'A100', 'MemoryInfo': {'SizeInMiB': 40960}}]}\",A100,"
        "nd96asr,,96\n"
    )
    imp = parse_price_list(text, catalog, "azure", as_of=DAY)
    assert imp.prices["a100-40gb"].on_demand.median == pytest.approx(27.197 / 8)
    assert imp.assumptions["A100"].startswith("'A100' gives no form factor")


def test_unknown_format_names_the_file_and_the_headers(tmp_path, catalog):
    path = write(tmp_path / "prices.csv", ["gpu,usd_per_hour", "A100,1.2"])
    with pytest.raises(InputError) as exc:
        read_price_list(path, catalog)
    message = str(exc.value)
    assert message.startswith("prices.csv:") and "gpuhunt" in message and "SkyPilot" in message
    assert "instance_name" in message and "AcceleratorName" in message


@pytest.mark.parametrize("text, reason", [("", "is empty"), ("\x00\x01", "binary")])
def test_empty_and_binary_text(catalog, text, reason):
    with pytest.raises(InputError, match=reason):
        parse_price_list(text, catalog, "x", origin="x.csv")


def test_missing_file(tmp_path, catalog):
    with pytest.raises(InputError, match="nope.csv: file not found"):
        read_price_list(tmp_path / "nope.csv", catalog)


def test_default_provider():
    assert default_provider("some/dir/lambdalabs.csv") == "lambdalabs"
    assert default_provider("catalogs/v6/aws/vms.csv") == "aws"


@pytest.mark.parametrize(
    "name, memory, expected",
    [
        ("A100-80GB", None, "a100-80gb"),
        ("A100 PCIe", None, "a100-40gb-pcie"),
        ("A100 PCIe", 80, "a100-80gb-pcie"),
        ("A100_SXM4", None, "a100-40gb"),
        ("A100-SXM4-80GB", None, "a100-80gb"),
        ("A100", 81920, "a100-80gb"),  # MiB
        ("A100", 40, "a100-40gb"),
        ("A100", None, "a100-40gb"),  # documented default
        ("NVIDIA A100 80GB PCIe", 81920, "a100-80gb-pcie"),
        ("H100 SXM5", None, "h100-sxm"),
        ("H100-80GB-HBM3", None, "h100-sxm"),
        ("NVIDIA H100 80GB HBM3", 81559, "h100-sxm"),
        ("H100 PCIe", None, "h100-pcie"),
        ("H100 NVL", None, "h100-nvl"),
        ("H100", 94, "h100-nvl"),
        ("H100-MEGA", 80, "h100-sxm"),
        ("RTXA6000", None, "rtx-a6000"),
        ("RTX_A6000", None, "rtx-a6000"),
        ("NVIDIA RTX A6000", 49140, "rtx-a6000"),
        ("RTX 4090", None, "rtx-4090"),
        ("NVIDIA GeForce RTX 4090", 24564, "rtx-4090"),
        ("RTX6000Ada", None, "rtx-6000-ada"),
        ("NVIDIA RTX 6000 Ada Generation", None, "rtx-6000-ada"),
        ("L40S", None, "l40s"),
        ("L40", None, "l40"),
        ("L4", None, "l4"),
        ("A10G", None, "a10g"),
        ("A10", None, "a10"),
        ("T4", None, "t4"),
        ("Tesla T4", 15360, "t4"),
        ("V100-32GB", None, "v100-32gb"),
        ("V100", None, "v100-16gb"),
        ("Tesla V100-SXM2-16GB", 16160, "v100-16gb"),
        ("MI300X", None, "mi300x"),
        ("AMD Instinct MI300X", 196592, "mi300x"),
        ("NVIDIA GH200 480GB", 97871, "gh200"),  # 480GB counts the CPU's memory
        ("K80", None, None),
        ("RTX6000", None, None),  # Quadro RTX 6000 (Turing)
        ("H200 NVL", None, None),  # the catalog's H200 is SXM
        ("A100", 20, None),  # a MIG slice, not an A100 variant
        ("tpu-v3-8", None, None),
        ("L40SX", None, None),
    ],
)
def test_match_gpu(catalog, name, memory, expected):
    assert match_gpu(name, memory, catalog) == expected


def test_match_never_confuses_neighbours(catalog):
    assert match_gpu("L40", None, catalog) != "l40s"
    assert match_gpu("A10", None, catalog) != "a100-40gb"
    assert match_gpu("L4", None, catalog) == "l4"


def test_match_with_a_smaller_catalog(catalog):
    small = GpuCatalog(
        gpus={k: v for k, v in catalog.gpus.items() if k not in ("a10g", "h100-nvl")}, meta=catalog.meta
    )
    assert match_gpu("A10G", None, small) is None  # never the A10
    assert match_gpu("H100 NVL", None, small) is None  # never the PCIe H100
    assert "no such H100 row" in explain_match("H100 NVL", None, small).note
    assert match_gpu("H100", 94, small) is None  # 94 GiB matches no remaining H100


def test_defaults_are_explained(catalog):
    assert explain_match("A100-SXM4-80GB", None, catalog).note == ""
    note = explain_match("V100", None, catalog).note
    assert "assumed v100-16gb" in note and "16 GB" in note


def test_merge_several_providers(files, catalog):
    imports = [read_price_list(p, catalog, as_of=DAY) for p in files]
    merged = merge_price_imports(imports)
    assert merged.format == "merged"
    assert merged.provider == "aws, lambdalabs, gcp"
    assert merged.rows_read == sum(i.rows_read for i in imports)
    h100 = merged.prices["h100-sxm"]
    assert h100.providers == ("aws", "lambdalabs")
    assert h100.on_demand.low == pytest.approx(23.92 / 8) and h100.on_demand.high == pytest.approx(98.32 / 8)
    a100 = merged.prices["a100-40gb"]
    assert a100.on_demand.count == 3 and a100.on_demand.median == pytest.approx(3.67)
    assert a100.regions == 4  # aws us-east-1 and us-west-2 (spot), lambdalabs us-east-1, gcp us-central1
    assert merged.unmatched["K80"] == 2 and merged.unmatched["RTX6000"] == 1
    assert (6, "aws.csv: price is missing") in merged.rejected
    assert (11, "vms.csv: Price and SpotPrice are both missing") in merged.rejected
    assert merge_price_imports(imports[:1]) is imports[0]
    with pytest.raises(InputError):
        merge_price_imports([])


@pytest.mark.parametrize(
    "usd, text", [(1.5, "1.5"), (2.0, "2"), (0.123456, "0.1235"), (12.29, "12.29"), (0.00002, "2e-05")]
)
def test_format_price(usd, text):
    assert format_price(usd) == text


def test_source_clause_replaced_not_stacked():
    once = price_source_text("NVIDIA datasheet", ["aws"], "2026-11-30")
    assert once == "NVIDIA datasheet; Prices from aws price lists imported 2026-11-30"
    twice = price_source_text(once, ["aws", "gcp"], "2026-12-05")
    assert twice == "NVIDIA datasheet; Prices from aws, gcp price lists imported 2026-12-05"


def _catalog_rows():
    meta, rows = read_catalog_file(
        bundled_catalog_dir() / "gpus.csv", "gpus", GPU_SCHEMA_VERSIONS, GPU_REQUIRED_COLUMNS
    )
    return meta, [row for _, row in rows]


def test_price_update_rows_apply_to_a_loadable_catalog(files, catalog):
    imports = [read_price_list(p, catalog, as_of=DAY) for p in files]
    meta, rows = _catalog_rows()
    updates = price_update_rows(imports, rows)
    ids = [gpu_id for gpu_id, _ in updates]
    assert ids == [r["id"] for r in rows if r["id"] in ids]  # catalog order
    assert "t4" in ids and "v100-16gb" not in ids and "rtx-4090" not in ids
    new = dict(updates)
    a100 = new["a100-40gb"]
    assert a100["cloud_usd_per_hour_low"] == "1.29"
    assert a100["cloud_usd_per_hour_expected"] == "3.67"
    assert a100["cloud_usd_per_hour_high"] == "4.0966"
    assert a100["price_as_of"] == "2026-11-30"
    assert a100["source"].endswith("; Prices from aws, gcp, lambdalabs price lists imported 2026-11-30")
    assert set(a100) == {
        "cloud_usd_per_hour_low",
        "cloud_usd_per_hour_expected",
        "cloud_usd_per_hour_high",
        "price_as_of",
        "source",
    }
    # Applying the updates gives a catalog the loader accepts, with the new prices.
    header = list(rows[0])
    out = io.StringIO()
    out.write(f"# catalog=gpus; schema_version={meta.schema_version}; updated=2026-11-30\n")
    writer = csv.DictWriter(out, fieldnames=header, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({**row, **new.get(row["id"], {})})
    updated = load_gpu_catalog(text=out.getvalue())
    price = updated.get("a100-40gb").cloud_usd_per_hour
    assert (price.low, price.expected, price.high) == (1.29, 3.67, 4.0966)
    assert updated.get("a100-40gb").price_as_of == "2026-11-30"
    assert updated.get("rtx-4090").cloud_usd_per_hour == catalog.get("rtx-4090").cloud_usd_per_hour


def test_spot_only_gpu_gets_no_update_and_as_of_argument(catalog):
    text = "\n".join(
        [GPUHUNT_HEADER, gh("x", "r", "0.1", 1, "T4", 16, "true"), gh("y", "r", "1.0", 1, "L4", 24)]
    )
    imp = parse_price_list(text, catalog, "vast", as_of=DAY)
    _, rows = _catalog_rows()
    updates = dict(price_update_rows(imp, rows, as_of=date(2026, 12, 1)))
    assert list(updates) == ["l4"]
    assert updates["l4"]["price_as_of"] == "2026-12-01"
    assert updates["l4"]["cloud_usd_per_hour_low"] == updates["l4"]["cloud_usd_per_hour_high"] == "1"


def test_row_with_more_cells_than_the_header(catalog):
    text = "\n".join([GPUHUNT_HEADER, gh("x", "r", "0.5", 1, "T4", 16) + ",extra"])
    imp = parse_price_list(text, catalog, "x", as_of=DAY)
    assert imp.rejected == [(2, "has 13 cells, the header has 12")]


def test_a_zero_spot_price_is_no_spot_offer(catalog):
    """Vast.ai's SkyPilot list writes 0.00 where a machine has no spot price: the on-demand
    offer stays and no spot offer is made up; a negative spot price is still refused."""
    gpuinfo = "\"{'Gpus': [{'Name': 'RTX5090', 'Count': 1, 'MemoryInfo': {'SizeInMiB': 32607}}]}\""
    text = (
        "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region\n"
        f'1x-RTX_5090-32-65536,RTX5090,1,32,64.0,{gpuinfo},0.44,0.00,"Denmark, DK, EU"\n'  # 2
        f'1x-RTX_5090-32-65536,RTX5090,1,32,64.0,{gpuinfo},0.52,0,"South Korea, KR, AS"\n'  # 3
        f'1x-RTX_5090-32-65536,RTX5090,1,32,64.0,{gpuinfo},0.47,0.21,"Taiwan, TW, AS"\n'  # 4
        f'1x-RTX_5090-32-65536,RTX5090,1,32,64.0,{gpuinfo},0.47,-0.1,"Taiwan, TW, AS"\n'  # 5
        f'1x-RTX_5090-32-65536,RTX5090,1,32,64.0,{gpuinfo},,0.00,"Taiwan, TW, AS"\n'  # 6
    )
    imp = parse_price_list(text, catalog, "vast", as_of=DAY)
    assert imp.rejected == [
        (5, "SpotPrice must not be negative (got -0.1)"),
        (6, "Price and SpotPrice are both missing"),
    ]
    rtx = imp.prices["rtx-5090"]
    assert rtx.on_demand.count == 3 and rtx.on_demand.low == pytest.approx(0.44)
    assert rtx.spot.count == 1 and rtx.spot.low == pytest.approx(0.21)
