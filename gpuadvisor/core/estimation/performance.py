"""Speed: a roofline model for inference and training, with communication.

Inference (Pope et al. 2022, "Efficiently Scaling Transformer Inference"; Kim et al. 2023,
"Full Stack Optimization of Transformer Inference")::

    prefill FLOPs  = P_tok (2 N_active + 2 L d_q P_tok)          compute-bound
    decode step    = max(bytes / (BW e_bw), FLOPs / (peak e_dec)) + L t_layer (+ tensor-parallel all-reduces)
    bytes          = weights read (MoE: experts touched by the batch) + B x KV cache at the mean context
    FLOPs          = B (2 N_active + 4 L d_q c)

A batch of B requests with P prompt and O output tokens takes ``prefill(B P) + O x step``;
output tokens/s = B O / that time; per user 1 / step. Time to first token = prefill of one
prompt. ``bound`` names the larger of memory time, compute time and fixed per-layer overhead.

Training (Kaplan et al. 2020; Narayanan et al. 2021, "Efficient Large-Scale Language Model
Training on GPU Clusters", eq. 3)::

    FLOPs/token = 3 F (+ F with activation recomputation), F = 2 N_matmul + 2 L d_q s
    LoRA/QLoRA  = 2 F (no weight gradients for the frozen base) (+ F recompute)
    step time   = FLOPs / (n peak MFU) + exposed communication; pipeline bubble (p-1)/(m+p-1)

Communication: ring all-reduce moves 2 (n-1)/n of the gradient bytes per GPU; ZeRO-3/FSDP
adds an all-gather of the parameters in forward and backward (1.5x DDP volume, ZeRO paper
section 7); tensor parallelism all-reduces activations 4 times per layer per step (Megatron).
Within a node the link is NVLink (half the quoted bidirectional figure) or PCIe; across nodes
the network (default 400 Gb/s per GPU). A share ``overlap`` of data-parallel traffic hides
behind the backward pass. Each efficiency carries a spread that gives low/high figures.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from ..specs.engines import ARCH_MFU_FACTOR, EngineProfile
from ..specs.hardware import GpuSpec
from .memory import MemoryModel
from ..specs.models import ModelSpec
from ..specs.quant_types import is_gguf_type
from ..specs.workload import Workload, is_quantized_weights

#: Data-parallel traffic hidden behind compute (bucketed all-reduce during backward).
DP_OVERLAP = 0.7
#: Achievable share of link bandwidth in collectives (NCCL bus bandwidth over link rate).
LINK_EFFICIENCY = 0.75
#: Network bandwidth per GPU between nodes, GB/s (400 Gb/s InfiniBand/RoCE per GPU).
NETWORK_GB_S = 50.0
#: Latency of one collective (s): NVLink ~10 us, PCIe and network more.
NVLINK_LATENCY_S, PCIE_LATENCY_S, NETWORK_LATENCY_S = 10e-6, 25e-6, 30e-6
#: Training parallelisms with the same speed model: DDP and ZeRO-1/2 all-reduce the same gradient
#: bytes; ZeRO-3 and FSDP add the same parameter gathers. (Callers may share their results.)
SPEED_GROUP = {"ddp": "data", "zero1": "data", "zero2": "data", "zero3": "sharded", "fsdp": "sharded"}


class Range(NamedTuple):
    low: float
    expected: float
    high: float

    def scaled(self, factor: float) -> "Range":
        return Range(self.low * factor, self.expected * factor, self.high * factor)

    def to_dict(self, digits: int = 4) -> dict[str, float]:
        return {"low": round(self.low, digits), "expected": round(self.expected, digits),
                "high": round(self.high, digits)}


class PerformanceEstimate(NamedTuple):
    """Speed of one candidate. ``tokens_per_s`` is aggregate over all its GPUs."""

    tokens_per_s: Range
    bound: str  # "memory", "compute", "overhead" or "communication"
    precision_used: str
    peak_tflops: float
    mfu: float | None = None
    tokens_per_s_per_user: float | None = None
    time_to_first_token_s: float | None = None
    communication_share: float = 0.0
    notes: tuple[str, ...] = ()
    prefill_tokens_per_s: float | None = None  # prompt processing of one request (llama-bench "pp")

    def to_dict(self) -> dict:
        out = {"tokens_per_s": round(self.tokens_per_s.expected, 2), "tokens_per_s_range": self.tokens_per_s.to_dict(2),
               "bound": self.bound, "compute_precision": self.precision_used,
               "peak_tflops": round(self.peak_tflops, 1),
               "communication_share": round(self.communication_share, 4)}
        if self.mfu is not None:
            out["mfu"] = round(self.mfu, 4)
        if self.tokens_per_s_per_user is not None:
            out["tokens_per_s_per_user"] = round(self.tokens_per_s_per_user, 2)
        if self.time_to_first_token_s is not None:
            out["time_to_first_token_s"] = round(self.time_to_first_token_s, 4)
        if self.prefill_tokens_per_s is not None:
            out["prefill_tokens_per_s"] = round(self.prefill_tokens_per_s, 1)
        return out


def compute_precision(gpu: GpuSpec, weights: str) -> tuple[str, float, str | None]:
    """(precision the tensor cores run, dense peak TFLOPS, a fallback note or None)."""
    half = gpu.bf16_dense_tflops or gpu.fp16_dense_tflops
    if weights == "fp8":
        if gpu.supports_fp8 and gpu.fp8_dense_tflops:
            return "fp8", gpu.fp8_dense_tflops, None
        return "bf16", half, f"{gpu.name} has no FP8 tensor cores: FP8 weights run at FP16/BF16 throughput."
    if weights == "fp32":
        return "fp32", gpu.fp32_tflops or gpu.fp16_dense_tflops / 8, None
    if weights == "bf16" and not gpu.supports_bf16:
        return "fp16", gpu.fp16_dense_tflops, f"{gpu.name} has no BF16: FP16 is used instead."
    if is_gguf_type(weights):  # llama.cpp dequantizes to FP16 for its matrix multiplies
        return "fp16", gpu.fp16_dense_tflops, None
    return ("bf16" if weights in ("bf16", "nf4", "int4", "int8") else weights), half, None


def _precision(gpu: GpuSpec, weights: str) -> tuple[str, float, list[str]]:
    """compute_precision with its fallback note as a (possibly empty) list of notes."""
    prec, peak, note = compute_precision(gpu, weights)
    return prec, peak, [note] if note else []


def link(gpu: GpuSpec, gpu_count: int, gpus_per_node: int) -> tuple[float, float, str]:
    """(bandwidth GB/s per GPU for collectives, latency s, link name)."""
    if gpu_count > gpus_per_node:
        return NETWORK_GB_S * LINK_EFFICIENCY, NETWORK_LATENCY_S, "network"
    if gpu.nvlink_gb_s:
        return gpu.peer_gb_s * LINK_EFFICIENCY, NVLINK_LATENCY_S, "NVLink"
    return gpu.pcie_gb_s * LINK_EFFICIENCY, PCIE_LATENCY_S, "PCIe"


def matmul_params(model: ModelSpec) -> float:
    """Parameters that take part in a matrix multiply per token (input embedding lookup excluded)."""
    c = model.counts
    head = c.lm_head if c.lm_head else model.vocab_size * model.hidden_size
    return c.active - c.embedding + head + 0.0


def inference_performance(mm: MemoryModel, gpu: GpuSpec, gpu_count: int, parallelism: str,
                          engine: EngineProfile, bw_eff: float | None = None, prefill_mfu: float | None = None,
                          gpus_per_node: int = 8) -> PerformanceEstimate:
    """Serving speed of one candidate (see the module docstring)."""
    m, w = mm.model, mm.workload
    prec, peak, notes = _precision(gpu, w.weights)
    n = gpu_count
    t = n if parallelism == "tensor" else 1
    p = n if parallelism == "pipeline" else 1
    replicas = n if parallelism == "ddp" else 1
    b = max(1, math.ceil(w.batch_size / replicas))
    e_bw = (bw_eff or engine.bandwidth_efficiency)
    quantized = is_quantized_weights(w.weights)
    e_w = e_bw * (engine.quantized_bandwidth_factor if quantized else 1.0)
    bw = gpu.memory_bandwidth_gb_s * 1e9
    # llama.cpp multiplies quantized weights on INT8 tensor cores (MMQ) where the GPU has them.
    int8 = bool(engine.int8_prefill and quantized and gpu.int8_dense_tops and gpu.architecture != "apple")
    pre_peak = gpu.int8_dense_tops if int8 and gpu.int8_dense_tops else peak
    # prefill of a pipeline keeps all stages busy (compute scales)
    e_pre = prefill_mfu or engine.prefill_mfu_for(gpu.architecture, int8)
    n_mm = matmul_params(m)
    L, d_q = m.num_layers, m.q_dim

    # Weight bytes read per decode step: with MoE only the experts some token of the batch uses.
    weights = mm.weight_bytes
    if m.is_moe:
        expert_share = 1.0 - (1.0 - m.experts_per_token / m.num_experts) ** b
        expert_bytes = mm.block_weight_bytes * (m.counts.mlp / max(m.counts.blocks, 1))
        weights = weights - expert_bytes * (1.0 - expert_share)
    c_mean = w.prompt_tokens + w.output_tokens / 2
    kv_read = b * mm.kv_tokens_per_layer(int(c_mean)) * L * mm.kv_bytes_per_token_layer
    if not w.flash_attention and engine.id == "llama.cpp":
        # Without flash attention the f32 scores are written and read back in every layer.
        kv_read += b * L * m.num_attention_heads * mm.kv_tokens_per_layer(int(c_mean)) * 8.0
    mp = t * p  # GPUs that share one copy of the model
    t_mem = weights / (t * bw * e_w) + kv_read / (t * bw * e_bw)
    # Partial offload (llama.cpp -ngl): the layers left in host RAM are read at host bandwidth, one
    # after the other with the GPU's layers; prefill copies them over PCIe for each 512-token batch.
    share = mm.gpu_layer_share
    t_host = t_copy = 0.0
    if share < 1.0:
        host_bw = gpu.host_memory_bandwidth_gb_s * 1e9
        host_weights = weights * (1.0 - share)
        t_host = host_weights / (host_bw * e_w) + kv_read * (1.0 - share) / (host_bw * e_bw)
        t_mem = t_mem * share + t_host
        if not gpu.unified_memory:
            t_copy = host_weights / (gpu.pcie_gb_s * 1e9)
        notes.append(f"Partial offload: {L - round(share * L)} of {L} layers stay in host RAM and are read "
                     "at host-memory bandwidth, which sets the speed.")
    flops_step = b * (2 * n_mm + 4 * L * d_q * c_mean)
    t_comp = flops_step / (t * peak * 1e12 * engine.decode_mfu)
    t_fixed = L * engine.layer_overhead_for(gpu.architecture)
    if t > 1:
        bw_link, lat, _ = link(gpu, n, gpus_per_node)
        t_fixed += 2 * L * (lat + 2 * (t - 1) / t * b * m.hidden_size * 2 / (bw_link * 1e9))
    if p > 1:
        t_fixed += (p - 1) * PCIE_LATENCY_S
    step = max(t_mem, t_comp) + t_fixed
    bound = max((t_mem, "memory"), (t_comp, "compute"), (t_fixed, "overhead"))[1]

    chunk = engine.prefill_chunk_tokens or 0

    def prefill_time(tokens: float) -> float:
        flops = tokens * (2 * n_mm + 2 * L * d_q * w.prompt_tokens)
        copies = math.ceil(tokens / chunk) if chunk else 1
        return (max(flops / (mp * pre_peak * 1e12 * e_pre), weights / (t * bw * e_w)) + t_fixed
                + copies * t_copy)

    ttft = prefill_time(w.prompt_tokens)
    batch_time = prefill_time(b * w.prompt_tokens) + w.output_tokens * step
    # Pipeline stages each read their share of the weights once per micro-batch, so a full decode
    # step still streams all weights through one GPU's bandwidth: no speed-up over one GPU, only room.
    per_replica = b * w.output_tokens / batch_time
    aggregate = per_replica * replicas
    s = engine.spread
    rng = Range(aggregate * (1 - s), aggregate, aggregate * (1 + s / 2))
    if t_host > max(t_mem - t_host, t_comp, t_fixed):
        bound = "host memory"
    return PerformanceEstimate(tokens_per_s=rng, bound=bound, precision_used=prec, peak_tflops=peak,
                               tokens_per_s_per_user=1.0 / step, time_to_first_token_s=ttft, notes=tuple(notes),
                               prefill_tokens_per_s=w.prompt_tokens / ttft)


def training_flops_per_token(model: ModelSpec, workload: Workload, seq_len: int | None = None) -> float:
    """Model FLOPs per trained token (forward, backward and any recomputation)."""
    s = seq_len or workload.seq_len
    forward = 2 * matmul_params(model) + 2 * model.num_layers * model.q_dim * s
    passes = 3.0 if workload.trains_base else 2.0
    if workload.gradient_checkpointing:
        passes += 1.0
    return passes * forward


class TrainingPrelude(NamedTuple):
    """What the training speed of one GPU shares across its setups (see :func:`training_prelude`)."""

    precision: str
    peak_tflops: float
    mfu: float
    flops_per_token: float
    notes: tuple[str, ...]


def training_prelude(mm: MemoryModel, gpu: GpuSpec, engine: EngineProfile,
                     mfu: float | None = None) -> TrainingPrelude:
    """Precision, peak, MFU and FLOPs per token of training on ``gpu``: the same for every count and
    parallelism, so a whole-catalog comparison computes it once per GPU."""
    w = mm.workload
    prec, peak, notes = _precision(gpu, w.weights)
    base_mfu = mfu or engine.mfu * ARCH_MFU_FACTOR.get(gpu.architecture, 0.8)
    if w.kind == "qlora":
        base_mfu *= 0.7  # 4-bit dequantization in every matmul (QLoRA trains ~30-40% slower than LoRA)
        notes.append("QLoRA pays for dequantizing the 4-bit base in every matmul (about 30% slower).")
    flops_token = mm.cached("flops_per_token", lambda: training_flops_per_token(mm.model, w))
    return TrainingPrelude(prec, peak, base_mfu, flops_token, tuple(notes))


def training_performance(mm: MemoryModel, gpu: GpuSpec, gpu_count: int, parallelism: str,
                         engine: EngineProfile, mfu: float | None = None,
                         gpus_per_node: int = 8, prelude: TrainingPrelude | None = None) -> PerformanceEstimate:
    """Training tokens/s of one candidate (see the module docstring).

    ``prelude`` is :func:`training_prelude` for this GPU, engine and ``mfu``, passed in by callers
    that compare many setups of the same GPU."""
    m, w = mm.model, mm.workload
    if prelude is None:
        prelude = training_prelude(mm, gpu, engine, mfu)
    prec, peak, base_mfu, flops_token = prelude.precision, prelude.peak_tflops, prelude.mfu, prelude.flops_per_token
    notes = list(prelude.notes)
    n = gpu_count
    tokens_step = w.batch_size * w.seq_len * n  # one micro-batch per GPU (data-parallel) per step
    compute = tokens_step * flops_token / (n * peak * 1e12 * base_mfu)
    bw_link, lat, _link_name = link(gpu, n, gpus_per_node)
    comm = 0.0
    if n > 1:
        ring = 2 * (n - 1) / n
        grads = mm.grad_bytes
        group = SPEED_GROUP.get(parallelism, parallelism)
        if group == "data":
            comm = ring * grads / (bw_link * 1e9) + lat
            comm *= (1 - DP_OVERLAP)
        elif group == "sharded":
            # Every weight is gathered in forward and backward, frozen LoRA/QLoRA bases included.
            volume = ring * grads + 2 * (n - 1) / n * mm.weight_bytes
            comm = volume / (bw_link * 1e9) * (1 - DP_OVERLAP) + lat
        elif parallelism == "tensor":
            act = w.batch_size * n * w.seq_len * m.hidden_size * 2 / n  # tokens of the shared batch
            comm = 4 * m.num_layers * (ring * act * n / (bw_link * 1e9) + lat)
            tokens_step = w.batch_size * w.seq_len * n
        elif parallelism == "pipeline":
            micro = 4 * n
            compute *= 1 + (n - 1) / micro
            # Each stage boundary sends activations forward and their gradients back.
            comm = 2 * tokens_step * m.hidden_size * 2 / n / (bw_link * 1e9)
    step = compute + comm
    tps = tokens_step / step
    achieved_mfu = tps * flops_token / (n * peak * 1e12)
    share = comm / step if step else 0.0
    bound = "communication" if share > 0.5 else "compute"
    s = engine.spread
    rng = Range(tps * (1 - s), tps, tps * (1 + s / 2))
    if n > gpus_per_node:
        notes.append(f"{n} GPUs span {math.ceil(n / gpus_per_node)} nodes: gradients cross the network.")
    return PerformanceEstimate(tokens_per_s=rng, bound=bound, precision_used=prec, peak_tflops=peak,
                               mfu=achieved_mfu, communication_share=share, notes=tuple(notes))
