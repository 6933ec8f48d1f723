"""The bundled catalogs: required entries, sane figures, and the seed article's corrections."""

from pathlib import Path

import pytest

from gpuadvisor.core.errors import CatalogError
from gpuadvisor.core.formats.hf_import import model_from_hf_config
from gpuadvisor.core.specs.hardware import load_gpu_catalog
from gpuadvisor.core.specs.presets import load_model_catalog

REQUIRED_GPUS = [
    "rtx-4090",
    "rtx-a6000",
    "l40",
    "l40s",
    "a100-40gb",
    "a100-80gb",
    "a100-80gb-pcie",
    "h100-pcie",
    "h100-sxm",
    "h200",
    "b200",
    "v100-16gb",
    "v100-32gb",
    "t4",
    "a10g",
    "l4",
    "a40",
    "rtx-3090",
    "rtx-5090",
    "h100-nvl",
    "mi300x",
]
REQUIRED_MODELS = [
    "gpt2-xl",
    "llama-3.1-8b",
    "llama-2-13b",
    "qwen3-32b",
    "llama-3.1-70b",
    "llama-2-7b",
    "llama-2-70b",
    "llama-3.1-405b",
    "llama-3.2-1b",
    "llama-3.2-3b",
    "mistral-7b",
    "mixtral-8x7b",
    "gemma-2-9b",
    "gemma-2-27b",
    "phi-3-mini",
    "falcon-7b",
    "gpt-j-6b",
    "tinyllama-1.1b",
    "bert-large",
    "qwen3-8b",
]


@pytest.fixture(scope="module")
def gpus():
    return load_gpu_catalog()


@pytest.fixture(scope="module")
def models():
    return load_model_catalog()


def test_gpu_catalog_has_required_ids(gpus):
    assert len(gpus) >= 20
    missing = [g for g in REQUIRED_GPUS if g not in gpus.gpus]
    assert not missing
    assert gpus.meta.schema_version == 1 and gpus.meta.updated


def test_every_gpu_row_is_sourced_and_dated(gpus):
    for g in gpus:
        assert g.source, g.id
        assert g.cloud_usd_per_hour is None or g.price_as_of, g.id


@pytest.mark.parametrize(
    "gpu_id, memory_gib, bandwidth, fp16_dense",
    [
        ("a100-80gb", 80, 2039, 312),
        ("a100-40gb", 40, 1555, 312),
        ("h100-sxm", 79.6, 3350, 989),
        ("h200", 140.4, 4800, 989.4),
        ("rtx-4090", 24, 1008, 165.2),
        ("l40s", 45, 864, 362.05),
    ],
)
def test_datasheet_figures(gpus, gpu_id, memory_gib, bandwidth, fp16_dense):
    """Figures from the NVIDIA datasheets (dense tensor TFLOPS; see docs/catalog.md)."""
    g = gpus.get(gpu_id)
    assert g.memory_gib_usable == pytest.approx(memory_gib, rel=0.02)
    assert g.memory_bandwidth_gb_s == pytest.approx(bandwidth, rel=0.01)
    assert g.fp16_dense_tflops == pytest.approx(fp16_dense, rel=0.01)  # FP32 accumulate on GeForce cards


def test_seed_corrections(gpus):
    """The seed table quoted sparse or non-tensor figures; the catalog stores dense ones."""
    assert gpus.get("rtx-a6000").fp16_dense_tflops < 200  # seed: 309.7 (sparse)
    assert gpus.get("b200").fp16_dense_tflops == pytest.approx(2250, rel=0.05)  # dense, not sparse
    assert gpus.get("a100-80gb").fp8_dense_tflops is None  # no FP8 on Ampere
    assert not gpus.get("v100-32gb").supports_bf16
    assert gpus.get("h100-sxm").supports_fp8 and gpus.get("l40s").supports_fp8


def test_sparse_figures_are_not_stored(gpus):
    for g in gpus:
        if g.fp8_dense_tflops:
            assert g.fp8_dense_tflops <= 2.2 * g.fp16_dense_tflops, g.id


def test_model_catalog_has_required_presets(models):
    assert len(models) >= 20
    assert not [m for m in REQUIRED_MODELS if m not in models.models]


def test_every_preset_matches_its_published_parameter_count(models):
    """The architecture reproduces the published count within 1% (the formula in core/models.py)."""
    for m in models:
        assert m.published_params, m.id
        assert m.parameters == pytest.approx(m.published_params, rel=0.01), m.id


@pytest.mark.parametrize(
    "model_id, params, active",
    [
        ("llama-2-7b", 6_738_415_616, None),
        ("llama-3.1-8b", 8_030_261_248, None),
        ("mixtral-8x7b", 46_702_792_704, 12.9e9),
        ("gpt2-xl", 1_557_611_200, None),
    ],
)
def test_known_parameter_counts(models, model_id, params, active):
    m = models.get(model_id)
    assert m.parameters == pytest.approx(params, rel=0.001)
    if active:
        assert m.active_parameters == pytest.approx(active, rel=0.01)


#: Presets of the 2025-26 families and the real config.json each was built from (tests/data/hf).
FAMILY_PRESETS = [
    ("llama-4-scout", "Llama-4-Scout-17B-16E-Instruct"),
    ("llama-4-maverick", "Llama-4-Maverick-17B-128E-Instruct"),
    ("qwen3-coder-480b-a35b", "Qwen3-Coder-480B-A35B-Instruct"),
    ("qwen3-coder-30b-a3b", "Qwen3-Coder-30B-A3B-Instruct"),
    ("gemma-3-4b", "gemma-3-4b-it"),
    ("gemma-3-12b", "gemma-3-12b-it"),
    ("gemma-3-27b", "gemma-3-27b-it"),
    ("mistral-small-24b", "Mistral-Small-24B-Base-2501"),
    ("kimi-k2", "Kimi-K2-Instruct"),
]


@pytest.mark.parametrize("model_id, folder", FAMILY_PRESETS)
def test_family_presets_equal_their_config_and_the_published_total(models, model_id, folder):
    """Same shapes as the imported config.json, within 0.5% of the published total (issue 16)."""
    m = models.get(model_id)
    imported = model_from_hf_config(Path(__file__).resolve().parents[1] / "data" / "hf" / folder)
    assert (m.parameters, m.active_parameters) == (imported.parameters, imported.active_parameters)
    assert m.kv_elements_per_token_layer == imported.kv_elements_per_token_layer
    assert m.parameters == pytest.approx(m.published_params, rel=0.005), model_id
    assert "Counted" in m.notes and "published" in m.notes and m.source


BAD_GPU_ROWS = [
    ("x,X,nvidia,ampere,0,2039,312,400,src", "memory_gib_usable"),
    ("x,X,nvidia,ampere,80,abc,312,400,src", "memory_bandwidth_gb_s"),
    ("x,X,nvidia,warp,80,2039,312,400,src", "architecture"),
    ("x,X,nvidia,ampere,80,2039,,400,src", "fp16_dense_tflops"),
    ("X Y,X,nvidia,ampere,80,2039,312,400,src", "id"),
]


@pytest.mark.parametrize("row, column", BAD_GPU_ROWS)
def test_bad_gpu_rows_name_line_and_column(row, column):
    text = (
        "# catalog=gpus; schema_version=1; updated=2026-01-01\n"
        "id,name,vendor,architecture,memory_gib_usable,memory_bandwidth_gb_s,fp16_dense_tflops,tdp_w,source\n"
        + row
        + "\n"
    )
    with pytest.raises(CatalogError) as info:
        load_gpu_catalog(text=text)
    assert "line 3" in str(info.value) and column in str(info.value)


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty"),
        ("id,name\n", "metadata line"),
        ("# catalog=gpus; schema_version=9\nid\n", "schema_version 9 is not supported"),
        ("# catalog=models; schema_version=1\nid\n", "expected 'gpus'"),
        ("# catalog=gpus; schema_version=1\nid,name\nx,y\n", "missing column"),
        ("# catalog=gpus; schema_version=1\n\x00\x01", "binary"),
    ],
)
def test_corrupt_catalogs_give_clear_errors(text, message):
    with pytest.raises(CatalogError, match=message):
        load_gpu_catalog(text=text)


def test_duplicate_ids_rejected():
    header = (
        "# catalog=gpus; schema_version=1\n"
        "id,name,vendor,architecture,memory_gib_usable,memory_bandwidth_gb_s,fp16_dense_tflops,tdp_w,source\n"
    )
    row = "x,X,nvidia,ampere,80,2039,312,400,src\n"
    with pytest.raises(CatalogError, match="duplicates"):
        load_gpu_catalog(text=header + row + row)


def test_missing_catalog_file(tmp_path):
    with pytest.raises(CatalogError, match="not found"):
        load_gpu_catalog(tmp_path / "nope.csv")
