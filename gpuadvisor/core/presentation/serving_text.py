"""The words and the fleet table of a service (``workload.serving``), shared by the window, the CLI
and the PDF report: each of them shows these strings and never re-derives a figure."""

from __future__ import annotations

import math
from typing import Any

from ..estimation.results import Candidate, Estimate
from ..estimation.serving import ServingEstimate, request_overhead_s_of
from ..formatting import fmt_gib, fmt_rate, fmt_usd, fmt_usd_per_hour, fmt_usd_per_mtok
from ..specs.constants import RANGE_LABEL
from ..specs.engines import RECORDS, engine_lineage

TIMES = "\u00d7"

#: The fleet table's columns (window, CLI and PDF).
FLEET_HEADER = [
    "GPU",
    "fleet",
    "GPUs",
    "in flight/replica",
    "req/s per replica",
    "TTFT",
    "ITL",
    "targets",
    "limited by",
    "$/hour",
    "$/month",
    "$/1M tok",
    "buy vs rent",
]

#: The memory chart's caption for a service (the PDF's Figure 1).
VRAM_CAPTION = (
    "Memory per GPU of one replica of each GPU type's fleet, in the table's order (\u2605: the recommended "
    "setup, outlined), at its operating point: weights, activations, the KV cache of the requests in flight "
    "and the overhead, then, hatched, the part of the KV pool the engine preallocates that no request uses. "
    "The black tick is the usable capacity, the marker on the right the verdict."
)

_LIMITED = {"kv_cache": "KV cache", "latency": "latency", "compute": "compute"}


def fleet_name(c: Candidate) -> str:
    """``3 × (1 × NVIDIA H100 SXM5 80 GB)`` or ``2 × (4 × NVIDIA L4, tensor)``."""
    s = c.serving
    replicas = s.replicas if s is not None else 1
    inner = c.gpu.name if c.gpu_count == 1 else f"{c.gpu_count} {TIMES} {c.gpu.name}, {c.parallelism}"
    return f"{replicas} {TIMES} ({inner})" if c.gpu_count > 1 else f"{replicas} {TIMES} {inner}"


def targets_phrase(est: Estimate) -> str:
    """``first token within 1 s and 50 ms between tokens at p90``."""
    spec = est.scenario.workload.serving
    if spec is None:
        return ""
    return f"first token within {spec.ttft_s:g} s and {spec.itl_ms:g} ms between tokens at p{spec.percentile}"


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
    """``20 requests/s of 2,000 prompt and 300 output tokens, 24 h a day``."""
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
    return (
        f"{spec.requests_per_s:g} request{'' if spec.requests_per_s == 1 else 's'}/s of "
        f"{w.prompt_tokens:,} prompt and {w.output_tokens:,} output "
        f"tokens{tail}{cache}, {spec.hours_per_day:g} h a day"
    )


def buy_phrase(s: ServingEstimate) -> str:
    """``buy: own $3,515/mo ($105,000 up front)`` or "-"."""
    b = s.buy
    if b is None:
        return "-"
    verdict = "buy" if b.buy_is_cheaper else "rent"
    return f"{verdict}: own {fmt_usd(b.owned_usd_per_month)}/mo ({fmt_usd(b.purchase_usd)} up front)"


def fleet_figures(s: ServingEstimate) -> str:
    """``$4,358 a month ($5.97 an hour, $0.28 per 1M output tokens); 117 requests in flight per
    replica, TTFT 0.19 s, ITL 49.9 ms, 87% busy``."""
    money = (
        f"{fmt_usd(s.usd_per_month)} a month ({fmt_usd_per_hour(s.usd_per_hour)} an hour, "
        f"{fmt_usd_per_mtok(s.usd_per_million_tokens)} per 1M output tokens)"
        if s.usd_per_month is not None
        else "no price in the catalog"
    )
    flight = f"{s.concurrency_per_replica:,} request{'' if s.concurrency_per_replica == 1 else 's'} in flight per replica"
    if not s.meets_slo:
        # A fleet that misses a target is sized for the rate alone: its queue says nothing; what one
        # request sees on an idle replica is why it misses.
        return (
            f"{money}; {flight}; one request alone waits {s.ttft_alone_s:.2f} s for its first token "
            f"and {s.itl_ms:.1f} ms between tokens"
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


def serving_summary(est: Estimate) -> str:
    """The answer in one line for a service: the decision's fleet, or the closest setup and why."""
    rec = est.recommended
    targets = targets_phrase(est)
    if rec is not None and rec.serving is not None:
        s = rec.serving
        return (
            f"Recommended: {fleet_name(rec)} ({s.gpus_total} GPU{'s' if s.gpus_total != 1 else ''}): "
            f"{fleet_figures(s)}; meets {targets}."
        )
    per_gpu = [c for c in est.best_per_gpu().values() if c.serving is not None]
    if not per_gpu:
        return "Nothing fits on any GPU compared: not even one request's weights and KV cache."
    c = per_gpu[0]
    closest = c.serving
    assert closest is not None
    spec = est.scenario.workload.serving
    assert spec is not None
    # Why it misses: the figures of one request on an idle replica, which no fleet size improves
    # (the fleet's own TTFT adds the queue of a fleet sized for the rate alone).
    alone = closest.ttft_alone_s
    first = f"first token takes {alone:.2f} s (target {spec.ttft_s:g} s)"
    if closest.missed == "itl":
        why = f"even one request waits {closest.itl_ms:.1f} ms between tokens (target {spec.itl_ms:g} ms)"
        if alone > spec.ttft_s:
            why += f" and its {first}"
    else:
        why = f"even one request's {first}"
    overhead_s = request_overhead_s_of(spec, est.engine, est.speed_constants)
    if overhead_s >= spec.ttft_s:
        # No GPU shortens the serving stack's own time: say so rather than suggest faster GPUs.
        return (
            f"No setup meets {targets}. The serving stack's per-request time alone "
            f"({overhead_s * 1000:.0f} ms: HTTP, tokenizing, scheduling, streaming) is longer than the "
            f"first-token target, so no GPU can meet it. Closest: {fleet_name(c)}, where {why}. "
            "Loosen the target, or state the per-request time your stack achieves."
        )
    return (
        f"No setup meets {targets}. Closest: {fleet_name(c)}, where {why}; a faster GPU, tensor "
        "parallelism, lighter weights or a looser target is needed."
    )


def fleet_row(c: Candidate) -> list[str]:
    """One row of the fleet table (see :data:`FLEET_HEADER`)."""
    s = c.serving
    if s is None:
        return [c.gpu.name, "does not fit"] + ["-"] * (len(FLEET_HEADER) - 2)
    return [
        c.gpu.name,
        f"{s.replicas} {TIMES} " + ("1 GPU" if c.gpu_count == 1 else f"{c.gpu_count} ({c.parallelism})"),
        f"{s.gpus_total:,}",
        f"{s.concurrency_per_replica:,}",
        f"{s.requests_per_s_per_replica:.2f}",
        f"{s.ttft_shown_s:.2f} s" + ("" if s.meets_slo else " alone"),
        f"{s.itl_ms:.1f} ms",
        "meets" if s.meets_slo else f"misses {s.missed.upper()}",
        _LIMITED.get(s.limited_by, s.limited_by),
        fmt_usd_per_hour(s.usd_per_hour) if s.usd_per_hour is not None else "-",
        fmt_usd(s.usd_per_month) if s.usd_per_month is not None else "-",
        fmt_usd_per_mtok(s.usd_per_million_tokens) if s.usd_per_million_tokens is not None else "-",
        buy_phrase(s),
    ]


def fleet_rows(est: Estimate, show_all: bool = False) -> list[tuple[Candidate, list[str]]]:
    """The fleet table's rows: one per GPU type (the decision's order), or every candidate."""
    chosen = list(est.candidates) if show_all else list(est.best_per_gpu().values())
    return [(c, fleet_row(c)) for c in chosen]


def capacity_line(c: Candidate) -> str:
    """``one replica serves 2,340 output tokens/s (780 per GPU)``."""
    s = c.serving
    if s is None:
        return ""
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
    d = s.memory.to_dict()
    n = d["concurrency"]
    requests = f"{n:,} request{'s' if n != 1 else ''}"
    out = [
        (
            "text",
            f"Memory per GPU with {requests} in flight: {fmt_gib(d['need'])} of {fmt_gib(c.capacity_gib)} GiB "
            f"(weights {fmt_gib(d['weights'])}, KV cache {fmt_gib(d['kv_cache_in_flight'])} for {n:,} "
            f"{TIMES} {d['kv_tokens_per_sequence']:,} tokens, activations {fmt_gib(d['activations'])}, "
            f"overhead {fmt_gib(d['overhead'])}).",
        )
    ]
    setting = d["pool_setting"]
    if not setting:
        return out
    name = engine_name(engine_id)
    if s.memory.pool_short:
        out.append(
            (
                "caution",
                f"{name}'s default {setting} {d['pool_fraction']:g} leaves a KV pool of "
                f"{fmt_gib(d['kv_pool'])} GiB, room for {d['pool_sequences']:,} of them: set it to at least "
                f"{math.ceil(d['pool_fraction_needed'] * 100) / 100:.2f}.",
            )
        )
    else:
        out.append(
            (
                "text",
                f"{name} preallocates a {fmt_gib(d['kv_pool'])} GiB KV pool ({setting} "
                f"{d['pool_fraction']:g}, room for {d['pool_sequences']:,} such requests), so "
                f"{fmt_gib(d['engine_total'])} GiB of the card are in use however few requests run.",
            )
        )
    return out


def fleet_detail(c: Candidate, engine_id: str = "") -> list[tuple[str, str]]:
    """The detail panel's lines about a candidate's fleet, as (kind, text); kind "problem" for a
    missed target, "caution" for a KV pool too small at the engine's default, else "text"."""
    s = c.serving
    if s is None:
        return [("problem", "Not even one request's KV cache fits at the 90th-percentile lengths.")]
    out = [
        ("text", f"Fleet: {fleet_name(c)}, {s.gpus_total} GPU{'s' if s.gpus_total != 1 else ''} in all."),
        ("text", fleet_figures(s) + "."),
        ("text", _sentence(capacity_line(c)) + f"; limited by {_LIMITED.get(s.limited_by, s.limited_by)}."),
        *memory_lines(c, engine_id),
    ]
    if s.replicas_range is not None:
        out.append(("text", range_phrase(s) + "."))
    if not s.meets_slo:
        what = "the time between tokens" if s.missed == "itl" else "the time to first token"
        out.append(("problem", f"Misses {what} even with one request in flight: sized for the rate alone."))
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


def serving_report(est: Estimate) -> dict[str, Any]:
    """The report's serving fields (see ``Report``): {} for a scenario that is not a service."""
    if est.scenario.workload.serving is None:
        return {}
    lines = [
        ("Traffic", traffic_phrase(est)),
        ("Targets", targets_phrase(est)),
        ("Per request", overhead_phrase(est)),
    ]
    rec = est.recommended
    if rec is not None and rec.serving is not None:
        s = rec.serving
        lines.append(("Fleet", f"{fleet_name(rec)}: {s.gpus_total} GPU{'s' if s.gpus_total != 1 else ''}"))
        lines.append(("Monthly cost", fleet_figures(s)))
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
        "serving_lines": tuple(lines),
        "fleet_header": tuple(FLEET_HEADER),
        "fleet_rows": tuple(tuple(row) for _c, row in fleet_rows(est)),
    }
