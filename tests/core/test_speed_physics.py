"""The speed and memory physics of issue 14: kernel families, launch overhead, shape-aware training,
bf16 optimizer state, activations per framework, 80% ranges and the refit over rows.

Sources
-------
- Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
  eq. 1: a GPT layer keeps 34 s b h + 5 a s^2 b bytes without recomputation; FlashAttention
  (Dao et al. 2022) removes the 5 a s^2 b term.
- llama.cpp ``ggml/src/ggml-common.h``: ``block_q4_0`` is an fp16 scale and 16 bytes for 32
  weights (4.5 bits), ``block_q8_0`` an fp16 scale and 32 bytes (8.5 bits).
- Frantar et al. 2024 (MARLIN): symmetric int4 with one fp16 scale per group of 128 (4.125 bits).
- Lin et al. 2023 (AWQ) and Frantar et al. 2022 (GPTQ): fp16 scale and packed 4-bit zero per
  group of 128 (4.156 bits).
- torchtune (pytorch/torchtune README, "Memory and training speed"): pure bf16 training keeps the
  AdamW moments in bf16 and no fp32 master copy.
- Dettmers et al. 2022 (LLM.int8) and 2023 (QLoRA): the bitsandbytes kernels dequantize in every
  matmul and run slower than 16-bit weights at inference.
"""

import dataclasses

import pytest

from gpuadvisor.core.estimation.memory import MemoryModel
from gpuadvisor.core.estimation.performance import (
    KV_COPIES_NOTES,
    attention_flop_weight,
    block_gemm_width_efficiency,
    fp8_gemm_share,
    inference_performance,
    lora_adapter_work,
    matmul_params,
    moe_dispatch_bytes,
    prompt_head_params,
    shape_of,
    training_flops_per_token,
    training_performance,
)
from gpuadvisor.core.formats.scenario import ScenarioError, scenario_from_dict, scenario_to_dict
from gpuadvisor.core.specs.constants import RANGE_LABEL, engine_for, kernel_family, shipped_constants
from gpuadvisor.core.specs.hardware import load_gpu_catalog
from gpuadvisor.core.specs.kernels import KERNEL_FAMILIES
from gpuadvisor.core.specs.models import ModelSpec
from gpuadvisor.core.specs.presets import load_model_catalog
from gpuadvisor.core.specs.quant_types import tensor_type
from gpuadvisor.core.specs.workload import QUANTIZATIONS, Workload, weight_bytes_per_param


@pytest.fixture(scope="module")
def models():
    return load_model_catalog()


@pytest.fixture(scope="module")
def gpus():
    return load_gpu_catalog()


def decode(model, gpu, **kw) -> float:
    """Tokens/s per user of one GPU."""
    w = Workload(kind="inference", **kw)
    engine = engine_for(w.engine, w.kind)
    return inference_performance(MemoryModel(model, w), gpu, 1, "none", engine).tokens_per_s_per_user


def training(model, gpu, n=1, parallelism="none", **kw):
    w = Workload(**kw)
    return training_performance(MemoryModel(model, w), gpu, n, parallelism, engine_for(w.engine, w.kind))


# --- scenario keys -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "family, weights",
    [
        ("awq", "int4"),
        ("gptq", "int8"),
        ("marlin", "int4"),
        ("exllama", "int4"),
        ("bnb", "nf4"),
        ("bnb", "int8"),
        ("gguf", "int4"),
        ("gguf", "fp16"),
        ("fp8", "fp8"),
        ("w8a8", "int8"),
        ("torchao", "int4"),
        ("hqq", "int4"),
    ],
)
def test_every_quantization_family_is_a_scenario_key(family, weights):
    sc = scenario_from_dict(
        {
            "model": {"preset": "llama-2-7b"},
            "workload": {"weights": weights, "quantization": family, "engine": "transformers"},
        }
    )
    assert sc.workload.quantization == family
    assert scenario_from_dict(scenario_to_dict(sc)).workload == sc.workload
    assert set(QUANTIZATIONS) == {
        "awq",
        "gptq",
        "marlin",
        "exllama",
        "bnb",
        "gguf",
        "fp8",
        "w8a8",
        "torchao",
        "hqq",
    }


@pytest.mark.parametrize(
    "workload, field, words",
    [
        ({"weights": "bf16", "quantization": "awq"}, "workload.quantization", "needs quantized weights"),
        ({"weights": "int4", "quantization": "awq4"}, "workload.quantization", "must be one of awq, gptq"),
        (
            {"weights": "nf4", "quantization": "awq"},
            "workload.quantization",
            "awq runs int4 weights, not nf4",
        ),
        (
            {"kind": "qlora", "weights": "int4", "quantization": "marlin"},
            "workload.quantization",
            "training on a quantized base uses bnb, hqq or torchao",
        ),
        ({"optimizer_state_dtype": "fp16"}, "workload.optimizer_state_dtype", "must be one of fp32, bf16"),
        ({"cuda_graphs": "yes"}, "workload.cuda_graphs", "must be true or false"),
    ],
)
def test_bad_keys_name_the_field(workload, field, words):
    with pytest.raises(ScenarioError) as info:
        scenario_from_dict({"model": {"preset": "llama-2-7b"}, "workload": workload})
    message = str(info.value)
    assert message.startswith(field + ":") and words in message and "\n" not in message


@pytest.mark.parametrize(
    "weights, engine, kind, family",
    [
        ("int4", "vllm", "inference", "marlin"),
        ("int4", "tensorrt-llm", "inference", "awq"),
        ("int4", "llama.cpp", "inference", "gguf"),
        ("int4", "transformers", "inference", "exllama"),
        ("nf4", "transformers", "inference", "bnb"),
        ("int8", "transformers", "inference", "bnb"),
        ("nf4", None, "qlora", "bnb"),
        ("fp8", "vllm", "inference", "fp8"),
        ("bf16", "vllm", "inference", None),
        # gpt-oss's MXFP4 experts in a serving engine: its 4-bit kernels, never GGUF's 16-bit copy.
        ("mxfp4", "vllm", "inference", "marlin"),
        ("mxfp4", "sglang", "inference", "marlin"),
        ("mxfp4", "tensorrt-llm", "inference", "awq"),
        ("mxfp4", None, "inference", "marlin"),
        ("nvfp4", "vllm", "inference", "marlin"),
        ("mxfp4", "llama.cpp", "inference", "gguf"),
        ("q4_k_m", "vllm", "inference", "gguf"),
    ],
)
def test_quantization_defaults_by_engine_and_weights(weights, engine, kind, family):
    assert Workload(kind=kind, weights=weights, engine=engine).quantization_family == family


def test_a_serving_engine_loads_an_fp4_checkpoint_as_published(models):
    """gpt-oss's checkpoint keeps its attention, routers, embedding and head in BF16 (its
    quantization_config's modules_to_not_convert) and only the experts in MXFP4; vLLM, SGLang and
    TensorRT-LLM load it so (vLLM reports 12.88 GiB loaded for gpt-oss-20b, vllm-project/vllm
    issue #22331; OpenAI's "gpt-oss-120b & gpt-oss-20b Model Card", 2025, arXiv:2508.10925,
    Table 1, gives the checkpoint sizes: 60.8 GiB for gpt-oss-120b and 12.8 GiB for gpt-oss-20b).
    llama.cpp's GGUF stores those other matrices as q8_0 (gpt-oss-120b's MXFP4 GGUF is 59.02 GiB,
    ggml-org/llama.cpp issue #15253)."""
    gib = 2**30

    def weights(name: str, engine: str) -> float:
        wl = Workload(kind="inference", weights="mxfp4", engine=engine)
        return MemoryModel(models.get(name), wl).weight_bytes / gib

    assert weights("gpt-oss-20b", "vllm") == pytest.approx(12.88, rel=0.01)
    assert weights("gpt-oss-120b", "llama.cpp") == pytest.approx(59.02, rel=0.005)
    for engine in ("vllm", "sglang", "tensorrt-llm"):
        # The model card's 60.8 GiB, to the digit it is printed with.
        assert weights("gpt-oss-120b", engine) == pytest.approx(60.8, abs=0.05)
        assert weights("gpt-oss-20b", engine) == pytest.approx(12.8, abs=0.05)
    m = models.get("gpt-oss-20b")
    assert tensor_type("mxfp4", "ffn_exps", 0, m, checkpoint=True) == "mxfp4"
    assert tensor_type("mxfp4", "attn_q", 0, m, checkpoint=True) == "bf16"
    assert tensor_type("mxfp4", "attn_q", 0, m) == "q8_0"
    assert tensor_type("nvfp4", "output", 0, m, checkpoint=True) == "bf16"
    # Training scenarios and llama.cpp never read the published FP4 checkpoint this way.
    assert not Workload(kind="inference", weights="mxfp4", engine="llama.cpp").fp4_checkpoint
    assert Workload(kind="inference", weights="nvfp4", engine="vllm").fp4_checkpoint


def test_cuda_graph_defaults_by_engine():
    assert Workload(engine="vllm").uses_cuda_graphs and Workload(engine="tensorrt-llm").uses_cuda_graphs
    assert not Workload(engine="transformers").uses_cuda_graphs
    assert Workload(engine="transformers", cuda_graphs=True).uses_cuda_graphs
    assert not Workload(engine="vllm", cuda_graphs=False).uses_cuda_graphs


# --- bits per weight ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "family, weights, bits",
    [
        ("marlin", "int4", 4.125),
        ("awq", "int4", 4 + 20 / 128),
        ("gptq", "int4", 4 + 20 / 128),
        ("exllama", "int4", 4 + 20 / 128),
        ("torchao", "int4", 4.25),
        ("hqq", "int4", 4.5),
        ("gguf", "int4", 4.5),
        ("gguf", "int8", 8.5),
        ("gptq", "int8", 8 + 20 / 128),
        ("bnb", "int4", 4 + 8 / 64 + 32 / (64 * 256)),
    ],
)
def test_bits_per_weight_include_each_familys_constants(family, weights, bits):
    assert weight_bytes_per_param(weights, 4096, True, family) * 8 == pytest.approx(bits, rel=1e-9)


def test_quantized_weights_in_memory_follow_the_family(models):
    m = models.get("llama-2-7b")
    marlin = MemoryModel(m, Workload(weights="int4", quantization="marlin")).weight_bytes
    hqq = MemoryModel(m, Workload(weights="int4", quantization="hqq")).weight_bytes
    blocks = m.counts.blocks
    assert hqq - marlin == pytest.approx(blocks * (4.5 - 4.125) / 8, rel=1e-9)


# --- optimizer state precision ---------------------------------------------------------------------
def test_bf16_optimizer_state_halves_the_moments(models):
    m = models.get("llama-3.1-8b")
    fp32 = MemoryModel(m, Workload(kind="full_finetune", master_weights=False))
    bf16 = MemoryModel(m, Workload(kind="full_finetune", master_weights=False, optimizer_state_dtype="bf16"))
    assert bf16.optim_bytes == pytest.approx(fp32.optim_bytes / 2, rel=1e-12)
    assert fp32.optim_bytes == pytest.approx(8 * m.counts.total, rel=1e-12)


def test_pure_bf16_training_keeps_no_master_copy(models):
    m = models.get("llama-3.1-8b")
    mixed = MemoryModel(m, Workload(kind="full_finetune"))
    pure = MemoryModel(m, Workload(kind="full_finetune", optimizer_state_dtype="bf16"))
    assert mixed.optim_bytes == pytest.approx(12 * m.counts.total, rel=1e-12)  # ZeRO paper's K = 12
    assert pure.optim_bytes == pytest.approx(4 * m.counts.total, rel=1e-12)


# --- activations per framework ----------------------------------------------------------------------
def _gpt(h=2048, layers=24):
    return ModelSpec(
        name="GPT",
        num_layers=layers,
        hidden_size=h,
        num_attention_heads=16,
        num_key_value_heads=16,
        intermediate_size=4 * h,
        vocab_size=50304,
        gated_mlp=False,
        tied_embeddings=True,
        position_embedding="learned",
        norm="layernorm",
    )


def test_fused_gpt_layer_keeps_korthikantis_34_s_b_h():
    m = _gpt()
    mm = MemoryModel(m, Workload(kind="pretrain", engine="megatron"))
    assert mm.activation_framework == "fused"
    assert mm.act_per_token_layer == pytest.approx(34 * m.hidden_size)


def test_llama_layer_activations_eager_and_fused(models):
    m = models.get("llama-2-7b")
    h, i = m.hidden_size, m.intermediate_size
    eager = MemoryModel(m, Workload(kind="pretrain", engine="fsdp")).act_per_token_layer
    fused = MemoryModel(m, Workload(kind="pretrain", engine="megatron")).act_per_token_layer
    # Eager: 2 RMSNorms x (fp32 input 4h + normalized 2h + output 2h) + q, k, v, attention output and
    # o_proj input (10h) + gate, SiLU, up and product (8i).
    assert eager == pytest.approx(16 * h + 10 * h + 8 * i)
    # Transformer Engine: 2 x (norm input + output) 8h, q, k, v, attention output 8h, fc1 out + SwiGLU out 6i.
    assert fused == pytest.approx(8 * h + 8 * h + 6 * i)
    assert fused < 0.7 * eager


# --- inference kernels --------------------------------------------------------------------------------
@pytest.mark.parametrize("graphs, margin", [(False, 1.0), (True, 0.7)])
def test_bnb_nf4_decodes_slower_than_awq_at_batch_1(models, gpus, graphs, margin):
    # Eager Transformers decoding is bound by launching kernels (bnb adds some); with CUDA graphs
    # (static cache + torch.compile) the weight stream decides, and bnb's GEMV is far from AWQ's.
    m, gpu = models.get("llama-2-70b"), gpus.get("h100-sxm")
    awq = decode(m, gpu, weights="int4", quantization="awq", engine="transformers", cuda_graphs=graphs)
    nf4 = decode(m, gpu, weights="nf4", engine="transformers", cuda_graphs=graphs)
    assert nf4 < margin * awq


def test_llm_int8_is_slower_than_16_bit(models, gpus):
    m, gpu = models.get("llama-2-13b"), gpus.get("a100-80gb")
    assert decode(m, gpu, weights="int8", quantization="bnb", engine="transformers") < decode(
        m, gpu, weights="bf16", engine="transformers"
    )


@pytest.mark.parametrize("family", ["marlin", "awq", "exllama"])
def test_group_wise_int4_gemv_runs_near_the_weight_bandwidth_roofline(models, gpus, family):
    # A 70B model, where the weight stream dominates the fixed per-kernel time: 4-bit weights are
    # 3.85x fewer bytes than 16-bit, and these GEMV kernels turn most of that into speed (MARLIN
    # paper: about 3.9x over FP16 at batch 1, for the kernel alone). The step's fixed GPU time
    # (about a thousand kernels at the fitted few microseconds each, some 5 ms) is the same for both
    # and takes part of it: at least 2.8x.
    # TensorRT-LLM's C++ runtime: its small host step leaves the weight stream in view.
    m, gpu = models.get("llama-2-70b"), gpus.get("h100-sxm")
    kw = dict(engine="tensorrt-llm", prompt_tokens=16, output_tokens=16)
    int4 = decode(m, gpu, weights="int4", quantization=family, **kw)
    bf16 = decode(m, gpu, weights="bf16", **kw)
    assert 2.8 < int4 / bf16 < 3.9


@pytest.mark.parametrize("engine", ["vllm", "transformers", "tensorrt-llm", "llama.cpp", "autoawq"])
@pytest.mark.parametrize("batch", [1, 8, 64])
def test_cuda_graphs_are_never_slower(models, gpus, engine, batch):
    m, gpu = models.get("llama-3.1-8b"), gpus.get("l40s")
    base = dict(weights="bf16", engine=engine, batch_size=batch, prompt_tokens=256, output_tokens=128)
    assert decode(m, gpu, cuda_graphs=True, **base) >= decode(m, gpu, cuda_graphs=False, **base)


def test_eager_small_model_is_launch_bound_and_graphs_fix_it(models, gpus):
    m, gpu = models.get("llama-2-7b"), gpus.get("h100-sxm")
    eager = decode(m, gpu, weights="bf16", engine="transformers")
    graphs = decode(m, gpu, weights="bf16", engine="transformers", cuda_graphs=True)
    assert graphs > 1.5 * eager


def test_prefill_efficiency_grows_with_tokens_per_gemm(models, gpus):
    m, gpu = models.get("llama-3.1-8b"), gpus.get("a100-80gb")
    rates = []
    for prompt in (16, 128, 2048):
        w = Workload(kind="inference", engine="vllm", prompt_tokens=prompt, output_tokens=1)
        perf = inference_performance(MemoryModel(m, w), gpu, 1, "none", engine_for("vllm", "inference"))
        rates.append(prompt / perf.time_to_first_token_s)
    assert rates[0] < rates[1] < rates[2]


def _prompt_rate(model, gpu, engine: str, **kw) -> float:
    """Prompt tokens/s of one 1,920-token prompt (ExLlama's README measures this length)."""
    w = Workload(kind="inference", engine=engine, prompt_tokens=1920, output_tokens=1, **kw)
    perf = inference_performance(MemoryModel(model, w), gpu, 1, "none", engine_for(engine, "inference"))
    return 1920 / perf.time_to_first_token_s


def test_attention_runs_at_the_16_bit_rate_beside_fp8_gemms(models, gpus):
    """FP8 weights double the H100's GEMM peak, not its attention's: FlashAttention runs on 16-bit
    tensor cores. So FP8 gains on a prompt less the longer the prompt (attention FLOPs grow with its
    length), and nothing of the attention's share: with GEMM FLOPs G and attention FLOPs A per
    token, the compute-bound gain is (G + A) / (G / 2 + A), under 2 and falling towards 1."""
    m, h100 = models.get("llama-3.1-8b"), gpus.get("h100-sxm")
    assert attention_flop_weight(h100, "fp8", h100.fp8_dense_tflops) == pytest.approx(
        h100.fp8_dense_tflops / h100.bf16_dense_tflops
    )
    assert attention_flop_weight(h100, "bf16", h100.bf16_dense_tflops) == 1.0

    def rate(weights: str, prompt: int) -> float:
        w = Workload(kind="inference", engine="vllm", weights=weights, prompt_tokens=prompt, output_tokens=1)
        perf = inference_performance(MemoryModel(m, w), h100, 1, "none", engine_for("vllm", "inference"))
        return prompt / perf.time_to_first_token_s

    gains = [rate("fp8", p) / rate("bf16", p) for p in (2048, 32768)]
    assert 1.0 < gains[1] < gains[0] < 2.0
    # At 32K tokens attention is about half of the FLOPs: the gain is near (G + A) / (G / 2 + A).
    n_mm = 2 * (m.counts.active - m.counts.embedding + m.vocab_size * m.hidden_size)
    attn = 2 * m.num_layers * m.q_dim * 32768
    assert gains[1] == pytest.approx((n_mm + attn) / (n_mm / 2 + attn), rel=0.08)


def test_sliding_window_layers_attend_to_their_window_only(models, gpus):
    """gpt-oss alternates 128-token sliding-window layers with full attention (its config's
    layer_types). A token in a window layer attends to at most 128 keys, so a long prompt's
    attention FLOPs are about half a full-attention model's, and the keys attended average
    ``W - W^2 / (2P)`` per window layer: the first ``W`` positions see ``W / 2`` on average."""
    m = models.get("gpt-oss-20b")
    assert (m.sliding_window, m.sliding_window_layer_fraction) == (128, 0.5)
    full = dataclasses.replace(m, sliding_window=None)
    # Short of the window both count every earlier key.
    assert m.prefill_attended_tokens(100) == full.prefill_attended_tokens(100) == 50.0
    assert m.attended_tokens(100) == full.attended_tokens(100) == 100.0
    # Counted directly: position i (1..P) attends to min(i, W) keys in a window layer, i / 2 by
    # the pass's convention (P / 2 on average, as the causal mask halves a square) in a full one.
    p, w = 32_000, 128
    window_mean = sum(min(i, w) for i in range(1, p + 1)) / p
    assert m.prefill_attended_tokens(p) == pytest.approx(0.5 * window_mean + 0.5 * p / 2, rel=1e-3)
    assert m.attended_tokens(p) == 0.5 * w + 0.5 * p  # the KV cache the decode step reads

    # So a 32K-token prompt prefills faster with the window than without it, and a short one not.
    h100 = gpus.get("h100-sxm")

    def ttft(model: ModelSpec, prompt: int) -> float:
        wl = Workload(kind="inference", engine="vllm", weights="mxfp4", prompt_tokens=prompt, output_tokens=1)
        return inference_performance(
            MemoryModel(model, wl), h100, 1, "none", engine_for("vllm", "inference")
        ).time_to_first_token_s

    assert ttft(m, 100) == pytest.approx(ttft(full, 100))
    # A 32K-token prefill is compute-bound: the time falls as its FLOPs per token do, GEMMs (the
    # MoE's counted at the expert kernels' rate, as the estimate counts them) plus attention.
    wl = Workload(kind="inference", engine="vllm", weights="mxfp4", prompt_tokens=p, output_tokens=1)
    vllm = engine_for("vllm", "inference")
    gemm = 2 * (shape_of(MemoryModel(m, wl), shipped_constants())[1] - prompt_head_params(m, p, vllm))
    attention = 4 * m.num_layers * m.q_dim
    flops = (gemm + attention * m.prefill_attended_tokens(p)) / (gemm + attention * p / 2)
    assert m.prefill_attended_tokens(p) < 0.51 * p / 2
    assert ttft(m, p) / ttft(full, p) == pytest.approx(flops, rel=0.01)
    # Training counts the same keys in its forward's attention core.
    tr = Workload(kind="full_finetune", seq_len=p)
    assert training_flops_per_token(m, tr) - training_flops_per_token(full, tr) == pytest.approx(
        3 * attention * (m.prefill_attended_tokens(p) - p / 2)
    )


def test_tensor_parallel_ranks_each_hold_and_read_the_kv_heads_they_cannot_split(models, gpus):
    """Tensor parallelism splits the KV cache by KV head. Latent attention (DeepSeek) has one
    latent that every head reads, so each of 8 ranks holds and reads all of it (SGLang v0.4 notes:
    "only have one KV head ... tensor parallelism on 8 GPUs ... duplicated KV cache"); 4 KV heads
    over 8 ranks are held twice; 8 over 8 once."""
    r1, qwen, llama = models.get("deepseek-r1"), models.get("qwen3-235b-a22b"), models.get("llama-3.1-70b")
    assert (r1.kv_copies(8), qwen.kv_copies(8), llama.kv_copies(8), llama.kv_copies(1)) == (8, 2, 1, 1)

    def kv_per_gpu(model: ModelSpec, t: int) -> float:
        wl = Workload(kind="inference", engine="vllm", weights="fp8", batch_size=16, prompt_tokens=2000)
        return MemoryModel(model, wl).breakdown(t, "tensor").kv_cache

    # Per GPU: all of the latent cache on each of 8 ranks; a quarter of Qwen3's 4 heads' cache
    # (one head, held by two ranks each); an eighth of Llama's 8 heads'.
    assert kv_per_gpu(r1, 8) == pytest.approx(kv_per_gpu(r1, 1))
    assert kv_per_gpu(qwen, 8) == pytest.approx(kv_per_gpu(qwen, 1) / 4)
    assert kv_per_gpu(llama, 8) == pytest.approx(kv_per_gpu(llama, 1) / 8)

    # Each rank reads its copy in every decode step: at a long context, where DeepSeek-R1's
    # step is the KV read, 8 ranks take as long on the latent as one GPU would.
    b200 = gpus.get("b200")
    step = {}
    for batch in (1, 64):
        wl = Workload(
            kind="inference",
            engine="sglang",
            weights="fp8",
            batch_size=batch,
            prompt_tokens=30000,
            output_tokens=2,
        )
        perf = inference_performance(
            MemoryModel(r1, wl), b200, 8, "tensor", engine_for("sglang", "inference")
        )
        step[batch] = 1000.0 / perf.tokens_per_s_per_user  # ms per token at that batch
    mm = MemoryModel(r1, Workload(kind="inference", engine="sglang", weights="fp8", prompt_tokens=30000))
    per_seq = (
        mm.kv_tokens_per_layer(30001) * r1.num_layers * mm.kv_bytes_per_token_layer
    )  # one sequence's cache
    k = shipped_constants()
    bw = b200.memory_bandwidth_gb_s * 1e9 * k.bandwidth_ceiling.get(b200.architecture, 1.0)
    stream = min(
        bw * engine_for("sglang", "inference").bandwidth_efficiency, b200.memory_bandwidth_gb_s * 1e9 * 0.95
    )
    # 63 more sequences add their whole caches' read at one GPU's rate (8 x the cache over 8 GPUs).
    added = 63 * per_seq / (stream * k.kv_bandwidth_factor) * 1000.0
    assert step[64] - step[1] >= 0.9 * added
    # And the estimate says why, in words the window, the CLI and the PDF share.
    assert KV_COPIES_NOTES[True] in perf.notes

    def notes(model: ModelSpec) -> tuple[str, ...]:
        wl = Workload(kind="inference", engine="vllm", weights="fp8", prompt_tokens=2000, output_tokens=100)
        return inference_performance(
            MemoryModel(model, wl), b200, 8, "tensor", engine_for("vllm", "inference")
        ).notes

    assert KV_COPIES_NOTES[False] in notes(qwen)
    assert not set(KV_COPIES_NOTES.values()) & set(notes(llama))


def test_fp16_accumulating_gemms_run_at_the_geforce_fp16_accumulate_peak(models, gpus):
    """ExLlama(V2) multiplies reconstructed FP16 weights with cuBLAS ``cublasHgemm`` (FP16
    accumulate), which an RTX 4090 runs at 330.3 TFLOPS against 165.2 with FP32 accumulate (NVIDIA
    Ada whitepaper, appendix A); an A100 runs both at 312, and an engine accumulating in FP32
    (Transformers) gets no such gain on the 4090."""
    m = models.get("llama-2-7b")
    rtx, a100 = gpus.get("rtx-4090"), gpus.get("a100-80gb")
    assert rtx.fp16_acc16_dense_tflops == pytest.approx(2 * rtx.fp16_dense_tflops, rel=1e-3)
    assert a100.fp16_acc16_dense_tflops is None
    q = dict(weights="int4", quantization="exllama")
    w = Workload(kind="inference", engine="exllamav2", prompt_tokens=1920, output_tokens=1, **q)
    exl = inference_performance(MemoryModel(m, w), rtx, 1, "none", engine_for("exllamav2", "inference"))
    assert exl.peak_tflops == pytest.approx(330.3)
    w = Workload(kind="inference", engine="transformers", prompt_tokens=1920, output_tokens=1)
    hf = inference_performance(MemoryModel(m, w), rtx, 1, "none", engine_for("transformers", "inference"))
    assert hf.peak_tflops == pytest.approx(165.2)
    # The prompt runs compute-bound, so the doubled peak shows in its rate on the 4090 only.
    ratio_rtx = _prompt_rate(m, rtx, "exllamav2", **q) / _prompt_rate(m, rtx, "transformers", **q)
    ratio_a100 = _prompt_rate(m, a100, "exllamav2", **q) / _prompt_rate(m, a100, "transformers", **q)
    assert ratio_rtx > 1.8 * ratio_a100


def test_tensor_parallel_prefill_all_reduces_every_prompt_token(models, gpus):
    """Megatron-style tensor parallelism all-reduces each token's hidden state twice per layer,
    a ring moving 2 (t - 1) / t of it per GPU (Shoeybi et al. 2019; Patarasuk and Yuan 2009): a
    prompt's tokens pay it like the decode batch's do. Over PCIe (four L40S, no NVLink) that is
    about as long as the FP8 GEMMs of a 70B model, so 2,048 more prompt tokens cost at least
    their all-reduce time more than on the GEMMs alone."""
    from gpuadvisor.core.estimation.performance import LINK_EFFICIENCY

    m, gpu = models.get("llama-3.1-70b"), gpus.get("l40s")
    engine = engine_for("tensorrt-llm", "inference")

    def ttft(prompt: int) -> float:
        w = Workload(
            kind="inference", engine="tensorrt-llm", weights="fp8", prompt_tokens=prompt, output_tokens=1
        )
        return inference_performance(MemoryModel(m, w), gpu, 4, "tensor", engine).time_to_first_token_s

    per_token = 2 * m.num_layers * 2 * 3 / 4 * m.hidden_size * 2 / (gpu.pcie_gb_s * 1e9 * LINK_EFFICIENCY)
    assert ttft(4096) - ttft(2048) >= 2048 * per_token
    # Over PCIe the all-reduce is a large share of what the longer prompt adds.
    assert per_token * 2048 > 0.3 * (ttft(4096) - ttft(2048))


def test_an_nvlink_bridge_joins_two_pcie_cards_and_no_more(models, gpus):
    """A PCIe card's NVLink is a bridge over two cards (NVIDIA's datasheets: "NVLink bridge for 2
    GPUs"), and an accessory: A100 PCIe cards talk over PCIe unless the scenario says a bridge
    joins them, and then only as a pair; an SXM server's NVSwitch joins all eight. Treated as one
    NVLink domain, eight A100 PCIe all-reduced at 300 GB/s and came out 3.5 times faster than
    TensorRT-LLM 0.14's throughput table (ledger, 2026-12-07)."""
    from dataclasses import replace

    from gpuadvisor.core.estimation.performance import bridge_note, link

    pcie, sxm = gpus.get("a100-80gb-pcie"), gpus.get("a100-80gb")
    bridged = replace(pcie, nvlink_bridged=True)
    assert pcie.nvlink_bridge and not sxm.nvlink_bridge
    assert link(pcie, 2, 8)[2] == "PCIe" and link(pcie, 8, 8)[2] == "PCIe"
    assert link(bridged, 2, 8)[2] == "NVLink" and link(bridged, 4, 8)[2] == "PCIe"
    assert link(sxm, 8, 8)[2] == "NVLink"
    assert "hardware.nvlink_bridge: true" in (bridge_note(pcie, 2) or "")
    assert "joins two of them, not 4" in (bridge_note(bridged, 4) or "")
    assert bridge_note(bridged, 2) is None and bridge_note(sxm, 8) is None and bridge_note(pcie, 1) is None

    m = models.get("llama-3.1-70b")
    engine = engine_for("vllm", "inference")
    w = Workload(
        kind="inference", engine="vllm", weights="bf16", batch_size=64, prompt_tokens=512, output_tokens=512
    )

    def speed(gpu, n):
        return inference_performance(MemoryModel(m, w), gpu, n, "tensor", engine)

    # Over PCIe the all-reduces of eight cards cost more than their NVLink ones...
    assert speed(pcie, 8).tokens_per_s.expected < speed(sxm, 8).tokens_per_s.expected
    # ... a bridge makes a pair faster, not four; and the answer says which link it priced.
    assert speed(bridged, 2).tokens_per_s.expected > speed(pcie, 2).tokens_per_s.expected
    assert speed(bridged, 4).tokens_per_s.expected == speed(pcie, 4).tokens_per_s.expected
    assert any("NVLink bridge" in n for n in speed(pcie, 8).notes)
    # A whole-catalog comparison says it once, naming every such card.
    from pathlib import Path

    from gpuadvisor.core.estimation.estimate import estimate
    from gpuadvisor.core.formats.scenario import loads_scenario

    text = (Path(__file__).resolve().parents[2] / "docs/examples/lora-llama-3.1-8b.json").read_text()
    est = estimate(loads_scenario(text), gpus, models)
    lines = [x for x in est.warnings if "talk over PCIe here" in x]
    assert len(lines) == 1 and "A100 PCIe 80 GB" in lines[0] and " and " in lines[0]
    # The scenario states the bridge; the catalog's SXM cards ignore it.
    sc = scenario_from_dict(
        {
            "format": "gpuadvisor-scenario",
            "version": 1,
            "model": {"preset": "llama-3.1-8b"},
            "workload": {"kind": "inference"},
            "hardware": {"gpu": "a100-80gb-pcie", "gpu_count": 2, "nvlink_bridge": True},
        }
    )
    assert sc.hardware.nvlink_bridge is True
    with pytest.raises(ScenarioError):
        scenario_from_dict(
            {
                "format": "gpuadvisor-scenario",
                "version": 1,
                "model": {"preset": "llama-3.1-8b"},
                "workload": {"kind": "inference"},
                "hardware": {"nvlink_bridge": "yes"},
            }
        )


def test_a_pcie_all_reduce_over_two_sockets_runs_at_a_share_of_the_lanes(models, gpus):
    """nccl-tests over PCIe without NVLink: eight cards of a two-socket server all-reduce at about
    0.7 of four cards' bus bandwidth (docs/estimation.md, "Links"); four cards, and NVLink, stay as
    they were. With every card at the lanes' rate, eight L40S at TP 8 came out 54% faster than
    TensorRT-LLM 0.14's throughput table (ledger, first-scored 2026-12-07), 19% now."""
    from gpuadvisor.core.estimation.performance import (
        PCIE_CROSS_SOCKET_SHARE,
        allreduce_link,
        link,
    )

    l40s, sxm = gpus.get("l40s"), gpus.get("h100-sxm")
    assert allreduce_link(l40s, 4, 8) == link(l40s, 4, 8)[:2]
    assert allreduce_link(l40s, 8, 8)[0] == pytest.approx(link(l40s, 8, 8)[0] * PCIE_CROSS_SOCKET_SHARE)
    assert allreduce_link(l40s, 8, 8)[1] == link(l40s, 8, 8)[1]
    assert allreduce_link(sxm, 8, 8) == link(sxm, 8, 8)[:2]
    # A laid-out training job's groups: a ring spanning both sockets' cards, not one of four.
    from gpuadvisor.core.estimation.communication import NodeLink, group_link, node_link

    pcie_node, nvlink_node, net = node_link(l40s, 8, 8), node_link(sxm, 8, 8), (50e9, 30e-6)
    assert pcie_node.pcie and not nvlink_node.pcie
    assert group_link(1, 8, 8, pcie_node, net)[0] == pytest.approx(
        pcie_node.bytes_per_s * PCIE_CROSS_SOCKET_SHARE
    )
    assert group_link(2, 4, 8, pcie_node, net)[0] == pytest.approx(
        pcie_node.bytes_per_s * PCIE_CROSS_SOCKET_SHARE
    )
    assert group_link(1, 4, 8, pcie_node, net) == pcie_node[:2]
    assert group_link(1, 8, 8, nvlink_node, net) == nvlink_node[:2]
    # What makes a link PCIe is what it is, not its latency: an NVLink link as slow is not slowed.
    assert group_link(1, 8, 8, NodeLink(24e9, pcie_node.latency_s), net) == (24e9, pcie_node.latency_s)
    # The answer says what it assumed, once for every such card type of a catalog comparison.
    from pathlib import Path

    from gpuadvisor.core.estimation.estimate import estimate
    from gpuadvisor.core.estimation.performance import SocketNote, socket_note
    from gpuadvisor.core.formats.scenario import loads_scenario

    assert isinstance(socket_note(l40s, 8, 8), SocketNote) and "two CPU sockets" in socket_note(l40s, 8, 8)
    assert socket_note(l40s, 4, 8) is None and socket_note(sxm, 8, 8) is None
    text = (Path(__file__).resolve().parents[2] / "docs/examples/lora-llama-3.1-8b.json").read_text()
    lines = [x for x in estimate(loads_scenario(text), gpus, models).warnings if "two CPU sockets" in x]
    assert len(lines) == 1 and "L40S" in lines[0] and "A100 PCIe 80 GB" in lines[0]

    m = models.get("llama-3.1-70b")
    engine = engine_for("tensorrt-llm", "inference")
    w = Workload(
        kind="inference", engine="tensorrt-llm", weights="fp8", batch_size=256, prompt_tokens=128,
        output_tokens=2048,
    )  # fmt: skip

    def per_gpu(n: int) -> float:
        return inference_performance(MemoryModel(m, w), l40s, n, "tensor", engine).tokens_per_s.expected / n

    # Twice the cards over two sockets' link: each card serves fewer tokens than four of one socket.
    assert per_gpu(8) < per_gpu(4)


# --- training efficiency ----------------------------------------------------------------------------
def test_training_mfu_grows_with_gemm_size(models, gpus):
    gpu = gpus.get("a100-80gb")
    small = training(
        models.get("tinyllama-1.1b"), gpu, kind="pretrain", engine="fsdp", batch_size=1, seq_len=512
    )
    large = training(
        models.get("llama-2-13b"), gpu, kind="pretrain", engine="fsdp", batch_size=4, seq_len=4096
    )
    assert small.mfu < large.mfu


def test_fp8_training_gains_far_less_than_2x(models, gpus):
    m, gpu = models.get("llama-3.1-8b"), gpus.get("h100-sxm")
    bf16 = training(m, gpu, kind="pretrain", engine="megatron", weights="bf16", batch_size=2, seq_len=4096)
    fp8 = training(m, gpu, kind="pretrain", engine="megatron", weights="fp8", batch_size=2, seq_len=4096)
    gain = fp8.tokens_per_s.expected / bf16.tokens_per_s.expected
    assert 1.0 < gain < 1.6


def fp8_gain(model, gpu) -> float:
    kw = dict(kind="pretrain", engine="megatron", batch_size=2, seq_len=4096)
    bf16 = training(model, gpu, weights="bf16", **kw)
    fp8 = training(model, gpu, weights="fp8", **kw)
    return fp8.tokens_per_s.expected / bf16.tokens_per_s.expected


def test_fp8_casts_cost_a_share_that_shrinks_with_the_gemm_width(gpus):
    """docs/estimation.md, "FP8 GEMMs": W8 = 4/3 x P_fp8 x ceiling / (BW x 0.7), share = w / (w + W8)."""
    gpu, k = gpus.get("h100-sxm"), shipped_constants()
    ceiling = k.gemm_ceiling["hopper"]
    w8 = 4.0 / 3.0 * gpu.fp8_dense_tflops * 1e12 * ceiling / (gpu.memory_bandwidth_gb_s * 1e9 * 0.7)
    assert 850 < w8 < 900  # about 880 FP8 FLOPs per byte on an H100 SXM, x 4/3
    shares = [
        fp8_gemm_share(gpu, gpu.fp8_dense_tflops, ceiling, w, k) for w in (1024, 2048, 4096, 8192, 16384)
    ]
    assert shares == sorted(shares)
    assert shares[3] == pytest.approx(8192 / (8192 + w8))
    assert shares[-1] < k.fp8_gemm_factor
    # A GPU with fewer FP8 FLOPs per byte of bandwidth pays less for the same casts.
    h200 = gpus.get("h200")
    assert fp8_gemm_share(h200, h200.fp8_dense_tflops, ceiling, 4096, k) > shares[2]


def test_fp8_gains_more_on_wide_models_than_on_narrow_ones(models, gpus):
    """The Megatron-Bridge tables imply about 1.5x for Llama 3 70B and 405B on H100; a 1B model's
    casts eat most of the gain."""
    gpu = gpus.get("h100-sxm")
    small = fp8_gain(models.get("tinyllama-1.1b"), gpu)
    large = fp8_gain(models.get("llama-3.1-70b"), gpu)
    assert 1.0 < small < large
    assert 1.4 < large < 1.9


def test_a_dense_block_keeps_the_hidden_width_curve(models):
    """docs/estimation.md, "Training": every GEMM of a dense block is at least h wide on its narrow
    side, so the FLOP-weighted width efficiency is h / (h + H_half), as before expert widths."""
    half = shipped_constants().gemm_width_half
    for name in ("llama-3.1-8b", "llama-2-13b", "llama-3.1-70b", "mixtral-8x7b"):
        m = models.get(name)
        assert block_gemm_width_efficiency(m, half) == pytest.approx(m.hidden_size / (m.hidden_size + half))


def test_narrow_experts_run_further_from_the_gemm_ceiling(models):
    """The routed experts' GEMMs are i_expert wide on one side: the narrower the experts against
    the hidden size, the lower the block's width efficiency, and a split by expert TP lowers it more."""
    half = shipped_constants().gemm_width_half

    def loss(name):
        m = models.get(name)
        return block_gemm_width_efficiency(m, half) / (m.hidden_size / (m.hidden_size + half))

    # Qwen3-30B-A3B: 768-wide experts on h = 2,048; Qwen3-235B-A22B: 1,536 on 4,096; gpt-oss: as wide as h.
    assert loss("qwen3-30b-a3b") < loss("qwen3-235b-a22b") < 1.0
    assert loss("gpt-oss-120b") == pytest.approx(1.0)
    m = models.get("qwen3-30b-a3b")
    whole = block_gemm_width_efficiency(m, half)
    assert block_gemm_width_efficiency(m, half, 1, 2) < whole
    # Its attention is 4,096 wide (5,120 with K and V): TP2 leaves it at h, TP4 narrows it.
    assert block_gemm_width_efficiency(m, half, 2, 1) == pytest.approx(whole)
    assert block_gemm_width_efficiency(m, half, 4, 1) < whole
    # The limit: with H_half -> 0 every GEMM reaches the ceiling whatever its width.
    assert block_gemm_width_efficiency(m, 1e-9) == pytest.approx(1.0)


def test_moe_token_permutation_moves_k_plus_one_copies_per_layer(models):
    """docs/estimation.md, "Training": 4 (1 + k) h x 2 bytes per token and MoE layer (permute and
    unpermute, forward and backward); nothing for a dense model; the leading dense layers skip it."""
    assert moe_dispatch_bytes(models.get("llama-3.1-8b")) == 0.0
    q = models.get("qwen3-30b-a3b")
    assert moe_dispatch_bytes(q) == 48 * 8.0 * (1 + 8) * 2048
    ds = models.get("deepseek-v3")
    assert moe_dispatch_bytes(ds) == (61 - 3) * 8.0 * (1 + 8) * 7168


def test_moe_training_is_slower_than_its_active_parameters_alone_say(models, gpus):
    """An MoE model's narrow experts and token permutation cost time that a dense model with the
    same GEMM FLOPs does not pay: its MFU is lower on the same GPU."""
    gpu = gpus.get("b200")
    kw = dict(kind="pretrain", engine="megatron", batch_size=4, seq_len=4096)
    moe = training(models.get("qwen3-30b-a3b"), gpu, **kw)
    dense = training(models.get("llama-3.2-3b"), gpu, **kw)
    assert moe.mfu < dense.mfu


def test_fsdp_gathers_hide_only_behind_enough_work_per_layer(models, gpus):
    """A one-word FSDP setup exposes its collectives layer by layer (docs/estimation.md, "ZeRO-3/FSDP
    layer by layer"): at 16K tokens per GPU a layer of Llama 3.1 8B computes for longer than its
    gather takes, at 512 it does not, and more ranks add ring latency to every collective."""
    m, gpu = models.get("llama-3.1-8b"), gpus.get("h100-sxm")

    def share(n, batch, seq):
        perf = training(m, gpu, n, "fsdp", kind="pretrain", engine="fsdp", batch_size=batch, seq_len=seq)
        return perf.communication_share

    assert share(8, 2, 8192) < 0.05
    assert share(256, 2, 8192) < 0.15
    assert share(8, 1, 512) > 0.5
    assert share(256, 1, 512) > share(8, 1, 512)


def test_hopper_reaches_a_lower_mfu_than_ampere(models, gpus):
    m = models.get("llama-2-7b")
    kw = dict(kind="pretrain", engine="fsdp", batch_size=4, seq_len=2048)
    assert training(m, gpus.get("h100-sxm"), **kw).mfu < training(m, gpus.get("a100-80gb"), **kw).mfu


def test_qlora_pays_for_dequantization(models, gpus):
    m, gpu = models.get("llama-2-7b"), gpus.get("a100-80gb")
    lora = training(m, gpu, kind="lora", weights="bf16", batch_size=1, seq_len=512)
    qlora = training(m, gpu, kind="qlora", weights="nf4", batch_size=1, seq_len=512)
    ratio = qlora.tokens_per_s.expected / lora.tokens_per_s.expected
    assert 0.4 < ratio < 0.9  # QLoRA paper: slower than 16-bit LoRA


def test_lora_adapters_count_peft_s_kernels_and_bytes_per_projection(models):
    """PEFT's LoRA layer: dropout, A, B, the scaling and the add forward, seven kernels backward,
    on each adapted projection; 20 bytes per element of each projection's input (dropout's copy
    and mask, the A GEMM's reads, the backward's masked gradient and the added input gradient)."""
    m = models.get("llama-3.1-8b")
    w = Workload(kind="lora", engine="hf-trainer", weights="bf16", lora_targets="all_linear")
    kernels, per_token = lora_adapter_work(MemoryModel(m, w))
    # q, k, v, o, gate, up, down; inputs 4,096 wide but down's (14,336).
    assert kernels == 7 * 12
    assert per_token == (6 * 4096 + 14336) * 20
    no_dropout = dataclasses.replace(w, lora_dropout=False)
    assert lora_adapter_work(MemoryModel(m, no_dropout)) == (7 * 10, (6 * 4096 + 14336) * 10)
    full = Workload(kind="full_finetune", engine="hf-trainer", weights="bf16")
    assert lora_adapter_work(MemoryModel(m, full)) == (0.0, 0.0)
    # Megatron-Core fuses q, k, v (linear_qkv) and gate, up (linear_fc1): four adapters a layer.
    megatron = engine_for("megatron", "lora")
    assert megatron.fused_projections and not engine_for("hf-trainer", "lora").fused_projections
    assert lora_adapter_work(MemoryModel(m, w), megatron) == (4 * 12, (3 * 4096 + 14336) * 20)


def test_lora_adapters_weigh_most_where_a_python_loop_launches_them_for_few_tokens(models, gpus):
    """The adapters' small kernels are launched once per micro-batch, so 256-token micro-batches
    of a small model pay for them far more than 8,192-token ones (Qwen's fine-tuning profile and
    the PEFT suite measure such LoRA steps well below what their GEMMs take)."""
    m, gpu = models.get("llama-3.2-1b"), gpus.get("a100-80gb")

    def speed(seq_len: int, dropout: bool, targets="all_linear") -> float:
        kw = dict(kind="lora", engine="hf-trainer", weights="bf16", batch_size=1, seq_len=seq_len)
        return training(m, gpu, lora_dropout=dropout, lora_targets=targets, **kw).tokens_per_s.expected

    assert speed(256, True) < speed(256, False)
    assert speed(256, True, "all_linear") < speed(256, True, ["q_proj", "v_proj"])
    short = speed(256, True) / speed(256, True, ["q_proj"])
    long = speed(8192, True) / speed(8192, True, ["q_proj"])
    assert short < long < 1.0


# --- ranges and fitting ------------------------------------------------------------------------------
def test_the_range_has_a_name_and_brackets_the_estimate(models, gpus):
    assert RANGE_LABEL == "80% range"
    r = training(models.get("llama-2-7b"), gpus.get("a100-80gb"), kind="lora").tokens_per_s
    assert r.low < r.expected < r.high


def test_every_kernel_family_has_its_source():
    assert all(f.source for f in KERNEL_FAMILIES.values())
    k = shipped_constants()
    assert kernel_family("bnb", "int8", k).id == "bnb-int8" and kernel_family(None, "bf16", k) is None


def test_a_hugging_face_forward_before_v4_45_keeps_every_prompt_positions_logits(models):
    # Transformers before v4.45 returned (batch, prompt, vocab) logits, 16-bit and upcast to fp32;
    # vLLM, and Transformers' generate since v4.45, compute the last position.
    m = models.get("llama-2-7b")
    kw = dict(kind="inference", batch_size=8, prompt_tokens=2048, output_tokens=16)
    older = MemoryModel(m, Workload(engine="transformers", prompt_logits="all", **kw)).breakdown().logits
    hf = MemoryModel(m, Workload(engine="transformers", **kw)).breakdown().logits
    vllm = MemoryModel(m, Workload(engine="vllm", **kw)).breakdown().logits
    assert vllm == pytest.approx(8 * m.vocab_size * 4.0)
    assert hf == vllm
    assert older == pytest.approx(8 * 2048 * m.vocab_size * 6.0)


def test_torchtunes_chunked_loss_keeps_fewer_logit_bytes(models):
    m = models.get("llama-3.1-8b")
    kw = dict(kind="lora", batch_size=2, seq_len=2048)
    tune = MemoryModel(m, Workload(engine="torchtune", **kw)).logit_bytes_per_token
    trainer = MemoryModel(m, Workload(engine="hf-trainer", **kw)).logit_bytes_per_token
    assert (tune, trainer) == (pytest.approx(3.0 * m.vocab_size), pytest.approx(10.0 * m.vocab_size))


def _decode_step(model, gpu, batch, **kw) -> float:
    """Seconds of one decode step with ``batch`` sequences on one GPU."""
    return 1.0 / decode(model, gpu, batch_size=batch, prompt_tokens=16, output_tokens=16, **kw)


@pytest.mark.parametrize("family", ["gptq", "exllama"])
def test_per_row_gemv_kernels_stream_the_weights_for_every_sequence(models, gpus, family):
    """AutoGPTQ's and exllama's small-batch kernels are matrix-vector products run for each row of
    the batch: the step grows with the batch (about one weight stream per sequence) until the
    dequantized GEMM is cheaper, and never costs more than that GEMM."""
    m, gpu = models.get("llama-2-13b"), gpus.get("a100-80gb")
    engine = "transformers" if family == "gptq" else "vllm"  # vLLM runs its own GPTQ kernel (below)
    kw = dict(engine=engine, weights="int4", quantization=family, cuda_graphs=True)
    s1, s2, s4 = (_decode_step(m, gpu, b, **kw) for b in (1, 2, 4))
    assert s4 > s2 > s1
    assert s4 - s2 == pytest.approx(2 * (s2 - s1), rel=0.2)  # one more weight stream per row
    steps = [_decode_step(m, gpu, b, **kw) for b in range(1, 40)]
    assert max(steps[:32]) <= _decode_step(m, gpu, 33, **kw) * 1.001  # capped by the GEMM regime


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_vllms_gptq_kernel_streams_the_weights_once_per_eight_rows(models, gpus, engine):
    """vLLM's gptq_gemm (q_gemm.cu, from ExLlamaV2; SGLang uses it too) gives each thread block a
    tile of the weights and up to 8 rows of the batch: batches 1-8 stream the weights once, 9-16
    twice, 17-24 three times, until the FP16 reconstruction beyond 50 rows is cheaper. Named
    ``gptq`` in these engines the scenario runs that kernel, not AutoGPTQ's per-row one."""
    from gpuadvisor.core.specs.workload import Workload

    w = Workload(kind="inference", engine=engine, weights="int4", quantization="gptq")
    assert w.quantization_family == "vllm-gptq"
    m, gpu = models.get("llama-2-13b"), gpus.get("a100-80gb")
    kw = dict(engine=engine, weights="int4", quantization="gptq", cuda_graphs=True)
    s = {b: _decode_step(m, gpu, b, **kw) for b in (1, 8, 9, 16, 17, 24)}
    one_stream = s[9] - s[8]
    assert one_stream > 0.3 * s[1]
    # One stream for eight rows: the seven rows more add their compute, well under a stream.
    assert s[8] - s[1] < 0.5 * one_stream
    assert s[16] < 1.1 * s[9] and s[24] < 1.1 * s[17]
    assert s[17] - s[16] == pytest.approx(one_stream, rel=0.2)
    per_row = {b: _decode_step(m, gpu, b, **{**kw, "engine": "transformers"}) for b in (8,)}
    assert s[8] < 0.5 * per_row[8]  # AutoGPTQ's kernel streams them eight times


def test_w8a8_runs_its_gemms_on_the_int8_tensor_cores(models, gpus):
    """INT8 weights and activations (SmoothQuant, compressed-tensors W8A8) multiply on the INT8
    tensor cores: a long prompt prefills faster than in 16 bits, where weight-only INT8 kernels
    dequantize and run at the 16-bit peak; a GPU without INT8 tensor cores says so."""
    from gpuadvisor.core.estimation.performance import compute_precision

    a100 = gpus.get("a100-80gb")
    assert compute_precision(a100, "int8", "w8a8")[:2] == ("int8", a100.int8_dense_tops)
    assert compute_precision(a100, "int8", "gptq")[1] == a100.bf16_dense_tflops
    m = models.get("llama-3.1-8b")

    def prefill(**kw):
        w = Workload(kind="inference", engine="vllm", batch_size=1, prompt_tokens=8000, output_tokens=1, **kw)
        perf = inference_performance(MemoryModel(m, w), a100, 1, "none", engine_for("vllm", "inference"))
        return perf.time_to_first_token_s

    assert prefill(weights="int8", quantization="w8a8") < 0.7 * prefill(weights="bf16")
    assert prefill(weights="int8", quantization="marlin") > 0.9 * prefill(weights="bf16")
    no_int8 = next(g for g in gpus if not g.int8_dense_tops and g.vendor == "nvidia")
    assert "no INT8 tensor cores" in (compute_precision(no_int8, "int8", "w8a8")[2] or "")


def test_shared_gemv_kernels_read_the_weights_once_per_step(models, gpus):
    m, gpu = models.get("llama-2-13b"), gpus.get("a100-80gb")
    kw = dict(engine="vllm", weights="int4", quantization="marlin", cuda_graphs=True)
    assert _decode_step(m, gpu, 8, **kw) < 1.2 * _decode_step(m, gpu, 1, **kw)


def test_slower_expert_kernels_slow_a_moe_and_leave_a_dense_model_alone(models, gpus):
    """``moe_expert_efficiency`` is the expert kernels' share of the dense rate: halving it makes a
    MoE's decode step and prefill longer, the decode more at a large batch (whose tokens read more
    of the experts), and moves nothing of a dense model."""
    from dataclasses import replace

    from gpuadvisor.core.specs.constants import shipped_constants

    gpu = gpus.get("h100-sxm")
    shipped = shipped_constants()
    slow = replace(shipped, moe_expert_efficiency=shipped.moe_expert_efficiency / 2)

    def speeds(preset, batch, constants=None):
        """(decode tokens/s per user, time to first token of a 2,000-token prompt)."""
        w = Workload(kind="inference", batch_size=batch, prompt_tokens=2000, output_tokens=16, engine="vllm")
        perf = inference_performance(
            MemoryModel(models.get(preset), w),
            gpu,
            1,
            "none",
            engine_for("vllm", "inference"),
            constants=constants,
        )
        return perf.tokens_per_s_per_user, perf.time_to_first_token_s

    base = {b: speeds("qwen3-30b-a3b", b) for b in (1, 64)}
    dense = {b: speeds("llama-3.1-8b", b) for b in (1, 64)}
    slower = {b: speeds("qwen3-30b-a3b", b, slow) for b in (1, 64)}
    assert {b: speeds("llama-3.1-8b", b, slow) for b in (1, 64)} == dense
    for b in (1, 64):
        assert slower[b][0] < base[b][0] and slower[b][1] > base[b][1], b
    assert slower[64][0] / base[64][0] < slower[1][0] / base[1][0]


def test_moe_layers_add_kernels_and_graph_engines_pay_a_host_step(models, gpus):
    """A MoE layer launches router, top-k, alignment and two grouped GEMMs; an engine that replays
    CUDA graphs still schedules and samples every step on the host."""
    from gpuadvisor.core.estimation.performance import decode_overhead
    from gpuadvisor.core.specs.constants import shipped_constants

    FITTED = shipped_constants()

    engine = engine_for("vllm", "inference")
    dense = decode_overhead(engine, 32, None, True, 7, FITTED, moe=False)
    moe = decode_overhead(engine, 32, None, True, 7, FITTED, moe=True)
    assert moe[0] == pytest.approx(
        dense[0] * (engine.kernels_per_layer + FITTED.moe_kernels_per_layer) / engine.kernels_per_layer
    )
    eager = decode_overhead(engine, 32, None, False, 7, FITTED)
    assert dense[1] == min(FITTED.graph_step_host_s["python"], eager[1]) > 0  # never above eager
    cpp = decode_overhead(engine_for("tensorrt-llm", "inference"), 32, None, True, 7, FITTED)
    assert 0 < cpp[1] < dense[1]


def test_a_moe_prompt_reads_the_experts_its_tokens_route_to(models, gpus):
    """A decode step of one sequence reads only its k experts a layer; a prompt of 64 tokens routes
    to nearly all of them, so its prefill reads nearly all the expert weights: on GPUs whose
    bandwidth is low for the model (Mixtral 8x7B on two L40S) that read, not the prompt's compute
    or the host's launches, sets the time to the first token."""
    from gpuadvisor.core.estimation.performance import unused_expert_bytes

    m, gpu = models.get("mixtral-8x7b"), gpus.get("l40s")

    def first_token(prompt):
        w = Workload(kind="inference", engine="vllm", batch_size=1, prompt_tokens=prompt, output_tokens=1)
        mm = MemoryModel(m, w)
        perf = inference_performance(mm, gpu, 2, "tensor", engine_for("vllm", "inference"))
        return mm, perf.time_to_first_token_s

    mm, long = first_token(64)
    _mm, short = first_token(1)
    assert unused_expert_bytes(mm, 64) < 0.001 * unused_expert_bytes(mm, 1)
    stream = gpu.memory_bandwidth_gb_s * 1e9 * 2  # two GPUs at their full datasheet bandwidth
    more_experts = unused_expert_bytes(mm, 1) - unused_expert_bytes(mm, 64)
    assert long - short > more_experts / stream


def test_a_prefill_pass_launches_its_kernels_without_cuda_graphs(models, gpus):
    """Engines replay CUDA graphs for decode batches, not for prompts: a short prompt of a deep MoE
    is bound by the host launching every kernel of the pass (the eager step), which a decode step
    replayed from a graph does not pay."""
    from gpuadvisor.core.estimation.performance import decode_overhead
    from gpuadvisor.core.specs.constants import shipped_constants

    FITTED = shipped_constants()

    engine = engine_for("sglang", "inference")
    m, gpu = models.get("qwen3-235b-a22b"), gpus.get("b200")
    w = Workload(kind="inference", engine="sglang", batch_size=1, prompt_tokens=64, output_tokens=1)
    perf = inference_performance(MemoryModel(m, w), gpu, 8, "tensor", engine)
    eager = decode_overhead(engine, m.num_layers, None, False, len(m.linear_shapes()), FITTED, moe=True)[1]
    graph = decode_overhead(engine, m.num_layers, None, True, len(m.linear_shapes()), FITTED, moe=True)[1]
    assert eager > 5 * graph
    assert perf.time_to_first_token_s > eager


def test_a_prompt_pass_floor_of_its_own_leaves_the_eager_decode_step_alone(models, gpus):
    """vLLM's record sets a prompt pass's host time per layer apart from an eager decode step's: its
    runs with CUDA graphs show a floor under short prompts that its runs without graphs do not show
    in every decode step. Raising that floor delays the first token and leaves decode, eager or
    replayed, as it was; an engine whose record does not set it apart pays its eager step."""
    from gpuadvisor.core.estimation.performance import decode_overhead

    base = shipped_constants()
    vllm = base.engines["vllm"]
    assert vllm.prefill_layer_overhead_s is not None
    assert base.engines["sglang"].prefill_layer_overhead_s is None
    m, gpu = models.get("llama-3.1-8b"), gpus.get("h100-sxm")
    w = Workload(kind="inference", engine="vllm", batch_size=1, prompt_tokens=64, output_tokens=256)
    raised = base.with_engines(vllm=dataclasses.replace(vllm, prefill_layer_overhead_s=4e-3))
    for graphs in (True, False):
        cw = dataclasses.replace(w, cuda_graphs=graphs)
        cmm = MemoryModel(m, cw)
        low = inference_performance(
            cmm, gpu, 1, "none", engine_for("vllm", "inference", base), constants=base
        )
        high = inference_performance(
            cmm, gpu, 1, "none", engine_for("vllm", "inference", raised), constants=raised
        )
        assert high.time_to_first_token_s > low.time_to_first_token_s + m.num_layers * 3e-3
        assert high.tokens_per_s_per_user == pytest.approx(low.tokens_per_s_per_user)
    step = decode_overhead(vllm, 28, None, False, 7, base)
    assert step.eager_host == pytest.approx(28 * vllm.prefill_layer_overhead_s)
    assert step.host == pytest.approx(28 * vllm.layer_overhead_s)
    sglang = base.engines["sglang"]
    step = decode_overhead(sglang, 28, None, False, 7, base)
    assert step.eager_host == step.host == pytest.approx(28 * sglang.layer_overhead_s)


def test_each_prompt_costs_the_host_its_admission_and_first_token(models, gpus):
    """Each prompt costs its runtime's ``prompt_host_s`` in series with the prefill's GPU work (its
    admission before the kernels, sampling and handing out its first token after them): a lone
    short prompt's first token grows by exactly that time, a batch of 8 prompts' prefill by 8 times
    it, and the serving curve's closed-form prefill agrees with the roofline's."""
    from gpuadvisor.core.estimation.serving import DecodeStep

    base = shipped_constants()
    none = dataclasses.replace(base, prompt_host_s={"python": 0.0, "cpp": 0.0})
    m, gpu = models.get("llama-3.1-8b"), gpus.get("h100-sxm")
    for engine_id in ("vllm", "tensorrt-llm"):
        engine = engine_for(engine_id, "inference", base)
        extra = base.prompt_host_s[str(engine.runtime)]
        assert extra > 0
        w = Workload(kind="inference", engine=engine_id, batch_size=8, prompt_tokens=200, output_tokens=100)
        mm = MemoryModel(m, w)
        with_host = inference_performance(mm, gpu, 1, "none", engine, constants=base)
        without = inference_performance(mm, gpu, 1, "none", engine, constants=none)
        assert with_host.time_to_first_token_s - without.time_to_first_token_s == pytest.approx(extra)
        step = DecodeStep(mm, gpu, 1, "none", engine, constants=base)
        bare = DecodeStep(mm, gpu, 1, "none", engine, constants=none)
        assert step.prefill(200, 1) == pytest.approx(with_host.time_to_first_token_s)
        assert step.prefill(8 * 200, 8) - bare.prefill(8 * 200, 8) == pytest.approx(8 * extra)


def test_a_host_bound_step_is_explained_by_its_real_cause():
    """Eager decoding waits on kernel launches; an engine replaying CUDA graphs that is still
    host-bound (vLLM's V0 engine at a large batch: 100 µs per sequence) waits on its scheduler and
    per-sequence work, and the note says which."""
    from gpuadvisor.core.estimation.memory import MemoryModel
    from gpuadvisor.core.estimation.performance import inference_performance
    from gpuadvisor.core.specs.constants import engine_for
    from gpuadvisor.core.specs.hardware import load_gpu_catalog
    from gpuadvisor.core.specs.presets import load_model_catalog

    gpu, model = load_gpu_catalog().get("h200"), load_model_catalog().get("llama-3.1-8b")

    def notes(engine_id, batch, **kw):
        w = Workload(
            kind="inference", engine=engine_id, batch_size=batch, prompt_tokens=256, output_tokens=256, **kw
        )
        perf = inference_performance(
            MemoryModel(model, w), gpu, 1, "none", engine_for(engine_id, "inference")
        )
        return " ".join(perf.notes)

    v0 = notes("vllm-v0", 256)
    assert "work per sequence" in v0 and "launching kernels" not in v0
    eager = notes("transformers", 1)
    assert "without CUDA graphs is bound by launching kernels" in eager
    # Either way the host's CPU sets the step, and the note says by how much that varies, measured.
    for text in (v0, eager):
        assert "2.2 to 5.2 ms per token on eight machines" in text and "AccelMark" in text
    bandwidth_bound = notes("vllm", 1)
    assert "host's CPU" not in bandwidth_bound


def test_the_measured_host_spread_is_the_rows_it_cites():
    """The host-step spread quoted to users is the lowest and highest of the validation rows it
    cites (one vLLM release, one model, one sequence, eight machines), and every one of those
    GPUs reads the model's weights well inside the lowest step: the host, not the GPU, sets it."""
    from gpuadvisor.core.specs.engines import HOST_STEP_SPREAD_MS
    from gpuadvisor.core.specs.hardware import load_gpu_catalog
    from gpuadvisor.validation import load_measurements, load_sources

    ids = ("SRA-326", "SRA-042", "SRA-187", "SRA-150", "SRA-233", "SRA-488", "SRA-446", "SRA-368")
    rows = {r.id: r for r in load_measurements(sources=load_sources())}
    picked = [rows[i] for i in ids]
    assert {r.fact("engine") for r in picked} == {"vllm-v0"}
    assert {r.fact("model_name") for r in picked} == {"Qwen/Qwen2.5-0.5B-Instruct"}
    assert {r.fact("micro_batch") for r in picked} == {"1"}
    assert len({r.fact("gpu") for r in picked}) == 8
    values = [r.value for r in picked]
    assert (round(min(values), 1), round(max(values), 1)) == HOST_STEP_SPREAD_MS
    gpus = load_gpu_catalog()
    weights_gb = 0.494e9 * 2 / 1e9  # 494M parameters in BF16
    for r in picked:
        read_ms = weights_gb / gpus.get(r.fact("gpu")).memory_bandwidth_gb_s * 1000
        assert read_ms <= 1.3 < min(values)


def test_host_bound_notes_of_many_gpus_fold_into_one_line_with_the_range():
    """A whole-catalog estimate of a small model is host-bound on many GPU types, each waiting a
    different share of its step: the warnings say so once, with the range, not once per share."""
    from gpuadvisor.core.estimation.estimate import estimate, fold_host_waits
    from gpuadvisor.core.estimation.performance import WAIT, HostWaitNote
    from gpuadvisor.core.formats.scenario import scenario_from_dict
    from gpuadvisor.core.specs.hardware import load_gpu_catalog
    from gpuadvisor.core.specs.presets import load_model_catalog

    host = f"vLLM is bound by its host's scheduling at this batch ({WAIT})."
    notes = [
        HostWaitNote(host, 12.2),
        "No BF16 on T4: FP16 is used instead.",
        HostWaitNote(host, 0.3),
        HostWaitNote(host, 25.7),
        HostWaitNote(f"X is bound by launching kernels at this batch ({WAIT}).", 5.0),
    ]
    assert (
        notes[0]
        == "vLLM is bound by its host's scheduling at this batch (the GPU waits about 12% of each decode step)."
    )
    assert notes[2].endswith("(the GPU waits under 1% of each decode step).")
    assert fold_host_waits(notes) == [
        "vLLM is bound by its host's scheduling at this batch "
        "(the GPU waits from under 1% to 26% of each decode step, by GPU).",
        "No BF16 on T4: FP16 is used instead.",
        "X is bound by launching kernels at this batch (the GPU waits about 5% of each decode step).",
    ]
    scenario = scenario_from_dict(
        {
            "model": {"preset": "qwen3-0.6b"},
            # vLLM's V0 line: its host time per sequence makes a small model host-bound at a batch of 16.
            "workload": {"kind": "inference", "engine": "vllm-v0", "batch_size": 16},
            "hardware": {"gpu_count": 1},
        }
    )
    warnings = estimate(scenario, load_gpu_catalog(), load_model_catalog()).warnings
    host = [w for w in warnings if "bound by its host" in w]
    assert len(host) == 1 and "by GPU" in host[0]
    assert sum("The host's CPU sets such a step" in w for w in warnings) == 1


def test_a_prefill_multiplies_the_lm_head_once_per_prompt(models, gpus):
    """Serving engines compute logits only where they sample, the last position of each prompt
    (vLLM's logits processor gathers those hidden states before the head), so a prompt of ``P``
    tokens runs the ``vocab x hidden`` head once, not ``P`` times. For Llama 3.1 8B (a 128,256 x
    4,096 head, 0.53B of its 7.5B multiplied parameters) a long compute-bound prompt prefills about
    7% faster than when every position's logits are computed, as Transformers' generate did before
    v4.45 (a run of such a release states ``prompt_logits="all"``); decode, which samples every
    token, is unchanged. Training projects every position (its loss needs them) and keeps the head."""
    m = models.get("llama-3.1-8b")
    h100 = gpus.get("h100-sxm")
    # A token multiplies with every block matrix and the head once, whether the head is its own
    # (Llama 3.1 8B: 7.50B, not the 8.03B active parameters with the embedding table counted too)
    # or tied to the embedding (Llama 3.2 1B).
    for name in ("llama-3.1-8b", "llama-3.2-1b"):
        tied = models.get(name)
        assert bool(tied.counts.lm_head) == (name == "llama-3.1-8b")
        blocks = tied.counts.blocks + tied.counts.norms_and_other
        head = tied.vocab_size * tied.hidden_size
        assert matmul_params(tied) == pytest.approx(blocks + head, rel=1e-9)
    assert matmul_params(m) == pytest.approx(7.505e9, rel=1e-3)
    vllm = engine_for("vllm", "inference")
    every = dataclasses.replace(vllm, prompt_logits="all")
    assert vllm.prompt_logits == "last"
    assert engine_for("transformers", "inference").prompt_logits == "last"
    assert engine_for("transformers", "inference").with_logits("all").prompt_logits == "all"
    p = 16_000
    wl = Workload(kind="inference", engine="vllm", weights="bf16", prompt_tokens=p, output_tokens=2)
    mm = MemoryModel(m, wl)
    head = m.vocab_size * m.hidden_size
    assert prompt_head_params(m, p, vllm) == head * (1 - 1 / p)
    assert prompt_head_params(m, p, every) == 0.0
    assert prompt_head_params(m, 1, vllm) == 0.0  # a one-token prompt samples its only position

    last = inference_performance(mm, h100, 1, "none", vllm)
    full = inference_performance(mm, h100, 1, "none", every)
    n_mm = matmul_params(m)
    a = attention_flop_weight(h100, "bf16", h100.bf16_dense_tflops)
    attention = 4 * m.num_layers * m.q_dim * m.prefill_attended_tokens(p) * a
    ratio = (2 * (n_mm - head * (1 - 1 / p)) + attention) / (2 * n_mm + attention)
    assert 0.9 < ratio < 0.95
    assert last.time_to_first_token_s / full.time_to_first_token_s == pytest.approx(ratio, rel=0.01)
    assert last.tokens_per_s_per_user == full.tokens_per_s_per_user
    tr = Workload(kind="full_finetune", seq_len=2048)
    assert training_flops_per_token(m, tr) > 3 * 2 * n_mm  # the head in every position's forward
