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
   parallelism (``PARALLELISM_ORDER``). Without a deadline the planning horizon
   (``budget.horizon_days``, 90 days by default) is judged as a deadline is: the slow end of the
   job-time range finishes within it (``horizon_status == "within"``).
2. Setups that fit and **likely** meet them (the expected value does, the range's far end does
   not: ``"likely"`` for the deadline, the budget or the horizon). Same order. A recommendation
   from this tier says so ("likely meets", "likely finishes within 90 days").
3. Setups that fit but miss a limit, fastest first (closest to meeting a deadline); without a
   deadline, a setup whose expected time is beyond the horizon is no plan anyone runs and is here.
4. Setups that do not fit, closest to fitting first (lowest memory need per capacity).

Same cost, faster (tiers 1-2 of a job): setups whose expected cost is within :data:`SAME_COST`
(1%) of the cheapest one left are the same cost, and the fastest of them comes first (then the
order above). The same rule picks each GPU type's setup and orders the GPU types; when the
recommendation is not the cheapest setup of all, :attr:`Decision.same_cost_as_key` names the
cheapest one it was preferred to, so the answer can say "same cost, 8x faster".

An interactive session on the machine the user owns (``Estimate.session``) has no job to price: its
setups that fit come fastest generation first (tier 1).

The recommendation is the first setup in tiers 1-2 over the whole catalog; the runner-up is the
best setup of another GPU type in the same tiers. Unpriced setups sort after priced ones of
their tier.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from ..vocabulary import BudgetStatus, DecisionStatus, HorizonStatus, TargetStatus
from .results import Candidate, Decision

#: Simpler ways to split the work win ties (same cost and time): no sharding before sharding.
PARALLELISM_ORDER = ("none", "ddp", "zero1", "zero2", "fsdp", "zero3", "tensor", "pipeline")
_PARALLELISM_RANK = {p: i for i, p in enumerate(PARALLELISM_ORDER)}

#: Expected costs within this share of the cheapest are the same cost: the faster setup wins.
SAME_COST = 0.01

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
    if (
        cost.deadline_status == TargetStatus.AT_RISK
        or cost.budget_status == BudgetStatus.OVER
        or cost.unpriced_under_budget  # an unpriced GPU (a Mac, a rack-only part) cannot show it stays within
        or cost.horizon_status
        == HorizonStatus.BEYOND  # no deadline, and it would not finish within the horizon
    ):
        return MISSED
    if TargetStatus.LIKELY in (cost.deadline_status, cost.budget_status, cost.horizon_status):
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
    tiers: dict[str, float] = {TargetStatus.MEETS: SURE, TargetStatus.LIKELY: LIKELY}
    return tiers.get(s.status, MISSED)


def sort_key(c: Candidate) -> tuple[object, ...]:
    """Order within and across GPU types (smaller is better)."""
    t = tier(c)
    par = _PARALLELISM_RANK.get(c.parallelism, len(PARALLELISM_ORDER))
    if t == NO_FIT:
        return (t, c.utilization, c.gpu_count, par, c.gpu.name)
    if c.serving is not None:
        return serving_key(c, t, par)
    cost = c.cost
    if cost is None and c.performance is not None and c.performance.tokens_per_s_per_user:
        # A session on the machine the user owns has no job to price: the faster answer first.
        return (t, -c.performance.tokens_per_s_per_user, c.gpu_count, par, c.gpu.name)
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


def _usd(c: Candidate) -> float:
    """Expected job cost (inf when unpriced or a service)."""
    cost = c.cost
    if c.serving is not None or cost is None or cost.cost_usd is None:
        return math.inf
    return cost.cost_usd.expected


def _hours(c: Candidate) -> float:
    return c.cost.job_hours.expected if c.cost is not None else math.inf


def _same_cost_fastest(
    first: tuple[tuple[object, ...], Candidate], others: Iterable[tuple[tuple[object, ...], Candidate]]
) -> tuple[tuple[object, ...], Candidate]:
    """``first`` (the first by :func:`sort_key`), or the fastest setup of its tier whose expected
    cost is within :data:`SAME_COST` of it (ties: the order of :func:`sort_key`). Each candidate
    comes with its :func:`sort_key`, whose first item is its tier, so neither is computed twice."""
    key, c = first
    t = key[0]
    usd = _usd(c)
    if t not in (SURE, LIKELY) or not math.isfinite(usd):
        return first
    limit = usd * (1 + SAME_COST)
    same = [kc for kc in others if kc[0][0] == t and _usd(kc[1]) <= limit]
    return min([first, *same], key=lambda kc: (_hours(kc[1]), kc[0]))


def ordered(cands: Iterable[Candidate]) -> list[Candidate]:
    """``cands`` in the decision's order: :func:`sort_key`, with the same-cost rule applied to each
    place in turn. Sorted by :func:`sort_key`, the setups of a tier within 1% of the first one's cost
    follow it, so each place looks at that run only."""
    rest = sorted(((sort_key(c), c) for c in cands), key=lambda kc: kc[0])
    out = []
    while rest:
        first = rest[0][1]
        t, usd = tier(first), _usd(first)
        best = 0
        if t in (SURE, LIKELY) and math.isfinite(usd):
            limit = usd * (1 + SAME_COST)
            j = 1
            while j < len(rest) and rest[j][0][0] == t and _usd(rest[j][1]) <= limit:
                if (_hours(rest[j][1]), rest[j][0]) < (_hours(rest[best][1]), rest[best][0]):
                    best = j
                j += 1
        out.append(rest.pop(best)[1])
    return out


def _key_of(kc: tuple[tuple[object, ...], Candidate]) -> tuple[object, ...]:
    return kc[0]


def decide(candidates: Iterable[Candidate]) -> Decision:
    """The decision over ``candidates`` (all setups of every GPU type compared)."""
    # Each candidate's sort key once (hundreds of setups per keystroke), its tier the key's first item.
    by_gpu: dict[str, list[tuple[tuple[object, ...], Candidate]]] = {}
    for c in candidates:
        by_gpu.setdefault(c.gpu.id, []).append((sort_key(c), c))
    best = []
    cheapest: tuple[tuple[object, ...], Candidate] | None = None
    for group in by_gpu.values():
        lead = min(group, key=_key_of)
        best.append(_same_cost_fastest(lead, group)[1])
        if cheapest is None or lead[0] < cheapest[0]:
            cheapest = lead
    order = ordered(best)
    keys = tuple(c.key for c in order)
    if not order or tier(order[0]) == NO_FIT:
        return Decision(None, None, keys, DecisionStatus.NOTHING_FITS)
    first = order[0]
    if tier(first) >= MISSED:
        return Decision(None, None, keys, DecisionStatus.LIMITS_MISSED)
    runner = next((c for c in order[1:] if tier(c) in (SURE, LIKELY)), None)
    same = (
        cheapest[1].key
        if cheapest is not None
        and cheapest[1].key != first.key
        and _usd(first) <= _usd(cheapest[1]) * (1 + SAME_COST)
        else None
    )
    return Decision(
        first.key,
        runner.key if runner is not None else None,
        keys,
        DecisionStatus.SURE if tier(first) == SURE else DecisionStatus.LIKELY,
        same,
    )
