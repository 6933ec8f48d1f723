"""Build the bundled instance snapshot (catalogs/instances.csv) from SkyPilot-format price lists,
and refresh the catalog prices that are older than the snapshot.

    python scripts/instance_snapshot.py --as-of 2026-05-20 \\
        --source "SkyPilot catalog format, anycloud-sh/catalog commit 62ff0a9 (2026-05-20)" \\
        lambda=PATH/lambda/vms.csv azure=PATH/azure/vms.csv [--refresh-prices]

Each price list is read by the application's own reader (``read_price_list``) and grouped into
instance types (``instance_types``). :data:`GPU_OF_INSTANCE` corrects the GPU of instance families
whose price list names the GPU ambiguously. With ``--refresh-prices``, every GPU of
``catalogs/gpus.csv`` whose ``price_as_of`` is older than the snapshot and which a specialist cloud
or marketplace of the snapshot rents gets the snapshot's on-demand low (minimum), expected (median)
and high (maximum) per GPU-hour, the snapshot's date and its source; GPUs that only a hyperscaler
rents keep their prices (a hyperscaler's price is the catalog's high end, not its expected one) and
stay flagged when stale. The documentation is docs/catalog.md, "Cloud instance types".
"""

from __future__ import annotations

import argparse
import csv
import datetime
import io
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpuadvisor.core.formats.instance_import import instance_types  # noqa: E402
from gpuadvisor.core.formats.pricelists import merge_price_imports, price_update_rows, read_price_list  # noqa: E402
from gpuadvisor.core.specs.catalog_io import CatalogMeta  # noqa: E402
from gpuadvisor.core.specs.hardware import load_gpu_catalog  # noqa: E402
from gpuadvisor.core.specs.instances import InstanceCatalog, dumps_instances  # noqa: E402

#: (provider, instance-type prefix) -> catalog GPU, where the price list's GPU name is ambiguous.
#: Azure's NCads H100 v5 series carries the H100 NVL (94 GB), its ND H100 v5 the SXM part
#: (Microsoft Learn, "NCads H100 v5 sizes series" and "ND H100 v5 sizes series").
GPU_OF_INSTANCE = {
    ("azure", "Standard_NC40ads_H100_v5"): "h100-nvl",
    ("azure", "Standard_NC80adis_H100_v5"): "h100-nvl",
    ("azure", "Standard_NCC40ads_H100_v5"): "h100-nvl",
}
#: Providers whose prices are a hyperscaler's (the catalog's high end).
HYPERSCALERS = frozenset({"aws", "azure", "gcp"})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("lists", nargs="+", metavar="PROVIDER=FILE")
    parser.add_argument("--as-of", required=True, help="the date of the price lists (YYYY-MM-DD)")
    parser.add_argument("--source", required=True, help="where the price lists come from (commit, date)")
    parser.add_argument("--out", default=str(ROOT / "catalogs" / "instances.csv"))
    parser.add_argument("--refresh-prices", action="store_true", help="refresh older prices in gpus.csv")
    args = parser.parse_args(argv)
    day = datetime.date.fromisoformat(args.as_of)
    gpus = load_gpu_catalog()
    imports, types = [], []
    for item in args.lists:
        provider, _, path = item.partition("=")
        imp = read_price_list(path, gpus, provider=provider, as_of=day)
        imports.append(imp)
        for t in instance_types(imp, [g.id for g in gpus], source=args.source):
            gpu_id = GPU_OF_INSTANCE.get((t.provider, t.instance_type), t.gpu_id)
            types.append(t if gpu_id == t.gpu_id else t.__class__(**{**_fields(t), "gpu_id": gpu_id}))
        print(f"{provider}: {imp.rows_read} rows, {len(imp.offers)} offers, {len(imp.rejected)} rejected")
    types.sort(key=lambda t: (t.provider, t.gpu_id, t.gpus_per_instance, t.instance_type))
    catalog = InstanceCatalog(tuple(types), CatalogMeta("instances", 1, args.as_of, "instances.csv"))
    Path(args.out).write_text(dumps_instances(catalog), encoding="utf-8")
    print(f"{args.out}: {len(types)} instance types of {len(catalog.providers())} providers")
    if args.refresh_prices:
        refresh_prices(imports, day, args.source)
    return 0


def _fields(t) -> dict:
    return {name: getattr(t, name) for name in t.__dataclass_fields__}


def refresh_prices(imports, day: datetime.date, source: str) -> None:
    """Update catalogs/gpus.csv in place (see the module docstring)."""
    path = ROOT / "catalogs" / "gpus.csv"
    text = path.read_text(encoding="utf-8")
    meta_line, body = text.split("\n", 1)
    rows = list(csv.DictReader(io.StringIO(body)))
    merged = merge_price_imports(imports)
    renters = {o.gpu_id for o in merged.offers if not o.spot and o.provider not in HYPERSCALERS}
    older = [r for r in rows if r["id"] in renters and r.get("price_as_of", "") < day.isoformat()]
    updates = dict(price_update_rows(merged, older, as_of=day))
    for row in rows:
        change = updates.get(row["id"])
        if change is None:
            continue
        providers = sorted({o.provider for o in merged.offers if o.gpu_id == row["id"] and not o.spot})
        spec = row["source"].partition("Prices:")[0].strip().rstrip(";").strip()
        change["source"] = (
            f"{spec}; Prices: on-demand list prices of {', '.join(providers)} per GPU-hour, {source}"
        )
        row.update(change)
        print(
            f"refreshed {row['id']}: {change['cloud_usd_per_hour_low']} / "
            f"{change['cloud_usd_per_hour_expected']} / {change['cloud_usd_per_hour_high']} ({', '.join(providers)})"
        )
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(meta_line + "\n" + out.getvalue(), encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
