"""The decision: one best setup per GPU type, their order, and the recommended setup.

Computed once per estimate (in :func:`gpuadvisor.core.estimate.estimate`) and shown verbatim by
the window's summary and ranking, the CLI and the PDF report, so the three always name the same
setup.

Rules (each GPU type's setups and the GPU types themselves are ordered the same way):

A service (``workload.serving``) replaces the deadline and budget with its latency targets: setups
meeting them come first, cheapest month first (then fewer GPUs in all), then setups missing them.

1. Setups that fit and **surely** meet the limits: even the slow end of the job-time range meets
   the deadline and even the expensive end of the cost range stays within the budget
   (``deadline_status == "meets"``, ``budget_status == "within"`` or no limit set). Cheapest
   expected cost first, then shortest expected time, then fewer GPUs, then the simpler
   parallelism (``PARALLELISM_ORDER``).
2. Setups that fit and **likely** meet them (the expected value does, the range's far end does
   not). Same order. A recommendation from this tier says so ("likely meets").
3. Setups that fit but miss a limit, fastest first (closest to meeting a deadline).
4. Setups that do not fit, closest to fitting first (lowest memory need per capacity).

The recommendation is the first setup in tiers 1-2 over the whole catalog; the runner-up is the
best setup of another GPU type in the same tiers. Unpriced setups sort after priced ones of
their tier.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from .results import Candidate, Decision

#: Simpler ways to split the work win ties (same cost and time): no sharding before sharding.
PARALLELISM_ORDER = ("none", "ddp", "zero1", "zero2", "fsdp", "zero3", "tensor", "pipeline")

#: Tier names, in order.
SURE, LIKELY, MISSED, NO_FIT = 0.0, 1.0, 2.0, 3.0
TIER_WORDS: dict[float, str] = {
    SURE: "meets the limits",
    LIKELY: "likely meets the limits",
    MISSED: "misses a limit",
    NO_FIT: "does not fit",
}


def tier(c: Candidate) -> float:
    """The candidate's tier (see the module docstring)."""
    if not c.fits:
        return NO_FIT
    if c.serving is not None:  # a service: the latency targets are the limits, judged like a deadline
        return serving_tier(c)
    cost = c.cost
    if cost is None:
        return SURE
    if cost.deadline_status == "at risk" or cost.budget_status == "over" or cost.unpriced_under_budget:
        return (
            MISSED  # an unpriced GPU (a Mac, a rack-only part) cannot be shown to stay within a money limit
        )
    if cost.deadline_status == "likely" or cost.budget_status == "likely":
        return LIKELY
    return SURE


#: A service's fleet that was not simulated (not its GPU type's leading fleet) ranks after the
#: simulated ones of every tier that meets or misses the targets (only those are judged).
UNJUDGED = 2.5
TIER_WORDS[UNJUDGED] = "was not simulated: another setup leads its GPU type"


def serving_tier(c: Candidate) -> float:
    """A service's tier from its simulated status: "meets" (even the far end of the 80% range is
    within the targets), "likely" (the expected value is), "at risk"; a service without targets
    is sure when its fleet carries the load and missed when it cannot (it saturates)."""
    s = c.serving
    assert s is not None
    if s.at_load is None:
        return UNJUDGED
    if s.status is None:  # no targets
        return MISSED if s.at_load.saturated else SURE
    return {"meets": SURE, "likely": LIKELY}.get(s.status, MISSED)


def sort_key(c: Candidate) -> tuple[object, ...]:
    """Order within and across GPU types (smaller is better)."""
    t = tier(c)
    par = (
        PARALLELISM_ORDER.index(c.parallelism)
        if c.parallelism in PARALLELISM_ORDER
        else len(PARALLELISM_ORDER)
    )
    if t == NO_FIT:
        return (t, c.utilization, c.gpu_count, par, c.gpu.name)
    if c.serving is not None:
        return serving_key(c, t, par)
    cost = c.cost
    usd = cost.cost_usd.expected if cost is not None and cost.cost_usd is not None else math.inf
    hours = cost.job_hours.expected if cost is not None else math.inf
    if t == MISSED:  # closest first: priced setups over the limit before unpriced ones
        return (t, cost is not None and cost.unpriced_under_budget, hours, usd, c.gpu_count, par, c.gpu.name)
    return (t, usd, hours, c.gpu_count, par, c.gpu.name)


def serving_key(c: Candidate, t: float, par: int) -> tuple[object, ...]:
    """A service's order: cheapest month first among setups meeting the targets (then fewer GPUs);
    among those missing them, the closest to its targets first."""
    s = c.serving
    assert s is not None
    # ServingEstimate.order after its met/missed flag, which the tier already holds: the ranking's order.
    if t >= MISSED:
        return (t, *s.order[1:], c.gpu_count, par, c.gpu.name)
    return (t, *s.order[1:], s.gpus_total, c.gpu_count, par, c.gpu.name)


def decide(candidates: Iterable[Candidate]) -> Decision:
    """The decision over ``candidates`` (all setups of every GPU type compared)."""
    best: dict[str, tuple[tuple[object, ...], Candidate]] = {}
    for c in candidates:
        k = sort_key(c)
        cur = best.get(c.gpu.id)
        if cur is None or k < cur[0]:
            best[c.gpu.id] = (k, c)
    ordered = [c for _k, c in sorted(best.values(), key=lambda kc: kc[0])]
    keys = tuple(c.key for c in ordered)
    if not ordered or tier(ordered[0]) == NO_FIT:
        return Decision(None, None, keys, "nothing fits")
    first = ordered[0]
    if tier(first) >= MISSED:
        return Decision(None, None, keys, "limits missed")
    runner = next((c for c in ordered[1:] if tier(c) in (SURE, LIKELY)), None)
    return Decision(
        first.key,
        runner.key if runner is not None else None,
        keys,
        "sure" if tier(first) == SURE else "likely",
    )
