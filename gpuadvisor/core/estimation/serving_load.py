"""A service at its stated load: each fleet's replicas simulated request by request, the targets
judged like deadlines, and the latency-against-load curves of the chart.

The closed-form planner (:mod:`.serving`) sizes every candidate's fleet. Each GPU type's leading
fleet (the decision's candidate for that type) is then simulated (:mod:`.serving_sim`) at its
share of the load: a rate splits evenly over the replicas (each a Poisson or bursty stream), a
closed loop's clients too. The simulation gives ``serving.at_load``; the targets are then judged
from it like a deadline:

- **meets**: the far (slow) end of the 80% range of the figure at the requested percentile is
  within the target, for both the TTFT and the ITL;
- **likely**: the expected value is, the far end is not;
- **at risk**: the expected value is not (or the replica cannot keep up with its share).

Where the closed form's fleet is not "likely" by the simulation, the planner resizes it
(:func:`settle`): a missed ITL first lowers the concurrency per replica (the engine's
``max_num_seqs``) by the ratio of target to percentile; then, the concurrency held, the fewest
replicas the simulation judges at least "likely" are searched, unless one replica running one
request at a time already misses a target (more replicas cannot help: ``stopped="idle"``). The
other fleets of a GPU type are simulated when their figures are asked for (:func:`ensure_at_load`),
with the same requests, and keep the closed form's size.

A rate's requests and a closed loop's are the same for every GPU type (the same seed), so the
percentiles compare the GPUs on the same stream.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..specs.constants import SpeedConstants, shipped_constants
from ..specs.serving import ArrivalPattern, ServingSpec
from ..specs.workload import Workload
from . import disaggregated as dz
from .serving import (
    MAX_CONCURRENCY,
    ReplicaCurve,
    ServingEstimate,
    idle_cap,
    serving_estimate,
)
from .serving_sim import (
    QUANTILES,
    SEED,
    STEADY_REQUESTS,
    Arrival,
    AtLoad,
    EngineLane,
    Lengths,
    Load,
    Percentiles,
    TargetStatus,
    at_load,
    draw_lengths,
    simulate,
)

#: Times a missed ITL lowers a fleet's concurrency before its replicas are searched.
CONCURRENCY_ROUNDS = 3
#: The decode step is evaluated at these batches (and all below 17) and interpolated between them.
GRID_POINTS = 40
#: Spread of an answer length whose 90th percentile is not stated: a log-normal whose squared
#: coefficient of variation is 1 (the exponential-like tail the closed-form queue assumes).
DEFAULT_OUTPUT_SIGMA = math.sqrt(math.log(2.0))
#: Loads of the latency chart, as multiples of the stated load.
CURVE_LOADS = (0.25, 0.5, 0.75, 1.0, 1.1, 1.25, 1.5, 2.0)


def step_grid(top: int) -> np.ndarray:
    """Batches at which the decode step is evaluated: every one up to 16, then geometric to ``top``."""
    small = np.arange(1, min(top, 16) + 1)
    if top <= 16:
        return small
    big = np.unique(np.rint(np.geomspace(16, top, GRID_POINTS)).astype(int))
    return np.unique(np.concatenate([small, big]))


def step_table(curve: ReplicaCurve, top: int) -> np.ndarray:
    """The decode step at batch ``0..top`` (index = batch), from the curve's step at a grid of
    batches, linear between them (the step is piecewise affine)."""
    top = max(1, top)
    grid = step_grid(top)
    values = np.array([curve.step(float(b)) for b in grid])
    out = np.empty(top + 1)
    out[1:] = np.interp(np.arange(1, top + 1), grid, values)
    out[0] = out[1]
    return out


def service_lengths(w: Workload, spec: ServingSpec, n: int = STEADY_REQUESTS) -> Lengths:
    """The simulated requests' lengths: log-normals through the stated means and 90th percentiles;
    a prompt without a percentile is taken as fixed, an answer without one varies with a squared
    coefficient of variation of 1. Seeded: every GPU type sees the same requests."""
    rng = np.random.default_rng(SEED + 2)
    prompt = draw_lengths(w.prompt_tokens, w.prompt_tokens_p90, n, rng)
    out_sigma = None if w.output_tokens_p90 is not None else DEFAULT_OUTPUT_SIGMA
    output = draw_lengths(w.output_tokens, w.output_tokens_p90, n, np.random.default_rng(SEED + 3), out_sigma)
    return Lengths(prompt, output, spec.prefix_cache_hit_rate)


def engine_lane(
    curve: ReplicaCurve,
    max_sequences: int,
    kv_pool_tokens: float,
    step_s: np.ndarray | None = None,
    tokens_per_step: float = 1.0,
) -> EngineLane:
    """One replica of ``curve`` as the simulation's engine, running at most ``max_sequences``
    sequences in ``kv_pool_tokens`` tokens of KV cache (``step_s``: another step table, such as a
    speculative one)."""
    top = max(1, min(max_sequences, MAX_CONCURRENCY))
    if step_s is not None:
        table = step_s
    elif curve.speculative is not None:  # the raw speculative step, each yielding tau tokens
        table = curve.speculative.step_s
        tokens_per_step = curve.speculative.tokens_per_step
    else:
        table = step_table(curve, top)
    prompt = max(curve.w.prompt_tokens, 1)
    batching = curve.batching
    return EngineLane(
        step_s=table[: top + 1],
        prefill_s_per_token=curve.tau,
        prefill_alone_s_per_token=curve.ttft1 / prompt,
        mixed_prefill=curve.mixed_prefill,
        chunk_tokens=curve.chunk,
        max_sequences=top,
        kv_pool_tokens=kv_pool_tokens,
        reserve_whole_context=batching != "paged",
        request_overhead_s=curve.overhead,
        tokens_per_step=tokens_per_step,
        static=batching == "static",
        token_lag_steps=curve.token_lag_steps,
    )


def replica_load(spec: ServingSpec, replicas: int, scale: float = 1.0) -> tuple[Load, int | None]:
    """One replica's share of the stated load (``scale`` times it), and the clients per replica of a
    closed loop."""
    if spec.closed_loop:
        clients = max(1, math.ceil(int(spec.concurrency or 1) * scale / replicas))
        return Load(Arrival.CLOSED, clients=clients), clients
    arrival = Arrival.BURST if spec.arrival == ArrivalPattern.BURST else Arrival.POISSON
    return Load(arrival, requests_per_s=float(spec.requests_per_s or 0.0) * scale / replicas), None


def constants_of(fleet: ServingEstimate) -> SpeedConstants:
    """The speed model's constants ``fleet`` was sized with (its replica curve's)."""
    return fleet.replica.constants if fleet.replica is not None else shipped_constants()


def judge(point: AtLoad, spec: ServingSpec, constants: SpeedConstants | None = None) -> TargetStatus | None:
    """The targets judged like a deadline (see the module docstring), with the 80% ranges of
    ``constants`` (the shipped ones when None); None without targets."""
    if not spec.has_targets:
        return None
    k = constants or shipped_constants()
    if point.saturated:
        return TargetStatus.AT_RISK
    q = spec.percentile
    worst = TargetStatus.MEETS
    for value, figure, limit in (
        (point.ttft_s.at(q), "ttft", spec.ttft_limit_s),
        (point.itl_ms.at(q), "itl", spec.itl_limit_ms),
    ):
        if not math.isfinite(limit):
            continue
        if not math.isfinite(value) or value > limit:
            return TargetStatus.AT_RISK
        if k.time_range(value, figure)[1] > limit:
            worst = TargetStatus.LIKELY
    return worst


def with_point(fleet: ServingEstimate, point: AtLoad, spec: ServingSpec) -> ServingEstimate:
    """``fleet`` with its simulated figures: ``at_load``, the status, and its TTFT and ITL (and
    their 80% ranges) at the requested percentile, which replace the closed form's."""
    k = constants_of(fleet)
    status = judge(point, spec, k)
    q = spec.percentile
    ttft, itl = point.ttft_s.at(q), point.itl_ms.at(q)
    if not fleet.meets_slo or not (math.isfinite(ttft) and math.isfinite(itl)):
        return fleet._replace(at_load=point, status=None if status is None else str(status))
    fleet = fleet._replace(
        at_load=point,
        status=None if status is None else str(status),
        ttft_s=ttft,
        itl_ms=itl,
        ttft_range_s=k.time_range(ttft, "ttft"),
        itl_range_ms=k.time_range(itl, "itl"),
    )
    if status == TargetStatus.AT_RISK:
        # Missed at the load: the figure furthest over its target says which, and by how much.
        ttft_over, itl_over = missed_by(point, spec)
        over = max(ttft_over, itl_over, 1.0)
        fleet = fleet._replace(
            meets_slo=False,
            missed="itl" if itl_over > ttft_over else "ttft",
            shortfall=over if math.isfinite(over) else 1e9,
            missed_at_load=True,
        )
    return fleet


def missed_by(point: AtLoad, spec: ServingSpec) -> tuple[float, float]:
    """(TTFT, ITL) at the requested percentile over their targets (0 where no target is set)."""
    q = spec.percentile
    ttft = point.ttft_s.at(q) / spec.ttft_limit_s if math.isfinite(spec.ttft_limit_s) else 0.0
    itl = point.itl_ms.at(q) / spec.itl_limit_ms if math.isfinite(spec.itl_limit_ms) else 0.0
    return ttft, itl


@dataclass
class _Job:
    """One fleet to simulate: its lane and load, and where the result goes."""

    fleet: ServingEstimate
    lane: EngineLane
    load: Load
    clients: int | None


def _job(fleet: ServingEstimate, scale: float = 1.0) -> _Job:
    curve, plan = fleet.replica, fleet.plan
    assert curve is not None and plan is not None
    cap = fleet.concurrency_per_replica if plan.spec.has_targets else plan.engine_max
    lane = engine_lane(curve, max(1, min(cap, plan.kv_max if plan.kv_max > 0 else cap)), plan.kv_pool_tokens)
    load, clients = replica_load(plan.spec, fleet.replicas, scale)
    return _Job(fleet, lane, load, clients if plan.spec.closed_loop and scale == 1.0 else None)


def _run(jobs: Sequence[_Job], lengths: Lengths) -> list[AtLoad]:
    results = simulate([j.lane for j in jobs], [j.load for j in jobs], [lengths] * len(jobs))
    return [
        at_load(r, j.fleet.replicas, None if j.clients is None else int(j.fleet.plan.spec.concurrency or 0))  # type: ignore[union-attr]
        for r, j in zip(results, jobs)
    ]


def settle(fleets: Sequence[ServingEstimate], w: Workload) -> list[ServingEstimate]:
    """Simulate ``fleets`` (one per GPU type: the decision's candidates), resize those the
    simulation finds short of their targets, and return them with ``at_load`` and ``status``.

    A fleet that misses its targets even alone is judged against those it was sized to
    (:func:`judged_against`), and resized the same way.

    Two steps, both batched over the fleets. First the concurrency: a missed ITL lowers the
    sequences a replica runs by the ratio of percentile to target (the replicas then follow by the
    closed form), at most :data:`CONCURRENCY_ROUNDS` times. Then the replicas, the concurrency held:
    a fleet still short is tried with one request at a time on one replica (:func:`_idle_points`);
    where even that misses a target more replicas cannot help, and the fleet is kept at its size
    with ``stopped="idle"``. Otherwise the fewest replicas whose simulation is judged at least
    "likely" are searched (:func:`_fewest_at_load`). The requests are the same at every size, so the
    judgement falls as a replica's share of the load rises and the search finds the least fleet:
    more traffic never gets fewer replicas."""
    if not fleets:
        return []
    spec = fleets[0].plan.spec if fleets[0].plan is not None else None
    assert spec is not None
    lengths = service_lengths(w, spec)
    out = list(fleets)
    todo = list(range(len(out)))
    short: list[int] = []
    for attempt in range(CONCURRENCY_ROUNDS + 1):
        if not todo:
            break
        points = _run([_job(out[i]) for i in todo], lengths)
        again = []
        for i, point in zip(todo, points):
            fleet = with_point(out[i], point, spec)._replace(settled=True)
            out[i] = fleet
            target = judged_against(fleet, spec)
            resizable = fleet.missed_at_load or fleet.sized_for is not None
            if judge(point, target, constants_of(fleet)) != TargetStatus.AT_RISK or not resizable:
                continue
            _ttft_over, itl_over = missed_by(point, target)
            c = fleet.concurrency_per_replica
            if itl_over > 1.0 and c > 1 and attempt < CONCURRENCY_ROUNDS:
                new_c = max(1, min(c - 1, math.floor(c / min(itl_over, 2.0))))
                refit = _refit(fleet, new_c, None)
                if refit.replicas < fleet.replicas:
                    refit = _refit(fleet, new_c, fleet.replicas)
                out[i] = refit
                again.append(i)
            else:
                short.append(i)
        todo = again
    if short:
        idle = _idle_points([out[i] for i in short], lengths)
        search = []
        for i, point in zip(short, idle):
            if judge(point, judged_against(out[i], spec), constants_of(out[i])) == TargetStatus.AT_RISK:
                out[i] = out[i]._replace(stopped="idle", idle=point)
            else:
                search.append(i)
        for i, fleet in zip(search, _fewest_at_load([out[i] for i in search], lengths, spec)):
            out[i] = fleet
    return out


def judged_against(fleet: ServingEstimate, spec: ServingSpec) -> ServingSpec:
    """The targets a fleet's simulation is judged against when it is resized: the stated ones, or
    for a fleet that misses them even alone the ones it was sized to (``sized_for``)."""
    if fleet.sized_for is None:
        return spec
    return replace(spec, ttft_s=fleet.sized_for[0], itl_ms=fleet.sized_for[1])


def _idle_points(fleets: Sequence[ServingEstimate], lengths: Lengths) -> list[AtLoad]:
    """Each fleet's replica with one request at a time (a closed loop of one client): the floor of
    its TTFT and ITL that no number of replicas lowers."""
    jobs = []
    for fleet in fleets:
        job = _job(fleet)
        jobs.append(replace(job, load=Load(Arrival.CLOSED, clients=1), clients=None))
    return _run(jobs, lengths)


def _fewest_at_load(
    fleets: Sequence[ServingEstimate], lengths: Lengths, spec: ServingSpec
) -> list[ServingEstimate]:
    """The fewest replicas of each fleet (its concurrency held) whose simulation is judged at least
    "likely" (against :func:`judged_against`: the stated targets, or those a fleet that misses them
    even alone was sized to), each fleet's current size known to fall short: the size doubles until
    one is judged so, then is bisected between the last short size and it. A fleet still short at
    :func:`search_cap` (``stopped="headroom"``) keeps the size it stopped at."""
    lo = [f.replicas for f in fleets]
    hi: list[int | None] = [None] * len(fleets)
    best: list[ServingEstimate | None] = [None] * len(fleets)
    cap = [search_cap(f) for f in fleets]
    last: list[ServingEstimate] = list(fleets)
    while True:
        trial: list[tuple[int, ServingEstimate]] = []
        for k, fleet in enumerate(fleets):
            h = hi[k]
            if h is None:
                if lo[k] >= cap[k]:
                    continue
                r = min(cap[k], max(lo[k] + 1, 2 * lo[k]))
            elif h - lo[k] > 1:
                r = (lo[k] + h) // 2
            else:
                continue
            trial.append((k, _refit(fleet, fleet.concurrency_per_replica, r)))
        if not trial:
            break
        points = _run([_job(f) for _k, f in trial], lengths)
        for (k, fleet), point in zip(trial, points):
            judged = with_point(fleet, point, spec)._replace(settled=True)
            if judge(point, judged_against(fleet, spec), constants_of(fleet)) == TargetStatus.AT_RISK:
                lo[k] = fleet.replicas
                last[k] = judged
            else:
                hi[k] = fleet.replicas
                best[k] = judged
    return [b if b is not None else last[k]._replace(stopped="headroom") for k, b in enumerate(best)]


def search_cap(fleet: ServingEstimate) -> int:
    """The most replicas :func:`_fewest_at_load` tries for ``fleet`` (:func:`~.serving.idle_cap`):
    :data:`~.serving.MAX_IDLE_FACTOR` times the replicas that would carry its load one request at a
    time, back to back (the rate times the service time of one request alone), and at most
    :data:`~.serving.MAX_REPLICAS` (the closed form's own cap); a fleet already as large may try
    one more. The cap depends on the load and
    the replica, not on the sequences a replica runs or the targets: a fleet at a loose ITL target
    (many sequences) may grow as far as one at a tight target (one sequence), and meets the first
    token wherever that one does, its waiting requests having more slots; and twice the traffic
    allows twice the fleet."""
    curve = fleet.replica
    assert curve is not None
    return max(fleet.replicas + 1, idle_cap(_pool_rate(fleet), curve.point(1)[3]))


def _refit(fleet: ServingEstimate, c: int, replicas: int | None) -> ServingEstimate:
    curve, plan = fleet.replica, fleet.plan
    assert curve is not None and plan is not None
    refit = serving_estimate(
        curve,
        plan.kv_max,
        fleet.gpu_count,
        plan.price,
        plan.buy,
        plan.budget,
        memory_at=plan.memory_at,
        scheduler=fleet.scheduler,
        kv_pool_tokens=plan.kv_pool_tokens,
        concurrency=c,
        replicas=replicas,
        transfer=plan.transfer,
    )
    return refit._replace(speculative=fleet.speculative, disaggregated=fleet.disaggregated)


def ensure_at_load(fleets: Iterable[ServingEstimate], w: Workload) -> list[ServingEstimate]:
    """``fleets`` with ``at_load`` and ``status`` (simulated where missing; not corrected: only the
    decision's fleets are), each as two pools where the service asks for disaggregation."""
    fleets = list(fleets)
    missing = [i for i, f in enumerate(fleets) if f.at_load is None and f.plan is not None]
    if missing:
        spec = fleets[missing[0]].plan.spec  # type: ignore[union-attr]
        lengths = service_lengths(w, spec)
        points = _run([_job(fleets[i]) for i in missing], lengths)
        for i, point in zip(missing, points):
            fleets[i] = with_point(fleets[i], point, spec)
            plan = fleets[i].plan
            if spec.disaggregated and plan is not None and plan.transfer is not None:
                fleets[i] = disaggregate(fleets[i], w)
    return fleets


@dataclass(frozen=True, slots=True)
class LoadCurve:
    """One fleet's latencies against the load (the chart's lines): the load as a multiple of the
    stated one, the fleet's requests/s (or clients) there, and p50 and p99 of the TTFT (s) and ITL
    (ms); points past saturation are left out."""

    key: str
    scale: tuple[float, ...]
    load: tuple[float, ...]
    ttft_p50_s: tuple[float, ...]
    ttft_p99_s: tuple[float, ...]
    itl_p50_ms: tuple[float, ...]
    itl_p99_ms: tuple[float, ...]


def load_curves(keyed: Sequence[tuple[str, ServingEstimate]], w: Workload) -> tuple[LoadCurve, ...]:
    """The latency-against-load curves of these fleets (the same fleet, the load scaled by
    :data:`CURVE_LOADS`), all simulated at once."""
    if not keyed:
        return ()
    spec = keyed[0][1].plan.spec  # type: ignore[union-attr]
    lengths = service_lengths(w, spec)
    m = len(CURVE_LOADS)
    lanes: list[EngineLane] = []
    loads: list[Load] = []
    lens: list[Lengths] = []
    for _k, f in keyed:
        if f.disaggregated is not None:
            # Both pools at each load: a prefill instance's lane, then a decode instance's.
            pools = _pools(f, w, f.disaggregated.decode_concurrency)
            rate = _pool_rate(f)
            for s in CURVE_LOADS:
                lanes += [pools.prefill, pools.decode]
                loads += [
                    Load(pools.arrival, requests_per_s=rate * s / f.disaggregated.prefill_instances),
                    Load(pools.arrival, requests_per_s=rate * s / f.disaggregated.decode_instances),
                ]
                lens += [pools.prefill_lengths, pools.decode_lengths]
        else:
            for s in CURVE_LOADS:
                job = _job(f, s)
                lanes.append(job.lane)
                loads.append(job.load)
                lens.append(lengths)
    results = simulate(lanes, loads, lens)
    out = []
    base = float(spec.concurrency or 0) if spec.closed_loop else float(spec.requests_per_s or 0.0)
    at = 0
    for key, f in keyed:
        points: list[tuple[float, Percentiles, Percentiles, bool]] = []  # (scale, TTFT s, ITL s, saturated)
        for s in CURVE_LOADS:
            if f.disaggregated is not None:
                pre, dec = results[at], results[at + 1]
                at += 2
                move = f.disaggregated.kv_transfer_s
                ttft = Percentiles(*(pre.ttft_s.at(q) + move + dec.ttft_s.at(q) for q in QUANTILES))
                points.append((s, ttft, dec.itl_s, pre.saturated or dec.saturated))
            else:
                r = results[at]
                at += 1
                points.append((s, r.ttft_s, r.itl_s, r.saturated))
        rows = [x for x in points if not x[3] and math.isfinite(x[1].p99)]
        out.append(
            LoadCurve(
                key=key,
                scale=tuple(x[0] for x in rows),
                load=tuple(x[0] * base for x in rows),
                ttft_p50_s=_rising(x[1].p50 for x in rows),
                ttft_p99_s=_rising(x[1].p99 for x in rows),
                itl_p50_ms=_rising(x[2].p50 * 1000.0 for x in rows),
                itl_p99_ms=_rising(x[2].p99 * 1000.0 for x in rows),
            )
        )
    assert at == len(results) and len(out) == len(keyed) and m > 0
    return tuple(out)


def _rising(values: Iterable[float]) -> tuple[float, ...]:
    """The values made non-decreasing (a running maximum): a point never shows less than the point
    at a lighter load; what that smooths away is the percentiles' sampling noise (a request's first
    token waits for the next step, a phase that moves with the load; tests/core/test_serving_sim.py
    measures it), not a trend."""
    return tuple(np.maximum.accumulate(np.asarray(list(values), dtype=float)))


def percentile_phrase(p: Percentiles, unit: str, digits: int) -> str:
    """``0.12 / 0.31 / 0.58 s`` (p50 / p90 / p99)."""
    return f"{p.p50:.{digits}f} / {p.p90:.{digits}f} / {p.p99:.{digits}f} {unit}"


# --- disaggregated prefill and decode ------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Pools:
    """A prefill instance's and a decode instance's lanes, and their requests."""

    prefill: EngineLane
    decode: EngineLane
    prefill_lengths: Lengths
    decode_lengths: Lengths
    arrival: Arrival


def _pools(fleet: ServingEstimate, w: Workload, decode_concurrency: int) -> _Pools:
    """The lanes of ``fleet``'s two pools: a prefill instance runs as the replica does, its requests
    ending at their first token; a decode instance runs at most ``decode_concurrency`` sequences
    whose prompts arrive in its KV cache (no per-request time: the prefill's side paid it)."""
    curve, plan = fleet.replica, fleet.plan
    assert curve is not None and plan is not None
    lengths = service_lengths(w, plan.spec)
    top = max(1, min(plan.kv_max, MAX_CONCURRENCY))
    pre_lane = engine_lane(curve, top, plan.kv_pool_tokens)
    dec_lane = engine_lane(curve, decode_concurrency, plan.kv_pool_tokens)
    dec_lane = replace(dec_lane, request_overhead_s=0.0)
    return _Pools(
        pre_lane,
        dec_lane,
        Lengths(lengths.prompt, np.ones_like(lengths.output), lengths.cached_share),
        Lengths(lengths.prompt, lengths.output, 0.0, new_tokens=np.ones_like(lengths.prompt)),
        Arrival.BURST if plan.spec.arrival == ArrivalPattern.BURST else Arrival.POISSON,
    )


def _pool_rate(fleet: ServingEstimate) -> float:
    """The requests a second the pools serve: the stated rate, or what the one pool's closed loop
    carried (a closed loop's clients, by Little's law)."""
    spec = fleet.plan.spec  # type: ignore[union-attr]
    if spec.requests_per_s is not None:
        return float(spec.requests_per_s)
    if fleet.disaggregated is not None:
        return fleet.disaggregated.at_load.requests_per_s
    return fleet.requests_per_s_per_replica * fleet.replicas


def disaggregate(fleet: ServingEstimate, w: Workload) -> ServingEstimate:
    """``fleet`` as two pools of its layout, a prefill pool sized to the TTFT target and a decode pool
    to the ITL target (:mod:`.disaggregated`); its GPUs, cost, ``at_load`` and status become the
    pools', and ``disaggregated`` keeps the one pool's GPUs for the saving."""
    curve, plan = fleet.replica, fleet.plan
    assert curve is not None and plan is not None and plan.transfer is not None
    transfer = plan.transfer
    spec = plan.spec
    lengths = service_lengths(w, spec)
    rate = _pool_rate(fleet)
    gpus = fleet.gpu_count
    top = max(1, min(plan.kv_max, MAX_CONCURRENCY))
    table = step_table(curve, top)
    target = spec.itl_limit_ms / 1000.0
    within = np.nonzero(table[1:] <= target)[0]
    c_d = int(within[-1]) + 1 if within.size else 1
    chunk = curve.chunk if math.isfinite(curve.chunk) else float(max(8192, w.prompt_tokens))
    alone = curve.ttft1 / max(w.prompt_tokens, 1)
    d_chunk = max(chunk * curve.tau, chunk * alone, curve.step1)
    mean_new = float(np.mean(lengths.prompt)) * (1.0 - lengths.cached_share)
    n_p = dz.start_instances(rate, chunk / d_chunk / max(mean_new, 1.0), dz.PREFILL_START_BUSY)
    mean_out = float(np.mean(lengths.output))
    n_d = dz.start_instances(
        rate, c_d / max((mean_out - 1.0) * float(table[c_d]), 1e-9), dz.DECODE_START_BUSY
    )
    move = dz.kv_transfer_s(
        float(np.mean(lengths.prompt)),
        transfer.kv_bytes_per_token,
        gpus,
        transfer.link_gb_s,
        transfer.latency_s,
    )
    point: AtLoad | None = None
    status = None
    for _round in range(dz.MAX_ROUNDS):
        pools = _pools(fleet, w, c_d)
        arrival = pools.arrival
        pre, dec = simulate(
            [pools.prefill, pools.decode],
            [Load(arrival, requests_per_s=rate / n_p), Load(arrival, requests_per_s=rate / n_d)],
            [pools.prefill_lengths, pools.decode_lengths],
        )
        ttft = Percentiles(
            pre.ttft_s.p50 + move + dec.ttft_s.p50,
            pre.ttft_s.p90 + move + dec.ttft_s.p90,
            pre.ttft_s.p99 + move + dec.ttft_s.p99,
        )
        e2e = Percentiles(
            pre.ttft_s.p50 + move + dec.e2e_s.p50,
            pre.ttft_s.p90 + move + dec.e2e_s.p90,
            pre.ttft_s.p99 + move + dec.e2e_s.p99,
        )
        point = AtLoad(
            concurrency=rate * (pre.mean_ttft_s + move + dec.mean_e2e_s),
            requests_per_s=rate,
            output_tokens_per_s=rate * mean_out,
            ttft_s=ttft,
            itl_ms=dec.itl_s.scaled(1000.0),
            e2e_s=e2e,
            queue_s=pre.queue_s,
            replicas=n_p + n_d,
            saturated=pre.saturated or dec.saturated,
        )
        judged = judge(point, spec, constants_of(fleet))
        status = None if judged is None else str(judged)
        if judged != TargetStatus.AT_RISK:
            break
        q = spec.percentile
        prefill_part = pre.ttft_s.at(q) + move
        if pre.saturated or prefill_part > 0.7 * spec.ttft_limit_s:
            n_p = max(n_p + 1, math.ceil(n_p * 1.3))
        if dec.saturated or dec.ttft_s.at(q) > 0.3 * spec.ttft_limit_s:
            n_d = max(n_d + 1, math.ceil(n_d * 1.3))
        if dec.itl_s.at(q) * 1000.0 > spec.itl_limit_ms and c_d > 1:
            c_d = max(1, math.floor(c_d * 0.8))
            n_d = max(n_d + 1, math.ceil(n_d * 1.25))
    assert point is not None
    price = plan.price.expected if plan.price is not None else None
    hours = spec.hours_per_day / 24.0
    total = (n_p + n_d) * gpus
    month = None if price is None else total * price * 730.0 * hours
    plan_d = dz.DisaggregatedPlan(
        prefill_instances=n_p,
        decode_instances=n_d,
        gpus_per_instance=gpus,
        decode_concurrency=c_d,
        kv_transfer_s=move,
        link=transfer.link,
        colocated_gpus=fleet.gpus_total,
        at_load=point,
        status=status,
        usd_per_month=month,
        colocated_usd_per_month=fleet.usd_per_month,
    )
    per_hour = None if price is None else total * price
    per_million = None
    if per_hour is not None and rate > 0:
        per_million = per_hour / (rate * w.output_tokens * 3600.0) * 1e6
    return fleet._replace(
        replicas=n_p + n_d,
        gpus_total=total,
        # A decode instance's: the sequences it runs, the requests it ends, its memory.
        concurrency_per_replica=c_d,
        requests_per_s_per_replica=rate / n_d,
        memory=fleet.memory if plan.memory_at is None else plan.memory_at(c_d),
        usd_per_hour=per_hour,
        usd_per_month=month,
        usd_per_million_tokens=per_million,
        meets_slo=status != str(TargetStatus.AT_RISK),
        at_load=point,
        status=status,
        disaggregated=plan_d,
        replicas_range=None,
        usd_per_month_range=None,
    )
