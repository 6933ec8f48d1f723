"""The speed model's constants, fitted over published rows.

``fit_speed_constants(rows)`` refits the constants of :data:`gpuadvisor.core.specs.engines.FITTED`
over any set of rows, so a validation harness can hold out one source at a time and predict it
(leave-one-source-out). A row carries its own predictor (a function of the constants), so the fit
needs no knowledge of how a row's scenario was built. ``calibrate_spreads`` turns held-out
residuals into each engine's low-high range (the 80% range). The formulas and the provenance of
the shipped values are in ``docs/estimation.md``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, NamedTuple

from ..errors import InputError
from ..specs.constants import SpeedConstants
from ..specs.hardware import GpuSpec
from ..specs.models import ModelSpec
from ..specs.workload import Workload
from .calibration import golden_section_min
from .performance import inference_performance, training_performance


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


def _speed_parameters(
    rows: Sequence[SpeedRow], constants: SpeedConstants
) -> list[tuple[str, str, tuple[float, float]]]:
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
    if any(
        constants.engines[e].runtime == "python" and constants.engines[e].kind == "inference"
        for e in engines
        if e in constants.engines
    ):
        out.append(("global", "cpu_kernel_s:python", (2e-6, 80e-6)))
    if any(constants.engines[e].kind == "inference" for e in engines if e in constants.engines):
        out.append(("global", "gpu_kernel_s", (0.3e-6, 10e-6)))
        out.append(("global", "host_exposed_share", (0.02, 1.0)))
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


def speed_loss(
    rows: Sequence[SpeedRow], constants: SpeedConstants, prior: SpeedConstants | None = None
) -> float:
    """Sum of absolute log errors over ``rows``, plus the pull of each parameter towards ``prior``."""
    loss = sum(abs(e) for e in _log_errors(rows, constants))
    if prior is not None:
        for group, name, _b in _speed_parameters(rows, constants):
            loss += PRIOR_WEIGHT * math.log(_get(constants, group, name) / _get(prior, group, name)) ** 2
    return loss


def fit_speed_constants(
    rows: Sequence[SpeedRow], start: SpeedConstants | None = None, sweeps: int = 2
) -> SpeedConstants:
    """The speed model's constants refitted over ``rows`` (a :class:`SpeedConstants`).

    Coordinate descent: each parameter in turn minimises the rows' summed absolute log error
    plus ``PRIOR_WEIGHT x ln(value / prior)^2`` with a golden-section search of its logarithm
    inside its bounds; ``sweeps`` passes over all parameters. Parameters that no row depends on
    keep the prior (``start``, default the documented ``PRIORS``, never values fitted to the same
    rows). Deterministic for given rows."""
    from ..specs.constants import PRIORS

    prior = start or PRIORS
    constants = prior
    params = _speed_parameters(rows, prior)
    for _ in range(sweeps):
        for group, name, (lo, hi) in params:
            subset = _relevant(rows, group)
            if not subset:
                continue
            p0 = _get(prior, group, name)

            def loss(
                log_value: float,
                group: str = group,
                name: str = name,
                subset: list[SpeedRow] = subset,
                p0: float = p0,
                constants: SpeedConstants = constants,
            ) -> float:
                c = _set(constants, group, name, math.exp(log_value))
                return (
                    sum(abs(e) for e in _log_errors(subset, c))
                    + PRIOR_WEIGHT * (log_value - math.log(p0)) ** 2
                )

            best = golden_section_min(loss, math.log(lo), math.log(hi), tol=1e-3)
            constants = _set(constants, group, name, math.exp(best))
    return replace(
        constants, provenance=f"fitted over {len(rows)} rows from {len({r.source for r in rows})} sources"
    )


def held_out_residuals(
    rows: Sequence[SpeedRow], start: SpeedConstants | None = None
) -> list[tuple[SpeedRow, float]]:
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
    from ..specs.constants import PRIORS

    return PRIORS


def spread_from_ratios(
    ratios: Sequence[float], low_quantile: float, high_quantile: float, floor: float = 0.1
) -> tuple[float, float]:
    """(spread_low, spread_high) whose range holds the ``low_quantile`` .. ``high_quantile`` share of
    ``ratios`` (measured / estimate) for new work: ``1 - r_low`` and ``r_high - 1``, each at least
    ``floor``.

    ``r_low`` and ``r_high`` are the split-conformal order statistics of the ``n`` held-out ratios
    (Vovk et al. 2005; Lei et al. 2018): the ``floor((n + 1) q_low)``-th and the
    ``ceil((n + 1) q_high)``-th smallest (the extremes when ``n`` is too small). Unlike the
    interpolated sample quantile, this keeps the share of a new ratio inside the range at least
    ``q_high - q_low`` when new work errs as the held-out work did."""
    v = sorted(r for r in ratios if math.isfinite(r))
    if not v:
        return floor, floor
    n = len(v)
    lo_rank = max(1, math.floor((n + 1) * low_quantile))
    hi_rank = min(n, math.ceil((n + 1) * high_quantile))
    low = max(floor, 1.0 - v[lo_rank - 1])
    high = max(floor, v[hi_rank - 1] - 1.0)
    return min(round(low, 2), 0.9), round(high, 2)


def engine_spreads(
    ratios_by_engine: Mapping[str, Sequence[float]],
    kinds: Mapping[str, str],
    low_quantile: float = 0.1,
    high_quantile: float = 0.9,
    min_rows: int = 15,
    floor: float = 0.1,
) -> dict[str, tuple[float, float]]:
    """Each engine's (spread_low, spread_high) from held-out ratios measured / estimate.

    An engine with at least ``min_rows`` ratios gets its own quantiles; the others get the quantiles
    of the pooled ratios of the engines of their kind that have fewer (``kinds`` maps engine id to
    "inference" or "training"), so that the pooled range describes the engines it is used for; a kind
    whose engines all have their own gets the quantiles of all its ratios."""
    pooled: dict[str, list[float]] = {}
    everything: dict[str, list[float]] = {}
    for eid, ratios in ratios_by_engine.items():
        finite = [r for r in ratios if math.isfinite(r)]
        everything.setdefault(kinds.get(eid, ""), []).extend(finite)
        if len(finite) < min_rows:
            pooled.setdefault(kinds.get(eid, ""), []).extend(finite)
    for kind, ratios in everything.items():
        pooled.setdefault(kind, ratios)
    out: dict[str, tuple[float, float]] = {}
    for eid, kind in kinds.items():
        own = [r for r in ratios_by_engine.get(eid, ()) if math.isfinite(r)]
        ratios = own if len(own) >= min_rows else pooled.get(kind, [])
        if ratios:
            out[eid] = spread_from_ratios(ratios, low_quantile, high_quantile, floor)
    return out


def calibrate_spreads(
    residuals: Sequence[tuple[SpeedRow, float]],
    constants: SpeedConstants,
    coverage: float = 0.8,
    min_rows: int = 6,
    floor: float = 0.1,
) -> SpeedConstants:
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


SPEED_METRICS = (
    "tokens_per_s",
    "tokens_per_s_per_gpu",
    "tokens_per_s_per_user",
    "tflops_per_gpu",
    "time_to_first_token_s",
)


def speed_row(
    row_id: str,
    source: str,
    model: ModelSpec,
    workload: Workload,
    gpu: GpuSpec,
    measured: float,
    metric: str,
    gpu_count: int = 1,
    parallelism: str = "none",
    gpus_per_node: int = 8,
) -> SpeedRow:
    """A :class:`SpeedRow` predicted by the real speed model.

    ``metric``: ``tokens_per_s`` (aggregate over the GPUs), ``tokens_per_s_per_gpu``,
    ``tokens_per_s_per_user`` (1 / decode step), ``tflops_per_gpu`` (achieved model TFLOP/s) or
    ``time_to_first_token_s``."""
    from ..specs.constants import engine_for
    from .memory import MemoryModel

    if metric not in SPEED_METRICS:
        raise InputError("metric", f"must be one of {', '.join(SPEED_METRICS)}", metric)
    profile = engine_for(workload.engine, workload.kind)
    mm = MemoryModel(
        model, workload, prefill_chunk_tokens=None if workload.is_training else profile.prefill_chunk_tokens
    )

    def predict(constants: SpeedConstants) -> float:
        engine = engine_for(workload.engine, workload.kind, constants)
        if workload.is_training:
            perf = training_performance(
                mm, gpu, gpu_count, parallelism, engine, gpus_per_node=gpus_per_node, constants=constants
            )
        else:
            perf = inference_performance(
                mm, gpu, gpu_count, parallelism, engine, gpus_per_node=gpus_per_node, constants=constants
            )
        if metric == "tokens_per_s":
            return perf.tokens_per_s.expected
        if metric == "tokens_per_s_per_gpu":
            return perf.tokens_per_s.expected / gpu_count
        if metric == "tokens_per_s_per_user":
            return perf.tokens_per_s_per_user or float("nan")
        if metric == "time_to_first_token_s":
            return perf.time_to_first_token_s or float("nan")
        return (perf.mfu or 0.0) * perf.peak_tflops

    return SpeedRow(
        source=source,
        engine=profile.id,
        family=workload.quantization_family if not workload.is_training or workload.kind == "qlora" else None,
        measured=measured,
        predict=predict,
        row_id=row_id,
    )
