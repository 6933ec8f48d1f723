"""Cloud instance types: the bundled snapshot, whole instances per setup, and the price they give."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuadvisor.core.errors import CatalogError
from gpuadvisor.core.specs.hardware import load_gpu_catalog
from gpuadvisor.core.specs.instances import (
    InstanceType,
    bundled_instances,
    dumps_instances,
    instance_price_range,
    load_instance_catalog,
    merge_instances,
    offers_for,
)

HEAD = "# catalog=instances; schema_version=1; updated=2026-05-20\n" + (
    "provider,instance_type,gpu_id,gpus_per_instance,usd_per_hour,spot_usd_per_hour,regions,price_date,source\n"
)


def _manifest():
    path = Path(__file__).resolve().parents[2] / "catalogs" / "sources" / "instance-sources.json"
    return {item["provider"]: item for item in json.loads(path.read_text(encoding="utf-8"))["lists"]}


def test_the_bundled_snapshot_is_dated_cited_and_names_catalog_gpus():
    snap = bundled_instances()
    ids = {g.id for g in load_gpu_catalog()}
    lists = _manifest()
    assert set(snap.providers()) == set(lists) == {"aws", "azure", "gcp", "lambda", "vast"}
    assert snap.meta.updated == max(item["date"] for item in lists.values())
    for t in snap.types:
        item = lists[t.provider]
        # Every row carries its own list's date and names where it comes from.
        assert t.gpu_id in ids and t.price_date == item["date"]
        assert item["commit"][:7] in t.source
        assert t.gpus_per_instance >= 1 and (t.usd_per_hour or t.spot_usd_per_hour)
    # "Where do we rent 8 H100s?": a whole 8-GPU machine of every cloud that sells one.
    eight = {(o.provider, o.instance_type) for o in offers_for(snap, "h100-sxm", 8, gpus_per_node=8)}
    assert {("aws", "p5.48xlarge"), ("gcp", "a3-highgpu-8g"), ("lambda", "gpu_8x_h100_sxm5")} <= eight
    assert ("azure", "Standard_ND96isr_H100_v5") in eight


def test_gcp_machines_are_priced_whole():
    """GCP's a3-highgpu-8g is its VM's price plus eight H100s', per zone (Google Cloud bills both)."""
    snap = bundled_instances()
    a3 = next(t for t in snap.types if t.instance_type == "a3-highgpu-8g")
    # us-central1 in the 2026-05-20 list: VM 9.46006 + 8 x H100 4.20076 (the cheapest zone).
    assert a3.usd_per_hour == pytest.approx(9.46006 + 8 * 4.20076, rel=1e-5)
    g2 = {t.instance_type: t.gpus_per_instance for t in snap.types if t.instance_type.startswith("g2-")}
    assert g2["g2-standard-4"] == 1 and g2["g2-standard-24"] == 2 and g2["g2-standard-96"] == 8


def test_an_instance_smaller_than_a_node_is_not_offered():
    snap = bundled_instances()
    loose = offers_for(snap, "h100-sxm", 8)
    assert any(o.gpus_per_instance == 1 and o.instances == 8 for o in loose)
    whole = offers_for(snap, "h100-sxm", 8, gpus_per_node=8)
    assert whole and all(o.gpus_per_instance >= 8 for o in whole)
    # Beyond a node, whole nodes: 16 GPUs on 8-GPU machines, never on 4-GPU ones.
    sixteen = offers_for(snap, "h100-sxm", 16, ("lambda",), gpus_per_node=8)
    assert [(o.instance_type, o.instances) for o in sixteen] == [("gpu_8x_h100_sxm5", 2)]
    # A node of four: a 4-GPU machine holds it, two 2-GPU machines do not.
    four = {o.instance_type for o in offers_for(snap, "h100-sxm", 4, ("lambda",), gpus_per_node=4)}
    assert four == {"gpu_4x_h100_sxm5", "gpu_8x_h100_sxm5"}


def test_whole_instances_cheapest_first():
    snap = bundled_instances()
    offers = offers_for(snap, "h100-sxm", 16)
    assert offers and all(o.instances * o.gpus_per_instance >= 16 for o in offers)
    prices = [o.usd_per_hour for o in offers if o.usd_per_hour is not None]
    assert prices == sorted(prices)
    three = offers_for(snap, "h100-sxm", 3, ("lambda",))
    assert {o.provider for o in three} == {"lambda"}
    four = next(o for o in three if o.instance_type == "gpu_4x_h100_sxm5")
    assert four.instances == 1  # three GPUs rent one 4-GPU instance
    one = next(o for o in three if o.instance_type == "gpu_1x_h100_sxm5")
    assert one.instances == 3 and one.usd_per_hour == pytest.approx(3 * 4.29)


def test_the_price_of_rented_instances():
    snap = bundled_instances()
    offers = offers_for(snap, "h100-sxm", 3, ("lambda",))
    price, offer = instance_price_range(offers, 3)
    assert offer is offers[0] and price.expected == pytest.approx(offers[0].usd_per_hour / 3)
    assert price.low <= price.expected <= price.high
    high, dearest = instance_price_range(offers, 3, "high")
    assert high.expected == pytest.approx(max(o.usd_per_hour for o in offers) / 3) and dearest.usd_per_hour
    assert instance_price_range(offers_for(snap, "t4", 1, ("lambda",)), 1) is None


def test_bad_rows_are_refused_with_their_line():
    good = "acme,x1,h100-sxm,1,3.1,,us-east-1,2026-05-20,test\n"
    assert len(load_instance_catalog(text=HEAD + good)) == 1
    for row, where in (
        ("acme,x1,h100-sxm,0,3.1,,,2026-05-20,t\n", "gpus_per_instance"),
        ("acme,x1,h100-sxm,1,abc,,,2026-05-20,t\n", "usd_per_hour"),
        ("acme,x1,h100-sxm,1,,,,2026-05-20,t\n", "usd_per_hour"),
        ("acme,x1,no-such-gpu,1,3,,,2026-05-20,t\n", "gpu_id"),
    ):
        with pytest.raises(CatalogError, match=where):
            load_instance_catalog(text=HEAD + row, gpu_ids={"h100-sxm"})
    with pytest.raises(CatalogError, match="duplicates"):
        load_instance_catalog(text=HEAD + good + good)


def test_a_newer_import_replaces_its_providers_rows():
    snap = bundled_instances()
    mine = InstanceType("lambda", "gpu_1x_h100_sxm5", "h100-sxm", 1, 2.49, None, ("us-east-1",), "2026-12-01")
    merged = merge_instances(snap, [mine], "2026-12-01")
    assert [t for t in merged.types if t.provider == "lambda"] == [mine]
    assert {t.provider for t in merged.types} == set(snap.providers()) and merged.meta.updated == "2026-12-01"
    again = load_instance_catalog(text=dumps_instances(merged))
    assert again.types == merged.types
