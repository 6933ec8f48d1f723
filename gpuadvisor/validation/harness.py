"""Estimates set against the validation rows, in sample and leave-one-source-out.

Each scored row becomes a scenario (:func:`~gpuadvisor.validation.data.scenario_dict`), which
:func:`gpuadvisor.core.estimation.estimate.estimate` answers for the row's GPU, GPU count and layout; the
figure the source measured is compared with the same figure of the estimate:

- memory (``basis``): ``tensors`` is ``torch.cuda.max_memory_allocated`` (the estimate's tensor
  total), ``device`` an ``nvidia-smi`` reading (the device total: tensors, CUDA context and
  fragmentation), ``model_states`` the ZeRO paper's analytic weights + gradients + optimizer;
- bounds: an out-of-memory run (``lower``) must be estimated above the card, a run that fit
  (``upper``) within it;
- speed: decode tokens/s per user, aggregate output tokens/s, prefill tokens/s (prompt over
  time to first token), training tokens/s (per GPU or in all), TFLOP/s per GPU (MFU x peak),
  MFU, GPU-hours (turned into tokens/s per GPU with the tokens trained), step time.

The error is ``estimate / measured - 1``. A row is *covered* when the measured figure lies in
the estimate's low-high range (speed); the core gives memory as one figure, so a memory row is
covered when it lies within the memory aim (10%) of it. A speed row the estimate calls "does
not fit" gets no speed from the estimate itself; the run did happen, so its speed is computed
with the core's speed functions all the same (memory is scored by the memory and bounds rows)
and the row notes the verdict.

Out of sample (:func:`out_of_sample`): for each source, the engine profiles' efficiency factors
and the speed model's global constants of :data:`FIT_GLOBALS` are refitted (:func:`fit_all`) on
the scored rows of every *other* source, then that source's rows are predicted. Everything starts
from the documented priors (``core.specs.engines.PRIORS``), not from the shipped values (which
were fitted to these rows), so nothing of a held-out source leaks into its prediction; a factor
no remaining row can move keeps its prior. The serving stacks' per-request times, which the
serving rows of those fits also need, are fitted on the other sources too: first under the priors
(for the engine and global fits), then again under the fold's fitted constants (for the held-out
rows), never the shipped values.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, fields, replace
from functools import partial
from typing import Any

import numpy as np

from ..core.errors import InputError
from ..core.estimation.calibration import golden_section_min
from ..core.estimation.communication import training_speed
from ..core.estimation.disaggregated import kv_transfer_s
from ..core.estimation.estimate import Candidate, estimate, resolve_model
from ..core.estimation.memory import MemoryModel
from ..core.estimation.performance import PerformanceEstimate, inference_performance, link, matmul_params
from ..core.estimation.serving_load import engine_lane
from ..core.estimation.serving_sim import SEED, Arrival, Lengths, Load, SimResult, simulate
from ..core.formats.scenario import Scenario, scenario_from_dict
from ..core.specs import constants as core_constants
from ..core.specs import engines as core_engines
from ..core.specs.constants import EVERY_STACK, SpeedConstants, shipped_constants
from ..core.specs.engines import EngineProfile, SpeedModel
from ..core.specs.hardware import GpuCatalog
from ..core.specs.models import ModelSpec
from ..core.specs.presets import ModelCatalog
from .data import (
    GROUPS,
    UNIT_BYTES,
    Row,
    arrival_kind,
    disaggregated_instances,
    paced_interval,
    scenario_dict,
    scenario_engine,
)
from .replay import (
    BenchReplica,
    ClosedLoop,
    CurveMemo,
    benchmark_engine,
    burst,
    closed_loop,
    drain_theta,
    lockstep,
    paced,
)
from .spreads import engine_spreads, spread_from_ratios

#: The memory aim; a memory row within it of the estimate counts as covered.
MEMORY_BAND = 0.10
#: Engine factors that no fit moves: every run takes them from the documented priors (the shipped
#: profiles may hold older fitted values, which must not leak into a held-out prediction). The
#: bandwidth an engine's decode reaches is set by the GPU generation's fitted bandwidth ceiling
#: (:data:`FIT_GLOBALS`) times this prior, so an engine measured by one source only still learns
#: from the other engines' rows on the same GPUs.
PRIOR_ONLY = ("bandwidth_efficiency",)
#: Weight of the pull of each fitted factor towards its prior, per squared log ratio, against the
#: summed absolute log error of the rows.
PRIOR_WEIGHT = 0.5
#: Efficiency factors the fit may move, per engine kind, with their search range.
#: A factor the profile class does not have is skipped.
FIT_FACTORS: dict[str, dict[str, tuple[float, float]]] = {
    "inference": {
        "quantized_bandwidth_factor": (0.15, 1.5),
        "layer_overhead_s": (0.0, 2e-3),
        "prefill_layer_overhead_s": (0.0, 2e-3),
        "prefill_mfu": (0.05, 0.9),
        "decode_mfu": (0.05, 0.9),
    },
    "training": {"mfu": (0.05, 0.9)},
}
#: Per-architecture multipliers a profile may carry (llama.cpp: Metal vs CUDA kernels, prefill on
#: the INT8 peak), fitted like the factors above as ``"<field>:<architecture>"``, with their range.
ARCH_FACTORS: dict[str, tuple[float, float]] = {
    "layer_overhead_by_arch": (0.1, 20.0),
    "prefill_mfu_by_arch": (0.2, 4.0),
}


@dataclass(frozen=True, slots=True)
class Comparison:
    """One row set against its estimate, in the unit of ``unit`` (speed rows: higher is faster)."""

    row: Row
    measured: float
    estimate: float | None  # None: no estimate (does not fit, or the scenario is refused)
    low: float | None
    high: float | None
    unit: str
    omitted: tuple[str, ...]
    note: str = ""

    @property
    def error(self) -> float | None:
        """estimate / measured - 1 (point rows); -1 when a speed row gets no speed."""
        if self.row.bound != "point":
            return None
        if self.estimate is None:
            return -1.0
        return self.estimate / self.measured - 1.0

    @property
    def right(self) -> bool | None:
        """Bounds rows: the estimate is on the right side of the card."""
        if self.row.bound == "point" or self.estimate is None:
            return None if self.row.bound == "point" else False
        return self.estimate > self.measured if self.row.bound == "lower" else self.estimate <= self.measured

    @property
    def covered(self) -> bool:
        if self.estimate is None or self.low is None or self.high is None:
            return False
        return self.low <= self.measured <= self.high


# --- engine profiles for a fit ---------------------------------------------------------------------
def factors_for(profile: EngineProfile) -> dict[str, tuple[float, float]]:
    names = FIT_FACTORS["inference" if profile.kind == "inference" else "training"]
    # A factor the record does not state (None: it follows another) is not fitted.
    found = {k: v for k, v in names.items() if getattr(profile, k, None) is not None}
    if profile.layer_overhead_by_arch:
        # llama.cpp's own streaming model (no per-generation ceiling): its efficiency is fitted.
        # Every other engine keeps its prior: the fitted bandwidth ceiling of each GPU generation
        # (FIT_GLOBALS) carries what the engines share, so an engine held out with its only source
        # still gets what its GPUs stream.
        found["bandwidth_efficiency"] = (0.2, 1.0)
    for field_name, bounds in ARCH_FACTORS.items():
        for arch, _ in getattr(profile, field_name, ()):
            found[f"{field_name}:{arch}"] = bounds
    return found


def get_factor(profile: EngineProfile, name: str) -> float:
    """A fitted factor of ``profile``: a field, or one ``"<field>:<architecture>"`` multiplier."""
    field_name, _, arch = name.partition(":")
    if not arch:
        return float(getattr(profile, name))
    return float(dict(getattr(profile, field_name)).get(arch, 1.0))


def with_factor(profile: EngineProfile, name: str, value: float) -> EngineProfile:
    """``profile`` with one fitted factor (see :func:`get_factor`) set to ``value``."""
    field_name, _, arch = name.partition(":")
    # The field is named at run time, so its type is too: a factor, or the per-architecture pairs.
    changes: dict[str, Any] = {name: value}
    if arch:
        changes = {field_name: tuple((a, value if a == arch else f) for a, f in getattr(profile, field_name))}
    return replace(profile, **changes)


def prior_profile(profile: EngineProfile) -> EngineProfile:
    """The profile with every fitted factor at its documented prior (``core.specs.constants.PRIORS``,
    the engine's record as written): what a fit starts from."""
    prior = core_constants.PRIORS.engines[profile.id]
    names = [*factors_for(profile), *PRIOR_ONLY]
    # The prior's per-architecture multipliers, every one of them.
    current = replace(profile, **{f: getattr(prior, f) for f in ARCH_FACTORS})
    for k in dict.fromkeys([*factors_for(current), *names]):
        current = with_factor(current, k, get_factor(prior, k))
    return current


# --- prediction -----------------------------------------------------------------------------------
class Predictor:
    """Turns rows into scenarios once and answers them under given constants (for fits).

    ``constants`` are the ones a row is answered with when none are given (the shipped ones when
    None); a fit builds its own from them (:meth:`in_force`) and passes them to :meth:`compare`,
    nothing in the core is changed for it."""

    def __init__(
        self, gpus: GpuCatalog, models: ModelCatalog, constants: SpeedConstants | None = None
    ) -> None:
        self.gpus, self.models = gpus, models
        self.shipped = constants or shipped_constants()
        self._prepared: dict[str, tuple[Scenario, ModelSpec, tuple[str, ...]] | str] = {}
        self._layouts: dict[str, tuple[MemoryModel, Candidate] | None] = {}
        self._run_keys: dict[str, Scenario] = {}
        #: The last benchmark figures of each serving run (see :meth:`run_point`).
        self._runs: dict[tuple[object, ...], tuple[EngineProfile, SpeedConstants, float, ClosedLoop]] = {}

    def prepare(self, row: Row) -> tuple[Scenario, ModelSpec, tuple[str, ...]] | str:
        """(scenario, model, omitted facts), or the one-line reason the scenario is refused."""
        if row.id not in self._prepared:
            data, omitted = scenario_dict(row)
            try:
                sc = scenario_from_dict(data)
                model = resolve_model(sc, self.models)
                self._prepared[row.id] = (sc, model, omitted + tuple(sc.warnings))
            except InputError as exc:
                self._prepared[row.id] = f"scenario refused: {exc}"
        return self._prepared[row.id]

    def serving_layout(
        self, row: Row, sc: Scenario, model: ModelSpec
    ) -> tuple[MemoryModel, Candidate] | None:
        """(memory model, candidate) of a serving row's layout, or None where the catalog has no such
        candidate: memory and fit alone, which no engine factor or speed constant moves, so they are
        worked out once per row (a fit asks for the same row many times)."""
        if row.id not in self._layouts:
            est = estimate(sc, self.gpus, self.models, with_advice=False, speed=False, _model=model)
            cand = _candidate(est.candidates, sc)
            self._layouts[row.id] = None if cand is None else (est.memory_model, cand)
        return self._layouts[row.id]

    def in_force(
        self, globals_: SpeedConstants | None = None, profiles: Mapping[str, EngineProfile] | None = None
    ) -> SpeedConstants:
        """The constants a fit answers rows with: the speed model's global constants of ``globals_``
        (the shipped ones when None), the shipped engine profiles with ``profiles`` in their place,
        and the shipped values that no fit of the engines and global constants moves (the serving
        stacks' per-request times unless a fit gives its own, the serving ranges, llama.cpp's host
        stream). With neither, the shipped constants themselves."""
        if globals_ is None and not profiles:
            return self.shipped
        base = globals_ or self.shipped
        return replace(
            base,
            engines={**self.shipped.engines, **(profiles or {})},
            request_overhead_s=self.shipped.request_overhead_s,
            serving_spreads=self.shipped.serving_spreads,
            llama_cpp=self.shipped.llama_cpp,
        )

    def run_key(self, row: Row, sc: Scenario) -> tuple[object, ...]:
        """What a serving row's benchmark figures depend on besides the engine profile, the
        constants and the per-request time: its scenario (less its name, the row's id) and how its
        requests arrived and how much of each prompt the prefix cache held. A run's tokens/s, TTFT
        and ITL rows share it."""
        # The scenario is the row id's (as :meth:`prepare` keeps it); the facts that shape the
        # benchmark are read from the row itself, as the benchmark models read them.
        plain = self._run_keys.get(row.id)
        if plain is None:
            plain = self._run_keys[row.id] = replace(sc, name="")
        return (
            plain,
            row.fact("arrival"),
            row.fact("requests"),
            row.fact("output_tokens_max"),
            row.fact("prefix_cache_hit_rate"),
        )

    def run_point(
        self,
        key: tuple[object, ...],
        engine: EngineProfile,
        constants: SpeedConstants,
        overhead_s: float,
        compute: Callable[[], ClosedLoop],
    ) -> ClosedLoop:
        """The figures of the serving run ``key`` (:meth:`run_key`) with ``engine`` under
        ``constants`` and the per-request time ``overhead_s``: remembered, so that the run's other
        rows (a benchmark reports tokens/s, TTFT and ITL of the same run) and a fit's next row of
        that run take them instead of working the same benchmark out again. Only the last figures
        of each run are kept, valid while the same profile and constants objects are given (a fit's
        trial value is a new object: the first row of the run under it computes)."""
        got = self._runs.get(key)
        if got is not None and got[0] is engine and got[1] is constants and got[2] == overhead_s:
            return got[3]
        point = compute()
        self._runs[key] = (engine, constants, overhead_s, point)
        return point

    def compare(
        self,
        row: Row,
        constants: SpeedConstants | None = None,
        request_overhead_s: float | None = None,
        simulate: bool = False,
        curves: CurveMemo | None = None,
        overheads: Mapping[str, float] | None = None,
    ) -> Comparison:
        """``row`` set against its estimate under ``constants`` (:attr:`shipped` when None) and, for
        a serving row, the per-request time ``request_overhead_s`` (else the stack's of
        ``overheads``, a fit's :func:`fit_request_overheads`, else the constants'). ``curves``: a
        serving row's replica curves kept by a caller that asks for the row again with only the
        per-request time changed (``validation.replay._benchmark_curve``)."""
        constants = constants or self.shipped
        prepared = self.prepare(row)
        measured, unit = measured_value(row)
        if isinstance(prepared, str):
            return Comparison(row, measured, None, None, None, unit, (), prepared)
        sc, model, omitted = prepared
        if row.group == "serving":
            if request_overhead_s is None and overheads is not None:
                request_overhead_s = overhead_for(row, overheads)
            if row.basis == "engine":
                # Measured in the engine's own process: no API server, so none of its per-request time.
                request_overhead_s = 0.0
            return _compare_serving(
                self, row, sc, model, omitted, measured, unit, constants, request_overhead_s, simulate, curves
            )
        speed = row.group in ("inference_speed", "training_speed")
        try:
            est = estimate(
                sc, self.gpus, self.models, with_advice=False, speed=speed, _model=model, constants=constants
            )
        except InputError as exc:
            return Comparison(row, measured, None, None, None, unit, omitted, f"estimate refused: {exc}")
        cand = _candidate(est.candidates, sc)
        if cand is None:
            return Comparison(row, measured, None, None, None, unit, omitted, "no candidate for this layout")
        if not speed:
            bd = cand.memory
            value = {
                "tensors": bd.tensors_total,
                "device": bd.device_total,
                "model_states": bd.model_states,
                "weights": bd.weights - bd.gathered,
            }[row.basis]
            scale = row.fact("scale_to_params")
            if scale:
                value *= float(scale) / model.parameters
            value /= UNIT_BYTES[row.unit]
            return Comparison(
                row,
                measured,
                value,
                value * (1 - MEMORY_BAND),
                value * (1 + MEMORY_BAND),
                unit,
                omitted,
                "" if cand.fits else "estimate: does not fit",
            )
        perf, note = cand.performance, ""
        if perf is None:
            # The run happened, so it fitted: score the speed model on its own, and say so.
            note = (
                f"estimate: does not fit ({cand.memory.device_total / 2**30:.1f} GiB needed of "
                f"{cand.capacity_gib:.1f})"
            )
            perf = _speed_of(est.memory_model, cand, sc, constants)
        speed_estimate = speed_value(row, perf, sc, model)
        if speed_estimate is None:
            return Comparison(
                row, measured, None, None, None, unit, omitted, "the estimate gives no such figure"
            )
        rng = perf.tokens_per_s
        lo, hi = (rng.low / rng.expected, rng.high / rng.expected) if rng.expected > 0 else (1.0, 1.0)
        if row.quantity in TIME_LIKE:
            lo, hi = 1 / hi, 1 / lo  # the faster end is the shorter time
        return Comparison(
            row, measured, speed_estimate, speed_estimate * lo, speed_estimate * hi, unit, omitted, note
        )


def _compare_serving(
    predictor: Predictor,
    row: Row,
    sc: Scenario,
    model: ModelSpec,
    omitted: tuple[str, ...],
    measured: float,
    unit: str,
    constants: SpeedConstants,
    request_overhead_s: float | None = None,
    simulate: bool = False,
    curves: CurveMemo | None = None,
) -> Comparison:
    """A serving benchmark at a stated concurrency, predicted as a closed loop
    (:func:`gpuadvisor.validation.replay.closed_loop`), for a row whose requests were all
    sent at once as a burst (:func:`~gpuadvisor.validation.replay.burst`), for a closed loop of
    fixed-length requests whose clients started together as rounds in step
    (:func:`~gpuadvisor.validation.replay.lockstep`), for a client that offers one request
    per interval as a paced run (:func:`~gpuadvisor.validation.replay.paced`)."""
    try:
        got = predictor.serving_layout(row, sc, model)
        if got is None:
            return Comparison(row, measured, None, None, None, unit, omitted, "no candidate for this layout")
        mm, cand = got
        engine = constants.engine(sc.workload.engine, sc.workload.kind).for_workload(sc.workload)
        # The stack's fitted time when none is given (as the benchmark models take it), named
        # here so that the run's remembered figures are keyed by the time they were made with.
        if request_overhead_s is None:
            request_overhead_s = constants.request_overhead_for(engine.id)
        eff, hw = sc.efficiency, sc.hardware
        replica = BenchReplica(
            mm, cand.gpu, cand.gpu_count, cand.parallelism, engine,
            eff.bandwidth_efficiency, eff.prefill_mfu, hw.gpus_per_node, request_overhead_s, constants,
            float(row.fact("prefix_cache_hit_rate") or 0.0),
        )  # fmt: skip

        def run() -> ClosedLoop:
            n = sc.workload.batch_size
            interval = paced_interval(row.fact("arrival"))
            pools = disaggregated_instances(row.fact("disaggregated"))
            if pools is not None:
                # Disaggregated prefill and decode: replayed pool by pool (no closed form).
                return disaggregated_benchmark(replica, row, n, *pools, hw.gpus_per_node)
            if simulate and is_stated_load(row):
                # A run at a stated load: replayed request by request, as the product answers a
                # stated load (core.estimation.serving_sim).
                return simulated_benchmark(replica, row, n)
            if interval is not None:
                return paced(replica, n, 1.0 / interval, curves)
            if row.fact("arrival") == "burst":
                longest = row.fact("output_tokens_max")
                return burst(replica, n, int(float(longest)) if longest else None, curves)
            if row.fact("arrival") == "lockstep":
                return lockstep(replica, n, curves)
            total, longest = row.fact("requests"), row.fact("output_tokens_max")
            return closed_loop(
                replica,
                n,
                int(float(total)) if total else None,
                int(float(longest)) if longest else None,
                curves,
            )

        point = predictor.run_point(
            (*predictor.run_key(row, sc), simulate), engine, constants, request_overhead_s, run
        )
    except InputError as exc:
        return Comparison(row, measured, None, None, None, unit, omitted, f"estimate refused: {exc}")
    running = point.running
    note = "" if running >= sc.workload.batch_size else f"estimate: {running} sequences fit at once"
    # The core's 80% ranges of a service's figures (the constants' serving_spreads), each on its own residuals.
    if row.quantity == "serving_output_tokens_per_s":
        value = point.tokens_per_s
        return Comparison(
            row, measured, value, *constants.rate_range(value, "tokens_per_s"), unit, omitted, note
        )
    if row.quantity == "serving_ttft_ms":
        value = point.ttft_s * 1000.0
        return Comparison(row, measured, value, *constants.time_range(value, "ttft"), unit, omitted, note)
    value = point.itl_s * 1000.0
    return Comparison(row, measured, value, *constants.time_range(value, "itl"), unit, omitted, note)


def is_stated_load(row: Row) -> bool:
    """A serving run at a stated load below saturation, whose engine's admission is known (the
    row's ``load``): scored on output tokens/s, TTFT and ITL; the others on output tokens/s."""
    return row.group == "serving" and row.fact("load") == "stated"


def median_judged(c: Comparison) -> bool:
    """Whether a row counts in its group's median: every row but the TTFT and ITL of a serving run
    whose admission is not stated (those count for the range's coverage only)."""
    return not (
        c.row.group == "serving"
        and c.row.fact("load") == "unstated"
        and c.row.quantity in ("serving_ttft_ms", "serving_itl_ms")
    )


#: Requests a simulated steady closed loop runs at least, and per client.
SIM_REQUESTS, SIM_ROUNDS = 1200, 10
#: How far a simulated benchmark's answers vary either way around their stated mean, when the
#: source states no longest answer.
JITTER = 0.15


def simulated_benchmark(replica: BenchReplica, row: Row, clients: int) -> ClosedLoop:
    """A closed-loop benchmark replayed by the request-level simulation: ``clients`` clients on the
    engine as the benchmark starts it (:func:`~gpuadvisor.validation.replay.benchmark_engine`:
    its default pool and sequence limit), each sending its next request when its answer ends;
    every prompt of the stated length (its prefix cache holding the share the row states, if any);
    answers of the stated length where the source shows them
    fixed (``lockstep``), exponential up to ``output_tokens_max`` with the stated mean where it is
    given (as :func:`~gpuadvisor.validation.replay.drain` takes them), else the stated mean
    jittered by :data:`JITTER` either way: a closed loop of equal answers would stay in step, and a
    wider spread than the benchmark's (which rarely states it: answers capped at ``max_tokens``)
    would drain its last answers too slowly. A run of stated ``requests`` is replayed whole (its clients start together, its
    last answers drain); a steady loop is measured in its middle. Mean TTFT, mean time between
    tokens (every gap of every request) and output tokens/s, as the benchmarks report them."""
    curve, most, pool = benchmark_engine(replica, clients)
    lane = engine_lane(curve, max(1, min(clients, most)), pool)
    total = row.fact("requests")
    n = int(float(total)) if total else max(SIM_REQUESTS, SIM_ROUNDS * clients)
    load = Load(Arrival.CLOSED, clients=clients, whole_run=bool(total))
    (got,) = simulate([lane], [load], [_bench_lengths(replica, row, n)])
    return ClosedLoop(got.output_tokens_per_s, got.mean_ttft_s, got.itl_token_mean_s, min(clients, most))


def _bench_lengths(replica: BenchReplica, row: Row, n: int) -> Lengths:
    """The prompt and answer lengths of ``n`` requests of a replayed benchmark (see
    :func:`simulated_benchmark`)."""
    w = replica.mm.workload
    prompt = np.full(n, w.prompt_tokens, dtype=np.int64)
    longest = row.fact("output_tokens_max")
    if longest and float(longest) > w.output_tokens:
        theta = drain_theta(w.output_tokens, int(float(longest)))
        u = np.random.default_rng(SEED + 5).random(n)
        out = np.minimum(np.ceil(-theta * np.log1p(-u)), float(longest))
        output = np.maximum(1, out).astype(np.int64)
    elif row.fact("arrival") == "lockstep":  # fixed lengths, as the source's own counts show
        output = np.full(n, w.output_tokens, dtype=np.int64)
    else:
        # The stated mean, jittered (uniform, +-JITTER): answers that stop at their end token or a
        # dataset's own lengths put the clients out of step, which equal answers would not.
        u = np.random.default_rng(SEED + 3).uniform(-JITTER, JITTER, n)
        output = np.maximum(1, np.rint(w.output_tokens * (1.0 + u))).astype(np.int64)
    return Lengths(prompt, output, replica.prefix_cache_hit_rate)


#: Bisection steps of the fixed point between a disaggregated run's prefill and decode pools.
DISAGGREGATED_STEPS = 10


def disaggregated_benchmark(
    replica: BenchReplica, row: Row, clients: int, prefill: int, decode: int, gpus_per_node: int
) -> ClosedLoop:
    """A closed loop of ``clients`` on ``prefill`` prefill and ``decode`` decode instances of the
    replica's layout behind one router (SGLang's or vLLM's disaggregated serving), replayed by the
    request-level simulation as the product sizes such pools
    (:func:`~gpuadvisor.core.estimation.serving_load.disaggregate`).

    Each decode instance runs its share of the clients as a closed loop whose requests arrive
    already prefilled: a client's next request reaches it ``Z`` after its last answer ended, the
    API's per-request time, the prefill (its wait included) and the KV cache's transfer over the
    GPUs' link (:func:`~gpuadvisor.core.estimation.disaggregated.kv_transfer_s`). The prefill
    instances serve the requests the decode pool ends, a stream of that rate (Poisson), each ending
    at its first token. ``Z`` is the fixed point of the two (bisection: a longer ``Z`` slows the
    loop, which shortens the prefill's queue); the run is then replayed whole on the decode pool
    with it. Mean TTFT, time between tokens and output tokens/s as the benchmarks report them."""
    w = replica.mm.workload
    curve, most, pool = benchmark_engine(replica, clients)
    total = row.fact("requests")
    per_decode = max(1, round(clients / decode))
    mm = replica.mm
    bw, latency, _name = link(replica.gpu, 2 * replica.gpu_count, gpus_per_node)
    move = kv_transfer_s(
        float(w.prompt_tokens),
        mm.kv_bytes_per_token_layer * mm.model.num_layers,
        replica.gpu_count,
        bw,
        latency,
    )
    pre_lane = replace(engine_lane(curve, max(1, min(clients, most)), pool), request_overhead_s=0.0)
    dec_base = engine_lane(curve, max(1, min(per_decode, most)), pool)
    steady = max(SIM_REQUESTS, SIM_ROUNDS * per_decode)
    drawn = _bench_lengths(replica, row, steady)
    pre_lengths = Lengths(drawn.prompt, np.ones_like(drawn.output), drawn.cached_share)
    dec_steady = Lengths(drawn.prompt, drawn.output, new_tokens=np.ones_like(drawn.prompt))

    def decode_rate(think: float, lengths: Lengths, whole: bool) -> SimResult:
        lane = replace(dec_base, request_overhead_s=think)
        (got,) = simulate([lane], [Load(Arrival.CLOSED, clients=per_decode, whole_run=whole)], [lengths])
        return got

    def gap(think: float) -> float:
        """The loop's prefill delay at think time ``think``, less ``think``."""
        rate = decode * decode_rate(think, dec_steady, False).requests_per_s / prefill
        (pre,) = simulate([pre_lane], [Load(Arrival.POISSON, requests_per_s=rate)], [pre_lengths])
        return curve.overhead + move + pre.mean_ttft_s - think

    lo = curve.overhead + move + max(curve.ttft1, curve.step1)
    hi = 2.0 * lo
    while gap(hi) > 0 and hi < 1e4:
        lo, hi = hi, 2.0 * hi
    for _ in range(DISAGGREGATED_STEPS):
        mid = 0.5 * (lo + hi)
        if gap(mid) > 0:
            lo = mid
        else:
            hi = mid
    think = 0.5 * (lo + hi)
    n = int(float(total)) if total else steady * decode
    whole = _bench_lengths(replica, row, max(n // decode, per_decode))
    got = decode_rate(
        think, Lengths(whole.prompt, whole.output, new_tokens=np.ones_like(whole.prompt)), bool(total)
    )
    return ClosedLoop(
        decode * got.output_tokens_per_s,
        got.mean_ttft_s,
        got.itl_token_mean_s,
        clients if per_decode <= most else most * decode,
    )


def _speed_of(
    mm: MemoryModel, cand: Candidate, sc: Scenario, constants: SpeedConstants
) -> PerformanceEstimate:
    """Speed of a candidate the estimate judged too big, through the core's public speed functions."""
    w, eff, hw = sc.workload, sc.efficiency, sc.hardware
    engine = constants.engine(w.engine, w.kind).for_workload(w)
    if w.is_training:
        return training_speed(
            mm,
            cand.gpu,
            cand.the_layout if cand.layout is None else cand.layout,
            engine,
            mfu=eff.mfu,
            gpus_per_node=hw.gpus_per_node,
            constants=constants,
        )
    return inference_performance(
        mm,
        cand.gpu,
        cand.gpu_count,
        cand.parallelism,
        engine,
        bw_eff=eff.bandwidth_efficiency,
        prefill_mfu=eff.prefill_mfu,
        gpus_per_node=hw.gpus_per_node,
        constants=constants,
    )


def _candidate(candidates: Sequence[Candidate], sc: Scenario) -> Candidate | None:
    hw = sc.hardware
    found = [c for c in candidates if c.gpu.id == hw.gpu and c.gpu_count == hw.gpu_count]
    if not found:
        return None
    # Without a stated layout, the estimate's fastest fitting one (what a user would pick).
    fitting = [(c, c.performance) for c in found if c.fits and c.performance is not None]
    if fitting:
        return max(fitting, key=lambda cp: cp[1].tokens_per_s.expected)[0]
    return next((c for c in found if c.fits), found[0])


def measured_value(row: Row) -> tuple[float, str]:
    """The measured figure in the unit compared (GPU-hours become tokens/s per GPU)."""
    if row.quantity == "train_gpu_hours":
        return float(row.fact("tokens_trained")) / (row.value * 3600.0), "tokens/s per GPU"
    unit = {
        "train_tokens_per_s_per_gpu": "tokens/s per GPU",
        "decode_tokens_per_s_per_user": "tokens/s per user",
        "output_tokens_per_s": "output tokens/s",
        "prefill_tokens_per_s": "prefill tokens/s",
        "decode_tokens_per_s": "decode tokens/s (all sequences)",
    }
    return row.value, unit.get(row.quantity, row.unit)


def published_tflops_ratio(model: ModelSpec, seq_len: int) -> float:
    """Published TFLOPS per GPU over the estimate's for the same speed: how many more FLOPs per token
    the published convention counts.

    Megatron-LM's ``num_floating_point_operations`` (megatron/training/training.py; appendix of
    Narayanan et al. 2021, arXiv:2104.04473), which NeMo, Megatron-Bridge and Megatron-DeepSpeed
    report TFLOPS with, counts the attention core over the whole sequence, ``4 L d_q s`` FLOPs per
    token in the forward pass, where a causal kernel computes, and the estimate counts, the keys
    before each position (``ModelSpec.prefill_attended_tokens``: ``s / 2``)::

        ratio = (2 N_mm + 4 L d_q s) / (2 N_mm + 4 L d_q attended(s))

    Forward, backward and recomputation multiply both sides alike. About 1.01 at 2,048 tokens of a
    175B model, 1.07 at 4,096 tokens of a 7B model, close to 2 at a million tokens. Megatron-LM
    itself counts the causal half since 2025-03-06 (NVIDIA/Megatron-LM commit 8873b55, "Fixes in
    number of floating-point operation estimates for MoE and attention layer"): rows of its later
    releases state ``tflops_attention`` ``causal`` and are compared with no conversion."""
    dense = 2.0 * matmul_params(model)
    attn = 4.0 * model.num_layers * model.q_dim
    return (dense + attn * seq_len) / (dense + attn * model.prefill_attended_tokens(seq_len))


def speed_value(row: Row, perf: PerformanceEstimate, sc: Scenario, model: ModelSpec) -> float | None:
    """The estimate's figure for the row's quantity (TFLOPS in the published convention,
    :func:`published_tflops_ratio`)."""
    w, n = sc.workload, sc.hardware.gpu_count or 1
    q = row.quantity
    if q in ("train_tokens_per_s_per_gpu", "train_gpu_hours"):
        return perf.tokens_per_s.expected / n
    if q == "train_tokens_per_s" or q == "output_tokens_per_s":
        return perf.tokens_per_s.expected
    if q == "train_tflops_per_gpu":
        # Megatron-LM's own count takes the causal half of the attention since 2025-03-06, as the
        # estimate does: no conversion then (the row's tflops_attention).
        causal = row.fact("tflops_attention") == "causal"
        ratio = 1.0 if causal else published_tflops_ratio(model, w.seq_len)
        return perf.mfu * perf.peak_tflops * ratio if perf.mfu else None
    if q in ("train_mfu", "train_hfu"):
        # The estimate's MFU counts the FLOPs the GPU runs, recomputation included; a stack that
        # counts the attention core over the whole sequence (the row's tflops_attention full:
        # nanotron's get_flops) reports that many more FLOPs for the same speed.
        full = row.fact("tflops_attention") == "full"
        ratio = published_tflops_ratio(model, w.seq_len) if full else 1.0
        return perf.mfu * 100.0 * ratio if perf.mfu else None
    if q == "train_step_time_s":
        global_batch = float(row.fact("global_batch") or w.batch_size * n)
        return global_batch * w.seq_len / perf.tokens_per_s.expected
    if q == "decode_tokens_per_s_per_user":
        return perf.tokens_per_s_per_user
    if q == "decode_tokens_per_s":
        return perf.tokens_per_s_per_user * w.batch_size if perf.tokens_per_s_per_user else None
    if q == "decode_ms_per_token":
        return 1000.0 / (perf.tokens_per_s_per_user * w.batch_size) if perf.tokens_per_s_per_user else None
    if q == "request_latency_s":
        return w.batch_size * w.output_tokens / perf.tokens_per_s.expected
    if q == "time_to_first_token_ms":
        return perf.time_to_first_token_s * 1000.0 if perf.time_to_first_token_s else None
    if q == "prefill_tokens_per_s":
        ttft = perf.time_to_first_token_s
        return w.prompt_tokens / ttft if ttft else None
    return None


# --- fitting --------------------------------------------------------------------------------------
def _log_error(c: Comparison) -> float | None:
    """|ln(estimate / measured)|, or None for a row that got no estimate."""
    return abs(math.log(c.estimate / c.measured)) if c.estimate and c.estimate > 0 else None


def _mean_log_error(logs: Iterable[float | None]) -> float:
    kept = [x for x in logs if x is not None]
    return statistics.fmean(kept) if kept else 0.0


def _loss(comparisons: Iterable[Comparison]) -> float:
    """Mean absolute log error over rows that got an estimate (robust to a single outlier)."""
    return _mean_log_error(_log_error(c) for c in comparisons)


def fit_engine(
    profile: EngineProfile,
    rows: Sequence[Row],
    predictor: Predictor,
    passes: int = 4,
    iterations: int = 10,
    base: SpeedConstants | None = None,
    overheads: Mapping[str, float] | None = None,
) -> EngineProfile:
    """Coordinate descent on the profile's free factors (golden section on each, in its range)
    minimising the mean absolute log error over ``rows`` (speed rows run with this engine), each
    trial answered under ``base`` (the predictor's shipped constants when None) with the trial
    profile in place, and the serving rows with the per-request times ``overheads``.

    A factor the rows cannot move (same loss at both ends of its range and at its prior) keeps its
    prior; the passes stop early once a whole pass improves the loss by less than 0.1%."""
    base = base or predictor.shipped
    current = prior_profile(profile)
    if not rows:
        return current
    ranges = factors_for(current)
    cache: dict[tuple[float, ...], float] = {}

    prior = prior_profile(profile)

    def pull(trial: EngineProfile) -> float:
        # Each factor is pulled towards its documented prior:
        # PRIOR_WEIGHT x ln(value / prior)^2 against the rows' summed |log error|, so a factor the
        # rows barely constrain (prefill GEMM efficiency from batch-1 decode rows) stays near it.
        total = 0.0
        for n in ranges:
            p0 = get_factor(prior, n)
            eps = 0.05 * p0 if p0 > 0 else 1e-6
            total += math.log((get_factor(trial, n) + eps) / (p0 + eps)) ** 2
        return PRIOR_WEIGHT * total / len(rows)

    def loss_with(name: str, value: float) -> float:
        trial = with_factor(current, name, value)
        key = tuple(get_factor(trial, n) for n in ranges)
        if key not in cache:
            constants = base.with_engines(trial=trial)
            cache[key] = _loss(predictor.compare(r, constants, overheads=overheads) for r in rows) + pull(
                trial
            )
        return cache[key]

    frozen: set[str] = set()
    best_loss = loss_with(next(iter(ranges)), get_factor(current, next(iter(ranges))))
    for _ in range(passes):
        start_loss = best_loss
        for name, (lo, hi) in ranges.items():
            if name in frozen:
                continue
            now = get_factor(current, name)
            at_now, at_lo, at_hi = loss_with(name, now), loss_with(name, lo), loss_with(name, hi)
            if abs(at_lo - at_hi) < 1e-4 and abs(at_now - at_lo) < 1e-4:
                frozen.add(name)  # the rows cannot tell this factor: it keeps its prior
                continue
            best = golden_section_min(partial(loss_with, name), lo, hi, tol=0.0, max_iter=iterations)
            best_loss, value = min((loss_with(name, best), best), (at_now, now), (at_lo, lo), (at_hi, hi))
            current = with_factor(current, name, value)
        if start_loss - best_loss < 1e-3 * max(start_loss, 1e-9):
            break
    return current


#: Serving figures the speed model is fitted to besides the speed rows: the inter-token latency
#: (the decode step with the prefill chunks it carries at that concurrency, the roofline of a
#: batch's decode), the output tokens/s (the same step plus each request's prefill and the
#: per-request time) and the time to first token (the prompt's prefill, the queue of prompts ahead
#: and the per-request time), of closed loops (steady or in step) and of bursts alike (a burst is
#: modelled as one wave of requests, :func:`gpuadvisor.validation.replay.burst`). The
#: per-request times are fitted after them (:func:`fit_request_overheads`). Until 2026-12-04 the
#: time to first token stayed out, as mostly queue and host time; with it in, the prefill factors
#: learn from the figure a prefill sets most directly. See docs/estimation.md, "Engine profiles",
#: for what each choice did out of sample.
FIT_SERVING_QUANTITIES = ("serving_itl_ms", "serving_output_tokens_per_s", "serving_ttft_ms")
#: How a fitted serving row's requests arrived: runs whose pace the engine alone sets. A paced
#: client (``paced:<s>``, one request offered per interval) is predicted and scored but not fitted:
#: where its pace binds, its figures are the client's schedule, not the engine's speed.
FIT_ARRIVALS = ("closed_loop", "burst", "lockstep")
#: Sources whose rows are predicted and scored (they count in every median, coverage and table) but
#: take part in no fit: neither the engine profiles and global constants nor the per-request time.
#: Each with the reason, which docs/validation.md prints.
SCORE_ONLY_SOURCES: dict[str, str] = {
    "nim-dli-sizing-dataset": (
        "an older NIM of unstated release with a per-request time near zero (its single-client "
        "TTFTs are the prefill and one step), where today's stacks take about 50 ms; its 72 "
        "tokens/s and ITL rows would weigh as much in the fit of today's engine profiles as the 78 "
        "of all other sources together. Its fixed-length closed loops run in step (arrival "
        "lockstep), which the harness predicts as such"
    ),
    "accelmark": (
        "one benchmark suite whose 241 tokens/s and ITL rows (most of them one release, vLLM 0.7.3, "
        "driven in the engine's own process) would outweigh in the fit of today's engine profiles "
        "the 223 of all other sources together; its vLLM 0.7.3 rows run the V0 release line "
        "(vllm-v0, whose host time per sequence is a prior from vLLM issue #6801, not a fit), and "
        "its in-process async engine's closed loops and per-request time are slower than any "
        "model here (a 0.5B model at a quarter to nine tenths of the estimate). Fitted, it moved "
        "the inference group's out-of-sample median from 9.2% to 12.7% (before the release line)"
    ),
    "gpustack-qwen3-8b-eagle3": (
        "speculative decoding (EAGLE-3), a mechanism no fitted constant describes; scored before "
        "anything was fitted to it (issue 46) and kept out of the fits so that its score stays "
        "prospective: its acceptance rate is not stated, and fitting the engine to its rows would "
        "fold the acceptance into SGLang's factors"
    ),
    "dstack-pd-ratio": (
        "disaggregated prefill and decode, replayed pool by pool (harness.disaggregated_benchmark); "
        "scored before anything was fitted to it (issue 46) and kept out of the fits so that its "
        "score stays prospective: its 81 rows on one model and one GPU would otherwise weigh on "
        "SGLang's factors as much as all of SGLang's colocated rows"
    ),
}


def is_fit_row(row: Row) -> bool:
    """Whether a scored row takes part in the speed fits (speed rows and the serving rows'
    :data:`FIT_SERVING_QUANTITIES` of :data:`FIT_ARRIVALS`), none of :data:`SCORE_ONLY_SOURCES`."""
    if row.source_id in SCORE_ONLY_SOURCES:
        return False
    return row.group in ("inference_speed", "training_speed") or (
        row.group == "serving"
        and row.quantity in FIT_SERVING_QUANTITIES
        and arrival_kind(row.fact("arrival")) in FIT_ARRIVALS
    )


def speed_rows(rows: Iterable[Row]) -> list[Row]:
    """The scored rows the engine profiles and global constants are fitted to."""
    return [r for r in rows if r.scored and is_fit_row(r)]


def fit_engines(
    rows: Sequence[Row], predictor: Predictor, engine_ids: Iterable[str] | None = None
) -> dict[str, EngineProfile]:
    """Profiles fitted to the scored speed ``rows`` (each engine on its own rows) under the
    predictor's shipped global constants, by engine id.

    Engines without rows get their prior. A release line of an engine
    (``core.specs.engines.RELEASE_LINES``) is not fitted: it is derived from its engine's fitted
    profile, and its own rows take no part in that fit."""
    ids = _base_ids(engine_ids if engine_ids is not None else predictor.shipped.engines)
    by_engine: dict[str, list[Row]] = {}
    for r in speed_rows(rows):
        by_engine.setdefault(scenario_engine(r), []).append(r)
    return core_engines.with_release_lines(
        {e: fit_engine(predictor.shipped.engines[e], by_engine.get(e, []), predictor) for e in ids}
    )


def _base_ids(engine_ids: Iterable[str]) -> list[str]:
    """The engines to fit for ``engine_ids``: each release line's engine in its place."""
    return list(dict.fromkeys(core_engines.engine_lineage(e) for e in engine_ids))


#: First-token rows a stack needs for a per-request time of its own.
REQUEST_OVERHEAD_MIN_TTFT_ROWS = 3
#: The range a per-request time is searched in (s).
REQUEST_OVERHEAD_RANGE = (0.0, 0.2)


def _carries_request_overhead(row: Row) -> bool:
    """A scored serving row of a fitted source measured through an API server (not in the engine's
    process, where no API per-request time arises)."""
    return (
        row.scored
        and row.group == "serving"
        and row.source_id not in SCORE_ONLY_SOURCES
        and row.basis != "engine"
    )


def fit_request_overhead(
    rows: Sequence[Row],
    predictor: Predictor,
    iterations: int = 14,
    curves: dict[str, CurveMemo] | None = None,
    constants: SpeedConstants | None = None,
) -> float:
    """The serving engines' per-request time (``SpeedConstants.request_overhead_s``) that minimises
    the mean absolute log error over the scored serving ``rows`` measured through an API server,
    answered under ``constants`` (the predictor's shipped ones when None; golden section in
    :data:`REQUEST_OVERHEAD_RANGE`; :data:`SCORE_ONLY_SOURCES` and rows taken in the engine's
    process left out); the common value of ``constants`` when there are none.

    Only the per-request time changes from one trial to the next, so each row's replica curves are
    built once and reused (``curves``, by row id: the caller's, when it fits again over the same
    rows under the same constants)."""
    constants = constants or predictor.shipped
    serving_rows = [r for r in rows if _carries_request_overhead(r)]
    if not serving_rows:
        return constants.request_overhead_s[EVERY_STACK]
    cache: dict[float, float] = {}
    memo: dict[str, CurveMemo] = {} if curves is None else curves

    def loss(value: float) -> float:
        if value not in cache:
            cache[value] = _loss(
                predictor.compare(r, constants, value, curves=memo.setdefault(r.id, {})) for r in serving_rows
            )
        return cache[value]

    lo, hi = REQUEST_OVERHEAD_RANGE
    best = golden_section_min(loss, lo, hi, tol=0.0, max_iter=iterations)
    return min((loss(v), v) for v in (best, lo, hi))[1]


def fit_request_overheads(
    rows: Sequence[Row],
    predictor: Predictor,
    iterations: int = 14,
    stacks: Iterable[str] | None = None,
    constants: SpeedConstants | None = None,
) -> dict[str, float]:
    """The per-request time of every serving stack with at least :data:`REQUEST_OVERHEAD_MIN_TTFT_ROWS`
    scored first-token rows (:func:`fit_request_overhead` over that engine's serving rows alone,
    under ``constants``), by engine id, and under :data:`EVERY_STACK` the common value over all of
    them (for the other stacks).

    A stack with that many first-token rows at a stated load (:func:`is_stated_load`: a closed loop
    of stated clients whose admission the simulation replays) is fitted on those runs alone: where
    the admission is not stated (bursts, rates past saturation), a first token's wait is mostly the
    queue, which the replay can only guess, and a per-request time fitted there takes up what the
    guess misses (vLLM's: 41 ms over all its runs, 6 ms over its runs at a stated load).

    With ``stacks`` (engine ids), only what those stacks' rows need is fitted: their own values,
    and the common one only when one of them has too few first-token rows for its own."""
    serving_rows = [r for r in rows if _carries_request_overhead(r)]
    by_engine: dict[str, list[Row]] = {}
    for r in serving_rows:
        by_engine.setdefault(stack_of(r), []).append(r)
    own = {
        e
        for e, mine in by_engine.items()
        if sum(r.quantity == "serving_ttft_ms" for r in mine) >= REQUEST_OVERHEAD_MIN_TTFT_ROWS
    }
    wanted = set(by_engine) if stacks is None else set(stacks)
    out: dict[str, float] = {}
    curves: dict[str, CurveMemo] = {}  # the same rows under the same constants: built once
    if stacks is None or wanted - own:
        out[EVERY_STACK] = fit_request_overhead(serving_rows, predictor, iterations, curves, constants)
    for engine_id in sorted(own & wanted):
        mine = by_engine[engine_id]
        stated = [r for r in mine if is_stated_load(r)]
        if sum(r.quantity == "serving_ttft_ms" for r in stated) >= REQUEST_OVERHEAD_MIN_TTFT_ROWS:
            mine = stated
        out[engine_id] = fit_request_overhead(mine, predictor, iterations, curves, constants)
    return out


def overhead_for(row: Row, overheads: Mapping[str, float] | None) -> float | None:
    """The per-request time ``row``'s stack gets from :func:`fit_request_overheads` (None: the shipped)."""
    if overheads is None:
        return None
    engine_id = stack_of(row)
    return overheads[engine_id] if engine_id in overheads else overheads[EVERY_STACK]


def stack_of(row: Row) -> str:
    """The serving stack whose per-request time ``row`` takes: its engine (a release line's engine)."""
    engine_id = scenario_engine(row)
    return core_engines.engine_lineage(engine_id)


# --- runs -----------------------------------------------------------------------------------------
def in_sample(rows: Sequence[Row], predictor: Predictor, fitted: bool = False) -> list[Comparison]:
    """Every row against the shipped constants (or, with ``fitted``, profiles fitted to all rows)."""
    constants = predictor.in_force(profiles=fit_engines(rows, predictor)) if fitted else None
    return [predictor.compare(r, constants, simulate=True) for r in rows]


#: Global constants of the speed model that every fit refits with the engine factors, with their
#: search range (``core.specs.engines.SpeedConstants``; a fit starts from the documented priors).
#: (``attention_efficiency`` is not fitted: it comes from the FlashAttention-2/3 papers' published
#: kernel throughput, see docs/estimation.md.)
FIT_GLOBALS: dict[str, tuple[float, float]] = {
    "bandwidth_ceiling:ada": (0.5, 1.6),
    "bandwidth_ceiling:ampere": (0.5, 1.6),
    "bandwidth_ceiling:hopper": (0.5, 1.6),
    "host_exposed_share": (0.0, 1.0),
    "gpu_kernel_s": (0.3e-6, 10e-6),
    "kv_bandwidth_factor": (0.2, 1.5),
    "gemm_tokens_half": (1.0, 256.0),
    "gemm_width_half": (32.0, 2048.0),
    "graph_step_host_s:python": (5e-5, 8e-3),
    "graph_step_host_s:cpp": (2e-5, 3e-3),
    "prompt_host_s:python": (2e-4, 3e-2),
    "prompt_host_s:cpp": (2e-5, 1e-2),
    "moe_kernels_per_layer": (1.0, 80.0),
    "moe_expert_efficiency": (0.15, 1.0),
}
#: Global constants that only the inference of a mixture-of-experts model reads.
MOE_GLOBALS = ("moe_kernels_per_layer", "moe_expert_efficiency")


def _global(constants: SpeedConstants, name: str) -> float:
    """A global constant by name; ``mapping:key`` reads one entry of a per-generation table."""
    if ":" in name:
        field, key = name.split(":", 1)
        return float(getattr(constants, field).get(key, 1.0))
    return float(getattr(constants, name))


def _with_global(constants: SpeedConstants, name: str, value: float) -> SpeedConstants:
    if ":" in name:
        field, key = name.split(":", 1)
        changes: dict[str, Any] = {field: {**getattr(constants, field), key: value}}
    else:
        changes = {name: value}
    return replace(constants, **changes)


def fit_globals(
    rows: Sequence[Row],
    predictor: Predictor,
    profiles: Mapping[str, EngineProfile],
    start: SpeedConstants | None = None,
    iterations: int = 12,
    overheads: Mapping[str, float] | None = None,
) -> SpeedConstants:
    """The global constants (:data:`FIT_GLOBALS`) fitted over the scored speed ``rows`` with the
    engines' ``profiles`` held fixed: coordinate descent, one golden-section search per constant
    (on its logarithm; ``host_exposed_share`` on the share itself), minimising the mean absolute
    log error. Starts from the documented priors (``core.specs.engines.PRIORS``); a constant no
    row moves keeps its prior."""
    constants = start or core_constants.PRIORS
    mine = global_rows(rows)
    if not mine:
        return constants
    cache: dict[tuple[str, float], float] = {}

    def logs_at(trial: SpeedConstants, base: list[float | None], which: Iterable[int]) -> list[float | None]:
        """``base`` with the rows ``which`` worked out again under ``trial``."""
        logs = list(base)
        constants = predictor.in_force(trial, profiles)
        for i in which:
            logs[i] = _log_error(predictor.compare(mine[i], constants, overheads=overheads))
        return logs

    # While one constant is searched, a row that does not read it (:func:`rows_reading`) keeps its
    # error from before the search; only the others are worked out again for each trial value. The
    # loss is the same sum, in the same order, as working out every row each time.
    every = range(len(mine))
    base: list[float | None] = [None] * len(mine)
    reading: Sequence[int] = every

    def loss_with(name: str, value: float) -> float:
        key = (name, round(value, 12))
        if key not in cache:
            cache[key] = _mean_log_error(logs_at(_with_global(constants, name, value), base, reading))
        return cache[key]

    for name, (lo, hi) in FIT_GLOBALS.items():
        cache.clear()
        now = _global(constants, name)
        subset = rows_reading(name, mine, predictor)
        unknown: list[float | None] = [None] * len(mine)
        base, reading = (unknown, every) if subset is None else (logs_at(constants, base, every), subset)
        linear = name == "host_exposed_share"
        to_x, from_x = (float, float) if linear else (math.log, math.exp)

        def loss_at(x: float, n: str = name, f: Callable[[float], float] = from_x) -> float:
            return loss_with(n, f(x))

        best = golden_section_min(loss_at, to_x(lo), to_x(hi), tol=0.0, max_iter=iterations)
        candidates = [(loss_with(name, v), v) for v in (from_x(best), now)]
        value = min(candidates)[1]
        constants = _with_global(constants, name, value)
    return replace(constants, provenance=f"fitted over {len(mine)} speed rows")


def rows_reading(name: str, rows: Sequence[Row], predictor: Predictor) -> list[int] | None:
    """The indexes of ``rows`` whose estimate can read the global constant ``name`` of
    :data:`FIT_GLOBALS`, where that is fewer than all: an entry of the bandwidth ceilings is read
    only for a GPU of its architecture, an entry of the graph-step host times only for an engine of
    its runtime, the MoE constants (:data:`MOE_GLOBALS`) only for the inference of an MoE model
    (``core.estimation.performance``, ``core.estimation.serving``). None: every row.
    (tests/core/test_validation.py moves each such entry and checks that no other row moves.)"""
    field, _, key = name.partition(":")
    if field not in ("bandwidth_ceiling", "graph_step_host_s", "prompt_host_s", *MOE_GLOBALS):
        return None
    out = []
    for i, r in enumerate(rows):
        prepared = predictor.prepare(r)
        if isinstance(prepared, str):
            continue  # refused: no estimate to read anything
        sc = prepared[0]
        if field in MOE_GLOBALS:
            reads = prepared[1].is_moe and sc.workload.kind == "inference"
        elif field == "bandwidth_ceiling":
            gpu = sc.hardware.gpu
            try:
                reads = gpu is None or predictor.gpus.get(gpu).architecture == key
            except InputError:
                reads = True
        else:
            reads = core_engines.record_of(sc.workload.engine, sc.workload.kind).runtime == key
        if reads:
            out.append(i)
    return out


#: Engines with a speed model of their own that reads none of the global constants (llama.cpp:
#: :func:`gpuadvisor.core.estimation.performance.llamacpp_performance`): their rows neither move
#: the globals nor depend on them.
OWN_MODEL_ENGINES = tuple(p.id for p in core_engines.RECORDS.values() if p.speed_model != SpeedModel.ROOFLINE)


def global_rows(rows: Iterable[Row]) -> list[Row]:
    """The scored speed rows the global constants act on (every engine but :data:`OWN_MODEL_ENGINES`)."""
    return [r for r in speed_rows(rows) if scenario_engine(r) not in OWN_MODEL_ENGINES]


#: Fits already made within one :func:`out_of_sample` run, by what they depend on (the rows they
#: use and the constants in force): holding out a source that has none of an engine's rows, or no
#: row the globals act on, gives the same fit, which is then made once.
_MEMO: dict[tuple[object, ...], object] | None = None


def _overheads_key(overheads: Mapping[str, float] | None) -> tuple[tuple[str, float], ...]:
    """The per-request times a fit answers serving rows with, as part of a memo key."""
    return tuple(sorted(overheads.items())) if overheads is not None else ()


def _memo(key: tuple[object, ...], compute: Callable[[], Any]) -> Any:
    if _MEMO is None:
        return compute()
    if key not in _MEMO:
        _MEMO[key] = compute()
    return _MEMO[key]


def _fit_engines_memo(
    rows: Sequence[Row],
    predictor: Predictor,
    engine_ids: Iterable[str],
    globals_: SpeedConstants,
    overheads: Mapping[str, float] | None,
) -> dict[str, EngineProfile]:
    """:func:`fit_engines` under the global constants ``globals_`` and the per-request times
    ``overheads``, one engine at a time, each remembered by its own rows and what it is fitted
    under."""
    by_engine: dict[str, list[Row]] = {}
    for r in speed_rows(rows):
        by_engine.setdefault(scenario_engine(r), []).append(r)
    base = predictor.in_force(globals_)
    under = repr(globals_)
    out = {}
    for e in _base_ids(engine_ids):
        mine = by_engine.get(e, [])
        # Only an engine with serving rows reads the per-request times: the others' fits are shared
        # by every fold that keeps their rows, whatever per-request times it fitted.
        per_request = _overheads_key(overheads) if any(r.group == "serving" for r in mine) else ()
        key = ("engine", e, tuple(r.id for r in mine), under, per_request)
        out[e] = _memo(
            key,
            partial(
                fit_engine, predictor.shipped.engines[e], mine, predictor, base=base, overheads=overheads
            ),
        )
    return core_engines.with_release_lines(out)


def fit_all(
    rows: Sequence[Row],
    predictor: Predictor,
    engine_ids: Iterable[str] | None = None,
    overheads: Mapping[str, float] | None = None,
) -> tuple[SpeedConstants, dict[str, EngineProfile]]:
    """Global constants and engine profiles fitted over ``rows`` (serving rows answered with the
    per-request times ``overheads``, the predictor's shipped ones when None): the engines under the
    prior globals (``PRIORS``, never the shipped values, which were fitted to every row), then the
    globals under those engines, then the engines again under the fitted globals (the profiles
    returned are for ``engine_ids``, default every engine). The engines of
    :data:`OWN_MODEL_ENGINES` take no part in the globals' fit. Returns (the fitted global
    constants, the profiles): :meth:`Predictor.in_force` puts them together."""
    ids = list(engine_ids) if engine_ids is not None else list(predictor.shipped.engines)
    mine = global_rows(rows)
    priors = core_constants.PRIORS
    if all(e in OWN_MODEL_ENGINES for e in ids):
        constants = priors  # not read by these engines' speed model
    else:
        used = {scenario_engine(r) for r in mine}

        def globals_fit() -> SpeedConstants:
            first = _fit_engines_memo(rows, predictor, sorted(used), priors, overheads)
            return fit_globals(rows, predictor, first, overheads=overheads)

        constants = _memo(("globals", tuple(r.id for r in mine), _overheads_key(overheads)), globals_fit)
    profiles = _fit_engines_memo(rows, predictor, ids, constants, overheads)
    return constants, profiles


#: Environment variable that sets how many processes :func:`out_of_sample` spreads its folds over
#: (default: one per CPU this process may run on; 1: no extra process).
WORKERS_ENV = "GPUADVISOR_VALIDATION_WORKERS"


def validation_workers() -> int:
    """How many processes :func:`out_of_sample` uses: :data:`WORKERS_ENV`, else the CPUs this process
    may run on. Extra processes are forked (a copy of this one, with every constant in force), so
    where the platform cannot fork the folds run here, one after another."""
    raw = os.environ.get(WORKERS_ENV, "").strip()
    if raw:
        try:
            return max(1, int(raw))
        except ValueError:
            raise ValueError(f"{WORKERS_ENV} must be a whole number of processes, not {raw!r}") from None
    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def out_of_sample(rows: Sequence[Row], predictor: Predictor, workers: int | None = None) -> list[Comparison]:
    """Leave-one-source-out: each source's rows predicted by the global constants and engine
    profiles fitted (:func:`fit_all`) without that source.

    The folds are independent, so they are spread over ``workers`` processes (default
    :func:`validation_workers`); each process remembers its own fits (:data:`_MEMO`) across the folds
    it takes. A fit depends only on its rows and the constants in force, so the result is the same
    with any number of processes."""
    global _MEMO
    scored = [r for r in rows if r.scored]
    sources = list(dict.fromkeys(r.source_id for r in rows))
    n = min(validation_workers() if workers is None else max(1, workers), len(sources))
    out: dict[str, Comparison] = {}
    if n <= 1:
        _MEMO = {}
        try:
            for source in sources:
                out.update(_fold(rows, scored, predictor, source))
        finally:
            _MEMO = None
    else:
        by_id = {r.id: r for r in rows}
        ctx = multiprocessing.get_context("fork")
        # The forked processes find the rows and the predictor here; nothing is pickled on the way in.
        global _FORK_STATE
        _FORK_STATE = (rows, scored, predictor)
        try:
            with ProcessPoolExecutor(max_workers=n, mp_context=ctx, initializer=_start_worker) as pool:
                for got in pool.map(_fold_in_worker, _longest_first(rows, sources)):
                    for row_id, fields_ in got:
                        out[row_id] = Comparison(by_id[row_id], *fields_)
        finally:
            _FORK_STATE = None
    return [out[r.id] for r in rows]


def _longest_first(rows: Sequence[Row], sources: Sequence[str]) -> list[str]:
    """The folds in the order the processes take them: those that refit engine profiles (the
    longest, by the number of engines they refit and then their serving rows) first, so that no
    process is left with a long fold while the others idle."""

    def cost(source: str) -> tuple[int, int]:
        held = [r for r in rows if r.source_id == source]
        return len(_refitted_engines(held)), sum(r.group == "serving" for r in held)

    return sorted(sources, key=cost, reverse=True)


def _refitted_engines(held: Sequence[Row]) -> set[str]:
    """The engines whose profiles a fold refits: those of the held-out rows that take part in the fits
    (scored rows only: an unscored row of an engine the product has no profile for, such as MLX's,
    names no engine to refit)."""
    return {scenario_engine(r) for r in held if r.scored and is_fit_row(r)}


#: (rows, scored rows, predictor) of the :func:`out_of_sample` run whose forked processes read them.
_FORK_STATE: tuple[Sequence[Row], Sequence[Row], Predictor] | None = None


def _start_worker() -> None:
    global _MEMO
    _MEMO = {}


def _fold_in_worker(source: str) -> list[tuple[str, tuple[Any, ...]]]:
    """One fold in a forked process; the comparisons travel back without their rows."""
    assert _FORK_STATE is not None
    rows, scored, predictor = _FORK_STATE
    got = _fold(rows, scored, predictor, source)
    return [(row_id, _comparison_fields(c)[1:]) for row_id, c in got.items()]


def _comparison_fields(c: Comparison) -> tuple[Any, ...]:
    """A comparison's fields in order, not copied (``dataclasses.astuple`` would copy the row)."""
    return tuple(getattr(c, f.name) for f in fields(c))


def _fold(
    rows: Sequence[Row], scored: Sequence[Row], predictor: Predictor, source: str
) -> dict[str, Comparison]:
    """The rows of ``source`` predicted by the constants, profiles and per-request times fitted to
    the scored rows of every other source."""
    held = [r for r in rows if r.source_id == source]
    rest = [r for r in scored if r.source_id != source]
    engines = _refitted_engines(held)
    fold: SpeedConstants | None = None
    profiles: dict[str, EngineProfile] | None = None
    if engines:
        fold, profiles = fit_all(rest, predictor, engines, _prior_overheads(rest, predictor))
    # A serving source's rows get the per-request times fitted to the other sources' serving rows
    # (under the fold's global constants and the shipped profiles, then answered with its profiles).
    stacks = {stack_of(r) for r in held if r.group == "serving"}
    overheads = (
        fit_request_overheads(rest, predictor, stacks=stacks, constants=predictor.in_force(fold))
        if stacks
        else None
    )
    constants = predictor.in_force(fold, profiles)
    if host_stream_rows(held):
        # llama.cpp's host stream, like every other constant, from the other sources' split runs.
        constants = with_host_stream(constants, fit_host_stream(rest, predictor, constants)[0])
    return {r.id: predictor.compare(r, constants, overhead_for(r, overheads), simulate=True) for r in held}


def _prior_overheads(rows: Sequence[Row], predictor: Predictor) -> dict[str, float]:
    """Every stack's per-request time fitted to ``rows`` under the priors (the engine and global
    fits of a fold take these), remembered by the serving rows they rest on."""
    mine = tuple(r.id for r in rows if _carries_request_overhead(r))

    def fit() -> dict[str, float]:
        return fit_request_overheads(rows, predictor, constants=predictor.in_force(core_constants.PRIORS))

    return _memo(("overheads", mine), fit)  # type: ignore[no-any-return]


# --- llama.cpp's partial offload: the host stream --------------------------------------------------
#: The host-stream efficiencies the fit tries (a grid: the partial-offload rows are few).
HOST_STREAM_GRID = tuple(round(0.30 + 0.01 * i, 2) for i in range(71))


def host_stream_rows(rows: Iterable[Row]) -> list[Row]:
    """The scored partial-offload rows (llama.cpp ``-ngl`` below the layer count)."""
    return [r for r in rows if r.scored and "gpu_layers=" in r.fact("offload")]


def fit_host_stream(
    rows: Sequence[Row], predictor: Predictor, constants: SpeedConstants
) -> tuple[float, float, float]:
    """(host_stream_efficiency, split_spread_low, split_spread_high): the efficiency of
    :data:`HOST_STREAM_GRID` with the least mean |log(estimate / measured)| over the partial-offload
    ``rows`` under ``constants``; the range of a split step from the 10% and 90% order statistics of
    measured / estimate with that fit made without each source in turn."""
    mine = host_stream_rows(rows)
    if not mine:
        llama = constants.llama_cpp
        return llama.host_stream_efficiency, llama.split_spread_low, llama.split_spread_high
    ratios: dict[float, dict[str, float]] = {}
    for value in HOST_STREAM_GRID:
        trial = with_host_stream(constants, value)
        ratios[value] = {}
        for r in mine:
            c = predictor.compare(r, trial)
            if c.estimate:
                ratios[value][r.id] = c.estimate / r.value

    def loss(value: float, ids: Iterable[str]) -> float:
        return statistics.fmean(abs(math.log(ratios[value][i])) for i in ids if i in ratios[value])

    best = min(HOST_STREAM_GRID, key=lambda v: loss(v, [r.id for r in mine]))
    held_out: list[float] = []
    for source in sorted({r.source_id for r in mine}):
        train = [r.id for r in mine if r.source_id != source]
        value = min(HOST_STREAM_GRID, key=lambda v: loss(v, train))
        held_out += [1 / ratios[value][r.id] for r in mine if r.source_id == source and r.id in ratios[value]]
    v = sorted(held_out)
    n = len(v)
    low = v[max(math.floor((n + 1) * 0.1) - 1, 0)]
    high = v[min(math.ceil((n + 1) * 0.9) - 1, n - 1)]
    return best, round(1 - low, 2), round(high - 1, 2)


def with_host_stream(constants: SpeedConstants, value: float) -> SpeedConstants:
    """``constants`` with llama.cpp's host stream efficiency set to ``value``."""
    return replace(constants, llama_cpp=replace(constants.llama_cpp, host_stream_efficiency=value))


@dataclass(frozen=True, slots=True)
class SplitFold:
    """One source's partial-offload rows predicted without it (:func:`offload_out_of_sample`)."""

    source: str
    host_stream_efficiency: float  # fitted to the other sources' split runs
    comparisons: tuple[Comparison, ...]


def offload_out_of_sample(rows: Sequence[Row], predictor: Predictor) -> list[SplitFold]:
    """Leave-one-source-out over the partial-offload rows alone: for each source with a split run,
    the fold of :func:`out_of_sample` (llama.cpp's factors fitted from the priors without it, then its
    host stream efficiency on the other sources' split runs) predicts its rows. Seconds per source:
    only llama.cpp's profile is refitted (it takes no part in the global constants' fit). The rows'
    comparisons are those :func:`out_of_sample` gives them."""
    global _MEMO
    scored = [r for r in rows if r.scored]
    split = {r.id for r in host_stream_rows(rows)}
    out: list[SplitFold] = []
    _MEMO = {}
    try:
        for source in sorted({r.source_id for r in rows if r.id in split}):
            held = [r for r in rows if r.source_id == source]
            rest = [r for r in scored if r.source_id != source]
            fold, profiles = fit_all(
                rest, predictor, _refitted_engines(held), _prior_overheads(rest, predictor)
            )
            constants = predictor.in_force(fold, profiles)
            host = fit_host_stream(rest, predictor, constants)[0]
            constants = with_host_stream(constants, host)
            got = tuple(predictor.compare(r, constants) for r in held if r.id in split)
            out.append(SplitFold(source, host, got))
    finally:
        _MEMO = None
    return out


@dataclass(frozen=True, slots=True)
class GroupStats:
    n: int
    median_abs_pct: float | None = None
    p80_abs_pct: float | None = None
    coverage: float | None = None
    right: int | None = None
    #: Coverage with the speed ranges themselves calibrated without each source (see
    #: :func:`held_out_coverage`); None for memory, whose band is not calibrated on the rows.
    coverage_held_out: float | None = None

    def to_dict(self, group: str) -> dict[str, float | int | None]:
        if group == "bounds":
            return {"n": self.n, "right": self.right}
        out: dict[str, float | int | None] = {
            "n": self.n,
            "median_abs_pct": self.median_abs_pct,
            "p80_abs_pct": self.p80_abs_pct,
            "coverage": self.coverage,
        }
        if self.coverage_held_out is not None:
            out["coverage_held_out"] = self.coverage_held_out
        return out


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolation percentile (q in 0..1), as numpy's default."""
    xs = sorted(values)
    pos = (len(xs) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


#: Quantities whose larger value is the slower run (their speed ratio is inverted).
TIME_LIKE = (
    "train_step_time_s",
    "time_to_first_token_ms",
    "request_latency_s",
    "decode_ms_per_token",
    "serving_ttft_ms",
    "serving_itl_ms",
)
#: The serving figures with a range of their own (``SpeedConstants.serving_spreads``).
SERVING_FIGURES = {
    "serving_output_tokens_per_s": "tokens_per_s",
    "serving_ttft_ms": "ttft",
    "serving_itl_ms": "itl",
}


def speed_ratio(c: Comparison) -> float | None:
    """measured / estimate as a speed (a time inverted: above 1 is faster than estimated)."""
    if not c.estimate or c.estimate <= 0 or c.row.bound != "point":
        return None
    ratio = c.measured / c.estimate
    return 1.0 / ratio if c.row.quantity in TIME_LIKE else ratio


def range_key(c: Comparison) -> str:
    """Which 80% range a row's estimate carries: its engine's, or its serving figure's."""
    if c.row.group == "serving":
        return "serving:" + SERVING_FIGURES[c.row.quantity]
    return scenario_engine(c.row)


def spreads_from(comparisons: Iterable[Comparison], tail: float = 0.1) -> dict[str, tuple[float, float]]:
    """The 80% ranges the shipped values are set from (``make fit``): each engine's
    (:func:`.spreads.engine_spreads`, pooled by kind under 15 rows) and each serving
    figure's (key ``serving:<figure>``), the split-conformal order statistics at ``tail`` and
    ``1 - tail`` of the speed ratios of the scored ``comparisons``."""
    by_key: dict[str, list[float]] = {}
    for c in comparisons:
        ratio = speed_ratio(c)
        if c.row.scored and ratio is not None and c.row.group in SPEED_GROUPS:
            by_key.setdefault(range_key(c), []).append(ratio)
    kinds = {eid: str(p.kind) for eid, p in core_engines.RECORDS.items()}
    out = dict(engine_spreads({k: v for k, v in by_key.items() if k in kinds}, kinds, tail, 1.0 - tail))
    for key, ratios in by_key.items():
        if key.startswith("serving:"):
            out[key] = spread_from_ratios(ratios, tail, 1.0 - tail)
    return out


#: The groups whose ranges are calibrated on the rows' own out-of-sample residuals.
SPEED_GROUPS = ("inference_speed", "training_speed", "serving")


def held_out_coverage(comparisons: Sequence[Comparison]) -> dict[str, float]:
    """Per speed group, the share of scored rows inside an 80% range calibrated **without the row's
    source** (:func:`spreads_from`, once per source held out): the coverage a new source can
    expect. ``coverage`` of :func:`group_stats` uses the shipped ranges instead, which every
    source's residuals helped to set. Errors cluster by source, so this figure is the lower one;
    widening the conformal level barely raises it (at 1%/99% it rises only a few points: the rows
    it misses lie beyond every other source's errors)."""
    scored = [c for c in comparisons if c.row.scored and c.row.group in SPEED_GROUPS]
    inside: dict[str, list[bool]] = {}
    for source in dict.fromkeys(c.row.source_id for c in scored):
        spreads = spreads_from(c for c in scored if c.row.source_id != source)
        for c in scored:
            if c.row.source_id != source:
                continue
            ratio = speed_ratio(c)
            low, high = spreads.get(range_key(c), (0.0, 0.0))
            hit = ratio is not None and 1.0 - low <= ratio <= 1.0 + high
            inside.setdefault(c.row.group, []).append(hit)
    return {g: round(sum(v) / len(v), 3) for g, v in inside.items() if v}


def group_stats(comparisons: Sequence[Comparison]) -> dict[str, GroupStats]:
    """Per group over the scored rows: median and 80th-percentile |error| in %, coverage (and the
    coverage with the ranges calibrated without each source); bounds right. The serving group's
    median and 80th percentile leave out the TTFT and ITL of runs whose load is unstated
    (:func:`median_judged`); they count for its coverage."""
    held_out = held_out_coverage(comparisons)
    out = {}
    for g in GROUPS:
        cs = [c for c in comparisons if c.row.scored and c.row.group == g]
        if g == "bounds":
            out[g] = GroupStats(len(cs), right=sum(1 for c in cs if c.right))
            continue
        errs = [abs(c.error) * 100.0 for c in cs if c.error is not None and median_judged(c)]
        if not errs:
            out[g] = GroupStats(
                len(cs), coverage=round(sum(c.covered for c in cs) / len(cs), 3) if cs else None
            )
            continue
        out[g] = GroupStats(
            len(cs),
            round(statistics.median(errs), 2),
            round(percentile(errs, 0.8), 2),
            round(sum(c.covered for c in cs) / len(cs), 3),
            coverage_held_out=held_out.get(g),
        )
    return out


def summary(comparisons: Sequence[Comparison]) -> dict[str, Any]:
    """The ``--json`` object: rows and sources of the set, and each group's figures."""
    stats = group_stats(comparisons)
    return {
        "rows": len(comparisons),
        "sources": len({c.row.source_id for c in comparisons}),
        "groups": {g: stats[g].to_dict(g) for g in GROUPS},
    }


def per_source(comparisons: Sequence[Comparison]) -> dict[str, tuple[int, int, float | None]]:
    """source -> (rows, scored rows, median |error| % of its scored point rows)."""
    out = {}
    for sid in dict.fromkeys(c.row.source_id for c in comparisons):
        cs = [c for c in comparisons if c.row.source_id == sid]
        errs = [abs(c.error) * 100 for c in cs if c.row.scored and c.error is not None]
        out[sid] = (
            len(cs),
            sum(c.row.scored for c in cs),
            round(statistics.median(errs), 1) if errs else None,
        )
    return out
