"""The command line: JSON contract, human table, GPU selection, catalogs listings and errors.

Most checks call ``gpuadvisor.cli.main`` in-process; a few run a real subprocess to prove that
bad input reaches the user as one ``error:`` line and never as a traceback.
"""

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpuadvisor import __version__
from gpuadvisor.cli import main
from gpuadvisor.core.formats.scenario import loads_scenario
from gpuadvisor.core.specs.hardware import load_gpu_catalog

REPO = Path(__file__).resolve().parents[1]
COMPONENTS = ("weights", "gradients", "optimizer", "activations", "kv_cache", "adapters", "overhead")
MEMORY_KEYS = COMPONENTS + ("tensors_total", "device_total")


@pytest.fixture(scope="module")
def gpu_catalog():
    return load_gpu_catalog()


def write_scenario(tmp_path, data, name="scenario.json"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return str(path)


def run_main(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, tmp_path, data, *extra):
    code, out, err = run_main(capsys, "estimate", write_scenario(tmp_path, data), "--json", *extra)
    assert code == 0, err
    return json.loads(out)


def run_subprocess(*args, timeout=60):
    return subprocess.run([sys.executable, *args], cwd=REPO, capture_output=True, text=True, timeout=timeout)


INFERENCE_7B = {"model": {"preset": "llama-2-7b"}, "workload": {"kind": "inference", "weights": "fp16"}}
LORA_8B = {
    "model": {"preset": "llama-3.1-8b"},
    "workload": {"kind": "lora", "batch_size": 2, "seq_len": 1024},
}


# --- estimate --json -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        INFERENCE_7B,
        LORA_8B,
        {"model": {"preset": "mixtral-8x7b"}, "workload": {"kind": "pretrain", "weights": "bf16"}},
        {"model": {"preset": "llama-2-13b"}, "workload": {"kind": "qlora", "weights": "nf4"}},
    ],
    ids=["inference", "lora", "pretrain-moe", "qlora"],
)
def test_estimate_json_contract(capsys, tmp_path, data):
    out = run_json(capsys, tmp_path, data)
    model = out["model"]
    assert model["name"] and model["parameters"] > 0 and 0 < model["active_parameters"] <= model["parameters"]
    assert out["candidates"]
    for c in out["candidates"]:
        assert (
            isinstance(c["gpu"], str)
            and isinstance(c["gpu_count"], int)
            and isinstance(c["parallelism"], str)
        )
        assert isinstance(c["fits"], bool)
        assert c["capacity_gib"] > 0
        mem = c["memory_per_gpu_gib"]
        assert set(MEMORY_KEYS) <= set(mem)
        for key in MEMORY_KEYS:
            value = mem[key]
            assert isinstance(value, (int, float)) and not isinstance(value, bool), key
            assert math.isfinite(value) and value >= 0, (key, value)
        # Each figure is rounded to 3 decimals: the sum may drift by 8 half-units.
        assert mem["device_total"] == pytest.approx(sum(mem[k] for k in COMPONENTS), abs=0.004)
        assert mem["device_total"] == pytest.approx(mem["tensors_total"] + mem["overhead"], abs=0.002)
        if abs(mem["device_total"] - c["capacity_gib"]) > 0.002:  # away from the rounding edge
            assert c["fits"] == (mem["device_total"] <= c["capacity_gib"])


def test_gpu_option_restricts_candidates(capsys, tmp_path):
    out = run_json(capsys, tmp_path, INFERENCE_7B, "--gpu", "a100-80gb", "--gpu", "h100-sxm")
    assert {c["gpu"] for c in out["candidates"]} == {"a100-80gb", "h100-sxm"}


def test_whole_catalog_with_counts_1_2_4_8(capsys, tmp_path, gpu_catalog):
    out = run_json(capsys, tmp_path, LORA_8B)
    assert {c["gpu"] for c in out["candidates"]} == {g.id for g in gpu_catalog}
    counts = {}
    for c in out["candidates"]:
        counts.setdefault(c["gpu"], set()).add(c["gpu_count"])
    # A Mac's GPU is never combined with others unless a count is asked for.
    unified = {g.id for g in gpu_catalog if g.unified_memory}
    assert all(v == ({1} if gid in unified else {1, 2, 4, 8}) for gid, v in counts.items()), counts


def test_gpu_count_one_gives_only_single_gpu(capsys, tmp_path, gpu_catalog):
    data = dict(LORA_8B, hardware={"gpu_count": 1})
    out = run_json(capsys, tmp_path, data)
    assert {c["gpu_count"] for c in out["candidates"]} == {1}
    assert {c["parallelism"] for c in out["candidates"]} == {"none"}
    assert len(out["candidates"]) == len(gpu_catalog)


def test_hardware_gpu_selects_one_gpu(capsys, tmp_path):
    out = run_json(
        capsys,
        tmp_path,
        dict(INFERENCE_7B, hardware={"gpu": "l40s", "gpu_count": 2, "parallelism": "tensor"}),
    )
    assert [(c["gpu"], c["gpu_count"], c["parallelism"]) for c in out["candidates"]] == [
        ("l40s", 2, "tensor")
    ]


def test_7b_fp16_inference_weights(capsys, tmp_path):
    """llama-2-7b: 6,738,415,616 parameters x 2 bytes = 13.48e9 bytes = 12.55 GiB."""
    out = run_json(capsys, tmp_path, INFERENCE_7B, "--gpu", "a100-80gb")
    assert out["model"]["parameters"] == 6_738_415_616
    for c in out["candidates"]:
        if c["parallelism"] in ("none", "ddp"):
            assert c["memory_per_gpu_gib"]["weights"] == pytest.approx(6_738_415_616 * 2 / 2**30, abs=0.001)
            assert c["memory_per_gpu_gib"]["weights"] == pytest.approx(12.55, abs=0.01)
            assert c["memory_per_gpu_gib"]["gradients"] == 0 and c["memory_per_gpu_gib"]["optimizer"] == 0


# --- human output --------------------------------------------------------------------------


def test_table_mentions_every_gpu(capsys, tmp_path, gpu_catalog):
    code, out, err = run_main(capsys, "estimate", write_scenario(tmp_path, LORA_8B))
    assert code == 0 and all(line.startswith("warning: ") for line in err.splitlines())
    assert "Warning" not in out  # the answer on stdout, the warnings on stderr
    for g in gpu_catalog:
        assert g.name in out, g.name
    assert "Llama 3.1 8B" in out


def test_table_shows_7b_weights(capsys, tmp_path):
    code, out, _ = run_main(capsys, "estimate", write_scenario(tmp_path, INFERENCE_7B), "--gpu", "a100-80gb")
    assert code == 0
    row = next(line for line in out.splitlines() if line.lstrip("\u2605 ").startswith("NVIDIA A100"))
    assert "12.6" in row.split()  # 12.55 GiB shown with one decimal


def test_all_flag_shows_every_setup(capsys, tmp_path):
    path = write_scenario(tmp_path, LORA_8B)
    _, brief, _ = run_main(capsys, "estimate", path, "--gpu", "h100-sxm")
    _, full, _ = run_main(capsys, "estimate", path, "--gpu", "h100-sxm", "--all")
    assert full.count("H100") > brief.count("H100") >= 1
    assert "8 \u00d7 fsdp" in full


def test_unknown_keys_are_reported_as_warnings(capsys, tmp_path):
    code, out, err = run_main(
        capsys, "estimate", write_scenario(tmp_path, dict(INFERENCE_7B, colour="red")), "--gpu", "t4"
    )
    # The answer on stdout, the warnings on stderr.
    assert code == 0 and "warning: ignored unknown key: colour" in err and "unknown key" not in out


# --- errors --------------------------------------------------------------------------------


def _one_error_line(err):
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error:"), err
    assert "Traceback" not in err
    return lines[0]


def test_unknown_gpu_id(capsys, tmp_path):
    code, out, err = run_main(capsys, "estimate", write_scenario(tmp_path, INFERENCE_7B), "--gpu", "rtx-9999")
    assert code == 2 and out == ""
    assert "rtx-9999" in _one_error_line(err)


@pytest.mark.parametrize(
    "text, needle",
    [
        ('{"model": {"preset": "llama-2-7b"}, "workload": {"batch_size": -1}}', "workload.batch_size"),
        ('{"model": {"preset": "llama-2-7b"},,}', "line 1"),
        ("", "is empty"),
        ("[1, 2]", "scenario"),
        ('{"model": {"preset": "no-such-model"}}', "model.preset"),
        ('{"model": {"architecture": {"num_layers": 2}}}', "model.architecture"),
        ('{"model": {"preset": "llama-2-7b"}, "hardware": {"gpu": "nope"}}', "hardware.gpu"),
        (
            '{"model": {"preset": "llama-2-7b"}, "hardware": {"gpu_count": 3, "parallelism": "tensor"}}',
            "hardware.parallelism",
        ),
        (
            '{"model": {"preset": "llama-2-7b"}, "hardware": {"gpu_count": 2, "parallelism": "zero3"}}',
            "hardware.parallelism",
        ),
        (
            '{"model": {"preset": "llama-2-7b"}, "workload": {"kind": "lora", "lora_targets": ["nope"]}}',
            "workload.lora_targets",
        ),
        ('{"model": {"hf_config": "missing/config.json"}}', "config.json"),
        ('{"model": {"preset": ["llama-2-7b"]}}', "model.preset"),
        ('{"model": {"hf_config": 5}}', "model.hf_config"),
        (
            '{"model": {"preset": "llama-2-7b"}, "workload": {"kind": "lora", "lora_targets": 5}}',
            "workload.lora_targets",
        ),
    ],
)
def test_bad_scenarios_exit_2_with_one_line(capsys, tmp_path, text, needle):
    code, out, err = run_main(capsys, "estimate", write_scenario(tmp_path, text))
    assert code == 2 and out == ""
    assert needle in _one_error_line(err)


def test_missing_scenario_file(capsys, tmp_path):
    code, _, err = run_main(capsys, "estimate", str(tmp_path / "nope.json"))
    assert code == 2 and "nope.json" in _one_error_line(err)


def test_subprocess_malformed_scenario_no_traceback(tmp_path):
    path = write_scenario(
        tmp_path, '{"model": {"preset": "llama-2-7b"}, "workload": {"batch_size": "eight"}}'
    )
    proc = run_subprocess("-m", "gpuadvisor.cli", "estimate", path)
    assert proc.returncode == 2 and proc.stdout == ""
    line = _one_error_line(proc.stderr)
    assert "workload.batch_size" in line and "'eight'" in line


def test_subprocess_unknown_gpu_no_traceback(tmp_path):
    path = write_scenario(tmp_path, INFERENCE_7B)
    proc = run_subprocess("-m", "gpuadvisor.cli", "estimate", path, "--gpu", "a100-80gb", "--gpu", "zz-top")
    assert proc.returncode == 2 and proc.stdout == ""
    assert "zz-top" in _one_error_line(proc.stderr)


def test_subprocess_estimate_json(tmp_path):
    proc = run_subprocess(
        "-m", "gpuadvisor.cli", "estimate", write_scenario(tmp_path, INFERENCE_7B), "--json"
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["candidates"]


# --- listings, version, default scenario ---------------------------------------------------


@pytest.mark.parametrize("command", ["gpus", "models"])
def test_listings_plain(capsys, command):
    code, out, err = run_main(capsys, command)
    assert code == 0 and err == ""
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) >= 2 + 20  # header, rule and at least 20 rows


def test_gpus_json(capsys, gpu_catalog):
    code, out, _ = run_main(capsys, "gpus", "--json")
    data = json.loads(out)
    assert code == 0 and data["updated"]
    assert len(data["gpus"]) >= 20 and len(data["gpus"]) == len(gpu_catalog)
    for g in data["gpus"]:
        assert g["id"] and g["name"] and g["memory_gib"] > 0


def test_models_json(capsys):
    code, out, _ = run_main(capsys, "models", "--json")
    data = json.loads(out)
    assert code == 0 and len(data["models"]) >= 20
    ids = {m["id"] for m in data["models"]}
    assert {"llama-2-7b", "llama-3.1-8b", "mixtral-8x7b"} <= ids
    for m in data["models"]:
        assert m["parameters"] >= m["active_parameters"] > 0


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"gpuadvisor {__version__}"


def test_default_scenario_loads_back(capsys):
    code, out, _ = run_main(capsys, "default-scenario")
    assert code == 0
    scenario = loads_scenario(out)
    assert scenario.warnings == ()
    assert scenario.model.preset == "llama-3.1-8b" and scenario.workload.kind == "lora"


def test_default_scenario_estimates(capsys, tmp_path):
    code, out, _ = run_main(capsys, "default-scenario")
    data = run_json(capsys, tmp_path, out)
    assert data["model"]["name"] == "Llama 3.1 8B"


@pytest.mark.parametrize("argv", [[], ["estimate"], ["bogus"], ["gpus", "--nope"]])
def test_usage_errors_exit_2(capsys, argv):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert "usage:" in capsys.readouterr().err


# --- python -m gpuadvisor ------------------------------------------------------------------


def test_python_m_gpuadvisor_without_a_display_prints_a_comparison():
    """On a headless machine the run command cannot open a window: it says so and prints the comparison."""
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY")}
    proc = subprocess.run(
        [sys.executable, "-m", "gpuadvisor"], cwd=REPO, capture_output=True, text=True, timeout=60, env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "no display" in proc.stderr
    assert "Llama 3.1 8B" in proc.stdout
    assert "NVIDIA H100" in proc.stdout and "verdict" in proc.stdout


# --- the user's catalog ----------------------------------------------------------------------


def _save_user_edits(**kinds):
    from gpuadvisor.core.formats.user_catalog import KindEdits, UserCatalog
    from gpuadvisor.storage import save_user_catalog

    return save_user_catalog(UserCatalog(**{k: KindEdits(**v) for k, v in kinds.items()}))


def _gpu_json(capsys, *argv):
    code, out, err = run_main(capsys, *argv)
    assert code == 0, err
    return {g["id"]: g for g in json.loads(out)["gpus"]}


def test_listings_use_the_user_catalog_unless_told_not_to(capsys):
    _save_user_edits(
        gpus={"overrides": {"h100-sxm": {"name": "My H100", "tdp_w": "650"}}, "deleted": ("t4",)},
        models={"overrides": {"gpt2-xl": {"name": "My GPT-2"}}},
    )
    edited = _gpu_json(capsys, "gpus", "--json")
    assert edited["h100-sxm"]["tdp_w"] == 650 and "t4" not in edited
    for argv in (["--no-user-catalog", "gpus", "--json"], ["gpus", "--json", "--no-user-catalog"]):
        bundled = _gpu_json(capsys, *argv)
        assert bundled["h100-sxm"]["tdp_w"] == 700 and bundled["h100-sxm"]["name"] != "My H100"
        assert "t4" in bundled
    assert "My GPT-2" in run_main(capsys, "models")[1]
    assert "My GPT-2" not in run_main(capsys, "models", "--no-user-catalog")[1]


def test_estimate_uses_the_user_catalog_unless_told_not_to(capsys, tmp_path):
    _save_user_edits(gpus={"overrides": {"t4": {"memory_gib_usable": "8"}}})
    scenario = write_scenario(tmp_path, INFERENCE_7B)
    code, out, _ = run_main(capsys, "estimate", scenario, "--gpu", "t4", "--json")
    assert code == 0 and json.loads(out)["candidates"][0]["capacity_gib"] == 8
    code, out, _ = run_main(capsys, "--no-user-catalog", "estimate", scenario, "--gpu", "t4", "--json")
    assert code == 0 and json.loads(out)["candidates"][0]["capacity_gib"] == 15
    code, out, _ = run_main(capsys, "estimate", scenario, "--gpu", "t4", "--json", "--no-user-catalog")
    assert code == 0 and json.loads(out)["candidates"][0]["capacity_gib"] == 15


def test_problems_with_the_user_catalog_are_warned_once(capsys, tmp_path):
    from gpuadvisor.storage import user_catalog_file

    path = user_catalog_file()
    path.parent.mkdir(parents=True)
    path.write_text("{truncated", encoding="utf-8")
    scenario = write_scenario(tmp_path, INFERENCE_7B)
    code, out, err = run_main(capsys, "estimate", scenario, "--gpu", "t4", "--json")
    assert code == 0 and json.loads(out)["candidates"]
    warnings = [line for line in err.splitlines() if line.startswith("warning:") and "catalog" in line]
    assert len(warnings) == 1 and "could not be loaded" in warnings[0] and "kept as" in warnings[0]
    assert not path.exists()
    _, _, err = run_main(capsys, "gpus")
    assert err == ""  # set aside: the next run is quiet


def test_catalog_export_writes_the_effective_table(capsys, tmp_path):
    out_csv = tmp_path / "gpus.csv"
    code, out, _ = run_main(capsys, "catalog", "export", "gpus", "-o", str(out_csv))
    assert code == 0 and out.startswith(f"{out_csv}: ")
    assert out_csv.read_bytes() == (REPO / "catalogs" / "gpus.csv").read_bytes()
    _save_user_edits(gpus={"overrides": {"h100-sxm": {"tdp_w": "650"}}})
    out_json = tmp_path / "gpus.json"
    code, out, _ = run_main(capsys, "catalog", "export", "gpus", "-o", str(out_json), "--json")
    assert code == 0 and json.loads(out) == {
        "kind": "gpus",
        "file": str(out_json),
        "format": "json",
        "rows": len(load_gpu_catalog()),
        "user_edits": True,
    }
    rows = {r["id"]: r for r in json.loads(out_json.read_text(encoding="utf-8"))["rows"]}
    assert rows["h100-sxm"]["tdp_w"] == "650"
    code, _, _ = run_main(
        capsys, "catalog", "export", "gpus", "-o", str(out_csv), "--format", "json", "--no-user-catalog"
    )
    assert code == 0 and json.loads(out_csv.read_text(encoding="utf-8"))["rows"][0]["id"] == "rtx-4090"


def _import_file(tmp_path):
    from gpuadvisor.core.formats.catalog_exchange import export_text
    from gpuadvisor.core.formats.user_catalog import bundled_rows

    rows = bundled_rows("gpus")
    h100 = next(r for r in rows if r["id"] == "h100-sxm")
    h100["tdp_w"] = "650"
    rows.append(dict(h100, id="my-h100", name="My H100"))
    rows.append(dict(h100, id="broken", tdp_w="-1"))
    path = tmp_path / "import.csv"
    path.write_text(export_text("gpus", rows, "csv", "2026-11-29"), encoding="utf-8")
    return path, len(rows)


def test_catalog_import_dry_run_changes_nothing(capsys, tmp_path):
    from gpuadvisor.storage import user_catalog_file

    path, n = _import_file(tmp_path)
    code, out, err = run_main(capsys, "catalog", "import", "gpus", str(path), "--dry-run")
    assert code == 1  # one row rejected
    assert out.splitlines()[0] == f"import.csv: 1 added, 1 updated, {n - 3} unchanged, 1 rejected"
    assert f"  line {n + 2} (id broken): column tdp_w: must be > 0 (got '-1')" in out
    assert "Dry run: your catalog was not changed." in out
    assert not user_catalog_file().exists()
    saved = _save_user_edits(models={"deleted": ("gpt2-xl",)})
    before = saved.read_bytes()
    code, out, _ = run_main(capsys, "catalog", "import", "gpus", str(path), "--dry-run", "--json")
    data = json.loads(out)
    assert code == 1 and data["dry_run"] is True and data["saved"] is None
    h100_line = [g.id for g in load_gpu_catalog()].index("h100-sxm") + 3  # after metadata and header
    assert data["updated"] == [{"line": h100_line, "id": "h100-sxm", "columns": ["tdp_w"]}]
    assert data["rejected"] == [
        {"line": n + 2, "id": "broken", "reason": "column tdp_w: must be > 0 (got '-1')"}
    ]
    assert saved.read_bytes() == before and not saved.with_name(saved.name + ".bak").exists()


def test_catalog_import_applies_the_good_rows(capsys, tmp_path):
    from gpuadvisor.core.formats.user_catalog import loads
    from gpuadvisor.storage import user_catalog_file

    _save_user_edits(models={"deleted": ("gpt2-xl",)})
    path, n = _import_file(tmp_path)
    code, out, _ = run_main(capsys, "catalog", "import", "gpus", str(path))
    assert code == 1 and "Saved to" in out
    user = loads(user_catalog_file().read_bytes())
    assert dict(user.gpus.overrides) == {"h100-sxm": {"tdp_w": "650"}}
    assert [r["id"] for r in user.gpus.added] == ["my-h100"] and user.models.deleted == ("gpt2-xl",)
    gpus = _gpu_json(capsys, "gpus", "--json")
    assert gpus["my-h100"]["name"] == "My H100" and "broken" not in gpus
    code, out, _ = run_main(capsys, "catalog", "import", "gpus", str(path))
    assert out.splitlines()[0] == f"import.csv: 0 added, 0 updated, {n - 1} unchanged, 1 rejected"
    assert "Nothing to change" in out


@pytest.mark.parametrize(
    "content, needle",
    [
        ("id;name\n1;2\n", "import.csv: line 1: is missing required column(s)"),
        ("# catalog=models; schema_version=1; updated=x\nid\n", "import.csv: line 1: is a 'models' catalog"),
        ("", "import.csv: is empty"),
    ],
)
def test_catalog_import_of_an_unusable_file_exits_2(capsys, tmp_path, content, needle):
    from gpuadvisor.storage import user_catalog_file

    path = tmp_path / "import.csv"
    path.write_text(content, encoding="utf-8")
    code, out, err = run_main(capsys, "catalog", "import", "gpus", str(path))
    assert code == 2 and out == "" and needle in _one_error_line(err)
    assert not user_catalog_file().exists()


def test_catalog_import_refuses_no_user_catalog(capsys, tmp_path):
    path, _ = _import_file(tmp_path)
    code, _, err = run_main(capsys, "--no-user-catalog", "catalog", "import", "gpus", str(path))
    assert code == 2 and "--no-user-catalog" in _one_error_line(err)


def test_catalog_export_into_a_missing_folder_exits_2(capsys, tmp_path):
    code, _, err = run_main(capsys, "catalog", "export", "models", "-o", str(tmp_path / "no" / "m.csv"))
    assert code == 2 and "m.csv" in _one_error_line(err)


# --- prices import ----------------------------------------------------------------------------------

GPUHUNT_HEADER = (
    "instance_name,location,price,cpu,memory,gpu_count,gpu_name,gpu_memory,spot,disk_size,gpu_vendor,flags"
)


def _gpuhunt_file(tmp_path, name="aws.csv"):
    rows = [
        GPUHUNT_HEADER,
        "p5.48xlarge,us-east-1,98.32,192,2048,8,H100,80,False,,nvidia,",
        "p5.48xlarge,us-west-2,80.00,192,2048,8,H100,80,False,,nvidia,",
        "p5.48xlarge,us-west-2,40.00,192,2048,8,H100,80,True,,nvidia,",
        "p4d.24xlarge,us-east-1,32.77,96,1152,8,A100,40,False,,nvidia,",
        "p2.xlarge,us-east-1,0.90,4,61,1,K80,12,False,,nvidia,",
        "p2.8xlarge,us-east-1,7.20,32,488,8,K80,12,False,,nvidia,",
        "g4dn.xlarge,us-east-1,,4,16,1,T4,16,False,,nvidia,",
        "c5.large,us-east-1,0.085,2,4,0,,,False,,,",
    ]
    path = tmp_path / name
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_prices_import_dry_run_changes_nothing(capsys, tmp_path):
    from gpuadvisor.storage import user_catalog_file

    path = _gpuhunt_file(tmp_path)
    code, out, err = run_main(capsys, "prices", "import", str(path), "--dry-run")
    assert code == 1, err  # one line rejected (no price)
    assert "Matched 2 catalog GPUs" in out
    h100 = next(line for line in out.splitlines() if line.startswith("h100-sxm"))
    assert h100.split()[1:5] == ["10", "11.145", "12.29", "5-5"]  # per GPU: 80/8, median, 98.32/8; spot 40/8
    assert "K80: 2 rows" in out and "line 8:" in out and "Dry run: your catalog was not changed." in out
    assert not user_catalog_file().exists()


def test_prices_import_updates_the_user_catalog(capsys, tmp_path):
    path = _gpuhunt_file(tmp_path)
    code, out, _ = run_main(capsys, "prices", "import", str(path), "--provider", "AWS", "--json")
    data = json.loads(out)
    assert code == 1 and data["saved"] and data["dry_run"] is False
    matched = {m["gpu"]: m for m in data["matched"]}
    assert matched["h100-sxm"]["on_demand"] == {"low": 10.0, "median": 11.145, "high": 12.29, "count": 2}
    assert matched["h100-sxm"]["spot"]["low"] == 5.0 and matched["h100-sxm"]["providers"] == ["AWS"]
    assert data["unmatched"][0]["name"] == "K80" and data["unmatched"][0]["rows"] == 2
    assert [r["line"] for r in data["rejected"]] == [8]
    assert {u["gpu"] for u in data["updated"]} == {"h100-sxm", "a100-40gb"}
    gpus = _gpu_json(capsys, "gpus", "--json")
    assert gpus["h100-sxm"]["cloud_usd_per_hour"] == {"low": 10.0, "expected": 11.145, "high": 12.29}
    assert "Prices from AWS price lists imported" in gpus["h100-sxm"]["source"]
    assert gpus["a100-40gb"]["cloud_usd_per_hour"]["expected"] == pytest.approx(4.0963, abs=1e-4)


def test_prices_import_of_an_unusable_file_exits_2(capsys, tmp_path):
    from gpuadvisor.storage import user_catalog_file

    good = _gpuhunt_file(tmp_path)
    bad = tmp_path / "gcp.csv"
    bad.write_text("a,b,c\n1,2,3\n", encoding="utf-8")
    code, out, err = run_main(capsys, "prices", "import", str(good), str(bad))
    assert code == 2 and out == "" and _one_error_line(err).startswith(f"error: {bad}: ")
    assert not user_catalog_file().exists()


# --- measured runs and calibration -----------------------------------------------------------------

INFERENCE_RUN = {
    "model": {"preset": "llama-3.1-8b"},
    "workload": {
        "kind": "inference",
        "batch_size": 8,
        "prompt_tokens": 512,
        "output_tokens": 256,
        "engine": "vllm",
    },
    "hardware": {"gpu": "h100-sxm", "gpu_count": 1},
}
TRUE_BW_EFF = 0.55


def _true_speed(data, bw_eff=TRUE_BW_EFF):
    from dataclasses import replace

    from gpuadvisor.core.estimation.estimate import estimate
    from gpuadvisor.core.formats.scenario import Efficiency, scenario_from_dict
    from gpuadvisor.core.specs.presets import load_model_catalog

    sc = scenario_from_dict(data)
    est = estimate(
        replace(sc, efficiency=Efficiency(bandwidth_efficiency=bw_eff)),
        load_gpu_catalog(),
        load_model_catalog(),
    )
    return est.candidates[0].performance.tokens_per_s.expected


def _smi_log(tmp_path, used_mib=76000, util=45):
    lines = [
        "timestamp, name, memory.used [MiB], memory.total [MiB], utilization.gpu [%], utilization.memory [%]"
    ]
    lines += [
        f"2026/11/20 10:00:{s:02d}.000, NVIDIA H100 80GB HBM3, {used_mib} MiB, 81559 MiB, {util} %, 88 %"
        for s in range(20)
    ]
    path = tmp_path / "gpu-log.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_measure_add_list_and_the_scenario_file(capsys, tmp_path):
    from gpuadvisor.storage import load_measurements

    scenario = write_scenario(tmp_path, INFERENCE_RUN)
    measured = _true_speed(INFERENCE_RUN)
    code, out, err = run_main(
        capsys,
        "measure",
        "add",
        scenario,
        "--gpu",
        "h100-sxm",
        "--tokens-per-s",
        f"{measured:.3f}",
        "--peak-memory-gib",
        "70",
        "--note",
        "vLLM 0.6",
    )
    assert code == 0, err
    assert out.startswith("Recorded m1: 1x h100-sxm, vllm, inference of llama-3.1-8b (batch 8)")
    tps = next(line for line in out.splitlines() if line.startswith("tokens/s"))
    assert f"{measured:,.0f}" in tps and "+" in tps.split()[-1]  # the profile is faster than the run
    (m,) = load_measurements().value
    assert (
        m.tokens_per_s == pytest.approx(measured, rel=1e-6) and m.source == "typed" and m.note == "vLLM 0.6"
    )
    assert m.scenario["workload"]["batch_size"] == 8
    assert [r.id for r in loads_scenario(Path(scenario).read_text()).measurements] == ["m1"]  # saved with it

    code, out, _ = run_main(
        capsys,
        "measure",
        "add",
        scenario,
        "--gpu",
        "h100-sxm",
        "--smi-log",
        str(_smi_log(tmp_path)),
        "--json",
        "--no-scenario-update",
    )
    data = json.loads(out)
    assert code == 0 and data["measurement"]["id"] == "m2" and data["scenario_updated"] is False
    assert data["measurement"]["source"] == "nvidia-smi log"
    assert data["measurement"]["peak_memory_gib"] == pytest.approx(76000 / 1024)
    assert data["comparison"]["peak_memory_gib"]["error_pct"] < 0
    assert any("memory-bandwidth saturation" in f["title"] for f in data["findings"])
    assert len(loads_scenario(Path(scenario).read_text()).measurements) == 1

    code, out, _ = run_main(capsys, "measure", "list")
    assert code == 0 and out.splitlines()[2].startswith("m1 ") and "2 measurements in" in out
    code, out, _ = run_main(capsys, "measure", "list", "--json")
    runs = json.loads(out)["measurements"]
    assert [r["id"] for r in runs] == ["m1", "m2"] and runs[0]["comparison"]["tokens_per_s"]["error_pct"] > 0


@pytest.mark.parametrize(
    "extra, needle",
    [
        (["--tokens-per-s", "-5"], "error: --tokens-per-s: must be a number > 0 (got -5.0)"),
        ([], "error: measurement: give at least one of --tokens-per-s, --seconds-per-step"),
        (
            ["--seconds-per-step", "2"],
            "error: --tokens-per-step: is needed to turn seconds_per_step into tokens/s",
        ),
        (["--tokens-per-s", "5", "--engine", "fsdp"], "error: --engine: is a training engine"),
    ],
)
def test_measure_add_bad_input_exits_2(capsys, tmp_path, extra, needle):
    from gpuadvisor.storage import measurements_file

    scenario = write_scenario(tmp_path, INFERENCE_RUN)
    code, out, err = run_main(capsys, "measure", "add", scenario, "--gpu", "h100-sxm", *extra)
    assert code == 2 and out == "" and _one_error_line(err).startswith(needle)
    assert not measurements_file().exists()


def test_measure_diagnose(capsys, tmp_path):
    code, out, _ = run_main(capsys, "measure", "diagnose", str(_smi_log(tmp_path, used_mib=30000, util=30)))
    assert code == 0 and "20 samples, peak 29.3 GiB (37% of VRAM), median utilization 30%" in out
    assert "CPU or data-pipeline bottleneck" in out and "num_workers" in out
    code, out, _ = run_main(capsys, "measure", "diagnose", str(_smi_log(tmp_path, util=97)), "--json")
    data = json.loads(out)
    assert data["gpus"][0]["median_gpu_util_pct"] == 97 and data["findings"][0]["severity"] == "ok"
    bad = tmp_path / "bad.csv"
    bad.write_text("hello, world\n1, 2\n", encoding="utf-8")
    code, _, err = run_main(capsys, "measure", "diagnose", str(bad))
    assert code == 2 and "bad.csv: line 1: is not an nvidia-smi --query-gpu CSV header" in err


def test_calibrate_recovers_the_factor_and_estimate_applies_it(capsys, tmp_path):
    from gpuadvisor.storage import calibration_file

    code, _, err = run_main(capsys, "estimate", write_scenario(tmp_path, INFERENCE_RUN), "--calibrated")
    assert code == 2 and "no calibration profile is saved yet" in _one_error_line(err)
    for batch in (1, 4, 16):
        data = json.loads(json.dumps(INFERENCE_RUN))
        data["workload"]["batch_size"] = batch
        scenario = write_scenario(tmp_path, data, f"b{batch}.json")
        code, _, err = run_main(
            capsys, "measure", "add", scenario, "--gpu", "h100-sxm", "--tokens-per-s", str(_true_speed(data))
        )
        assert code == 0, err
    code, out, _ = run_main(capsys, "calibrate", "--json")
    profile = json.loads(out)
    (fit,) = profile["fits"]
    assert code == 0 and profile["saved"] == str(calibration_file())
    assert (fit["gpu_id"], fit["engine"], fit["factor_name"], fit["n_measurements"]) == (
        "h100-sxm",
        "vllm",
        "bandwidth_efficiency",
        3,
    )
    assert fit["value"] == pytest.approx(TRUE_BW_EFF, rel=0.01)
    assert fit["error_after_pct"] < 1 < fit["error_before_pct"]
    code, out, _ = run_main(capsys, "calibrate")
    assert "h100-sxm  vllm    bandwidth_efficiency" in out and "Saved to" in out

    scenario = write_scenario(tmp_path, INFERENCE_RUN)
    code, out, _ = run_main(capsys, "estimate", scenario, "--calibrated", "--json")
    data = json.loads(out)
    assert data["calibration"]["gpus"] == ["h100-sxm"] and data["candidates"][0]["calibrated"] is True
    assert data["candidates"][0]["tokens_per_s"] == pytest.approx(_true_speed(INFERENCE_RUN), rel=0.01)
    code, out, _ = run_main(capsys, "estimate", scenario, "--calibrated")
    assert "NVIDIA H100 SXM5 80 GB *" in out and "* Calibrated to your measurements" in out
    plain = json.loads(run_main(capsys, "estimate", scenario, "--json")[1])
    assert plain["calibration"]["enabled"] is False and plain["candidates"][0]["calibrated"] is False


def test_calibrate_export_import_round_trip_and_malformed_profiles(capsys, tmp_path):
    from gpuadvisor.core.estimation.calibration import CalibrationProfile, FactorFit, profile_to_json
    from gpuadvisor.storage import calibration_file, load_calibration, save_calibration

    code, _, err = run_main(capsys, "calibrate", "--show")
    assert code == 2 and "no calibration profile is saved yet" in err
    code, out, _ = run_main(capsys, "calibrate")  # no measurements: nothing fitted, nothing saved
    assert code == 1 and "No factor could be fitted" in out and not calibration_file().exists()
    profile = CalibrationProfile(
        fits=(FactorFit("a100-80gb", "hf-trainer", "mfu", 0.33, 5, 24.0, 1.1, ("m1", "m2")),),
        created="2026-11-30",
        note="lab",
    )
    save_calibration(profile)
    exported = tmp_path / "shared.json"
    code, out, _ = run_main(capsys, "calibrate", "--show", "--export", str(exported))
    assert code == 0 and f"Exported to {exported}." in out and "mfu" in out
    calibration_file().unlink()
    code, out, _ = run_main(capsys, "calibrate", "--import", str(exported), "--json")
    assert code == 0 and json.loads(out)["fits"][0]["value"] == 0.33
    assert load_calibration().value == profile

    bad = tmp_path / "bad.json"
    bad.write_text(profile_to_json(profile).replace('"mfu"', '"speed"'), encoding="utf-8")
    code, out, err = run_main(capsys, "calibrate", "--import", str(bad))
    assert code == 2 and out == ""
    assert _one_error_line(err) == (
        "error: bad.json: fits[0].factor_name: must be one of bandwidth_efficiency, "
        "mfu, prefill_mfu, runtime_overhead_gib (got 'speed')"
    )
    bad.write_text("{not json", encoding="utf-8")
    code, _, err = run_main(capsys, "calibrate", "--import", str(bad))
    assert code == 2 and _one_error_line(err).startswith(f"error: {bad}: is not valid JSON")
    assert load_calibration().value == profile  # a refused file changes nothing


def test_headless_launcher_prints_the_same_table_as_estimate(capsys, tmp_path):
    """``python -m gpuadvisor`` without a display prints the comparison the CLI prints."""
    from gpuadvisor.views.terminal import print_comparison

    _, scenario_text, _ = run_main(capsys, "default-scenario")
    path = write_scenario(tmp_path, scenario_text)
    assert print_comparison([]) == 0
    headless = capsys.readouterr().out
    code, cli_out, _ = run_main(capsys, "estimate", path)
    assert code == 0
    assert headless.startswith("LoRA fine-tune of Llama 3.1 8B\n")
    assert headless.strip() == cli_out.strip()


def test_headless_launcher_bad_file_is_one_line(capsys, tmp_path):
    from gpuadvisor.views.terminal import print_comparison

    assert print_comparison([str(tmp_path / "missing.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err


def test_every_view_prints_the_same_figures(capsys, tmp_path):
    """The CLI table, the report content and the chart labels write one candidate's figures alike."""
    from gpuadvisor.core import formatting, units
    from gpuadvisor.core.estimation.estimate import estimate
    from gpuadvisor.core.formats.scenario import default_scenario
    from gpuadvisor.core.presentation.report import build_report, row_cells
    from gpuadvisor.storage.user_catalog_store import load_catalogs
    from gpuadvisor.views.charts import labels

    _, scenario_text, _ = run_main(capsys, "default-scenario")
    code, cli_out, _ = run_main(capsys, "estimate", write_scenario(tmp_path, scenario_text))
    assert code == 0
    gpus, models = load_catalogs()
    est = estimate(default_scenario(), gpus, models)
    report = build_report(est, gpus.meta, __import__("datetime").date(2026, 11, 30))
    checked = 0
    for c in est.best_per_gpu().values():
        if c.cost is None or c.cost.cost_usd is None:
            continue
        cells = row_cells(c, est)
        (cli_row,) = [
            line for line in cli_out.splitlines() if line.lstrip("\u2605 ").startswith(c.gpu.name + "  ")
        ]
        h, u = c.cost.job_hours, c.cost.cost_usd
        # the report's table cells appear verbatim in the CLI row
        for cell in (cells[3], cells[4], cells[5], cells[6], cells[7], cells[8], cells[9]):
            assert cell in cli_row, (c.gpu.id, cell, cli_row)
        # single figures: the charts' labels, the window's names and the formatting rules agree
        for hours in (h.low, h.expected, h.high):
            assert labels.fmt_hours(hours) == units.format_hours(hours) == formatting.fmt_hours(hours)
        for usd in (u.low, u.expected, u.high):
            assert labels.fmt_usd(usd) == units.format_usd(usd) == formatting.fmt_usd(usd)
        assert (
            cells[7] == f"{formatting.fmt_hours(h.low).split()[0]}\u2013{formatting.fmt_hours(h.high)}"
            or formatting.fmt_hours(h.low).split()[-1] != formatting.fmt_hours(h.high).split()[-1]
        )
        # Tables carry the full name (wrapped, never cut); a chart's label the short one.
        assert cells[0] == formatting.plain_gpu_name(c.gpu.name)
        assert labels.short_gpu_name(c.gpu.name) == formatting.display_gpu_name(c.gpu.name)
        checked += 1
    assert checked >= 10
    names = {c.gpu.id: c.gpu.name for c in est.candidates}
    assert report.table_rows and all(
        r.cells[0] == formatting.plain_gpu_name(names[r.gpu_id]) for r in report.table_rows
    )


@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="poppler-utils (pdftotext) is not installed")
def test_report_uses_the_stale_price_age_set_in_the_window(capsys, tmp_path):
    """The window's setting reaches the CLI report: with 240 months no catalog price is stale."""
    from gpuadvisor.storage import Settings, save_settings

    _, scenario_text, _ = run_main(capsys, "default-scenario")
    path = write_scenario(tmp_path, scenario_text)

    def report_text(name):
        pdf = tmp_path / name
        assert run_main(capsys, "report", path, "-o", str(pdf))[0] == 0
        return subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout

    import datetime

    from gpuadvisor.core.estimation.estimate import estimate
    from gpuadvisor.core.formats.scenario import default_scenario
    from gpuadvisor.core.presentation.report import build_report
    from gpuadvisor.storage.user_catalog_store import load_catalogs

    gpus, models = load_catalogs()
    stale_at_6 = build_report(
        estimate(default_scenario(), gpus, models), gpus.meta, datetime.date.today(), stale_after_months=6
    ).stale_price_gpus
    assert ("Stale prices" in report_text("default.pdf")) == bool(stale_at_6)  # 6 months: the default
    save_settings(Settings(stale_price_months=240))
    assert "Stale prices" not in report_text("patient.pdf")


# --- paths as typed, old -> new on import, single GPU; the window's command line ------------------


def _headless_env():
    import os

    return {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY")}


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_python_m_gpuadvisor_help_without_a_display(flag):
    proc = subprocess.run(
        [sys.executable, "-m", "gpuadvisor", flag],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env=_headless_env(),
    )
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout.startswith("usage: gpuadvisor [-h] [-V] [SCENARIO.json]")


def test_python_m_gpuadvisor_version_without_a_display():
    proc = subprocess.run(
        [sys.executable, "-m", "gpuadvisor", "--version"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env=_headless_env(),
    )
    assert proc.returncode == 0 and proc.stdout == f"gpuadvisor {__version__}\n"


def test_window_command_names_a_missing_scenario_as_typed(tmp_path):
    typed = str(tmp_path / "folder" / "nope.json")
    proc = subprocess.run(
        [sys.executable, "-m", "gpuadvisor", typed],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env=_headless_env(),
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines()[-1] == f"error: {typed}: file not found"


def test_cli_names_a_missing_file_as_typed(capsys, tmp_path):
    typed = str(tmp_path / "nope.json")
    code, _, err = run_main(capsys, "estimate", typed)
    assert code == 2 and _one_error_line(err) == f"error: {typed}: file not found"
    code, _, err = run_main(capsys, "measure", "diagnose", str(tmp_path / "no-log.csv"))
    assert code == 2 and _one_error_line(err) == f"error: {tmp_path / 'no-log.csv'}: file not found"


def test_catalog_import_dry_run_spells_out_old_and_new_values(capsys, tmp_path):
    path, _ = _import_file(tmp_path)
    old_tdp = next(g for g in load_gpu_catalog() if g.id == "h100-sxm").tdp_w
    code, out, _ = run_main(capsys, "catalog", "import", "gpus", str(path), "--dry-run")
    assert code == 1
    assert "Values that change:" in out
    assert f"  h100-sxm: tdp_w: {old_tdp:g} -> 650" in out


def test_table_says_single_gpu_like_the_window(capsys, tmp_path):
    data = dict(LORA_8B, hardware={"gpu_count": 1})
    code, out, err = run_main(capsys, "estimate", write_scenario(tmp_path, data))
    assert code == 0, err
    assert "single GPU" in out and "1x none" not in out


# --- serving (workload.serving) ------------------------------------------------------------------
SERVING_8B = {
    "model": {"preset": "llama-3.1-8b"},
    "workload": {
        "kind": "inference",
        "engine": "vllm",
        "prompt_tokens": 2000,
        "output_tokens": 300,
        "serving": {"requests_per_s": 20, "ttft_s": 1, "itl_ms": 50},
    },
    "hardware": {"segment": "data_centre"},
}


def test_serving_prints_the_fleet_table(capsys, tmp_path):
    code, out, _ = run_main(capsys, "estimate", write_scenario(tmp_path, SERVING_8B))
    assert code == 0
    assert "Load: 20 requests/s" in out and "$/month" in out and "in flight/replica" in out
    assert "Recommended: " in out
    # The per-GPU memory table that follows carries no batch-job speed or cost: the service's are
    # the fleet's, and one sequence's job time and cost would contradict its monthly cost.
    memory_header = next(line for line in out.splitlines() if line.startswith("GPU ") and "need/GPU" in line)
    assert "job time" not in memory_header and "tokens/s" not in memory_header
    assert "the fleet table above" in out


def test_serving_json_has_the_fleet_per_candidate(capsys, tmp_path):
    data = run_json(capsys, tmp_path, SERVING_8B)
    rec = data["recommendation"]["recommended"]
    fleet = next(
        c["serving"]
        for c in data["candidates"]
        if f"{c['gpu_count']}x {c['gpu']} ({c['parallelism']})" == rec
    )
    assert fleet["meets_slo"] and fleet["usd_per_month"] > 0


def test_bad_serving_key_exits_2_with_one_line(capsys, tmp_path):
    bad = json.loads(json.dumps(SERVING_8B))
    bad["workload"]["serving"]["percentile"] = 42
    code, out, err = run_main(capsys, "estimate", write_scenario(tmp_path, bad))
    assert code == 2 and out == ""
    assert "workload.serving.percentile" in _one_error_line(err)


def test_subprocess_reader_that_stops_early_gets_no_error():
    """``gpuadvisor-cli estimate ... | head``: the pipe closes early; the CLI stops quietly with 0."""
    args = [
        sys.executable,
        "-m",
        "gpuadvisor.cli",
        "estimate",
        "docs/examples/lora-llama-3.1-8b.json",
        "--json",
    ]
    with subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        first = proc.stdout.read(64)
        proc.stdout.close()  # the reader goes away, as head does after its lines
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=60) == 0
    assert first.startswith(b"{")
    assert err == ""


def test_serving_prints_the_memory_at_the_operating_point_like_the_json(capsys, tmp_path):
    """The text names the requests in flight, their KV cache and what the engine takes, with the
    figures of `--json` (serving.memory_gib), for the recommended fleet and in the memory table."""
    path = write_scenario(tmp_path, SERVING_8B)
    code, out, _ = run_main(capsys, "estimate", path)
    assert code == 0
    code, js, _ = run_main(capsys, "estimate", path, "--json")
    data = json.loads(js)
    rec = data["recommendation"]["recommended"]
    cand = next(c for c in data["candidates"] if f"{c['gpu_count']}x {c['gpu']} ({c['parallelism']})" == rec)
    mem = cand["serving"]["memory_gib"]
    assert mem["need"] == cand["memory_per_gpu_gib"]["device_total"]
    line = next(x for x in out.splitlines() if x.startswith("Memory per GPU with "))
    assert line.startswith(
        f"Memory per GPU with {mem['concurrency']} requests in flight: {mem['need']:.1f} of "
        f"{cand['capacity_gib']:.1f} GiB (weights {mem['weights']:.1f}, KV cache {mem['kv_cache_in_flight']:.1f} for "
        f"{mem['concurrency']} × {mem['kv_tokens_per_sequence']:,} tokens"
    )
    pool = next(x for x in out.splitlines() if x.startswith("vLLM preallocates "))
    assert f"{mem['kv_pool']:.1f} GiB KV pool (gpu_memory_utilization 0.9" in pool
    assert f"so {mem['engine_total']:.1f} GiB of the card are in use" in pool
    header = next(x for x in out.splitlines() if x.startswith("GPU ") and "need/GPU" in x)
    assert header.rstrip().endswith("in flight  engine takes")
    gpu_name = cand["gpu_name"]
    row = next(x for x in out.splitlines() if gpu_name in x and "fits" in x and "×" not in x)
    cells = row.split()
    assert cells[-2:] == [f"{mem['concurrency']:,}", f"{mem['engine_total']:.1f}"]
    assert f"{mem['need']:.1f}" in cells
