"""Serving capacity: requests per second and latency targets -> replicas, latency and monthly cost.

One replica (a candidate: GPU x count x tensor/pipeline split) gets a throughput-latency curve
over its concurrency ``c`` (sequences in flight), built from the decode step of the inference
roofline (:func:`~gpuadvisor.core.estimation.performance.inference_performance`) in closed form
(:class:`DecodeStep`: each term is affine in the batch within a kernel regime), padded so that it
never falls as the batch grows::

    step(c)     decode step with c sequences (weights once, KV of every sequence, compute,
                per-step overhead), 1 / tokens_per_s_per_user of the roofline at batch c
    tau         prefill seconds per prompt token in long chunks (the roofline's batched prefill)
    P_new       prompt tokens not found in the prefix cache, P (1 - h)

Continuous batching (vLLM, SGLang, TensorRT-LLM, MLC; llama.cpp and ExLlamaV2 with slots)::

    ITL(c)      = step(c) + ((c - 1) / O) P_new tau  each step also prefills the prompts of the
                                                   (c - 1) / O requests that replace the other
                                                   sequences as they finish (a request's own
                                                   prompt is prefilled before its first token)
                = step(c) + ((c - 1) / O) t_p      an engine that prefills each prompt in a
                                                   pass of its own (SGLang, vLLM's V0 engine:
                                                   ``EngineProfile.mixed_prefill`` false), which
                                                   every running sequence waits for
    TTFT0(c)    = t_last + (ceil(P' / chunk) - 1 + lag) ITL(c) + W_prefill
    t_last      = max(t_1, step_o + P' tau)        the step that ends the prompt (mixed), or
                = t_1 + step_o                     t_1 = max(TTFT_1 x P'/P, step(1)) after the
                                                   others' decode step_o = step(c) (0 alone)
    lag         = EngineProfile.token_lag_steps    1 where a token reaches its client a step
                                                   after it was computed (vLLM's V0 engine)
    W_prefill   = rho_p t_p / (2 (1 - rho_p)), t_p = max(TTFT_1 x P_new/P, step(1)),
                  rho_p = c / S(c) x t_p          prompts are prefilled one after another (M/D/1;
                                                   (c - 1) / S(c) for a closed loop of c clients,
                                                   whose new prompt meets the c - 1 others only)
    S(c)        = TTFT0(c) + (O - 1) ITL(c)        time a request holds its slot

Static batching (Transformers, AutoAWQ): a batch of c prompts is prefilled together and
decodes until its longest member ends: ``ITL = step(c)``, ``TTFT0 = prefill(c P) + lag step(c)``,
``S = prefill(c P) + O_p90 step(c)``.

KV capacity: the largest c whose weights, activations and KV cache fit (the memory model) with
each sequence reserving ``P_p90 + O_p90 / 2`` tokens when pages are filled as they are used
(the live context of a long request half-way through its answer) and ``P_p90 + O_p90`` when the
engine reserves a request's whole context as it admits it (TensorRT-LLM's default capacity
policy), with fixed slots or static batches. The concurrency per replica is the largest ``c <= min(KV
capacity, MAX_CONCURRENCY)`` with ``ITL(c) <= itl_ms`` and ``TTFT0(c) <= ttft_s``.

Queueing: each replica is an M/G/c queue with c slots, service time S(c) and Poisson arrivals
``lambda / R``. The probability of waiting is Sakasegawa's (1977) approximation of Erlang C,
``P_w = rho ** (sqrt(2 (c + 1)) - 1)``, and the wait, given that one waits, is taken as
exponential with the Allen-Cunneen mean ``(1 + C_s^2) / 2 x S / (c (1 - rho))`` (Hopp and
Spearman, "Factory Physics", eq. 8.10; Allen 1990). The wait at percentile q is therefore
``0`` when ``P_w <= 1 - q`` and ``mean x ln(P_w / (1 - q))`` otherwise. ``C_s^2``, the squared
coefficient of variation of the service time, follows the output lengths: a log-normal fitted to
the mean and the 90th percentile when one is given, else 1 (exponential-like). The replicas are
the fewest R with ``rho < 1`` and ``W_q + TTFT0 <= ttft_s`` at the percentile, where TTFT0 uses
the 90th-percentile prompt for percentiles of 90 and above. A layout that cannot meet a target
even with one request in flight is sized to the closest it gets: each missed target moved to one
request's own figure plus a headroom (a quarter for the ITL, the first token's own time for the
TTFT), at most 20 times the replicas that would carry the rate one request at a time.

Cost: ``usd_per_hour = R x GPUs per replica x price per GPU-hour``; ``usd_per_month =
usd_per_hour x 730 x hours_per_day / 24``; ``usd_per_million_tokens`` divides the hourly cost by
the output tokens served in that hour at the requested rate. Buying the fleet: the purchase
spread over the ownership months plus the power of the hours it runs.

References: Kwon et al. 2023 (vLLM, PagedAttention); Yu et al. 2022 (Orca, iteration-level
scheduling); Agrawal et al. 2024 (Sarathi-Serve, chunked prefill); Sakasegawa 1977, "An
approximation formula L_q = alpha rho^beta / (1 - rho)"; Hopp and Spearman, Factory Physics.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any, NamedTuple

from ..formats.scenario import Budget
from ..specs.constants import SpeedConstants, shipped_constants
from ..specs.engines import BatchDefaults, EngineProfile, SpeedModel
from ..specs.hardware import GpuSpec
from ..specs.serving import ServingSpec, batching_for
from ..specs.speculative import SpeculativeMethod
from ..specs.workload import Workload
from . import speculative as _speculative
from .cost import HOURS_PER_MONTH, BuyVsRent
from .disaggregated import DisaggregatedPlan, Transfer
from .memory import MemoryModel
from .performance import (
    PCIE_LATENCY_S,
    STREAM_CAP,
    PerformanceEstimate,
    Range,
    allreduce_link,
    attention_flop_weight,
    compute_precision,
    decode_overhead,
    engine_peak,
    inference_performance,
    moe_mlp_bytes,
    moe_slowdown,
    prefill_flops_per_token,
    shape_of,
)
from .serving_memory import ServingMemory
from .serving_sim import AtLoad
from .speculative import SpeculativeGain, SpeculativeTables, is_light, light_draft_share

#: Sequences in flight per replica at most: the order of the engines' own defaults (vLLM's
#: max_num_seqs 256-1024, TensorRT-LLM's max_batch_size 2048); beyond it a replica is compute
#: bound and more sequences only add latency.
MAX_CONCURRENCY = 1024
#: Utilization a fleet without targets is sized to (the queue stays short).
RATE_ONLY_UTILIZATION = 0.8
#: A layout that misses a target even with one request in flight is sized to the closest it gets:
#: a missed ITL target moves to one request's own ITL plus this share (room to batch a few
#: sequences, which costs little in a memory-bound step), ...
MISSED_ITL_HEADROOM = 0.25
#: ... and a missed TTFT target to one request's own TTFT plus this share of it (room for a queue as
#: long as one idle first token: a one-slot replica at a p99 target otherwise runs almost idle).
MISSED_TTFT_HEADROOM = 1.0
#: The most replicas a fleet is sized to when a target leaves it no room to queue: this many times
#: the replicas that would carry its rate one request at a time, back to back (a larger fleet is
#: mostly idle). A fleet sized to the closest it gets stops there, and so does the simulation's
#: search for replicas (``stopped="headroom"``, :func:`.serving_load.search_cap`).
MAX_IDLE_FACTOR = 20
#: Prefill utilization beyond which the prompt queue is taken as saturated (its wait is capped).
PREFILL_RHO_MAX = 0.95
#: Sequences between which the KV cache's slope is read (see :func:`kv_line`).
KV_SLOPE_FROM = 64
#: A fleet's curve (the chart's line) runs to CURVE_SPAN x its concurrency (at least CURVE_SPAN_MIN).
CURVE_SPAN, CURVE_SPAN_MIN = 4, 16
#: The most replicas a fleet is sized to.
MAX_REPLICAS = 100_000
#: z of the 90th percentile of a normal distribution (for the log-normal length tail).
_Z90 = 1.2815515655446004


class CurvePoint(NamedTuple):
    """One point of a replica's throughput-latency curve (no queueing)."""

    concurrency: int
    tokens_per_s_per_gpu: float  # output tokens/s of the replica over its GPUs
    tokens_per_s_per_user: float  # 1 / ITL
    ttft_s: float
    itl_ms: float


class FleetBuy(NamedTuple):
    """Owning the fleet against renting it, per month."""

    purchase_usd: float
    owned_usd_per_month: float  # purchase over the ownership months + power for the hours used
    rent_usd_per_month: float
    buy_is_cheaper: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "purchase_usd": round(self.purchase_usd, 2),
            "owned_usd_per_month": round(self.owned_usd_per_month, 2),
            "rent_usd_per_month": round(self.rent_usd_per_month, 2),
            "buy_is_cheaper": self.buy_is_cheaper,
        }


class FleetPlan(NamedTuple):
    """What a fleet was sized from: enough to resize it at another concurrency or replica count
    and to simulate its replicas."""

    spec: ServingSpec
    kv_max: int  # sequences of the reserved context the GPU's memory holds
    kv_pool_tokens: float  # KV tokens the GPU's memory holds beside the weights and activations
    price: Range | None
    buy: BuyVsRent | None
    budget: Budget
    memory_at: Callable[[int], ServingMemory] | None
    engine_max: int  # the most sequences the engine schedules (its default on the GPU, or the planner's)
    transfer: Transfer | None = None  # KV cache between a prefill and a decode instance


class ServingEstimate(NamedTuple):
    """The fleet one candidate needs for the scenario's traffic and targets."""

    replicas: int
    gpus_total: int
    concurrency_per_replica: int
    requests_per_s_per_replica: float
    ttft_s: float  # at the requested percentile, queueing included
    itl_ms: float  # mean inter-token latency with every slot busy
    meets_slo: bool
    limited_by: str  # "kv_cache", "latency", "compute" or "clients" (a closed loop small enough to run whole)
    usd_per_hour: float | None
    usd_per_month: float | None
    usd_per_million_tokens: float | None
    utilization: float  # share of the replicas' slots busy on average
    tokens_per_s_per_replica: float  # output tokens/s one replica sustains at its concurrency
    missed: str = ""  # which target cannot be met ("" when met): "itl", "ttft"
    buy: FleetBuy | None = None
    replica: ReplicaCurve | None = None  # the replica's throughput-latency curve (for charts)
    gpu_count: int = 1
    #: The 80% ranges (``SpeedConstants.serving_spreads``): the replicas and monthly cost the traffic needs at
    #: the fast and the slow end of the throughput range (the same concurrency per replica), the
    #: replica's output tokens/s, and the TTFT and ITL at the operating point. None when not computed.
    replicas_range: tuple[int, int] | None = None
    usd_per_month_range: tuple[float, float] | None = None
    tokens_per_s_range: tuple[float, float] | None = None
    ttft_range_s: tuple[float, float] | None = None
    itl_range_ms: tuple[float, float] | None = None
    #: Memory per GPU at the operating point: the KV cache in flight and the engine's pool.
    memory: ServingMemory | None = None
    #: The TTFT of one request on an idle replica, at the requested percentile (s): the least any
    #: fleet of this layout can offer, whatever its size (``ttft_s`` adds the fleet's queue).
    ttft_alone_s: float = 0.0
    #: The ITL of one request on an idle replica (ms): the least any fleet of this layout offers.
    itl_alone_ms: float = 0.0
    #: How far a setup that misses the targets is from them: the larger of its ITL and its
    #: ``ttft_alone_s`` over their targets, at one request (> 1; 0 when it meets them). The closest
    #: setup is the one with the smallest: the targets would have to loosen by that factor.
    shortfall: float = 0.0
    #: What the engine schedules by default on this GPU (vLLM's ``max_num_seqs`` and
    #: ``max_num_batched_tokens``, :func:`~gpuadvisor.core.specs.serving.batch_defaults`); None for
    #: an engine without such a rule.
    scheduler: BatchDefaults | None = None
    #: The service at its load, simulated request by request (:mod:`.serving_sim`): percentiles of
    #: the time to first token, between tokens, of the whole request and of the wait for admission;
    #: None until simulated (:meth:`simulated`).
    at_load: AtLoad | None = None
    #: The targets judged like a deadline from ``at_load`` (:func:`.serving_load.judge`): "meets",
    #: "likely" or "at risk"; None without targets or before the simulation.
    status: str | None = None
    #: What the fleet was sized from (to resize it, to simulate it).
    plan: FleetPlan | None = None
    #: Speculative decoding's gain at one request and the load at which it vanishes.
    speculative: SpeculativeGain | None = None
    #: Prefill and decode on separate pools (``serving.disaggregated``).
    disaggregated: DisaggregatedPlan | None = None
    #: The targets are missed at the load (the simulation), not by one request on an idle replica:
    #: ``missed`` and ``shortfall`` then come from the percentiles at the load.
    missed_at_load: bool = False
    #: Why the search for replicas stopped short of the targets (:mod:`.serving_load`): "idle" (even
    #: an idle replica misses a target: more replicas cannot help), "headroom" (an idle replica meets
    #: them, but not one carrying the least load the search allows: the target leaves no room for
    #: queueing); "" when the fleet meets them or was not searched.
    stopped: str = ""
    #: The simulation of one replica with one request at a time (each alone on the engine): the
    #: floor no fleet size lowers. None unless the search for replicas stopped.
    idle: AtLoad | None = None
    #: Sized by the simulation at the load (:func:`.serving_load.settle`: the GPU type's candidate),
    #: not by the closed form alone.
    settled: bool = False
    #: The (TTFT s, ITL ms) targets the fleet was sized to when it misses the stated ones even with
    #: one request in flight: each missed target moved to one request's own figure plus its
    #: headroom (:func:`closest_targets`; None where a target is not stated); None when the stated
    #: targets were used.
    sized_for: tuple[float | None, float | None] | None = None

    @property
    def raise_max_sequences_to(self) -> int | None:
        """The sequences per replica to start the engine with when its default schedules fewer than
        the operating point runs (None when the default holds them, or the engine has no rule)."""
        if self.scheduler is None or self.concurrency_per_replica <= self.scheduler.max_sequences:
            return None
        return self.concurrency_per_replica

    @property
    def ttft_shown_s(self) -> float:
        """The TTFT a view shows: the fleet's, queue included, when it meets the targets; else one
        request's on an idle replica (:attr:`ttft_alone_s`), which says why it misses and which no
        fleet size improves. Views mark the latter "alone"."""
        return self.ttft_s if self.meets_slo else self.ttft_alone_s

    @property
    def itl_shown_ms(self) -> float:
        """The ITL a view shows beside :attr:`ttft_shown_s`: the fleet's, or one request's alone."""
        return self.itl_ms if self.meets_slo else self.itl_alone_ms

    @property
    def order(self) -> tuple[float, ...]:
        """This service's place among the setups (smaller first): those meeting the targets by
        monthly cost, then those missing them, the closest (smallest :attr:`shortfall`) first, then
        by monthly cost. The ranking (``advice.cost_key``) and the decision
        (``recommendation.serving_key``) both sort by it, so the ranking's top row is the setup the
        summary names."""
        month = self.usd_per_month if self.usd_per_month is not None else math.inf
        if self.plan is not None and not self.plan.spec.has_targets:
            # No target: the cheapest fleet per output token that carries the load comes first.
            per_m = self.usd_per_million_tokens if self.usd_per_million_tokens is not None else math.inf
            return (0.0, per_m, month)
        return (0.0, month) if self.meets_slo else (1.0, self.shortfall, month)

    def curve(self) -> tuple[CurvePoint, ...]:
        """The replica's curve from one sequence to CURVE_SPAN x its concurrency (computed on first use:
        only the charted setups need it)."""
        if self.replica is None:
            return ()
        top = min(self.replica.top_limit, max(CURVE_SPAN_MIN, CURVE_SPAN * self.concurrency_per_replica))
        return self.replica.curve(max(1, top), self.gpu_count)

    def to_dict(self) -> dict[str, Any]:
        def r(x: float | None, digits: int) -> float | None:
            return None if x is None else round(x, digits)

        return {
            "replicas": self.replicas,
            "gpus_total": self.gpus_total,
            "concurrency_per_replica": self.concurrency_per_replica,
            "requests_per_s_per_replica": round(self.requests_per_s_per_replica, 4),
            "ttft_s": round(self.ttft_s, 4),
            "itl_ms": round(self.itl_ms, 3),
            "meets_slo": self.meets_slo,
            "missed": self.missed or None,
            "ttft_alone_s": round(self.ttft_alone_s, 4),
            "itl_alone_ms": round(self.itl_alone_ms, 3),
            "shortfall": round(self.shortfall, 4) if self.shortfall else None,
            "limited_by": self.limited_by,
            "usd_per_hour": r(self.usd_per_hour, 4),
            "usd_per_month": r(self.usd_per_month, 2),
            "usd_per_million_tokens": r(self.usd_per_million_tokens, 4),
            "utilization": round(self.utilization, 4),
            "buy_vs_rent": None if self.buy is None else self.buy.to_dict(),
            "range_80": self.ranges_dict(),
            "memory_gib": None if self.memory is None else self.memory.to_dict(),
            "status": self.status,
            "at_load": None if self.at_load is None else self.at_load.to_dict(),
            "stopped": self.stopped or None,
            "idle": None if self.idle is None else self.idle.to_dict(),
            "sized_at_load": self.settled,
            "sized_for": None
            if self.sized_for is None
            else {
                "ttft_s": r(self.sized_for[0], 4),
                "itl_ms": r(self.sized_for[1], 3),
            },
            "speculative": None if self.speculative is None else self.speculative.to_dict(),
            "prefill_gpus": None if self.disaggregated is None else self.disaggregated.prefill_gpus,
            "decode_gpus": None if self.disaggregated is None else self.disaggregated.decode_gpus,
            "disaggregated": None if self.disaggregated is None else self.disaggregated.to_dict(),
            "engine_defaults": None
            if self.scheduler is None
            else {
                "max_num_seqs": self.scheduler.max_sequences,
                "max_num_batched_tokens": self.scheduler.chunk_tokens,
                "raise_max_num_seqs_to": self.raise_max_sequences_to,
            },
        }

    def ranges_dict(self) -> dict[str, list[float | int]] | None:
        """The 80% ranges as ``{figure: [low, high]}`` (see ``SpeedConstants.serving_spreads``)."""
        if self.replicas_range is None:
            return None
        out: dict[str, list[float | int]] = {"replicas": list(self.replicas_range)}
        if self.usd_per_month_range is not None:
            out["usd_per_month"] = [round(x, 2) for x in self.usd_per_month_range]
        if self.tokens_per_s_range is not None:
            out["tokens_per_s_per_replica"] = [round(x, 2) for x in self.tokens_per_s_range]
        if self.ttft_range_s is not None:
            out["ttft_s"] = [round(x, 4) for x in self.ttft_range_s]
        if self.itl_range_ms is not None:
            out["itl_ms"] = [round(x, 3) for x in self.itl_range_ms]
        return out


def batch_models(mm: MemoryModel, top: int = MAX_CONCURRENCY) -> dict[int, MemoryModel]:
    """Memory models of the workload at batches 1, 2, 4, ... up to the first at or past ``top`` (the roofline reads the batch
    from its workload); built once per memory model and shared by every GPU (read only)."""

    def build() -> dict[int, MemoryModel]:
        out: dict[int, MemoryModel] = {}
        b = 1
        while b < 2 * top:
            w = replace(mm.workload, batch_size=b)
            out[b] = MemoryModel(mm.model, w, mm.overhead, prefill_chunk_tokens=mm.prefill_chunk_tokens)
            b *= 2
        return out

    result: dict[int, MemoryModel] = mm.cached(f"batch_models:{top}", build)
    return result


def reserved_context(w: Workload, batching: str) -> int:
    """Tokens of KV cache one sequence reserves (see the module docstring)."""
    if batching == "paged":
        return w.prompt_p90 + math.ceil(w.output_p90 / 2)
    return w.prompt_p90 + w.output_p90


def kv_line(mm: MemoryModel, gpu_count: int, parallelism: str, context: int) -> tuple[float, float, float]:
    """(bytes per GPU with one sequence, the same read off the line through many sequences, bytes each
    further sequence adds) at ``context`` tokens.

    The slope is taken between 64 and 128 sequences, where a serving engine's prefill activations
    have reached their chunk and only the KV cache (and the allocator's share of it) still grows.
    Memory alone, so worked out once per memory model and layout."""

    def line() -> tuple[float, float, float]:
        one = mm.breakdown(gpu_count, parallelism, batch_size=1, context=context).device_total
        lo = mm.breakdown(gpu_count, parallelism, batch_size=KV_SLOPE_FROM, context=context).device_total
        hi = mm.breakdown(gpu_count, parallelism, batch_size=2 * KV_SLOPE_FROM, context=context).device_total
        per_seq = max((hi - lo) / KV_SLOPE_FROM, 1.0)
        return one, max(one, lo - (KV_SLOPE_FROM - 1) * per_seq), per_seq

    result: tuple[float, float, float] = mm.cached(f"kv_line:{gpu_count}:{parallelism}:{context}", line)
    return result


def speculative_memory(mm: MemoryModel, draft: MemoryModel | None, gpu_count: int) -> tuple[float, float]:
    """(bytes per GPU, KV share of the target's per token) of a service's speculative proposer: a
    draft model's weights and KV cache, one layer's for EAGLE and MTP, none for an n-gram lookup."""
    sp = mm.workload.speculative
    if sp is None:
        return 0.0, 0.0
    layers = max(mm.model.num_layers, 1)
    if sp.method == SpeculativeMethod.DRAFT and draft is not None:
        share = (draft.kv_bytes_per_token_layer * draft.model.num_layers) / max(
            mm.kv_bytes_per_token_layer * layers, 1.0
        )
        return draft.weight_bytes / gpu_count, share
    if is_light(sp):
        return mm.block_weight_bytes / layers / gpu_count, 1.0 / layers
    return 0.0, 0.0


def with_proposer(
    line: tuple[float, float, float], extra_bytes: float, kv_share: float
) -> tuple[float, float, float]:
    """A KV line (:func:`kv_line`) with a speculative proposer's weights and KV cache beside the target's."""
    one, base, per_seq = line
    return one + extra_bytes + per_seq * kv_share, base + extra_bytes, per_seq * (1.0 + kv_share)


def kv_pool_tokens(line: tuple[float, float, float], capacity_bytes: float, context: int) -> float:
    """KV tokens the GPU's memory holds beside the weights and activations (the simulation's pool)."""
    _one, base, per_seq = line
    return max(0.0, (capacity_bytes - base) / per_seq * context)


def kv_capacity(line: tuple[float, float, float], capacity_bytes: float) -> int:
    """Sequences that fit in ``capacity_bytes`` per GPU (0 when not even one does)."""
    one, base, per_seq = line
    if one > capacity_bytes:
        return 0
    return max(1, 1 + int((capacity_bytes - base) // per_seq))


def service_cv2(mean: int, p90: int | None) -> float:
    """Squared coefficient of variation of the output length: a log-normal through the mean and the
    90th percentile, or 1 (exponential-like) when no percentile is given."""
    if p90 is None:
        return 1.0
    r = math.log(p90 / mean)
    if r <= 0:
        return 0.0
    # ln(p90 / mean) = z sigma - sigma^2 / 2: the smaller root (the larger one is the same tail
    # reached from a much smaller median); past the vertex the tail is as heavy as it can be.
    disc = _Z90 * _Z90 - 2 * r
    sigma = _Z90 - math.sqrt(disc) if disc > 0 else _Z90
    return math.expm1(sigma * sigma)


def wait_at_percentile(
    arrivals_per_s: float, slots: int, service_s: float, cv2: float, percentile: int
) -> float:
    """Queueing delay (s) at ``percentile`` of an M/G/c queue (see the module docstring); inf when
    the replica is saturated."""
    if arrivals_per_s <= 0:
        return 0.0
    rho = arrivals_per_s * service_s / slots
    if rho >= 1.0:
        return math.inf
    p_wait = rho ** (math.sqrt(2.0 * (slots + 1)) - 1.0)
    tail = 1.0 - percentile / 100.0
    if p_wait <= tail:
        return 0.0
    mean_given_wait = (1.0 + cv2) / 2.0 * service_s / (slots * (1.0 - rho))
    return mean_given_wait * math.log(p_wait / tail)


class DecodeStep:
    """The roofline's decode step as a closed-form function of the batch ``b`` on one replica layout.

    Every term of :func:`~gpuadvisor.core.estimation.performance.inference_performance`'s decode
    step is affine in ``b`` within a kernel regime (the quantized GEMV up to ``gemv_max`` tokens,
    the GEMM beyond), except the MoE experts left unread, ``E_bytes (1 - k/E)^b``::

        t_mem(b)  = bytes(b) / stream + b kv / (stream f_kv)
        t_comp(b) = F (b + T_half) / (t peak ceiling g)     the GEMM efficiency b / (b + T_half)
        t_gpu(b)  = max(t_mem, t_comp) + fixed + comm(b)
        step(b)   = max(t_gpu, t_cpu) + h min(t_gpu, t_cpu)   h: the exposed share of host launches

    The coefficients are read once per layout, so a whole curve costs a few multiplications per
    concurrency instead of one roofline evaluation per batch. :meth:`raw` equals the roofline's
    ``1 / tokens_per_s_per_user``; :class:`ReplicaCurve` checks it against the roofline at the
    batches it evaluates anyway and falls back to the roofline when they differ.

    :meth:`__call__` is the step an engine runs: a batch can always be padded to a larger one, so a
    batch at or below ``gemv_max`` costs at most the first GEMM batch (an FP8 GEMM padded to its
    tile at batch 1 is no slower than at batch 2). The step is therefore non-decreasing in ``b``."""

    __slots__ = (
        "stream", "kv_s", "other", "block", "bbpw", "family", "gemv_max", "comp_gemv", "comp_gemm",
        "t_half", "fixed", "comm0", "comm1", "t_cpu", "expert", "keep", "chunk", "ceiling",
        "prefill_flops", "prefill_peak", "exposed", "t_cpu_prefill", "prompt_share", "seq_host", "slow", "padded",
    )  # fmt: skip

    def __init__(
        self,
        mm: MemoryModel,
        gpu: GpuSpec,
        gpu_count: int,
        parallelism: str,
        engine: EngineProfile,
        bw_eff: float | None = None,
        prefill_mfu: float | None = None,
        gpus_per_node: int = 8,
        constants: SpeedConstants | None = None,
    ) -> None:
        k = constants or shipped_constants()
        m, w = mm.model, mm.workload
        family, n_mm, L, d_q, linears, graphs, moe = shape_of(mm, k)
        prec, peak, _ = compute_precision(gpu, w.weights, w.quantization_family)
        peak = engine_peak(gpu, engine, prec, peak)
        t = gpu_count if parallelism == "tensor" else 1
        p = gpu_count if parallelism == "pipeline" else 1
        bw = gpu.memory_bandwidth_gb_s * 1e9 * k.bandwidth_ceiling.get(gpu.architecture, 1.0)
        ceiling = (
            (prefill_mfu or engine.prefill_mfu)
            * k.gemm_ceiling.get(gpu.architecture, 0.75)
            / k.gemm_ceiling["ampere"]
        )
        # Bandwidth ceiling x engine efficiency, at most what streaming kernels reach on any GPU.
        self.stream = stream = t * min(
            bw * (bw_eff or engine.bandwidth_efficiency), gpu.memory_bandwidth_gb_s * 1e9 * STREAM_CAP
        )
        self.exposed = k.host_exposed_share
        c_mean = w.prompt_tokens + w.output_tokens / 2
        self.kv_s = (
            mm.kv_tokens_per_layer(int(c_mean))
            * L
            * mm.kv_bytes_per_token_layer
            * m.kv_copies(t)  # every rank reads its copy (all of it with latent attention)
            / (stream * k.kv_bandwidth_factor)
        )
        # The input embedding is a lookup, not a stream (a tied table is read whole as the head).
        self.other = mm.weight_bytes - mm.block_weight_bytes - (mm.embedding_bytes if mm.head_bytes else 0.0)
        self.block = mm.block_weight_bytes
        self.bbpw = max(mm.block_bytes_per_weight, 1e-9)
        self.family = family
        self.gemv_max = family.gemv_max_tokens if family is not None else math.inf
        attn = attention_flop_weight(gpu, prec, peak)  # attention at the 16-bit rate
        flops = 2 * n_mm + 4 * L * d_q * m.attended_tokens(c_mean) * attn
        self.comp_gemv = flops / (t * peak * 1e12 * ceiling)
        self.comp_gemm = self.comp_gemv / (family.gemm_efficiency if family is not None else 1.0)
        self.t_half = k.gemm_tokens_half
        # A prefill pass runs eagerly, as in the roofline.
        self.fixed, self.t_cpu, self.t_cpu_prefill, t_prompt = decode_overhead(
            engine, L, family, graphs, linears, k, moe
        )
        # Each prompt's host work in the engine, per prompt token (as the roofline's prefill).
        self.prompt_share = t_prompt / max(w.prompt_tokens, 1)
        self.seq_host = engine.seq_host_s
        self.comm0 = self.comm1 = 0.0
        if t > 1:
            bw_link, lat = allreduce_link(gpu, gpu_count, gpus_per_node)
            self.comm0 = 2 * L * lat
            self.comm1 = 2 * L * 2 * (t - 1) / t * m.hidden_size * 2 / (bw_link * 1e9)
        if p > 1:
            self.comm0 += (p - 1) * PCIE_LATENCY_S
        self.chunk = engine.prefill_chunk_tokens
        self.ceiling = ceiling
        # FLOPs per prompt token: its GEMMs and the keys it attends to in a causal pass.
        self.prefill_flops = prefill_flops_per_token(m, w.prompt_tokens, engine, n_mm, attn)
        self.prefill_peak = t * p * peak * 1e12  # a pipeline's stages all work on a long prompt
        self.expert = moe_mlp_bytes(mm)
        self.keep = 1.0 - m.experts_per_token / m.num_experts if m.is_moe else 1.0
        # The experts read stream at moe_expert_efficiency of the dense rate (as the roofline).
        self.slow = moe_slowdown(m, k)
        self.padded = -1.0  # the step at the first GEMM batch (set by __call__ when first needed)

    def terms(self, b: float) -> tuple[float, float, float, float]:
        """(t_mem, t_comp, GPU-side fixed + communication, CPU launch) at batch ``b``."""
        unused = self.expert * self.keep**b if self.expert else 0.0
        block = self.block - unused + (self.expert - unused) * self.slow
        fam = self.family
        if fam is None:
            read = block + self.other
            comp = self.comp_gemv
        else:
            gemm_read = block + block / self.bbpw * fam.dequant_bytes_per_weight + self.other
            passes = math.ceil(b / fam.gemv_row_block) if fam.gemv_per_row else 1.0
            read = block / fam.gemv_efficiency * passes + self.other
            comp = self.comp_gemv
            if b > self.gemv_max or (fam.gemv_per_row and read > gemm_read):  # as the roofline
                read, comp = gemm_read, self.comp_gemm
        t_mem = read / self.stream + b * self.kv_s
        return (
            t_mem,
            comp * (b + self.t_half),
            self.fixed + self.comm0 + self.comm1 * b,
            self.t_cpu + self.seq_host * b,
        )

    def prefill(self, tokens: float, b: int) -> float:
        """The roofline's prefill of ``tokens`` prompt tokens with the batch ``b`` in flight (s): chunks of
        the engine's size, each a GEMM of ``min(tokens, chunk)`` rows that reads the weights once."""
        g = min(tokens, self.chunk) if self.chunk else tokens
        passes = max(1.0, tokens / g)
        e = self.ceiling * g / (g + self.t_half)
        # The experts the pass's prompt tokens route to are read (as the roofline's prefill).
        unused = self.expert * self.keep ** max(g, b) if self.expert else 0.0
        block = self.block - unused + (self.expert - unused) * self.slow
        fam = self.family
        if fam is not None and g > self.gemv_max:
            e *= fam.gemm_efficiency
            read = block + block / self.bbpw * fam.dequant_bytes_per_weight + self.other
        elif fam is not None:
            read = block / fam.gemv_efficiency + self.other
        else:
            read = block + self.other
        comp = tokens * self.prefill_flops / (self.prefill_peak * e)
        fixed = self.fixed + self.comm0 + self.comm1 * b
        # The prompt's tokens are all-reduced as well (tensor parallel), after their GEMMs; each of
        # its prompts costs the host's work on it (``prompt_host_s``), which the GPU waits for.
        return float(
            max(comp, passes * read / self.stream, passes * self.t_cpu_prefill)
            + passes * fixed
            + tokens * (self.comm1 + self.prompt_share)
        )

    def raw(self, b: float) -> float:
        """The roofline's decode step at batch ``b`` (no padding): the longer of the GPU's and the
        host's time, plus the exposed share of the shorter."""
        t_mem, t_comp, fixed, t_cpu = self.terms(b)
        t_gpu = (t_mem if t_mem >= t_comp else t_comp) + fixed
        if t_gpu >= t_cpu:
            return t_gpu + self.exposed * t_cpu
        return t_cpu + self.exposed * t_gpu

    def bound(self, b: float) -> str:
        """What bounds the step at batch ``b``, in the roofline's words."""
        t_mem, t_comp, fixed, t_cpu = self.terms(b)
        return max((t_mem, "memory"), (t_comp, "compute"), (fixed, "overhead"), (t_cpu, "overhead"))[1]

    def largest_within(self, target_s: float, per_seq_s: float, top: int) -> int | None:
        """The largest integer ``b`` in [1, top] with ``step(b) + per_seq_s b <= target_s``, solved on
        the affine pieces (0 when not even one sequence does), or None where the step is not affine
        (MoE experts) or the answer falls where a quantized kernel switches (the caller then searches)."""
        if self.expert:
            return None
        b0 = self.gemv_max + 1 if self.family is not None else 1
        t_mem0, t_comp0, fixed0, t_cpu0 = self.terms(b0)
        comp = self.comp_gemm if self.family is not None else self.comp_gemv
        # Each piece a + s b <= target (the step is the largest of them); a piece without slope
        # bounds nothing or everything.
        # The GPU's pieces g = a + s b; the step is max(g + h t_cpu, t_cpu + h g) over them (both
        # rise with g), so every piece is affine in b.
        gpu_pieces = (
            (t_mem0 - b0 * self.kv_s + fixed0 - b0 * self.comm1, self.kv_s + self.comm1),
            (comp * self.t_half + fixed0 - b0 * self.comm1, comp + self.comm1),
        )
        h, c = self.exposed, self.seq_host
        a_cpu = t_cpu0 - b0 * c  # the host's time is affine too: a_cpu + c b
        pieces = [(a + h * a_cpu, s + h * c + per_seq_s) for a, s in gpu_pieces]
        pieces += [(a_cpu + h * a, c + h * s + per_seq_s) for a, s in gpu_pieces]
        best = float(top)
        for a, slope in pieces:
            if slope > 0:
                best = min(best, (target_s - a) / slope)
            elif a > target_s:
                return 0
        b = int(max(0.0, best))
        if self.family is not None and b <= self.gemv_max:
            return None
        return b

    def __call__(self, b: float) -> float:
        """The step the engine runs with ``b`` sequences: the cheaper of ``b`` and its padding to the
        first GEMM batch (non-decreasing in ``b``)."""
        if b <= self.gemv_max and self.family is not None:
            step, padded = self.raw(b), self.padded
            if padded < 0.0:  # the first GEMM batch's step, worked out once
                padded = self.padded = self.raw(self.gemv_max + 1)
            return step if step <= padded else padded
        return self.raw(b)


def request_overhead_s_of(spec: ServingSpec, engine_id: str, constants: SpeedConstants) -> float:
    """The per-request time of a service on ``engine_id`` (s): its stated ``request_overhead_ms``,
    else the stack's fitted value in ``constants`` (:meth:`~.SpeedConstants.request_overhead_for`)."""
    if spec.request_overhead_ms is not None:
        return spec.request_overhead_ms / 1000.0
    return constants.request_overhead_for(engine_id)


#: Relative difference up to which the closed-form step is taken to be the roofline's.
STEP_AGREEMENT = 1e-9
#: The roofline's own step (fallback) is made non-decreasing over the batches up to this one (the
#: kernel switches of quantized families happen at small batches).
PAD_SCAN = 32


class ReplicaCurve:
    """A replica's decode step and prefill over concurrency.

    The step is the closed form of :class:`DecodeStep` when one is given and agrees with the
    roofline at the batches evaluated anyway (1 and the first batch whose prompts fill a chunk);
    otherwise the roofline at batches 1, 2, 4, ..., evaluated lazily (only the batches a question
    needs), interpolated linearly and made non-decreasing over the small batches by padding (see
    :class:`DecodeStep`). A static batch's prefill is always the roofline's, interpolated."""

    def __init__(
        self,
        perf_at: Callable[[int], PerformanceEstimate],
        top: int,
        w: Workload,
        spec: ServingSpec,
        batching: str,
        chunk_tokens: int | None,
        decode: DecodeStep | None,
        request_overhead_s: float,
        mixed_prefill: bool = True,
        constants: SpeedConstants | None = None,
        token_lag_steps: int = 0,
    ) -> None:
        #: The constants the curve was computed with (its figures' 80% ranges come from them).
        self.constants = constants or shipped_constants()
        self._perf_at = perf_at
        self.overhead = request_overhead_s
        self.mixed_prefill = mixed_prefill
        self.token_lag_steps = token_lag_steps
        self._points: dict[int, tuple[float, float, str]] = {}
        self._pow_steps: dict[int, float] = {}
        self._point_memo: dict[tuple[float, bool], tuple[float, float, float, float]] = {}
        self.top_limit = max(1, top)
        self.top_batch = 1 << max(0, (self.top_limit - 1).bit_length())
        self.w, self.spec, self.batching = w, spec, batching
        self.speculative: SpeculativeTables | None = None
        self.ttft1 = 0.0
        self.perf1: PerformanceEstimate | None = None  # the roofline at one sequence (set by _at(1))
        step1 = self._at(1)[0]  # also sets ttft1, the prompt alone
        if decode is not None and abs(decode.raw(1) - step1) > STEP_AGREEMENT * step1:
            decode = None
        h = spec.prefix_cache_hit_rate
        self.new_mean = w.prompt_tokens * (1.0 - h)
        tail_prompt = w.prompt_p90 if spec.percentile >= 90 else w.prompt_tokens
        self.new_tail = tail_prompt * (1.0 - h)
        # Prefill seconds per prompt token in long chunks: from the first batch whose prompts fill
        # a chunk (the cost per token is the same beyond it), or the largest batch.
        self.chunk = chunk_tokens or math.inf
        b_tau = self.top_batch
        if chunk_tokens:
            b_tau = min(b_tau, 1 << max(0, math.ceil(chunk_tokens / w.prompt_tokens) - 1).bit_length())
        if (
            decode is not None
            and abs(decode.prefill(w.prompt_tokens, 1) - self.ttft1) > STEP_AGREEMENT * self.ttft1
        ):
            decode = None
        if decode is not None:
            prefill_tau = decode.prefill(b_tau * w.prompt_tokens, b_tau)
        else:
            prefill_tau = self._at(b_tau)[1]
        self.decode = decode
        self.tau = prefill_tau / (b_tau * w.prompt_tokens)
        self.step1 = self.step(1)
        self.out_longest = w.output_p90 if batching == "static" else w.output_tokens
        # The concurrency at which the prompts that replace finished requests fill each step's token
        # budget: c decode tokens and (c - 1) / O prompts of P_new tokens make one chunk. Past it the
        # engine admits no more prompts a step than the chunk holds (see :meth:`_point`).
        self.saturation = math.inf
        if batching != "static" and mixed_prefill and math.isfinite(self.chunk):
            out = w.output_tokens
            self.saturation = 1.0 + max(self.chunk - 1.0, 0.0) * out / (out + self.new_mean)

    def with_overhead(self, request_overhead_s: float) -> ReplicaCurve:
        """This curve with another per-request time. The time enters only the operating points
        (:meth:`point`), so the decode step and the prefill, which it does not move, are shared with
        this curve; the points are worked out anew."""
        if request_overhead_s == self.overhead:
            return self
        other = copy.copy(self)
        other.overhead = request_overhead_s
        other._point_memo = {}
        return other

    def with_targets(self, ttft_s: float | None, itl_ms: float | None) -> ReplicaCurve:
        """This curve judged against other latency targets. The targets enter only :meth:`meets`,
        :meth:`largest_meeting` and the fleet's sizing, so the operating points are shared."""
        if ttft_s == self.spec.ttft_s and itl_ms == self.spec.itl_ms:
            return self
        other = copy.copy(self)
        other.spec = replace(self.spec, ttft_s=ttft_s, itl_ms=itl_ms)
        return other

    def _at(self, b: int) -> tuple[float, float, str]:
        """(decode step s, the batch's prefill s, bound) of the roofline at batch ``b``."""
        got = self._points.get(b)
        if got is None:
            p = self._perf_at(b)
            out = self.w.output_tokens
            step = 1.0 / p.tokens_per_s_per_user  # type: ignore[operator]
            # The batch's prefill: batch time (B O / tokens/s) less its O decode steps.
            prefill = max(b * out / p.tokens_per_s.expected - out * step, 0.0)
            got = self._points[b] = (step, prefill, p.bound)
            if b == 1:
                self.ttft1 = p.time_to_first_token_s or step
                self.perf1 = p
        return got

    @property
    def batches(self) -> list[int]:
        """The batches the roofline was evaluated at, ascending."""
        return sorted(self._points)

    def _pow_step(self, b: int) -> float:
        """The roofline's step at the power of two ``b``, padded to a larger batch where that is
        cheaper (up to PAD_SCAN)."""
        got = self._pow_steps.get(b)
        if got is None:
            got = self._at(b)[0]
            if 2 * b <= min(self.top_batch, PAD_SCAN):
                got = min(got, self._pow_step(2 * b))
            self._pow_steps[b] = got
        return got

    def use_speculative(self, tables: SpeculativeTables) -> None:
        """Decode speculatively from now on: :meth:`step` becomes the time per generated token of
        a sequence, ``step_spec(c) / tau`` (:mod:`.speculative`), and the prompts also pay the
        proposer's prefill."""
        self.speculative = tables
        self.tau += tables.extra_prefill_s_per_token
        self.ttft1 += tables.extra_prefill_s_per_token * self.w.prompt_tokens
        self._point_memo.clear()
        self.step1 = self.step(1)

    def step(self, c: float) -> float:
        """The decode step (s) with ``c`` sequences in flight (with speculative decoding, the time
        per generated token of one sequence)."""
        if self.speculative is not None:
            return self.speculative.per_token(max(c, 1.0))
        if self.decode is not None:
            return self.decode(max(c, 1.0))
        if c <= 1:
            return self._pow_step(1)
        hi = min(1 << (math.ceil(c) - 1).bit_length(), self.top_batch)
        if c == hi:
            return self._pow_step(hi)
        lo = max(1, hi // 2)
        s_lo, s_hi = self._pow_step(lo), self._pow_step(hi)
        if hi == lo:
            return s_lo
        return s_lo + (c - lo) / (hi - lo) * (s_hi - s_lo)

    def batch_prefill(self, c: float) -> float:
        """The roofline's prefill of a static batch of ``c`` prompts (s), linear between powers of two."""
        if c <= 1:
            return self._at(1)[1] * c
        hi = min(1 << (math.ceil(c) - 1).bit_length(), self.top_batch)
        if c == hi:
            return self._at(hi)[1]
        lo = max(1, hi // 2)
        p_lo, p_hi = self._at(lo)[1], self._at(hi)[1]
        if hi == lo:
            return p_lo * c / lo
        return p_lo + (c - lo) / (hi - lo) * (p_hi - p_lo)

    def bound_at(self, c: int) -> str:
        """What bounds the decode step with ``c`` sequences (the roofline's bound at the power of
        two at or below ``c`` when there is no closed form)."""
        if self.decode is not None:
            return self.decode.bound(max(c, 1))
        b = 1 << max(0, max(1, c).bit_length() - 1)
        return self._at(min(b, self.top_batch))[2]

    def point(self, c: float, closed: bool = False) -> tuple[float, float, float, float]:
        """(ITL s, TTFT0 at the percentile s, mean TTFT0 s, service time s) at concurrency ``c``
        (remembered: the search, the fleet and its figures ask for the same concurrency).

        ``closed``: the requests come from a closed loop of ``c`` clients, not from a Poisson
        stream, so a new prompt meets the prompts of the ``c - 1`` others only (the arrival
        theorem of closed queueing networks: an arriving customer sees the network in equilibrium
        with itself removed; Reiser and Lavenberg, "Mean-Value Analysis of Closed Multichain
        Queuing Networks", J. ACM 27(2), 1980). A Poisson arrival sees all ``c`` (PASTA)."""
        key = (c, closed)
        got = self._point_memo.get(key)
        if got is None:
            got = self._point_memo[key] = self._point(c, closed)
        return got

    def _point(self, c: float, closed: bool = False) -> tuple[float, float, float, float]:
        if c > self.saturation:
            # Prefill-bound: each step is a full chunk of decode and prompt tokens, so the steps, the
            # ITL and the requests ended a second stay those at the saturation; the c - saturation
            # others wait for their prompts' turn (Little's law: a request spends c / rate in the
            # replica), and that wait is time before their first token.
            itl, tail, mean, service = self.point(self.saturation, closed)
            extra = service * (c / self.saturation - 1.0)
            return itl, tail + extra, mean + extra, service + extra
        step = self.step(c)
        w = self.w
        out = w.output_tokens
        if self.batching == "static":
            share = 1.0 - self.spec.prefix_cache_hit_rate
            prefill = self.batch_prefill(c) * share
            tail = prefill * (self.new_tail / self.new_mean if self.new_mean else 1.0)
            late = step * self.token_lag_steps  # a lagging engine shows each token a step later
            ttft_tail, ttft_mean = tail + late + self.overhead, prefill + late + self.overhead
            service = ttft_tail + (self.out_longest - 1) * step
            return step, ttft_tail, ttft_mean, service
        alone = self.ttft1 / w.prompt_tokens
        prefill_mean = max(alone * self.new_mean, self.step1)
        # Each step also prefills the prompts of the (c - 1) / O requests that replace the others:
        # inside the decode batch, their tokens' marginal time (mixed chunked prefill), or in a
        # pass of their own that every running sequence waits for (weights, launches and all).
        per_prompt = self.new_mean * self.tau if self.mixed_prefill else prefill_mean
        itl = step + max(c - 1.0, 0.0) * per_prompt / out
        # The step that ends a prompt also decodes the others (c > 1): its prompt tokens ride in
        # it (mixed), or its own pass runs after their decode; the prompt's earlier chunks take a
        # step each, and a lagging engine shows the token a step later.
        others = step if c > 1.0 else 0.0
        lag = self.token_lag_steps

        def first_token(new: float, prefill: float) -> float:
            last = max(prefill, others + new * self.tau) if self.mixed_prefill else prefill + others
            return last + (math.ceil(max(new, 1.0) / self.chunk) - 1 + lag) * itl

        ttft_tail = first_token(self.new_tail, max(alone * self.new_tail, self.step1))
        ttft_mean = first_token(self.new_mean, prefill_mean)
        # Prompts are prefilled one after another: a new one waits for those ahead of it
        # (M/D/1, Pollaczek-Khinchine: rho t / (2 (1 - rho)) with rho = prompts/s x t), the
        # prompts of the c others (Poisson arrivals) or of the c - 1 other clients (a closed loop).
        ahead = max(c - 1.0, 0.0) if closed else c
        rho = min(ahead / (ttft_mean + (out - 1) * itl) * prefill_mean, PREFILL_RHO_MAX)
        wait = rho * prefill_mean / (2.0 * (1.0 - rho))
        ttft_tail += wait + self.overhead
        ttft_mean += wait + self.overhead
        service = ttft_mean + (out - 1) * itl
        return itl, ttft_tail, ttft_mean, service

    def throughput(self, c: float) -> float:
        """Output tokens/s of the replica with ``c`` sequences in flight (closed loop, no queue)."""
        _itl, _tt, _tm, service = self.point(c)
        return c * self.w.output_tokens / service

    def meets(self, c: int) -> bool:
        itl, ttft_tail, _tm, _s = self.point(c)
        return itl * 1000.0 <= self.spec.itl_limit_ms and ttft_tail <= self.spec.ttft_limit_s

    def itl(self, c: float) -> float:
        """Mean inter-token latency (s) with ``c`` sequences in flight (the first term of :meth:`point`)."""
        if self.batching == "static":
            return self.step(c)
        c = min(c, self.saturation)  # past it every step is a full chunk (see :meth:`_point`)
        return self.step(c) + max(c - 1.0, 0.0) * self.new_mean * self.tau / self.w.output_tokens

    def largest_meeting(self, top: int) -> int:
        """The largest concurrency in [1, top] meeting both targets (0 when none does).

        The decode step never falls as the batch grows (:class:`DecodeStep` pads a batch where a
        larger one is cheaper), so the latencies rise with the concurrency and the concurrencies
        that meet the targets are 1 to some c*. The ITL bound is found first on the ITL alone (a
        few multiplications per try; past the saturation, where every step is a full chunk, the ITL
        no longer rises, so a saturation within the ITL target bounds nothing); the TTFT, which
        needs the whole operating point, is then checked there and, if missed, bisected below it."""
        if top < 1 or not self.meets(1):
            return 0
        target = self.spec.itl_limit_ms / 1000.0
        solved = None
        if self.decode is not None:
            per_seq = 0.0 if self.batching == "static" else self.new_mean * self.tau / self.w.output_tokens
            # ITL(c) = step(c) + per_seq (c - 1): the closed form's step(b) + per_seq b within target + per_seq.
            solved = self.decode.largest_within(target + per_seq, per_seq, top)
        if self.saturation < top and self.itl(self.saturation) <= target:
            hi = top  # the ITL stops rising at the saturation (every step a full chunk)
        elif solved is not None:
            # Rounding at the edge of a piece: step to the exact integer bound.
            hi = max(1, solved)
            while hi < top and self.itl(hi + 1) <= target:
                hi += 1
            while hi > 1 and self.itl(hi) > target:
                hi -= 1
        elif self.itl(top) <= target:
            hi = top
        else:
            lo, hi = 1, top  # itl(lo) meets the target, itl(hi) does not
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if self.itl(mid) <= target:
                    lo = mid
                else:
                    hi = mid
            hi = lo
        if self.meets(hi):
            return hi
        lo = 1
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.meets(mid):
                lo = mid
            else:
                hi = mid
        return lo

    def curve(self, top: int, gpus: int) -> tuple[CurvePoint, ...]:
        """Points at 1, 2, 4, ... below ``top`` and at ``top`` (a chart's line)."""
        points = []
        cs = [1 << k for k in range(max(1, top).bit_length()) if (1 << k) < top] + [top]
        for c in cs:
            itl, _tt, ttft_mean, service = self.point(c)
            points.append(
                CurvePoint(c, c * self.w.output_tokens / service / gpus, 1.0 / itl, ttft_mean, itl * 1000)
            )
        return tuple(points)


def replica_curve(
    models: dict[int, MemoryModel],
    gpu: GpuSpec,
    gpu_count: int,
    parallelism: str,
    engine: EngineProfile,
    top: int,
    bw_eff: float | None = None,
    prefill_mfu: float | None = None,
    gpus_per_node: int = 8,
    spec: ServingSpec | None = None,
    closed_form: bool = True,
    request_overhead_s: float | None = None,
    constants: SpeedConstants | None = None,
    draft: MemoryModel | None = None,
) -> ReplicaCurve:
    """The replica's curve up to ``top`` sequences under ``constants`` (the shipped ones when None):
    the closed-form decode step (checked against the roofline), or the roofline at 1, 2, 4, ...
    evaluated lazily (llama.cpp, which has its own speed model, or ``closed_form=False``). With
    ``workload.speculative`` the curve decodes speculatively (:meth:`ReplicaCurve.use_speculative`;
    ``draft``: the draft model's memory model, for ``method: draft``)."""
    k = constants or shipped_constants()

    def perf_at(b: int) -> PerformanceEstimate:
        return inference_performance(
            models[b],
            gpu,
            gpu_count,
            parallelism,
            engine,
            bw_eff=bw_eff,
            prefill_mfu=prefill_mfu,
            gpus_per_node=gpus_per_node,
            constants=k,
        )

    w = models[1].workload
    spec = spec or w.serving
    assert spec is not None
    decode = None
    if closed_form and engine.speed_model == SpeedModel.ROOFLINE:
        decode = DecodeStep(
            models[1], gpu, gpu_count, parallelism, engine, bw_eff, prefill_mfu, gpus_per_node, k
        )
    curve = ReplicaCurve(
        perf_at,
        top,
        w,
        spec,
        batching_for(engine.id),
        engine.prefill_chunk_tokens,
        decode,
        request_overhead_s_of(spec, engine.id, k) if request_overhead_s is None else request_overhead_s,
        engine.mixed_prefill,
        k,
        engine.token_lag_steps,
    )
    if w.speculative is not None:
        curve.use_speculative(
            speculative_tables(
                models[1],
                curve,
                gpu,
                gpu_count,
                parallelism,
                engine,
                draft,
                bw_eff,
                prefill_mfu,
                gpus_per_node,
            )
        )
    return curve


def speculative_tables(
    mm: MemoryModel,
    curve: ReplicaCurve,
    gpu: GpuSpec,
    gpu_count: int,
    parallelism: str,
    engine: EngineProfile,
    draft: MemoryModel | None,
    bw_eff: float | None,
    prefill_mfu: float | None,
    gpus_per_node: int,
) -> SpeculativeTables:
    """The speculative step of a replica (:mod:`.speculative`): the target's step terms for the
    verification, the draft model's own decode step (``method: draft``) or a layer's share of the
    target's step (EAGLE, MTP), and the proposer's weights and KV cache."""
    w = mm.workload
    sp = w.speculative
    assert sp is not None
    model = mm.model
    decode = curve.decode
    draft_step = None
    draft_prefill = 0.0
    if sp.method == SpeculativeMethod.DRAFT and draft is not None:
        d = DecodeStep(
            draft, gpu, gpu_count, parallelism, engine, bw_eff, prefill_mfu, gpus_per_node, curve.constants
        )
        draft_step = d
        draft_prefill = d.prefill(float(w.prompt_tokens), 1) / max(w.prompt_tokens, 1)
    extra, kv_share = speculative_memory(mm, draft, gpu_count)
    share = light_draft_share(
        mm.block_weight_bytes, model.num_layers, mm.head_bytes or mm.embedding_bytes, mm.weight_bytes
    )
    return _speculative.tables(
        sp,
        curve.top_limit,
        curve.step,
        None if decode is None else decode.terms,
        0.0 if decode is None else decode.exposed,
        0.0 if decode is None else decode.kv_s,
        curve.tau,
        draft_step,
        share,
        draft_prefill,
        extra,
        kv_share,
    )


def chunked_as(engine: EngineProfile, limits: BatchDefaults | None) -> EngineProfile:
    """``engine`` with the prefill chunk of its defaults ``limits`` on a GPU (itself without them)."""
    if limits is None or engine.prefill_chunk_tokens == limits.chunk_tokens:
        return engine
    return replace(engine, prefill_chunk_tokens=limits.chunk_tokens)


def fewest_replicas(
    curve: ReplicaCurve,
    c: int,
    rate: float,
    cv2: float,
    rate_only: bool = False,
    service_scale: float = 1.0,
    ttft_scale: float = 1.0,
    cap: int = MAX_REPLICAS,
) -> tuple[int, float]:
    """(replicas, TTFT at the percentile) for ``rate`` requests/s at ``c`` slots per replica: the
    fewest replicas that are not saturated and meet the TTFT target (or, when the target cannot be
    met, that are not saturated), at most ``cap`` (:data:`MAX_REPLICAS`) unless the rate needs more.
    ``service_scale`` and ``ttft_scale`` stretch the replica's service time and TTFT (an end of the
    80% range)."""
    spec = curve.spec
    _itl, ttft_tail, _tm, service = curve.point(c)
    ttft_tail *= ttft_scale
    service *= service_scale
    per_replica = c / service  # requests/s one replica completes with every slot busy
    lo = max(1, math.floor(rate / per_replica) + 1)

    def ttft(r: int) -> float:
        return wait_at_percentile(rate / r, c, service, cv2, spec.percentile) + ttft_tail

    if rate_only or ttft_tail > spec.ttft_limit_s or not math.isfinite(spec.ttft_limit_s):
        # A target is out of reach: size for the rate at a utilization that keeps the queue short.
        r = max(1, math.ceil(rate / (per_replica * RATE_ONLY_UTILIZATION)))
        return r, ttft(r)
    if ttft(lo) <= spec.ttft_limit_s:
        return lo, ttft(lo)
    top = max(lo, min(cap, MAX_REPLICAS))
    hi = max(lo, min(lo * 2, top))
    while ttft(hi) > spec.ttft_limit_s and hi < top:
        lo, hi = hi, min(hi * 2, top)
    if ttft(hi) > spec.ttft_limit_s:  # missed at the most replicas the fleet is sized to
        return hi, ttft(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ttft(mid) <= spec.ttft_limit_s:
            hi = mid
        else:
            lo = mid
    return hi, ttft(hi)


def rate_within_ttft(curve: ReplicaCurve, c: int) -> float:
    """The requests/s one replica of ``curve`` takes at ``c`` slots with its TTFT within the target
    by the closed form (:func:`wait_at_percentile` plus ``TTFT0``); 0 when even an idle replica
    misses it, the replica's whole rate ``c / S`` when the target sets no bound. The fewest replicas
    of :func:`fewest_replicas` carry at most this much each."""
    spec = curve.spec
    _itl, tail, _tm, service = curve.point(c)
    full = c / service
    if tail > spec.ttft_limit_s:
        return 0.0
    if not math.isfinite(spec.ttft_limit_s):
        return full
    cv2 = service_cv2(curve.w.output_tokens, curve.w.output_tokens_p90)
    lo, hi = 0.0, full
    for _ in range(60):  # the wait rises with the rate: bisect to a relative 1e-18 of the full rate
        mid = 0.5 * (lo + hi)
        if wait_at_percentile(mid, c, service, cv2, spec.percentile) + tail <= spec.ttft_limit_s:
            lo = mid
        else:
            hi = mid
    return lo


def serving_estimate(
    curve: ReplicaCurve,
    kv_max: int,
    gpu_count: int,
    price: Range | None,
    buy: BuyVsRent | None,
    budget: Budget,
    memory_at: Callable[[int], ServingMemory] | None = None,
    scheduler: BatchDefaults | None = None,
    kv_pool_tokens: float = math.inf,
    concurrency: int | None = None,
    replicas: int | None = None,
    transfer: Transfer | None = None,
) -> ServingEstimate:
    """The fleet for the scenario's load on one replica layout (see the module docstring);
    ``memory_at`` gives the memory per GPU at a concurrency (:mod:`.serving_memory`), ``scheduler``
    what the engine schedules by default on the GPU (reported, see :class:`ServingEstimate`),
    ``kv_pool_tokens`` the KV tokens the GPU's memory holds (for the simulation).

    With targets, the concurrency per replica is the largest meeting them and the replicas the
    fewest meeting the TTFT target (a closed loop of clients: as many replicas as its clients need
    at that concurrency). Without targets the fleet carries the load: a rate on the fewest
    replicas that stay at most :data:`RATE_ONLY_UTILIZATION` busy, a closed loop on one replica.
    ``concurrency`` and ``replicas`` force a fleet (the simulation's corrections).

    In three stages: the operating point of one replica (:func:`_operating_point`), the fleet that
    carries the load at it (:func:`_closed_loop_fleet`, :func:`_open_loop_fleet`) and its cost
    (:func:`_fleet_cost`)."""
    spec, w = curve.spec, curve.w
    # One request on an idle replica: what no fleet size improves (why a setup misses, if it does).
    itl_1, alone, _tm1, _s1 = curve.point(1)
    sizing, missed = curve, ""
    if spec.has_targets and shortfall_of(spec, itl_1, alone) > 1.0:
        # A target out of reach even alone: the fleet is sized to the closest this layout gets, each
        # missed target moved to one request's own figure plus its headroom (met there alone); a
        # forced concurrency (the simulation's corrections) is judged against those targets too.
        missed = "itl" if itl_1 * 1000.0 > spec.itl_limit_ms else "ttft"
        sizing = curve.with_targets(*closest_targets(spec, itl_1, alone))
    point = _operating_point(sizing, kv_max, scheduler, concurrency, itl_1)
    if spec.closed_loop:
        fleet = _closed_loop_fleet(sizing, point, replicas)
    else:
        cap = idle_cap(float(spec.requests_per_s or 0.0), _s1) if missed else MAX_REPLICAS
        fleet = _open_loop_fleet(sizing, point, replicas, forced=concurrency is not None, cap=cap)
    if missed:
        fleet = fleet._replace(meets=False, missed=missed)
    c, itl, service, ttft = fleet.concurrency, fleet.itl_s, fleet.service_s, fleet.ttft_s
    cost = _fleet_cost(curve, fleet, gpu_count, price, buy, budget)
    shortfall = 0.0 if fleet.meets else shortfall_of(spec, itl_1, alone)
    k = curve.constants
    return ServingEstimate(
        replicas=fleet.replicas,
        gpus_total=fleet.replicas * gpu_count,
        concurrency_per_replica=c,
        requests_per_s_per_replica=fleet.rate / fleet.replicas,
        ttft_s=ttft,
        itl_ms=itl * 1000.0,
        meets_slo=fleet.meets,
        limited_by=fleet.limited_by,
        usd_per_hour=cost.per_hour,
        usd_per_month=cost.per_month,
        usd_per_million_tokens=cost.per_million,
        utilization=fleet.utilization,
        tokens_per_s_per_replica=c * w.output_tokens / service,
        missed=fleet.missed,
        buy=cost.buy,
        replica=curve,
        gpu_count=gpu_count,
        replicas_range=fleet.replicas_range,
        usd_per_month_range=cost.month_range,
        tokens_per_s_range=k.rate_range(c * w.output_tokens / service, "tokens_per_s"),
        ttft_range_s=k.time_range(ttft, "ttft"),
        itl_range_ms=k.time_range(itl * 1000.0, "itl"),
        memory=None if memory_at is None else memory_at(c),
        ttft_alone_s=alone,
        itl_alone_ms=itl_1 * 1000.0,
        shortfall=shortfall,
        scheduler=scheduler,
        plan=FleetPlan(
            spec, kv_max, kv_pool_tokens, price, buy, budget, memory_at, point.engine_max, transfer
        ),
        speculative=None if curve.speculative is None else curve.speculative.gain,
        sized_for=None if sizing is curve else (sizing.spec.ttft_s, sizing.spec.itl_ms),
    )


def idle_cap(rate: float, service_alone_s: float) -> int:
    """The most replicas a fleet is sized to when its target leaves no room to queue:
    :data:`MAX_IDLE_FACTOR` times the replicas that carry ``rate`` requests/s one request at a time,
    back to back (each taking ``service_alone_s``), at least 1 and at most :data:`MAX_REPLICAS`."""
    return max(1, min(MAX_REPLICAS, math.ceil(MAX_IDLE_FACTOR * rate * service_alone_s)))


def closest_targets(spec: ServingSpec, itl_1: float, alone: float) -> tuple[float | None, float | None]:
    """(TTFT s, ITL ms) targets a layout that misses ``spec``'s even alone is sized to: each target
    at least one request's own figure (``alone`` s, ``itl_1`` s) plus its headroom
    (:data:`MISSED_TTFT_HEADROOM`, :data:`MISSED_ITL_HEADROOM`). A missed target moves there; one it
    meets alone is kept unless one request comes within that headroom of it. Kept there, an ITL
    target would hold every replica to one sequence, whose queue of whole requests no idle fleet
    shortens to the moved first token at a high percentile (an L40S at 20.2 ms against 21 ms
    waited 10.8 s at p99 with its fleet twenty times the replicas its load keeps busy)."""
    ttft, itl = spec.ttft_s, spec.itl_ms
    if ttft is not None:
        ttft = max(ttft, alone * (1.0 + MISSED_TTFT_HEADROOM))
    if itl is not None:
        itl = max(itl, itl_1 * 1000.0 * (1.0 + MISSED_ITL_HEADROOM))
    return ttft, itl


def shortfall_of(spec: ServingSpec, itl_1: float, alone: float) -> float:
    """The factor by which the targets would have to loosen for one request on an idle replica
    (its ITL ``itl_1`` s and first token ``alone`` s) to meet them: no fleet size changes it."""
    return max(itl_1 * 1000.0 / spec.itl_limit_ms, alone / spec.ttft_limit_s)


class _OperatingPoint(NamedTuple):
    """One replica's concurrency before the load is placed on the fleet, and what limits it."""

    concurrency: int  # sequences in flight per replica
    meets: bool  # whether it meets the targets (True without targets)
    missed: str  # the target a replica misses even alone: "itl", "ttft" or ""
    limited_by: str  # "kv_cache", "latency" or "compute"
    engine_max: int  # the most sequences the engine schedules


def _operating_point(
    curve: ReplicaCurve, kv_max: int, scheduler: BatchDefaults | None, concurrency: int | None, itl_1: float
) -> _OperatingPoint:
    """The concurrency per replica: forced, the largest meeting the targets, or (without targets)
    the most the KV cache and the engine hold; a replica that misses even alone runs one sequence
    and names the target it misses (``itl_1``: the inter-token latency of one request alone)."""
    spec = curve.spec
    engine_max = MAX_CONCURRENCY if scheduler is None else min(scheduler.max_sequences, MAX_CONCURRENCY)
    top = min(kv_max, MAX_CONCURRENCY) if spec.has_targets else min(kv_max, engine_max)
    if concurrency is not None:
        c = max(1, min(concurrency, top))
        meets = curve.meets(c) if spec.has_targets else True
    elif spec.has_targets:
        c = curve.largest_meeting(top)
        meets = c >= 1
    else:
        c, meets = max(1, top), True
    missed = ""
    if not meets:
        c = 1
        missed = "itl" if itl_1 * 1000.0 > spec.itl_limit_ms else "ttft"
        limited = "compute" if curve.bound_at(1) == "compute" else "latency"
    elif c == top:
        limited = "kv_cache" if kv_max <= min(MAX_CONCURRENCY, top) else "compute"
    else:
        limited = "compute" if curve.bound_at(c) == "compute" else "latency"
    return _OperatingPoint(c, meets, missed, limited, engine_max)


class _Fleet(NamedTuple):
    """The replicas carrying the load at the operating point, and the latency they give."""

    replicas: int
    concurrency: int  # sequences each replica runs
    rate: float  # requests per second, the whole fleet
    itl_s: float
    ttft_s: float
    service_s: float  # one request's time in the engine
    replicas_range: tuple[int, int]  # the fleet at both ends of the 80% range
    utilization: float
    meets: bool
    missed: str
    limited_by: str


def _closed_loop_fleet(curve: ReplicaCurve, point: _OperatingPoint, replicas: int | None) -> _Fleet:
    """A closed loop of clients: as many replicas as the clients need at the operating point (one
    without targets); each runs its share of the clients, at most what it holds, and the clients
    it cannot hold wait for a slot (Little's law: TTFT + (per / run - 1) x service time)."""
    spec = curve.spec
    c, limited = point.concurrency, point.limited_by
    clients = int(spec.concurrency or 1)
    if replicas is None:
        replicas = max(1, math.ceil(clients / c)) if spec.has_targets else 1
    per = math.ceil(clients / replicas)
    run = max(1, min(per, c))
    itl, _tt, ttft, service = curve.point(run, closed=True)
    if per > run:  # the clients the engine cannot hold wait for a slot (Little's law)
        ttft += (per / run - 1.0) * service
    rate = replicas * run / service
    utilization = min(1.0, per / max(c, 1))
    if run == per and not spec.has_targets:
        limited = "clients"  # every client runs: the load, not the replica, sets the batch
    # The sequences a replica runs: its share of the clients, at most what it holds.
    return _Fleet(
        replicas,
        run,
        rate,
        itl,
        ttft,
        service,
        (replicas, replicas),
        utilization,
        point.meets,
        point.missed,
        limited,
    )


def _open_loop_fleet(
    curve: ReplicaCurve, point: _OperatingPoint, replicas: int | None, forced: bool, cap: int = MAX_REPLICAS
) -> _Fleet:
    """A request rate: the fewest replicas meeting the TTFT target at the operating point (without
    targets, or missing them, the fewest that carry the load), at most ``cap`` unless the rate
    needs more, or the TTFT at a given fleet; and the fleet at both ends of the 80% range
    (``forced``: the concurrency was given)."""
    spec, w, k = curve.spec, curve.w, curve.constants
    c, meets, missed = point.concurrency, point.meets, point.missed
    cv2 = service_cv2(w.output_tokens, w.output_tokens_p90)
    itl, _tt, _tm, service = curve.point(c)
    rate = float(spec.requests_per_s or 0.0)
    if replicas is None:
        replicas, ttft = fewest_replicas(curve, c, rate, cv2, not meets or not spec.has_targets, cap=cap)
    else:
        _tl, ttft_tail, _tm2, _sv = curve.point(c)
        ttft = wait_at_percentile(rate / replicas, c, service, cv2, spec.percentile) + ttft_tail
    if meets and spec.has_targets and ttft > spec.ttft_limit_s and not forced:
        meets, missed = False, "ttft"  # cannot happen by construction; kept honest
    # The fleet at both ends of the 80% range: the same concurrency per replica, the service time
    # and the TTFT stretched by the ranges of the throughput and the TTFT.
    tp_low, tp_high = k.serving_spreads["tokens_per_s"]
    ttft_low, ttft_high = k.serving_spreads["ttft"]
    loose = not meets or not spec.has_targets
    fast = (1.0 / (1.0 + tp_high), 1.0 / (1.0 + ttft_high))  # service and TTFT scales at each end
    slow = (1.0 / (1.0 - tp_low), 1.0 / (1.0 - ttft_low))
    r_fast = fewest_replicas(curve, c, rate, cv2, loose, *fast, cap=cap)[0]
    r_slow = fewest_replicas(curve, c, rate, cv2, loose, *slow, cap=cap)[0]
    replicas_range = (min(r_fast, replicas), max(r_slow, replicas))
    utilization = min(1.0, rate / replicas * service / c)
    return _Fleet(
        replicas, c, rate, itl, ttft, service, replicas_range, utilization, meets, missed, point.limited_by
    )


class _FleetCost(NamedTuple):
    """What a fleet costs rented (None without a price), and owning it against renting it."""

    per_hour: float | None
    per_month: float | None
    per_million: float | None
    month_range: tuple[float, float] | None
    buy: FleetBuy | None


def _fleet_cost(
    curve: ReplicaCurve,
    fleet: _Fleet,
    gpu_count: int,
    price: Range | None,
    buy: BuyVsRent | None,
    budget: Budget,
) -> _FleetCost:
    """The fleet's rent per hour and per month (running hours_per_day of each day), per million
    output tokens, the monthly range over the fleet's range, and owning it: purchase spread over the
    ownership months plus the power bill, against the monthly rent."""
    spec, w = curve.spec, curve.w
    if price is None:
        return _FleetCost(None, None, None, None, None)
    gpus = fleet.replicas * gpu_count
    rate = fleet.rate
    hours_share = spec.hours_per_day / 24.0
    per_hour = gpus * price.expected
    per_month = per_hour * HOURS_PER_MONTH * hours_share
    lo, hi = (r * gpu_count * price.expected * HOURS_PER_MONTH * hours_share for r in fleet.replicas_range)
    per_million = per_hour / (rate * w.output_tokens * 3600.0) * 1e6 if rate > 0 else None
    fleet_buy = None
    if buy is not None:
        owned = gpus * (
            buy.purchase_usd / budget.ownership_months
            + buy.power_usd_per_hour * HOURS_PER_MONTH * hours_share
        )
        fleet_buy = FleetBuy(gpus * buy.purchase_usd, owned, per_month, owned < per_month)
    return _FleetCost(per_hour, per_month, per_million, (lo, hi), fleet_buy)
