"""The selected setup in words: what the window's detail panel says about one candidate.

The same formatting rules as the report (:mod:`..formatting`), so a figure reads the same in the
window, the CLI and the PDF. Returns plain lines tagged with their kind; the window turns them
into HTML with its own colours.
"""

from __future__ import annotations

import datetime as _dt

from ..estimation.cost import CostEstimate
from ..estimation.recommendation import TIER_WORDS, tier
from ..estimation.results import Candidate, Estimate
from ..formatting import (
    DASH,
    TIMES,
    fmt_days,
    fmt_gib,
    fmt_hours,
    fmt_hours_range,
    fmt_rate,
    fmt_share,
    fmt_signed_gib,
    fmt_usd,
    fmt_usd_per_hour,
    fmt_usd_per_mtok,
    fmt_usd_range,
)
from ..specs.constants import RANGE_LABEL
from .prices import price_date, price_stale, rent_as
from .serving_text import fleet_detail
from .wording import host_phrase, prompt_phrase, speed_assumption

#: Line kinds: a heading, plain text, a caution (amber) and a problem (red).
TITLE, TEXT, CAUTION, PROBLEM = "title", "text", "caution", "problem"


Line = tuple[str, str]


def candidate_detail(est: Estimate, key: str, today: _dt.date, stale_months: int = 6) -> list[Line]:
    """What to say about the candidate ``key`` ([] when there is no such candidate).

    In the panel's order: the title, memory, system RAM and a Mac's one pool, other layouts on
    the same GPUs, the largest batch (a service: its fleet), a session's speed, the job's speed,
    cost and limits, prices and provisioning."""
    c = est.candidate(key)
    if c is None:
        return []
    return [
        _title_line(est, c),
        *_memory_lines(est, c),
        *_host_lines(est, c),
        *_layout_lines(est, c),
        *_fleet_or_batch_lines(est, c),
        *_session_lines(est, c),
        *_job_lines(est, c),
        *_price_lines(est, c, today, stale_months),
        *provisioning_lines(est, key),
    ]


def _title_line(est: Estimate, c: Candidate) -> Line:
    """``★ Recommended: 2 × H100 SXM (tensor)``: the role, the GPUs and the layout."""
    decision = est.decision
    mark = ""
    if decision is not None and c.key == decision.recommended_key:
        mark = "\u2605 Recommended: "
    elif decision is not None and c.key == decision.runner_up_key:
        mark = "Runner-up: "
    lay = c.the_layout
    if c.layout is not None and not lay.shorthand:
        setup = lay.name
    else:
        setup = "single GPU" if c.gpu_count == 1 else c.parallelism
    name = c.gpu.name if c.gpu_count == 1 else f"{c.gpu_count} {TIMES} {c.gpu.name}"
    return (TITLE, f"{mark}{name} ({setup})")


def _memory_lines(est: Estimate, c: Candidate) -> list[Line]:
    """The verdict, memory per GPU against capacity, headroom and tier; which pipeline stage the
    figures are."""
    d = c.memory.gib()
    out = [
        (
            TEXT,
            f"{c.verdict.capitalize()}: {fmt_gib(d['device_total'])} of {fmt_gib(c.capacity_gib)} GiB per "
            f"GPU ({fmt_share(c.utilization)}), headroom {fmt_signed_gib(c.headroom_gib)} GiB. "
            f"{TIER_WORDS[tier(c)].capitalize()}.",
        )
    ]
    if c.memory.stage:
        lay = c.the_layout
        out.append(
            (
                TEXT,
                f"Pipeline of {lay.pp} stages: the figures are the {c.memory.stage} stage's, the fuller one"
                + (
                    " (it holds the activations of up to "
                    f"{min(lay.pp, est.memory_model.micro_batches(lay))} micro-batches)."
                    if c.memory.stage == "first"
                    else " (it holds the output layer and the loss)."
                ),
            )
        )
    return out


def _host_lines(est: Estimate, c: Candidate) -> list[Line]:
    """System RAM: layers kept off the GPU (llama.cpp ``-ngl``) or offloaded state; a Mac's one
    memory pool."""
    out: list[Line] = []
    training = est.scenario.workload.is_training
    misfit = f" {c.misfit[0].upper()}{c.misfit[1:]}." if c.misfit else ""
    if c.gpu_layers is not None and not training:
        layers = est.model.num_layers
        out.append(
            (
                PROBLEM if c.misfit else TEXT,
                f"{'Fits' if c.fits else 'Would fit'} with {c.gpu_layers} of {layers} layers on the GPU "
                f"(llama.cpp -ngl {c.gpu_layers}): the other {layers - c.gpu_layers} and the output layer "
                f"run on the CPU from {fmt_gib(c.host_memory_gib)} GiB of system RAM; "
                f"{host_phrase(est, c)}, read at {c.gpu.host_memory_bandwidth_gb_s:g} GB/s"
                + (
                    ""
                    if est.scenario.hardware.host_memory_bandwidth_gb_s
                    else f" ({c.gpu.host_defaults.memory})"
                )
                + "."
                + misfit,
            )
        )
    elif c.host_memory_gib > 0.05:
        out.append(
            (
                PROBLEM if c.misfit else TEXT,
                f"Host RAM: {fmt_gib(c.host_memory_gib)} GiB per node for "
                + ("the layers kept off the GPU." if not training else "offloaded state.")
                + misfit,
            )
        )
    if c.gpu.unified_memory and not training:
        ram = c.gpu.memory_gb or c.capacity_gib
        out.append(
            (
                TEXT,
                f"One memory pool: the GPU shares the Mac's {ram:g} GB with macOS and apps, and Metal lets it "
                f"use {fmt_gib(c.capacity_gib)} GiB by default (sudo sysctl iogpu.wired_limit_mb=<MiB> raises "
                "that until the next restart). Layers are never kept off the GPU on a Mac: they would sit in "
                "the same memory.",
            )
        )
    return out


def _layout_lines(est: Estimate, c: Candidate) -> list[Line]:
    """Up to three other layouts that fit on the same GPUs: their share of this one's speed and
    their memory per GPU."""
    others = [o for o in est.layout_alternatives(c) if o.fits and o.performance is not None][:3]
    if not others or c.performance is None or c.gpu_count <= 1:
        return []
    base = c.performance.tokens_per_s.expected
    return [
        (
            TEXT,
            "Other layouts on the same GPUs: "
            + "; ".join(
                f"{o.layout_name}: {fmt_share(o.performance.tokens_per_s.expected / base)} of the speed, "
                f"{fmt_gib(o.memory.device_total / 2**30)} GiB per GPU"
                for o in others
                if o.performance is not None
            )
            + ".",
        )
    ]


def _fleet_or_batch_lines(est: Estimate, c: Candidate) -> list[Line]:
    """A service's fleet (not one batch); otherwise the largest batch and longest context that fit."""
    if est.scenario.workload.serving is not None:
        kinds = {"problem": PROBLEM, "caution": CAUTION}
        return [
            (kinds.get(kind, TEXT), text) for kind, text in fleet_detail(c, est.engine, est.serving_of(c))
        ]
    wi = est.what_if(c)
    return [(TEXT, f"Largest batch that fits: {wi.max_batch:,}; longest context: {wi.max_context:,} tokens.")]


def _session_lines(est: Estimate, c: Candidate) -> list[Line]:
    """A session on the machine you own: generation speed and its range, the prompt's wait, and
    the memory left."""
    session, p = est.session_of(c), c.performance
    if session is None or p is None:
        return []
    rate = est.tokens_per_s(c)
    spread = f" ({fmt_rate(rate.low)}{DASH}{fmt_rate(rate.high)}, the {RANGE_LABEL})" if rate else ""
    return [
        (
            TEXT,
            f"Generation: ~{fmt_rate(session.tokens_per_s)} tokens/s{spread}, {p.bound}-bound; "
            f"{prompt_phrase(session.prompt_tokens, session.prompt_s)} "
            f"({fmt_rate(session.prefill_tokens_per_s)} tokens/s). "
            f"{fmt_gib(session.memory_left_gib)} GiB of memory left.",
        )
    ]


def _job_lines(est: Estimate, c: Candidate) -> list[Line]:
    """A job (not a service): speed, time and cost with their ranges, the limits it may miss, the
    time to the first token and buying against renting."""
    p, cost = c.performance, c.cost
    if p is None or cost is None or est.scenario.workload.serving is not None:
        return []
    text = (
        f"{fmt_rate(p.tokens_per_s.expected)} tokens/s ({p.bound}-bound, {p.precision_used}); job "
        f"{fmt_hours(cost.job_hours.expected)} ({fmt_hours_range(cost.job_hours.low, cost.job_hours.high)})"
    )
    if cost.cost_usd is not None:
        text += (
            f", about {fmt_usd(cost.cost_usd.expected)} "
            f"({fmt_usd_range(cost.cost_usd.low, cost.cost_usd.high)}, "
            f"{fmt_usd_per_mtok(cost.usd_per_million_tokens)} per 1M tokens)"
        )
    out = [(TEXT, text + "."), *_limit_lines(est, cost)]
    assumption = speed_assumption(est)
    if assumption:
        out.append((CAUTION, assumption))
    if p.time_to_first_token_s is not None:
        out.append(
            (
                TEXT,
                f"Time to first token {p.time_to_first_token_s * 1000:,.0f} ms; "
                f"{fmt_rate(p.tokens_per_s_per_user or 0)} tokens/s per user.",
            )
        )
    if cost.buy is not None:
        buy = cost.buy
        verdict = "buying is cheaper" if buy.buy_is_cheaper else "renting is cheaper"
        be = (
            f"; break-even at {fmt_share(buy.break_even_utilization)} utilization"
            if buy.break_even_utilization is not None
            else ""
        )
        out.append(
            (
                TEXT,
                f"Buy vs rent (per GPU-hour of use): owned {fmt_usd_per_hour(buy.owned_usd_per_hour)}, "
                f"rented {fmt_usd_per_hour(buy.rent_usd_per_hour)}: {verdict}{be}.",
            )
        )
    return out


def _limit_lines(est: Estimate, cost: CostEstimate) -> list[Line]:
    """The deadline, the planning horizon and the budget, where the job only likely meets them
    (a caution) or misses them (a problem)."""
    b = est.scenario.budget
    out: list[Line] = []
    if cost.deadline_status == "likely" and b.deadline_hours is not None:
        out.append(
            (
                CAUTION,
                f"Likely meets the {fmt_hours(b.deadline_hours)} deadline: the slow end of the "
                f"range ({fmt_hours(cost.job_hours.high)}) does not.",
            )
        )
    elif cost.deadline_status == "at risk" and b.deadline_hours is not None:
        out.append(
            (
                PROBLEM,
                f"Misses the {fmt_hours(b.deadline_hours)} deadline (expected {fmt_hours(cost.job_hours.expected)}).",
            )
        )
    if cost.horizon_status == "likely":
        out.append(
            (
                CAUTION,
                f"Likely finishes within the planning horizon of {fmt_days(b.horizon_days)} (no deadline "
                f"given): the slow end of the range ({fmt_hours(cost.job_hours.high)}) does not.",
            )
        )
    elif cost.horizon_status == "beyond":
        out.append(
            (
                PROBLEM,
                f"Does not finish within the planning horizon of {fmt_days(b.horizon_days)} (no deadline "
                f"given; expected {fmt_hours(cost.job_hours.expected)}).",
            )
        )
    if cost.budget_status == "likely":
        out.append((CAUTION, "Likely within the budget: the expensive end of the range is not."))
    elif cost.budget_status == "over":
        out.append((PROBLEM, "Over the budget."))
    return out


def _price_lines(est: Estimate, c: Candidate, today: _dt.date, stale_months: int) -> list[Line]:
    """Where to rent the setup, and a caution when its prices are older than ``stale_months``."""
    out: list[Line] = []
    where = rent_as(est, c)
    if where:
        out.append((TEXT, where))
    if price_stale(est, c, today, stale_months):
        day = price_date(est, c)
        when = f"dated {day}" if day else "undated"
        fix = (
            "import a newer price list in Tools > Catalog editor"
            if est.scenario.budget.providers is not None
            else "check them in Tools > Catalog editor"
        )
        out.append(
            (CAUTION, f"The prices of this setup are {when}, older than {stale_months} months: {fix}.")
        )
    return out


def provisioning_lines(est: Estimate, key: str) -> list[tuple[str, str]]:
    """What the provisioning flags say about the candidate ``key``, in the terms of the workload's
    own limits (a deadline, the planning horizon, a service's targets). The recommended setup is
    never flagged against itself: a tight one gets the recommendation's caution instead."""
    c = est.candidate(key)
    if c is None or not c.fits:
        return []
    recommended = est.decision is not None and key == est.decision.recommended_key
    out: list[tuple[str, str]] = []
    if c.under_provisioned:
        text = (
            "Memory is tight (above 95% of capacity): a longer sample or an allocator spike may not fit "
            f"(the target is 85{DASH}95% of VRAM)."
        )
        out.append(
            (CAUTION if recommended else PROBLEM, text if recommended else "Under-provisioned: " + text)
        )
    if c.over_provisioned and not recommended:
        if c.utilization < 0.5:
            out.append(
                (
                    CAUTION,
                    f"Over-provisioned: {fmt_share(c.utilization)} of the memory is used; a smaller GPU "
                    "would hold it.",
                )
            )
        else:
            b, w = est.scenario.budget, est.scenario.workload
            if w.serving is not None:
                limit = "meets the same targets"
            elif b.deadline_hours is not None:
                limit = f"meets the same {fmt_hours(b.deadline_hours)} deadline"
            else:
                limit = f"also finishes within the planning horizon of {fmt_days(b.horizon_days)} (no deadline given)"
            out.append((CAUTION, f"Over-provisioned: a setup at under half the cost {limit}."))
    return out
