"""Golden figures for the memory model, each with its source.

Sources
-------
- Seed article (the project brief's starting point): 16-bit inference needs 2 bytes per
  parameter (7B -> ~14 GB); mixed-precision AdamW training needs 16 bytes per parameter
  (7B -> ~112 GB).
- Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion Parameter
  Models", Figure 1: 7.5B parameters, N_d = 64, K = 12 -> 120 / 31.4 / 16.6 / 1.9 GB for the
  baseline (DDP), P_os (ZeRO-1), P_os+g (ZeRO-2) and P_os+g+p (ZeRO-3).
- Llama 2 7B (Touvron et al. 2023; HF config): 32 layers, 32 KV heads x 128 -> KV cache
  2 x 32 x 4096 x 2 bytes = 524,288 bytes per token in 16 bit.
- Llama 3.1 8B (Llama Team 2024; HF config): GQA with 8 KV heads -> 2 x 32 x 1024 x 2 =
  131,072 bytes per token.
- Mistral 7B v0.1 (Jiang et al. 2023): sliding-window attention with window 4096 on every layer.
- Mixtral 8x7B (Jiang et al. 2024): 46.7B parameters in memory, 12.9B active per token.
- Dettmers et al. 2023, "QLoRA", section 3: double quantization brings the NF4 constants from
  0.5 to 0.127 bits per parameter -> 4.127 bits per quantized weight.
- Shoeybi et al. 2019 (Megatron-LM): tensor parallelism splits the weights over the GPUs;
  Narayanan et al. 2021: pipeline parallelism splits the layers.
- Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost" (gradient checkpointing);
  Dao et al. 2022, "FlashAttention" (no s x s score matrix is stored).
"""

from dataclasses import replace

import pytest

from gpuadvisor.core.estimation.memory import MemoryModel
from gpuadvisor.core.specs.presets import load_model_catalog
from gpuadvisor.core.specs.workload import Workload, weight_bytes_per_param
from gpuadvisor.core.units import GIB


@pytest.fixture(scope="module")
def models():
    return load_model_catalog()


@pytest.fixture(scope="module")
def llama2(models):
    return models.get("llama-2-7b")


# --- weights ---------------------------------------------------------------------------------


def test_7b_fp16_inference_weights(llama2):
    """Seed: 2 bytes per parameter, 7B -> ~14 GB; Llama 2 7B exactly 6,738,415,616 x 2 = 13.48e9 bytes."""
    bd = MemoryModel(llama2, Workload(kind="inference", weights="fp16")).breakdown()
    assert bd.weights == 2 * 6_738_415_616
    assert bd.weights == pytest.approx(13.48e9, rel=1e-3)
    assert bd.weights == pytest.approx(14e9, rel=0.05)
    assert bd.weights / GIB == pytest.approx(12.55, abs=0.01)
    assert bd.gradients == bd.optimizer == bd.adapters == 0


@pytest.mark.parametrize("weights, bytes_per_param", [("fp32", 4), ("bf16", 2), ("fp16", 2), ("fp8", None)])
def test_unquantized_weight_bytes(llama2, weights, bytes_per_param):
    bd = MemoryModel(llama2, Workload(kind="inference", weights=weights)).breakdown()
    if bytes_per_param is None:  # fp8 blocks, 16-bit embeddings, head and norms
        c = llama2.counts
        assert bd.weights == pytest.approx(c.blocks * 1 + (c.total - c.blocks) * 2)
    else:
        assert bd.weights == bytes_per_param * llama2.parameters


def test_mixed_precision_adamw_is_16_bytes_per_parameter(llama2):
    """Seed / ZeRO section 3: 2 (fp16 weights) + 2 (fp16 grads) + 12 (fp32 master, m, v) = 16 bytes."""
    bd = MemoryModel(llama2, Workload(kind="pretrain", weights="fp16")).breakdown()
    assert bd.model_states / llama2.parameters == pytest.approx(16.0, rel=1e-12)
    assert bd.weights == 2 * llama2.parameters
    assert bd.gradients == 2 * llama2.parameters
    assert bd.optimizer == 12 * llama2.parameters
    assert 16 * 7e9 == pytest.approx(112e9)  # the seed's "~112 GB for 7B"


@pytest.mark.parametrize(
    "parallelism, paper_gb", [("ddp", 120.0), ("zero1", 31.4), ("zero2", 16.6), ("zero3", 1.9), ("fsdp", 1.9)]
)
def test_zero_paper_figure_1(llama2, parallelism, paper_gb):
    """ZeRO Fig. 1: per-GPU model states of a 7.5B model on 64 GPUs (scaled per parameter)."""
    mm = MemoryModel(llama2, Workload(kind="pretrain", weights="fp16", optimizer="adamw"))
    per_param = mm.breakdown(64, parallelism).model_states / llama2.parameters
    assert per_param * 7.5e9 / 1e9 == pytest.approx(paper_gb, rel=0.015)


@pytest.mark.parametrize(
    "parallelism, per_param",
    [("ddp", 16.0), ("zero1", 4 + 12 / 64), ("zero2", 2 + 14 / 64), ("zero3", 16 / 64)],
)
def test_zero_formulas_exact(llama2, parallelism, per_param):
    """ZeRO section 5: (2+2+K), (2+2)+K/N_d, 2+(2+K)/N_d, (2+2+K)/N_d with K = 12, N_d = 64."""
    mm = MemoryModel(llama2, Workload(kind="pretrain", weights="fp16"))
    assert mm.breakdown(64, parallelism).model_states / llama2.parameters == pytest.approx(
        per_param, rel=1e-12
    )


@pytest.mark.parametrize("sharding", ["zero1", "zero2", "zero3", "fsdp"])
@pytest.mark.parametrize(("cp", "dp"), [(1, 64), (2, 32), (4, 16), (8, 8)])
def test_zero_with_context_parallel_shards_over_dp_times_cp(llama2, sharding, cp, dp):
    """ZeRO section 5 with context parallelism: the CP ranks of a replica hold the same weights and
    take part in the data-parallel reduction, so the sharding group is N_d = DP x CP (Megatron-Core's
    distributed optimizer shards over the data-parallel-with-context group). At DP x CP = 64 the
    model states are the paper's 2Psi + 2Psi + K Psi/N_d, 2Psi + (2 + K) Psi/N_d and
    (2 + 2 + K) Psi/N_d (K = 12), whatever the split between CP and DP."""
    from gpuadvisor.core.estimation.layout import Layout

    n_d, k = dp * cp, 12
    per_param = {
        "zero1": 2 + 2 + k / n_d,
        "zero2": 2 + (2 + k) / n_d,
        "zero3": (2 + 2 + k) / n_d,
        "fsdp": (2 + 2 + k) / n_d,
    }[sharding]
    mm = MemoryModel(llama2, Workload(kind="pretrain", weights="fp16", seq_len=65536))
    bd = mm.breakdown(layout=Layout(cp=cp, dp=dp, sharding=sharding))
    assert bd.model_states / llama2.parameters == pytest.approx(per_param, rel=1e-12)
    # The optimizer state alone: K Psi / N_d for every ZeRO stage.
    assert bd.optimizer / llama2.parameters == pytest.approx(k / n_d, rel=1e-12)


def test_zero3_weights_include_layers_in_flight(llama2):
    mm = MemoryModel(llama2, Workload(kind="pretrain", weights="fp16"))
    bd = mm.breakdown(64, "zero3")
    layer = llama2.counts.blocks * 2 / llama2.num_layers
    assert bd.gathered == pytest.approx(3 * layer)
    assert bd.weights == pytest.approx(2 * llama2.parameters / 64 + 3 * layer)


# --- KV cache --------------------------------------------------------------------------------


def _kv_per_token(model, kv_cache=None, weights="bf16"):
    mm = MemoryModel(model, Workload(kind="inference", weights=weights, kv_cache=kv_cache, output_tokens=256))
    return (
        mm.breakdown(batch_size=1, context=3072).kv_cache - mm.breakdown(batch_size=1, context=2048).kv_cache
    ) / 1024


def test_llama2_7b_kv_cache_per_token(llama2):
    """2 (K and V) x 32 layers x 4096 (32 heads x 128) x 2 bytes = 524,288 bytes per token."""
    assert _kv_per_token(llama2) == 2 * 32 * 4096 * 2 == 524_288


def test_llama31_8b_gqa_kv_cache_per_token(models):
    """GQA: 8 KV heads x 128 = 1024 -> 2 x 32 x 1024 x 2 = 131,072 bytes per token (4x less than MHA)."""
    assert _kv_per_token(models.get("llama-3.1-8b")) == 131_072


@pytest.mark.parametrize("kv_cache, ratio", [("fp32", 2.0), ("fp16", 1.0), ("fp8", 0.5), ("int8", 0.5)])
def test_kv_cache_precision_scales(llama2, kv_cache, ratio):
    assert _kv_per_token(llama2, kv_cache) == 524_288 * ratio


def test_kv_cache_scales_with_batch(llama2):
    mm = MemoryModel(
        llama2, Workload(kind="inference", weights="bf16", prompt_tokens=1024, output_tokens=1024)
    )
    assert (
        mm.breakdown(batch_size=8).kv_cache == 8 * mm.breakdown(batch_size=1).kv_cache == 8 * 2048 * 524_288
    )


def test_mistral_sliding_window_caps_kv_cache(models):
    """Mistral 7B v0.1: every layer attends to the last 4096 tokens; the cache stops growing there."""
    mistral = models.get("mistral-7b")
    assert mistral.sliding_window == 4096
    mm = MemoryModel(mistral, Workload(kind="inference", weights="bf16", output_tokens=256))
    at_window = mm.breakdown(context=4096).kv_cache
    assert mm.breakdown(context=8192).kv_cache == at_window
    assert mm.breakdown(context=32768).kv_cache == at_window
    assert at_window == 4096 * 2 * 32 * 1024 * 2
    assert mm.breakdown(context=2048).kv_cache == at_window / 2
    # Activations still grow with the prompt: only the cache is capped.
    assert mm.breakdown(context=8192).activations > mm.breakdown(context=4096).activations


# --- mixture of experts and quantization --------------------------------------------------------


def test_moe_memory_counts_all_experts(models):
    """Mixtral 8x7B: 46.7B parameters stored (all 8 experts), 12.9B active (2 per token)."""
    mixtral = models.get("mixtral-8x7b")
    bd = MemoryModel(mixtral, Workload(kind="inference", weights="bf16")).breakdown()
    assert bd.weights == pytest.approx(46.7e9 * 2, rel=0.002)
    assert mixtral.active_parameters == pytest.approx(12.9e9, rel=0.01)
    assert bd.weights > 3 * mixtral.active_parameters * 2


def test_nf4_double_quantization_bits_per_weight():
    """QLoRA: 4 bits + 0.127 bits of constants (8-bit absmax per 64, fp32 per 256 blocks)."""
    assert weight_bytes_per_param("nf4", double_quant=True) * 8 == pytest.approx(4.127, abs=0.001)
    assert weight_bytes_per_param("nf4", double_quant=False) * 8 == pytest.approx(4.5)  # fp32 absmax per 64


def test_nf4_model_weights(llama2):
    mm = MemoryModel(llama2, Workload(kind="qlora", weights="nf4", kbit_preparation=False))
    c = llama2.counts
    bits = (mm.breakdown().weights - (c.total - c.blocks) * 2) * 8 / c.blocks
    assert bits == pytest.approx(4.127, abs=0.001)


# --- PEFT's k-bit preparation (QLoRA) ------------------------------------------------------------
# peft/utils/other.py, prepare_model_for_kbit_training: "cast all non INT8 parameters to fp32" (every
# fp16/bf16 parameter that is not a Params4bit); TRL's SFTTrainer and Axolotl call it on a 4-bit base.
# The QLoRA paper's own qlora.py casts the embeddings, head and adapters back to bf16 afterwards.


def _qlora(**kw):
    return Workload(
        kind="qlora", weights="nf4", batch_size=4, seq_len=4096, gradient_checkpointing=True, **kw
    )


def test_kbit_preparation_keeps_the_unquantized_weights_in_fp32(models):
    mistral = models.get("mistral-7b")
    c = mistral.counts
    prepared = MemoryModel(mistral, _qlora(engine="hf-trainer")).breakdown()
    plain = MemoryModel(mistral, _qlora(engine="hf-trainer", kbit_preparation=False)).breakdown()
    assert prepared.weights - plain.weights == pytest.approx((c.total - c.blocks) * 2)  # 2 more bytes each
    # The engine's habit: torchtune's QLoRA keeps its own dtypes, unless the workload says otherwise.
    assert MemoryModel(mistral, _qlora(engine="torchtune")).breakdown().weights == plain.weights
    forced = MemoryModel(mistral, _qlora(engine="torchtune", kbit_preparation=True)).breakdown()
    assert forced.weights == prepared.weights
    # LoRA on a 16-bit base is never prepared.
    lora = Workload(kind="lora", weights="bf16", engine="hf-trainer", kbit_preparation=True)
    assert (
        MemoryModel(mistral, lora).breakdown()
        == MemoryModel(mistral, replace(lora, kbit_preparation=False)).breakdown()
    )


@pytest.mark.parametrize("dropout", [False, True])
def test_kbit_preparation_keeps_fp32_hidden_states_on_one_gpu_not_under_zero_or_fsdp(models, dropout):
    """A checkpointed block keeps its input: 4 bytes an element after the preparation instead of 2,
    on every layer. The block being recomputed adds its fp32 norm outputs: kept by LoRA's A (4 h
    each, attention and MLP), or with dropout the fp32 copies of q, k, v, gate and up's inputs (2
    more bytes an element each). ZeRO (DeepSpeed casts the module to bf16) and FSDP (its mixed
    precision gathers bf16) compute in 16 bits."""
    mistral = models.get("mistral-7b")
    h, L, tokens = mistral.hidden_size, mistral.num_layers, 4 * 4096
    prepared = MemoryModel(mistral, _qlora(engine="hf-trainer", lora_dropout=dropout))
    plain = MemoryModel(mistral, _qlora(engine="hf-trainer", lora_dropout=dropout, kbit_preparation=False))
    one_layer = 5 * 2 * h if dropout else 2 * 4 * h
    expected = tokens * (L * 2 * h + one_layer)
    assert prepared.breakdown().activations - plain.breakdown().activations == pytest.approx(expected)
    assert prepared.breakdown(2, "ddp").activations > plain.breakdown(2, "ddp").activations
    for sharded in ("zero1", "zero2", "zero3", "fsdp"):
        assert prepared.breakdown(2, sharded).activations == plain.breakdown(2, sharded).activations


def test_a_frozen_fp8_base_keeps_its_fp8_data_only(models):
    """LoRA on a base held in FP8 (NeMo's fp8_params): one byte a block weight, as a quantized base,
    where training the base in FP8 keeps its 16-bit weights and their cached FP8 copy (3 bytes)."""
    llama = models.get("llama-2-70b")
    blocks = llama.counts.blocks
    lora = MemoryModel(llama, Workload(kind="lora", weights="fp8", engine="megatron"))
    bf16 = MemoryModel(llama, Workload(kind="lora", weights="bf16", engine="megatron"))
    full = MemoryModel(llama, Workload(kind="full_finetune", weights="fp8", engine="megatron"))
    assert bf16.breakdown().weights - lora.breakdown().weights == pytest.approx(blocks * 1.0)
    assert full.breakdown().weights - lora.breakdown().weights == pytest.approx(blocks * 2.0)


@pytest.mark.parametrize("dropout", [False, True])
def test_a_fused_frozen_base_keeps_no_gemm_input_for_weight_gradients(models, dropout):
    """Megatron-Core with Transformer Engine saves a linear's input only for its weight gradient
    (``backward_needs_input = weight.requires_grad``); LayerNormLinear and LayerNormMLP free the norm
    output and fc2's input of frozen weights. Per token and layer, a LoRA base on q, k, v and o
    keeps: each norm's input (a h, two norms), q, k, v and the attention output, fc1's output (gate
    and up, 2 a i), and what the adapters read, each tensor once: the attention norm's output (a h)
    for q, k and v; o reads the attention output the attention keeps. Each adapter's dropout adds
    its mask and dropped copy ((1 + a) fan-in), once for q, k and v, which Megatron-Core fuses into
    one projection with one adapter. Full fine-tuning keeps the norm outputs and fc2's input as well
    (2 a h + a i more)."""
    llama = models.get("llama-2-70b")
    h, i, d_q, d_kv, a = llama.hidden_size, llama.intermediate_size, llama.q_dim, llama.kv_dim, 2.0
    targets = ("q_proj", "k_proj", "v_proj", "o_proj")
    lora = Workload(kind="lora", engine="megatron", lora_targets=targets, lora_dropout=dropout)
    frozen = MemoryModel(llama, lora).act_per_token_layer
    base = 2 * a * h + a * (d_q + 2 * d_kv) + a * d_q + 2 * a * i
    adapters = a * h + ((1 + a) * (h + d_q) if dropout else 0.0)
    assert frozen == pytest.approx(base + adapters)
    full = MemoryModel(llama, Workload(kind="full_finetune", engine="megatron")).act_per_token_layer
    assert full == pytest.approx(base + 2 * a * h + a * i)


def test_fused_fp8_gemms_keep_their_inputs_in_fp8(models):
    """With FP8 GEMMs Transformer Engine keeps a trained linear's input as the FP8 tensor it
    multiplied (1 byte an element): each norm's output and fc2's input, and the output projection's
    own FP8 copy of the attention output (whose 16-bit original the attention keeps). A frozen
    base keeps none of them, in FP8 or not."""
    llama = models.get("llama-3.1-70b")
    h, i, d_q = llama.hidden_size, llama.intermediate_size, llama.q_dim
    bf16 = MemoryModel(llama, Workload(kind="pretrain", engine="megatron")).act_per_token_layer
    fp8 = MemoryModel(llama, Workload(kind="pretrain", engine="megatron", compute_precision="fp8"))
    assert bf16 - fp8.act_per_token_layer == pytest.approx(2 * h + i - d_q)
    lora = Workload(kind="lora", engine="megatron", lora_dropout=False)
    assert (
        MemoryModel(llama, replace(lora, compute_precision="fp8")).act_per_token_layer
        == MemoryModel(llama, lora).act_per_token_layer
    )


# --- parallelism ---------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 4])
def test_tensor_parallel_splits_weights(llama2, n):
    mm = MemoryModel(llama2, Workload(kind="inference", weights="bf16"))
    one, split = mm.breakdown(), mm.breakdown(n, "tensor")
    assert split.weights == pytest.approx(one.weights / n, rel=0.001)  # norms are replicated
    assert split.kv_cache == pytest.approx(one.kv_cache / n)


def test_pipeline_parallel_splits_block_weights(llama2):
    mm = MemoryModel(llama2, Workload(kind="inference", weights="bf16"))
    c = llama2.counts
    edge = max(c.embedding, c.lm_head) * 2  # the first stage holds the embedding (the last the head)
    norms = c.norms_and_other * 2
    bd = mm.breakdown(4, "pipeline")
    assert bd.weights - edge - norms / 4 == pytest.approx(c.blocks * 2 / 4)
    assert bd.kv_cache == pytest.approx(mm.breakdown().kv_cache / 4)


def test_ddp_inference_keeps_full_weights_and_splits_sequences(llama2):
    mm = MemoryModel(llama2, Workload(kind="inference", weights="bf16", batch_size=8))
    one, four = mm.breakdown(), mm.breakdown(4, "ddp")
    assert four.weights == one.weights
    assert four.kv_cache == pytest.approx(one.kv_cache / 4)


# --- activations -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kind, weights", [("pretrain", "bf16"), ("full_finetune", "bf16"), ("lora", "bf16"), ("qlora", "nf4")]
)
def test_gradient_checkpointing_reduces_activations(llama2, kind, weights):
    plain = MemoryModel(llama2, Workload(kind=kind, weights=weights, batch_size=4, seq_len=2048)).breakdown()
    ckpt = MemoryModel(
        llama2, Workload(kind=kind, weights=weights, batch_size=4, seq_len=2048, gradient_checkpointing=True)
    ).breakdown()
    assert ckpt.activations < plain.activations / 2
    assert (ckpt.weights, ckpt.gradients, ckpt.optimizer) == (plain.weights, plain.gradients, plain.optimizer)


@pytest.mark.parametrize("kind, weights", [("pretrain", "bf16"), ("lora", "bf16")])
def test_eager_attention_adds_quadratic_activations(llama2, kind, weights):
    def extra(seq):
        def act(flash):
            wl = Workload(kind=kind, weights=weights, batch_size=1, seq_len=seq, flash_attention=flash)
            return MemoryModel(llama2, wl).breakdown().activations

        return act(False) - act(True)

    e1, e2, e4 = extra(1024), extra(2048), extra(4096)
    assert e1 > 0
    assert e2 == pytest.approx(4 * e1) and e4 == pytest.approx(16 * e1)


def test_eager_attention_inference_scores_quadratic_in_prompt(llama2):
    def extra(prompt):
        def act(flash):
            wl = Workload(
                kind="inference", weights="bf16", prompt_tokens=prompt, output_tokens=1, flash_attention=flash
            )
            return MemoryModel(llama2, wl).breakdown().activations

        return act(False) - act(True)

    assert extra(2048) == pytest.approx(4 * extra(1024))


def test_training_activations_linear_in_batch(llama2):
    mm = MemoryModel(llama2, Workload(kind="lora", weights="bf16", seq_len=1024))
    a1, a2, a8 = (mm.breakdown(batch_size=b).activations for b in (1, 2, 8))
    assert a8 - a1 == pytest.approx(7 * (a2 - a1))


# --- what-if: largest batch and longest context ------------------------------------------------

WHAT_IF = [
    ("llama-2-7b", Workload(kind="inference", weights="bf16"), 80, 1, "none"),
    (
        "llama-3.1-8b",
        Workload(kind="lora", weights="bf16", seq_len=2048, gradient_checkpointing=True),
        80,
        1,
        "none",
    ),
    ("llama-3.1-8b", Workload(kind="qlora", weights="nf4", seq_len=1024), 24, 1, "none"),
    ("llama-2-13b", Workload(kind="inference", weights="bf16"), 40, 2, "tensor"),
    ("llama-2-7b", Workload(kind="inference", weights="bf16"), 24, 4, "ddp"),
    (
        "llama-2-7b",
        Workload(kind="full_finetune", weights="bf16", seq_len=1024, gradient_checkpointing=True),
        80,
        8,
        "zero3",
    ),
]


@pytest.mark.parametrize(
    "model_id, workload, gib, n, par", WHAT_IF, ids=[f"{w[0]}-{w[1].kind}-{w[3]}x{w[4]}" for w in WHAT_IF]
)
def test_max_batch_fits_and_one_more_does_not(models, model_id, workload, gib, n, par):
    mm = MemoryModel(models.get(model_id), workload)
    cap = gib * GIB
    best = mm.max_batch(cap, n, par)
    assert best >= 1
    assert mm.breakdown(n, par, batch_size=best).device_total <= cap
    if par == "ddp" and n > 1:  # whole replicas: the next one that adds a sequence on every GPU
        assert best % n == 0
        assert mm.breakdown(n, par, batch_size=best + n).device_total > cap
    else:
        assert mm.breakdown(n, par, batch_size=best + 1).device_total > cap


@pytest.mark.parametrize(
    "model_id, workload, gib, n, par", WHAT_IF, ids=[f"{w[0]}-{w[1].kind}-{w[3]}x{w[4]}" for w in WHAT_IF]
)
def test_max_context_fits_and_one_more_does_not(models, model_id, workload, gib, n, par):
    mm = MemoryModel(models.get(model_id), workload)
    cap = gib * GIB
    best = mm.max_context(cap, n, par)
    assert best >= 1
    assert mm.breakdown(n, par, context=best).device_total <= cap
    assert mm.breakdown(n, par, context=best + 1).device_total > cap


def test_nothing_fits_gives_zero(llama2):
    mm = MemoryModel(llama2, Workload(kind="pretrain", weights="bf16"))
    assert mm.max_batch(24 * GIB) == 0
    assert mm.max_context(24 * GIB) == 0


def test_pipeline_training_state_follows_the_stage_parameters(models):
    """A stage trains exactly the parameters it holds: in bf16, its gradients equal its weights, and adding
    a layer never shrinks a stage (regression: the embedding and head were once counted block_share extra)."""
    from dataclasses import replace

    llama3 = models.get("llama-3.1-8b")
    workload = Workload(kind="pretrain", weights="bf16")
    bd = MemoryModel(llama3, workload).breakdown(4, "pipeline")
    assert bd.gradients == pytest.approx(bd.weights, rel=1e-3)
    five = MemoryModel(replace(llama3, num_layers=5), workload).breakdown(4, "pipeline")
    six = MemoryModel(replace(llama3, num_layers=6), workload).breakdown(4, "pipeline")
    assert six.device_total >= five.device_total * (1 - 1e-6)


def test_pipeline_lora_adapters_follow_the_stage_layers(models):
    llama3 = models.get("llama-3.1-8b")
    mm = MemoryModel(llama3, Workload(kind="lora", weights="bf16"))
    one, four = mm.breakdown(), mm.breakdown(4, "pipeline")
    assert four.adapters == pytest.approx(one.adapters / 4)
    assert four.gradients == pytest.approx(one.gradients / 4)
