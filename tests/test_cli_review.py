"""What a procurement review reads from the command line: the answer on stdout, every warning on
stderr, ``--strict``, a stale price named at the recommendation, where to rent it, and instance
types refreshed through ``prices import``."""

from __future__ import annotations

import json

from gpuadvisor.cli import main
from gpuadvisor.core.formats.scenario import default_scenario, scenario_to_dict
from gpuadvisor.storage.instances_store import instances_file, load_instances

#: A SkyPilot vms.csv of one made-up provider: two H100 instance types in two regions, one CPU row.
SKYPILOT = (
    "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,SpotPrice\n"
    "cpu_only,,,4.0,16.0,0.2,us-east-1,,\n"
    "h100x8,H100,8.0,208.0,1800.0,20.00,us-east-1,"
    "\"{'Gpus': [{'Name': 'H100', 'Count': 8.0, 'MemoryInfo': {'SizeInMiB': 81920}}]}\",9.5\n"
    "h100x8,H100,8.0,208.0,1800.0,21.00,eu-west-1,"
    "\"{'Gpus': [{'Name': 'H100', 'Count': 8.0, 'MemoryInfo': {'SizeInMiB': 81920}}]}\",\n"
    "h100x1,H100,1.0,26.0,200.0,3.10,us-east-1,"
    "\"{'Gpus': [{'Name': 'H100', 'Count': 1.0, 'MemoryInfo': {'SizeInMiB': 81920}}]}\",\n"
)


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def scenario_file(tmp_path, **budget):
    data = scenario_to_dict(default_scenario())
    data["budget"].update(budget)
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def test_warnings_go_to_stderr_and_strict_exits_3(capsys, tmp_path):
    path = scenario_file(tmp_path)
    code, out, err = run(capsys, "estimate", path, "--json")
    data = json.loads(out)  # stdout is the answer alone
    assert code == 0 and data["warnings"]
    for warning in data["warnings"]:
        assert f"warning: {warning}" in err
    code, out2, err2 = run(capsys, "estimate", path, "--json", "--strict")
    assert code == 3 and json.loads(out2) == data and err2 == err
    code, text, _ = run(capsys, "estimate", path)
    assert code == 0 and text.rstrip().splitlines()[-1].startswith("Rent it as ") and "Warning" not in text


def test_strict_without_warnings_exits_0(capsys, tmp_path):
    """The H100 SXM has BF16 and, with prices flagged only after 240 months, nothing to warn about."""
    from gpuadvisor.storage import Settings, save_settings

    save_settings(Settings(stale_price_months=240))
    path = scenario_file(tmp_path)
    code, out, err = run(capsys, "estimate", path, "--gpu", "h100-sxm", "--strict")
    assert (code, err) == (0, "") and out.startswith("LoRA fine-tune of Llama 3.1 8B")
    save_settings(Settings(stale_price_months=1))
    code, _out, err = run(capsys, "estimate", path, "--gpu", "h100-sxm", "--strict")
    assert code == 3 and "warning: Stale price at the recommendation: the H100 SXM5 80 GB's price" in err


def test_a_stale_price_at_the_pick_is_named_on_stderr_and_in_the_json(capsys, tmp_path):
    """The GH200's price is from the 2026-05-20 snapshot: stale six months later."""
    path = scenario_file(tmp_path)
    code, out, err = run(capsys, "estimate", path, "--gpu", "gh200", "--json")
    data = json.loads(out)
    assert data["recommendation"]["recommended"].endswith("gh200 (ddp)")
    stale = [w for w in data["warnings"] if w.startswith("Stale price at the recommendation")]
    assert len(stale) == 1 and "GH200" in stale[0] and "2026-05-20" in stale[0]
    assert f"warning: {stale[0]}" in err
    for c in data["candidates"]:
        assert "price_date" in c and "price_stale" in c and "instances" in c
        if c["fits"]:
            assert c["price_date"] == "2026-05-20" and c["price_stale"] is True


def test_every_candidate_names_its_instances_cheapest_first(capsys, tmp_path):
    path = scenario_file(tmp_path)
    code, out, _ = run(capsys, "estimate", path, "--gpu", "h100-sxm", "--json")
    data = json.loads(out)
    eight = next(c for c in data["candidates"] if c["gpu_count"] == 8)
    offers = eight["instances"]
    assert offers and set(offers[0]) == {
        "provider",
        "instance_type",
        "gpus_per_instance",
        "instances",
        "usd_per_hour",
        "spot_usd_per_hour",
        "price_date",
        "regions",
        "job_cost_usd",
        "spot_job_cost_usd",
        "costed_at",
    }
    prices = [o["usd_per_hour"] for o in offers if o["usd_per_hour"] is not None]
    assert prices == sorted(prices)
    assert all(o["instances"] * o["gpus_per_instance"] >= 8 for o in offers)
    code, text, _ = run(capsys, "estimate", path, "--gpu", "h100-sxm")
    assert (
        f"Rent it as {offers[0]['instances']} \u00d7 {offers[0]['instance_type']} ({offers[0]['provider']}"
        in text
    )


def test_providers_set_the_price_used(capsys, tmp_path):
    catalog = run(capsys, "estimate", scenario_file(tmp_path), "--gpu", "h100-sxm", "--json")[1]
    lam = run(
        capsys, "estimate", scenario_file(tmp_path, providers=["lambda"]), "--gpu", "h100-sxm", "--json"
    )[1]
    by_key = {c["gpu_count"]: c for c in json.loads(lam)["candidates"] if c["parallelism"] in ("none", "ddp")}
    assert all(o["provider"] == "lambda" for c in by_key.values() for o in c["instances"])
    eight = by_key[8]
    # 8 GPUs cost the cheapest Lambda 8-GPU instance per hour.
    assert eight["usd_per_hour"] == eight["instances"][0]["usd_per_hour"]
    assert eight["price_date"] == eight["instances"][0]["price_date"]
    assert json.loads(catalog)["candidates"] != json.loads(lam)["candidates"]


def test_prices_import_refreshes_the_instance_types(capsys, tmp_path):
    vms = tmp_path / "acme" / "vms.csv"
    vms.parent.mkdir()
    vms.write_text(SKYPILOT, encoding="utf-8")
    code, out, _ = run(capsys, "prices", "import", str(vms), "--dry-run")
    assert code == 0 and "Cloud instance types: 2 from acme (dry run: not saved)." in out
    assert not instances_file().exists()
    code, out, _ = run(capsys, "prices", "import", str(vms))
    assert code == 0 and f"saved to {instances_file()}" in out
    snapshot, warnings = load_instances()
    assert not warnings
    acme = {t.instance_type: t for t in snapshot.types if t.provider == "acme"}
    assert set(acme) == {"h100x8", "h100x1"}
    assert acme["h100x8"].usd_per_hour == 20.0 and acme["h100x8"].spot_usd_per_hour == 9.5
    assert acme["h100x8"].regions == ("us-east-1", "eu-west-1") and acme["h100x8"].gpu_id == "h100-sxm"
    assert "lambda" in snapshot.providers()  # the bundled providers stay
    path = scenario_file(tmp_path, providers=["acme"])
    data = json.loads(run(capsys, "estimate", path, "--gpu", "h100-sxm", "--json")[1])
    one = next(c for c in data["candidates"] if c["gpu_count"] == 1)
    assert one["instances"][0]["instance_type"] == "h100x1" and one["usd_per_hour"] == 3.1


def test_a_newer_format_version_says_so(capsys, tmp_path):
    data = scenario_to_dict(default_scenario())
    data["version"] = 9
    path = tmp_path / "newer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    code, out, err = run(capsys, "estimate", str(path))
    assert code == 0 and "written by a newer gpuadvisor (format version 9" in err
    assert "newer" not in out
    assert run(capsys, "estimate", str(path), "--strict")[0] == 3
