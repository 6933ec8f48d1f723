"""Speed: a roofline model for inference and training with few physical parameters, and communication.

Every constant comes from :mod:`gpuadvisor.core.engines` (priors, fitted values and their
provenance); ``docs/estimation.md`` writes each formula out with its sources.

Inference (Pope et al. 2022, "Efficiently Scaling Transformer Inference")::

    decode step = max(GPU time, host time) + s_host min(GPU time, host time)
    GPU time    = max(t_mem, t_comp) + L k t_gpu (+ tensor-parallel all-reduces)
    t_mem       = W_blocks / (BW e_bw g_family) + W_other / (BW e_bw) + KV / (BW e_bw f_kv)
                  (W without the untied input embedding; BW e_bw at most 95% of the datasheet)
    t_comp      = B (2 N_active + 4 L d_q c) / (P e(B)),   e(T) = ceiling T / (T + T_half)
    host time   = L t_layer (0 with CUDA graphs)
    prefill(T)  = max(FLOPs / (P e(T)), weight stream, host time) + L k t_gpu

``g_family`` is the kernel family's GEMV efficiency (Marlin/AWQ/ExLlama near 1, bitsandbytes
far below); past the family's GEMV range a dequantized 16-bit copy adds traffic and the GEMM
runs at the family's share of 16-bit throughput. A batch of B requests with P prompt and O
output tokens takes ``prefill(B P) + O x step``; output tokens/s = B O / that time; per user
1 / step; time to first token = prefill of one prompt.

Training (Kaplan et al. 2020; Narayanan et al. 2021, eq. 3; Korthikanti et al. 2022)::

    FLOPs/token = 3 F (+ F with activation recomputation), F = 2 N_matmul + 2 L d_q s; LoRA/QLoRA 2 F
    time/token  = GEMM FLOPs / (P e_gemm(M, h, GPU)) + attention FLOPs / (P e_attn(GPU))
                  + non-GEMM bytes / BW + QLoRA dequantization bytes / BW + per-kernel overhead
    step time   = tokens x time/token / n + exposed communication; pipeline bubble (p-1)/(m+p-1)

Communication: ring all-reduce moves 2 (n-1)/n of the gradient bytes per GPU; ZeRO-3/FSDP
adds an all-gather of the parameters in forward and backward (1.5x DDP volume, ZeRO paper
section 7); tensor parallelism all-reduces activations 4 times per layer per step (Megatron).
Within a node the link is NVLink (half the quoted bidirectional figure) or PCIe; across nodes
the network (default 400 Gb/s per GPU). Data-parallel traffic hides behind the backward pass
(ZeRO-3/FSDP: the whole step) up to ``DP_OVERLAP`` of it. Each engine's 80% range gives the
low and high figures.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any, NamedTuple

from ..specs.constants import LlamaCppModel, SpeedConstants, kernel_family, shipped_constants
from ..specs.engines import HOST_STEP_SPREAD_MS, HOST_STEP_SPREAD_SOURCE, EngineProfile, SpeedModel
from ..specs.hardware import GpuSpec
from ..specs.kernels import KernelFamily
from ..specs.models import ModelSpec
from ..specs.quant_types import is_gguf_type, matmul_kernel_shares
from ..specs.workload import Workload, is_quantized_weights
from .memory import MemoryModel

#: Most of the datasheet memory bandwidth that a streaming kernel reaches (read-bandwidth
#: microbenchmarks top out near 90-95% of the datasheet figure on HBM and GDDR parts alike).
STREAM_CAP = 0.95
#: Share of data-parallel traffic that overlap can hide at most: the rest (the last bucket, the
#: first gather, synchronisation) stays exposed even when compute is long.
DP_OVERLAP = 0.9
#: Share of a training step's compute that the backward pass takes (2 of 3 passes).
BACKWARD_SHARE = 2.0 / 3.0
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

    def scaled(self, factor: float) -> Range:
        return Range(self.low * factor, self.expected * factor, self.high * factor)

    def to_dict(self, digits: int = 4) -> dict[str, float]:
        return {
            "low": round(self.low, digits),
            "expected": round(self.expected, digits),
            "high": round(self.high, digits),
        }


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

    def to_dict(self) -> dict[str, Any]:
        out = {
            "tokens_per_s": round(self.tokens_per_s.expected, 2),
            "tokens_per_s_range": self.tokens_per_s.to_dict(2),
            "bound": self.bound,
            "compute_precision": self.precision_used,
            "peak_tflops": round(self.peak_tflops, 1),
            "communication_share": round(self.communication_share, 4),
        }
        if self.mfu is not None:
            out["mfu"] = round(self.mfu, 4)
        if self.tokens_per_s_per_user is not None:
            out["tokens_per_s_per_user"] = round(self.tokens_per_s_per_user, 2)
        if self.time_to_first_token_s is not None:
            out["time_to_first_token_s"] = round(self.time_to_first_token_s, 4)
        if self.prefill_tokens_per_s is not None:
            out["prefill_tokens_per_s"] = round(self.prefill_tokens_per_s, 1)
        return out


def compute_precision(gpu: GpuSpec, weights: str, family: str | None = None) -> tuple[str, float, str | None]:
    """(precision the tensor cores run, dense peak TFLOPS, a fallback note or None); ``family``: the
    kernel family, where it sets the precision (``w8a8``: INT8 weights and activations)."""
    half = gpu.bf16_dense_tflops or gpu.fp16_dense_tflops
    if family == "w8a8" and weights == "int8":
        if gpu.int8_dense_tops:
            return "int8", gpu.int8_dense_tops, None
        return "bf16", half, f"{gpu.name} has no INT8 tensor cores: INT8 GEMMs run at FP16/BF16 throughput."
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


def engine_peak(gpu: GpuSpec, engine: EngineProfile, precision: str, peak: float) -> float:
    """The dense peak an inference engine's GEMMs reach at ``precision``: an engine whose 16-bit
    GEMMs accumulate in FP16 (cuBLAS ``cublasHgemm``: ExLlama, ExLlamaV2, llama.cpp's cuBLAS path)
    runs at the GPU's FP16-accumulate rate where that is higher (GeForce cards halve the FP32-accumulate
    rate that ``fp16_dense_tflops`` holds)."""
    acc16 = gpu.fp16_acc16_dense_tflops
    if engine.fp16_accumulate and acc16 and precision in ("fp16", "bf16"):
        return max(peak, acc16)
    return peak


def attention_flop_weight(gpu: GpuSpec, precision: str, peak: float) -> float:
    """What one attention FLOP costs in FLOPs at the GEMMs' ``peak``: the attention kernels
    (FlashAttention, FlashInfer, the engines' paged decode attention) run on 16-bit tensor cores
    whatever precision the weights' GEMMs take, so beside FP8 or INT8 GEMMs they run at half those
    GEMMs' rate (``peak`` over the BF16/FP16 peak; 1 where the GEMMs are 16-bit themselves)."""
    half = gpu.bf16_dense_tflops or gpu.fp16_dense_tflops
    return peak / half if precision in ("fp8", "int8") and half else 1.0


def training_gemm_weights(workload: Workload, gpu: GpuSpec) -> tuple[str, list[str]]:
    """The precision the training GEMMs run at (``workload.compute_precision``, else the weights'),
    as a weights value for :func:`compute_precision`, and a note when the GPU cannot run it."""
    cp = workload.compute_precision
    if cp in ("fp8", "mxfp8"):
        if cp == "mxfp8" and gpu.architecture not in MXFP8_ARCHITECTURES:
            return workload.weights, [f"{gpu.name} has no MXFP8: its GEMMs run at {workload.weights}."]
        return "fp8", []
    if cp == "bf16" and workload.weights == "fp8":
        return "bf16", []
    return workload.weights, []


#: Architectures whose tensor cores take MXFP8 blocks (NVIDIA Blackwell).
MXFP8_ARCHITECTURES = ("blackwell",)


def _precision(gpu: GpuSpec, weights: str, family: str | None = None) -> tuple[str, float, list[str]]:
    """compute_precision with its fallback note as a (possibly empty) list of notes."""
    prec, peak, note = compute_precision(gpu, weights, family)
    return prec, peak, [note] if note else []


def link(gpu: GpuSpec, gpu_count: int, gpus_per_node: int) -> tuple[float, float, str]:
    """(bandwidth GB/s per GPU for collectives, latency s, link name) of ``gpu_count`` GPUs: NVLink
    (or PCIe: cards without NVLink, or more than a bridge joins) inside the GPU's NVLink domain (:meth:`~gpuadvisor.core.specs.hardware.GpuSpec.link_domain`:
    a node, or a GB200 NVL72 rack), the network's NIC per GPU beyond it."""
    if gpu_count > gpu.link_domain(gpus_per_node):
        return NETWORK_GB_S * LINK_EFFICIENCY, NETWORK_LATENCY_S, "network"
    if gpu.nvlink_reaches(gpu_count):
        return gpu.peer_gb_s * LINK_EFFICIENCY, NVLINK_LATENCY_S, "NVLink"
    return gpu.pcie_gb_s * LINK_EFFICIENCY, PCIE_LATENCY_S, "PCIe"


#: Cards a PCIe server hangs off one CPU socket (two switches or root complexes of four): a ring over
#: more crosses the link between the sockets, which carries less than the cards' own lanes.
PCIE_SOCKET_GPUS = 4
#: Bus bandwidth of an all-reduce over two sockets' cards against one socket's (nccl-tests
#: ``all_reduce_perf``, PCIe without NVLink): 8 RTX PRO 6000 across two sockets 21.6 GB/s against
#: 30.9 on 4 of one socket at 32 MB (voipmonitor/rtx6kpro at 29f3863, ``hardware/asus-esc8000a-e13p-
#: broadcom-switches.md``), 22.2 against 40.1 on a one-socket switch box (``hardware/pcie-bandwidth.md``),
#: 8 RTX 5090 on two Xeons 28 against 35 on 4 (NVIDIA/nccl issue #1639): 0.55-0.8, median 0.7.
PCIE_CROSS_SOCKET_SHARE = 0.7


def pcie_ring_crosses_sockets(pcie: bool, ring_gpus: int) -> bool:
    """The one rule: a ring over PCIe of more cards than one CPU socket holds
    (:data:`PCIE_SOCKET_GPUS`) crosses the link between a server's two sockets."""
    return pcie and ring_gpus > PCIE_SOCKET_GPUS


def crosses_sockets(gpu: GpuSpec, gpu_count: int, gpus_per_node: int) -> bool:
    """Whether a ring of ``gpu_count`` GPUs runs over PCIe (:func:`link`) across a server's two
    CPU sockets (:func:`pcie_ring_crosses_sockets`)."""
    return pcie_ring_crosses_sockets(link(gpu, gpu_count, gpus_per_node)[2] == "PCIe", gpu_count)


def allreduce_link(gpu: GpuSpec, gpu_count: int, gpus_per_node: int) -> tuple[float, float]:
    """(bus bandwidth GB/s, latency s) of one ring collective among ``gpu_count`` GPUs (a replica's
    tensor-parallel all-reduces, a data-parallel job's gradients): :func:`link`'s, except that a
    PCIe ring beyond one socket's cards (:data:`PCIE_SOCKET_GPUS`) runs at
    :data:`PCIE_CROSS_SOCKET_SHARE` of the lanes' bandwidth (a laid-out job's groups:
    ``communication.group_link``)."""
    bw, lat, name = link(gpu, gpu_count, gpus_per_node)
    if pcie_ring_crosses_sockets(name == "PCIe", gpu_count):
        bw *= PCIE_CROSS_SOCKET_SHARE
    return bw, lat


class CardsNote(str):
    """A note about one GPU type's cards with the card's name kept as data beside the words, so the
    notes of several GPU types fold into one line naming them all (``estimate.fold_card_notes``)
    without their text being parsed back. Each kind of note is a subclass with its own words."""

    cards: str  # the card's name, or several joined ("A40, A100 PCIe 80 GB and H100 NVL 94 GB")

    def __new__(cls, cards: str) -> CardsNote:
        note = super().__new__(cls, cls.words(cards))
        note.cards = cards
        return note

    @staticmethod
    def words(cards: str) -> str:
        return cards


class BridgeNote(CardsNote):
    """Cards that take an NVLink bridge but have none stated (:func:`bridge_note`)."""

    @staticmethod
    def words(cards: str) -> str:
        return (
            f"The {cards} cards talk over PCIe here; an NVLink bridge would join each pair of them at "
            "NVLink speed (hardware.nvlink_bridge: true)."
        )


class SocketNote(CardsNote):
    """More cards than one CPU socket holds, all-reducing over PCIe (:func:`socket_note`)."""

    @staticmethod
    def words(cards: str) -> str:
        return (
            f"{cards}: more than {PCIE_SOCKET_GPUS} cards in one server all-reduce over PCIe across its "
            f"two CPU sockets here, at {PCIE_CROSS_SOCKET_SHARE:g} of the lanes' bandwidth (published "
            "nccl-tests runs); a server with all of them behind one socket's PCIe switches is faster."
        )


def socket_note(gpu: GpuSpec, gpu_count: int, gpus_per_node: int) -> SocketNote | None:
    """The note of a ring that :func:`allreduce_link` slows for crossing a server's sockets."""
    return SocketNote(gpu.name) if crosses_sockets(gpu, gpu_count, gpus_per_node) else None


def bridge_note(gpu: GpuSpec, gpu_count: int) -> str | None:
    """The note of cards that take an NVLink bridge but talk over PCIe here: more than a bridge
    joins, or no bridge stated (``hardware.nvlink_bridge``); None otherwise."""
    if gpu_count < 2 or not gpu.nvlink_bridge or gpu.nvlink_reaches(gpu_count):
        return None
    if gpu.nvlink_bridged:
        return (
            f"{gpu_count} {gpu.name} talk over PCIe ({gpu.pcie_gb_s:g} GB/s each way): "
            f"an NVLink bridge joins two of them, not {gpu_count}."
        )
    return BridgeNote(gpu.name)


def span_note(n: int, gpus_per_node: int, domain: int, tail: str = "") -> str:
    """The note of a job beyond one node: how many nodes it spans, and whether they are one NVLink
    domain (a GB200 NVL72 rack), where nothing crosses the network."""
    nodes = math.ceil(n / gpus_per_node)
    if n <= domain:
        return f"{n} GPUs span {nodes} nodes of one {domain}-GPU NVLink domain."
    if domain > gpus_per_node:
        return f"{n} GPUs span {nodes} nodes in {math.ceil(n / domain)} NVLink domains of {domain}{tail}."
    return f"{n} GPUs span {nodes} nodes{tail}."


#: NCCL's ring latency model (src/graph/tuning.cc, ``baseLat`` and ``hwLat``, Simple protocol): a
#: base per collective, then one hop per ring step, each inside a node (NVLink or PCIe) or between
#: nodes; an all-gather or reduce-scatter over ``d`` ranks on ``k`` nodes takes ``d - 1`` steps, of
#: which ``k - 1`` cross the network. Seconds.
RING_BASE_S = 8.4e-6
RING_HOP_NVLINK_S, RING_HOP_PCIE_S, RING_HOP_NET_S = 3.4e-6, 5.7e-6, 9.6e-6


def ring_latency(members: int, stride: int, gpus_per_node: int, node_lat: float) -> float:
    """Latency of one ring all-gather or reduce-scatter over ``members`` ranks ``stride`` apart
    (NCCL's model, :data:`RING_BASE_S`): ``base + (d - 1 - (k - 1)) hop_node + (k - 1) hop_net``."""
    nodes = max(1, math.ceil(members * stride / gpus_per_node))
    nodes = min(nodes, members)
    hop = RING_HOP_NVLINK_S if node_lat <= NVLINK_LATENCY_S else RING_HOP_PCIE_S
    return RING_BASE_S + (members - nodes) * hop + (nodes - 1) * RING_HOP_NET_S


def sharded_exposed(
    layer_params: float,
    layer_grads: float,
    d: int,
    bw: float,
    coll_lat: float,
    fwd_s: float,
    bwd_s: float,
    layers: int,
) -> float:
    """Seconds of one micro-batch that ZeRO-3/FSDP's collectives leave exposed, layer by layer.

    Each layer's parameters (``layer_params`` bytes of this GPU's shard group) are all-gathered
    while the previous layer computes: ``g = (d-1)/d x P / B + latency``. In forward a layer hides
    its successor's gather behind its ``fwd_s``; in backward the gather of the next layer and the
    reduce-scatter of the last one's gradients (``r``, the same with ``layer_grads``) share the
    link behind ``bwd_s``. The first gather of a pass waits for nothing to hide behind:

        exposed = g + (L - 1) max(0, g - t_fwd) + (L - 1) max(0, g + r - t_bwd) + r"""
    share = (d - 1) / d
    g = share * layer_params / bw + coll_lat
    r = share * layer_grads / bw + coll_lat
    rest = max(layers - 1, 0)
    return g + rest * max(0.0, g - fwd_s) + rest * max(0.0, g + r - bwd_s) + r


def matmul_params(model: ModelSpec) -> float:
    """Parameters that take part in a matrix multiply per token: the active parameters less the input
    embedding, a lookup, plus the output head once (an untied head is among the active
    parameters already; a tied one multiplies with the embedding's table). Before 2026-12-04 an
    untied head was counted twice (Llama 3.1 8B: 8.03B instead of 7.50B)."""
    c = model.counts
    tied_head = 0 if c.lm_head else model.vocab_size * model.hidden_size
    return c.active - c.embedding + tied_head + 0.0


def prompt_head_params(model: ModelSpec, prompt_tokens: int, engine: EngineProfile) -> float:
    """The LM head's parameters a prefill does *not* multiply with, per prompt token: an engine that
    computes logits only where it samples (the last position of each prompt) runs the head once
    per prompt, not once per prompt token (``vocab x hidden x (1 - 1/P)``; 0 for an engine that
    computes every position's logits, ``EngineProfile.prompt_logits``)."""
    if engine.prompt_logits == "all":
        return 0.0
    return model.vocab_size * model.hidden_size * (1.0 - 1.0 / max(prompt_tokens, 1))


def prefill_flops_per_token(
    model: ModelSpec, prompt_tokens: int, engine: EngineProfile, n_mm: float, attn: float = 1.0
) -> float:
    """FLOPs per prompt token of a causal prefill: the GEMMs of the ``n_mm`` multiplied parameters
    less the head's rows an engine leaves unprojected (:func:`prompt_head_params`), plus the keys
    each token attends to (``attn``: :func:`attention_flop_weight`). The roofline, llama.cpp's model
    and the serving curve's closed form all count a prefill so."""
    gemm = 2 * (n_mm - prompt_head_params(model, prompt_tokens, engine))
    return gemm + 4 * model.num_layers * model.q_dim * model.prefill_attended_tokens(prompt_tokens) * attn


def gemm_efficiency(tokens: float, ceiling: float, constants: SpeedConstants) -> float:
    """Share of dense peak a GEMM with ``tokens`` rows reaches: ``ceiling x T / (T + T_half)``.

    Small GEMMs leave tensor-core tiles idle and pay a fixed latency per kernel; the curve rises
    to the engine's ceiling for long prompts and large batches."""
    return ceiling * tokens / (tokens + constants.gemm_tokens_half)


class StepOverhead(NamedTuple):
    """Fixed times of one forward step (s): see :func:`decode_overhead`."""

    gpu: float  # GPU-side time of the step's small kernels
    host: float  # host time of a decode step (the graph's step time with CUDA graphs)
    eager_host: float  # host time of a prompt's pass, which no decode graph replays
    prompt_host: float = 0.0  # each prompt's host work in the engine, which the GPU waits for


#: Said of a tensor-parallel setup whose ranks hold copies of the same KV heads (see
#: ``ModelSpec.kv_copies``): the cache per GPU, and its read each step, stop shrinking.
KV_COPIES_NOTES = {
    True: (
        "Latent attention (MLA) keeps one KV latent that every head reads, so with tensor parallelism "
        'every GPU holds and reads all of the KV cache (SGLang v0.4 notes, "Data Parallelism '
        'Attention"); data-parallel attention, which gives each GPU its own requests instead, is not '
        "modelled."
    ),
    False: (
        "More tensor-parallel GPUs than KV heads: GPUs hold copies of the same heads, so the KV cache "
        "per GPU, and what each reads per step, stop shrinking at one head per GPU."
    ),
}


#: Appended to a host-bound step's note: the host's own speed, which the estimate cannot know.
HOST_BOUND_SPREAD_NOTE = (
    "The host's CPU sets such a step, and machines differ: one engine release with a 0.5B model and "
    f"one sequence took {HOST_STEP_SPREAD_MS[0]:.1f} to {HOST_STEP_SPREAD_MS[1]:.1f} ms per token on "
    f"eight machines whose GPUs all read its weights in 1.3 ms or less ({HOST_STEP_SPREAD_SOURCE}), "
    "so here a faster CPU can matter more than a faster GPU."
)


def host_wait_percent(percent: float) -> int:
    """The GPU's wait for a host-bound step's host as the note states it: a whole percent, 0 for
    under 1%."""
    return 0 if percent < 0.5 else round(percent)


def host_wait_phrase(percent: float) -> str:
    """How long the GPU waits for a host-bound step's host, in words: "the GPU waits about 12% of
    each decode step" (under 1%: the two take about as long)."""
    whole = host_wait_percent(percent)
    if whole == 0:
        return "the GPU waits under 1% of each decode step"
    return f"the GPU waits about {whole}% of each decode step"


#: Where a :class:`HostWaitNote`'s template takes the GPU's wait.
WAIT = "{wait}"


class HostWaitNote(str):
    """A host-bound step's note: its words, with the GPU's wait kept as data beside them.

    ``template`` is the note with :data:`WAIT` where the wait goes and ``percent`` the wait as
    stated (:func:`host_wait_percent`), so the notes of several GPU types, which differ only in
    their wait, fold into one line by their template (``estimate.fold_host_waits``) without their
    text being parsed back."""

    template: str
    percent: int

    def __new__(cls, template: str, percent: float) -> HostWaitNote:
        note = super().__new__(cls, template.replace(WAIT, host_wait_phrase(percent)))
        note.template = template
        note.percent = host_wait_percent(percent)
        return note


def decode_overhead(
    engine: EngineProfile,
    layers: int,
    family: KernelFamily | None,
    cuda_graphs: bool,
    linears_per_layer: int,
    constants: SpeedConstants,
    moe: bool = False,
) -> StepOverhead:
    """(GPU-side fixed time, CPU time, a prompt pass's CPU time) of one forward step, in seconds.

    Every kernel costs ``gpu_kernel_s`` on the GPU even inside a CUDA graph (a MoE layer adds
    ``moe_kernels_per_layer``); without graphs the host must also launch it, ``cpu_kernel_s`` for
    the engine's runtime (Python or C++), and the step takes the longer of the two streams (the
    host runs ahead while the GPU is busy). The engine's ``layer_overhead_s`` is that host time
    per layer (its kernels x the launch time of its runtime, before fitting); a prompt's pass takes
    it too, or the engine's ``prefill_layer_overhead_s`` where its record sets that apart (vLLM).
    With graphs the host
    still schedules, prepares and samples every step: ``graph_step_host_s`` of its runtime, at
    most the eager host time (a graph only removes work). Each prompt a prefill carries adds
    ``prompt_host_s`` of the runtime: admitting it before the pass's kernels, sampling and handing
    out its first token after them, in series with the GPU's work."""
    extra = family.extra_kernels_per_linear * linears_per_layer if family else 0.0
    moe_extra = constants.moe_kernels_per_layer if moe else 0.0
    gpu = layers * (engine.kernels_per_layer + extra + moe_extra) * constants.gpu_kernel_s
    launch = constants.cpu_kernel_s.get(engine.runtime, 4e-6)
    launches = (extra + moe_extra) * launch
    eager = layers * (engine.layer_overhead_s + launches)
    # Replaying a graph removes the launches, never the step's other host work: at most the eager time.
    cpu = min(constants.graph_step_host_s.get(engine.runtime, 0.0), eager) if cuda_graphs else eager
    prompt_pass = layers * (engine.prompt_pass_layer_s + launches)
    return StepOverhead(gpu, cpu, prompt_pass, constants.prompt_host_s.get(engine.runtime, 0.0))


#: (kernel family, matmul parameters, layers, d_q, linears per layer, CUDA graphs, MoE) of a workload.
_InferenceShape = tuple[KernelFamily | None, float, int, int, int, bool, bool]


def inference_shape(mm: MemoryModel, k: SpeedConstants) -> _InferenceShape:
    """(kernel family, matmul parameters, layers, d_q, linears per layer, CUDA graphs, MoE) of a
    workload."""
    m, w = mm.model, mm.workload
    return (
        kernel_family(w.quantization_family, w.weights, k),
        # The expert GEMMs of an MoE model run at a share of the dense ones' rate: their FLOPs
        # count 1 / moe_expert_efficiency times.
        matmul_params(m) + moe_active_mlp_params(m) * moe_slowdown(m, k),
        m.num_layers,
        m.q_dim,
        len(m.linear_shapes()),
        w.uses_cuda_graphs,
        m.is_moe,
    )


def shape_of(mm: MemoryModel, k: SpeedConstants) -> _InferenceShape:
    """:func:`inference_shape`, computed once per memory model and constants object (the last one
    asked: an estimate asks with one, a fit tries many constants, each on many rows)."""
    shape: _InferenceShape = mm.cached_for("inference_shape", k, lambda: inference_shape(mm, k))
    return shape


def moe_slowdown(model: ModelSpec, constants: SpeedConstants) -> float:
    """``1 / moe_expert_efficiency - 1`` for a mixture-of-experts model, 0 for a dense one: the
    share by which the MoE layers' MLP work (the bytes its experts stream, their FLOPs) is counted
    again because grouped expert kernels run slower than dense ones."""
    return 1.0 / constants.moe_expert_efficiency - 1.0 if model.is_moe else 0.0


def moe_mlp_bytes(mm: MemoryModel) -> float:
    """Bytes of an MoE model's MLPs (every expert, shared experts, routers and any leading dense
    layers' MLP; 0 for a dense model): what :func:`unused_expert_bytes` takes its share of."""
    m = mm.model
    return mm.block_weight_bytes * (m.counts.mlp / max(m.counts.blocks, 1)) if m.is_moe else 0.0


def block_gemm_width_efficiency(m: ModelSpec, half: float, t: int = 1, expert_t: int | None = None) -> float:
    """Share of the GEMM ceiling that one block's matrix multiplies keep for their width, weighted
    by their FLOPs (docs/estimation.md, "Training"): each GEMM runs at ``w / (w + half)`` of its
    narrower side ``w``, the hidden size or its own width (QKV and gate/up by their output, o_proj
    and down by their input) split ``t`` ways by tensor parallelism, the expert GEMMs by
    ``expert_t`` (MoE parallel folding's ETP; None: ``t``). A dense block's GEMMs are all at least
    ``h`` wide, so it keeps ``h / (h + half)``; a mixture-of-experts block's routed and shared
    experts are only ``i_expert`` wide on one side (Qwen3-30B-A3B: 768 against ``h`` = 2,048) and
    run further from the ceiling. The harmonic mean: time adds, GEMM by GEMM."""
    h, dq, dkv = m.hidden_size, m.q_dim, m.kv_dim
    i_e = m.expert_intermediate_size
    experts = m.experts_per_token + (m.shared_experts if m.is_moe else 0)
    up = (2 if m.gated_mlp else 1) * i_e
    et = t if expert_t is None else expert_t
    gemms = (  # (FLOPs share, output or input width that TP splits, the split)
        (h * (dq + 2 * dkv), dq + 2 * dkv, t),
        (h * dq, dq, t),
        (h * up * experts, up, et),
        (h * i_e * experts, i_e, et),
    )
    time = sum(f * (min(h, w / k) + half) / min(h, w / k) for f, w, k in gemms)
    return sum(f for f, _, _ in gemms) / time


def moe_dispatch_bytes(model: ModelSpec) -> float:
    """Bytes per trained token that an MoE model's token permutation moves in forward and backward
    (0 for a dense model): each MoE layer copies a token's hidden state to its ``k`` experts' rows
    and gathers the ``k`` outputs back (Megatron-Core ``moe_utils.permute`` / ``unpermute``,
    Transformer Engine ``moe_permute`` / ``moe_unpermute``), ``(1 + k) h`` 16-bit elements read and
    written each way, and the backward pass does both again on the gradients:
    ``4 (1 + k) h x 2`` bytes per MoE layer."""
    if not model.is_moe:
        return 0.0
    moe_layers = model.num_layers - model.dense_layers
    return moe_layers * 8.0 * (1 + model.experts_per_token) * model.hidden_size


def moe_active_mlp_params(model: ModelSpec) -> float:
    """MLP parameters a token of an MoE model multiplies with (its routed and shared experts, the
    routers, the leading dense layers' MLP); 0 for a dense model."""
    c = model.counts
    return float(c.mlp - (c.total - c.active)) if model.is_moe else 0.0


def unused_expert_bytes(mm: MemoryModel, batch: int) -> float:
    """Bytes of the MoE experts that no token of a decode step's ``batch`` routes to (0 for a dense
    model): with ``k`` of ``E`` experts per token, an expert stays unread with probability
    ``(1 - k/E) ** batch``."""
    m = mm.model
    if not m.is_moe:
        return 0.0
    return moe_mlp_bytes(mm) * (1.0 - m.experts_per_token / m.num_experts) ** batch


def inference_performance(
    mm: MemoryModel,
    gpu: GpuSpec,
    gpu_count: int,
    parallelism: str,
    engine: EngineProfile,
    bw_eff: float | None = None,
    prefill_mfu: float | None = None,
    gpus_per_node: int = 8,
    constants: SpeedConstants | None = None,
    replicas: int = 1,
) -> PerformanceEstimate:
    """Serving speed of one candidate (see the module docstring).

    ``replicas`` > 1: that many copies of this ``gpu_count``-GPU setup (tensor or pipeline parallel)
    share the requests, each serving its share of the batch; the speed is their sum. ``constants``:
    the speed model's (the shipped ones when None).

    The decode step is max(memory, compute) + fixed GPU work + communication on the GPU, against
    the host's work (:func:`_weight_reads`, :func:`_memory_time`, :func:`_parallel_comm`,
    :func:`_host_wait_notes`); a prompt's prefill is timed by :func:`_prefill_timer`."""
    k = constants or shipped_constants()
    if engine.speed_model == SpeedModel.LLAMA_CPP:
        return llamacpp_performance(
            mm,
            gpu,
            gpu_count,
            parallelism,
            engine,
            bw_eff=bw_eff,
            prefill_mfu=prefill_mfu,
            gpus_per_node=gpus_per_node,
            model=k.llama_cpp,
            replicas=replicas,
        )
    m, w = mm.model, mm.workload
    prec, peak, notes = _precision(gpu, w.weights, w.quantization_family)
    peak = engine_peak(gpu, engine, prec, peak)
    n = gpu_count
    t = n if parallelism == "tensor" else 1
    p = n if parallelism == "pipeline" else 1
    replicas = n if parallelism == "ddp" else max(1, replicas)
    b = max(1, math.ceil(w.batch_size / replicas))
    e_bw = bw_eff or engine.bandwidth_efficiency
    # Model- and workload-only values, computed once per MemoryModel (a catalog has hundreds of setups).
    family, n_mm, L, d_q, linears, graphs, moe = shape_of(mm, k)
    arch = gpu.architecture
    bw = gpu.memory_bandwidth_gb_s * 1e9 * k.bandwidth_ceiling.get(arch, 1.0)
    ceiling = (prefill_mfu or engine.prefill_mfu) * k.gemm_ceiling.get(arch, 0.75) / k.gemm_ceiling["ampere"]
    t_half = k.gemm_tokens_half
    gemv_max = family.gemv_max_tokens if family is not None else math.inf
    reads = _weight_reads(mm, family, b, k)
    # Bandwidth ceiling x engine efficiency, at most what streaming kernels reach on any GPU.
    stream = t * min(bw * e_bw, gpu.memory_bandwidth_gb_s * 1e9 * STREAM_CAP)

    c_mean = w.prompt_tokens + w.output_tokens / 2
    # Ranks that hold a copy of the same KV heads (latent attention: every rank) each read it.
    kv_read = b * mm.kv_tokens_per_layer(int(c_mean)) * L * mm.kv_bytes_per_token_layer * m.kv_copies(t)
    if m.kv_copies(t) > 1 and m.has_kv_cache:
        notes.append(KV_COPIES_NOTES[m.is_mla])
    # A kernel that streams the blocks once per row of the batch gives way to the dequantized GEMM
    # once that is cheaper (exllama's reconstruction threshold, AutoGPTQ's kernel switch).
    per_row = (
        math.ceil(b / family.gemv_row_block) * (reads.gemv_bytes - reads.other) + reads.other
        if family is not None and family.gemv_per_row
        else 0.0
    )
    gemm_regime = b > gemv_max or per_row > reads.gemm_bytes
    step_bytes = reads.gemm_bytes if gemm_regime else per_row or reads.gemv_bytes
    t_mem = _memory_time(mm, gpu, step_bytes, kv_read, stream, t, e_bw, L, k, notes)
    e_dec = (
        ceiling * b / (b + t_half) * (family.gemm_efficiency if family is not None and gemm_regime else 1.0)
    )
    attn = attention_flop_weight(gpu, prec, peak)
    t_comp = b * (2 * n_mm + 4 * L * d_q * m.attended_tokens(c_mean) * attn) / (t * peak * 1e12 * e_dec)
    # A prefill pass runs eagerly (the engines capture CUDA graphs for decode batches, not for
    # long prompts): the host launches every kernel of it.
    t_gpu_fixed, t_cpu, t_cpu_prefill, t_prompt = decode_overhead(engine, L, family, graphs, linears, k, moe)
    t_comm, comm_token = _parallel_comm(gpu, m, n, t, p, L, b, gpus_per_node)
    if (t > 1 or p > 1) and (note := bridge_note(gpu, n)) is not None:
        notes.append(note)
    if t > 1 and (note := socket_note(gpu, n, gpus_per_node)) is not None:
        notes.append(note)
    t_gpu = max(t_mem, t_comp) + t_gpu_fixed + t_comm
    # The host's per-sequence work (scheduling, inputs, sampling, outputs) grows with the batch.
    t_cpu += b * engine.seq_host_s
    step = max(t_gpu, t_cpu) + k.host_exposed_share * min(t_gpu, t_cpu)
    bound = max(
        (t_mem, "memory"), (t_comp, "compute"), (t_gpu_fixed + t_comm, "overhead"), (t_cpu, "overhead")
    )[1]
    if t_cpu > t_gpu:
        notes += _host_wait_notes(engine, graphs, t_gpu, t_cpu)

    prefill_time = _prefill_timer(
        mm,
        family,
        reads,
        b=b,
        ceiling=ceiling,
        per_token_flops=prefill_flops_per_token(m, w.prompt_tokens, engine, n_mm, attn),
        prefill_peak=t * p * peak * 1e12,  # a pipeline's stages all work on a long prompt
        stream=stream,
        t_cpu_prefill=t_cpu_prefill,
        fixed=t_gpu_fixed + t_comm,
        per_prompt=t_prompt,
        prompt_tokens=w.prompt_tokens,
        comm_token=comm_token,
        chunk=engine.prefill_chunk_tokens,
        t_half=t_half,
    )
    # Pipeline stages each read their share of the weights once per micro-batch, so a full decode
    # step still streams all weights through one GPU's bandwidth: no speed-up over one GPU, only room.
    return _served(w, b, step, prefill_time, replicas, engine, bound, prec, peak, notes)


class _WeightReads(NamedTuple):
    """The weight bytes one decode step reads, by kernel (see the module docstring)."""

    unused: float  # MoE expert bytes no token of the batch routes to (not read)
    slow: float  # the experts' slowdown: they stream at moe_expert_efficiency of the dense rate
    other: float  # bytes outside the quantized blocks (0 without a kernel family)
    gemv_bytes: float  # read by a GEMV kernel (the blocks at the family's efficiency)
    gemm_bytes: float  # read by a GEMM (families that dequantize also write and read a 16-bit copy)


def _weight_reads(mm: MemoryModel, family: KernelFamily | None, b: int, k: SpeedConstants) -> _WeightReads:
    """The weight bytes a decode step of ``b`` sequences reads with a GEMV and with a GEMM kernel."""
    # Weight bytes read per decode step: with MoE only the experts some token of the batch uses.
    unused = unused_expert_bytes(mm, b)
    # The experts read stream at moe_expert_efficiency of the dense rate: counted as more bytes.
    slow = moe_slowdown(mm.model, k)
    extra = (moe_mlp_bytes(mm) - unused) * slow
    # The input embedding is a lookup (one row per token), not a stream; a tied table is read
    # whole as the output head, an untied one not at all.
    weights = mm.weight_bytes - unused + extra - (mm.embedding_bytes if mm.head_bytes else 0.0)
    block_weights = mm.block_weight_bytes - unused + extra
    if family is None:
        return _WeightReads(unused, slow, 0.0, weights, weights)
    # Within the GEMV range the quantized blocks stream at the family's efficiency; beyond it,
    # families that dequantize to a 16-bit copy also write and read that copy.
    other = weights - block_weights
    gemv_bytes = block_weights / family.gemv_efficiency + other
    params = block_weights / max(mm.block_bytes_per_weight, 1e-9)
    gemm_bytes = block_weights + params * family.dequant_bytes_per_weight + other
    return _WeightReads(unused, slow, other, gemv_bytes, gemm_bytes)


def _memory_time(
    mm: MemoryModel,
    gpu: GpuSpec,
    step_bytes: float,
    kv_read: float,
    stream: float,
    t: int,
    e_bw: float,
    L: int,
    k: SpeedConstants,
    notes: list[Any],
) -> float:
    """A decode step's time streaming its weights and its KV cache (read at kv_bandwidth_factor of
    the stream); with partial offload the layers in host RAM are read from there (a note says so)."""
    t_mem = step_bytes / stream + kv_read / (stream * k.kv_bandwidth_factor)
    share = mm.gpu_layer_share
    if share < 1.0:
        # Partial offload (accelerate device_map, vLLM cpu_offload_gb): the layers kept in host RAM
        # are read from it for every step; a discrete GPU pulls them over PCIe, a unified-memory
        # chip reads them at the host bandwidth.
        host_bytes = step_bytes * (1.0 - share) / t
        host_bw = gpu.host_memory_bandwidth_gb_s * 1e9
        link_bw = host_bw if gpu.unified_memory else min(host_bw, gpu.pcie_gb_s * 1e9)
        t_mem = t_mem * share + host_bytes / (link_bw * e_bw)
        notes.append(
            f"Partial offload: {L - round(share * L)} of {L} layers stay in host RAM and cross "
            + ("host memory" if gpu.unified_memory else "PCIe")
            + " for every step, which sets the speed."
        )
    return t_mem


def _parallel_comm(
    gpu: GpuSpec, m: ModelSpec, n: int, t: int, p: int, L: int, b: int, gpus_per_node: int
) -> tuple[float, float]:
    """A decode step's communication (tensor-parallel all-reduces, a pipeline's hand-offs) and the
    all-reduce time of one token's hidden state (which a prompt's prefill pays per token)."""
    t_comm = comm_token = 0.0
    if t > 1:
        bw_link, lat = allreduce_link(gpu, n, gpus_per_node)
        # Two all-reduces of each token's hidden state per layer (ring: 2 (t-1)/t of it per GPU).
        comm_token = 2 * L * 2 * (t - 1) / t * m.hidden_size * 2 / (bw_link * 1e9)
        t_comm += 2 * L * lat + b * comm_token
    if p > 1:
        t_comm += (p - 1) * PCIE_LATENCY_S
    return t_comm, comm_token


def _host_wait_notes(engine: EngineProfile, graphs: bool, t_gpu: float, t_cpu: float) -> list[Any]:
    """Why the GPU waits for the host (launching kernels without CUDA graphs, or the host's
    scheduling), with the share of the step it is idle, and the spread of a host-bound step."""
    idle = 100 * (1 - t_gpu / t_cpu)
    if not graphs:
        why = f"{engine.name} without CUDA graphs is bound by launching kernels at this batch ({WAIT})."
    else:
        per_seq = " and its work per sequence" if engine.seq_host_s else ""
        why = (
            f"{engine.name} is bound by its host's scheduling, input preparation and sampling"
            f"{per_seq} at this batch ({WAIT})."
        )
    return [HostWaitNote(why, idle), HOST_BOUND_SPREAD_NOTE]


def _prefill_timer(
    mm: MemoryModel,
    family: KernelFamily | None,
    reads: _WeightReads,
    *,
    b: int,
    ceiling: float,
    per_token_flops: float,
    prefill_peak: float,
    stream: float,
    t_cpu_prefill: float,
    fixed: float,
    comm_token: float,
    chunk: int | None,
    t_half: float,
    per_prompt: float = 0.0,
    prompt_tokens: int = 1,
) -> Callable[[float], float]:
    """The time of a prefill of ``tokens`` prompt tokens: passes of at most ``chunk`` tokens, each
    the longest of its FLOPs at the GEMM efficiency of its size, its weight reads and the host's
    launches, plus the fixed GPU work of each pass, the per-token all-reduce and the host's work of
    each of the ``tokens / prompt_tokens`` prompts (``per_prompt``), in series with the GPU's."""
    gemv_max = family.gemv_max_tokens if family is not None else math.inf
    unused, slow = reads.unused, reads.slow
    prompt_share = per_prompt / max(prompt_tokens, 1)  # each prompt's host time, per prompt token

    def prefill_time(tokens: float) -> float:
        gemm_tokens = min(tokens, chunk) if chunk else tokens
        passes = max(1.0, tokens / gemm_tokens)
        e = ceiling * gemm_tokens / (gemm_tokens + t_half)
        # A pass's tokens route to more experts than the decode batch's: its MoE weights read too.
        more = unused - unused_expert_bytes(mm, max(math.ceil(gemm_tokens), b)) if unused else 0.0
        more *= 1.0 + slow  # streamed at the experts' rate
        if family is not None and gemm_tokens > gemv_max:  # gemv_max is infinite without a family
            e *= family.gemm_efficiency
            read = reads.gemm_bytes + more * (
                1.0 + family.dequant_bytes_per_weight / max(mm.block_bytes_per_weight, 1e-9)
            )
        elif family is not None:
            read = reads.gemv_bytes + more / family.gemv_efficiency
        else:
            read = reads.gemv_bytes + more
        comp = tokens * per_token_flops / (prefill_peak * e)
        # Every prompt token's hidden state is all-reduced too, after the GEMMs that make it.
        return (
            max(comp, passes * read / stream, passes * t_cpu_prefill)
            + passes * fixed
            + tokens * (comm_token + prompt_share)
        )

    return prefill_time


def _served(
    w: Workload,
    b: int,
    step: float,
    prefill_time: Callable[[float], float],
    replicas: int,
    engine: EngineProfile,
    bound: str,
    prec: str,
    peak: float,
    notes: list[str],
) -> PerformanceEstimate:
    """The result of an inference model: each replica prefills its ``b`` prompts and decodes
    ``output_tokens`` steps of ``step`` seconds; the speed is the replicas' sum, with the engine's range."""
    ttft = prefill_time(w.prompt_tokens)
    batch_time = prefill_time(b * w.prompt_tokens) + w.output_tokens * step
    aggregate = b * w.output_tokens / batch_time * replicas
    rng = Range(aggregate * (1 - engine.spread_low), aggregate, aggregate * (1 + engine.spread_high))
    return PerformanceEstimate(
        tokens_per_s=rng,
        bound=bound,
        precision_used=prec,
        peak_tflops=peak,
        tokens_per_s_per_user=1.0 / step,
        time_to_first_token_s=ttft,
        notes=tuple(notes),
        prefill_tokens_per_s=w.prompt_tokens / ttft,
    )


#: The GPU architectures on which llama.cpp replays a decode step from CUDA graphs: NVIDIA Ampere
#: and newer. ggml-cuda turns them off below compute capability 8.0 (``ggml/src/ggml-cuda/ggml-cuda.cu``:
#: ``cc < GGML_CUDA_CC_AMPERE`` sets ``disable_due_to_gpu_arch``), so Turing and Volta launch every
#: kernel; on AMD, HIP graphs are a build option (``GGML_HIP_GRAPHS``), off by default.
LLAMACPP_GRAPH_ARCHITECTURES = frozenset({"ampere", "ada", "hopper", "blackwell"})


def llamacpp_performance(
    mm: MemoryModel,
    gpu: GpuSpec,
    gpu_count: int,
    parallelism: str,
    engine: EngineProfile,
    bw_eff: float | None = None,
    prefill_mfu: float | None = None,
    gpus_per_node: int = 8,
    model: LlamaCppModel | None = None,
    replicas: int = 1,
) -> PerformanceEstimate:
    """llama.cpp: token generation (tg, bandwidth-bound) and prompt processing (pp, compute-bound)
    modelled apart (:class:`~gpuadvisor.core.specs.engines.LlamaCppModel`; the fitted factors and
    their Metal/CUDA multipliers come from ``engine``, the llama.cpp profile), with partial offload
    (``workload.gpu_layers``): the layers left in host RAM are read at host-memory bandwidth and,
    on a discrete GPU, copied over PCIe for each prompt batch. The range is the engine's fitted
    80% range (``spread_low``/``spread_high``). ``model``: the constants of llama.cpp's own model
    (the shipped ones' when None)."""
    model = model or shipped_constants().llama_cpp
    m, w = mm.model, mm.workload
    prec, peak, notes = _precision(gpu, w.weights)
    peak = engine_peak(gpu, engine, prec, peak)
    n = gpu_count
    t = n if parallelism == "tensor" else 1
    p = n if parallelism == "pipeline" else 1
    replicas = n if parallelism == "ddp" else max(1, replicas)
    b = max(1, math.ceil(w.batch_size / replicas))
    e_w = bw_eff or engine.bandwidth_efficiency
    bw = gpu.memory_bandwidth_gb_s * 1e9
    quantized = is_quantized_weights(w.weights)
    # Quantized weights multiply on INT8 tensor cores (MMQ) where the GPU has them.
    int8 = bool(quantized and gpu.int8_dense_tops and gpu.architecture != "apple")
    pre_peak = gpu.int8_dense_tops if int8 and gpu.int8_dense_tops else peak
    e_pre = prefill_mfu or engine.prefill_mfu_for(gpu.architecture, int8)
    if quantized and is_gguf_type(w.weights):
        # Each GGUF kernel family unpacks its blocks at its own cost per weight tile (MMQ's tile
        # loads on CUDA, the dequantizing mul_mm kernels on Metal): the families' shares of the
        # matrix parameters weigh their fitted speeds.
        e_pre = min(1.0, e_pre * engine.prefill_kernel_factor(matmul_kernel_shares(m, w.weights)))
    n_mm = matmul_params(m)
    prompt_flops = prefill_flops_per_token(m, w.prompt_tokens, engine, n_mm)
    L, d_q = m.num_layers, m.q_dim
    weights = mm.weight_bytes - unused_expert_bytes(mm, b)  # only the experts the batch uses are read
    c_mean = w.prompt_tokens + w.output_tokens / 2
    kv_read = b * mm.kv_tokens_per_layer(int(c_mean)) * L * mm.kv_bytes_per_token_layer
    if not w.flash_attention:  # the f32 scores are written and read back in every layer
        kv_read += b * L * m.num_attention_heads * mm.kv_tokens_per_layer(int(c_mean)) * 8.0
    t_mem = (weights + kv_read) / (t * bw * e_w)
    share = mm.gpu_layer_share
    t_host = t_copy = 0.0
    if share < 1.0:
        split = split_decode(mm, gpu, weights, kv_read, b, model)
        t_host, t_copy = split.host_s, split.copy_s
        t_mem = (split.gpu_bytes + kv_read * share) / (t * bw * e_w) + t_host
        notes.append(
            f"Partial offload: {L - round(share * L)} of {L} layers and the output layer run on the CPU "
            + ("from the unified memory" if gpu.unified_memory else "from host RAM")
            + f" ({split.host_bytes / 2**30:.1f} GiB read per token at "
            f"{gpu.host_memory_bandwidth_gb_s:g} GB/s), which sets the speed."
        )
    t_comp = b * (2 * n_mm + 4 * L * d_q * m.attended_tokens(c_mean)) / (t * peak * 1e12 * model.decode_mfu)
    # CUDA graphs (llama.cpp's default for single-sequence decode since mid-2024) replay a step's
    # kernels without launching each one, on Ampere and newer only; Metal encodes its command
    # buffers every step.
    graphs = w.uses_cuda_graphs and gpu.architecture in LLAMACPP_GRAPH_ARCHITECTURES
    # The fixed time per layer is the GPU's: layers kept on the CPU pay their time in t_host.
    t_fixed = L * share * engine.layer_overhead_for("cuda_graphs" if graphs else gpu.architecture)
    if t > 1:
        bw_link, lat = allreduce_link(gpu, n, gpus_per_node)
        t_fixed += 2 * L * (lat + 2 * (t - 1) / t * b * m.hidden_size * 2 / (bw_link * 1e9))
    if p > 1:
        t_fixed += (p - 1) * PCIE_LATENCY_S
    step = max(t_mem, t_comp) + t_fixed
    bound = max((t_mem, "memory"), (t_comp, "compute"), (t_fixed, "overhead"))[1]
    if t_host > max(t_mem - t_host, t_comp, t_fixed):
        bound = "host memory"
    chunk = model.prefill_chunk_tokens

    def prefill_time(tokens: float) -> float:
        flops = tokens * prompt_flops
        copies = math.ceil(tokens / chunk) if chunk else 1
        # Each micro-batch (ubatch) reads the weights of the experts its tokens route to.
        ubatch = math.ceil(min(tokens, chunk)) if chunk else math.ceil(tokens)
        reads = copies * (mm.weight_bytes - unused_expert_bytes(mm, max(ubatch, b)))
        # A layer split passes each ubatch through the GPUs in turn: one GPU works on it at a
        # time, and only the ubatches of one batch overlap (llama.cpp's pipeline parallelism).
        par = t * pipelined_stages(p, min(copies, LLAMACPP_UBATCHES_IN_FLIGHT))
        return max(flops / (pre_peak * 1e12 * e_pre), reads / (bw * e_w)) / par + t_fixed + copies * t_copy

    if share < 1.0:  # the host's memory and cores vary more than one engine's kernels
        engine = replace(
            engine,
            spread_low=max(engine.spread_low, model.split_spread_low),
            spread_high=max(engine.spread_high, model.split_spread_high),
        )
    return _served(w, b, step, prefill_time, replicas, engine, bound, prec, peak, notes)


#: Micro-batches (``-ub``, 512 tokens) of one logical batch (``-b``, 2,048 since March 2024) that a
#: layer split keeps in flight on its GPUs at once: llama.cpp's pipeline parallelism (ggml-org
#: llama.cpp pull request #6017, ``GGML_SCHED_MAX_COPIES`` 4).
LLAMACPP_UBATCHES_IN_FLIGHT = 4


def pipelined_stages(stages: int, in_flight: int) -> float:
    """How many GPUs' worth of work a layer split over ``stages`` GPUs does at once when
    ``in_flight`` micro-batches pass through it: ``k`` micro-batches take ``k + p - 1`` stage times
    where one GPU would take ``k p``, so ``k p / (k + p - 1)`` (1 for one micro-batch: the GPUs
    take turns)."""
    k = max(1, in_flight)
    return k * stages / (k + stages - 1) if stages > 1 else 1.0


class SplitDecode(NamedTuple):
    """One decode step of llama.cpp with ``-ngl g`` below the layer count (see :func:`split_decode`)."""

    gpu_bytes: float  # weights the GPU streams per token (its g layers)
    host_bytes: float  # weights and KV cache read on the CPU per token
    host_s: float  # the CPU's share of the step, s
    copy_s: float  # copying the CPU's layers to the GPU for one prompt batch, s


def split_decode(
    mm: MemoryModel, gpu: GpuSpec, weights: float, kv_read: float, batch: int, model: LlamaCppModel
) -> SplitDecode:
    """Where llama.cpp runs a model whose last ``g`` of ``L`` layers are on the GPU (``-ngl g``):
    the first ``L - g`` layers and, below ``L + 1``, the output head on the CPU, reading their
    weights and KV cache from host RAM; the input embedding is a row lookup (read once per token).

    CPU time per token = max(bytes / (host bandwidth x ``host_stream_efficiency``), 2 x params x
    batch / CPU peak): at one sequence the CPU's FMA units outrun its memory, so the read sets it.
    The GPU runs its layers after the CPU's: the two times add. A prompt batch (llama.cpp offloads
    batches of 32 tokens and more to the GPU) first copies the CPU's layers over PCIe; on a Mac the
    GPU reads them where they are.
    """
    share = mm.gpu_layer_share
    head = mm.head_bytes or mm.embedding_bytes  # a tied table is read whole as the head
    blocks = max(weights - mm.embedding_bytes - mm.head_bytes, 0.0)  # blocks and norms (experts used)
    host_weights = blocks * (1.0 - share) + head
    host_bytes = host_weights + kv_read * (1.0 - share)
    m = mm.model
    head_params = m.vocab_size * m.hidden_size
    host_params = (matmul_params(m) - head_params) * (1.0 - share) + head_params
    host = gpu.host_defaults
    t_read = host_bytes / (gpu.host_memory_bandwidth_gb_s * 1e9 * model.host_stream_efficiency)
    t_math = 2.0 * host_params * batch / (host.cpu_tflops * 1e12)
    copy = 0.0 if gpu.unified_memory else blocks * (1.0 - share) / (gpu.pcie_gb_s * 1e9)
    return SplitDecode(blocks * share, host_bytes, max(t_read, t_math), copy)


def training_flops_per_token(model: ModelSpec, workload: Workload, seq_len: int | None = None) -> float:
    """Model FLOPs per trained token (forward, backward and any recomputation)."""
    s = seq_len or workload.seq_len
    forward = 2 * matmul_params(model) + 4 * model.num_layers * model.q_dim * model.prefill_attended_tokens(s)
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


def fp8_gemm_share(
    gpu: GpuSpec, peak_tflops: float, ceiling: float, width: float, k: SpeedConstants
) -> float:
    """Share of the 16-bit GEMM efficiency that a training GEMM of hidden width ``width`` keeps in
    FP8 on ``gpu`` (docs/estimation.md, "FP8 GEMMs").

    A ``k x n`` GEMM runs ``6 k n`` FLOPs per token in forward and backward; FP8 first casts its
    input (``k`` elements) and its output gradient (``n``), each read in 16 bits and written as an
    FP8 copy and a transposed FP8 copy (``fp8_cast_bytes`` = 4 per element), a memory-bound
    ``4 (k + n)`` bytes per token. With ``k = n = w`` the casts take ``W8 / w`` of the GEMM's time:

        W8    = fp8_cast_bytes / 3 x P_fp8 x ceiling / (bandwidth x elementwise efficiency)
        share = fp8_gemm_factor x w / (w + W8)

    so wide GEMMs keep the FP8 peak (70B, 405B) and narrow ones lose much of it (1B-3B models); the
    crossover width follows each GPU's FP8 FLOPs per byte of memory bandwidth (about 880 on H100 SXM,
    1,370 on L40S)."""
    bw = gpu.memory_bandwidth_gb_s * 1e9 * k.elementwise_bandwidth_efficiency
    w_cast = k.fp8_cast_bytes / 3.0 * peak_tflops * 1e12 * ceiling / max(bw, 1.0)
    return k.fp8_gemm_factor * width / (width + w_cast)


#: Kernels one LoRA adapter launches per forward and backward of its projection, counted from
#: PEFT's ``LoraLayer`` (peft/tuners/lora/layer.py, ``Linear.forward``: ``result + lora_B(lora_A(
#: dropout(x))) * scaling``): forward dropout, the A and B GEMMs, the scaling and the add (5);
#: backward the scaling's grad, input and weight grads of B and of A, dropout's backward and the
#: add of the adapter's input grad into the base layer's (7). Without dropout (``lora_dropout``
#: 0: an ``nn.Identity``) one kernel each way fewer.
LORA_KERNELS = {True: 12.0, False: 10.0}
#: Bytes a LoRA adapter moves per element of its projection's input per forward and backward, by
#: whether it applies dropout: with it, the input read and written again as its dropped copy with
#: a one-byte mask (5), read by the A GEMM (2); backward, the output gradient masked (read 2 + 1,
#: write 2), the copy read again for A's weight gradient (2) and the adapter's input gradient added
#: to the base layer's (read 2 + 2, write 2): 20 in 16-bit; without dropout the A GEMM reads the
#: input itself (2), again for its weight gradient (2), plus that add (6): 10. Each adapter on a
#: projection that shares its input with another (q, k and v; gate and up) reads it on its own.
LORA_BYTES_PER_INPUT = {True: 20.0, False: 10.0}


#: Projections a fused layer holds as one (Megatron-Core's ``linear_qkv`` and ``linear_fc1``):
#: one adapter reads their shared input once.
FUSED_PROJECTIONS = (("q_proj", "k_proj", "v_proj"), ("gate_proj", "up_proj"))


def lora_adapter_work(mm: MemoryModel, engine: EngineProfile | None = None) -> tuple[float, float]:
    """(kernels, bytes per token) one layer's LoRA adapters add to a forward and backward pass:
    0, 0 without adapters. An expert's adapters run for the tokens routed to it, so their bytes
    count ``experts_per_token`` copies, their kernels every expert's. An engine whose layers fuse
    projections (``EngineProfile.fused_projections``) adapts each fused group once."""
    w = mm.workload
    if not w.uses_adapters:
        return 0.0, 0.0
    m = mm.model
    shapes = m.linear_shapes()
    adapted = list(mm.targets)  # resolved once by the memory model
    if engine is not None and engine.fused_projections:
        for group in FUSED_PROJECTIONS:
            present = [t for t in group if t in adapted]
            for t in present[1:]:
                adapted.remove(t)
    kernels = sum(m.module_copies(t) for t in adapted) * LORA_KERNELS[w.lora_dropout]
    width = sum(shapes[t][0] * (1 if m.module_copies(t) == 1 else m.experts_per_token) for t in adapted)
    return kernels, width * LORA_BYTES_PER_INPUT[w.lora_dropout]


def training_token_time(
    mm: MemoryModel, gpu: GpuSpec, engine: EngineProfile, constants: SpeedConstants, width_divisor: int = 1
) -> tuple[float, dict[str, float]]:
    """Seconds one GPU spends per trained token, and its parts (see the module docstring).

    ``width_divisor`` is the tensor-parallel degree: each rank multiplies ``h / t`` wide matrices."""
    m, w = mm.model, mm.workload
    k = constants
    prec, peak, _ = _precision(gpu, training_gemm_weights(w, gpu)[0])
    half = gpu.bf16_dense_tflops or gpu.fp16_dense_tflops
    arch_ceiling = k.gemm_ceiling.get(gpu.architecture, k.gemm_ceiling.get("other", 0.75))
    passes = 3.0 if w.trains_base else 2.0
    if w.gradient_checkpointing:
        passes += 1.0
    tokens_mb = w.batch_size * w.seq_len
    width = m.hidden_size / width_divisor
    e_gemm = (
        engine.mfu
        * arch_ceiling
        * tokens_mb
        / (tokens_mb + k.gemm_tokens_half)
        * block_gemm_width_efficiency(m, k.gemm_width_half, width_divisor)
    )
    if prec == "fp8":
        e_gemm *= fp8_gemm_share(gpu, peak, arch_ceiling, width, k)
    gemm = passes * 2 * matmul_params(m) / (peak * 1e12 * e_gemm)
    e_attn = k.attention_efficiency_by_arch.get(
        gpu.architecture, k.attention_efficiency * arch_ceiling / k.gemm_ceiling["ampere"]
    )
    attn = passes * 4 * m.num_layers * m.q_dim * m.prefill_attended_tokens(w.seq_len) / (half * 1e12 * e_attn)
    bw = gpu.memory_bandwidth_gb_s * 1e9 * k.elementwise_bandwidth_efficiency
    elem_passes = (
        passes / 3.0 if w.trains_base else passes / 2.0 * 0.8
    )  # frozen bases skip weight-grad kernels
    elem_bytes = engine.elementwise_bytes_per_h * m.hidden_size * m.num_layers + moe_dispatch_bytes(m)
    elem = elem_passes * elem_bytes / width_divisor / bw
    # LoRA adapters run whole in forward and backward (and again in a recomputed forward): their
    # dropout copies and input reads, and the small kernels of every adapter.
    lora_kernels, lora_bytes = lora_adapter_work(mm, engine)
    adapters = passes / 3.0 * lora_bytes * m.num_layers / width_divisor / bw
    dequant = 0.0
    family = kernel_family(w.quantization_family, w.weights, k) if w.kind == "qlora" else None
    if family is not None:
        # The 4-bit base is dequantized to a 16-bit copy in the forward and again in the backward
        # matmul (and once more with recomputation): weight bytes plus the copy written and read.
        params = mm.block_weight_bytes / max(mm.block_bytes_per_weight, 1e-9)
        per_pass = mm.block_weight_bytes + params * max(family.dequant_bytes_per_weight, 2.0)
        dequant = (passes - 1.0) * per_pass / bw / tokens_mb
    kernels = m.num_layers * (engine.kernels_per_layer + lora_kernels) * passes / 3.0
    gpu_fixed = kernels * k.gpu_kernel_s / tokens_mb
    cpu = kernels * k.cpu_kernel_s.get(engine.runtime, 4e-6) / tokens_mb
    busy = gemm + attn + elem + adapters + dequant + gpu_fixed
    return max(busy, cpu), {
        "gemm": gemm,
        "attention": attn,
        "elementwise": elem,
        "adapters": adapters,
        "dequantization": dequant,
        "overhead": gpu_fixed,
        "launch": cpu,
    }


def training_prelude(
    mm: MemoryModel,
    gpu: GpuSpec,
    engine: EngineProfile,
    mfu: float | None = None,
    constants: SpeedConstants | None = None,
) -> TrainingPrelude:
    """Precision, peak, MFU and FLOPs per token of training on ``gpu``: the same for every count and
    parallelism, so a whole-catalog comparison computes it once per GPU.

    Without an ``mfu`` override the MFU follows from :func:`training_token_time`: GEMM shape,
    attention, element-wise traffic, dequantization and per-layer overhead on this GPU."""
    w = mm.workload
    gemm_weights, notes0 = training_gemm_weights(w, gpu)
    prec, peak, notes = _precision(gpu, gemm_weights)
    notes = notes0 + notes
    flops_token = mm.cached("flops_per_token", lambda: training_flops_per_token(mm.model, w))
    if mfu:
        base_mfu = mfu
    else:
        seconds, parts = training_token_time(mm, gpu, engine, constants or shipped_constants())
        base_mfu = flops_token / (peak * 1e12 * seconds)
        if parts["dequantization"] > 0.15 * seconds:
            notes.append(
                "QLoRA dequantizes the 4-bit base in every matmul "
                f"(about {100 * parts['dequantization'] / seconds:.0f}% of the step)."
            )
    return TrainingPrelude(prec, peak, base_mfu, flops_token, tuple(notes))


def training_performance(
    mm: MemoryModel,
    gpu: GpuSpec,
    gpu_count: int,
    parallelism: str,
    engine: EngineProfile,
    mfu: float | None = None,
    gpus_per_node: int = 8,
    prelude: TrainingPrelude | None = None,
    constants: SpeedConstants | None = None,
) -> PerformanceEstimate:
    """Training tokens/s of one candidate (see the module docstring).

    ``prelude`` is :func:`training_prelude` for this GPU, engine and ``mfu``, passed in by callers
    that compare many setups of the same GPU."""
    m, w = mm.model, mm.workload
    if prelude is None:
        prelude = training_prelude(mm, gpu, engine, mfu, constants)
    prec, peak, base_mfu, flops_token = (
        prelude.precision,
        prelude.peak_tflops,
        prelude.mfu,
        prelude.flops_per_token,
    )
    notes = list(prelude.notes)
    n = gpu_count
    tokens_step = w.batch_size * w.seq_len * n  # one micro-batch per GPU (data-parallel) per step
    compute = tokens_step * flops_token / (n * peak * 1e12 * base_mfu)
    bw_link, lat = allreduce_link(gpu, n, gpus_per_node)
    comm = 0.0
    if n > 1:
        ring = 2 * (n - 1) / n
        grads = mm.grad_bytes
        group = SPEED_GROUP.get(parallelism, parallelism)
        if group == "data":
            # Bucketed all-reduce runs behind the backward pass (two thirds of the compute).
            total = ring * grads / (bw_link * 1e9) + lat
            comm = max(total - BACKWARD_SHARE * compute, (1 - DP_OVERLAP) * total)
        elif group == "sharded":
            # Every weight is gathered in forward and backward, frozen LoRA/QLoRA bases included;
            # each layer's gathers and reduce-scatter run behind the previous layer's compute
            # (sharded_exposed), at most DP_OVERLAP of the traffic hidden.
            layers = max(m.num_layers, 1)
            passes = (3.0 if w.trains_base else 2.0) + (1.0 if w.gradient_checkpointing else 0.0)
            domain = gpu.link_domain(gpus_per_node)
            hops = domain if n <= domain else gpus_per_node  # inside one NVLink domain: NVLink hops
            coll_lat = ring_latency(n, 1, hops, link(gpu, min(n, gpus_per_node), gpus_per_node)[1])
            bw = bw_link * 1e9
            volume = ring * grads + 2 * (n - 1) / n * mm.weight_bytes
            total = volume / bw + 3 * layers * coll_lat
            per_layer = sharded_exposed(
                mm.weight_bytes / layers, grads / layers, n, bw, coll_lat,
                compute / passes / layers, compute * (passes - 1) / passes / layers, layers,
            )  # fmt: skip
            comm = max(per_layer, total - compute, (1 - DP_OVERLAP) * total)
        elif parallelism == "tensor":
            act = w.batch_size * n * w.seq_len * m.hidden_size * 2 / n  # tokens of the shared batch
            comm = 4 * m.num_layers * (ring * act * n / (bw_link * 1e9) + lat)
            tokens_step = w.batch_size * w.seq_len * n
            if not mfu:
                # Each rank multiplies h / n wide matrices, which run further from the GEMM ceiling.
                half = (constants or shipped_constants()).gemm_width_half
                h = m.hidden_size
                compute *= (h / (h + half)) / ((h / n) / (h / n + half))
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
    rng = Range(tps * (1 - engine.spread_low), tps, tps * (1 + engine.spread_high))
    if n > gpus_per_node:
        notes.append(
            span_note(n, gpus_per_node, gpu.link_domain(gpus_per_node), ": gradients cross the network")
        )
    else:
        notes += [x for x in (bridge_note(gpu, n), socket_note(gpu, n, gpus_per_node)) if x is not None]
    return PerformanceEstimate(
        tokens_per_s=rng,
        bound=bound,
        precision_used=prec,
        peak_tflops=peak,
        mfu=achieved_mfu,
        communication_share=share,
        notes=tuple(notes),
    )
