"""Tests for gpuadvisor.core.formats.hf_import: config.json mapping and safetensors header reading."""

from __future__ import annotations

import ast
import json
import math
import random
import struct
import sys
from pathlib import Path
from typing import Any

import pytest

from gpuadvisor.core.errors import ModelConfigError
from gpuadvisor.core.formats import hf_import
from gpuadvisor.core.formats.hf_import import (
    SafetensorsSummary,
    model_from_hf_config,
    read_safetensors_header,
    summarize_safetensors,
)
from gpuadvisor.core.specs.models import ModelSpec

DATA = Path(__file__).resolve().parent.parent / "data" / "hf"

# Published totals. Exact counts come from the Hub's safetensors totals / model cards (unique
# parameters; see docs/models.md); rounded ones are the authors' figures.
PUBLISHED = {
    "Llama-2-7b-hf": 6_738_415_616,
    "Meta-Llama-3.1-8B": 8_030_261_248,
    "Mistral-7B-v0.1": 7_241_732_096,
    "Mixtral-8x7B-v0.1": 46_702_792_704,
    "Qwen2-7B": 7_615_616_512,
    "Qwen3-8B": 8_190_735_360,
    "Qwen3-30B-A3B": 30_500_000_000,  # card: 30.5B total
    "Qwen1.5-MoE-A2.7B": 14_300_000_000,  # card: 14.3B total
    "gemma-2-9b": 9_241_705_984,
    "gemma-3-1b-pt": 999_885_952,
    "Phi-3-mini-4k-instruct": 3_821_079_552,
    "phi-2": 2_779_683_840,
    "gpt2-xl": 1_557_611_200,
    "gpt-j-6b": 6_053_381_344,  # model card (0.04% above the HF module count)
    "pythia-1.4b": 1_414_647_808,
    "gpt-neox-20b": 20_554_567_680,
    "falcon-7b": 6_921_720_704,  # unique count; the Hub's 7.22B stores the tied head twice
    "bert-large-uncased": 335_141_888,  # BertModel; the Hub checkpoint with its MLM head is ~336M
    "starcoder": 15_500_000_000,  # card: 15.5B
    "mpt-7b": 6_700_000_000,  # card: 6.7B (rounded)
    "starcoder2-3b": 3_030_371_328,
    "DeepSeek-R1": 671_000_000_000,  # card: 671B main model (685B with the 14B MTP module)
    "DeepSeek-V2.5": 236_000_000_000,  # card: 236B total
    "gpt-oss-120b": 116_830_000_000,  # OpenAI model card: 116.83B total
    "Qwen3-235B-A22B": 235_093_634_560,  # Hub safetensors total (card: 235B)
    "phi-4": 14_659_507_200,  # Hub safetensors total (card: 14B, Hub 14.7B)
    # Hub safetensors totals (the checkpoint as stored; vision encoder included where there is one).
    "Llama-4-Scout-17B-16E-Instruct": 108_641_793_536,
    "Llama-4-Maverick-17B-128E-Instruct": 401_583_781_376,
    "Qwen3-Coder-480B-A35B-Instruct": 480_154_875_392,
    "Qwen3-Coder-30B-A3B-Instruct": 30_500_000_000,  # card: 30.5B total
    "gemma-3-4b-it": 4_300_079_472,
    "gemma-3-12b-it": 12_187_325_040,
    "gemma-3-27b-it": 27_432_406_640,
    "Mistral-Small-24B-Base-2501": 23_572_403_200,
    "Kimi-K2-Instruct": 1_026_408_232_448,
}

# Families of 2025-26 whose count must land within 0.5% of the published total (issue 16).
FAMILIES_HALF_PERCENT = (
    "DeepSeek-R1",
    "DeepSeek-V2.5",
    "gpt-oss-120b",
    "Qwen3-235B-A22B",
    "phi-4",
    "Llama-4-Scout-17B-16E-Instruct",
    "Llama-4-Maverick-17B-128E-Instruct",
    "Qwen3-Coder-480B-A35B-Instruct",
    "Qwen3-Coder-30B-A3B-Instruct",
    "gemma-3-4b-it",
    "gemma-3-12b-it",
    "gemma-3-27b-it",
    "Mistral-Small-24B-Base-2501",
    "Kimi-K2-Instruct",
)

# Published active parameters of the MoE fixtures (rounded by their authors).
PUBLISHED_ACTIVE = {
    "Mixtral-8x7B-v0.1": (12_900_000_000, 0.01),
    "Qwen1.5-MoE-A2.7B": (2_700_000_000, 0.01),
    "Qwen3-30B-A3B": (3_300_000_000, 0.02),  # card rounds 3.35B down to 3.3B
    "DeepSeek-R1": (37_000_000_000, 0.02),  # card: 37B activated
    "DeepSeek-V2.5": (21_000_000_000, 0.02),  # card: 21B activated
    "gpt-oss-120b": (5_130_000_000 + 201_088 * 2880, 0.01),  # card: 5.13B active without the embedding
    "Qwen3-235B-A22B": (22_000_000_000, 0.01),  # card: 22B activated
    "Qwen3-Coder-480B-A35B-Instruct": (35_000_000_000, 0.02),  # card: 35B activated
    "Qwen3-Coder-30B-A3B-Instruct": (3_300_000_000, 0.02),  # card: 3.3B activated
    "Kimi-K2-Instruct": (32_000_000_000, 0.03),  # card: 32B activated
    # Meta: 17B active; the count here also holds the 0.87B vision encoder, loaded with the weights.
    "Llama-4-Scout-17B-16E-Instruct": (17_000_000_000 + 871_932_416, 0.02),
    "Llama-4-Maverick-17B-128E-Instruct": (17_000_000_000 + 871_932_416, 0.02),
}

DTYPE_BYTES = {"F32": 4, "F16": 2, "BF16": 2, "I32": 4, "U8": 1, "I8": 1, "I64": 8, "F8_E4M3": 1, "BOOL": 1}


def write_safetensors(
    path: Path, tensors: dict[str, tuple[str, tuple[int, ...]]], metadata: dict[str, str] | None = None
) -> int:
    """Write a real safetensors file (zeroed data); returns the data size in bytes."""
    header: dict[str, Any] = {}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        size = math.prod(shape) * DTYPE_BYTES[dtype]
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    if metadata is not None:
        header["__metadata__"] = metadata
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(offset))
    return offset


def write_config(folder: Path, config: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "config.json"
    path.write_text(json.dumps(config))
    return path


TINY_LLAMA = {
    "model_type": "llama",
    "hidden_size": 16,
    "intermediate_size": 40,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_hidden_layers": 2,
    "vocab_size": 100,
    "max_position_embeddings": 64,
    "tie_word_embeddings": False,
}


def llama_tensors(config: dict[str, Any], dtype: str = "BF16") -> dict[str, tuple[str, tuple[int, ...]]]:
    """The tensors a Llama checkpoint with these shapes stores."""
    h, i, v = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    head = h // config["num_attention_heads"]
    kv = config["num_key_value_heads"] * head
    tensors = {
        "model.embed_tokens.weight": (dtype, (v, h)),
        "model.norm.weight": (dtype, (h,)),
        "lm_head.weight": (dtype, (v, h)),
    }
    for n in range(config["num_hidden_layers"]):
        p = f"model.layers.{n}."
        tensors.update(
            {
                p + "self_attn.q_proj.weight": (dtype, (h, h)),
                p + "self_attn.k_proj.weight": (dtype, (kv, h)),
                p + "self_attn.v_proj.weight": (dtype, (kv, h)),
                p + "self_attn.o_proj.weight": (dtype, (h, h)),
                p + "mlp.gate_proj.weight": (dtype, (i, h)),
                p + "mlp.up_proj.weight": (dtype, (i, h)),
                p + "mlp.down_proj.weight": (dtype, (h, i)),
                p + "input_layernorm.weight": (dtype, (h,)),
                p + "post_attention_layernorm.weight": (dtype, (h,)),
            }
        )
    return tensors


# ----------------------------------------------------------------------------------------------
# Real configs: parameter counts
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_fixture_parameter_count_within_one_percent(name: str) -> None:
    spec = model_from_hf_config(DATA / name)
    published = PUBLISHED[name]
    assert abs(spec.parameters - published) / published <= 0.01, (name, spec.parameters, published)
    assert spec.published_params is None  # config.json only, no weights in the fixture folder


@pytest.mark.parametrize("name", FAMILIES_HALF_PERCENT)
def test_new_families_within_half_a_percent(name: str) -> None:
    spec = model_from_hf_config(DATA / name)
    assert abs(spec.parameters - PUBLISHED[name]) / PUBLISHED[name] <= 0.005, (name, spec.parameters)


@pytest.mark.parametrize("name, layers", [("DeepSeek-R1", 61), ("DeepSeek-V2.5", 60)])
def test_mla_kv_cache_is_the_compressed_latent(name: str, layers: int) -> None:
    from gpuadvisor.core.estimation.memory import MemoryModel
    from gpuadvisor.core.specs.workload import Workload

    spec = model_from_hf_config(DATA / name)
    assert spec.is_mla and spec.kv_elements_per_token_layer == 512 + 64
    mm = MemoryModel(
        spec, Workload(kind="inference", weights="bf16", batch_size=1, prompt_tokens=1000, output_tokens=24)
    )
    # (kv_lora_rank + qk_rope_head_dim) x layers x bytes per token: 70,272 bytes for V3 in bf16.
    assert mm.breakdown().kv_cache == (512 + 64) * layers * 2 * 1024


def test_deepseek_v3_exact_count_and_mtp_note() -> None:
    spec = model_from_hf_config(DATA / "DeepSeek-R1")
    assert spec.parameters == 671_026_419_200
    assert spec.dense_layers == 3 and spec.shared_experts == 1 and spec.num_experts == 256
    assert "multi-token-prediction" in spec.notes


def test_gpt_oss_alternates_sliding_layers_and_counts_sinks() -> None:
    spec = model_from_hf_config(DATA / "gpt-oss-120b")
    assert spec.sliding_window == 128 and spec.sliding_window_layer_fraction == 0.5
    assert spec.num_experts == 128 and spec.experts_per_token == 4 and spec.mlp_bias
    assert spec.parameters == 116_829_156_672


def test_llama4_interleaved_moe_shared_expert_and_chunked_attention() -> None:
    scout = model_from_hf_config(DATA / "Llama-4-Scout-17B-16E-Instruct")
    maverick = model_from_hf_config(DATA / "Llama-4-Maverick-17B-128E-Instruct")
    # Scout: every layer MoE (16 experts + 1 shared, width 8192). Maverick: every other layer MoE
    # (128 + 1 shared), the rest dense with intermediate_size_mlp 16384.
    assert (scout.num_experts, scout.shared_experts, scout.dense_layers) == (16, 1, 0)
    assert (maverick.num_experts, maverick.shared_experts, maverick.dense_layers) == (128, 1, 24)
    assert maverick.intermediate_size == 16384 and maverick.moe_intermediate_size == 8192
    # Chunked attention (8192 tokens) on the three RoPE layers of every four; NoPE layers global.
    assert scout.sliding_window == 8192 and scout.sliding_window_layer_fraction == 0.75
    assert maverick.sliding_window == 8192 and maverick.sliding_window_layer_fraction == 0.75


@pytest.mark.parametrize(
    "name, vision",
    [
        # SigLIP so400m (27 layers, width 1152, 896 px / 14 px patches) plus the projector to the text width.
        ("gemma-3-4b-it", 416_866_032 + 1152 * 2560 + 1152),
        ("gemma-3-27b-it", 416_866_032 + 1152 * 5376 + 1152),
        # Llama 4's encoder (34 layers, width 1408), pixel-shuffle adapter and projector (4096 -> 5120).
        ("Llama-4-Scout-17B-16E-Instruct", 850_960_896 + 4096 * 5120),
    ],
)
def test_vision_encoder_of_a_multimodal_checkpoint_is_counted_and_said(name: str, vision: int) -> None:
    spec = model_from_hf_config(DATA / name)
    text_only = spec.extra_params - vision
    assert text_only in (0, spec.num_layers * 2 * (spec.head_dim or 0))  # Gemma's q/k norms stay
    assert "vision encoder" in spec.notes and "counted in extra_params" in spec.notes


def test_a_vision_config_without_shapes_is_named_not_counted(tmp_path: Path) -> None:
    config = json.loads((DATA / "gemma-3-4b-it" / "config.json").read_text())
    config["vision_config"] = {"model_type": "siglip_vision_model", "hidden_size": 1152}
    spec = model_from_hf_config(write_config(tmp_path / "gemma-3-4b", config))
    assert spec.parameters == 4_300_079_472 - 416_866_032 - 1152 * 2560 - 1152
    assert "'siglip_vision_model' encoder is not counted" in spec.notes


def test_kimi_k2_reads_as_deepseek_v3_with_384_experts() -> None:
    spec = model_from_hf_config(DATA / "Kimi-K2-Instruct")
    assert spec.is_mla and spec.kv_elements_per_token_layer == 512 + 64
    assert (spec.num_experts, spec.experts_per_token, spec.dense_layers, spec.num_attention_heads) == (
        384,
        8,
        1,
        64,
    )


def test_every_fixture_folder_is_checked() -> None:
    assert sorted(p.name for p in DATA.iterdir() if p.is_dir()) == sorted(PUBLISHED)


@pytest.mark.parametrize("name", sorted(PUBLISHED_ACTIVE))
def test_moe_active_parameters(name: str) -> None:
    spec = model_from_hf_config(DATA / name)
    published, tolerance = PUBLISHED_ACTIVE[name]
    assert abs(spec.active_parameters - published) / published <= tolerance
    assert spec.active_parameters < spec.parameters


@pytest.mark.parametrize(
    "name, exact",
    [
        ("Llama-2-7b-hf", 6_738_415_616),
        ("Meta-Llama-3.1-8B", 8_030_261_248),
        ("Mistral-7B-v0.1", 7_241_732_096),
        ("Mixtral-8x7B-v0.1", 46_702_792_704),
        ("Qwen2-7B", 7_615_616_512),
        ("Qwen3-8B", 8_190_735_360),
        ("gemma-2-9b", 9_241_705_984),
        ("Phi-3-mini-4k-instruct", 3_821_079_552),
        ("gpt2-xl", 1_557_611_200),
        ("gpt-j-6b", 6_050_882_784),
        ("falcon-7b", 6_921_720_704),
        ("bert-large-uncased", 335_141_888),
        ("starcoder", 15_517_456_384),
        ("gpt-neox-20b", 20_554_567_680),
        ("pythia-1.4b", 1_414_647_808),
        ("gemma-3-1b-pt", 999_885_952),
        ("Qwen3-30B-A3B", 30_532_122_624),
        ("mpt-7b", 6_649_286_656),
        ("Llama-4-Scout-17B-16E-Instruct", 108_641_793_536),
        ("Llama-4-Maverick-17B-128E-Instruct", 401_583_781_376),
        ("Qwen3-Coder-480B-A35B-Instruct", 480_154_875_392),
        ("Qwen3-Coder-30B-A3B-Instruct", 30_532_122_624),
        ("gemma-3-4b-it", 4_300_079_472),
        ("gemma-3-12b-it", 12_187_325_040),
        ("gemma-3-27b-it", 27_432_406_640),
        ("Mistral-Small-24B-Base-2501", 23_572_403_200),
        ("Kimi-K2-Instruct", 1_026_408_232_448),
    ],
)
def test_fixture_exact_module_count(name: str, exact: int) -> None:
    """The count of the Hugging Face module built from these shapes, to the parameter."""
    assert model_from_hf_config(DATA / name / "config.json").parameters == exact


def test_bert_large_is_close_to_the_checkpoint_with_mlm_head() -> None:
    spec = model_from_hf_config(DATA / "bert-large-uncased")
    assert abs(spec.parameters - 336_000_000) / 336_000_000 <= 0.01


# ----------------------------------------------------------------------------------------------
# Real configs: field mapping
# ----------------------------------------------------------------------------------------------
def test_llama2_mapping() -> None:
    spec = model_from_hf_config(DATA / "Llama-2-7b-hf")
    assert spec.name == "Llama-2-7b-hf"  # from _name_or_path "meta-llama/Llama-2-7b-hf"
    assert spec.source == "Hugging Face config.json (llama)"
    assert spec.family == "llama"
    assert (spec.num_layers, spec.hidden_size) == (32, 4096)
    assert (spec.num_attention_heads, spec.num_key_value_heads) == (32, 32)
    assert (spec.intermediate_size, spec.vocab_size, spec.max_context) == (11008, 32000, 4096)
    assert spec.gated_mlp and not spec.tied_embeddings
    assert (spec.norm, spec.position_embedding, spec.norms_per_layer) == ("rmsnorm", "rope", 2)
    assert spec.kind == "decoder"
    assert not (spec.attention_bias or spec.attention_out_bias or spec.mlp_bias)
    assert spec.head_dim is None and spec.sliding_window is None and spec.num_experts == 1


def test_llama31_uses_full_context_and_gqa() -> None:
    spec = model_from_hf_config(DATA / "Meta-Llama-3.1-8B")
    assert spec.max_context == 131072
    assert spec.num_key_value_heads == 8
    assert spec.name == "Meta-Llama-3.1-8B"  # no _name_or_path: the folder name


def test_mistral_sliding_window_on_every_layer() -> None:
    spec = model_from_hf_config(DATA / "Mistral-7B-v0.1")
    assert spec.sliding_window == 4096 and spec.sliding_window_layer_fraction == 1.0
    assert spec.max_context == 32768


def test_mixtral_experts() -> None:
    spec = model_from_hf_config(DATA / "Mixtral-8x7B-v0.1")
    assert (spec.num_experts, spec.experts_per_token) == (8, 2)
    assert spec.sliding_window is None  # "sliding_window": null
    assert spec.moe_intermediate_size is None and spec.expert_intermediate_size == 14336


def test_qwen2_qkv_bias_and_disabled_window() -> None:
    spec = model_from_hf_config(DATA / "Qwen2-7B")
    assert spec.attention_bias and not spec.attention_out_bias and not spec.mlp_bias
    assert spec.sliding_window is None  # use_sliding_window: false


def test_qwen3_head_dim_and_qk_norms() -> None:
    spec = model_from_hf_config(DATA / "Qwen3-8B")
    assert spec.head_dim == 128
    assert spec.extra_params == 36 * 2 * 128
    assert not spec.attention_bias and spec.sliding_window is None


def test_qwen3_moe_mapping() -> None:
    spec = model_from_hf_config(DATA / "Qwen3-30B-A3B")
    assert (spec.num_experts, spec.experts_per_token, spec.moe_intermediate_size) == (128, 8, 768)
    assert spec.expert_intermediate_size == 768
    assert spec.extra_params == 48 * 2 * 128


def test_qwen2_moe_shared_expert_in_extra_params() -> None:
    spec = model_from_hf_config(DATA / "Qwen1.5-MoE-A2.7B")
    assert (spec.num_experts, spec.experts_per_token, spec.moe_intermediate_size) == (60, 4, 1408)
    assert spec.extra_params == 24 * (3 * 2048 * 5632 + 2048)
    assert "shared expert" in spec.notes


def test_gemma2_mapping() -> None:
    spec = model_from_hf_config(DATA / "gemma-2-9b")
    assert spec.head_dim == 256 and spec.q_dim == 4096
    assert spec.norms_per_layer == 4
    assert spec.tied_embeddings  # Gemma default; the key is absent from the config
    assert spec.sliding_window == 4096 and spec.sliding_window_layer_fraction == 0.5
    assert spec.gated_mlp and spec.norm == "rmsnorm"


def test_gemma3_text_window_pattern() -> None:
    spec = model_from_hf_config(DATA / "gemma-3-1b-pt")
    assert spec.sliding_window == 512
    assert spec.sliding_window_layer_fraction == pytest.approx(5 / 6)
    assert (spec.num_key_value_heads, spec.head_dim, spec.norms_per_layer) == (1, 256, 4)


def test_phi3_mapping() -> None:
    spec = model_from_hf_config(DATA / "Phi-3-mini-4k-instruct")
    assert spec.name == "Phi-3-mini-4k-instruct"
    assert spec.gated_mlp and not spec.tied_embeddings and spec.vocab_size == 32064
    assert spec.sliding_window is None and "2047" in spec.notes


def test_phi2_mapping() -> None:
    spec = model_from_hf_config(DATA / "phi-2")
    assert spec.name == "phi-2"
    assert not spec.gated_mlp and spec.norm == "layernorm" and spec.norms_per_layer == 1
    assert spec.attention_bias and spec.attention_out_bias and spec.mlp_bias
    assert spec.extra_params == 51200  # lm_head bias


def test_gpt2_mapping() -> None:
    spec = model_from_hf_config(DATA / "gpt2-xl")
    assert (spec.num_layers, spec.hidden_size, spec.num_attention_heads) == (48, 1600, 25)
    assert spec.intermediate_size == 6400  # no n_inner: 4 x n_embd
    assert spec.max_context == 1024 and spec.position_embedding == "learned"
    assert spec.tied_embeddings and not spec.gated_mlp and spec.norm == "layernorm"
    assert spec.attention_bias and spec.attention_out_bias and spec.mlp_bias


def test_gptj_mapping() -> None:
    spec = model_from_hf_config(DATA / "gpt-j-6b")
    assert spec.intermediate_size == 16384  # n_inner null
    assert spec.norms_per_layer == 1 and spec.norm == "layernorm"
    assert not spec.attention_bias and not spec.attention_out_bias and spec.mlp_bias
    assert not spec.tied_embeddings and spec.extra_params == 50400
    assert spec.position_embedding == "rope" and spec.max_context == 2048


def test_gpt_neox_mapping() -> None:
    spec = model_from_hf_config(DATA / "gpt-neox-20b")
    assert not spec.gated_mlp and spec.norm == "layernorm" and spec.norms_per_layer == 2
    assert spec.attention_bias and spec.attention_out_bias and spec.mlp_bias
    assert not spec.tied_embeddings


def test_falcon_refinedweb_mapping() -> None:
    spec = model_from_hf_config(DATA / "falcon-7b")
    assert spec.source == "Hugging Face config.json (RefinedWebModel)"
    assert (spec.num_layers, spec.num_attention_heads, spec.num_key_value_heads) == (32, 71, 1)
    assert spec.intermediate_size == 4 * 4544 and spec.max_context == 2048
    assert spec.norms_per_layer == 1 and spec.norm == "layernorm" and not spec.gated_mlp
    assert spec.tied_embeddings and spec.position_embedding == "rope"
    assert not (spec.attention_bias or spec.attention_out_bias or spec.mlp_bias)


def test_bert_mapping() -> None:
    spec = model_from_hf_config(DATA / "bert-large-uncased")
    assert spec.kind == "encoder" and not spec.has_kv_cache
    assert spec.position_embedding == "learned" and spec.max_context == 512
    assert spec.extra_params == 2 * 1024 + 1024 * 1024 + 1024
    assert spec.tied_embeddings and spec.counts.lm_head == 0


def test_starcoder_mapping() -> None:
    spec = model_from_hf_config(DATA / "starcoder")
    assert spec.name == "starcoder"
    assert spec.num_key_value_heads == 1 and spec.num_attention_heads == 48
    assert spec.max_context == 8192 and spec.position_embedding == "learned"
    assert spec.tied_embeddings and spec.intermediate_size == 24576


def test_mpt_mapping() -> None:
    spec = model_from_hf_config(DATA / "mpt-7b")
    assert spec.position_embedding == "alibi" and spec.max_context == 2048
    assert spec.intermediate_size == 16384 and not spec.gated_mlp
    assert spec.tied_embeddings and not spec.attention_bias
    assert spec.norm == "rmsnorm" and "no bias" in spec.notes


def test_starcoder2_mapping() -> None:
    spec = model_from_hf_config(DATA / "starcoder2-3b")
    assert spec.num_key_value_heads == 2 and spec.sliding_window == 4096
    assert not spec.gated_mlp and spec.norm == "layernorm" and spec.mlp_bias and spec.tied_embeddings


# ----------------------------------------------------------------------------------------------
# Variants written in the test
# ----------------------------------------------------------------------------------------------
FALCON_7B_NEW_STYLE = {
    "alibi": False,
    "architectures": ["FalconForCausalLM"],
    "bias": False,
    "hidden_size": 4544,
    "model_type": "falcon",
    "multi_query": True,
    "new_decoder_architecture": False,
    "num_attention_heads": 71,
    "num_hidden_layers": 32,
    "parallel_attn": True,
    "vocab_size": 65024,
}


def test_falcon_new_style_config_matches_old_style(tmp_path: Path) -> None:
    spec = model_from_hf_config(write_config(tmp_path / "falcon-7b", FALCON_7B_NEW_STYLE))
    old = model_from_hf_config(DATA / "falcon-7b")
    assert spec.parameters == old.parameters == 6_921_720_704
    assert spec.source == "Hugging Face config.json (falcon)"


def test_falcon_new_decoder_architecture(tmp_path: Path) -> None:
    config = {
        "model_type": "falcon",
        "hidden_size": 8192,
        "num_attention_heads": 128,
        "num_kv_heads": 8,
        "num_hidden_layers": 60,
        "new_decoder_architecture": True,
        "parallel_attn": True,
        "bias": False,
        "alibi": False,
        "vocab_size": 65024,
    }
    spec = model_from_hf_config(write_config(tmp_path / "falcon-40b", config))
    assert spec.num_key_value_heads == 8 and spec.norms_per_layer == 2
    old = {
        "model_type": "RefinedWeb",
        "hidden_size": 8192,
        "n_head": 128,
        "n_head_kv": 8,
        "n_layer": 60,
        "parallel_attn": True,
        "bias": False,
        "alibi": False,
        "vocab_size": 65024,
    }
    old_spec = model_from_hf_config(write_config(tmp_path / "falcon-40b-rw", old))
    assert old_spec.parameters == spec.parameters
    assert (old_spec.num_key_value_heads, old_spec.norms_per_layer) == (8, 2)


def test_falcon_alibi_sequential_with_biases(tmp_path: Path) -> None:
    config = {
        "model_type": "falcon",
        "hidden_size": 2048,
        "num_attention_heads": 32,
        "num_hidden_layers": 24,
        "alibi": True,
        "bias": True,
        "multi_query": False,
        "parallel_attn": False,
        "vocab_size": 50304,
    }
    spec = model_from_hf_config(write_config(tmp_path / "falcon-rw-1b", config))
    assert spec.position_embedding == "alibi"
    assert spec.num_key_value_heads == 32 and spec.norms_per_layer == 2
    assert spec.attention_bias and spec.attention_out_bias and spec.mlp_bias


def test_gpt_bigcode_without_multi_query(tmp_path: Path) -> None:
    config = {
        "model_type": "gpt_bigcode",
        "n_embd": 64,
        "n_head": 4,
        "n_layer": 2,
        "n_positions": 128,
        "vocab_size": 100,
        "multi_query": False,
    }
    assert model_from_hf_config(write_config(tmp_path / "m", config)).num_key_value_heads == 4


def test_qwen2_sliding_window_from_max_window_layers(tmp_path: Path) -> None:
    config = json.loads((DATA / "Qwen2-7B" / "config.json").read_text())
    config.update(use_sliding_window=True, sliding_window=4096, max_window_layers=21)
    spec = model_from_hf_config(write_config(tmp_path / "q", config))
    assert spec.sliding_window == 4096
    assert spec.sliding_window_layer_fraction == pytest.approx(7 / 28)


def test_layer_types_set_the_window_fraction(tmp_path: Path) -> None:
    config = json.loads((DATA / "gemma-2-9b" / "config.json").read_text())
    config["layer_types"] = ["sliding_attention", "sliding_attention", "full_attention"] * 14
    spec = model_from_hf_config(write_config(tmp_path / "g", config))
    assert spec.sliding_window_layer_fraction == pytest.approx(2 / 3)


def test_window_as_long_as_the_context_is_ignored(tmp_path: Path) -> None:
    config = dict(TINY_LLAMA, model_type="mistral", sliding_window=64)
    assert model_from_hf_config(write_config(tmp_path / "m", config)).sliding_window is None


def test_tie_word_embeddings_key_overrides_family_default(tmp_path: Path) -> None:
    config = json.loads((DATA / "gpt2-xl" / "config.json").read_text())
    config["tie_word_embeddings"] = False
    untied = model_from_hf_config(write_config(tmp_path / "g", config))
    assert not untied.tied_embeddings
    assert untied.parameters == 1_557_611_200 + 50257 * 1600


def test_integral_floats_are_accepted(tmp_path: Path) -> None:
    config = dict(TINY_LLAMA, intermediate_size=40.0)
    assert model_from_hf_config(write_config(tmp_path / "m", config)).intermediate_size == 40


def test_config_file_path_and_names(tmp_path: Path) -> None:
    path = write_config(tmp_path / "my-model", TINY_LLAMA)
    by_file = model_from_hf_config(path)
    by_folder = model_from_hf_config(str(tmp_path / "my-model"))
    assert by_file.name == by_folder.name == "my-model"
    assert by_file.parameters == by_folder.parameters
    for value in (by_file.name, by_file.source, by_file.notes):
        assert str(tmp_path) not in value
    named = model_from_hf_config(
        write_config(tmp_path / "x", dict(TINY_LLAMA, _name_or_path="/abs/dir/org/Fancy-1B/"))
    )
    assert named.name == "Fancy-1B"
    windows = model_from_hf_config(
        write_config(tmp_path / "y", dict(TINY_LLAMA, _name_or_path="C:\\m\\Win-2B"))
    )
    assert windows.name == "Win-2B"
    empty = model_from_hf_config(write_config(tmp_path / "z", dict(TINY_LLAMA, _name_or_path="")))
    assert empty.name == "z"


def test_name_falls_back_to_imported_model() -> None:
    assert hf_import._display_name({}, Path("/")) == "imported model"


def test_unknown_model_type_with_llama_keys_is_read_generically(tmp_path: Path) -> None:
    config = dict(TINY_LLAMA, model_type="my_llama_clone")
    spec = model_from_hf_config(write_config(tmp_path / "m", config))
    assert spec.source == "Hugging Face config.json (my_llama_clone)"
    assert "no dedicated mapping" in spec.notes
    assert spec.parameters == model_from_hf_config(write_config(tmp_path / "l", TINY_LLAMA)).parameters


def test_unknown_moe_with_shared_experts(tmp_path: Path) -> None:
    config = dict(
        TINY_LLAMA,
        model_type="somemoe",
        n_routed_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=8,
        n_shared_experts=1,
        kv_lora_rank=16,
        first_k_dense_replace=1,
    )
    spec = model_from_hf_config(write_config(tmp_path / "m", config))
    assert (spec.num_experts, spec.experts_per_token, spec.moe_intermediate_size) == (4, 2, 8)
    assert spec.extra_params == 2 * 3 * 16 * 8
    assert "kv_lora_rank" in spec.notes and "first_k_dense_replace" in spec.notes


def test_text_config_of_multimodal_gemma3(tmp_path: Path) -> None:
    config = {
        "architectures": ["Gemma3ForConditionalGeneration"],
        "model_type": "gemma3",
        "text_config": {
            "hidden_size": 2560,
            "intermediate_size": 10240,
            "model_type": "gemma3_text",
            "num_hidden_layers": 34,
            "sliding_window": 1024,
            "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
        },
        "vision_config": {"hidden_size": 1152, "model_type": "siglip_vision_model"},
    }
    spec = model_from_hf_config(write_config(tmp_path / "gemma-3-4b-pt", config))
    # Gemma 3 report: 4B has 675M embedding and 3,209M non-embedding parameters (plus a 417M vision encoder).
    assert abs(spec.parameters - spec.counts.embedding - 3_209_000_000) / 3_209_000_000 <= 0.01
    assert (spec.num_attention_heads, spec.num_key_value_heads, spec.head_dim) == (8, 4, 256)
    assert "vision" in spec.notes and "num_attention_heads=8" in spec.notes
    assert spec.source == "Hugging Face config.json (gemma3)"


def test_text_config_of_llava(tmp_path: Path) -> None:
    config = {"model_type": "llava", "text_config": dict(TINY_LLAMA), "vision_config": {"model_type": "clip"}}
    spec = model_from_hf_config(write_config(tmp_path / "llava", config))
    assert spec.num_layers == 2 and "text_config" in spec.notes


def test_quantization_config_is_noted(tmp_path: Path) -> None:
    config = dict(TINY_LLAMA, quantization_config={"quant_method": "awq", "bits": 4, "group_size": 128})
    spec = model_from_hf_config(write_config(tmp_path / "m", config))
    assert "awq, 4-bit" in spec.notes


# ----------------------------------------------------------------------------------------------
# config.json errors
# ----------------------------------------------------------------------------------------------
def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ModelConfigError, match="no such file or folder: 'nope.json'") as info:
        model_from_hf_config(tmp_path / "nope.json")
    assert info.value.field == "model.hf_config"
    assert str(tmp_path) not in str(info.value)


def test_folder_without_config(tmp_path: Path) -> None:
    (tmp_path / "empty-model").mkdir()
    with pytest.raises(ModelConfigError, match="folder 'empty-model' has no config.json"):
        model_from_hf_config(tmp_path / "empty-model")


def test_malformed_json(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text('{\n  "model_type": "llama",\n  "hidden_size": 4096,,\n}')
    with pytest.raises(ModelConfigError, match=r"config.json is not valid JSON: .* line 3"):
        model_from_hf_config(path)


@pytest.mark.parametrize(
    "text, kind", [("[1, 2]", "a list"), ('"llama"', "a string"), ("42", "a number"), ("null", "null")]
)
def test_non_object_json(tmp_path: Path, text: str, kind: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(text)
    with pytest.raises(ModelConfigError, match=f"must hold a JSON object, not {kind}"):
        model_from_hf_config(path)


def test_binary_garbage_config(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_bytes(b"\xff\xfe\x00garbage\x80")
    with pytest.raises(ModelConfigError, match="config.json"):
        model_from_hf_config(path)


def test_unknown_model_type_with_missing_keys(tmp_path: Path) -> None:
    config = {"model_type": "xyz", "num_attention_heads": 8, "vocab_size": 1000}
    with pytest.raises(ModelConfigError) as info:
        model_from_hf_config(write_config(tmp_path / "m", config))
    message = str(info.value)
    assert info.value.field == "model.hf_config"
    assert "unsupported model_type 'xyz'" in message
    assert "missing num_hidden_layers, hidden_size, intermediate_size" in message
    assert "enter the architecture by hand" in message
    assert "vocab_size" not in message.split("missing", 1)[1]


def test_no_model_type_and_no_keys(tmp_path: Path) -> None:
    with pytest.raises(
        ModelConfigError,
        match="no model_type given; missing num_hidden_layers, hidden_size, "
        "num_attention_heads, intermediate_size, vocab_size",
    ):
        model_from_hf_config(write_config(tmp_path / "m", {"foo": 1}))


def test_known_model_type_with_missing_keys(tmp_path: Path) -> None:
    config = {k: v for k, v in TINY_LLAMA.items() if k not in ("hidden_size", "vocab_size")}
    with pytest.raises(ModelConfigError, match=r"model_type 'llama'\) is missing hidden_size, vocab_size"):
        model_from_hf_config(write_config(tmp_path / "m", config))


def test_string_where_an_integer_is_expected(tmp_path: Path) -> None:
    with pytest.raises(ModelConfigError) as info:
        model_from_hf_config(write_config(tmp_path / "m", dict(TINY_LLAMA, hidden_size="4096")))
    assert "key 'hidden_size' must be a whole number" in str(info.value)
    assert info.value.value == "4096"


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("num_hidden_layers", True, "key 'num_hidden_layers' must be a whole number"),
        ("num_hidden_layers", 0, "key 'num_hidden_layers' must be >= 1"),
        ("vocab_size", -5, "key 'vocab_size' must be >= 1"),
        ("intermediate_size", 40.5, "key 'intermediate_size' must be a whole number"),
        ("num_key_value_heads", [2], "key 'num_key_value_heads' must be a whole number"),
        ("tie_word_embeddings", "false", "key 'tie_word_embeddings' must be true or false"),
        ("model_type", 7, "key 'model_type' must be a string"),
    ],
)
def test_mistyped_values(tmp_path: Path, key: str, value: object, message: str) -> None:
    with pytest.raises(ModelConfigError, match=message):
        model_from_hf_config(write_config(tmp_path / "m", dict(TINY_LLAMA, **{key: value})))


def test_inconsistent_architecture_is_a_model_config_error(tmp_path: Path) -> None:
    with pytest.raises(ModelConfigError, match="num_key_value_heads"):
        model_from_hf_config(write_config(tmp_path / "m", dict(TINY_LLAMA, num_key_value_heads=3)))
    with pytest.raises(ModelConfigError, match="experts_per_token"):
        model_from_hf_config(
            write_config(tmp_path / "n", dict(TINY_LLAMA, num_local_experts=2, num_experts_per_tok=4))
        )


def test_mpt_bad_attn_config(tmp_path: Path) -> None:
    config = json.loads((DATA / "mpt-7b" / "config.json").read_text())
    config["attn_config"] = "alibi"
    with pytest.raises(ModelConfigError, match="key 'attn_config' must be a JSON object"):
        model_from_hf_config(write_config(tmp_path / "m", config))
    config["attn_config"] = {"attn_type": "grouped_query_attention", "kv_n_heads": "8"}
    with pytest.raises(ModelConfigError, match="attn_config: key 'kv_n_heads' must be a whole number"):
        model_from_hf_config(write_config(tmp_path / "m", config))


def test_bad_path_types() -> None:
    with pytest.raises(ModelConfigError, match="path must be"):
        model_from_hf_config(42)  # type: ignore[arg-type]
    with pytest.raises(ModelConfigError, match="path is empty"):
        model_from_hf_config("")


WRONG_VALUES: list[object] = [
    "12",
    "",
    None,
    True,
    False,
    -1,
    0,
    2.5,
    float("nan"),
    [],
    {},
    [1, 2],
    {"a": 1},
    10**30,
]


@pytest.mark.parametrize(
    "fixture",
    [
        "Meta-Llama-3.1-8B",
        "gpt2-xl",
        "falcon-7b",
        "mpt-7b",
        "bert-large-uncased",
        "gemma-2-9b",
        "Qwen1.5-MoE-A2.7B",
        "gpt-j-6b",
        "starcoder",
    ],
)
def test_any_wrong_value_gives_a_model_or_a_model_config_error(tmp_path: Path, fixture: str) -> None:
    """Replacing any key of a real config by any JSON value never raises another exception type."""
    base = json.loads((DATA / fixture / "config.json").read_text())
    for key in base:
        for value in WRONG_VALUES:
            path = write_config(tmp_path / "m", {**base, key: value})
            try:
                spec = model_from_hf_config(path)
            except ModelConfigError as exc:
                assert exc.field == "model.hf_config"
            else:
                assert isinstance(spec, ModelSpec)


# ----------------------------------------------------------------------------------------------
# safetensors headers
# ----------------------------------------------------------------------------------------------
def test_read_header_and_summary_of_one_file(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    size = write_safetensors(
        path,
        {"a": ("F16", (3, 4)), "b": ("BF16", (5,)), "c": ("F32", (2, 2)), "scalar": ("F32", ())},
        metadata={"format": "pt"},
    )
    header = read_safetensors_header(path)
    assert header["a"] == {"dtype": "F16", "shape": [3, 4], "data_offsets": [0, 24]}
    assert header["__metadata__"] == {"format": "pt"}
    summary = summarize_safetensors(path)
    assert summary == SafetensorsSummary(
        parameters=12 + 5 + 4 + 1,
        dtypes={"BF16": 5, "F16": 12, "F32": 5},
        files=1,
        bytes_on_disk=size,
        tensors=4,
    )
    assert summary.bytes_on_disk == 24 + 10 + 16 + 4


def test_header_is_read_without_the_data(tmp_path: Path) -> None:
    path = tmp_path / "big.safetensors"
    header = json.dumps({"w": {"dtype": "F32", "shape": [1024, 1024], "data_offsets": [0, 4 * 1024 * 1024]}})
    with path.open("wb") as stream:
        stream.write(struct.pack("<Q", len(header)) + header.encode())
        stream.truncate(8 + len(header) + 4 * 1024 * 1024)  # sparse data, never read
    assert summarize_safetensors(path).parameters == 1024 * 1024


def test_sharded_folder_uses_the_index(tmp_path: Path) -> None:
    write_safetensors(
        tmp_path / "model-00001-of-00002.safetensors", {"x": ("BF16", (4, 4)), "y": ("BF16", (4,))}
    )
    write_safetensors(tmp_path / "model-00002-of-00002.safetensors", {"z": ("BF16", (8, 2))})
    # Not in the index (Mistral repos ship such a duplicate): must not be counted.
    write_safetensors(
        tmp_path / "consolidated.safetensors",
        {"x": ("BF16", (4, 4)), "y": ("BF16", (4,)), "z": ("BF16", (8, 2))},
    )
    index = {
        "metadata": {"total_size": 72},
        "weight_map": {
            "x": "model-00001-of-00002.safetensors",
            "y": "model-00001-of-00002.safetensors",
            "z": "model-00002-of-00002.safetensors",
        },
    }
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    summary = summarize_safetensors(tmp_path)
    assert (summary.parameters, summary.files, summary.bytes_on_disk) == (36, 2, 72)
    assert summary.dtypes == {"BF16": 36}


def test_folder_without_index_reads_every_file(tmp_path: Path) -> None:
    write_safetensors(tmp_path / "a.safetensors", {"x": ("F16", (10,))})
    write_safetensors(tmp_path / "b.safetensors", {"y": ("F32", (3,))})
    summary = summarize_safetensors(tmp_path)
    assert (summary.parameters, summary.files, summary.dtypes) == (13, 2, {"F16": 10, "F32": 3})


def test_buffers_are_not_parameters(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    write_safetensors(
        path,
        {
            "h.0.attn.bias": ("F32", (1, 1, 8, 8)),
            "h.0.attn.c_attn.bias": ("F32", (12,)),
            "h.0.attn.c_attn.weight": ("F32", (4, 12)),
            "embeddings.position_ids": ("I64", (1, 16)),
            "layers.0.rotary_emb.inv_freq": ("F32", (2,)),
        },
    )
    summary = summarize_safetensors(path)
    assert summary.parameters == 12 + 48 and summary.buffers == 64 + 16 + 2
    assert summary.dtypes == {"F32": 60}


def test_empty_folder(tmp_path: Path) -> None:
    with pytest.raises(ModelConfigError, match="holds no .safetensors files"):
        summarize_safetensors(tmp_path)


def test_missing_safetensors_path(tmp_path: Path) -> None:
    with pytest.raises(ModelConfigError, match="no such file or folder: 'x.safetensors'"):
        summarize_safetensors(tmp_path / "x.safetensors")
    with pytest.raises(ModelConfigError, match="x.safetensors file not found"):
        read_safetensors_header(tmp_path / "x.safetensors")


def test_index_naming_a_missing_shard(tmp_path: Path) -> None:
    write_safetensors(tmp_path / "model-00001-of-00002.safetensors", {"x": ("BF16", (4,))})
    index = {"weight_map": {"x": "model-00001-of-00002.safetensors", "y": "model-00002-of-00002.safetensors"}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(ModelConfigError, match="shard 'model-00002-of-00002.safetensors' but folder"):
        summarize_safetensors(tmp_path)


@pytest.mark.parametrize(
    "index, message",
    [
        ("{not json", "model.safetensors.index.json is not valid JSON"),
        ("[]", "must hold a JSON object"),
        ('{"metadata": {}}', "has no weight_map object"),
        ('{"weight_map": {"x": 5}}', "weight_map entry 'x' must name a shard file"),
        (
            '{"weight_map": {"x": "../other/model.safetensors"}}',
            "must be a file name inside the model folder",
        ),
        ('{"weight_map": {"x": "/etc/model.safetensors"}}', "must be a file name inside the model folder"),
        ('{"weight_map": {}}', "lists no shards"),
    ],
)
def test_bad_index(tmp_path: Path, index: str, message: str) -> None:
    (tmp_path / "model.safetensors.index.json").write_text(index)
    with pytest.raises(ModelConfigError, match=message):
        summarize_safetensors(tmp_path)


def test_truncated_data(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    write_safetensors(path, {"a": ("F32", (4, 4)), "b": ("F32", (4,))})
    path.write_bytes(path.read_bytes()[:-10])
    read_safetensors_header(path)  # the header itself is intact
    with pytest.raises(ModelConfigError, match="tensor 'b' ends at byte 80 .* truncated"):
        summarize_safetensors(path)


def test_truncated_header(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    write_safetensors(path, {"a": ("F32", (4, 4))})
    path.write_bytes(path.read_bytes()[:20])
    with pytest.raises(ModelConfigError, match="truncated"):
        read_safetensors_header(path)


def test_header_length_past_end_of_file(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    path.write_bytes(struct.pack("<Q", 5000) + b'{"a": 1}')
    with pytest.raises(ModelConfigError) as info:
        read_safetensors_header(path)
    assert "declares a 5,000-byte header but only 8 bytes follow" in str(info.value)
    assert info.value.field == "model.safetensors"


def test_header_length_over_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    path.write_bytes(struct.pack("<Q", 100_000_001) + b"{}")
    with pytest.raises(ModelConfigError, match="more than the 100,000,000-byte limit"):
        read_safetensors_header(path)


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "too short to be a safetensors file"),
        (b"abc", "too short to be a safetensors file"),
        (struct.pack("<Q", 0), "empty header"),
        (b"\xde\xad\xbe\xef\x01\x02\x03\x04garbage", "the file is corrupt or not a safetensors file"),
        (struct.pack("<Q", 6) + b"\xff\xfe\xfd{}}", "not UTF-8"),
        (struct.pack("<Q", 7) + b"not json", "not valid JSON"),
        (struct.pack("<Q", 2) + b"[]", "must be a JSON object, not a list"),
        (b"PK\x03\x04" + bytes(60), "not a safetensors file"),  # a zip (.bin) file
    ],
)
def test_garbage_files(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "model.safetensors"
    path.write_bytes(content)
    with pytest.raises(ModelConfigError, match=message):
        summarize_safetensors(path)


@pytest.mark.parametrize(
    "entry, message",
    [
        ([1, 2], "tensor 'w' must be a JSON object"),
        ({"shape": [2], "data_offsets": [0, 4]}, "tensor 'w' has no dtype"),
        ({"dtype": "F16", "shape": ["2"], "data_offsets": [0, 4]}, "needs a shape made of whole numbers"),
        ({"dtype": "F16", "shape": [-2], "data_offsets": [0, 4]}, "needs a shape made of whole numbers"),
        ({"dtype": "F16", "shape": [2], "data_offsets": [4, 0]}, "needs data_offsets"),
        ({"dtype": "F16", "shape": [2], "data_offsets": [0]}, "needs data_offsets"),
        ({"dtype": "F16", "shape": [2]}, "needs data_offsets"),
        (
            {"dtype": "F16", "shape": [3], "data_offsets": [0, 4]},
            r"shape \[3\] of F16 \(6 bytes\) but data_offsets span 4",
        ),
    ],
)
def test_bad_tensor_entries(tmp_path: Path, entry: object, message: str) -> None:
    path = tmp_path / "model.safetensors"
    raw = json.dumps({"w": entry}).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(8))
    with pytest.raises(ModelConfigError, match=message):
        summarize_safetensors(path)


def test_unknown_dtype_is_counted(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    raw = json.dumps({"w": {"dtype": "F4", "shape": [8], "data_offsets": [0, 4]}}).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(4))
    assert summarize_safetensors(path).dtypes == {"F4": 8}


def test_random_bytes_only_give_model_config_errors(tmp_path: Path) -> None:
    rng = random.Random(20261129)
    path = tmp_path / "fuzz.safetensors"
    valid = tmp_path / "valid.safetensors"
    write_safetensors(valid, {"a": ("F16", (3, 4)), "b": ("I8", (5,))})
    good = valid.read_bytes()
    for case in range(400):
        if case % 2:
            content = bytes(rng.randrange(256) for _ in range(rng.randrange(64)))
        else:  # flip bytes of a valid file
            content = bytearray(good)
            for _ in range(rng.randrange(1, 6)):
                content[rng.randrange(len(content))] = rng.randrange(256)
            content = bytes(content[: rng.randrange(len(content) + 1)] if case % 4 == 0 else content)
        path.write_bytes(content)
        try:
            summarize_safetensors(path)
        except ModelConfigError:
            pass


# ----------------------------------------------------------------------------------------------
# config.json + safetensors in one folder
# ----------------------------------------------------------------------------------------------
def test_folder_with_weights_sets_published_params(tmp_path: Path) -> None:
    folder = tmp_path / "tiny-llama"
    write_config(folder, TINY_LLAMA)
    write_safetensors(folder / "model.safetensors", llama_tensors(TINY_LLAMA))
    spec = model_from_hf_config(folder)
    assert spec.published_params == spec.parameters  # the shapes and the headers agree
    assert f"safetensors: {spec.parameters:,} parameters, BF16, in 1 file." in spec.notes
    assert str(tmp_path) not in spec.notes
    # The same config.json given as a file ignores the weights.
    assert model_from_hf_config(folder / "config.json").published_params is None


def test_folder_with_shards_and_mixed_dtypes(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    write_config(folder, TINY_LLAMA)
    tensors = llama_tensors(TINY_LLAMA)
    names = sorted(tensors)
    first = {n: tensors[n] for n in names[: len(names) // 2]}
    second = {n: ("F32", tensors[n][1]) for n in names[len(names) // 2 :]}
    write_safetensors(folder / "model-00001-of-00002.safetensors", first)
    write_safetensors(folder / "model-00002-of-00002.safetensors", second)
    weight_map = {n: "model-00001-of-00002.safetensors" for n in first}
    weight_map.update({n: "model-00002-of-00002.safetensors" for n in second})
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    spec = model_from_hf_config(folder)
    assert spec.published_params == spec.parameters
    assert "BF16" in spec.notes and "F32" in spec.notes and "2 files" in spec.notes


@pytest.mark.skipif(sys.platform != "linux", reason="writes 13 GB sparse files")
def test_real_config_with_matching_headers(tmp_path: Path) -> None:
    """Headers shaped like the real Llama 2 7B checkpoint give its exact published count."""
    config = json.loads((DATA / "Llama-2-7b-hf" / "config.json").read_text())
    folder = tmp_path / "Llama-2-7b-hf"
    write_config(folder, config)
    tensors = llama_tensors(config, dtype="F16")
    names = sorted(tensors)
    header_only = {}
    for shard, part in (
        ("model-00001-of-00002.safetensors", names[:150]),
        ("model-00002-of-00002.safetensors", names[150:]),
    ):
        header: dict[str, Any] = {}
        offset = 0
        for name in part:
            size = math.prod(tensors[name][1]) * 2
            header[name] = {
                "dtype": "F16",
                "shape": list(tensors[name][1]),
                "data_offsets": [offset, offset + size],
            }
            offset += size
        raw = json.dumps(header).encode()
        with (folder / shard).open("wb") as stream:  # sparse file: no 13 GB written
            stream.write(struct.pack("<Q", len(raw)) + raw)
            stream.truncate(8 + len(raw) + offset)
        header_only.update({n: shard for n in part})
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": header_only}))
    spec = model_from_hf_config(folder)
    assert spec.published_params == 6_738_415_616 == spec.parameters
    assert "safetensors: 6,738,415,616 parameters, F16, in 2 files." in spec.notes


def test_tied_head_stored_twice_is_counted_once(tmp_path: Path) -> None:
    config = dict(TINY_LLAMA, tie_word_embeddings=True)
    folder = tmp_path / "tied"
    write_config(folder, config)
    write_safetensors(folder / "model.safetensors", llama_tensors(config))  # includes lm_head.weight
    spec = model_from_hf_config(folder)
    assert spec.published_params == spec.parameters
    assert "counted once" in spec.notes


def test_quantized_checkpoint_leaves_published_params_empty(tmp_path: Path) -> None:
    config = dict(TINY_LLAMA, quantization_config={"quant_method": "gptq", "bits": 4, "group_size": 8})
    folder = tmp_path / "gptq"
    write_config(folder, config)
    tensors = {n: s for n, s in llama_tensors(config, dtype="F16").items() if "proj" not in n}
    h = 16
    for n in range(2):  # GPTQ packs 8 four-bit weights into each int32 of qweight
        tensors[f"model.layers.{n}.self_attn.q_proj.qweight"] = ("I32", (h // 8, h))
        tensors[f"model.layers.{n}.self_attn.q_proj.qzeros"] = ("I32", (2, h // 8))
        tensors[f"model.layers.{n}.self_attn.q_proj.scales"] = ("F16", (2, h))
    write_safetensors(folder / "model.safetensors", tensors)
    spec = model_from_hf_config(folder)
    assert spec.published_params is None
    assert "gptq, 4-bit" in spec.notes and "stored elements" in spec.notes and "I32" in spec.notes
    assert "Unpacked at 4 bits" in spec.notes


def test_int8_checkpoint_without_bits_estimate(tmp_path: Path) -> None:
    config = dict(TINY_LLAMA, quantization_config={"quant_method": "bitsandbytes", "load_in_8bit": True})
    folder = tmp_path / "int8"
    write_config(folder, config)
    write_safetensors(folder / "model.safetensors", llama_tensors(config, dtype="I8"))
    spec = model_from_hf_config(folder)
    assert spec.published_params is None
    assert "bitsandbytes, 8-bit" in spec.notes and "I8" in spec.notes and "Unpacked" not in spec.notes


def test_fp8_checkpoint_counts_parameters(tmp_path: Path) -> None:
    config = dict(TINY_LLAMA, quantization_config={"quant_method": "fp8", "activation_scheme": "dynamic"})
    folder = tmp_path / "fp8"
    write_config(folder, config)
    write_safetensors(folder / "model.safetensors", llama_tensors(config, dtype="F8_E4M3"))
    spec = model_from_hf_config(folder)
    assert spec.published_params == spec.parameters
    assert "F8_E4M3" in spec.notes and "fp8" in spec.notes


def test_folder_with_broken_weights_names_the_problem(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    write_config(folder, TINY_LLAMA)
    (folder / "model.safetensors").write_bytes(b"\x00\x01")
    with pytest.raises(ModelConfigError, match=r"too short.*import config\.json alone") as info:
        model_from_hf_config(folder)
    assert info.value.field == "model.safetensors"


# ----------------------------------------------------------------------------------------------
# Purity
# ----------------------------------------------------------------------------------------------
def test_module_uses_only_the_standard_library() -> None:
    tree = ast.parse(Path(hf_import.__file__).read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            imported.add(node.module.split(".")[0])
    assert imported <= {"__future__", "json", "math", "os", "struct", "dataclasses", "pathlib", "typing"}
