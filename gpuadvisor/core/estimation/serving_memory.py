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

Engines that preallocate their KV pool (``core.specs.serving.KV_POOLS``) take more than ``need``
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

from typing import Any, NamedTuple

from ..specs.serving import KV_POOLS
from ..units import GIB
from .memory import MemoryBreakdown


class ServingMemory(NamedTuple):
    """Memory per GPU of one replica at the planner's operating point (bytes unless named)."""

    concurrency: int  # sequences in flight per replica
    tokens_per_sequence: int  # KV cache reserved per sequence
    weights: float
    activations: float
    kv_in_flight: float  # the KV cache of every sequence in flight, this GPU's share
    overhead: float
    capacity: float
    kv_pool: float  # the KV pool the engine allocates (= kv_in_flight for engines without a pool)
    engine: str = ""
    setting: str = ""  # the engine's option that sizes its pool ("" when it has none)
    fraction: float | None = None  # its default
    fraction_needed: float | None = None  # the value at which the pool holds the KV cache in flight

    @property
    def need(self) -> float:
        """What the operating point needs per GPU (the planner's fit test)."""
        return self.weights + self.activations + self.kv_in_flight + self.overhead

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
    weights, kv = bd.weights + bd.adapters, bd.kv_cache
    act = bd.activations + bd.gradients + bd.optimizer
    need = weights + act + kv + bd.overhead
    rest = need - kv
    pool_spec = KV_POOLS.get(engine_id)
    setting, fraction, needed = "", None, None
    pool = kv
    if pool_spec is not None:
        setting, fraction = pool_spec.setting, pool_spec.fraction
        f, cap = pool_spec.fraction, capacity_bytes
        if pool_spec.basis == "total":
            pool, needed = f * cap - rest, need / cap
        elif pool_spec.basis == "static":
            usable = max(cap - cuda_context_bytes, 1.0)
            pool, needed = f * usable - weights, (weights + kv) / usable
        else:
            free = max(cap - rest, 1.0)
            pool, needed = f * free, kv / free
        pool = max(pool, 0.0)
    return ServingMemory(
        concurrency=concurrency,
        tokens_per_sequence=tokens_per_sequence,
        weights=weights,
        activations=act,
        kv_in_flight=kv,
        overhead=bd.overhead,
        capacity=capacity_bytes,
        kv_pool=pool,
        engine=engine_id,
        setting=setting,
        fraction=fraction,
        fraction_needed=needed,
    )
