"""Calibration: efficiency factors fitted to the user's own measurements.

The speed model (:mod:`gpuadvisor.core.estimation.performance`) turns datasheet peaks into achievable
speed with the engine profile's factors (:mod:`gpuadvisor.core.specs.engines`); a scenario's
:class:`~gpuadvisor.core.formats.scenario.Efficiency` overrides them:

- inference decode is bound by ``bytes / (bandwidth x bandwidth_efficiency)`` plus the fixed
  time of its kernels (and, without CUDA graphs, the host's launch time) and prefill at a GEMM
  efficiency capped by ``prefill_mfu``: the fitted factor is ``bandwidth_efficiency``
  (``inference_performance(bw_eff=...)``);
- training runs at the MFU that the shape model gives (GEMM shape, attention, non-GEMM traffic,
  overhead on that GPU), unless overridden, plus exposed communication: the fitted factor is
  ``mfu`` (``training_performance(mfu=...)``), the absolute MFU on that GPU;
- memory: the device total is the tensor total plus the CUDA context and the allocator's
  fragmentation; the fitted ``runtime_overhead_gib`` replaces both.

Method, for every (GPU, engine) group of measurements that carry a scenario snapshot:

- speed: the factor ``f`` in [0.01, 1] minimising ``sum (ln measured - ln predicted(f))^2``
  (least squares on log ratios), found with a 25-point scan of ``ln f`` and a golden-section
  search around the best point. ``predicted`` is the real estimator, so the parts of the
  step time that do not scale with the factor (per-layer overhead, prefill, communication)
  are respected; a group whose predictions barely move with the factor is not fitted;
- memory: ``max(0, median(measured peak - estimated tensor total))`` over device-level
  readings (nvidia-smi or typed); ``torch.cuda.max_memory_allocated`` counts tensors only
  and cannot tell the overhead;
- errors: the median of ``|predicted / measured - 1|`` in percent, before (engine profile,
  or the snapshot's own settings) and after the fit.

Apply a profile with :func:`efficiency_for` (per GPU and engine) or :func:`apply_calibration`
(a one-GPU scenario); ``docs/measurements.md`` says how the estimator uses the values.
:func:`compare_measurements` sets each measurement beside its estimate (and the calibrated
estimate), with the error ``estimate / measured - 1`` in percent.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import date
from typing import Any, NamedTuple

from ..specs.engines import SpeedConstants, engine_for
from ..errors import InputError
from .estimate import estimate, resolve_model
from .results import CalibrationProfile as CalibrationProfile  # the profile types stay importable here
from .results import Candidate, Estimate
from .results import FactorFit as FactorFit
from ..specs.hardware import GpuCatalog, GpuSpec
from ..formats.measurements import Measurement
from ..specs.models import ModelSpec
from .performance import PerformanceEstimate, inference_performance, training_performance
from ..specs.presets import ModelCatalog
from ..formats.scenario import Scenario, scenario_from_dict
from ..units import GIB
from .calibration_file import EFFICIENCY_FACTORS as EFFICIENCY_FACTORS  # the profile's names, kept importable here
from .calibration_file import FACTOR_NAMES as FACTOR_NAMES
from .calibration_file import OVERHEAD_RANGE_GIB as OVERHEAD_RANGE_GIB
from .calibration_file import PROFILE_FORMAT as PROFILE_FORMAT
from .calibration_file import PROFILE_SCHEMA_VERSION as PROFILE_SCHEMA_VERSION
from .calibration_file import profile_from_dict as profile_from_dict
from .calibration_file import profile_from_json as profile_from_json
from .calibration_file import profile_to_dict as profile_to_dict
from .calibration_file import profile_to_json as profile_to_json
from ..specs.workload import RuntimeOverhead, Workload

#: Lowest efficiency the search considers (below it the scenario, not the engine, is wrong).
SEARCH_LOW = 0.01
#: A speed factor is fitted only if moving it from SEARCH_LOW to 1 changes some prediction by this ratio.
MIN_SENSITIVITY = 1.05
#: RuntimeOverhead.cuda_context_gib accepts at most this (scenario validation).
MAX_CONTEXT_GIB = 64.0


class Prediction(NamedTuple):
    """What the estimate predicts for a measurement: aggregate tokens/s, tensor and device GiB per GPU."""

    tokens_per_s: float | None
    tensors_gib: float | None
    device_gib: float | None


#: ``predict(measurement, factors) -> Prediction``; ``factors`` maps names of FACTOR_NAMES to values
#: that override the engine profile (an empty mapping: the estimate as the snapshot describes it).
Predictor = Callable[[Measurement, Mapping[str, float]], Prediction]


def speed_factor(kind: str) -> str:
    """The efficiency that a throughput measurement of this workload kind calibrates."""
    return "bandwidth_efficiency" if kind == "inference" else "mfu"


def measurement_engine(m: Measurement) -> str:
    """The engine a measurement ran on: its own, the snapshot's, or the default for its kind."""
    engine = m.engine
    if engine is None and m.scenario is not None:
        workload = m.scenario.get("workload")
        if isinstance(workload, dict) and isinstance(workload.get("engine"), str):
            engine = workload["engine"]
    return engine_for(engine, m.kind).id


class EstimatePredictor:
    """The default predictor: :func:`gpuadvisor.core.estimation.estimate.estimate` on the measurement's snapshot.

    The snapshot (``scenario_to_dict`` form) is the scenario; the measurement's GPU, GPU
    count, batch size, engine and (for training) sequence length replace the snapshot's.
    A multi-GPU snapshot without ``hardware.parallelism`` uses the first applicable one (ddp).
    """

    def __init__(self, gpus: GpuCatalog, models: ModelCatalog) -> None:
        self.gpus, self.models = gpus, models
        self._prepared: dict[Measurement, tuple[Scenario, ModelSpec]] = {}

    def scenario_for(self, m: Measurement) -> Scenario:
        """The scenario that reproduces the measured run (raises InputError if it cannot)."""
        if m.scenario is None:
            raise InputError(f"measurement {m.id}", "has no scenario snapshot, so the estimate cannot be "
                                                    "recomputed for it")
        sc = scenario_from_dict(m.scenario)
        w = sc.workload
        if w.kind != m.kind:
            raise InputError(f"measurement {m.id}.kind",
                             f"is {m.kind} but the scenario snapshot is a {w.kind} workload", m.kind)
        changes: dict[str, Any] = {"batch_size": m.batch_size}
        if m.engine:
            changes["engine"] = m.engine
        if w.is_training and m.seq_len:
            changes["seq_len"] = m.seq_len
        hardware = replace(sc.hardware, gpu=m.gpu_id, gpu_count=m.num_gpus)
        return replace(sc, workload=replace(w, **changes), hardware=hardware)

    def _prepare(self, m: Measurement) -> tuple[Scenario, ModelSpec]:
        if m not in self._prepared:
            sc = self.scenario_for(m)
            self._prepared[m] = (sc, resolve_model(sc, self.models))
        return self._prepared[m]

    def __call__(self, m: Measurement, factors: Mapping[str, float]) -> Prediction:
        sc, model = self._prepare(m)
        eff = {k: float(factors[k]) for k in EFFICIENCY_FACTORS if k in factors}
        if eff:
            sc = replace(sc, efficiency=replace(sc.efficiency, **eff))
        est = estimate(sc, self.gpus, self.models, with_advice=False, _model=model)
        cand = _candidate(est, m)
        tensors = cand.memory.tensors_total / GIB
        device = cand.memory.device_total / GIB
        if "runtime_overhead_gib" in factors:
            device = tensors + float(factors["runtime_overhead_gib"])
        perf = cand.performance or _performance(est, cand, sc)
        return Prediction(perf.tokens_per_s.expected if perf else None, tensors, device)


def _candidate(est: Estimate, m: Measurement) -> Candidate:
    found = [c for c in est.candidates if c.gpu.id == m.gpu_id and c.gpu_count == m.num_gpus]
    if not found:
        raise InputError(f"measurement {m.id}", f"the estimate has no {m.num_gpus}x {m.gpu_id} candidate")
    return next((c for c in found if c.fits), found[0])


def _performance(est: Estimate, cand: Candidate, sc: Scenario) -> PerformanceEstimate:
    """Speed of a candidate the estimate judged too big (the run happened, so it did fit)."""
    w, eff = sc.workload, sc.efficiency
    engine = engine_for(w.engine, w.kind)
    if w.is_training:
        return training_performance(est.memory_model, cand.gpu, cand.gpu_count, cand.parallelism, engine,
                                    mfu=eff.mfu, gpus_per_node=sc.hardware.gpus_per_node)
    return inference_performance(est.memory_model, cand.gpu, cand.gpu_count, cand.parallelism, engine,
                                 bw_eff=eff.bandwidth_efficiency, prefill_mfu=eff.prefill_mfu,
                                 gpus_per_node=sc.hardware.gpus_per_node)


def _median_error_pct(predicted: Sequence[float | None], measured: Sequence[float]) -> float | None:
    pairs = zip(predicted, measured, strict=True)
    errors = [abs(p / y - 1.0) * 100.0 for p, y in pairs if p is not None and y > 0]
    return statistics.median(errors) if errors else None


def golden_section_min(f: Callable[[float], float], lo: float, hi: float, tol: float = 1e-6,
                       max_iter: int = 200) -> float:
    """The x in [lo, hi] minimising a unimodal ``f`` (golden-section search)."""
    inv_phi = (math.sqrt(5.0) - 1.0) / 2.0
    a, b = lo, hi
    c, d = b - inv_phi * (b - a), a + inv_phi * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(max_iter):
        if b - a <= tol:
            break
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - inv_phi * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + inv_phi * (b - a)
            fd = f(d)
    return (a + b) / 2.0


def _fit_speed(gpu_id: str, engine: str, group: list[Measurement], predictor: Predictor,
               skipped: list[tuple[str, str]]) -> FactorFit | None:
    name = speed_factor(group[0].kind)
    obs: list[tuple[Measurement, float, float]] = []
    for m in group:
        try:
            base = predictor(m, {})
        except InputError as exc:
            skipped.append((m.id, str(exc)))
            continue
        measured = m.throughput_tokens_per_s
        if base.tokens_per_s is None or base.tokens_per_s <= 0 or measured is None:
            skipped.append((m.id, "the estimate gives no speed for this run"))
            continue
        obs.append((m, measured, base.tokens_per_s))
    if not obs:
        return None

    def predicted(value: float) -> list[float | None]:
        return [predictor(m, {name: value}).tokens_per_s for m, _, _ in obs]

    def loss(log_value: float) -> float:
        total = 0.0
        for (_, y, _), p in zip(obs, predicted(math.exp(log_value)), strict=True):
            if p is None or p <= 0:
                return math.inf
            total += (math.log(y) - math.log(p)) ** 2
        return total

    low, high = predicted(SEARCH_LOW), predicted(1.0)
    moves = [h / lo_ for lo_, h in zip(low, high, strict=True) if lo_ and h]
    if not moves or max(moves) < MIN_SENSITIVITY:
        for m, _, _ in obs:
            skipped.append((m.id, (f"the estimated speed hardly depends on {name} for this run (it is "
                                  f"compute-, overhead- or communication-bound), so {name} cannot be "
                                  "fitted from it")))
        return None
    # A coarse scan of ln(f) guards the golden-section search against a local minimum.
    a, b = math.log(SEARCH_LOW), 0.0
    grid = [a + (b - a) * i / 24 for i in range(25)]
    best = min(range(len(grid)), key=lambda i: loss(grid[i]))
    lo_x, hi_x = grid[max(best - 1, 0)], grid[min(best + 1, len(grid) - 1)]
    value = math.exp(golden_section_min(loss, lo_x, hi_x, tol=1e-5))
    value = min(max(value, SEARCH_LOW), 1.0)
    observed = [y for _, y, _ in obs]
    note = ""
    if value >= 0.999:
        value = 1.0  # the search stops a hair inside its bracket
        note = ("at the upper bound 1.0: the runs are faster than the estimate allows even at full "
                "efficiency; check the scenario snapshots (precision, batch, GPU count)")
    elif value <= SEARCH_LOW * 1.01:
        value = SEARCH_LOW
        note = "at the lower bound: the runs are far slower than the estimate; check the scenario snapshots"
    return FactorFit(gpu_id=gpu_id, engine=engine, factor_name=name, value=round(value, 6),
                     n_measurements=len(obs),
                     error_before_pct=_median_error_pct([p for _, _, p in obs], observed),
                     error_after_pct=_median_error_pct(predicted(value), observed),
                     measurement_ids=tuple(m.id for m, _, _ in obs), note=note)


def _fit_overhead(gpu_id: str, engine: str, group: list[Measurement], predictor: Predictor,
                  skipped: list[tuple[str, str]]) -> FactorFit | None:
    obs: list[tuple[Measurement, float, float, float | None]] = []
    for m in group:
        if not m.memory_is_device_total:
            skipped.append((m.id, ("torch.cuda.max_memory_allocated counts tensors only; the runtime "
                                  "overhead (CUDA context, fragmentation) needs an nvidia-smi or typed "
                                  "device reading")))
            continue
        try:
            base = predictor(m, {})
        except InputError as exc:
            skipped.append((m.id, str(exc)))
            continue
        if base.tensors_gib is None:
            skipped.append((m.id, "the estimate gives no memory figure for this run"))
            continue
        assert m.peak_memory_gib is not None
        obs.append((m, m.peak_memory_gib, base.tensors_gib, base.device_gib))
    if not obs:
        return None
    residual = statistics.median(y - t for _, y, t, _ in obs)
    value = max(0.0, residual)
    note = ""
    if residual < 0:
        note = (f"the runs used {-residual:.2f} GiB less than the estimated tensors: the memory model "
                "overestimates here; overhead clamped to 0")
    if value > OVERHEAD_RANGE_GIB[1]:
        for m, _, _, _ in obs:
            skipped.append((m.id, (f"measured memory exceeds the estimated tensors by {value:.0f} GiB: the "
                                  "scenario snapshot does not describe this run")))
        return None
    measured = [y for _, y, _, _ in obs]
    return FactorFit(gpu_id=gpu_id, engine=engine, factor_name="runtime_overhead_gib", value=round(value, 4),
                     n_measurements=len(obs),
                     error_before_pct=_median_error_pct([d for *_, d in obs], measured),
                     error_after_pct=_median_error_pct([t + value for _, _, t, _ in obs], measured),
                     measurement_ids=tuple(m.id for m, *_ in obs), note=note)


def fit_calibration(measurements: Sequence[Measurement], predictor: Predictor | None = None, *,
                    created: date | None = None, note: str = "") -> CalibrationProfile:
    """Fit a :class:`CalibrationProfile` to measurements (see the module docstring for the method).

    ``predictor`` defaults to :class:`EstimatePredictor` over the bundled catalogs. Measurements
    without a scenario snapshot, or whose snapshot the estimator rejects, are listed in
    ``skipped`` with the reason.
    """
    if predictor is None:
        from ..specs.hardware import load_gpu_catalog
        from ..specs.presets import load_model_catalog
        predictor = EstimatePredictor(load_gpu_catalog(), load_model_catalog())
    skipped: list[tuple[str, str]] = []
    groups: dict[tuple[str, str], list[Measurement]] = {}
    for m in measurements:
        if m.scenario is None:
            skipped.append((m.id, ("has no scenario snapshot: record the scenario with the measurement to "
                                  "use it for calibration")))
            continue
        try:
            engine = measurement_engine(m)
        except InputError as exc:
            skipped.append((m.id, str(exc)))
            continue
        groups.setdefault((m.gpu_id, engine), []).append(m)
    fits: list[FactorFit] = []
    for (gpu_id, engine), group in groups.items():
        speed = [m for m in group if m.throughput_tokens_per_s is not None]
        memory = [m for m in group if m.peak_memory_gib is not None]
        for fit in (_fit_speed(gpu_id, engine, speed, predictor, skipped) if speed else None,
                    _fit_overhead(gpu_id, engine, memory, predictor, skipped) if memory else None):
            if fit is not None:
                fits.append(fit)
    return CalibrationProfile(fits=tuple(fits), created=(created or date.today()).isoformat(), note=note,
                              skipped=tuple(dict.fromkeys(skipped)))


def efficiency_for(profile: CalibrationProfile | None, gpu_id: str, engine: str | None) -> dict[str, float]:
    """The calibrated values for one GPU and engine, e.g. ``{"bandwidth_efficiency": 0.71}``; {} if none.

    ``engine`` is the resolved engine id (``engine_for(workload.engine, workload.kind).id``,
    which is also ``Estimate.engine``). See ``docs/measurements.md`` for how to apply them.
    """
    if profile is None or engine is None:
        return {}
    return {f.factor_name: f.value for f in profile.fits_for(gpu_id, engine)}


def apply_calibration(scenario: Scenario, profile: CalibrationProfile, gpu_id: str | None = None) -> Scenario:
    """The scenario with calibrated values for one GPU (default: ``hardware.gpu``).

    Efficiencies the scenario sets itself win; the rest come from the profile. A fitted
    ``runtime_overhead_gib`` replaces the CUDA context and fragmentation
    (``RuntimeOverhead(cuda_context_gib=value, fragmentation=0)``) while the scenario keeps the
    default ``overhead`` (one it sets itself wins, as in ``estimate(..., calibration=profile)``).
    """
    gpu = gpu_id or scenario.hardware.gpu
    if gpu is None:
        raise InputError("hardware.gpu", "calibration is per GPU: choose one GPU, or apply the values per "
                                         "candidate inside the comparison")
    w = scenario.workload
    values = efficiency_for(profile, gpu, engine_for(w.engine, w.kind).id)
    if not values:
        return scenario
    eff = scenario.efficiency
    changes = {k: values[k] for k in EFFICIENCY_FACTORS if k in values and getattr(eff, k) is None}
    out = replace(scenario, efficiency=replace(eff, **changes)) if changes else scenario
    if "runtime_overhead_gib" in values and scenario.overhead == RuntimeOverhead():
        overhead = values["runtime_overhead_gib"]
        if overhead > MAX_CONTEXT_GIB:
            raise InputError("calibration.runtime_overhead_gib",
                             f"is above the {MAX_CONTEXT_GIB:g} GiB a scenario's overhead.cuda_context_gib "
                             "accepts", overhead)
        out = replace(out, overhead=RuntimeOverhead(cuda_context_gib=overhead, fragmentation=0.0))
    return out


# --- estimate versus measurement -------------------------------------------------------------------------

def _error_pct(estimated: float | None, measured: float | None) -> float | None:
    if estimated is None or measured is None or measured <= 0:
        return None
    return (estimated / measured - 1.0) * 100.0


class Comparison(NamedTuple):
    """One measurement beside what the estimate (and the calibrated estimate) predicts for it.

    Memory is compared like with like: the device total for nvidia-smi and typed readings, the
    tensor total for ``torch.cuda.max_memory_allocated``. ``problem`` says why there is no
    estimate (no scenario snapshot, an unknown GPU, ...); it is "" otherwise.
    """

    measurement: Measurement
    measured_tokens_per_s: float | None
    estimated_tokens_per_s: float | None
    calibrated_tokens_per_s: float | None
    measured_memory_gib: float | None
    estimated_memory_gib: float | None
    calibrated_memory_gib: float | None
    problem: str = ""

    @property
    def tokens_error_pct(self) -> float | None:
        """Estimated over measured tokens/s, minus 1, in percent (positive: the estimate is too fast)."""
        return _error_pct(self.estimated_tokens_per_s, self.measured_tokens_per_s)

    @property
    def calibrated_tokens_error_pct(self) -> float | None:
        return _error_pct(self.calibrated_tokens_per_s, self.measured_tokens_per_s)

    @property
    def memory_error_pct(self) -> float | None:
        """Estimated over measured peak memory, minus 1, in percent."""
        return _error_pct(self.estimated_memory_gib, self.measured_memory_gib)

    @property
    def calibrated_memory_error_pct(self) -> float | None:
        return _error_pct(self.calibrated_memory_gib, self.measured_memory_gib)


def calibrated_factors(profile: CalibrationProfile | None, m: Measurement) -> dict[str, float]:
    """The profile's values for a measurement's GPU and engine, less those its snapshot sets itself
    (the same precedence as ``estimate(..., calibration=profile)``)."""
    if profile is None:
        return {}
    try:
        values = efficiency_for(profile, m.gpu_id, measurement_engine(m))
    except InputError:
        return {}
    snap = m.scenario or {}
    raw_efficiency = snap.get("efficiency")
    eff: dict[str, Any] = raw_efficiency if isinstance(raw_efficiency, dict) else {}
    overhead = snap.get("overhead")
    own_overhead = isinstance(overhead, dict) and overhead and (
        overhead.get("cuda_context_gib", 0.6) != RuntimeOverhead().cuda_context_gib
        or overhead.get("fragmentation") is not None)
    return {k: v for k, v in values.items()
            if not (k == "runtime_overhead_gib" and own_overhead) and eff.get(k) is None}


def compare_measurements(measurements: Sequence[Measurement], predictor: Predictor,
                         profile: CalibrationProfile | None = None) -> list[Comparison]:
    """Each measurement beside its estimate and, with ``profile``, its calibrated estimate."""
    out = []
    for m in measurements:
        tps = m.throughput_tokens_per_s
        mem = m.peak_memory_gib
        try:
            base = predictor(m, {})
        except InputError as exc:
            out.append(Comparison(m, tps, None, None, mem, None, None, problem=str(exc)))
            continue
        factors = calibrated_factors(profile, m)
        cal = predictor(m, factors) if factors else None

        def memory(p: Prediction | None, mem: float | None = mem, m: Measurement = m) -> float | None:
            if p is None or mem is None:
                return None
            return p.device_gib if m.memory_is_device_total else p.tensors_gib

        out.append(Comparison(
            m, tps, base.tokens_per_s if tps is not None else None,
            cal.tokens_per_s if cal is not None and tps is not None else None,
            mem, memory(base), memory(cal)))
    return out


# --- the speed model's constants, fitted over published rows ---------------------------------------
#
# ``fit_speed_constants(rows)`` refits the constants of :data:`gpuadvisor.core.engines.FITTED` over
# any set of rows, so a validation harness can hold out one source at a time and predict it. A row
# carries its own predictor (a function of the constants), so the fit needs no knowledge of how a
# row's scenario was built.

class SpeedRow(NamedTuple):
    """One published speed measurement, ready to be predicted under any set of constants.

    ``predict(constants)`` returns the estimate in the unit of ``measured``; ``engine`` is the
    engine profile id and ``family`` the kernel family (or None) the row exercises."""

    source: str
    engine: str
    family: str | None
    measured: float
    predict: Callable[[Any], float]
    row_id: str = ""


#: Bounds of each fitted parameter (the search stays inside them).
_EFFICIENCY_BOUNDS = (0.05, 0.92)
#: Weight of the pull towards the documented prior, per squared log ratio (keeps parameters that
#: few rows determine close to what the literature says; a row's log error weighs 1).
PRIOR_WEIGHT = 0.5


def _speed_parameters(rows: Sequence[SpeedRow], constants: SpeedConstants) -> list[tuple[str, str, tuple[float, float]]]:
    """(group, name, bounds) of every parameter that some row depends on."""
    out: list[tuple[str, str, tuple[float, float]]] = []
    engines = {r.engine for r in rows}
    for eid in sorted(engines):
        profile = constants.engines.get(eid)
        if profile is None:
            continue
        if profile.kind == "inference":
            out.append((f"engine:{eid}", "bandwidth_efficiency", _EFFICIENCY_BOUNDS))
            out.append((f"engine:{eid}", "prefill_mfu", _EFFICIENCY_BOUNDS))
        else:
            out.append((f"engine:{eid}", "mfu", _EFFICIENCY_BOUNDS))
    for fid in sorted({r.family for r in rows if r.family}):
        if fid in constants.families:
            out.append((f"family:{fid}", "gemv_efficiency", (0.1, 1.0)))
    if any(constants.engines[e].runtime == "python" and constants.engines[e].kind == "inference"
           for e in engines if e in constants.engines):
        out.append(("global", "cpu_kernel_s:python", (2e-6, 80e-6)))
    if any(constants.engines[e].kind == "inference" for e in engines if e in constants.engines):
        out.append(("global", "gpu_kernel_s", (0.3e-6, 10e-6)))
    if any(constants.engines[e].kind == "training" for e in engines if e in constants.engines):
        out.append(("global", "attention_efficiency", (0.15, 0.9)))
        out.append(("global", "gemm_width_half", (32.0, 2048.0)))
    return out


def _get(constants: SpeedConstants, group: str, name: str) -> float:
    if group.startswith("engine:"):
        return float(getattr(constants.engines[group[7:]], name))
    if group.startswith("family:"):
        return float(getattr(constants.families[group[7:]], name))
    if name.startswith("cpu_kernel_s:"):
        return constants.cpu_kernel_s[name.split(":", 1)[1]]
    return float(getattr(constants, name))


def _set(constants: SpeedConstants, group: str, name: str, value: float) -> SpeedConstants:
    # ``name`` is one of the float fields that _speed_parameters lists, chosen at run time.
    change: dict[str, Any] = {name: value}
    if group.startswith("engine:"):
        engines = dict(constants.engines)
        engines[group[7:]] = replace(engines[group[7:]], **change)
        return replace(constants, engines=engines)
    if group.startswith("family:"):
        families = dict(constants.families)
        families[group[7:]] = replace(families[group[7:]], **change)
        return replace(constants, families=families)
    if name.startswith("cpu_kernel_s:"):
        cpu = dict(constants.cpu_kernel_s)
        cpu[name.split(":", 1)[1]] = value
        return replace(constants, cpu_kernel_s=cpu)
    return replace(constants, **change)


def _relevant(rows: Sequence[SpeedRow], group: str) -> list[SpeedRow]:
    if group.startswith("engine:"):
        return [r for r in rows if r.engine == group[7:]]
    if group.startswith("family:"):
        fid = group[7:]
        return [r for r in rows if r.family == fid or (fid == "bnb-int8" and r.family == "bnb")]
    return list(rows)


def _log_errors(rows: Sequence[SpeedRow], constants: SpeedConstants) -> list[float]:
    out: list[float] = []
    for r in rows:
        try:
            pred = r.predict(constants)
        except (InputError, ValueError, ZeroDivisionError):
            pred = float("nan")
        if not (pred and math.isfinite(pred) and pred > 0):
            out.append(3.0)  # a row the constants cannot predict weighs like a 20x miss
        else:
            out.append(math.log(pred / r.measured))
    return out


def speed_loss(rows: Sequence[SpeedRow], constants: SpeedConstants, prior: SpeedConstants | None = None) -> float:
    """Sum of absolute log errors over ``rows``, plus the pull of each parameter towards ``prior``."""
    loss = sum(abs(e) for e in _log_errors(rows, constants))
    if prior is not None:
        for group, name, _b in _speed_parameters(rows, constants):
            loss += PRIOR_WEIGHT * math.log(_get(constants, group, name) / _get(prior, group, name)) ** 2
    return loss


def fit_speed_constants(rows: Sequence[SpeedRow], start: SpeedConstants | None = None,
                        sweeps: int = 2) -> SpeedConstants:
    """The speed model's constants refitted over ``rows`` (a :class:`SpeedConstants`).

    Coordinate descent: each parameter in turn minimises the rows' summed absolute log error
    plus ``PRIOR_WEIGHT x ln(value / prior)^2`` with a golden-section search of its logarithm
    inside its bounds; ``sweeps`` passes over all parameters. Parameters that no row depends on
    keep the prior (``start``, default the documented ``PRIORS``, never values fitted to the same
    rows). Deterministic for given rows."""
    from ..specs.engines import PRIORS

    prior = start or PRIORS
    constants = prior
    params = _speed_parameters(rows, prior)
    for _ in range(sweeps):
        for group, name, (lo, hi) in params:
            subset = _relevant(rows, group)
            if not subset:
                continue
            p0 = _get(prior, group, name)

            def loss(log_value: float, group: str = group, name: str = name, subset: list[SpeedRow] = subset,
                     p0: float = p0, constants: SpeedConstants = constants) -> float:
                c = _set(constants, group, name, math.exp(log_value))
                return (sum(abs(e) for e in _log_errors(subset, c))
                        + PRIOR_WEIGHT * (log_value - math.log(p0)) ** 2)

            best = golden_section_min(loss, math.log(lo), math.log(hi), tol=1e-3)
            constants = _set(constants, group, name, math.exp(best))
    return replace(constants, provenance=f"fitted over {len(rows)} rows from "
                                         f"{len({r.source for r in rows})} sources")


def held_out_residuals(rows: Sequence[SpeedRow], start: SpeedConstants | None = None) -> list[tuple[SpeedRow, float]]:
    """Leave-one-source-out: for each source, refit without its rows and predict them.

    Returns (row, measured / predicted) for every row (NaN when the row cannot be predicted)."""
    out: list[tuple[SpeedRow, float]] = []
    for source in sorted({r.source for r in rows}):
        train = [r for r in rows if r.source != source]
        constants = fit_speed_constants(train, start) if train else (start or _priors())
        for r in rows:
            if r.source == source:
                try:
                    pred = r.predict(constants)
                except (InputError, ValueError, ZeroDivisionError):
                    pred = float("nan")
                ratio = r.measured / pred if pred and math.isfinite(pred) and pred > 0 else float("nan")
                out.append((r, ratio))
    return out


def _priors() -> SpeedConstants:
    from ..specs.engines import PRIORS
    return PRIORS


def _quantile(values: Sequence[float], q: float) -> float:
    v = sorted(values)
    if not v:
        return float("nan")
    pos = q * (len(v) - 1)
    i = int(math.floor(pos))
    j = min(i + 1, len(v) - 1)
    return v[i] + (v[j] - v[i]) * (pos - i)


def spread_from_ratios(ratios: Sequence[float], low_quantile: float, high_quantile: float,
                       floor: float = 0.1) -> tuple[float, float]:
    """(spread_low, spread_high) whose range holds the ``low_quantile`` .. ``high_quantile`` share of
    ``ratios`` (measured / estimate): ``1 - q_low`` and ``q_high - 1``, each at least ``floor``."""
    low = max(floor, 1.0 - _quantile(ratios, low_quantile))
    high = max(floor, _quantile(ratios, high_quantile) - 1.0)
    return min(round(low, 2), 0.9), round(high, 2)


def engine_spreads(ratios_by_engine: Mapping[str, Sequence[float]], kinds: Mapping[str, str],
                   low_quantile: float = 0.07, high_quantile: float = 0.93, min_rows: int = 15,
                   floor: float = 0.1) -> dict[str, tuple[float, float]]:
    """Each engine's (spread_low, spread_high) from held-out ratios measured / estimate.

    An engine with at least ``min_rows`` ratios gets its own quantiles; the others get the quantiles
    of all ratios of their kind (``kinds`` maps engine id to "inference" or "training")."""
    pooled: dict[str, list[float]] = {}
    for eid, ratios in ratios_by_engine.items():
        pooled.setdefault(kinds.get(eid, ""), []).extend(r for r in ratios if math.isfinite(r))
    out: dict[str, tuple[float, float]] = {}
    for eid, kind in kinds.items():
        own = [r for r in ratios_by_engine.get(eid, ()) if math.isfinite(r)]
        ratios = own if len(own) >= min_rows else pooled.get(kind, [])
        if ratios:
            out[eid] = spread_from_ratios(ratios, low_quantile, high_quantile, floor)
    return out


def calibrate_spreads(residuals: Sequence[tuple[SpeedRow, float]], constants: SpeedConstants, coverage: float = 0.8,
                      min_rows: int = 6, floor: float = 0.1) -> SpeedConstants:
    """Constants whose engine spreads make low-high cover ``coverage`` of the held-out ratios.

    For each engine with at least ``min_rows`` residuals the range runs from the
    ``(1 - coverage) / 2`` to the ``(1 + coverage) / 2`` quantile of measured / predicted; engines
    with fewer borrow the pooled ratios of their kind (inference or training). Each side is at
    least ``floor``."""
    by_engine: dict[str, list[float]] = {}
    for row, ratio in residuals:
        by_engine.setdefault(row.engine, []).append(ratio)
    kinds = {eid: p.kind for eid, p in constants.engines.items()}
    spreads = engine_spreads(by_engine, kinds, (1 - coverage) / 2, (1 + coverage) / 2, min_rows, floor)
    engines = dict(constants.engines)
    for eid, (low, high) in spreads.items():
        engines[eid] = replace(engines[eid], spread_low=low, spread_high=high)
    return replace(constants, engines=engines)


SPEED_METRICS = ("tokens_per_s", "tokens_per_s_per_gpu", "tokens_per_s_per_user", "tflops_per_gpu",
                 "time_to_first_token_s")


def speed_row(row_id: str, source: str, model: ModelSpec, workload: Workload, gpu: GpuSpec, measured: float, metric: str,
              gpu_count: int = 1, parallelism: str = "none", gpus_per_node: int = 8) -> SpeedRow:
    """A :class:`SpeedRow` predicted by the real speed model.

    ``metric``: ``tokens_per_s`` (aggregate over the GPUs), ``tokens_per_s_per_gpu``,
    ``tokens_per_s_per_user`` (1 / decode step), ``tflops_per_gpu`` (achieved model TFLOP/s) or
    ``time_to_first_token_s``."""
    from ..specs.engines import engine_for
    from .memory import MemoryModel

    if metric not in SPEED_METRICS:
        raise InputError("metric", f"must be one of {', '.join(SPEED_METRICS)}", metric)
    profile = engine_for(workload.engine, workload.kind)
    mm = MemoryModel(model, workload, prefill_chunk_tokens=None if workload.is_training
                     else profile.prefill_chunk_tokens)

    def predict(constants: SpeedConstants) -> float:
        engine = engine_for(workload.engine, workload.kind, constants)
        if workload.is_training:
            perf = training_performance(mm, gpu, gpu_count, parallelism, engine, gpus_per_node=gpus_per_node,
                                        constants=constants)
        else:
            perf = inference_performance(mm, gpu, gpu_count, parallelism, engine, gpus_per_node=gpus_per_node,
                                         constants=constants)
        if metric == "tokens_per_s":
            return perf.tokens_per_s.expected
        if metric == "tokens_per_s_per_gpu":
            return perf.tokens_per_s.expected / gpu_count
        if metric == "tokens_per_s_per_user":
            return perf.tokens_per_s_per_user or float("nan")
        if metric == "time_to_first_token_s":
            return perf.time_to_first_token_s or float("nan")
        return (perf.mfu or 0.0) * perf.peak_tflops

    return SpeedRow(source=source, engine=profile.id, family=workload.quantization_family
                    if not workload.is_training or workload.kind == "qlora" else None,
                    measured=measured, predict=predict, row_id=row_id)
