"""Cloud instance types: the bundled snapshot, whole instances per setup, and the price they give."""

from __future__ import annotations

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


def test_the_bundled_snapshot_is_dated_cited_and_names_catalog_gpus():
    snap = bundled_instances()
    ids = {g.id for g in load_gpu_catalog()}
    assert len(snap) >= 20 and snap.meta.updated == "2026-05-20"
    assert {"lambda", "azure"} <= set(snap.providers())
    for t in snap.types:
        assert t.gpu_id in ids and t.price_date == "2026-05-20" and "commit 62ff0a9" in t.source
        assert t.gpus_per_instance >= 1 and (t.usd_per_hour or t.spot_usd_per_hour)
    # An H100 pick can be rented: both providers carry the SXM part.
    assert {t.provider for t in snap.for_gpu("h100-sxm")} == {"lambda", "azure"}


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
    assert {t.provider for t in merged.types} == {"lambda", "azure"} and merged.meta.updated == "2026-12-01"
    again = load_instance_catalog(text=dumps_instances(merged))
    assert again.types == merged.types
