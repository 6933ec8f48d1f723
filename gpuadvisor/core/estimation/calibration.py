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

from ..errors import InputError
from ..formats.measurements import Measurement
from ..formats.scenario import Scenario, scenario_from_dict
from ..specs.constants import engine_for
from ..specs.hardware import GpuCatalog
from ..specs.models import ModelSpec
from ..specs.presets import ModelCatalog
from ..specs.workload import RuntimeOverhead
from ..units import GIB
from .calibration_file import (
    EFFICIENCY_FACTORS as EFFICIENCY_FACTORS,
)  # the profile's names, kept importable here
from .calibration_file import FACTOR_NAMES as FACTOR_NAMES
from .calibration_file import OVERHEAD_RANGE_GIB as OVERHEAD_RANGE_GIB
from .calibration_file import PROFILE_FORMAT as PROFILE_FORMAT
from .calibration_file import PROFILE_SCHEMA_VERSION as PROFILE_SCHEMA_VERSION
from .calibration_file import profile_from_dict as profile_from_dict
from .calibration_file import profile_from_json as profile_from_json
from .calibration_file import profile_to_dict as profile_to_dict
from .calibration_file import profile_to_json as profile_to_json
from .communication import training_speed
from .estimate import estimate, resolve_model
from .performance import PerformanceEstimate, inference_performance
from .results import CalibrationProfile as CalibrationProfile  # the profile types stay importable here
from .results import Candidate, Estimate
from .results import FactorFit as FactorFit

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
            raise InputError(
                f"measurement {m.id}", "has no scenario snapshot, so the estimate cannot be recomputed for it"
            )
        sc = scenario_from_dict(m.scenario)
        w = sc.workload
        if w.kind != m.kind:
            raise InputError(
                f"measurement {m.id}.kind",
                f"is {m.kind} but the scenario snapshot is a {w.kind} workload",
                m.kind,
            )
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
    engine = engine_for(w.engine, w.kind).for_workload(w)
    if w.is_training:
        return training_speed(
            est.memory_model,
            cand.gpu,
            cand.the_layout,
            engine,
            mfu=eff.mfu,
            gpus_per_node=sc.hardware.gpus_per_node,
        )
    return inference_performance(
        est.memory_model,
        cand.gpu,
        cand.gpu_count,
        cand.parallelism,
        engine,
        bw_eff=eff.bandwidth_efficiency,
        prefill_mfu=eff.prefill_mfu,
        gpus_per_node=sc.hardware.gpus_per_node,
    )


def _median_error_pct(predicted: Sequence[float | None], measured: Sequence[float]) -> float | None:
    pairs = zip(predicted, measured, strict=True)
    errors = [abs(p / y - 1.0) * 100.0 for p, y in pairs if p is not None and y > 0]
    return statistics.median(errors) if errors else None


def golden_section_min(
    f: Callable[[float], float], lo: float, hi: float, tol: float = 1e-6, max_iter: int = 200
) -> float:
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


def _fit_speed(
    gpu_id: str, engine: str, group: list[Measurement], predictor: Predictor, skipped: list[tuple[str, str]]
) -> FactorFit | None:
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
            skipped.append(
                (
                    m.id,
                    (
                        f"the estimated speed hardly depends on {name} for this run (it is "
                        f"compute-, overhead- or communication-bound), so {name} cannot be "
                        "fitted from it"
                    ),
                )
            )
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
        note = (
            "at the upper bound 1.0: the runs are faster than the estimate allows even at full "
            "efficiency; check the scenario snapshots (precision, batch, GPU count)"
        )
    elif value <= SEARCH_LOW * 1.01:
        value = SEARCH_LOW
        note = "at the lower bound: the runs are far slower than the estimate; check the scenario snapshots"
    return FactorFit(
        gpu_id=gpu_id,
        engine=engine,
        factor_name=name,
        value=round(value, 6),
        n_measurements=len(obs),
        error_before_pct=_median_error_pct([p for _, _, p in obs], observed),
        error_after_pct=_median_error_pct(predicted(value), observed),
        measurement_ids=tuple(m.id for m, _, _ in obs),
        note=note,
    )


def _fit_overhead(
    gpu_id: str, engine: str, group: list[Measurement], predictor: Predictor, skipped: list[tuple[str, str]]
) -> FactorFit | None:
    obs: list[tuple[Measurement, float, float, float | None]] = []
    for m in group:
        if not m.memory_is_device_total:
            skipped.append(
                (
                    m.id,
                    (
                        "torch.cuda.max_memory_allocated counts tensors only; the runtime "
                        "overhead (CUDA context, fragmentation) needs an nvidia-smi or typed "
                        "device reading"
                    ),
                )
            )
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
        note = (
            f"the runs used {-residual:.2f} GiB less than the estimated tensors: the memory model "
            "overestimates here; overhead clamped to 0"
        )
    if value > OVERHEAD_RANGE_GIB[1]:
        for m, _, _, _ in obs:
            skipped.append(
                (
                    m.id,
                    (
                        f"measured memory exceeds the estimated tensors by {value:.0f} GiB: the "
                        "scenario snapshot does not describe this run"
                    ),
                )
            )
        return None
    measured = [y for _, y, _, _ in obs]
    return FactorFit(
        gpu_id=gpu_id,
        engine=engine,
        factor_name="runtime_overhead_gib",
        value=round(value, 4),
        n_measurements=len(obs),
        error_before_pct=_median_error_pct([d for *_, d in obs], measured),
        error_after_pct=_median_error_pct([t + value for _, _, t, _ in obs], measured),
        measurement_ids=tuple(m.id for m, *_ in obs),
        note=note,
    )


def fit_calibration(
    measurements: Sequence[Measurement],
    predictor: Predictor | None = None,
    *,
    created: date | None = None,
    note: str = "",
) -> CalibrationProfile:
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
            skipped.append(
                (
                    m.id,
                    (
                        "has no scenario snapshot: record the scenario with the measurement to "
                        "use it for calibration"
                    ),
                )
            )
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
        for fit in (
            _fit_speed(gpu_id, engine, speed, predictor, skipped) if speed else None,
            _fit_overhead(gpu_id, engine, memory, predictor, skipped) if memory else None,
        ):
            if fit is not None:
                fits.append(fit)
    return CalibrationProfile(
        fits=tuple(fits),
        created=(created or date.today()).isoformat(),
        note=note,
        skipped=tuple(dict.fromkeys(skipped)),
    )


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
        raise InputError(
            "hardware.gpu",
            "calibration is per GPU: choose one GPU, or apply the values per candidate inside the comparison",
        )
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
            raise InputError(
                "calibration.runtime_overhead_gib",
                f"is above the {MAX_CONTEXT_GIB:g} GiB a scenario's overhead.cuda_context_gib accepts",
                overhead,
            )
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
    own_overhead = (
        isinstance(overhead, dict)
        and overhead
        and (
            overhead.get("cuda_context_gib", 0.6) != RuntimeOverhead().cuda_context_gib
            or overhead.get("fragmentation") is not None
        )
    )
    return {
        k: v
        for k, v in values.items()
        if not (k == "runtime_overhead_gib" and own_overhead) and eff.get(k) is None
    }


def compare_measurements(
    measurements: Sequence[Measurement], predictor: Predictor, profile: CalibrationProfile | None = None
) -> list[Comparison]:
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

        out.append(
            Comparison(
                m,
                tps,
                base.tokens_per_s if tps is not None else None,
                cal.tokens_per_s if cal is not None and tps is not None else None,
                mem,
                memory(base),
                memory(cal),
            )
        )
    return out
