"""Fuzzing every reader of a file gpuadvisor did not write itself, and of the files it did.

Hypothesis generates hostile versions of every kind of file (the same examples every run, the suite's hypothesis profile: a run is
reproducible and a failure is reported with its example): valid files with values swapped for
hostile ones (type confusion, 1e308, 5e-324, negative zero, 30-digit integers, 300-character and
1-million-character text, lone surrogates, NUL, deep nesting), truncated and bit-flipped bytes, and
headers whose counts lie. Every reader must either return a usable result or raise the project's
one-line :class:`InputError` naming the file; the loaders of stored files must never raise at all
(a damaged file is set aside with a one-line warning). A usable result is then taken one step on:
a scenario is estimated and its JSON must hold finite numbers only, a model's memory breakdown
must be finite, an imported catalog is built.

Cases per reader are in ``CASES``; the whole file runs in well under a minute.
"""

from __future__ import annotations

import json
import math
import os
import struct
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gguf import GGUFWriter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuadvisor.core.errors import InputError
from gpuadvisor.core.estimation.calibration_file import profile_from_dict
from gpuadvisor.core.estimation.estimate import estimate
from gpuadvisor.core.estimation.memory import MemoryModel
from gpuadvisor.core.formats.catalog_exchange import export_text, import_file
from gpuadvisor.core.formats.gguf_file import model_from_gguf
from gpuadvisor.core.formats.hf_import import model_from_hf_config, summarize_safetensors
from gpuadvisor.core.formats.measurements import Measurement, measurements_to_json
from gpuadvisor.core.formats.pricelists import read_price_list
from gpuadvisor.core.formats.scenario import default_scenario, load_scenario, scenario_to_dict
from gpuadvisor.core.formats.smi_log import diagnose, read_nvidia_smi_log
from gpuadvisor.core.formats.user_catalog import (
    KindEdits,
    UserCatalog,
    build_catalogs,
    bundled_rows,
    diff,
    dumps,
)
from gpuadvisor.core.presentation.serialize import estimate_to_dict
from gpuadvisor.core.presentation.text import render_estimate
from gpuadvisor.core.specs.hardware import bundled_catalog_dir, load_gpu_catalog
from gpuadvisor.core.specs.instances import InstanceType, instance_price_range, offers_for
from gpuadvisor.core.specs.presets import load_model_catalog
from gpuadvisor.core.specs.workload import Workload
from gpuadvisor.storage import (
    load_calibration,
    load_effective_catalogs,
    load_measurements,
    load_settings,
    load_user_catalog,
    save_settings,
)
from gpuadvisor.storage.instances_store import load_instances, save_imported_instances
from gpuadvisor.storage.paths import user_paths

CASES = {
    "scenario": 300,
    "hf_config": 200,
    "safetensors": 200,
    "gguf": 250,
    "catalog_import": 200,
    "price_list": 150,
    "smi_log": 150,
    "measurements": 150,
    "calibration": 150,
    "settings": 100,
    "user_catalog": 150,
    "instances": 150,
}
assert sum(CASES.values()) >= 2000
# A failing example may hold a 140,000-character cell: report it instead of failing on its size.
pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")

HF = Path(__file__).resolve().parents[1] / "data" / "hf"
GPUS = load_gpu_catalog()
MODELS = load_model_catalog()
GPU_IDS = {g.id for g in GPUS}
WORK = Path(tempfile.mkdtemp(prefix="gpuadvisor-fuzz-"))


def _settings(name: str) -> settings:
    return settings(
        max_examples=CASES[name],
        database=None,
        deadline=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.function_scoped_fixture,
        ],
    )


# --- hostile values ---------------------------------------------------------------------------------
HOSTILE_NUMBERS = st.sampled_from(
    [0, -1, 1, 2**31, 2**63, 10**23, -(10**23), 1e308, -1e308, 5e-324, -0.0, 0.5, 1e-300, 1e300, 3.5, 7e9]
)
HOSTILE_TEXT = st.one_of(
    st.sampled_from(
        ["", " ", "x" * 300, "\u00e9t\u00e9", "a\nb", "\ud800", "~nosuchuser/x", "../../etc", "NaN", "1e999"]
    ),
    st.text(max_size=20),
)
HOSTILE_LEAF = st.one_of(
    st.none(), st.booleans(), HOSTILE_NUMBERS, HOSTILE_TEXT, st.integers(), st.floats(allow_nan=False)
)
HOSTILE_VALUE = st.recursive(
    HOSTILE_LEAF,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=8,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, *rest = path
    if isinstance(value, dict):
        return {**value, head: _replace(value[head], tuple(rest), new)}
    copy = list(value)
    copy[head] = _replace(copy[head], tuple(rest), new)
    return copy


@st.composite
def mutated_json(draw, base: Any) -> str:
    """``base`` with one to three values swapped for hostile ones, as JSON text; sometimes raw damage."""
    doc = base
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(doc)
        doc = _replace(doc, draw(st.sampled_from(paths)), draw(HOSTILE_VALUE))
    text = json.dumps(doc, ensure_ascii=draw(st.booleans()))
    return draw(raw_damage(text)) if draw(st.integers(0, 4)) == 0 else text


@st.composite
def raw_damage(draw, text: str) -> str:
    kind = draw(st.sampled_from(["truncate", "deep", "bigint", "nan", "insert"]))
    cut = draw(st.integers(0, len(text)))
    if kind == "truncate":
        return text[:cut]
    if kind == "deep":
        depth = draw(st.sampled_from([70, 1000, 5000]))
        return text[:cut] + "[" * depth + "]" * depth + text[cut:]
    if kind == "bigint":
        return text.replace(":", ": " + "9" * draw(st.sampled_from([30, 5000])) + " ,", 1)
    if kind == "nan":
        return text.replace(": 1", ": NaN", 1).replace(": 0", ": Infinity", 1)
    return text[:cut] + draw(st.sampled_from(["\x00", "\ufeff", '"', "}", "\\ud800"])) + text[cut:]


@st.composite
def damaged_bytes(draw, data: bytes) -> bytes:
    """Bit flips, truncation, 64-bit counts overwritten with lies, or appended junk."""
    buf = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "truncate", "u64", "u32", "append"]))
        if not buf:
            break
        at = draw(st.integers(0, len(buf) - 1))
        if kind == "flip":
            buf[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "truncate":
            del buf[at:]
        elif kind == "u64" and at + 8 <= len(buf):
            buf[at : at + 8] = struct.pack(
                "<Q", draw(st.sampled_from([0, 1, 2**31, 2**62, 2**63, 2**64 - 1]))
            )
        elif kind == "u32" and at + 4 <= len(buf):
            buf[at : at + 4] = struct.pack("<I", draw(st.sampled_from([0, 9, 13, 2**31, 2**32 - 1])))
        elif kind == "append":
            buf += draw(st.binary(max_size=64))
    return bytes(buf)


def _write(name: str, data: bytes | str) -> Path:
    path = WORK / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data)
    return path


def _one_line(exc: InputError) -> None:
    text = str(exc)
    assert "\n" not in text and "Traceback" not in text and len(text) < 1500, text[:300]


def _read_or_refuse(read: Callable[[], Any]) -> Any:
    """The reader's result, or None after a one-line InputError; any other exception fails the test."""
    try:
        return read()
    except InputError as exc:
        _one_line(exc)
        return None


def _finite(value: Any) -> None:
    """Every number in a JSON-ready value is finite (no NaN or infinity reaches the user)."""
    json.dumps(value, allow_nan=False)


# --- scenario ---------------------------------------------------------------------------------------
SCENARIO_BASES = [
    scenario_to_dict(default_scenario()),
    {
        "model": {"preset": "mixtral-8x7b"},
        "workload": {"kind": "pretrain", "seq_len": 4096, "train_tokens": 1e9},
        "hardware": {"gpu": "h100-sxm", "gpu_count": 16, "parallelism": "zero3", "expert_parallel": 4},
    },
    {
        "model": {"parameters": 7e9},
        "workload": {"kind": "inference", "prompt_tokens": 512, "output_tokens": 128},
        "hardware": {"gpu": "rtx-4090"},
        "budget": {"max_usd_per_hour": 10, "price": 1.5},
    },
    {
        "model": {
            "architecture": {
                "num_layers": 4,
                "hidden_size": 256,
                "num_attention_heads": 4,
                "intermediate_size": 512,
                "vocab_size": 1000,
            }
        },
        "workload": {"kind": "lora", "batch_size": 2},
        "hardware": {"gpu": "a100-80gb", "gpu_count": 2},
    },
]


@_settings("scenario")
@given(st.sampled_from(range(len(SCENARIO_BASES))).flatmap(lambda i: mutated_json(SCENARIO_BASES[i])))
def test_fuzz_scenario(text):
    path = _write("scenario.json", text)
    scenario = _read_or_refuse(lambda: load_scenario(path))
    if scenario is None:
        return
    hw = scenario.hardware
    gpus = [hw.gpu] if hw.gpu in GPU_IDS else ["h100-sxm"]
    est = _read_or_refuse(lambda: estimate(scenario, GPUS, MODELS, gpu_ids=gpus))
    if est is None:
        return
    _finite(estimate_to_dict(est))
    render_estimate(est)


# --- Hugging Face config.json and safetensors -------------------------------------------------------
CONFIGS = sorted(HF.glob("*/config.json"))


@_settings("hf_config")
@given(st.sampled_from(CONFIGS).flatmap(lambda p: mutated_json(json.loads(p.read_text(encoding="utf-8")))))
def test_fuzz_hf_config(text):
    path = _write("hf/config.json", text)
    spec = _read_or_refuse(lambda: model_from_hf_config(path))
    if spec is None:
        return
    for kind in ("inference", "full_finetune"):
        bd = _read_or_refuse(lambda kind=kind: MemoryModel(spec, Workload(kind=kind)).breakdown())
        if bd is not None:
            assert all(math.isfinite(v) and v >= 0 for v in bd.gib().values()), bd


DTYPES = ["F32", "F16", "BF16", "I32", "U8", "F8_E4M3", "F4", "BOGUS", "", 7]


@st.composite
def safetensors_files(draw) -> bytes:
    header: dict[str, Any] = {}
    offset = 0
    for i in range(draw(st.integers(0, 4))):
        shape = draw(st.lists(st.sampled_from([0, 1, 2, 3, 8, 2**40, -1]), max_size=3))
        dtype = draw(st.sampled_from(DTYPES))
        size = draw(st.sampled_from([0, 4, 8, 12, 2**41]))
        entry: Any = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        if draw(st.integers(0, 5)) == 0:
            entry = draw(HOSTILE_VALUE)
        header[draw(st.sampled_from([f"w{i}", "__metadata__", f"h.{i}.attn.bias", "x.inv_freq"]))] = entry
        offset += size if isinstance(size, int) and size < 1000 else 0
    raw = json.dumps(header).encode()
    declared = draw(st.sampled_from([len(raw), len(raw) + 5, 0, 2**63, len(raw) - 1]))
    data = struct.pack("<Q", max(declared, 0)) + raw + bytes(draw(st.integers(0, 64)))
    return draw(damaged_bytes(data)) if draw(st.integers(0, 3)) == 0 else data


@_settings("safetensors")
@given(safetensors_files())
def test_fuzz_safetensors_header(data):
    path = _write("st/model.safetensors", data)
    summary = _read_or_refuse(lambda: summarize_safetensors(path))
    if summary is not None:
        assert summary.parameters >= 0 and summary.bytes_on_disk >= 0


# --- GGUF -------------------------------------------------------------------------------------------
def _tiny_gguf() -> bytes:
    path = WORK / "seed.gguf"
    w = GGUFWriter(path, "llama")
    w.add_name("tiny")
    w.add_block_count(2)
    w.add_context_length(2048)
    w.add_embedding_length(64)
    w.add_feed_forward_length(128)
    w.add_head_count(4)
    w.add_head_count_kv(2)
    w.add_token_list([f"t{i}" for i in range(100)])
    w.add_tensor("token_embd.weight", np.zeros((100, 64), dtype=np.float32))
    w.add_tensor("blk.0.attn_q.weight", np.zeros((64, 64), dtype=np.float16))
    w.add_tensor("output_norm.weight", np.ones(64, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path.read_bytes()


GGUF_SEED = _tiny_gguf()


def _gguf_string(text: bytes) -> bytes:
    return struct.pack("<Q", len(text)) + text


@st.composite
def gguf_files(draw) -> bytes:
    if draw(st.booleans()):
        return draw(damaged_bytes(GGUF_SEED))
    # Built from scratch: metadata of any type (wrong types for the keys the model needs), lying counts.
    kvs = [_gguf_string(b"general.architecture") + struct.pack("<I", 8) + _gguf_string(b"llama")]
    for key in (
        "llama.block_count",
        "llama.embedding_length",
        "llama.attention.head_count",
        "llama.vocab_size",
    ):
        kind = draw(st.sampled_from(["u32", "zero", "string", "f32", "array", "huge"]))
        k = _gguf_string(key.encode())
        if kind == "u32":
            kvs.append(k + struct.pack("<II", 4, draw(st.sampled_from([1, 2, 4, 64]))))
        elif kind == "zero":
            kvs.append(k + struct.pack("<II", 4, 0))
        elif kind == "string":
            kvs.append(k + struct.pack("<I", 8) + _gguf_string(b"eight"))
        elif kind == "f32":
            kvs.append(k + struct.pack("<If", 6, draw(st.sampled_from([1.5, float("nan"), float("inf")]))))
        elif kind == "array":
            count = draw(st.sampled_from([0, 3, 2**63, 2**40]))
            kvs.append(k + struct.pack("<IIQ", 9, 4, count) + struct.pack("<3I", 1, 2, 3))
        else:
            kvs.append(k + struct.pack("<IQ", 10, 2**64 - 1))
    tensors = draw(st.sampled_from([0, 1, 2**62]))
    head = b"GGUF" + struct.pack("<IQQ", 3, tensors, len(kvs))
    body = b"".join(kvs)
    if tensors == 1:
        dims = draw(st.sampled_from([1, 4, 5, 2**31]))
        body += _gguf_string(b"token_embd.weight") + struct.pack("<I", dims)
        body += struct.pack("<QQ", 64, draw(st.sampled_from([100, 2**40]))) + struct.pack(
            "<IQ", draw(st.sampled_from([0, 1, 12, 999])), 0
        )
    return head + body + bytes(draw(st.integers(0, 128)))


@_settings("gguf")
@given(gguf_files())
def test_fuzz_gguf(data):
    path = _write("model.gguf", data)
    spec = _read_or_refuse(lambda: model_from_gguf(path))
    if spec is not None:
        bd = MemoryModel(spec, Workload(kind="inference", weights="q4_k_m")).breakdown()
        assert all(math.isfinite(v) and v >= 0 for v in bd.gib().values())


# --- catalog import, price lists, nvidia-smi logs ----------------------------------------------------
GPU_ROWS = bundled_rows("gpus")[:6]
CSV_SEED = export_text("gpus", GPU_ROWS, "csv", "2026-11-30")
JSON_SEED = json.loads(export_text("gpus", GPU_ROWS, "json", "2026-11-30"))


@st.composite
def catalog_files(draw) -> tuple[str, str]:
    if draw(st.booleans()):
        return "c.json", draw(mutated_json(JSON_SEED))
    lines = CSV_SEED.splitlines()
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        cells = lines[i].split(",")
        j = draw(st.integers(0, len(cells) - 1))
        cells[j] = draw(
            st.sampled_from(
                ['"', "x" * 250, "1e308", "-5", "", "NaN", '"a,b"', "\x00", "9" * 40, "y" * 140_000]
            )
        )
        lines[i] = ",".join(cells)
    text = "\n".join(lines)
    return "c.csv", draw(raw_damage(text)) if draw(st.integers(0, 4)) == 0 else text


@_settings("catalog_import")
@given(catalog_files())
def test_fuzz_catalog_import(named):
    name, text = named
    path = _write(name, text)
    report = _read_or_refuse(lambda: import_file("gpus", path, bundled_rows("gpus")))
    if report is None or not report.changed:
        return
    user = UserCatalog().with_edits("gpus", diff("gpus", report.rows))
    built = _read_or_refuse(lambda: build_catalogs(user))
    if built is not None:
        for gpu in built[0]:
            assert len(gpu.name) <= 200 and math.isfinite(gpu.memory_gib_usable)


GPUHUNT_HEADER = (
    "instance_name,location,price,cpu,memory,gpu_count,gpu_name,gpu_memory,spot,disk_size,gpu_vendor,flags"
)
SKYPILOT_HEADER = (
    "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,SpotPrice,Region,GpuInfo"
)
PRICE_CELLS = st.sampled_from(
    [
        "H100",
        "A100",
        "8",
        "0",
        "-1",
        "1e308",
        "98.3",
        "",
        "x" * 300,
        "NaN",
        "inf",
        "True",
        "maybe",
        "9" * 40,
        "{'Gpus': [{'MemoryInfo': {'SizeInMiB': 81920}}]}",
        "{" * 500,
        "{'a': " + "[" * 300 + "]" * 300 + "}",
        '"',
        "c" * 140_000,
    ]
)


@st.composite
def price_lists(draw) -> str:
    header = draw(st.sampled_from([GPUHUNT_HEADER, SKYPILOT_HEADER, "a,b,c"]))
    width = header.count(",") + 1
    rows = [
        ",".join(draw(st.lists(PRICE_CELLS, min_size=width - 1, max_size=width + 1)))
        for _ in range(draw(st.integers(0, 6)))
    ]
    text = "\n".join([header, *rows]) + "\n"
    return draw(raw_damage(text)) if draw(st.integers(0, 5)) == 0 else text


@_settings("price_list")
@given(price_lists())
def test_fuzz_price_list(text):
    path = _write("aws.csv", text)
    imported = _read_or_refuse(lambda: read_price_list(path, GPUS))
    if imported is not None:
        for stats in imported.prices.values():
            for s in (stats.on_demand, stats.spot):
                assert s is None or (math.isfinite(s.low) and 0 < s.low <= s.high <= 1000)


SMI_HEADER = (
    "timestamp, name, memory.used [MiB], memory.total [MiB], utilization.gpu [%], utilization.memory [%]"
)
SMI_CELLS = st.sampled_from(
    [
        "2026/11/20 10:00:01.123",
        "2026-13-45",
        "NVIDIA H100",
        "1000 MiB",
        "81559 MiB",
        "-5 MiB",
        "1e308 MiB",
        "50 %",
        "150 %",
        "[N/A]",
        "",
        "9" * 40,
        "z" * 300,
        '"',
        "nan",
        "s" * 140_000,
    ]
)


@st.composite
def smi_logs(draw) -> str:
    rows = [
        ", ".join(draw(st.lists(SMI_CELLS, min_size=5, max_size=7))) for _ in range(draw(st.integers(0, 8)))
    ]
    text = "\n".join([SMI_HEADER, *rows]) + "\n"
    return draw(raw_damage(text)) if draw(st.integers(0, 5)) == 0 else text


@_settings("smi_log")
@given(smi_logs())
def test_fuzz_smi_log(text):
    path = _write("smi.csv", text)
    log = _read_or_refuse(lambda: read_nvidia_smi_log(path))
    if log is not None:
        summary = log.summary()
        for g in summary.gpus:
            assert math.isfinite(g.peak_memory_mib) and g.peak_memory_mib >= 0
        diagnose(summary)


# --- the stored files: never a crash ------------------------------------------------------------------
MEASUREMENTS_SEED = json.loads(
    measurements_to_json(
        [
            Measurement(
                id="m1", gpu_id="h100-sxm", kind="inference", model="llama-3.1-8b", tokens_per_s=1000.0
            ),
            Measurement(
                id="m2",
                gpu_id="a100-80gb",
                kind="lora",
                model="x",
                peak_memory_gib=40.0,
                seq_len=2048,
                scenario=scenario_to_dict(default_scenario()),
            ),
        ]
    )
)
CALIBRATION_SEED = {
    "format": "gpuadvisor-calibration",
    "schema_version": 1,
    "created": "2026-11-30",
    "fits": [
        {
            "gpu_id": "h100-sxm",
            "engine": "vllm",
            "factor_name": "bandwidth_efficiency",
            "value": 0.6,
            "n_measurements": 3,
            "error_before_pct": 12.0,
            "error_after_pct": 1.0,
            "measurement_ids": ["a", "b", "c"],
        }
    ],
}
SETTINGS_SEED = {
    "version": 1,
    "recent_files": ["/home/someone/a.json"],
    "page_size": "A4",
    "stale_price_months": 6,
    "splitter_sizes": {"main": [300, 600]},
    "calibration_enabled": False,
    "theme": "dark",
}
USER_CATALOG_SEED = json.loads(
    dumps(
        UserCatalog(
            gpus=KindEdits(
                overrides={"h100-sxm": {"tdp_w": "650"}},
                added=(dict(GPU_ROWS[0], id="mine"),),
                deleted=("rtx-4090",),
            )
        )
    )
)


def _stored(name: str, text: str, folder: str = "data") -> Path:
    home = Path(os.environ["GPUADVISOR_HOME"])
    path = home / folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    for old in path.parent.iterdir():  # a fresh folder per case: earlier set-aside copies removed
        old.unlink()
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    return path


def _no_crash(warnings: list[str]) -> None:
    for w in warnings:
        assert "\n" not in w and len(w) < 2500, w[:300]


@_settings("measurements")
@given(mutated_json(MEASUREMENTS_SEED))
def test_fuzz_stored_measurements(text):
    _stored("measurements.json", text)
    loaded = load_measurements()
    _no_crash(loaded.warnings)
    assert loaded.warnings or isinstance(loaded.value, list)


@_settings("calibration")
@given(mutated_json(CALIBRATION_SEED))
def test_fuzz_stored_calibration(text):
    _stored("calibration.json", text)
    loaded = load_calibration()
    _no_crash(loaded.warnings)
    if loaded.value is not None:
        _read_or_refuse(lambda: profile_from_dict(json.loads(text)))


@_settings("settings")
@given(mutated_json(SETTINGS_SEED))
def test_fuzz_stored_settings(text):
    _stored("settings.json", text, folder="config")
    settings_, warnings = load_settings()
    _no_crash(warnings)
    save_settings(settings_)  # what was loaded can always be saved back
    assert load_settings()[1] == []


@_settings("user_catalog")
@given(mutated_json(USER_CATALOG_SEED))
def test_fuzz_stored_user_catalog(text):
    _stored("user-catalog.json", text)
    loaded = load_user_catalog()
    _no_crash(loaded.warnings)
    gpus, models, warnings = load_effective_catalogs()
    _no_crash(warnings)
    assert len(gpus) > 0 and len(models) > 0


# The bundled snapshot's header and a few of its rows (H100s of three providers among them).
INSTANCES_SEED = "\n".join(
    (bundled_catalog_dir() / "instances.csv").read_text(encoding="utf-8").splitlines()[:12]
)
INSTANCE_CELLS = st.sampled_from(
    ['"', "x" * 250, "1e308", "1e5", "-5", "0", "", "NaN", "inf", '"a,b"', "\x00", "9" * 40, "z" * 140_000]
)
MINE = InstanceType("lambda", "gpu_8x_h100_sxm5", "h100-sxm", 8, 19.99, None, ("us-east-1",), "2026-11-29")


@st.composite
def instance_lists(draw) -> str:
    """The user's ``instances.csv`` with one to three cells (or the metadata line) made hostile."""
    lines = INSTANCES_SEED.splitlines()
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        cells = lines[i].split(",")
        j = draw(st.integers(0, len(cells) - 1))
        cells[j] = draw(INSTANCE_CELLS)
        lines[i] = ",".join(cells)
    text = "\n".join(lines) + "\n"
    return draw(raw_damage(text)) if draw(st.integers(0, 4)) == 0 else text


@_settings("instances")
@given(instance_lists())
def test_fuzz_stored_instances(text):
    path = _stored("instances.csv", text)
    snapshot, warnings = load_instances()
    _no_crash(warnings)
    assert len(snapshot) > 0  # the bundled snapshot at least
    for t in snapshot.types:  # what was accepted is bounded, and prices a setup finitely
        assert len(t.instance_type) <= 200 and len(t.provider) <= 200
        found = instance_price_range(offers_for(snapshot, t.gpu_id, 8), 8)
        if found is not None:
            r = found[0]
            assert all(math.isfinite(x) and 0 < x <= 100_000 for x in (r.low, r.expected, r.high))
    # An import after it always works: a damaged file is set aside under the lock, never in the way.
    saved = save_imported_instances([MINE], "2026-11-29")
    assert path.is_file() and MINE in saved.snapshot.types


@pytest.fixture(autouse=True)
def _fresh_home_per_test(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUADVISOR_HOME", str(tmp_path / "home"))
    assert user_paths().data_dir.parent == tmp_path / "home"


def test_a_megabyte_key_in_a_stored_file_is_named_by_its_start():
    """Found by the fuzzer: an unknown key of any length, or thousands of them, in a stored
    measurements file made a warning as long as the file. The warning names at most a few keys,
    each by its first characters, and counts the rest."""
    from gpuadvisor.core.errors import MAX_KEY_CHARS, MAX_NAMED_KEYS

    doc = json.loads(MEASUREMENTS_SEED) if isinstance(MEASUREMENTS_SEED, str) else dict(MEASUREMENTS_SEED)
    doc["a" * 1_000_000] = 1  # sorts first, so it is named
    for i in range(3_000):
        doc[f"extra{i}"] = i
    _stored("measurements.json", json.dumps(doc))
    loaded = load_measurements()
    (warning,) = loaded.warnings
    _no_crash(loaded.warnings)
    assert "a" * MAX_KEY_CHARS + "..." in warning and "a" * (MAX_KEY_CHARS + 1) not in warning
    assert f"and {3_001 - MAX_NAMED_KEYS:,} more" in warning
