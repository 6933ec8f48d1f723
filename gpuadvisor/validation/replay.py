"""Replay of published serving benchmarks: what a benchmark run measured, predicted from a replica's curve.

A validation row of a serving benchmark states how its client sent the requests (``vllm bench
serve --max-concurrency``, genai-perf's concurrency mode, ``--request-rate inf``, a paced load
generator) and what it measured (output tokens/s, mean TTFT, mean ITL). To score the estimate on
it, the harness (:mod:`gpuadvisor.validation.harness`) replays that run on the core's replica curve
(:class:`~gpuadvisor.core.estimation.serving.ReplicaCurve`, the same decode step and prefill the
serving plan is sized with), as the engine starts by default (its KV pool, its scheduling limits
and prefill chunk on the GPU)::

    closed_loop   clients each sending their next request when one ends, steady or a finite run
                  of ``requests`` that starts as a wave and ends as its last answers drain
    lockstep      such a loop whose rounds stay in step (fixed lengths, clients started together)
    burst         every request sent at once, none after them
    paced         a client offering a rate to at most ``requests`` workers
    drain         a wave whose answers stop at their end token, decoding at shrinking batches

Each takes a :class:`BenchReplica` (the layout and what the benchmark states or the harness fits
about it) and returns a :class:`ClosedLoop` of the run's mean figures.

None of this answers a user's scenario: the estimate sizes a fleet for a rate or a number of
clients at a latency target (:func:`~gpuadvisor.core.estimation.serving.serving_estimate`) and
never replays a benchmark's client, so these models live with the validation, which imports the
core, and the core does not carry them.

References: Kwon et al. 2023 (vLLM, PagedAttention); Agrawal et al. 2024 (Sarathi-Serve, chunked
prefill); vLLM's ``benchmarks/serve.py`` and NVIDIA genai-perf (the clients replayed).
"""

from __future__ import annotations

import functools
import math
import weakref
from collections.abc import Callable
from dataclasses import replace
from typing import NamedTuple

from ..core.estimation.memory import MemoryModel
from ..core.estimation.serving import (
    MAX_CONCURRENCY,
    ReplicaCurve,
    batch_models,
    chunked_as,
    kv_capacity,
    kv_line,
    kv_pool_tokens,
    replica_curve,
    reserved_context,
)
from ..core.estimation.serving_memory import operating_memory
from ..core.specs.constants import SpeedConstants
from ..core.specs.engines import EngineProfile
from ..core.specs.hardware import GpuSpec
from ..core.specs.serving import ServingSpec, batch_defaults, batching_for
from ..core.units import GIB


class ClosedLoop(NamedTuple):
    """A serving benchmark's figures (see :func:`closed_loop`, :func:`lockstep`, :func:`burst` and
    :func:`paced`)."""

    tokens_per_s: float  # output tokens/s of the replica
    ttft_s: float  # mean time to first token, waiting for a slot included
    itl_s: float  # mean inter-token latency
    running: int  # sequences the engine can run at once (the clients, or fewer where the KV cache is full)


#: Targets that bind nothing: a benchmark's closed loop is described by its concurrency alone.
OPEN_TARGETS = ServingSpec(requests_per_s=1.0, ttft_s=3600.0, itl_ms=60_000.0, percentile=50)


class BenchReplica(NamedTuple):
    """One replica as a serving benchmark ran it: the layout (memory model, GPU, count, split,
    engine) and what the benchmark states or the harness fits about it (``bw_eff``,
    ``prefill_mfu``: the engine's efficiencies when given; ``request_overhead_s``: the stack's
    per-request time when given, else its fitted one). The benchmark models
    (:func:`closed_loop`, :func:`burst`, :func:`lockstep`, :func:`paced`) all take one."""

    mm: MemoryModel
    gpu: GpuSpec
    gpu_count: int
    parallelism: str
    engine: EngineProfile
    bw_eff: float | None = None
    prefill_mfu: float | None = None
    gpus_per_node: int = 8
    request_overhead_s: float | None = None
    #: The constants the benchmark is predicted with (the shipped ones when None).
    constants: SpeedConstants | None = None
    #: Share of each prompt the engine finds in its prefix cache (the row's ``prefix_cache_hit_rate``).
    prefix_cache_hit_rate: float = 0.0


def bench_targets(r: BenchReplica) -> ServingSpec:
    """The open targets of a benchmark's curve, with the share of each prompt its prefix cache holds."""
    if r.prefix_cache_hit_rate <= 0.0:
        return OPEN_TARGETS
    return replace(OPEN_TARGETS, prefix_cache_hit_rate=r.prefix_cache_hit_rate)


def pool_sequences(
    mm: MemoryModel, gpu_count: int, parallelism: str, context: int, capacity_bytes: float, engine_id: str
) -> int | None:
    """Sequences of ``context`` reserved tokens that the KV pool ``engine_id`` preallocates with its
    default setting holds (:attr:`~gpuadvisor.core.specs.engines.EngineProfile.kv_pool`, sized as
    :func:`~gpuadvisor.core.estimation.serving_memory.operating_memory` shows it), or None for an
    engine without such a pool. A benchmark runs the engine as it starts, so this, not the card's
    free memory, caps the sequences it runs at once (vLLM's default pool leaves a tenth of the card
    unused)."""

    def compute() -> int | None:
        bd = mm.breakdown(gpu_count, parallelism, batch_size=1, context=context)
        sm = operating_memory(bd, 1, context, capacity_bytes, engine_id, mm.overhead.cuda_context_gib * GIB)
        if not sm.setting or bd.kv_cache <= 0:
            return None
        return int(sm.kv_pool // bd.kv_cache)

    got: int | None = mm.cached(
        f"pool:{gpu_count}:{parallelism}:{context}:{capacity_bytes}:{engine_id}", compute
    )
    return got


def pool_tokens(
    mm: MemoryModel, gpu_count: int, parallelism: str, context: int, capacity_bytes: float, engine_id: str
) -> float | None:
    """KV tokens the pool ``engine_id`` preallocates with its default setting holds (None for an
    engine without such a pool): :func:`pool_sequences` in tokens, not rounded to sequences."""
    seqs = pool_sequences(mm, gpu_count, parallelism, context, capacity_bytes, engine_id)
    if seqs is None:
        return None
    bd = mm.breakdown(gpu_count, parallelism, batch_size=1, context=context)
    sm = operating_memory(bd, 1, context, capacity_bytes, engine_id, mm.overhead.cuda_context_gib * GIB)
    return float(sm.kv_pool) / bd.kv_cache * context


def benchmark_engine(r: BenchReplica, clients: int) -> tuple[ReplicaCurve, int, float]:
    """(the replica's curve, the most sequences the engine schedules at once, the KV tokens its pool
    holds) of an engine as a benchmark starts it (its default pool and limits on the GPU, as
    :func:`_benchmark_curve`), for a simulation of ``clients`` clients
    (:mod:`~gpuadvisor.core.estimation.serving_sim`), which admits and queues the requests itself."""
    mm = r.mm
    context = reserved_context(mm.workload, batching_for(r.engine.id))
    line = kv_line(mm, r.gpu_count, r.parallelism, context)
    capacity = r.gpu.memory_gib_usable * GIB
    tokens = kv_pool_tokens(line, capacity, context)
    pooled = pool_tokens(mm, r.gpu_count, r.parallelism, context, capacity, r.engine.id)
    if pooled is not None:
        tokens = min(tokens, pooled)
    engine, most = scheduled_on(r.engine, r.gpu)
    top = max(1, min(clients, most, max(1, int(tokens // max(context, 1)) * 2)))
    curve = replica_curve(
        batch_models(mm, top=top),
        r.gpu,
        r.gpu_count,
        r.parallelism,
        engine,
        top,
        bw_eff=r.bw_eff,
        prefill_mfu=r.prefill_mfu,
        gpus_per_node=r.gpus_per_node,
        spec=bench_targets(r),
        request_overhead_s=r.request_overhead_s,
        constants=r.constants,
    )
    return curve, most, tokens


def scheduled_on(engine: EngineProfile, gpu: GpuSpec) -> tuple[EngineProfile, int]:
    """(``engine`` with the prefill chunk it takes by default on ``gpu``, the sequences it schedules
    at most by default there, at most MAX_CONCURRENCY): vLLM's defaults depend on the GPU
    (:func:`~gpuadvisor.core.specs.serving.batch_defaults`); other engines keep their profile's chunk."""
    limits = batch_defaults(engine.id, gpu.name, gpu.memory_gib_usable)
    most = MAX_CONCURRENCY if limits is None else min(limits.max_sequences, MAX_CONCURRENCY)
    return chunked_as(engine, limits), most


#: Curves a caller keeps for one replica while only its per-request time changes (a fit of that
#: time), by the requests in flight: see :func:`_benchmark_curve`.
CurveMemo = dict[int, tuple[int, ReplicaCurve]]


def _benchmark_curve(
    r: BenchReplica, requests: int, memo: CurveMemo | None = None
) -> tuple[int, ReplicaCurve]:
    """(sequences the engine runs at once, the replica's curve up to them) of a benchmark that keeps
    ``requests`` in flight: ``min(requests, KV capacity, the default pool's sequences, the
    sequences the engine schedules by default)`` (:func:`pool_sequences`, :func:`scheduled_on`),
    the rest wait. The engine runs with the prefill chunk it takes by default on the GPU.

    ``memo``: curves built before for this replica under the same constants, differing at most in
    ``request_overhead_s``, which the caller keeps (a fit of the per-request time asks for the same
    rows many times): the curve is built once and given each per-request time
    (:meth:`~gpuadvisor.core.estimation.serving.ReplicaCurve.with_overhead`), the same figures as
    a curve built anew."""
    if memo is None:
        return _build_benchmark_curve(r, requests)
    got = memo.get(requests)
    if got is None:
        got = memo[requests] = _build_benchmark_curve(r, requests)
    c, curve = got
    overhead = (
        curve.constants.request_overhead_for(r.engine.id)
        if r.request_overhead_s is None
        else r.request_overhead_s
    )
    return c, curve.with_overhead(overhead)


def _build_benchmark_curve(r: BenchReplica, requests: int) -> tuple[int, ReplicaCurve]:
    """:func:`_benchmark_curve` without a memo."""
    mm = r.mm
    context = reserved_context(mm.workload, batching_for(r.engine.id))
    line = kv_line(mm, r.gpu_count, r.parallelism, context)
    capacity = r.gpu.memory_gib_usable * GIB
    kv_max = kv_capacity(line, capacity)
    pool = pool_sequences(mm, r.gpu_count, r.parallelism, context, capacity, r.engine.id)
    if pool is not None:
        kv_max = min(kv_max, pool)
    engine, most = scheduled_on(r.engine, r.gpu)
    c = max(1, min(requests, kv_max, most))
    curve = replica_curve(
        batch_models(mm, top=max(c, 1)),
        r.gpu,
        r.gpu_count,
        r.parallelism,
        engine,
        c,
        bw_eff=r.bw_eff,
        prefill_mfu=r.prefill_mfu,
        gpus_per_node=r.gpus_per_node,
        spec=bench_targets(r),
        request_overhead_s=r.request_overhead_s,
        constants=r.constants,
    )
    return c, curve


def _loop_figures(c: int, curve: ReplicaCurve, clients: int, out: int) -> ClosedLoop:
    """A closed loop of ``clients`` on a replica that runs ``c`` of them at once (the rest wait):
    by Little's law ``c / S(c)`` requests a second, and a request takes ``clients x S(c) / c`` from
    sending to its end, so the mean TTFT is ``TTFT0(c) + (clients / c - 1) S(c)``."""
    itl, _tail, ttft0, service = curve.point(c, closed=True)
    return ClosedLoop(c * out / service, ttft0 + (clients / c - 1.0) * service, itl, c)


def closed_loop(
    replica: BenchReplica,
    concurrency: int,
    requests: int | None = None,
    longest_output: int | None = None,
    memo: CurveMemo | None = None,
) -> ClosedLoop:
    """Output tokens/s, mean TTFT and ITL, and the sequences the engine runs at once, of a closed-loop benchmark
    with ``concurrency`` clients, each sending its next request when one ends (``vllm bench serve
    --max-concurrency``, genai-perf's concurrency mode).

    The engine runs ``c = min(concurrency, KV capacity, MAX_CONCURRENCY)`` sequences; the rest wait.
    By Little's law the request rate is ``c / S(c)`` and a request takes ``concurrency x S(c) / c``
    from sending to its end, so the mean TTFT is ``TTFT0(c) + (concurrency / c - 1) S(c)``.

    With ``requests`` (``N``, the run's requests in all: ``--num-prompts``) the run is finite: its
    clients start together, so its first ``c`` requests are a wave (:func:`burst`), and it ends as
    its last answers drain. The other ``N - c`` requests run as the steady loop, one every
    ``S(c) / c``; after the last has started, the ``c`` in flight end as a draining wave (answers that
    vary up to ``longest_output``, :func:`drain`; equal answers: ``O - 1`` steps at batch ``c``)::

        TTFT     = (c TTFT_wave(c) + (N - c) TTFT0(c)) / N
        ITL      = (c ITL_wave(c) + (N - c) ITL(c)) / N
        tokens/s = N O / ((N - c) S(c) / c + TTFT0(c) + decode of the last wave)

    which tends to the steady loop as ``N / c`` grows; a run of five requests per client (SGLang's
    cookbook) spends a sizeable share of its time in the first wave's prompts and the last answers.
    A loop whose clients the KV cache cannot all hold (``c`` below them) stays the steady loop.
    (``memo``: see :func:`_benchmark_curve`; the same for the other benchmark models.)"""
    c, curve = _benchmark_curve(replica, concurrency, memo)
    out = replica.mm.workload.output_tokens
    if requests is None or concurrency > c or requests <= concurrency:
        return _loop_figures(c, curve, concurrency, out)
    itl, _tail, ttft0, service = curve.point(c, closed=True)
    wave_ttft, wave_itl, _ = _wave(curve, c, out, longest_output)
    rest = requests - c
    if longest_output is not None and longest_output > out:
        last, _ = curve_drain(curve, c, out, longest_output)
    else:
        last = (out - 1) * curve.step(c)
    duration = rest * service / c + ttft0 + last
    return ClosedLoop(
        requests * out / duration,
        (c * wave_ttft + rest * ttft0) / requests,
        (c * wave_itl + rest * itl) / requests,
        c,
    )


def burst(
    replica: BenchReplica, requests: int, longest_output: int | None = None, memo: CurveMemo | None = None
) -> ClosedLoop:
    """The same figures for a burst: ``requests`` sent at once and none after them (``vllm bench serve
    --request-rate inf`` without a concurrency cap, a Triton benchmark at QPS INF).

    When the engine holds them all (``N = requests <= c``) they are one wave. Their prompts are
    prefilled one after another, ``d = P_new tau`` each, so request ``k`` (1..N) waits for the
    ``k - 1`` prompts ahead of it and then, between its first and last token, for the ``N - k``
    prompts behind it, each step carrying at most ``chunk`` prompt tokens::

        TTFT_k = TTFT0(1) + (k - 1) d
        ITL_k  = min(step(N) + (N - k) d / (O - 1), step(N) + chunk tau)
        tokens/s = N O / (TTFT_N + (O - 1) step(N))      the wave ends with its last request

    and the figures are the means over ``k``: the closed loop's ITL carries the prompts of all
    ``c`` peers (each finished request is replaced), a wave's only those behind each request,
    half of them on average.

    When the engine cannot hold them all (``N > c``), the first ``c`` are a wave and the others
    wait for a slot, each request once (a burst is not a loop whose clients send again, so the
    mean wait is about half a closed loop's of ``N`` clients): the ``j``-th waiting request
    (``j = 1 .. N - c``) gets a slot after about ``j S(c) / c`` (the engine ends ``c / S(c)``
    requests a second) and then takes the closed loop's ``TTFT0(c)``; the tokens/s are the closed
    loop's ``c O / S(c)``, the ITL the mean of the wave's and the loop's. The first wave's prompts
    are prefilled one after another, so even equal answers end at staggered times and the engine
    refills its slots as a steady loop (taken as waves run one after another instead, TensorRT-LLM's
    uniform-length bursts came out further from their measured throughput).

    With ``longest_output`` the answers are not all ``O`` tokens long: they stop at their end
    token, ``O`` on average and none past ``longest_output`` (a request's ``max_tokens``, or the
    longest answer of a dataset replayed with its own lengths). The wave then drains: see
    :func:`drain`."""
    c, curve = _benchmark_curve(replica, requests, memo)
    out = replica.mm.workload.output_tokens
    if requests <= c:
        ttft, itl, makespan = _wave(curve, requests, out, longest_output)
        return ClosedLoop(requests * out / makespan, ttft, itl, requests)
    first_ttft, first_itl, _ = _wave(curve, c, out, longest_output)
    itl, _tail, ttft0, service = curve.point(c, closed=True)
    m = requests - c
    ttft = (c * first_ttft + m * (ttft0 + (m + 1) / 2.0 * service / c)) / requests
    return ClosedLoop(c * out / service, ttft, (c * first_itl + m * itl) / requests, c)


#: Points of the midpoint sum over a draining wave's decode (:func:`drain`).
DRAIN_POINTS = 64


@functools.lru_cache(maxsize=1024)
def _drain_theta(out: int, longest: int) -> float:
    """The scale ``theta`` of exponential answer lengths cut at ``longest`` whose mean is ``out``:
    ``theta (1 - exp(-longest / theta)) = out`` (``longest > out``), by bisection."""
    lo, hi = float(out), float(out)
    while hi * -math.expm1(-longest / hi) < out:  # theta (1 - e^(-L/theta)) rises with theta
        hi *= 2.0
    for _ in range(60):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if mid * -math.expm1(-longest / mid) < out else (lo, mid)
    return hi


def drain_theta(out: int, longest: int) -> float:
    """The scale of exponential answer lengths cut at ``longest`` whose mean is ``out`` (see
    :func:`drain`)."""
    return _drain_theta(out, longest)


def drain(step: Callable[[float], float], n: int, out: int, longest: int) -> tuple[float, float]:
    """(decode time s, mean decode step per token s) of a wave of ``n`` sequences whose answers
    stop at their end token: ``out`` tokens on average, none longer than ``longest``.

    The answer lengths are taken as exponential and cut at ``longest`` (``min(X, L)``, the
    exponential-like tail the queue model assumes without a stated percentile, see
    :func:`~gpuadvisor.core.estimation.serving.service_cv2`), ``theta`` chosen so that their mean
    is ``out``: ``theta (1 - exp(-L / theta)) = out``. A sequence still decodes at step ``t`` with probability
    ``S(t) = exp(-t / theta)`` (``t < L``), so the wave is still running with probability
    ``1 - (1 - S)^n`` and then holds ``n S / (1 - (1 - S)^n)`` sequences on average; its decode
    time is the sum over steps ``t = 1 .. L - 1`` of that probability times the step at that
    batch. With equal lengths the wave decodes ``out - 1`` steps at batch ``n``; a draining one
    decodes until its longest answer ends, at shrinking batches, which is why a burst of chat
    answers makes fewer tokens a second than its mean length suggests."""
    if longest <= out or n < 1:
        s = step(float(n))
        return (out - 1) * s, s
    theta = _drain_theta(out, longest)
    # Past 1 + theta (ln n + 7) the wave runs with probability below 1e-3: stop the sum there.
    end = min(float(longest), 1.0 + theta * (math.log(n) + 7.0))
    dt = (end - 1.0) / DRAIN_POINTS
    time = weighted = tokens = 0.0
    for i in range(DRAIN_POINTS):
        alive = math.exp(-(1.0 + (i + 0.5) * dt) / theta)
        running = 1.0 - (1.0 - alive) ** n  # the probability that the wave still runs
        batch = n * alive / running
        s = step(batch)
        time += running * s * dt
        weighted += n * alive * s * dt
        tokens += n * alive * dt
    return time, weighted / tokens


#: Drains worked out per curve (:func:`curve_drain`), dropped with the curve: the speculative
#: tables they were worked out under (the step changes when a curve starts decoding speculatively)
#: and the drains by ``(n, out, longest)``.
_DRAINS: weakref.WeakKeyDictionary[
    ReplicaCurve, tuple[object, dict[tuple[int, int, int], tuple[float, float]]]
] = weakref.WeakKeyDictionary()


def curve_drain(curve: ReplicaCurve, n: int, out: int, longest: int) -> tuple[float, float]:
    """:func:`drain` of a wave of ``n`` on ``curve``'s step, remembered (a finite closed loop asks
    for its first wave's and its last wave's, the same)."""
    kept = _DRAINS.get(curve)
    if kept is None or kept[0] is not curve.speculative:
        kept = _DRAINS[curve] = (curve.speculative, {})
    memo = kept[1]
    key = (n, out, longest)
    got = memo.get(key)
    if got is None:
        got = memo[key] = drain(curve.step, n, out, longest)
    return got


def capped_ramp_sum(first: float, rise: float, cap: float, n: int) -> float:
    """``sum(min(first + j rise, cap) for j in range(n))`` in closed form (``rise >= 0``): the ``k``
    terms below the cap are an arithmetic series, the other ``n - k`` are the cap."""
    if n <= 0:
        return 0.0
    if cap <= first:
        return n * cap
    if rise <= 0.0:
        return n * first
    k = n if math.isinf(cap) else min(n, math.ceil((cap - first) / rise))
    below = k * first + rise * k * (k - 1) / 2.0
    return below if k == n else below + (n - k) * cap


def _wave(curve: ReplicaCurve, n: int, out: int, longest: int | None = None) -> tuple[float, float, float]:
    """(mean TTFT s, mean ITL s, makespan s) of ``n`` requests the engine holds, sent at once (see
    :func:`burst`; ``longest``: answers of varying length, see :func:`drain`)."""
    _itl1, _tail1, ttft1, _s1 = curve.point(1, closed=True)  # the first prompt meets none ahead
    d = curve.new_mean * curve.tau
    if longest is None or longest <= out:
        step = curve.step(n)
        decode = (out - 1) * step
    else:
        decode, step = curve_drain(curve, n, out, longest)
    gaps = max(out - 1, 1)
    cap = step + (curve.chunk * curve.tau if math.isfinite(curve.chunk) else math.inf)
    itl = capped_ramp_sum(step, d / gaps, cap, n) / n
    ttft = ttft1 + (n - 1) / 2.0 * d
    makespan = ttft1 + (n - 1) * d + decode
    return ttft, itl, makespan


def lockstep(replica: BenchReplica, clients: int, memo: CurveMemo | None = None) -> ClosedLoop:
    """The same figures for a closed loop whose rounds stay in step: ``clients`` clients started
    together, every request with the same prompt and output length (a fixed-length synthetic
    benchmark: genai-perf's concurrency mode with ``ignore_eos`` and a zero spread of lengths).

    The first round is a burst. Its requests finish together: the ``k``-th decodes while the
    ``N - k`` prompts behind it are prefilled, so it ends at ``TTFT0(1) + (N - 1) d + (O - 1)
    step(N)`` whatever ``k`` (:func:`burst`). Its clients then send their next requests together,
    and every round is the same wave: the output tokens/s are the wave's, ``N O / makespan``, and
    the mean TTFT is the wave's, ``TTFT0(1) + (N - 1) / 2 x d``, where a steady closed loop
    (:func:`closed_loop`) has each new prompt meet a queue of about one. When the engine holds
    ``c < N`` sequences, the rounds are waves of ``c`` and the rest wait for a whole wave to end:
    by Little's law a request takes ``N / c x makespan(c)`` from sending to its end, of which its
    decode is ``(O - 1) x ITL``."""
    c, curve = _benchmark_curve(replica, clients, memo)
    out = replica.mm.workload.output_tokens
    ttft, itl, makespan = _wave(curve, c, out)
    if clients > c:
        ttft = clients / c * makespan - (out - 1) * itl
    return ClosedLoop(c * out / makespan, ttft, itl, c)


def paced(
    replica: BenchReplica, requests: int, rate_per_s: float, memo: CurveMemo | None = None
) -> ClosedLoop:
    """The same figures for a client that offers ``rate_per_s`` requests a second, evenly spaced, to at
    most ``requests`` workers (``vllm bench serve --request-rate R --max-concurrency N`` with even
    spacing; a load generator that queues one request per tick).

    When the closed loop of ``requests`` clients serves fewer than ``rate_per_s`` requests a second
    the client's queue never empties and the figures are that closed loop's. Otherwise the client
    sets the pace: by Little's law the engine runs ``x`` sequences with ``x / S(x) = rate_per_s``
    (at least one), a request waits for no worker, and the output tokens/s are ``rate_per_s x O``."""
    c, curve = _benchmark_curve(replica, requests, memo)
    w = replica.mm.workload
    loop = _loop_figures(c, curve, requests, w.output_tokens)
    if loop.tokens_per_s <= rate_per_s * w.output_tokens:
        return loop

    def served(x: float) -> float:
        return x / curve.point(x)[3]

    x = 1.0
    if served(x) < rate_per_s:
        lo, x = 1.0, float(c)  # served(c) > rate: the closed loop above serves more
        for _ in range(40):  # x / S(x) rises with x: bisect for the running sequences
            mid = (lo + x) / 2.0
            lo, x = (mid, x) if served(mid) < rate_per_s else (lo, mid)
    itl, _tail, ttft0, _service = curve.point(x)
    return ClosedLoop(rate_per_s * w.output_tokens, ttft0, itl, c)
