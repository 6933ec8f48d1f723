"""The serving targets of an inference scenario: ``workload.serving``.

A service is described by its traffic and its latency targets rather than by one batch:
``requests_per_s`` (Poisson arrivals), the time to first token ``ttft_s`` and the inter-token
latency ``itl_ms`` that a request should see at the ``percentile`` asked for, the share of
prompt tokens found in the prefix cache, and the hours per day the fleet runs. The prompt and
output lengths are the workload's ``prompt_tokens``/``output_tokens`` (means), with optional
``prompt_tokens_p90``/``output_tokens_p90`` for a long tail.

How each engine batches (:attr:`~.engines.EngineProfile.batching`): continuous batching with a paged KV cache (vLLM, SGLang,
MLC LLM), the same with every request's whole context reserved when it is admitted
(TensorRT-LLM), continuous batching with one fixed slot per sequence (llama.cpp's server,
ExLlamaV2), or static batches (Hugging Face Transformers, AutoAWQ).

TensorRT-LLM's capacity scheduler admits a request only when the KV pages of its prompt and of
its longest answer can all be reserved, so that a started request is never paused
(``GUARANTEED_NO_EVICT``, the default policy: "TensorRT-LLM currently supports three batch
scheduler policies: GUARANTEED_NO_EVICT (default), MAX_UTILIZATION and STATIC_BATCH ... set to
GUARANTEED_NO_EVICT to guarantee that a started request is never paused",
https://nvidia.github.io/TensorRT-LLM/performance/performance-tuning-guide/useful-runtime-flags.html,
"Capacity Scheduler Policy", read 2026-12-01). vLLM and SGLang admit a request for the pages of
its prompt and preempt one when the pool runs out, so a sequence holds only what it has filled.

How each engine sizes its KV cache (:attr:`~.engines.EngineProfile.kv_pool`): vLLM, SGLang and TensorRT-LLM preallocate one
pool of KV pages when they start, sized from a share of the GPU's memory rather than from the
traffic, so ``nvidia-smi`` shows most of the card in use however few requests are in flight:

- vLLM: ``gpu_memory_utilization`` (default 0.9) is the share of the GPU's total memory the engine
  may use; the KV pool is that share less the weights, the profiled activations and the memory
  outside PyTorch (vllm-project/vllm ``vllm/config/cache.py``, commit c1d8642, ``CacheConfig``:
  "The fraction of GPU memory to be used for the model executor ... If unspecified, will use the
  default value of 0.9"; a later commit, 002f10e, raises the default to 0.92).
- SGLang: ``mem_fraction_static`` is "(model weights + KV cache pool) / GPU memory capacity"; the
  rest holds activations and CUDA graph buffers (sgl-project/sglang
  ``docs/advanced_features/hyperparameter_tuning.md``, commit 21ff1af). Left unset it is
  "(GPU memory - reserved memory) / GPU memory", reserving room for activations and CUDA graph
  buffers, and 0.88 when the GPU's memory cannot be read (sgl-project/sglang pull request 29135,
  merged 2026-06-24; issue 29092 reports 0.828 on an H100 with Qwen3 32B). 0.88 is taken, so the
  SGLang pool shown is at the top of what a default server allocates.
- TensorRT-LLM: ``KvCacheConfig.free_gpu_memory_fraction`` (default 0.9) is the share of the
  memory left free after the engine and its activations are loaded ("TensorRT LLM will try to
  allocate 90% of free GPU memory for KV cache", https://nvidia.github.io/TensorRT-LLM/examples/kvcacheconfig.html,
  read 2026-12-01).

The other engines allocate no pool beyond what their sequences reserve: llama.cpp's server and
ExLlamaV2 allocate their slots' whole contexts up front (what the planner already counts per
sequence), Transformers and AutoAWQ grow the cache with the batch. MLC LLM also preallocates, but
its share is not taken here without a source, so its pool is shown as the KV cache in flight.

References: vLLM (Kwon et al. 2023, "Efficient Memory Management for Large Language Model
Serving with PagedAttention"); Orca (Yu et al. 2022, iteration-level scheduling); Sarathi-Serve
(Agrawal et al. 2024, chunked prefill).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ..errors import InputError
from .engines import BatchDefaults, Batching, record_of
from .fields import checked, read_number

#: The percentiles a target can be stated at.
PERCENTILES = (50, 90, 95, 99)


def batch_defaults(engine_id: str, gpu_name: str, memory_gib: float) -> BatchDefaults | None:
    """The sequences and prompt tokens per step ``engine_id`` schedules by default on a GPU named
    ``gpu_name`` with ``memory_gib`` of memory, or None where no GPU-dependent default is known
    (:attr:`~.engines.EngineProfile.gpu_batch_defaults`: only vLLM's V1 engine has one)."""
    return record_of(engine_id, "inference").batch_defaults_on(gpu_name, memory_gib)


_KEYS = (
    "requests_per_s",
    "concurrency",
    "arrival",
    "ttft_s",
    "itl_ms",
    "percentile",
    "prefix_cache_hit_rate",
    "hours_per_day",
    "request_overhead_ms",
    "disaggregated",
)
#: The most clients a service may state.
MAX_CLIENTS = 10_000_000


class ArrivalPattern(StrEnum):
    """How a stated rate of requests arrives."""

    POISSON = "poisson"  # independent arrivals (a Poisson stream)
    BURST = "burst"  # bursts: gaps with a coefficient of variation of 2 (see serving_sim.BURSTINESS)


#: The most per-request time a service may state (ms).
MAX_REQUEST_OVERHEAD_MS = 10_000.0


def batching_for(engine_id: str) -> Batching:
    """How the serving engine ``engine_id`` batches (:attr:`~.engines.EngineProfile.batching`)."""
    batching = record_of(engine_id, "inference").batching
    if batching is None:
        raise InputError(
            "workload.engine", "is a training engine; a service runs on an inference engine", engine_id
        )
    return batching


def _number(name: str, value: object) -> float:
    """A service's value checked against its key's one rule (:data:`~.fields.FIELD_RULES`)."""
    field = f"workload.serving.{name}"
    try:
        value = read_number(field, value)
    except ValueError as exc:
        raise InputError(field, str(exc)) from None
    checked(field, value)
    assert isinstance(value, (int, float))
    return float(value)


@dataclass(frozen=True, slots=True)
class ServingSpec:
    """A service: its load and latency targets (units in the field names).

    The load is either a rate (``requests_per_s``, arriving as ``arrival``) or a closed loop of
    ``concurrency`` clients, each sending its next request when its last one ends. The targets
    (``ttft_s``, ``itl_ms``, at ``percentile``) are optional: with them the planner sizes the fleet
    that meets them, without them the answer is the operating point at the stated load."""

    requests_per_s: float | None = None
    ttft_s: float | None = None
    itl_ms: float | None = None
    percentile: int = 90
    prefix_cache_hit_rate: float = 0.0
    hours_per_day: float = 24.0
    #: Time the serving stack adds to every request outside the model's steps (HTTP, chat template
    #: and tokenizing, admission, streaming the first token), in ms; None: the value fitted to the
    #: published serving runs (``SpeedConstants.request_overhead_for``, ``fitted_constants.json``).
    request_overhead_ms: float | None = None
    #: Clients of a closed loop (instead of a rate).
    concurrency: int | None = None
    arrival: str = ArrivalPattern.POISSON
    #: Prefill and decode on separate pools of GPUs, each sized to its own target.
    disaggregated: bool = False

    def __post_init__(self) -> None:
        if (self.requests_per_s is None) == (self.concurrency is None):
            raise InputError(
                "workload.serving.requests_per_s",
                "give the load as requests_per_s or as concurrency (clients), one of the two",
            )
        for name in ("requests_per_s", "ttft_s", "itl_ms", "prefix_cache_hit_rate", "hours_per_day"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, _number(name, getattr(self, name)))
        if self.concurrency is not None:
            object.__setattr__(self, "concurrency", int(_number("concurrency", self.concurrency)))
        if self.arrival not in tuple(ArrivalPattern):
            raise InputError("workload.serving.arrival", "must be poisson or burst", self.arrival)
        object.__setattr__(self, "arrival", ArrivalPattern(self.arrival))
        if self.concurrency is not None and self.arrival != ArrivalPattern.POISSON:
            raise InputError(
                "workload.serving.arrival",
                "describes a rate; a closed loop of clients has none",
                str(self.arrival),
            )
        if self.percentile not in PERCENTILES or isinstance(self.percentile, bool):
            raise InputError("workload.serving.percentile", "must be one of 50, 90, 95, 99", self.percentile)
        object.__setattr__(self, "percentile", int(self.percentile))
        if self.request_overhead_ms is not None:
            object.__setattr__(
                self, "request_overhead_ms", _number("request_overhead_ms", self.request_overhead_ms)
            )
        if not isinstance(self.disaggregated, bool):
            raise InputError("workload.serving.disaggregated", "must be true or false", self.disaggregated)
        if self.disaggregated and (self.ttft_s is None or self.itl_ms is None):
            raise InputError(
                "workload.serving.disaggregated",
                "sizes a prefill pool to ttft_s and a decode pool to itl_ms: state both targets",
            )

    @property
    def has_targets(self) -> bool:
        """Whether a latency target is stated (else the answer is the operating point at the load)."""
        return self.ttft_s is not None or self.itl_ms is not None

    @property
    def ttft_limit_s(self) -> float:
        """The TTFT target (s), infinite when none is stated."""
        return math.inf if self.ttft_s is None else self.ttft_s

    @property
    def itl_limit_ms(self) -> float:
        """The ITL target (ms), infinite when none is stated."""
        return math.inf if self.itl_ms is None else self.itl_ms

    @property
    def closed_loop(self) -> bool:
        """The load is a closed loop of ``concurrency`` clients."""
        return self.concurrency is not None

    @classmethod
    def from_value(cls, value: object) -> ServingSpec:
        """A spec from the scenario's JSON object (errors name ``workload.serving.<key>``)."""
        if isinstance(value, ServingSpec):
            return value
        if not isinstance(value, dict):
            raise InputError("workload.serving", "must be a JSON object", type(value).__name__)
        unknown = [k for k in value if k not in _KEYS]
        if unknown:
            raise InputError(
                f"workload.serving.{unknown[0]}", f"is not a serving key; known keys: {', '.join(_KEYS)}"
            )
        if "requests_per_s" not in value and "concurrency" not in value:
            raise InputError(
                "workload.serving.requests_per_s", "is required (or concurrency: a number of clients)"
            )
        return cls(**value)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object: the keys a file of the first version wrote, the newer ones only when
        stated (so an older service saves as it was)."""
        out: dict[str, Any] = {}
        for k in _KEYS:
            v = getattr(self, k)
            if (
                k in ("request_overhead_ms", "concurrency", "requests_per_s", "ttft_s", "itl_ms")
                and v is None
            ):
                continue
            if k == "arrival" and (v == ArrivalPattern.POISSON):
                continue
            if k == "disaggregated" and not v:
                continue
            out[k] = str(v) if k == "arrival" else v
        return out
