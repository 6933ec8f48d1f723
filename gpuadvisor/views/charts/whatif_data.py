"""Data for the what-if chart: memory per GPU as the context length or the batch size grows.

Pure (no Qt): the numbers come from :func:`gpuadvisor.core.estimation.memory.memory_curve` on the
estimate's own memory model, for each GPU's best setup (``Estimate.best_per_gpu``), and the
largest value that fits from ``Estimate.what_if``. The chart only draws them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from gpuadvisor.core.estimation.memory import curve_points, memory_curve
from gpuadvisor.core.estimation.results import Estimate

from .labels import short_gpu_name

AXES = ("context", "batch", "weights")
AXIS_LABELS = {"context": "Context length (tokens)", "batch": "Batch size", "weights": "Weight type"}
CONTEXT_START = 128


@dataclass(frozen=True, slots=True)
class WhatIfCurve:
    """One GPU's memory curve: ``ys_gib[i]`` GiB per GPU at ``xs[i]`` (tokens or sequences)."""

    label: str
    xs: tuple[float, ...]
    ys_gib: tuple[float, ...]
    capacity_gib: float
    gpu_id: str = ""
    limit_x: int | None = None  # the largest value that fits (Estimate.what_if); None: not known
    current_x: int | None = None  # the scenario's own value
    recommended: bool = False  # this GPU's best setup is the estimate's recommendation


def whatif_range(est: Estimate, axis: str) -> tuple[int, int]:
    """The span of ``axis`` worth showing for this estimate: from the smallest sensible value to
    past both the model's maximum context (or a large batch) and twice the current value."""
    w = est.scenario.workload
    if axis == "context":
        start = CONTEXT_START if w.is_training else max(CONTEXT_START, w.output_tokens + 1)
        return start, max(est.model.max_context, 2 * w.context_tokens, start + 1)
    if axis == "batch":
        return 1, max(64, 4 * w.batch_size)
    raise ValueError(f"axis must be one of {AXES}, not {axis!r}")


def current_value(est: Estimate, axis: str) -> int:
    w = est.scenario.workload
    return int(w.context_tokens if axis == "context" else w.batch_size)


def whatif_curves(
    est: Estimate, gpu_ids: Sequence[str], axis: str = "context", points: int = 48
) -> list[WhatIfCurve]:
    """A curve for each GPU id (its best candidate in ``est``); unknown ids are skipped.

    Points whose memory is not a finite number are dropped, never passed on as NaN.
    """
    start, stop = whatif_range(est, axis)
    xs = curve_points(start, stop, points)
    best = est.best_per_gpu()
    now = current_value(est, axis)
    recommended = est.decision.recommended_key if est.decision is not None else None
    curves = []
    for gpu_id in gpu_ids:
        c = best.get(gpu_id)
        if c is None:
            continue
        ys = memory_curve(est.memory_model, axis, xs, c.gpu_count, c.parallelism, layout=c.layout)
        pairs = [(float(x), float(y)) for x, y in zip(xs, ys) if math.isfinite(y)]
        what_if = est.what_if(c)
        limit = what_if.max_context if axis == "context" else what_if.max_batch
        label = short_gpu_name(c.gpu.name, c.gpu_count) + (f", {c.setup_label}" if c.gpu_count > 1 else "")
        curves.append(
            WhatIfCurve(
                label=label,
                xs=tuple(p[0] for p in pairs),
                ys_gib=tuple(p[1] for p in pairs),
                capacity_gib=c.capacity_gib,
                gpu_id=gpu_id,
                limit_x=limit,
                current_x=now,
                recommended=c.key == recommended,
            )
        )
    return curves


def weights_curves(est: Estimate) -> tuple[list[WhatIfCurve], tuple[str, ...]]:
    """The memory of the one GPU compared for each weight type of ``est.weights_table`` (the whole
    model on the GPU), and the weight types' names for the axis: where each type stops fitting the
    card whole. ``([], ())`` without a table."""
    rows = est.weights_table
    lead = next(iter(est.best_per_gpu().values()), None)
    if not rows or lead is None:
        return [], ()
    labels = tuple(r.label for r in rows)
    xs = tuple(float(i) for i in range(len(rows)))
    ys = tuple(r.full_memory_gib for r in rows)
    whole = [i for i, r in enumerate(rows) if r.fit == "full"]
    current = next((i for i, r in enumerate(rows) if r.current), None)
    label = short_gpu_name(lead.gpu.name, lead.gpu_count)
    curve = WhatIfCurve(
        label=label,
        xs=xs,
        ys_gib=ys,
        capacity_gib=lead.capacity_gib,
        gpu_id=lead.gpu.id,
        limit_x=whole[0] if whole else None,
        current_x=current,
        recommended=False,
    )
    return [curve], labels


def axis_label(est: Estimate, axis: str) -> str:
    """The x-axis title in the workload's own words (training: sequence and micro-batch;
    inference: context per request and concurrent sequences)."""
    training = est.scenario.workload.is_training
    if axis == "context":
        return "Sequence length (tokens)" if training else "Context per request (tokens)"
    if axis == "batch":
        return "Micro-batch per GPU" if training else "Concurrent sequences"
    if axis == "weights":
        return "Weight type (the whole model on the GPU)"
    raise ValueError(f"axis must be one of {AXES}, not {axis!r}")


def whatif_gpu_ids(est: Estimate, selected_key: str | None = None, count: int = 4) -> list[str]:
    """The GPUs worth drawing: the selected setup's GPU, then the recommended one, then the
    decision's order (best GPU types first), ``count`` at most, without repeats."""
    ids: list[str] = []
    selected = est.candidate(selected_key) if selected_key else None
    if selected is not None:
        ids.append(selected.gpu.id)
    recommended = est.recommended
    if recommended is not None and recommended.gpu.id not in ids:
        ids.append(recommended.gpu.id)
    for gpu_id in est.best_per_gpu():
        if len(ids) >= count:
            break
        if gpu_id not in ids:
            ids.append(gpu_id)
    return ids[:count]


def default_gpu_ids(est: Estimate, count: int = 4) -> list[str]:
    """A few GPUs worth comparing when the user picked none: the cheapest fitting setups'
    GPUs in ranking order, then the largest cards, without repeats."""
    ids: list[str] = []
    for c in est.ranking:
        if c.gpu.id not in ids:
            ids.append(c.gpu.id)
        if len(ids) == count:
            return ids
    by_memory = sorted(est.best_per_gpu().values(), key=lambda c: -c.capacity_gib)
    for c in by_memory:
        if c.gpu.id not in ids:
            ids.append(c.gpu.id)
        if len(ids) == count:
            break
    return ids
