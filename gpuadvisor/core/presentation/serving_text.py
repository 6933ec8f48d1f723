"""The words and the fleet table of a service (``workload.serving``), shared by the window, the CLI
and the PDF report: each of them shows these strings and never re-derives a figure."""

from __future__ import annotations

import math
from typing import Any

from ..estimation.results import Candidate, Estimate
from ..estimation.serving import ServingEstimate, request_overhead_s_of
from ..estimation.serving_sim import Percentiles
from ..formatting import fmt_gib, fmt_rate, fmt_usd, fmt_usd_per_hour, fmt_usd_per_mtok
from ..specs.constants import RANGE_LABEL
from ..specs.engines import RECORDS, engine_lineage
from ..specs.serving import ServingSpec
from ..units import GIB

TIMES = "\u00d7"

#: The fleet table's columns (window, CLI and PDF).
FLEET_HEADER = [
    "GPU",
    "fleet",
    "GPUs",
    "in flight/replica",
    "req/s per replica",
    "TTFT p50/p90",
    "ITL p50/p90",
    "targets",
    "limited by",
    "$/hour",
    "$/month",
    "$/1M tok",
    "buy vs rent",
]
#: What the targets column says without targets.
NO_TARGETS = "none set"
#: What the fleet table's columns mean (window, CLI and PDF).
FLEET_NOTE = (
    "TTFT and ITL: p50 / p90 over the requests of a simulated replica at its share of the load "
    "(queueing included); targets: meets (even the slow end of the 80% range is within them at the "
    "percentile asked for), likely (the expected value is), at risk (it is not), misses TTFT or ITL "
    "(not even one request meets it: the TTFT and ITL shown are one request's, alone); "
    "$/month = replicas x GPUs x price x 730 h x hours a day / 24; $/1M tok per output token served."
)
#: The latency chart's caption (the PDF's figure).
LATENCY_CAPTION = (
    "Time to first token (top) and between tokens (bottom) against the load, p50 solid and p99 dashed, "
    "for the fleet of each of the top GPU types (★: recommended), the fleet's size kept while the "
    "load changes; the dotted lines are the targets, the grey line the stated load."
)

#: The memory chart's caption for a service (the PDF's Figure 1).
VRAM_CAPTION = (
    "Memory per GPU of one replica of each GPU type's fleet, in the table's order (\u2605: the recommended "
    "setup, outlined), at its operating point: weights, activations, the KV cache of the requests in flight "
    "and the overhead, then, hatched, the part of the KV pool the engine preallocates that no request uses. "
    "The black tick is the usable capacity, the marker on the right the verdict."
)

_LIMITED = {"kv_cache": "KV cache", "latency": "latency", "compute": "compute", "clients": "the clients"}


def fleet_name(c: Candidate, fleet: ServingEstimate | None = None) -> str:
    """``3 × (1 × NVIDIA H100 SXM5 80 GB)``, ``2 × (4 × NVIDIA L4, tensor)`` or, disaggregated,
    ``2 prefill + 1 decode × (8 × NVIDIA H100 SXM5 80 GB, tensor)`` (``fleet``: the candidate's
    fleet at its load, where simulated)."""
    s = fleet if fleet is not None else c.serving
    replicas: int | str = s.replicas if s is not None else 1
    if s is not None and s.disaggregated is not None:
        replicas = f"{s.disaggregated.prefill_instances} prefill + {s.disaggregated.decode_instances} decode"
    inner = c.gpu.name if c.gpu_count == 1 else f"{c.gpu_count} {TIMES} {c.gpu.name}, {c.parallelism}"
    return f"{replicas} {TIMES} ({inner})" if c.gpu_count > 1 else f"{replicas} {TIMES} {inner}"


def targets_phrase(est: Estimate) -> str:
    """``first token within 1 s and 50 ms between tokens at p90`` ("no latency targets" without)."""
    spec = est.scenario.workload.serving
    if spec is None:
        return ""
    parts = []
    if spec.ttft_s is not None:
        parts.append(f"first token within {spec.ttft_s:g} s")
    if spec.itl_ms is not None:
        parts.append(f"{spec.itl_ms:g} ms between tokens")
    if not parts:
        return "no latency targets"
    return " and ".join(parts) + f" at p{spec.percentile}"


def load_phrase(est: Estimate) -> str:
    """``110 requests/s (Poisson arrivals)`` or ``64 clients (each sends its next request when its
    answer ends)``."""
    spec = est.scenario.workload.serving
    if spec is None:
        return ""
    if spec.concurrency is not None:
        n = spec.concurrency
        return f"{n:,} client{'' if n == 1 else 's'} (each sends its next request when its answer ends)"
    rate = spec.requests_per_s or 0.0
    how = "bursty arrivals" if spec.arrival == "burst" else "Poisson arrivals"
    return f"{rate:g} request{'' if rate == 1 else 's'}/s ({how})"


def percentiles_cell(p: Percentiles, unit: str, digits: int) -> str:
    """``0.18 / 0.36 s`` (p50 / p90)."""
    return f"{p.p50:.{digits}f} / {p.p90:.{digits}f} {unit}"


def at_load_phrase(s: ServingEstimate) -> str:
    """``TTFT p50/p90/p99 0.18 / 0.36 / 0.61 s, ITL 31.0 / 41.1 / 49.0 ms, whole request 8.2 /
    17.9 / 30.1 s, waiting for admission 0.00 / 0.00 / 0.02 s; 2,093 output tokens/s, 96 requests in
    flight`` ("" before the simulation)."""
    a = s.at_load
    if a is None:
        return ""
    text = (
        f"TTFT p50/p90/p99 {_three(a.ttft_s, 's', 2)}, ITL {_three(a.itl_ms, 'ms', 1)}, "
        f"whole request {_three(a.e2e_s, 's', 1)}, waiting for admission {_three(a.queue_s, 's', 2)}; "
        f"{fmt_rate(a.output_tokens_per_s)} output tokens/s, {a.concurrency:,.0f} request"
        f"{'' if round(a.concurrency) == 1 else 's'} in flight"
    )
    if a.saturated:
        text += "; the replicas cannot keep up: the queue grows without end"
    if a.preempted_share > 0.005:
        text += f"; {a.preempted_share:.0%} of requests preempted (KV pool full)"
    return text


def _three(p: Percentiles, unit: str, digits: int) -> str:
    return f"{p.p50:.{digits}f} / {p.p90:.{digits}f} / {p.p99:.{digits}f} {unit}"


def status_word(s: ServingEstimate) -> str:
    """``meets``, ``likely``, ``at risk`` (the targets judged like a deadline), or the closed form's
    verdict before the simulation, or :data:`NO_TARGETS`. A fleet that misses a target even with
    one request in flight says ``misses TTFT`` / ``misses ITL`` after the simulation too: it was
    judged against the closest targets it gets (``sized_for``), and "at risk" would read as a fleet
    that a few more replicas could bring within the user's own."""
    if s.plan is not None and not s.plan.spec.has_targets:
        return "saturated" if s.at_load is not None and s.at_load.saturated else NO_TARGETS
    if s.sized_for is not None and s.missed:
        return f"misses {s.missed.upper()}"
    if s.status is not None:
        return s.status
    return "meets" if s.meets_slo else f"misses {s.missed.upper()}"


def speculative_phrase(s: ServingEstimate) -> str:
    """``EAGLE (5 drafted, 79% accepted: 3.6 tokens a step): one user 2.7x faster (390 against 145
    tokens/s); the gain vanishes from 96 sequences a replica`` ("" without)."""
    g = s.speculative
    if g is None:
        return ""
    method = {
        "eagle": "EAGLE",
        "mtp": "MTP",
        "ngram": "n-gram lookup",
        "draft": f"draft model {g.draft_model}",
    }
    head = (
        f"{method.get(g.method, g.method)} ({g.num_tokens} drafted, {g.acceptance_rate:.0%} accepted: "
        f"{g.tokens_per_step:.1f} tokens a step)"
    )
    if g.vanishes_at_concurrency == 1:
        return head + ": the drafts cost more than they save even for one user; the service runs without them"
    text = (
        f"{head}: one user {g.speedup:.1f}{TIMES} as fast "
        f"({g.batch1_tokens_per_s:,.0f} against {g.batch1_tokens_per_s_without:,.0f} tokens/s)"
    )
    if g.vanishes_at_concurrency is None:
        return text + "; it still pays at the most sequences a replica runs"
    return text + f"; the gain vanishes from {g.vanishes_at_concurrency:,} sequences a replica"


def disaggregated_phrase(s: ServingEstimate) -> str:
    """``prefill 3 x 1 GPU, decode 5 x 1 GPU (8 GPUs; one pool needs 10: 2 fewer, $2,920 a month
    less); KV cache over NVLink in 1.2 ms`` ("" without)."""
    d = s.disaggregated
    if d is None:
        return ""
    each = "1 GPU" if d.gpus_per_instance == 1 else f"{d.gpus_per_instance} GPUs"
    saving = d.saving_gpus
    versus = f"{saving:,} fewer" if saving > 0 else ("as many" if saving == 0 else f"{-saving:,} more")
    money = ""
    if d.usd_per_month is not None and d.colocated_usd_per_month is not None:
        diff = d.colocated_usd_per_month - d.usd_per_month
        money = f", {fmt_usd(abs(diff))} a month {'less' if diff >= 0 else 'more'}"
    return (
        f"prefill {d.prefill_instances} {TIMES} {each}, decode {d.decode_instances} {TIMES} {each} "
        f"({d.gpus_total:,} GPUs; one pool needs {d.colocated_gpus:,}: {versus}{money}); "
        f"KV cache over {d.link} in {d.kv_transfer_s * 1000:.1f} ms"
    )


#: The per-request times published single-client runs show (ms): NIM's first token is its prefill
#: and one decode step (about 0); vLLM serving gpt-oss-20b to one client took 17-52 ms by host,
#: GPUStack's vLLM about 47 ms (docs/estimation.md, "Per-request time").
MEASURED_REQUEST_MS = (0, 60)


def overhead_phrase(est: Estimate) -> str:
    """``44 ms of serving-stack time in every request (fitted ...)`` or the stated value."""
    spec = est.scenario.workload.serving
    if spec is None:
        return ""
    constants = est.speed_constants
    ms = request_overhead_s_of(spec, est.engine, constants) * 1000.0
    if spec.request_overhead_ms is not None:
        return f"{ms:g} ms of serving-stack time in every request (stated)"
    whose = (
        f"published {engine_name(engine_lineage(est.engine))} runs"
        if constants.has_own_request_overhead(est.engine)
        else "published runs of every stack"
    )
    lo, hi = MEASURED_REQUEST_MS
    measured = f"stacks took from about {lo} to {hi} ms"
    if ms > hi:
        # A fit above every measured request: its rows' first tokens come late for other reasons.
        measured += (
            "; this fit is above that, as it also takes up first-token time the model misses on this "
            "stack's published runs, so state your own if you have measured it"
        )
    return (
        f"{ms:g} ms of serving-stack time in every request (HTTP, tokenizing, scheduling, streaming): "
        f"fitted to {whose}; {measured}"
    )


def traffic_phrase(est: Estimate) -> str:
    """``20 requests/s (Poisson arrivals) of 2,000 prompt and 300 output tokens, 24 h a day``."""
    w = est.scenario.workload
    spec = w.serving
    if spec is None:
        return ""
    tail = ""
    if w.prompt_tokens_p90 or w.output_tokens_p90:
        tail = f" (p90 {w.prompt_p90:,} and {w.output_p90:,})"
    cache = (
        f", {spec.prefix_cache_hit_rate:.0%} of prompt tokens from the prefix cache"
        if spec.prefix_cache_hit_rate
        else ""
    )
    joiner = "with" if spec.closed_loop else "of"
    return (
        f"{load_phrase(est)} {joiner} {w.prompt_tokens:,} prompt and {w.output_tokens:,} output "
        f"tokens{tail}{cache}, {spec.hours_per_day:g} h a day"
    )


def buy_phrase(s: ServingEstimate) -> str:
    """``buy: own $3,515/mo ($105,000 up front)`` or "-"."""
    b = s.buy
    if b is None:
        return "-"
    verdict = "buy" if b.buy_is_cheaper else "rent"
    return f"{verdict}: own {fmt_usd(b.owned_usd_per_month)}/mo ({fmt_usd(b.purchase_usd)} up front)"


def sized_for_phrase(s: ServingEstimate) -> str:
    """``sized to the closest it gets: first token within 0.12 s, 27.0 ms between tokens`` for a
    fleet that misses its targets even alone ("" otherwise)."""
    if s.sized_for is None:
        return ""
    ttft, itl = s.sized_for
    parts = []
    if ttft is not None:
        parts.append(f"first token within {ttft:.2f} s")
    if itl is not None:
        parts.append(f"{itl:.1f} ms between tokens")
    return "sized to the closest it gets: " + ", ".join(parts) if parts else ""


def fleet_figures(s: ServingEstimate, percentile: int | None = None) -> str:
    """``$4,358 a month ($5.97 an hour, $0.28 per 1M output tokens); 117 requests in flight per
    replica at most, TTFT p50/p90 0.18 / 0.36 s, ITL 31.0 / 41.1 ms`` (with ``percentile``, the
    answer's short form: ``TTFT p90 0.36 s, ITL p90 41.1 ms``)."""
    money = (
        f"{fmt_usd(s.usd_per_month)} a month ({fmt_usd_per_hour(s.usd_per_hour)} an hour, "
        f"{fmt_usd_per_mtok(s.usd_per_million_tokens)} per 1M output tokens)"
        if s.usd_per_month is not None and s.usd_per_million_tokens is not None
        else "no price in the catalog"
    )
    n = s.concurrency_per_replica
    where = "decode instance" if s.disaggregated is not None else "replica"
    flight = f"up to {n:,} request{'' if n == 1 else 's'} in flight per {where}"
    if not s.meets_slo and not s.missed_at_load:
        # A fleet that misses a target even alone: what one request sees on an idle replica is why
        # it misses (what the fleet was sized to instead, sized_for_phrase, is the problem line's).
        return (
            f"{money}; {flight}; one request alone waits {s.ttft_alone_s:.2f} s for its first token "
            f"and {s.itl_alone_ms:.1f} ms between tokens"
        )
    a = s.at_load
    if a is not None and percentile is not None:
        q = percentile
        return f"{money}; {flight}, TTFT p{q} {a.ttft_s.at(q):.2f} s, ITL p{q} {a.itl_ms.at(q):.1f} ms"
    if a is not None:
        return (
            f"{money}; {flight}, TTFT p50/p90 {percentiles_cell(a.ttft_s, 's', 2)}, "
            f"ITL {percentiles_cell(a.itl_ms, 'ms', 1)}"
        )
    return f"{money}; {flight}, TTFT {s.ttft_s:.2f} s, ITL {s.itl_ms:.1f} ms, {s.utilization:.0%} busy"


def range_phrase(s: ServingEstimate) -> str:
    """``80% range: 13-34 replicas ($23,725-$62,050 a month); TTFT 0.14-0.82 s, ITL 36.0-55.2 ms``
    ("" when the estimate has no ranges)."""
    if s.replicas_range is None:
        return ""
    lo, hi = s.replicas_range
    fleet = f"{lo:,}" if lo == hi else f"{lo:,}\u2013{hi:,}"
    fleet += " replica" + ("" if lo == hi == 1 else "s")
    if s.usd_per_month_range is not None:
        m_lo, m_hi = s.usd_per_month_range
        fleet += f" ({fmt_usd(m_lo)}\u2013{fmt_usd(m_hi)} a month)"
    parts = [f"{RANGE_LABEL}: {fleet}"]
    if s.ttft_range_s is not None and s.itl_range_ms is not None:
        (t_lo, t_hi), (i_lo, i_hi) = s.ttft_range_s, s.itl_range_ms
        parts.append(f"TTFT {t_lo:.2f}\u2013{t_hi:.2f} s, ITL {i_lo:.1f}\u2013{i_hi:.1f} ms")
    return "; ".join(parts)


def judged_phrase(s: ServingEstimate, est: Estimate) -> str:
    """``likely meets first token within 1 s and 50 ms between tokens at p90 (the ITL's slow end:
    76.1 ms)`` (the status and the figure that sets it; its value at the percentile is in the fleet's
    figures beside it)."""
    spec = est.scenario.workload.serving
    targets = targets_phrase(est)
    if spec is None or not spec.has_targets or s.at_load is None or s.status is None:
        return f"meets {targets}"
    a, q = s.at_load, spec.percentile
    figures = []
    if spec.ttft_s is not None:
        v = a.ttft_s.at(q)
        figures.append(("TTFT", v, est.speed_constants.time_range(v, "ttft")[1], spec.ttft_s, "s", 2))
    if spec.itl_ms is not None:
        v = a.itl_ms.at(q)
        figures.append(("ITL", v, est.speed_constants.time_range(v, "itl")[1], spec.itl_ms, "ms", 1))
    if s.status == "meets":
        return f"meets {targets} even at the slow end of the 80% range"
    if s.status == "likely":
        name, _v, far, _t, unit, d = max(figures, key=lambda f: f[2] / f[3])
        return f"likely meets {targets} (the {name}'s slow end: {far:.{d}f} {unit})"
    name, v, _far, t, unit, d = max(figures, key=lambda f: f[1] / f[3])
    return f"at risk of missing {targets}: at p{q} the {name} is {v:.{d}f} {unit} (target {t:g} {unit})"


def stopped_phrase(s: ServingEstimate, spec: ServingSpec) -> str:
    """Why the planner stopped adding replicas to a fleet still short at its load ("" when it did
    not stop: the fleet meets the targets or was not sized at the load)."""
    q = spec.percentile
    if s.stopped == "idle" and s.idle is not None:
        a = s.idle
        over = []
        if math.isfinite(spec.ttft_limit_s) and a.ttft_s.at(q) > spec.ttft_limit_s:
            over.append(f"{a.ttft_s.at(q):.2f} s to the first token (target {spec.ttft_limit_s:g} s)")
        if math.isfinite(spec.itl_limit_ms) and a.itl_ms.at(q) > spec.itl_limit_ms:
            over.append(f"{a.itl_ms.at(q):.1f} ms between tokens (target {spec.itl_limit_ms:g} ms)")
        figures = " and ".join(over) or "more than the targets allow"
        return (
            f"even one request at a time on one replica takes {figures} at p{q}: more replicas cannot "
            "meet it; a faster GPU, a shorter prompt or a looser target can"
        )
    if s.stopped == "headroom":
        return (
            f"still short with {s.replicas:,} replicas, each nearly idle: at p{q} the target leaves no "
            "room for a request to wait behind another; a looser target or a faster GPU is needed"
        )
    return ""


def serving_summary(est: Estimate) -> str:
    """The answer in one line for a service: the decision's fleet, or the closest setup and why."""
    rec = est.recommended
    spec = est.scenario.workload.serving
    targets = targets_phrase(est)
    if rec is not None and rec.serving is not None:
        s = rec.serving
        gpus = f"{s.gpus_total} GPU{'s' if s.gpus_total != 1 else ''}"
        if spec is not None and not spec.has_targets:
            return (
                f"At {load_phrase(est)}: {fleet_name(rec)} ({gpus}) serves it cheapest per output token: "
                f"{fleet_figures(s)}."
            )
        q = spec.percentile if spec is not None else None
        return f"Recommended: {fleet_name(rec)} ({gpus}): {fleet_figures(s, q)}; {judged_phrase(s, est)}."
    per_gpu = [c for c in est.best_per_gpu().values() if c.serving is not None]
    if not per_gpu:
        return "Nothing fits on any GPU compared: not even one request's weights and KV cache."
    c = per_gpu[0]
    closest = c.serving
    assert closest is not None and spec is not None
    if not spec.has_targets:
        return (
            f"No GPU compared keeps up with {load_phrase(est)}: the closest, {fleet_name(c)}, falls "
            "behind and its queue grows without end."
        )
    if closest.missed_at_load:
        why = stopped_phrase(closest, spec) or "more replicas, a faster GPU or a looser target is needed"
        return (
            f"No setup meets {targets} in the simulation at its load. Closest: {fleet_name(c)}, "
            f"{judged_phrase(closest, est).removeprefix('at risk of missing ' + targets + ': ')}; "
            f"{why}."
        )
    # Why it misses: the figures of one request on an idle replica, which no fleet size improves
    # (the fleet's own TTFT adds the queue of a fleet sized to the closest it gets).
    alone = closest.ttft_alone_s
    first = f"first token takes {alone:.2f} s (target {spec.ttft_limit_s:g} s)"
    if closest.missed == "itl":
        why = f"even one request waits {closest.itl_alone_ms:.1f} ms between tokens (target {spec.itl_limit_ms:g} ms)"
        if alone > spec.ttft_limit_s:
            why += f" and its {first}"
    else:
        why = f"even one request's {first}"
    overhead_s = request_overhead_s_of(spec, est.engine, est.speed_constants)
    sized = sized_for_phrase(closest)
    sized = f" Its fleet is {sized}." if sized else ""
    if overhead_s >= spec.ttft_limit_s:
        # No GPU shortens the serving stack's own time: say so rather than suggest faster GPUs.
        return (
            f"No setup meets {targets}. The serving stack's per-request time alone "
            f"({overhead_s * 1000:.0f} ms: HTTP, tokenizing, scheduling, streaming) is longer than the "
            f"first-token target, so no GPU can meet it. Closest: {fleet_name(c)}, where {why}. "
            f"Loosen the target, or state the per-request time your stack achieves.{sized}"
        )
    return (
        f"No setup meets {targets}. Closest: {fleet_name(c)}, where {why}; a faster GPU, tensor "
        f"parallelism, lighter weights or a looser target is needed.{sized}"
    )


def fleet_row(c: Candidate, s: ServingEstimate | None = None) -> list[str]:
    """One row of the fleet table (see :data:`FLEET_HEADER`); ``s`` the fleet with its figures at
    the load (``Estimate.serving_of``), else the candidate's own."""
    s = s if s is not None else c.serving
    if s is None:
        return [c.gpu.name, "does not fit"] + ["-"] * (len(FLEET_HEADER) - 2)
    a = s.at_load
    if a is not None and (s.meets_slo or s.missed_at_load):
        ttft = percentiles_cell(a.ttft_s, "s", 2)
        itl = percentiles_cell(a.itl_ms, "ms", 1)
    else:
        ttft = f"{s.ttft_shown_s:.2f} s" + ("" if s.meets_slo else " alone")
        itl = f"{s.itl_shown_ms:.1f} ms" + ("" if s.meets_slo else " alone")
    if s.disaggregated is not None:
        d = s.disaggregated
        fleet = f"{d.prefill_instances}P + {d.decode_instances}D {TIMES} " + (
            "1 GPU" if c.gpu_count == 1 else f"{c.gpu_count} ({c.parallelism})"
        )
    else:
        fleet = f"{s.replicas} {TIMES} " + (
            "1 GPU" if c.gpu_count == 1 else f"{c.gpu_count} ({c.parallelism})"
        )
    return [
        c.gpu.name,
        fleet,
        f"{s.gpus_total:,}",
        f"{s.concurrency_per_replica:,}",
        f"{s.requests_per_s_per_replica:.2f}",
        ttft,
        itl,
        status_word(s),
        _LIMITED.get(s.limited_by, s.limited_by),
        fmt_usd_per_hour(s.usd_per_hour) if s.usd_per_hour is not None else "-",
        fmt_usd(s.usd_per_month) if s.usd_per_month is not None else "-",
        fmt_usd_per_mtok(s.usd_per_million_tokens) if s.usd_per_million_tokens is not None else "-",
        buy_phrase(s),
    ]


def fleet_rows(est: Estimate, show_all: bool = False) -> list[tuple[Candidate, list[str]]]:
    """The fleet table's rows: one per GPU type (the decision's order), or every candidate."""
    chosen = list(est.candidates) if show_all else list(est.best_per_gpu().values())
    return [(c, fleet_row(c, est.serving_of(c))) for c in chosen]


def capacity_line(c: Candidate) -> str:
    """``one replica serves 2,340 output tokens/s (780 per GPU)``."""
    s = c.serving
    if s is None:
        return ""
    if s.disaggregated is not None and s.at_load is not None:
        served = s.at_load.output_tokens_per_s
        return (
            f"the two pools serve {fmt_rate(served)} output tokens/s at the load "
            f"({fmt_rate(served / max(s.gpus_total, 1))} per GPU)"
        )
    return (
        f"one replica serves {fmt_rate(s.tokens_per_s_per_replica)} output tokens/s "
        f"({fmt_rate(s.tokens_per_s_per_replica / c.gpu_count)} per GPU)"
    )


def _sentence(text: str) -> str:
    """``text`` with a capital first letter (``str.capitalize`` would lower "GPU")."""
    return text[:1].upper() + text[1:]


def engine_name(engine_id: str) -> str:
    """``vLLM``, ``TensorRT-LLM`` (the engine profile's name, else its id)."""
    profile = RECORDS.get(engine_id)
    return profile.name if profile is not None else engine_id


def memory_lines(c: Candidate, engine_id: str) -> list[tuple[str, str]]:
    """A service's memory per GPU at its operating point, as (kind, text): the need with the KV cache
    of the requests in flight, then what the engine preallocates ("text"), or, when its default KV
    pool is too small for the concurrency, the setting that makes room ("caution"); last, when the
    engine schedules fewer sequences by default than the operating point runs, the setting that
    raises it ("caution", :func:`scheduler_lines`). Every figure is the JSON's
    (``serving.memory_gib``), written with one decimal."""
    s = c.serving
    if s is None or s.memory is None:
        return []
    return _pool_lines(c, engine_id) + scheduler_lines(c, engine_id)


def scheduler_lines(c: Candidate, engine_id: str) -> list[tuple[str, str]]:
    """A caution when the candidate's operating point runs more sequences per replica than
    ``engine_id`` schedules by default on its GPU (vLLM's ``max_num_seqs``: the estimate's
    ``ServingEstimate.scheduler`` and ``raise_max_sequences_to``, the JSON's ``engine_defaults``),
    else nothing."""
    s = c.serving
    if s is None or s.scheduler is None or s.raise_max_sequences_to is None:
        return []
    return [
        (
            "caution",
            f"{engine_name(engine_id)} runs at most {s.scheduler.max_sequences:,} sequences at once by default "
            f"on the {c.gpu.name} (max_num_seqs): start it with max_num_seqs "
            f"{s.raise_max_sequences_to} for this operating point.",
        )
    ]


def _pool_lines(c: Candidate, engine_id: str) -> list[tuple[str, str]]:
    """The memory lines of :func:`memory_lines` (the need, then the engine's KV pool)."""
    s = c.serving
    assert s is not None and s.memory is not None
    m = s.memory
    n = m.concurrency
    requests = f"{n:,} request{'s' if n != 1 else ''}"
    out = [
        (
            "text",
            f"Memory per GPU with {requests} in flight: {fmt_gib(m.need / GIB)} of {fmt_gib(c.capacity_gib)} GiB "
            f"(weights {fmt_gib(m.weights / GIB)}, KV cache {fmt_gib(m.kv_in_flight / GIB)} for {n:,} "
            f"{TIMES} {m.tokens_per_sequence:,} tokens, activations {fmt_gib(m.activations / GIB)}, "
            f"overhead {fmt_gib(m.overhead / GIB)}).",
        )
    ]
    setting = m.setting
    if not setting:
        return out
    name = engine_name(engine_id)
    if m.pool_short:
        assert m.fraction_needed is not None  # a short pool has a share that would hold the requests
        # The share to three decimals first, so that a float's tail (0.9000000001) does not round
        # the setting up a step.
        out.append(
            (
                "caution",
                f"{name}'s default {setting} {m.fraction:g} leaves a KV pool of "
                f"{fmt_gib(m.kv_pool / GIB)} GiB, room for {m.pool_sequences:,} of them: set it to at least "
                f"{math.ceil(round(m.fraction_needed, 3) * 100) / 100:.2f}.",
            )
        )
    else:
        out.append(
            (
                "text",
                f"{name} preallocates a {fmt_gib(m.kv_pool / GIB)} GiB KV pool ({setting} "
                f"{m.fraction:g}, room for {m.pool_sequences:,} such requests), so "
                f"{fmt_gib(m.engine_total / GIB)} GiB of the card are in use however few requests run.",
            )
        )
    return out


def fleet_detail(
    c: Candidate, engine_id: str = "", s: ServingEstimate | None = None
) -> list[tuple[str, str]]:
    """The detail panel's lines about a candidate's fleet, as (kind, text); kind "problem" for a
    missed target, "caution" for a KV pool too small at the engine's default or a target at risk,
    else "text"; ``s`` the fleet with its figures at the load (``Estimate.serving_of``)."""
    s = s if s is not None else c.serving
    if s is None:
        return [("problem", "Not even one request's KV cache fits at the 90th-percentile lengths.")]
    out = [
        ("text", f"Fleet: {fleet_name(c, s)}, {s.gpus_total} GPU{'s' if s.gpus_total != 1 else ''} in all."),
        ("text", fleet_figures(s) + "."),
    ]
    if s.at_load is not None:
        kind = "caution" if s.status == "at risk" or s.at_load.saturated else "text"
        out.append((kind, "At the load: " + at_load_phrase(s) + "."))
    if s.disaggregated is not None:
        out.append(("text", "Disaggregated: " + disaggregated_phrase(s) + "."))
    if s.speculative is not None:
        out.append(("text", "Speculative decoding: " + speculative_phrase(s) + "."))
    out += [
        ("text", _sentence(capacity_line(c)) + f"; limited by {_LIMITED.get(s.limited_by, s.limited_by)}."),
        *memory_lines(c, engine_id),
    ]
    if s.replicas_range is not None:
        out.append(("text", range_phrase(s) + "."))
    if not s.meets_slo and not s.missed_at_load:
        what = "the time between tokens" if s.missed == "itl" else "the time to first token"
        closest = sized_for_phrase(s)
        out.append(
            (
                "problem",
                f"Misses {what} even with one request in flight"
                + (f"; {closest} (at the requested percentile)." if closest else "."),
            )
        )
    elif s.missed_at_load:
        what = "the time between tokens" if s.missed == "itl" else "the time to first token"
        out.append(
            (
                "problem",
                f"At risk: at the load {what} misses its target, even after the planner's corrections.",
            )
        )
        spec = s.plan.spec if s.plan is not None else None
        why = "" if spec is None else stopped_phrase(s, spec)
        if why:
            out.append(("problem", why[0].upper() + why[1:] + "."))
    if s.buy is not None:
        b = s.buy
        verdict = "buying is cheaper" if b.buy_is_cheaper else "renting is cheaper"
        out.append(
            (
                "text",
                f"Buy vs rent for the fleet: {fmt_usd(b.purchase_usd)} up front, "
                f"{fmt_usd(b.owned_usd_per_month)} a month owned against {fmt_usd(b.rent_usd_per_month)} "
                f"rented: {verdict}.",
            )
        )
    return out


def spec_has_targets(est: Estimate) -> bool:
    spec = est.scenario.workload.serving
    return spec is not None and spec.has_targets


def serving_report(est: Estimate) -> dict[str, Any]:
    """The report's serving fields (see ``Report``): {} for a scenario that is not a service."""
    if est.scenario.workload.serving is None:
        return {}
    lines = [
        ("Load", traffic_phrase(est)),
        ("Targets", targets_phrase(est)),
        ("Per request", overhead_phrase(est)),
    ]
    rec = est.recommended
    if rec is not None and rec.serving is not None:
        s = rec.serving
        lines.append(("Fleet", f"{fleet_name(rec)}: {s.gpus_total} GPU{'s' if s.gpus_total != 1 else ''}"))
        lines.append(("Monthly cost", fleet_figures(s)))
        if s.at_load is not None:
            lines.append(("At the load", at_load_phrase(s)))
            if spec_has_targets(est):
                lines.append(("Targets met", judged_phrase(s, est)))
        if s.disaggregated is not None:
            lines.append(("Disaggregated", disaggregated_phrase(s)))
        if s.speculative is not None:
            lines.append(("Speculative", speculative_phrase(s)))
        lines.append(("Capacity", capacity_line(rec)))
        if s.replicas_range is not None:
            lines.append((RANGE_LABEL.capitalize(), range_phrase(s).split(": ", 1)[1]))
        memory = memory_lines(rec, est.engine)
        if memory:
            lines.append(("Memory per GPU", memory[0][1].removeprefix("Memory per GPU with ").rstrip(".")))
        if len(memory) > 1:
            lines.append(("KV pool", memory[1][1].rstrip(".")))
        if s.buy is not None:
            lines.append(("Buy vs rent", buy_phrase(s)))
    else:
        lines.append(("Fleet", serving_summary(est)))
    return {
        "vram_caption": VRAM_CAPTION,
        "fleet_note": FLEET_NOTE,
        "latency_caption": LATENCY_CAPTION,
        "serving_lines": tuple(lines),
        "fleet_header": tuple(FLEET_HEADER),
        "fleet_rows": tuple(tuple(row) for _c, row in fleet_rows(est)),
    }
