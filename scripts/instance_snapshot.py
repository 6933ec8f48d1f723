"""Build the bundled instance snapshot (catalogs/instances.csv) from the price lists named in
catalogs/sources/instance-sources.json, and refresh the catalog prices older than the snapshot.

    git clone https://github.com/anycloud-sh/catalog PATH
    python scripts/instance_snapshot.py --git anycloud-sh/catalog=PATH [--refresh-prices]

Each list of the manifest is read at its commit (``git show COMMIT:PATH``; with ``--dir REPO=DIR``
from files already checked out there), by the application's own price-list reader (``parse_price_list``), and grouped into instance types
(``instance_types``); a list that prices GPUs apart from the VM (GCP) gets its machine types priced
whole (``whole_machine_import``: VM price + GPU price per zone). Every row carries its list's date
(the date of the commit that last changed the file, which ``--git`` checks) and source.
:data:`GPU_OF_INSTANCE` corrects the GPU of instance families whose price list names the GPU
ambiguously. With ``--refresh-prices``, every GPU of ``catalogs/gpus.csv`` whose ``price_as_of`` is
older than its lists and which the specialist clouds and marketplaces of the snapshot rent in at
least :data:`MIN_OFFERS` distinct offers gets their on-demand low (minimum), expected (median) and
high (maximum) per GPU-hour, the date and the source; the hyperscalers' offers are left out of it
(a hyperscaler's price is the catalog's high end, not its expected one), and GPUs that only a
hyperscaler rents keep their prices and stay flagged when stale. The documentation is
docs/catalog.md, "Cloud instance types".
"""

from __future__ import annotations

import argparse
import csv
import datetime
import io
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpuadvisor.core.formats.instance_import import instance_types, whole_machine_import  # noqa: E402
from gpuadvisor.core.formats.pricelists import (  # noqa: E402
    PriceImport,
    merge_price_imports,
    parse_price_list,
    price_update_rows,
)
from gpuadvisor.core.specs.catalog_io import CatalogMeta  # noqa: E402
from gpuadvisor.core.specs.hardware import GpuCatalog, load_gpu_catalog  # noqa: E402
from gpuadvisor.core.specs.instances import InstanceCatalog, InstanceType, dumps_instances  # noqa: E402

MANIFEST = ROOT / "catalogs" / "sources" / "instance-sources.json"
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
#: A catalog price is refreshed from no fewer distinct on-demand offers than this (one marketplace
#: listing is an anecdote, not a market price).
MIN_OFFERS = 3


def _list_text(item: dict, gits: dict[str, Path], dirs: dict[str, Path]) -> str:
    """The text of one manifest list, read at its commit."""
    repo, commit, path = item["repo"], item["commit"], item["path"]
    if repo in gits:
        git = ["git", "-C", str(gits[repo])]
        last = subprocess.run(
            [*git, "log", "-1", "--format=%cs", commit, "--", path],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        if last != item["date"]:
            raise SystemExit(
                f"{repo} {path}: last changed {last} at {commit[:7]}, the manifest says {item['date']}"
            )
        return subprocess.run(
            [*git, "show", f"{commit}:{path}"], capture_output=True, text=True, check=True
        ).stdout
    if repo in dirs:
        return (dirs[repo] / path).read_text(encoding="utf-8")
    raise SystemExit(f"{repo} is needed for {path}: give --git {repo}=CLONE or --dir {repo}=CHECKOUT")


def _repair(provider: str, text: str) -> str:
    """The list with a known defect of its copy mended: the Azure list writes a size's image
    generations unquoted (``...,westus,V1,V2``), one cell more than its header, which the reader
    rightly refuses; the two cells are joined back into the Generation column they came from."""
    if provider != "azure":
        return text
    rows = list(csv.reader(io.StringIO(text)))
    if not rows or rows[0][-1] != "Generation":
        return text
    width = len(rows[0])
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for row in rows:
        if len(row) == width + 1 and row[-2:] == ["V1", "V2"]:
            row = [*row[:-2], "V1,V2"]
        writer.writerow(row)
    return out.getvalue()


def _source(item: dict) -> str:
    if "source" in item:
        return item["source"]
    return (
        f"SkyPilot-format price list github.com/{item['repo']} {item['path']} at commit {item['commit'][:7]}"
        f" (file last changed {item['date']})"
    )


def _pairs(values: list[str], flag: str) -> dict[str, Path]:
    out = {}
    for value in values:
        repo, sep, path = value.partition("=")
        if not sep:
            raise SystemExit(f"{flag} takes REPO=PATH, not {value!r}")
        out[repo] = Path(path)
    return out


def build(items: list[dict], gpus: GpuCatalog, gits: dict[str, Path], dirs: dict[str, Path]):
    """(imports, instance types) of the manifest's lists."""
    ids = [g.id for g in gpus]
    imports: list[PriceImport] = []
    types: list[InstanceType] = []
    for item in items:
        provider, day = item["provider"], datetime.date.fromisoformat(item["date"])
        text, source = _repair(provider, _list_text(item, gits, dirs)), _source(item)
        origin = item.get("path") or Path(item["file"]).name
        imp = parse_price_list(text, gpus, provider, origin=origin, as_of=day)
        imports.append(imp)
        found = instance_types(imp, ids, source=source)
        machines = whole_machine_import(text, gpus, provider, origin, as_of=day)
        if machines is not None:
            found += instance_types(machines, ids, source=source)
        for t in found:
            gpu_id = GPU_OF_INSTANCE.get((t.provider, t.instance_type), t.gpu_id)
            types.append(t if gpu_id == t.gpu_id else t.__class__(**{**_fields(t), "gpu_id": gpu_id}))
        print(
            f"{provider} ({item['date']}): {imp.rows_read} rows, {len(imp.offers)} offers, "
            f"{len(imp.rejected)} rejected, {len(found)} instance types"
            + (f" ({len(machines.offers)} machine offers priced whole)" if machines is not None else "")
        )
    types.sort(key=lambda t: (t.provider, t.gpu_id, t.gpus_per_instance, t.instance_type))
    return imports, types


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--git", action="append", default=[], metavar="REPO=CLONE")
    parser.add_argument("--dir", action="append", default=[], metavar="REPO=CHECKOUT")
    parser.add_argument("--manifest", default=str(MANIFEST))
    parser.add_argument("--out", default=str(ROOT / "catalogs" / "instances.csv"))
    parser.add_argument("--refresh-prices", action="store_true", help="refresh older prices in gpus.csv")
    args = parser.parse_args(argv)
    items = json.loads(Path(args.manifest).read_text(encoding="utf-8"))["lists"]
    gpus = load_gpu_catalog()
    imports, types = build(items, gpus, _pairs(args.git, "--git"), _pairs(args.dir, "--dir"))
    updated = max(item["date"] for item in items)
    catalog = InstanceCatalog(tuple(types), CatalogMeta("instances", 1, updated, "instances.csv"))
    Path(args.out).write_text(dumps_instances(catalog), encoding="utf-8")
    per_provider = {p: sum(t.provider == p for t in types) for p in catalog.providers()}
    print(
        f"{args.out}: {len(types)} instance types: " + ", ".join(f"{p} {n}" for p, n in per_provider.items())
    )
    if args.refresh_prices:
        sources = {item["provider"]: (_source(item), item["date"]) for item in items}
        refresh_prices(imports, sources)
    return 0


def _fields(t) -> dict:
    return {name: getattr(t, name) for name in t.__dataclass_fields__}


def refresh_prices(imports: list[PriceImport], sources: dict[str, tuple[str, str]]) -> None:
    """Update catalogs/gpus.csv in place from the specialists' offers (see the module docstring);
    ``sources`` maps a provider to its list's (source, date). A refreshed price is dated by the
    oldest list it draws on."""
    path = ROOT / "catalogs" / "gpus.csv"
    text = path.read_text(encoding="utf-8")
    meta_line, body = text.split("\n", 1)
    rows = list(csv.DictReader(io.StringIO(body)))
    specialists = [imp for imp in imports if imp.provider not in HYPERSCALERS]
    if not specialists:
        return
    merged = merge_price_imports(specialists)
    for row in rows:
        offers = {
            (o.provider, o.instance, o.region, round(o.usd_per_gpu_hour, 6))
            for o in merged.offers
            if o.gpu_id == row["id"] and not o.spot
        }
        providers = sorted({o[0] for o in offers})
        if len(offers) < MIN_OFFERS:
            continue
        day = min(sources[p][1] for p in providers)
        if row.get("price_as_of", "") >= day:
            continue
        (_gpu_id, change), *_ = price_update_rows(merged, [row], as_of=datetime.date.fromisoformat(day))
        spec = row["source"].partition("Prices:")[0].strip().rstrip(";").strip()
        cited = "; ".join(f"{p}: {sources[p][0]}" for p in providers)
        change["source"] = f"{spec}; Prices: on-demand list prices per GPU-hour of {cited}"
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
