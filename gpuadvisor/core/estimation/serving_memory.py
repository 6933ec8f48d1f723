"""A service's memory per GPU at its operating point: the KV cache of the requests in flight and the
pool the engine preallocates.

The planner (:mod:`.serving`) runs ``c`` sequences per replica (``concurrency_per_replica``), each
reserving the KV cache of ``s`` tokens (:func:`.serving.reserved_context`: the 90th-percentile
prompt and half the 90th-percentile answer with paged KV, the whole context with slots or static
batches). Per GPU of the replica, from the memory model at batch ``c`` and context ``s``::

    weights     the replica's share (tensor parallelism divides them, pipelines split the layers)
    activations the prefill chunk's transient tensors and the last position's logits of c sequences
    KV          c x s tokens x 2 x layers x KV heads x head_dim x bytes, with the KV heads split over
                the tensor-parallel GPUs and the layers over the pipeline stages
    overhead    CUDA context + the allocator's share of the tensors
    need        weights + activations + KV + overhead (the planner's fit test: need <= capacity)

Engines that preallocate their KV pool (``EngineProfile.kv_pool``, :mod:`gpuadvisor.core.specs.engines`) take more than ``need``
from the card however few requests are in flight; with ``C`` the usable memory, ``f`` the engine's
setting, ``N = need - KV`` everything but the KV cache and ``ctx`` the CUDA context::

    total  (vLLM gpu_memory_utilization)       pool = f C - N
    static (SGLang mem_fraction_static)        pool = f (C - ctx) - weights
    free   (TensorRT-LLM free_gpu_memory_fraction)  pool = f (C - N)

The card then holds ``N + max(pool, KV)``. When the default pool is smaller than the KV cache in
flight, the setting that makes room is reported (``fraction_needed``): ``need / C``,
``(weights + KV) / (C - ctx)`` or ``KV / (C - N)``. Prefix caching would let requests share the
pages of a common prefix; the planner does not count that sharing, so the figures are for
distinct prompts.

References: vllm-project/vllm ``vllm/config/cache.py`` (commit c1d8642); sgl-project/sglang
``docs/advanced_features/hyperparameter_tuning.md`` (commit 21ff1af); TensorRT-LLM, "How to Change
KV Cache Behavior" (nvidia.github.io/TensorRT-LLM/examples/kvcacheconfig.html).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, NamedTuple

from ..specs.engines import PoolBasis, record_of
from ..units import GIB
from .memory import COMPONENTS, MemoryBreakdown, MemoryModel


class ServingMemory(NamedTuple):
    """Memory per GPU of one replica at the planner's operating point (bytes unless named)."""

    breakdown: MemoryBreakdown  # the memory model at the concurrency: the candidate's memory
    concurrency: int  # sequences in flight per replica
    tokens_per_sequence: int  # KV cache reserved per sequence
    capacity: float
    kv_pool: float  # the KV pool the engine allocates (= kv_in_flight for engines without a pool)
    setting: str = ""  # the engine's option that sizes its pool ("" when it has none)
    fraction: float | None = None  # its default
    fraction_needed: float | None = None  # the value at which the pool holds the KV cache in flight

    @property
    def weights(self) -> float:
        bd = self.breakdown
        return bd.weights + bd.adapters

    @property
    def activations(self) -> float:
        """Transient activations, logits and dequantization buffers."""
        bd = self.breakdown
        return bd.activations + bd.gradients + bd.optimizer

    @property
    def kv_in_flight(self) -> float:
        """The KV cache of every sequence in flight, this GPU's share."""
        return self.breakdown.kv_cache

    @property
    def overhead(self) -> float:
        return self.breakdown.overhead

    @property
    def need(self) -> float:
        """What the operating point needs per GPU (the planner's fit test)."""
        return self.breakdown.device_total

    @property
    def pool_reserved(self) -> float:
        """The part of the pool that no request in flight uses (0 without a preallocated pool)."""
        return max(0.0, self.kv_pool - self.kv_in_flight)

    @property
    def engine_total(self) -> float:
        """What the engine takes from the card (``nvidia-smi``): the need plus the unused pool."""
        return self.need + self.pool_reserved

    @property
    def pool_short(self) -> bool:
        """True when the engine's default pool holds fewer sequences than the planner runs."""
        return bool(self.setting) and self.kv_pool < self.kv_in_flight

    @property
    def pool_sequences(self) -> int:
        """Sequences of the reserved length the pool holds."""
        per_seq = self.kv_in_flight / self.concurrency if self.concurrency else 0.0
        return int(self.kv_pool // per_seq) if per_seq > 0 else 0

    def to_dict(self) -> dict[str, Any]:
        def g(x: float) -> float:
            return round(x / GIB, 3)

        return {
            "concurrency": self.concurrency,
            "kv_tokens_per_sequence": self.tokens_per_sequence,
            "weights": g(self.weights),
            "activations": g(self.activations),
            "kv_cache_in_flight": g(self.kv_in_flight),
            "overhead": g(self.overhead),
            "need": g(self.need),
            "kv_pool": g(self.kv_pool),
            "kv_pool_reserved": g(self.pool_reserved),
            "engine_total": g(self.engine_total),
            "pool_setting": self.setting or None,
            "pool_fraction": self.fraction,
            "pool_fraction_needed": None if self.fraction_needed is None else round(self.fraction_needed, 3),
            "pool_sequences": self.pool_sequences,
        }


class BatchLine:
    """A replica's memory per GPU as a function of the sequences in flight, at ``context`` tokens each.

    Once the prompts fill the engine's prefill chunk (``b >= chunk / prompt``), every component of
    the memory model is affine in the batch: the weights stay, the KV cache and the last positions'
    logits grow by one sequence's worth, the chunk's activations stay, and the overhead is the CUDA
    context plus a share of the tensors. Two breakdowns there give every component at any larger
    batch for a few multiplications, exactly (a whole-catalog service asks for one per GPU type);
    below, or for an engine whose load peak is not affine (a q/k/v copy), the memory model itself
    answers."""

    __slots__ = ("mm", "gpu_count", "parallelism", "context", "first", "lo", "slope", "_memo")

    def __init__(self, mm: MemoryModel, gpu_count: int, parallelism: str, context: int) -> None:
        self.mm, self.gpu_count, self.parallelism, self.context = mm, gpu_count, parallelism, context
        chunk = mm.prefill_chunk_tokens
        prompt = max(1, context - mm.workload.output_tokens)
        self.first = -(-chunk // prompt) if chunk else 1
        self.lo: MemoryBreakdown | None = None
        self._memo: dict[int, MemoryBreakdown] = {}  # GPU types often share a concurrency
        self.slope: tuple[float, ...] = ()
        if not mm.qkv_copy_bytes:
            lo = mm.breakdown(gpu_count, parallelism, batch_size=self.first, context=context)
            hi = mm.breakdown(gpu_count, parallelism, batch_size=self.first + 1, context=context)
            self.lo = lo
            self.slope = tuple(getattr(hi, f) - getattr(lo, f) for f in _AFFINE)

    def memory_at(
        self, capacity_bytes: float, engine_id: str, overhead_bytes: float | None = None
    ) -> Callable[[int], ServingMemory]:
        """The service's memory at a concurrency on a GPU of ``capacity_bytes`` (``overhead_bytes``: a
        calibrated runtime overhead that replaces the model's context and fragmentation)."""
        context = self.mm.overhead.cuda_context_gib * GIB if overhead_bytes is None else overhead_bytes

        def memory(concurrency: int) -> ServingMemory:
            bd = self.at(concurrency)
            if overhead_bytes is not None:
                bd = replace(bd, overhead=overhead_bytes)
            return operating_memory(bd, concurrency, self.context, capacity_bytes, engine_id, context)

        return memory

    def at(self, batch: int) -> MemoryBreakdown:
        """The breakdown with ``batch`` sequences in flight."""
        got = self._memo.get(batch)
        if got is not None:
            return got
        lo = self.lo
        if lo is None or batch < self.first:
            got = self.mm.breakdown(self.gpu_count, self.parallelism, batch_size=batch, context=self.context)
            self._memo[batch] = got
            return got
        k = batch - self.first
        w, g, o, a, kv, ad, ov, lg, ho = self.slope
        got = self._memo[batch] = MemoryBreakdown(
            lo.weights + k * w,
            lo.gradients + k * g,
            lo.optimizer + k * o,
            lo.activations + k * a,
            lo.kv_cache + k * kv,
            lo.adapters + k * ad,
            lo.overhead + k * ov,
            lo.logits + k * lg,
            lo.gathered,
            lo.host + k * ho,
            lo.stage,
        )
        return got


#: The components of a breakdown that change with the batch (in :class:`MemoryBreakdown`'s order).
_AFFINE = (*COMPONENTS, "logits", "host")


def operating_memory(
    bd: MemoryBreakdown,
    concurrency: int,
    tokens_per_sequence: int,
    capacity_bytes: float,
    engine_id: str,
    cuda_context_bytes: float,
) -> ServingMemory:
    """The memory of ``bd`` (the breakdown at ``concurrency`` sequences of ``tokens_per_sequence``) on a
    GPU of ``capacity_bytes``, with the pool ``engine_id`` preallocates (see the module docstring)."""
    kv = bd.kv_cache
    need = bd.device_total
    rest = need - kv  # everything but the KV cache
    pool_spec = record_of(engine_id, "inference").kv_pool
    if pool_spec is None:
        return ServingMemory(bd, concurrency, tokens_per_sequence, capacity_bytes, kv)
    f, cap = pool_spec.fraction, capacity_bytes
    if pool_spec.basis == PoolBasis.TOTAL:
        pool, needed = f * cap - rest, need / cap
    elif pool_spec.basis == PoolBasis.STATIC:
        usable = max(cap - cuda_context_bytes, 1.0)
        weights = bd.weights + bd.adapters
        pool, needed = f * usable - weights, (weights + kv) / usable
    else:
        free = max(cap - rest, 1.0)
        pool, needed = f * free, kv / free
    return ServingMemory(
        bd, concurrency, tokens_per_sequence, capacity_bytes, max(pool, 0.0), pool_spec.setting, f, needed
    )
