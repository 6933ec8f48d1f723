"""Training speed of a laid-out job: the compute of one GPU plus what its layout adds.

The per-token compute time comes from :func:`~gpuadvisor.core.estimation.performance.training_prelude`
(the GPU's MFU for this model and engine); this module adds, per optimizer step
(docs/estimation.md, "Layouts: speed"), with ``m`` micro-batches of ``b`` sequences of ``s``
tokens per pipeline, hidden size ``h``, 2-byte activations and ``B`` the link bandwidth:

- **Recomputation**: full adds one forward pass (4 instead of 3 passes); selective adds the
  attention core's forward (``2 L d_q s`` FLOPs per token, Korthikanti et al. 2022, section 5);
  the per-operator policy adds every other matrix multiply's forward (recompute.py).
- **Tensor parallelism** (Shoeybi et al. 2019; Korthikanti et al. 2022): 4 all-reduces (or, with
  sequence parallelism, all-gather + reduce-scatter pairs of the same volume) of ``b s h / CP``
  elements per layer and micro-batch, 6 with full recomputation; ring volume ``2 (t-1)/t``; inside
  a node over NVLink; not overlapped. Each rank multiplies ``h/t``-wide matrices (GEMM width curve).
- **Pipeline** (Narayanan et al. 2021): bubble ``(p-1) / (m v)`` of the compute; point-to-point
  sends of ``b s h / (t CP)`` elements forward and back per micro-batch and virtual stage, exposed
  with 1F1B and hidden up to ``DP_OVERLAP`` by the interleaved schedule (Megatron's overlap_p2p_comm).
- **Data parallel** (ZeRO paper, section 7): ring all-reduce (DDP) or reduce-scatter + all-gather
  (ZeRO-1/2) of the GPU's gradient shard, ``2 (d-1)/d`` of its bytes, overlapped with the backward
  pass of the last micro-batch up to ``DP_OVERLAP``; ZeRO-3/FSDP gathers the parameters in
  forward and backward of every micro-batch and reduce-scatters its gradients, each layer's
  collectives behind the previous layer's compute (:func:`sharded_exposed`), with NCCL's ring
  latency (:func:`ring_latency`), at most ``DP_OVERLAP`` of the traffic hidden.
- **Context parallel** (ring attention, Liu et al. 2023; Llama 3 paper section 3.3.2): each layer
  passes K and V around the ring in forward and K, V and their gradients in backward,
  ``3 (c-1)/c`` of ``b s 2 d_kv`` elements, hidden behind the attention compute.
- **Expert parallel** (Lepikhin et al. 2020, GShard): 4 all-to-alls per MoE layer and
  micro-batch (dispatch and combine, forward and backward) of ``k b s h / (CP x TP)`` elements
  (each tensor-parallel rank dispatches its sequence-parallel share of the tokens), ``(e-1)/e`` of
  them leaving the GPU, over the EP group's link (its ranks ``ETP`` apart: NVLink while
  ``ETP x EP`` fits a node, else the NICs of the node's members); not overlapped. With MoE parallel
  folding (Liu et al. 2025) the MoE layers' half of the tensor-parallel collectives runs over the
  expert TP group instead (none with ETP1), and the expert GEMMs narrow by ETP.
- **Offload** (Ren et al. 2021, ZeRO-Offload; Rajbhandari et al. 2021, ZeRO-Infinity): the
  16-bit gradients go to the host over PCIe during the backward pass, the updated 16-bit
  parameters come back; the CPU Adam step streams ``CPU_ADAM_BYTES`` per parameter through host
  memory; offloaded parameters cross PCIe twice per micro-batch (forward and backward gathers),
  behind the compute up to ``DP_OVERLAP``.

The groups sit on the links of Megatron's rank order (TP fastest, then CP, DP, PP): a group
whose span ``TP x CP x DP`` (data parallel) or ``TP x CP x DP x PP`` (pipeline) exceeds the GPU's
NVLink domain (a node; a GB200 NVL72 rack, the catalog's ``nvlink_domain_gpus``) crosses the
network, over the NICs of the members each node holds.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from ..specs.constants import SpeedConstants, shipped_constants
from ..specs.engines import EngineProfile
from ..specs.hardware import GpuSpec
from ..specs.models import ModelSpec
from ..vocabulary import GATHERING_SHARDINGS
from .layout import Layout
from .memory import MemoryModel
from .performance import (
    BACKWARD_SHARE,
    DP_OVERLAP,
    LINK_EFFICIENCY,
    NETWORK_GB_S,
    NETWORK_LATENCY_S,
    PCIE_CROSS_SOCKET_SHARE,
    PerformanceEstimate,
    Range,
    TrainingPrelude,
    block_gemm_width_efficiency,
    link,
    pcie_ring_crosses_sockets,
    ring_latency,
    sharded_exposed,
    span_note,
    training_performance,
    training_prelude,
)

#: Bytes the CPU Adam step moves per parameter: fp32 master, both moments read and written
#: (24), the 16-bit gradient read and the 16-bit parameter written (4).
CPU_ADAM_BYTES = 28.0
#: Share of PCIe bandwidth a host-device copy reaches (pinned memory).
PCIE_EFFICIENCY = 0.8


def _network() -> tuple[float, float]:
    return NETWORK_GB_S * LINK_EFFICIENCY * 1e9, NETWORK_LATENCY_S


class NodeLink(NamedTuple):
    """The link between a node's GPUs (or an NVLink domain's) as a laid-out job's groups use it."""

    bytes_per_s: float  # per GPU, for collectives
    latency_s: float
    pcie: bool = False  # PCIe rather than NVLink: a ring over more than a socket's cards slows


def node_link(gpu: GpuSpec, gpu_count: int, gpus_per_node: int) -> NodeLink:
    """:func:`~gpuadvisor.core.estimation.performance.link` of ``gpu_count`` GPUs, as a
    :class:`NodeLink` that says whether it is PCIe."""
    bw, lat, name = link(gpu, gpu_count, gpus_per_node)
    return NodeLink(bw * 1e9, lat, name == "PCIe")


def group_link(
    stride: int,
    members: int,
    gpus_per_node: int,
    node: NodeLink,
    net: tuple[float, float],
    domain: int = 0,
) -> tuple[float, float]:
    """(bytes/s per GPU, latency) of a collective over ``members`` GPUs whose ranks are ``stride``
    apart. Inside a node, or inside the GPU's NVLink domain of ``domain`` GPUs where that is larger
    (a GB200 NVL72 rack): NVLink (or PCIe). Beyond it a ring crosses each node boundary once per
    group, so the node's NICs carry the traffic of the ``gpus_per_node / stride`` members it holds:
    a GPU sees ``min(NVLink, NIC x members per node)`` (NCCL's rings over all NICs of a node).
    A PCIe ring that spans more than one socket's cards runs at ``PCIE_CROSS_SOCKET_SHARE`` of the
    lanes' rate (:func:`~gpuadvisor.core.estimation.performance.allreduce_link`)."""
    span = stride * members
    if span <= max(gpus_per_node, domain):
        if members > 1 and pcie_ring_crosses_sockets(node.pcie, span):
            return node.bytes_per_s * PCIE_CROSS_SOCKET_SHARE, node.latency_s
        return node.bytes_per_s, node.latency_s
    per_node = max(1, gpus_per_node // stride)
    return min(node.bytes_per_s, net[0] * per_node), net[1]


def tp_width_slowdown(m: ModelSpec, t: int, half: float, expert_t: int | None = None) -> float:
    """How much longer the GEMMs of one layer take when tensor parallelism splits them ``t`` ways:
    each GEMM runs at the width curve ``w / (w + half)`` of its narrower side, which the split
    narrows (QKV and gate/up by their output, o_proj and down by their input), weighted by FLOPs
    (:func:`~gpuadvisor.core.estimation.performance.block_gemm_width_efficiency`).
    ``expert_t``: the split of the MLP's GEMMs where the expert layers have their own tensor
    parallelism (MoE parallel folding's ETP; None: ``t``)."""
    whole = block_gemm_width_efficiency(m, half)
    return whole / block_gemm_width_efficiency(m, half, t, expert_t)


def run_flops(mm: MemoryModel, layout: Layout, flops_token: float) -> tuple[float, float, float]:
    """(forward FLOPs, attention-core forward FLOPs, FLOPs run) per token under ``layout``'s
    recomputation: the prelude's FLOPs count recomputation as gradient_checkpointing says; the
    layout's recomputation replaces it (full: one more forward; selective: the attention core's)."""
    w = mm.workload
    base_passes = 3.0 if w.trains_base else 2.0  # forward, backward (and weight gradients)
    forward = flops_token / (base_passes + (1.0 if w.gradient_checkpointing else 0.0))
    passes = base_passes + (1.0 if layout.recompute == "full" else 0.0)
    attention_fwd = 4 * mm.model.num_layers * mm.model.q_dim * mm.model.prefill_attended_tokens(w.seq_len)
    return forward, attention_fwd, passes * forward + recomputed_flops(mm, layout.recompute, attention_fwd)


def recomputed_flops(mm: MemoryModel, recompute: str, attention_fwd: float) -> float:
    """Forward FLOPs per token that a partial recomputation runs again (full recomputation counts a
    whole pass): Megatron's selective recomputes the attention core; the per-operator policy every
    other matrix multiply of a block (recompute.py), the attention kernel being kept."""
    if recompute == "selective":
        return attention_fwd
    if recompute == "op":
        return mm.op_kept.recompute_flops
    return 0.0


def speed_ceiling(
    mm: MemoryModel, layout: Layout, prelude: TrainingPrelude, tp_slowdown: float = 1.0
) -> float:
    """Tokens/s that :func:`layout_training_performance` can never exceed for ``layout``: its
    compute alone (recomputation, the TP width slowdown when it applies, the pipeline bubble),
    every communication and offload term left out (they only add time). The layout search prices
    layouts from the highest ceiling down and stops once a ceiling falls below the speeds it keeps."""
    return (
        layout.gpus
        * prelude.peak_tflops
        * 1e12
        * prelude.mfu
        / ceiling_work(mm, layout, prelude.flops_per_token, tp_slowdown)
    )


def ceiling_work(mm: MemoryModel, layout: Layout, flops_token: float, tp_slowdown: float = 1.0) -> float:
    """The GPU-independent part of :func:`speed_ceiling`: FLOPs run per token times the TP width
    slowdown and the pipeline bubble (the ceiling is ``GPUs x peak x MFU`` over it)."""
    _, _, flops_run = run_flops(mm, layout, flops_token)
    bubble = 1 + (layout.pp - 1) / (mm.micro_batches(layout, mm.workload.batch_size) * layout.vpp)
    return flops_run * tp_slowdown * bubble


def layout_training_performance(
    mm: MemoryModel,
    gpu: GpuSpec,
    layout: Layout,
    engine: EngineProfile,
    mfu: float | None = None,
    gpus_per_node: int = 8,
    prelude: TrainingPrelude | None = None,
    constants: SpeedConstants | None = None,
    tp_slowdown: float | None = None,
) -> PerformanceEstimate:
    """Training tokens/s of ``layout`` on ``gpu`` (see the module docstring); ``tp_slowdown`` is
    :func:`tp_width_slowdown` at the layout's TP when the caller has it already."""
    m, w = mm.model, mm.workload
    k = constants or shipped_constants()
    if prelude is None:
        prelude = training_prelude(mm, gpu, engine, mfu, constants)
    peak, base_mfu, flops_token = prelude.peak_tflops, prelude.mfu, prelude.flops_per_token
    # (The prelude's MFU is the GPU's achieved share of peak on this model and engine, whatever the
    # FLOPs are spent on, so recomputed FLOPs take time at the same rate.)
    notes = list(prelude.notes)
    t, p, c, d, e, v = layout.tp, layout.pp, layout.cp, layout.dp, layout.ep, layout.vpp
    n = layout.gpus
    L, h, s = m.num_layers, m.hidden_size, w.seq_len
    b = w.batch_size
    micro = mm.micro_batches(layout, b)
    tokens_step = micro * b * d * s

    forward, attention_fwd, flops_run = run_flops(mm, layout, flops_token)
    compute = tokens_step * flops_run / (n * peak * 1e12 * base_mfu)
    et = layout.expert_tp if m.is_moe else t
    if (t > 1 or et > 1) and not mfu:
        compute *= tp_width_slowdown(m, t, k.gemm_width_half, et) if tp_slowdown is None else tp_slowdown
    useful = compute
    if p > 1:
        compute *= 1 + (p - 1) / (micro * v)

    # Groups inside the GPU's NVLink domain (a node, or a GB200 NVL72 rack) run over NVLink.
    domain = gpu.link_domain(gpus_per_node)
    node = node_link(gpu, min(n, domain), gpus_per_node)
    net = _network()
    parts: dict[str, float] = {}
    act_bytes = b * s / c * h * 2.0  # one micro-batch's hidden states on one CP rank
    layers_gpu = math.ceil(L / p)
    moe_layers = layers_gpu * (L - m.dense_layers) / L if m.is_moe else 0.0
    tensor = _tensor_time(
        layout, et, micro, layers_gpu, moe_layers, act_bytes, gpus_per_node, domain, node, net
    )
    if tensor:
        parts["tensor"] = tensor
    if p > 1:
        bw, lat = group_link(t * c * d, p, gpus_per_node, node, net, domain)
        per = act_bytes / (t if layout.sequence_parallel else 1) / bw + lat
        p2p = 2 * micro * v * per
        # The interleaved schedule overlaps its sends with the next chunk's compute (Megatron's
        # overlap_p2p_comm); the plain 1F1B schedule waits for them.
        parts["pipeline"] = (1 - DP_OVERLAP) * p2p if v > 1 else p2p
    if c > 1:
        bw, lat = group_link(t, c, gpus_per_node, node, net, domain)
        kv = b * s / c * 2 * m.kv_dim * 2.0
        ring = micro * layers_gpu * (3 * (c - 1) / c * kv / t / bw + 2 * (c - 1) * lat)
        # Hidden behind the attention compute of the same layer (its share of the step's FLOPs).
        attn_share = attention_fwd / max(forward, 1.0)
        parts["context"] = max(ring - attn_share * useful, (1 - DP_OVERLAP) * ring)
    if e > 1 and m.is_moe:
        # The EP group's ranks are ETP apart (Megatron's expert rank order ETP, EP, EDP, PP).
        bw, lat = group_link(et, e, gpus_per_node, node, net, domain)
        per = m.experts_per_token * act_bytes * (e - 1) / e / t / bw + lat
        parts["experts"] = micro * moe_layers * 4 * per
    exposed = sum(parts.values())
    # Experts split fewer ways than TP (EP x ETP < TP) have replicas even without data parallelism.
    if d * c > 1 or (m.is_moe and layout.expert_dp > 1):
        dp = _data_parallel_time(
            mm, layout, gpus_per_node, domain, node, net, useful, micro, layers_gpu, forward / flops_run
        )
        parts["data"] = dp
        exposed += dp
    if w.offload.any:
        offload = _offload_time(mm, gpu, layout, gpus_per_node, useful, micro)
        parts["offload"] = offload
        exposed += offload
        if offload > 0.2 * (compute + exposed):
            # One wording for every GPU, so the estimate's warnings say it once.
            notes.append(
                "Offload: PCIe traffic and the CPU optimizer step take more than a fifth of each "
                "training step (the speed shown includes them)."
            )
    step = compute + exposed
    tps = tokens_step / step
    achieved_mfu = tps * flops_run / (n * peak * 1e12)  # hardware FLOPs, recomputation included
    share = exposed / step if step else 0.0
    bound = "communication" if share > 0.5 else "compute"
    if parts.get("offload", 0.0) > 0.5 * step:
        bound = "offload"
    rng = Range(tps * (1 - engine.spread_low), tps, tps * (1 + engine.spread_high))
    if n > gpus_per_node:
        notes.append(span_note(n, gpus_per_node, domain))
    return PerformanceEstimate(
        tokens_per_s=rng,
        bound=bound,
        precision_used=prelude.precision,
        peak_tflops=peak,
        mfu=achieved_mfu,
        communication_share=share,
        notes=tuple(notes),
    )


def _tensor_time(
    layout: Layout,
    et: int,
    micro: int,
    layers_gpu: int,
    moe_layers: float,
    act_bytes: float,
    gpus_per_node: int,
    domain: int,
    node: NodeLink,
    net: tuple[float, float],
) -> float:
    """Seconds of tensor-parallel collectives in a step of ``micro`` micro-batches: 4 per layer (6 with full
    recomputation) of ``2 (t-1)/t`` of the hidden states. With MoE parallel folding (the experts'
    TP ``et`` not the layout's) the attention's half runs over TP in every layer and the MLP's half
    over TP in the dense layers and over the expert TP group in the MoE layers (none with ETP1:
    each GPU's experts take its own tokens whole)."""
    t = layout.tp
    half = (6 if layout.recompute == "full" else 4) / 2  # the attention's or the MLP's collectives

    def one(group: int) -> float:
        """Seconds of one all-reduce of the hidden states over ``group`` GPUs (0 for one GPU)."""
        if group <= 1:
            return 0.0
        bw, lat = group_link(1, group, gpus_per_node, node, net, domain)
        return 2 * (group - 1) / group * act_bytes / bw + lat

    if et == t:
        return micro * layers_gpu * 2 * half * one(t)
    return micro * half * ((2 * layers_gpu - moe_layers) * one(t) + moe_layers * one(et))


def _data_parallel_time(
    mm: MemoryModel,
    layout: Layout,
    gpus_per_node: int,
    domain: int,
    node: NodeLink,
    net: tuple[float, float],
    useful: float,
    micro: int,
    layers_gpu: int,
    forward_share: float,
) -> float:
    """Exposed time of the data-parallel traffic of a step (s): gradients reduced over every
    replica of the weights, DP x CP (stride TP). Under ZeRO-3/FSDP the weights are gathered layer
    by layer and the gradients reduce-scattered every micro-batch, each collective hidden behind
    the neighbouring layer's compute only as far as that lasts (:func:`sharded_exposed`, with NCCL's
    ring latency); otherwise the reduction overlaps the last micro-batch's backward pass. With
    hybrid sharding (``Layout.shard``) those collectives run inside each shard group and each
    rank's gradient shard is then all-reduced across the groups, behind the last backward pass.
    ``forward_share``: the forward pass's share of the FLOPs run."""
    t, p = layout.tp, layout.pp
    # The sharded collectives run over the shard group (the whole DP x CP group unless hybrid).
    d = layout.shard_ways
    bw, lat = group_link(t, d, gpus_per_node, node, net, domain)
    state_share = 1.0 / (t * p)
    ring = 2 * (d - 1) / d
    # A mixture-of-experts model's routed experts are split EP x ETP ways, not TP, and their
    # gradients reduced over the expert data-parallel group (EDP = TP x CP x DP / (EP x ETP),
    # ranks EP x ETP apart), not over DP x CP (Megatron-Core's expert data-parallel group); the
    # rest of the weights as a dense model's (the experts too when they are split as TP splits).
    grad_e, weight_e = expert_state_shares(mm) if layout.ep * layout.expert_tp != t else (0.0, 0.0)
    grads = mm.grad_bytes * (1.0 - grad_e) * state_share
    params = mm.weight_bytes * (1.0 - weight_e) * state_share
    split = layout.ep * layout.expert_tp * p
    e_grads, e_params = mm.grad_bytes * grad_e / split, mm.weight_bytes * weight_e / split
    edp = layout.expert_dp
    if e_grads + e_params > 0.0 and edp > 1:
        bw_e, lat_e = group_link(layout.ep * layout.expert_tp, edp, gpus_per_node, node, net, domain)
        e_ring = 2 * (edp - 1) / edp
    else:  # each expert's state on one GPU of the stage: nothing to reduce
        bw_e, lat_e, e_ring = bw, 0.0, 0.0
    # Hybrid sharding: each rank's gradient shard is also all-reduced across the replicas of its
    # shard group (ranks ``TP x shard`` apart), once a step after the last micro-batch's backward.
    replicas = layout.shard_replicas
    across = 0.0
    if replicas > 1:
        bw_r, lat_r = group_link(t * d, replicas, gpus_per_node, node, net, domain)
        across = 2 * (replicas - 1) / replicas * grads / d / bw_r + lat_r
    window = BACKWARD_SHARE * useful / micro  # the last micro-batch's backward pass
    if layout.sharding in GATHERING_SHARDINGS:
        if d > 1:
            # The experts' gathers and reduce-scatters run beside the dense layers' in the same
            # layer: counted as the bytes that take as long on the shard group's link.
            same_time = (e_ring / bw_e) / (ring / bw)
            params += e_params * same_time
            grads += e_grads * same_time
        # A group inside the NVLink domain rings over NVLink hops only.
        coll_lat = ring_latency(d, t, domain if t * d <= domain else gpus_per_node, node.latency_s)
        total = micro * (d - 1) / d * (2 * params + grads) / bw + micro * 3 * layers_gpu * coll_lat
        per_layer = sharded_exposed(
            params / layers_gpu, grads / layers_gpu, d, bw, coll_lat,
            useful * forward_share / (micro * layers_gpu),
            useful * (1.0 - forward_share) / (micro * layers_gpu),
            layers_gpu,
        )  # fmt: skip
        sharded = max(micro * per_layer, total - useful, (1 - DP_OVERLAP) * total)
        return sharded + max(across - window, (1 - DP_OVERLAP) * across)
    experts = e_ring * e_grads / bw_e + lat_e
    dense = ring * grads / bw + lat if d > 1 else 0.0
    total = dense + experts + across
    return max(total - window, (1 - DP_OVERLAP) * total)


def expert_state_shares(mm: MemoryModel) -> tuple[float, float]:
    """Shares of the gradient (trainable) bytes and of the weight bytes that belong to a
    mixture-of-experts model's routed experts (0, 0 for a dense model): the state expert
    parallelism splits and the expert data-parallel group reduces."""
    m = mm.model
    if not m.is_moe:
        return 0.0, 0.0
    weights = m.counts.routed_experts / max(m.counts.total, 1)
    return (mm.adapter_expert_share if mm.workload.uses_adapters else weights), weights


def _offload_time(
    mm: MemoryModel, gpu: GpuSpec, layout: Layout, gpus_per_node: int, useful: float, micro: int
) -> float:
    """Exposed time of offloading in a step (s): gradients to the host, the CPU Adam step and the
    weights back (optimizer offload), and the weights streamed in per micro-batch (parameter
    offload), each over PCIe and partly hidden behind compute."""
    w = mm.workload
    off = w.offload
    t, p, d = layout.tp, layout.pp, layout.shard_ways
    n = layout.gpus
    pcie = gpu.pcie_gb_s * 1e9 * PCIE_EFFICIENCY
    shard_params = mm.weight_bytes / max(mm.block_bytes_per_weight, 1.0) / (t * p * d)
    offload = 0.0
    if off.optimizer != "none":
        grads = mm.grad_bytes / (t * p * d)
        to_host = grads / pcie
        back = 2.0 * shard_params / pcie
        host_bw = gpu.host_memory_bandwidth_gb_s * 1e9
        # All GPUs of a node share its host memory bandwidth for the CPU Adam step.
        per_node = min(n, gpus_per_node)
        cpu_adam = CPU_ADAM_BYTES * shard_params * per_node / host_bw
        if off.optimizer == "nvme":
            cpu_adam *= 2  # states read from and written back to NVMe through host buffers
        offload += max(to_host - BACKWARD_SHARE * useful, (1 - DP_OVERLAP) * to_host) + back + cpu_adam
    if off.parameters != "none":
        xfer = micro * 2 * mm.weight_bytes / (t * p * d) / pcie
        offload += max(xfer - useful, (1 - DP_OVERLAP) * xfer)
    return offload


def is_legacy(mm: MemoryModel, layout: Layout) -> bool:
    """Whether ``layout`` is a one-word setup without the layout keys (the original speed model)."""
    w = mm.workload
    return bool(layout.shorthand) and not (
        w.offload.any or w.global_batch_size is not None or w.activation_recompute is not None
    )


def training_speed(
    mm: MemoryModel,
    gpu: GpuSpec,
    layout: Layout,
    engine: EngineProfile,
    mfu: float | None = None,
    gpus_per_node: int = 8,
    prelude: TrainingPrelude | None = None,
    constants: SpeedConstants | None = None,
) -> PerformanceEstimate:
    """Training speed of one candidate: the one-word setups through
    :func:`~gpuadvisor.core.estimation.performance.training_performance`, laid-out jobs through
    :func:`layout_training_performance`."""
    if is_legacy(mm, layout):
        return training_performance(
            mm,
            gpu,
            layout.gpus,
            layout.parallelism,
            engine,
            mfu=mfu,
            gpus_per_node=gpus_per_node,
            prelude=prelude,
            constants=constants,
        )
    return layout_training_performance(
        mm, gpu, layout, engine, mfu=mfu, gpus_per_node=gpus_per_node, prelude=prelude, constants=constants
    )
