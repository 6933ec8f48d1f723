"""The comparison as plain text: the table the CLI's ``estimate`` and the headless launcher print.

Pure (no I/O): :func:`render_estimate` turns an :class:`~gpuadvisor.core.estimation.results.Estimate`
into lines of text; figures are written by :mod:`gpuadvisor.core.formatting`, like everywhere else.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass

from ..estimation.results import Candidate, Estimate
from ..formatting import (
    fmt_count,
    fmt_gib,
    fmt_hours_range,
    fmt_rate,
    fmt_seconds,
    fmt_signed_gib,
    fmt_usd_per_mtok,
    fmt_usd_range,
)
from ..specs.constants import RANGE_LABEL
from ..units import GIB
from .prices import pick_price_warnings, rent_as
from .serving_text import (
    FLEET_HEADER,
    FLEET_NOTE,
    capacity_line,
    disaggregated_phrase,
    fleet_rows,
    memory_lines,
    overhead_phrase,
    range_phrase,
    speculative_phrase,
    targets_phrase,
    traffic_phrase,
)
from .wording import point_to_changes, scenario_title, speed_assumption, summary_line


def text_table(rows: list[list[str]], header: list[str], right: set[int]) -> str:
    """Rows as fixed-width columns under a header and a rule; columns in ``right`` align right."""
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]

    def fmt(row: list[str]) -> str:
        return "  ".join(
            str(c).rjust(w) if i in right else str(c).ljust(w) for i, (c, w) in enumerate(zip(row, widths))
        ).rstrip()

    return "\n".join([fmt(header), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows])


def setup_cell(c: Candidate) -> str:
    """The setup column: ``single GPU``, ``8 × tensor`` or ``64 × TP8 · PP4 · DP2 ZeRO-1`` (as the
    window and the PDF write it)."""
    lay = c.layout
    if lay is None or lay.shorthand:
        return "single GPU" if c.gpu_count == 1 else f"{c.gpu_count} \u00d7 {c.parallelism}"
    return f"{c.gpu_count} \u00d7 {lay.name}"


@dataclass(frozen=True)
class _Columns:
    """The comparison table's optional columns: which of them the estimate fills."""

    service: bool  # sequences in flight and what the engine takes, at a service's operating point
    host: bool  # host RAM per node (GPU layers in system RAM, offload)
    perf: bool  # speed and cost (not a service's: its fleet table has them)
    inference: bool  # tokens/s per user and prompt tokens/s
    session: bool  # a session on the machine you own: GPU layers and the speed of one answer


#: The table's first columns: where the setup runs, its verdict and its memory per GPU in GiB.
MEMORY_HEADER = [
    "GPU",
    "setup",
    "verdict",
    "need/GPU",
    "capacity",
    "headroom",
    "weights",
    "grads",
    "optim",
    "activ",
    "kv",
    "adapt",
    "overhead",
    "max batch",
    "max ctx",
]
#: How the deadline/budget column marks a limit's status.
LIMIT_MARKS = {"meets": "ok", "within": "ok", "likely": "likely", "at risk": "NO", "over": "NO", None: "-"}


def render_estimate(est: Estimate, show_all: bool = False, warnings: bool = True) -> str:
    """The human-readable comparison; ``warnings=False`` leaves the warnings out (the CLI prints
    them on stderr, :func:`text_warnings`).

    In order: the title and the model, a service's fleet table, the table of setups (one row per GPU
    type, or every setup with ``show_all``) and the notes that read it, the weights table, the
    calibration, the summary, where to rent, the changes and the warnings."""
    lines = _title_lines(est)
    if est.scenario.workload.serving is not None:  # a service: the fleet table comes first
        lines += serving_lines(est, show_all)
    chosen: list[Candidate] = list(est.candidates) if show_all else list(est.best_per_gpu().values())
    cols = _columns(est, chosen)
    header = _header(est, cols)
    rows = [_row(est, c, cols) for c in chosen]
    numbers = set(range(3, len(header)))  # right-aligned; the last two speed columns are words
    right = numbers - {len(header) - 1, len(header) - 2} if cols.perf else numbers
    lines += [text_table(rows, header, right=right), "", *_table_notes(est, cols, show_all)]
    if est.weights_table:
        lines += ["", *weights_table_lines(est)]
    lines += calibration_lines(est)
    lines.append(summary_line(est) + f" (engine profile: {est.engine})")
    assumption = speed_assumption(est)
    if assumption:
        lines.append(assumption)
    where = rent_as(est)
    if where:
        lines.append(where)
    for advice in est.advice:
        lines.append(f"Change: {advice}")
    # The text lists the changes before the warnings.
    if warnings:
        lines += [f"Warning: {w}" for w in text_warnings(est)]
    return "\n".join(lines)


def _title_lines(est: Estimate) -> list[str]:
    """The title, then the model and the workload in one line, then a blank line."""
    m, w = est.model, est.scenario.workload
    return [
        scenario_title(est),
        f"Model: {m.name}, {fmt_count(m.parameters)} parameters"
        + (f" ({fmt_count(m.active_parameters)} active)" if m.is_moe else "")
        + f"; workload: {w.kind}, weights {w.weights}, "
        + ("serving" if w.serving is not None else f"batch {w.batch_size}")
        + f", context {w.context_tokens:,} tokens",
        "",
    ]


def _columns(est: Estimate, chosen: list[Candidate]) -> _Columns:
    """Which optional columns the rows of ``chosen`` fill."""
    w = est.scenario.workload
    # A service's speed and cost are its fleet's (the table above): one batch's would contradict them.
    has_perf = w.serving is None and any(c.performance is not None for c in chosen)
    return _Columns(
        service=w.serving is not None,
        host=any(c.memory.host for c in chosen),
        perf=has_perf,
        inference=has_perf and not w.is_training,
        session=bool(est.session and has_perf),
    )


def _header(est: Estimate, cols: _Columns) -> list[str]:
    """The column titles: memory, then a service's operating point, host RAM, and speed and cost
    (a session's own: no job; how fast it answers and how many layers fit)."""
    header = list(MEMORY_HEADER)
    if cols.service:  # the operating point: sequences in flight, and what the engine takes with its KV pool
        header += ["in flight", "engine takes"]
    if cols.host:
        header += ["host RAM"]
    if cols.session:
        header += [
            "GPU layers",
            "tokens/s",
            "prompt tok/s",
            f"{est.scenario.workload.prompt_tokens:,}-tok prompt",
            "bound",
        ]
    elif cols.perf:
        header += (
            ["tokens/s"]
            + (["tok/s/user", "prompt tok/s"] if cols.inference else [])
            + ["job time", "cost", "$/1M tok", "deadline/budget", "bound"]
        )
    return header


def _row(est: Estimate, c: Candidate, cols: _Columns) -> list[str]:
    """One setup's cells, in the header's order; a star marks the recommendation, ``*`` a
    calibrated GPU."""
    g = c.memory.gib()
    star = "\u2605 " if est.decision is not None and c.key == est.decision.recommended_key else ""
    row = [
        star + c.gpu.name + (" *" if est.is_calibrated(c.gpu.id) else ""),
        setup_cell(c),
        c.verdict,
        fmt_gib(g["device_total"]),
        fmt_gib(c.capacity_gib),
        fmt_signed_gib(c.headroom_gib),
    ] + [
        fmt_gib(g[k])
        for k in ("weights", "gradients", "optimizer", "activations", "kv_cache", "adapters", "overhead")
    ]
    wi = est.what_if(c)
    row += [f"{wi.max_batch:,}", f"{wi.max_context:,}"]
    if cols.service:
        mem = c.serving.memory if c.serving is not None else None
        row += [f"{mem.concurrency:,}", fmt_gib(round(mem.engine_total / GIB, 3))] if mem else ["-", "-"]
    if cols.host:
        row += [f"{c.host_memory_gib:.1f}"]  # host RAM per node (gpu_layers, offload)
    if cols.session:
        row += session_cells(est, c)
    elif cols.perf:
        row += _speed_cost_cells(c, cols.inference)
    return row


def _speed_cost_cells(c: Candidate, inference: bool) -> list[str]:
    """tokens/s (per user and prompt for inference), job time and cost ranges, $ per million
    tokens, whether the deadline and budget are met, and what bounds the speed (each figure at
    the precision the JSON gives it)."""
    perf, cost = c.performance, c.cost
    tps = None if perf is None else round(perf.tokens_per_s.expected, 2)
    cells = [fmt_rate(tps) if tps else "-"]
    if inference:
        user = (
            None
            if perf is None or perf.tokens_per_s_per_user is None
            else round(perf.tokens_per_s_per_user, 2)
        )
        prompt = (
            None if perf is None or perf.prefill_tokens_per_s is None else round(perf.prefill_tokens_per_s, 1)
        )
        cells += [fmt_rate(user) if user else "-", fmt_rate(prompt) if prompt else "-"]
    hours: tuple[float | None, float | None] = (None, None)
    money: tuple[float | None, float | None] = (None, None)
    per_m = None
    if cost is not None:
        hours = (round(cost.job_hours.low, 4), round(cost.job_hours.high, 4))
        if cost.cost_usd is not None:
            money = (round(cost.cost_usd.low, 2), round(cost.cost_usd.high, 2))
        per_m = None if cost.usd_per_million_tokens is None else round(cost.usd_per_million_tokens, 4)
    limits = "-"
    if perf is not None or cost is not None:
        deadline = None if cost is None else cost.deadline_status
        budget = None if cost is None else cost.budget_status
        limits = f"{LIMIT_MARKS[deadline]}/{LIMIT_MARKS[budget]}"
    return cells + [
        fmt_hours_range(*hours),
        fmt_usd_range(*money),
        fmt_usd_per_mtok(per_m) if per_m is not None else "-",
        limits,
        str((perf.bound if perf is not None else None) or "-"),
    ]


def _table_notes(est: Estimate, cols: _Columns, show_all: bool) -> list[str]:
    """The notes under the table: what the memory columns hold, a service's and a session's
    columns, the speed and cost ranges, and what one row stands for."""
    notes = [
        "Memory in GiB per GPU; need = device total (tensors + CUDA context + fragmentation). "
        "max batch / max ctx: the largest batch and the longest context that fit that setup."
    ]
    if cols.service:
        notes.append(
            "A service's memory is one replica's per GPU at its operating point: the KV cache (kv) of the "
            "requests in flight per replica; engine takes: plus the unused part of the KV pool the engine "
            "preallocates (what nvidia-smi shows). Speed, latency and cost: the fleet table above (one "
            "replica per row here)."
        )
    if cols.session:
        notes.append(
            "A session on the machine you own: tokens/s = generation of one answer; prompt: the time to "
            "read the prompt (the wait for the first token); GPU layers: layers on the GPU, the rest in "
            "system RAM. No job is timed or priced (give workload.requests for one)."
        )
    elif cols.perf:
        notes.append(
            f"job time, cost: the {RANGE_LABEL} (low-high; it held 8 in 10 published measurements the "
            "speed model was not fitted to)."
        )
    if not show_all:
        notes.append(
            "One row per GPU type: its best setup under the deadline and budget (use --all for every "
            "count and parallelism); \u2605 marks the recommendation."
        )
    return notes


def text_warnings(est: Estimate, today: _dt.date | None = None, stale_months: int = 6) -> list[str]:
    """The warnings of the text output: the core's (pointing to the changes printed above it) and a
    stale or undated price at the recommendation."""
    today = today or _dt.date.today()
    out = point_to_changes(est.warnings, "above") + pick_price_warnings(est, today, stale_months)
    return list(dict.fromkeys(out))


def session_cells(est: Estimate, c: Candidate) -> list[str]:
    """A session's cells: GPU layers, generation tokens/s, prompt tokens/s, prompt time, bound."""
    s, perf = est.session_of(c), c.performance
    if s is None or perf is None:
        return ["-"] * 5
    return [
        f"{s.gpu_layers}/{s.num_layers}",
        fmt_rate(s.tokens_per_s),
        fmt_rate(s.prefill_tokens_per_s) if s.prefill_tokens_per_s else "-",
        fmt_seconds(s.prompt_s),
        perf.bound,
    ]


def weights_table_lines(est: Estimate) -> list[str]:
    """Which weight type fits the one GPU compared: the estimate's ``weights_table`` as a text table."""
    rows = est.weights_table
    if not rows:
        return []
    lead = next(iter(est.best_per_gpu().values()), None)
    gpu = lead.gpu.name if lead is not None else "the GPU"
    header = ["weights", "GiB", "fit", "GPU layers", "tokens/s", "prompt tok/s", "max ctx"]
    table = []
    for r in rows:
        table.append(
            [
                ("> " if r.current else "  ") + r.label,
                fmt_gib(r.weights_gib),
                {"full": "fits", "partial": "partly in RAM", "no": "no"}[r.fit],
                f"{r.gpu_layers}/{r.num_layers}" if r.gpu_layers is not None else "-",
                fmt_rate(r.tokens_per_s) if r.tokens_per_s is not None else "-",
                fmt_rate(r.prefill_tokens_per_s) if r.prefill_tokens_per_s is not None else "-",
                f"{r.max_context:,}" if r.max_context is not None else "-",
            ]
        )
    return [
        f"Weight types on {gpu} ({est.engine}; > marks the scenario's):",
        text_table(table, header, right={1, 3, 4, 5, 6}),
    ]


def serving_lines(est: Estimate, show_all: bool = False) -> list[str]:
    """The fleet table of a service (``workload.serving``), with its traffic and targets."""
    out = [
        f"Load: {traffic_phrase(est)}; targets: {targets_phrase(est)}.",
        f"Per request: {overhead_phrase(est)}.",
        "",
    ]
    rows = fleet_rows(est, show_all)
    star = est.decision.recommended_key if est.decision is not None else None
    table = [(["\u2605 " + r[0]] + r[1:]) if c.key == star else r for c, r in rows]
    out.append(text_table(table, FLEET_HEADER, right=set(range(2, 7)) | {9, 10, 11}))
    rec = est.recommended
    if rec is not None:
        out.append(f"\u2605 {capacity_line(rec)}.")
        if rec.serving is not None and rec.serving.replicas_range is not None:
            out.append(f"\u2605 {range_phrase(rec.serving)}.")
        if rec.serving is not None and rec.serving.disaggregated is not None:
            out.append(f"\u2605 Disaggregated: {disaggregated_phrase(rec.serving)}.")
        if rec.serving is not None and rec.serving.speculative is not None:
            out.append(f"\u2605 Speculative decoding: {speculative_phrase(rec.serving)}.")
        out += [
            ("Caution: " if kind == "caution" else "") + text for kind, text in memory_lines(rec, est.engine)
        ]
    out += [FLEET_NOTE, ""]
    return out


def calibration_lines(est: Estimate) -> list[str]:
    """What the calibration did to this estimate, for the text output ([] when it was off)."""
    profile = est.calibration
    if profile is None:
        return []
    if not est.calibration_fits:
        return [
            f"Calibration: on (profile of {profile.created}), but it holds no values for the engine "
            f"{est.engine} that this scenario leaves to it: no figure changed."
        ]
    lines = [
        f"* Calibrated to your measurements (profile of {profile.created}); other GPUs use the engine "
        f"profile {est.engine}:"
    ]
    for f in est.calibration_fits:
        before = "-" if f.error_before_pct is None else f"{f.error_before_pct:.1f}%"
        after = "-" if f.error_after_pct is None else f"{f.error_after_pct:.1f}%"
        lines.append(
            f"  {f.gpu_id}: {f.factor_name} = {f.value:.4g} from {f.n_measurements} measurements "
            f"(median error {before} -> {after})"
        )
    return lines
