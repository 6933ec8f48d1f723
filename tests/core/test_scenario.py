"""The scenario JSON format: defaults, every documented key, unknown keys, round trip,
atomic saving, and one clear error (dotted field and value) for each kind of bad input."""

import contextlib
import json
import os
import shutil
import subprocess

import pytest

from gpuadvisor.core.errors import InputError, ScenarioError
from gpuadvisor.core.formats.scenario import (
    FORMAT_NAME,
    FORMAT_VERSION,
    Budget,
    ModelSource,
    Scenario,
    dumps_scenario,
    load_scenario,
    loads_scenario,
    save_scenario,
    scenario_from_dict,
    scenario_to_dict,
)
from gpuadvisor.core.specs.workload import Hardware, RuntimeOverhead, Workload

MINIMAL = {"model": {"preset": "llama-2-7b"}}

ARCHITECTURE = {
    "num_layers": 32,
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 14336,
    "vocab_size": 32000,
    "gated_mlp": True,
    "tied_embeddings": False,
    "num_experts": 8,
    "experts_per_token": 2,
    "head_dim": 128,
}


def _with(**sections):
    """MINIMAL with some sections merged in (``model`` replaces, others are added)."""
    data = json.loads(json.dumps(MINIMAL))
    data.update(sections)
    return data


def _write(tmp_path, data, name="scenario.json"):
    p = tmp_path / name
    p.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return p


# --- minimal file and defaults -----------------------------------------------------------


def test_minimal_file_loads_with_defaults(tmp_path):
    s = load_scenario(_write(tmp_path, MINIMAL))
    assert s.model == ModelSource(preset="llama-2-7b")
    assert s.workload == Workload()
    assert s.hardware == Hardware()
    assert s.budget == Budget()
    assert s.overhead == RuntimeOverhead()
    assert s.name == "" and s.notes == ""  # named after the model and the workload when shown
    assert s.warnings == ()
    assert s.base_dir == str(tmp_path.resolve())
    assert s.workload.kind == "inference" and s.workload.weights == "bf16"
    assert s.hardware.gpu is None and s.hardware.gpu_count is None and s.hardware.parallelism is None


def test_format_and_version_are_optional_but_accepted():
    s = scenario_from_dict(_with(format=FORMAT_NAME, version=FORMAT_VERSION, name="x", notes="y"))
    assert (s.name, s.notes, s.warnings) == ("x", "y", ())


def test_newer_version_opens_with_a_warning():
    s = scenario_from_dict(_with(version=FORMAT_VERSION + 1))
    assert any("newer" in w for w in s.warnings)


def test_null_section_means_defaults():
    s = scenario_from_dict(_with(workload=None, hardware=None))
    assert s.workload == Workload() and s.hardware == Hardware()


@pytest.mark.parametrize("key", ["batch_size", "seq_len", "prompt_tokens", "output_tokens", "lora_rank"])
def test_a_null_count_is_refused_with_its_field(key):
    """A count the estimate needs has no "not set": null in the file is refused in one line, not
    carried into the memory model as None."""
    with pytest.raises(ScenarioError, match=f"workload.{key}: must be a number"):
        scenario_from_dict(_with(workload={"kind": "lora", key: None}))


def test_a_null_price_is_refused():
    with pytest.raises(ScenarioError, match="budget.price: must be low, expected, high"):
        scenario_from_dict(_with(budget={"price": None}))


# --- every documented key ----------------------------------------------------------------


@pytest.mark.parametrize(
    "model",
    [
        {"preset": "llama-2-7b"},
        {"architecture": ARCHITECTURE},
        {"hf_config": "tests/data/hf/Llama-2-7b-hf/config.json"},
        {"parameters": 7e9},
        {"parameters": 7_000_000_000},
        {"preset": "mistral-7b", "name": "My Mistral"},
    ],
)
def test_model_sources_accepted(model):
    s = scenario_from_dict({"model": model})
    assert s.warnings == ()
    for key, value in model.items():
        if key == "architecture":
            assert s.model.architecture_dict() == value
        else:
            assert getattr(s.model, key) == value


@pytest.mark.parametrize("key", sorted(ARCHITECTURE))
def test_each_architecture_key_accepted(key):
    s = scenario_from_dict({"model": {"architecture": ARCHITECTURE}})
    assert s.model.architecture_dict()[key] == ARCHITECTURE[key]


WEIGHTS_FOR_KIND = {
    "inference": ("fp32", "bf16", "fp16", "fp8", "int8", "int4", "nf4"),
    "lora": ("fp32", "bf16", "fp16", "fp8"),
    "qlora": ("int8", "int4", "nf4"),
    "full_finetune": ("fp32", "bf16", "fp16", "fp8"),
    "pretrain": ("fp32", "bf16", "fp16", "fp8"),
}


@pytest.mark.parametrize("kind, weights", [(k, w) for k, ws in WEIGHTS_FOR_KIND.items() for w in ws])
def test_workload_kind_and_weights_accepted(kind, weights):
    s = scenario_from_dict(_with(workload={"kind": kind, "weights": weights}))
    assert (s.workload.kind, s.workload.weights) == (kind, weights)
    assert s.warnings == ()


@pytest.mark.parametrize(
    "key, value",
    [
        ("kv_cache", "fp8"),
        ("kv_cache", "int4"),
        ("kv_cache", None),
        ("batch_size", 8),
        ("seq_len", 4096),
        ("prompt_tokens", 3000),
        ("output_tokens", 500),
        ("optimizer", "adamw"),
        ("optimizer", "adamw_8bit"),
        ("optimizer", "sgd"),
        ("optimizer", "adafactor"),
        ("gradient_checkpointing", True),
        ("flash_attention", False),
        ("lora_rank", 64),
        ("lora_targets", ["q_proj", "v_proj"]),
        ("lora_targets", "all_linear"),
    ],
)
def test_workload_keys_accepted(key, value):
    s = scenario_from_dict(_with(workload={"kind": "lora", key: value}))
    got = getattr(s.workload, key)
    assert (list(got) if isinstance(got, tuple) else got) == value
    assert s.warnings == ()


def test_lora_targets_list_becomes_tuple():
    s = scenario_from_dict(_with(workload={"kind": "lora", "lora_targets": ["q_proj", "v_proj"]}))
    assert s.workload.lora_targets == ("q_proj", "v_proj")


@pytest.mark.parametrize("parallelism", ["ddp", "zero1", "zero2", "zero3", "fsdp", "tensor", "pipeline"])
def test_hardware_keys_accepted(parallelism):
    s = scenario_from_dict(_with(hardware={"gpu": "a100-80gb", "gpu_count": 4, "parallelism": parallelism}))
    assert s.hardware == Hardware(gpu="a100-80gb", gpu_count=4, parallelism=parallelism)


@pytest.mark.parametrize(
    "key, value",
    [
        ("max_usd_per_hour", 10.0),
        ("max_total_usd", 5000),
        ("deadline_hours", 48),
        ("price", "low"),
        ("price", "high"),
        ("price", 2.5),
        ("purchase", "used"),
        ("ownership_months", 24),
        ("utilization", 0.9),
        ("electricity_usd_per_kwh", 0.0),
        ("pue", 1.0),
    ],
)
def test_budget_keys_accepted(key, value):
    s = scenario_from_dict(_with(budget={key: value}))
    assert getattr(s.budget, key) == value


def test_overhead_and_efficiency_keys_accepted():
    s = scenario_from_dict(
        _with(
            overhead={"cuda_context_gib": 1.0, "fragmentation": 0.1},
            efficiency={"bandwidth_efficiency": 0.8, "mfu": 0.4, "prefill_mfu": 0.5},
        )
    )
    assert s.overhead == RuntimeOverhead(cuda_context_gib=1.0, fragmentation=0.1)
    assert (s.efficiency.bandwidth_efficiency, s.efficiency.mfu, s.efficiency.prefill_mfu) == (0.8, 0.4, 0.5)


# --- unknown keys --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data, listed",
    [
        (_with(colour="blue"), "colour"),
        (_with(workload={"batch_size": 2, "turbo": True}), "workload.turbo"),
        (_with(hardware={"rack": 3}), "hardware.rack"),
        (_with(budget={"currency": "EUR"}), "budget.currency"),
        (_with(overhead={"swap": 1}), "overhead.swap"),
        (_with(efficiency={"magic": 1}), "efficiency.magic"),
        ({"model": {"preset": "llama-2-7b", "revision": "main"}}, "model.revision"),
        ({"model": {"architecture": dict(ARCHITECTURE, rope_theta=1e6)}}, "model.architecture.rope_theta"),
    ],
)
def test_unknown_keys_are_ignored_and_listed(data, listed):
    s = scenario_from_dict(data)
    assert len(s.warnings) == 1
    assert listed in s.warnings[0] and "unknown" in s.warnings[0]
    assert "rope_theta" not in s.model.architecture_dict()


def test_several_unknown_keys_all_listed():
    s = scenario_from_dict({"a": 1, "model": {"preset": "llama-2-7b", "b": 2}, "workload": {"c": 3}})
    assert len(s.warnings) == 3
    text = " ".join(s.warnings)
    assert all(k in text for k in ("a", "model.b", "workload.c"))


def test_warnings_do_not_affect_equality():
    assert scenario_from_dict(_with(extra=1)) == scenario_from_dict(MINIMAL)


# --- round trip ----------------------------------------------------------------------------

ROUND_TRIP = [
    Scenario(model=ModelSource(preset="llama-2-7b")),
    Scenario(
        model=ModelSource(preset="llama-3.1-8b", name="Mine"),
        name="LoRA run",
        notes="ünïcødé ✓",
        workload=Workload(
            kind="lora",
            weights="bf16",
            batch_size=4,
            seq_len=4096,
            lora_rank=32,
            lora_targets=("q_proj", "v_proj"),
            gradient_checkpointing=True,
            train_tokens=1e8,
        ),
        hardware=Hardware(gpu="h100-sxm", gpu_count=8, parallelism="fsdp"),
        budget=Budget(max_usd_per_hour=40.0, price=3.5, purchase="used", utilization=0.8),
    ),
    Scenario(
        model=ModelSource(architecture=tuple(ARCHITECTURE.items())),
        workload=Workload(kind="qlora", weights="nf4", optimizer="adamw_8bit", flash_attention=False),
        overhead=RuntimeOverhead(cuda_context_gib=0.4, fragmentation=0.1),
    ),
    Scenario(
        model=ModelSource(parameters=13e9),
        workload=Workload(kind="pretrain", weights="fp8", optimizer="adafactor", seq_len=8192),
    ),
    Scenario(
        model=ModelSource(hf_config="config.json"),
        workload=Workload(kind="inference", weights="int4", kv_cache="fp8", prompt_tokens=7, output_tokens=9),
    ),
]


@pytest.mark.parametrize("scenario", ROUND_TRIP, ids=range(len(ROUND_TRIP)))
def test_save_then_load_gives_an_equal_scenario(tmp_path, scenario):
    path = tmp_path / "s.json"
    save_scenario(scenario, path)
    loaded = load_scenario(path)
    assert loaded == scenario
    assert loaded.warnings == ()
    assert loads_scenario(dumps_scenario(scenario)) == scenario


def test_saved_file_documents_itself(tmp_path):
    path = tmp_path / "s.json"
    save_scenario(ROUND_TRIP[0], path)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["format"] == FORMAT_NAME and data["version"] == FORMAT_VERSION
    assert {"model", "workload", "hardware", "budget", "overhead", "efficiency"} <= set(data)
    assert data["workload"]["batch_size"] == 1  # defaults are written out
    assert data == scenario_to_dict(ROUND_TRIP[0])


# --- atomic saving -------------------------------------------------------------------------


def test_existing_file_is_replaced_whole(tmp_path):
    path = tmp_path / "s.json"
    path.write_text("x" * 100_000, encoding="utf-8")
    save_scenario(ROUND_TRIP[0], path)
    assert path.read_text(encoding="utf-8") == dumps_scenario(ROUND_TRIP[0])
    assert sorted(os.listdir(tmp_path)) == ["s.json"]


@contextlib.contextmanager
def _read_only(folder):
    """``folder`` made read-only for whoever runs the tests: mode 0500, which stops a user, and for
    root, whom modes do not stop (CI runs as root), the immutable attribute (``chattr +i``), which
    the kernel enforces for root too. Skips only where neither can be set."""
    chattr = shutil.which("chattr")
    immutable = False
    folder.chmod(0o500)
    try:
        if os.access(folder, os.W_OK):
            if chattr is None:
                pytest.skip("running as root and chattr (e2fsprogs) is not installed")
            made = subprocess.run([chattr, "+i", str(folder)], capture_output=True, text=True, check=False)
            if made.returncode != 0:
                pytest.skip(f"running as root and this file system refuses chattr +i: {made.stderr.strip()}")
            immutable = True
        yield folder
    finally:
        if immutable:
            subprocess.run([chattr, "-i", str(folder)], check=True)
        folder.chmod(0o700)


def test_read_only_directory_raises_and_leaves_no_temp_file(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    with _read_only(folder):
        with pytest.raises(ScenarioError) as info:
            save_scenario(ROUND_TRIP[0], folder / "s.json")
        assert "s.json" in str(info.value) and "cannot be written" in str(info.value)
        assert os.listdir(folder) == []


def test_read_only_directory_keeps_the_file_it_holds(tmp_path):
    """Saving over a file in a read-only folder fails and leaves the old file as it was."""
    folder = tmp_path / "ro"
    folder.mkdir()
    (folder / "s.json").write_text("old content", encoding="utf-8")
    with _read_only(folder):
        with pytest.raises(ScenarioError, match="s.json: cannot be written"):
            save_scenario(ROUND_TRIP[0], folder / "s.json")
        assert os.listdir(folder) == ["s.json"]
        assert (folder / "s.json").read_text(encoding="utf-8") == "old content"


def test_a_file_where_the_folder_should_be_raises_scenario_error(tmp_path):
    """A path through a file (ENOTDIR): refused for root as for anyone."""
    (tmp_path / "notes").write_text("a file, not a folder", encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        save_scenario(ROUND_TRIP[0], tmp_path / "notes" / "s.json")
    assert str(info.value).startswith("s.json: cannot be written")
    assert sorted(os.listdir(tmp_path)) == ["notes"]


def test_unwritable_directory_simulated(tmp_path, monkeypatch):
    """The read-only case where permissions cannot be enforced (root): creating the temporary file fails."""
    import gpuadvisor.core.formats.scenario as scenario_module

    def refuse(path, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(scenario_module, "open", refuse, raising=False)
    with pytest.raises(ScenarioError) as info:
        save_scenario(ROUND_TRIP[0], tmp_path / "s.json")
    assert str(info.value) == "s.json: cannot be written (Permission denied)"
    assert os.listdir(tmp_path) == []


def test_failed_rename_leaves_no_temp_file_and_keeps_the_old_file(tmp_path, monkeypatch):
    """Works as root too: the temporary file is written, then the rename fails."""
    path = tmp_path / "s.json"
    path.write_text("old content", encoding="utf-8")

    def refuse(src, dst):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(ScenarioError, match="s.json: cannot be written"):
        save_scenario(ROUND_TRIP[1], path)
    monkeypatch.undo()
    assert sorted(os.listdir(tmp_path)) == ["s.json"]
    assert path.read_text(encoding="utf-8") == "old content"


def test_missing_parent_directory_raises_scenario_error(tmp_path):
    with pytest.raises(ScenarioError, match="cannot be written"):
        save_scenario(ROUND_TRIP[0], tmp_path / "no" / "such" / "s.json")


# --- bad input -----------------------------------------------------------------------------

BAD_VALUES = [
    # (id, data, field, value shown)
    ("batch-negative", _with(workload={"batch_size": -1}), "workload.batch_size", "-1"),
    ("batch-zero", _with(workload={"batch_size": 0}), "workload.batch_size", "0"),
    ("batch-string", _with(workload={"batch_size": "eight"}), "workload.batch_size", "'eight'"),
    ("batch-money", _with(workload={"batch_size": "$8"}), "workload.batch_size", "'$8'"),
    (
        "prompt-beyond-range",
        _with(workload={"prompt_tokens": "1e12"}),
        "workload.prompt_tokens",
        "between 1 and",
    ),
    ("batch-true", _with(workload={"batch_size": True}), "workload.batch_size", "True"),
    ("batch-float", _with(workload={"batch_size": 8.5}), "workload.batch_size", "8.5"),
    ("batch-huge", _with(workload={"batch_size": 10**12}), "workload.batch_size", str(10**12)),
    ("seq-zero", _with(workload={"seq_len": 0}), "workload.seq_len", "0"),
    ("kind-unknown", _with(workload={"kind": "distill"}), "workload.kind", "'distill'"),
    ("weights-unknown", _with(workload={"weights": "fp6"}), "workload.weights", "'fp6'"),
    ("kv-unknown", _with(workload={"kv_cache": "nf4"}), "workload.kv_cache", "'nf4'"),
    ("optimizer-unknown", _with(workload={"optimizer": "lion"}), "workload.optimizer", "'lion'"),
    ("qlora-bf16", _with(workload={"kind": "qlora", "weights": "bf16"}), "workload.weights", "'bf16'"),
    ("full-nf4", _with(workload={"kind": "full_finetune", "weights": "nf4"}), "workload.weights", "'nf4'"),
    ("pretrain-int4", _with(workload={"kind": "pretrain", "weights": "int4"}), "workload.weights", "'int4'"),
    ("flag-string", _with(workload={"flash_attention": "yes"}), "workload.flash_attention", "'yes'"),
    ("lora-targets-empty", _with(workload={"lora_targets": []}), "workload.lora_targets", "()"),
    ("lora-rank-zero", _with(workload={"lora_rank": 0}), "workload.lora_rank", "0"),
    ("gpu-count-zero", _with(hardware={"gpu_count": 0}), "hardware.gpu_count", "0"),
    ("gpu-empty", _with(hardware={"gpu": ""}), "hardware.gpu", "''"),
    ("parallelism-unknown", _with(hardware={"parallelism": "expert"}), "hardware.parallelism", "'expert'"),
    ("utilization-1.5", _with(budget={"utilization": 1.5}), "budget.utilization", "1.5"),
    ("price-negative", _with(budget={"price": -2}), "budget.price", "-2"),
    ("price-word", _with(budget={"price": "cheap"}), "budget.price", "'cheap'"),
    ("max-usd-negative", _with(budget={"max_usd_per_hour": -1.0}), "budget.max_usd_per_hour", "-1.0"),
    ("pue-below-one", _with(budget={"pue": 0.9}), "budget.pue", "0.9"),
    ("purchase-unknown", _with(budget={"purchase": "lease"}), "budget.purchase", "'lease'"),
    ("fragmentation-big", _with(overhead={"fragmentation": 2.0}), "overhead.fragmentation", "2.0"),
    ("mfu-big", _with(efficiency={"mfu": 1.5}), "efficiency.mfu", "1.5"),
    ("params-too-small", {"model": {"parameters": 1000}}, "model.parameters", "1000"),
    ("params-string", {"model": {"parameters": "seven billion"}}, "model.parameters", "'seven billion'"),
    ("params-bool", {"model": {"parameters": True}}, "model.parameters", "True"),
    ("format-unknown", _with(format="other-tool"), "format", "'other-tool'"),
    ("version-zero", _with(version=0), "version", "0"),
    ("version-string", _with(version="1"), "version", "'1'"),
    ("name-number", _with(name=5), "name", "5"),
    ("notes-list", _with(notes=["a"]), "notes", "['a']"),
    ("section-list", _with(workload=[1, 2]), "workload", "'list'"),
    ("section-string", _with(hardware="h100"), "hardware", "'str'"),
    ("model-string", {"model": "llama-2-7b"}, "model", "'str'"),
    ("architecture-list", {"model": {"architecture": [32, 4096]}}, "model.architecture", "'list'"),
    ("top-level-list", [MINIMAL], "scenario", "'list'"),
    ("top-level-number", 3, "scenario", "'int'"),
]


@pytest.mark.parametrize("data, field, shown", [b[1:] for b in BAD_VALUES], ids=[b[0] for b in BAD_VALUES])
def test_bad_values_name_field_and_value(tmp_path, data, field, shown):
    with pytest.raises(ScenarioError) as info:
        load_scenario(_write(tmp_path, data))
    message = str(info.value)
    assert message.startswith(field + ":"), message
    assert info.value.field == field
    assert shown in message, message
    assert "\n" not in message


def test_scenario_error_is_an_input_error():
    with pytest.raises(InputError):
        scenario_from_dict(_with(workload={"batch_size": 0}))


@pytest.mark.parametrize(
    "model, got",
    [
        ({"preset": "llama-2-7b", "parameters": 7e9}, "preset, parameters"),
        ({"preset": "llama-2-7b", "architecture": ARCHITECTURE}, "preset, architecture"),
        ({"hf_config": "c.json", "parameters": 7e9}, "hf_config, parameters"),
        ({}, None),
        ({"name": "only a name"}, None),
    ],
)
def test_exactly_one_model_source(model, got):
    with pytest.raises(ScenarioError) as info:
        scenario_from_dict({"model": model})
    assert info.value.field == "model"
    assert "exactly one" in str(info.value)
    if got:
        assert got in str(info.value)


def test_no_model_section_at_all():
    with pytest.raises(ScenarioError, match="^model: give exactly one"):
        scenario_from_dict({"workload": {"batch_size": 1}})


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"model": {"preset": "llama-2-7b"},,}', "line 1, column 36"),
        ('{\n  "model": {\n    "preset": "llama-2-7b"\n  \n', "line 5, column 1"),
        ('{\n  "model": {"preset": \'x\'}\n}', "line 2, column 23"),
    ],
)
def test_malformed_json_names_line_and_column(tmp_path, text, expected):
    with pytest.raises(ScenarioError) as info:
        load_scenario(_write(tmp_path, text, "broken.json"))
    message = str(info.value)
    assert message.startswith("broken.json: is not valid JSON")
    assert expected in message


@pytest.mark.parametrize("text", ["", "   \n\t\n"])
def test_empty_file(tmp_path, text):
    with pytest.raises(ScenarioError, match="^empty.json: is empty"):
        load_scenario(_write(tmp_path, text, "empty.json"))


def test_non_utf8_file(tmp_path):
    path = tmp_path / "latin1.json"
    path.write_bytes('{"name": "caf\u00e9", "model": {"preset": "llama-2-7b"}}'.encode("latin-1"))
    with pytest.raises(ScenarioError, match="^latin1.json: is not UTF-8"):
        load_scenario(path)


def test_binary_file(tmp_path):
    path = tmp_path / "image.json"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe")
    with pytest.raises(ScenarioError, match="^image.json:"):
        load_scenario(path)


def test_missing_file(tmp_path):
    with pytest.raises(ScenarioError, match="^nope.json: file not found"):
        load_scenario(tmp_path / "nope.json")


def test_directory_instead_of_file(tmp_path):
    with pytest.raises(ScenarioError, match="is a folder, not a file"):
        load_scenario(tmp_path)


@pytest.mark.parametrize(
    "text",
    [
        '{"model": {"parameters": NaN}}',
        '{"model": {"parameters": Infinity}}',
        '{"model": {"preset": "llama-2-7b"}, "budget": {"utilization": NaN}}',
    ],
)
def test_non_finite_numbers_rejected(text):
    with pytest.raises(ScenarioError):
        loads_scenario(text)


@pytest.mark.parametrize(
    "model, field",
    [
        ({"preset": ["llama-2-7b"]}, "model.preset"),
        ({"hf_config": 5}, "model.hf_config"),
        ({"preset": "llama-2-7b", "name": 5}, "model.name"),
    ],
)
def test_model_source_values_must_be_text(model, field):
    with pytest.raises(ScenarioError) as info:
        scenario_from_dict({"model": model})
    assert info.value.field == field


@pytest.mark.parametrize("targets", [5, {"q_proj": 1}])
def test_lora_targets_must_be_a_list_or_text(targets):
    with pytest.raises(ScenarioError) as info:
        scenario_from_dict(_with(workload={"kind": "lora", "lora_targets": targets}))
    assert info.value.field == "workload.lora_targets"


def test_round_trip_with_list_lora_targets_from_python(tmp_path):
    """Regression: a list given from Python is stored as a tuple (equal after loading, hashable)."""
    scenario = Scenario(
        model=ModelSource(preset="llama-2-7b"),
        workload=Workload(kind="lora", lora_targets=["q_proj", "v_proj"]),
    )
    path = tmp_path / "s.json"
    save_scenario(scenario, path)
    assert load_scenario(path) == scenario
    hash(scenario.workload)


def test_kbit_preparation_is_written_only_when_stated_and_read_back(tmp_path):
    """``workload.kbit_preparation`` (QLoRA: PEFT's prepare_model_for_kbit_training or not): left out
    of the file while it is the engine's habit, so files without it stay as they were; stated, it
    is kept; anything but true or false is refused in the user's words."""
    habit = Scenario(model=ModelSource(preset="llama-2-7b"), workload=Workload(kind="qlora", weights="nf4"))
    assert "kbit_preparation" not in scenario_to_dict(habit)["workload"]
    stated = scenario_from_dict(
        {**MINIMAL, "workload": {"kind": "qlora", "weights": "nf4", "kbit_preparation": False}}
    )
    assert stated.workload.kbit_preparation is False
    path = tmp_path / "s.json"
    save_scenario(stated, path)
    assert load_scenario(path) == stated
    assert json.loads(path.read_text())["workload"]["kbit_preparation"] is False
    with pytest.raises(ScenarioError, match="workload.kbit_preparation.*true or false"):
        scenario_from_dict(
            {**MINIMAL, "workload": {"kind": "qlora", "weights": "nf4", "kbit_preparation": "yes"}}
        )


# --- measured runs saved with the scenario -------------------------------------------------------


def _run(i, **over):
    from gpuadvisor.core.formats.measurements import Measurement
    from gpuadvisor.core.formats.scenario import scenario_snapshot

    base = dict(
        id=f"m{i}",
        gpu_id="h100-sxm",
        kind="inference",
        model="llama-2-7b",
        engine="vllm",
        batch_size=8,
        tokens_per_s=1400.0 + i,
        peak_memory_gib=60.5,
        source="nvidia-smi log",
        note="vLLM 0.6",
        measured_on="2026-11-20",
        scenario=scenario_snapshot(scenario_from_dict(MINIMAL)),
    )
    base.update(over)
    return Measurement(**base)


def test_measurements_round_trip(tmp_path):
    from dataclasses import replace

    s = replace(
        scenario_from_dict(MINIMAL),
        measurements=(_run(1), _run(2, tokens_per_s=None, seconds_per_step=2.0, tokens_per_step=512.0)),
    )
    path = tmp_path / "with-runs.json"
    save_scenario(s, path)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert [m["id"] for m in data["measurements"]] == ["m1", "m2"]
    assert "measurements" not in data["measurements"][0]["scenario"]  # snapshots never nest the runs
    back = load_scenario(path)
    assert back == s and back.measurements[1].throughput_tokens_per_s == 256.0
    assert back.measurements[0].scenario_fingerprint == s.measurements[0].scenario_fingerprint
    assert "measurements" not in scenario_to_dict(
        scenario_from_dict(MINIMAL)
    )  # older files stay as they were


def test_files_without_measurements_still_load():
    s = scenario_from_dict(MINIMAL)
    assert s.measurements == () and s.warnings == ()


@pytest.mark.parametrize(
    "entries, field, needle",
    [
        ("not a list", "measurements", "must be a list"),
        ([{"only_id": True}], "measurements[0]", "is missing gpu_id, kind, model"),
        ([None], "measurements[0]", "must be a JSON object"),
        (["ok", "ok", {"tokens_per_s": -1}], "measurements[2].tokens_per_s", "must be a number > 0"),
        (["ok", {"tokens_per_sec": 5}], "measurements[1]", "unknown key(s) tokens_per_sec"),
        (["ok", {"batch_size": "8"}], "measurements[1].batch_size", "whole number"),
        (["ok", {"id": "m1"}], "measurements[1].id", "duplicates measurements[0]"),
    ],
)
def test_bad_measurements_name_the_entry(entries, field, needle):
    def entry(i, e):
        good = {k: v for k, v in _run(i + 1).to_dict().items() if k != "scenario_fingerprint"}
        if e == "ok":
            return good
        if e is None:
            return None
        if e == {"only_id": True}:
            return {"id": "m1"}
        return {**good, **e}

    if isinstance(entries, list):
        entries = [entry(i, e) for i, e in enumerate(entries)]
    with pytest.raises(ScenarioError) as info:
        scenario_from_dict(_with(measurements=entries))
    assert info.value.field == field, str(info.value)
    assert needle in str(info.value)
