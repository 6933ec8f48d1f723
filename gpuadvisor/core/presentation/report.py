"""The comparison report's content: plain data for a PDF that stands on its own (no rendering here).

:func:`build_report` turns an :class:`~gpuadvisor.core.estimation.estimate.Estimate` into a :class:`Report`:
the scenario in plain words, a recommendation, one table row per GPU, rent versus buy,
the method in brief, the engine profile and where its factors come from, whether the estimate
was calibrated to the user's own measurements (which GPUs, which values, on how many runs and
with what error), the catalog sources and every warning a reviewer should read before ordering
hardware.

Every figure in the report is read from the typed results the core returns (the
:class:`~gpuadvisor.core.estimation.results.Candidate`, its cost, fleet and session), as the window
reads them, never from their serialized form, and formatted by the ``fmt_*`` helpers of
:mod:`gpuadvisor.core.formatting`. Those round each figure to the decimals that
``gpuadvisor-cli estimate --json`` carries for it before they format it, so a cell rebuilt from the
JSON with the same rule reads the same:

===============  ===============================  ===================================  ====================
column           read from                        JSON key                             rule
===============  ===============================  ===================================  ====================
need per GPU     ``memory.device_total``          ``memory_per_gpu_gib.device_total``  1 decimal
capacity         ``capacity_gib``                 ``capacity_gib``                     1 decimal
headroom         ``headroom_gib``                 ``headroom_gib``                     1 decimal, sign
tokens/s         ``Estimate.tokens_per_s``        ``tokens_per_s``                     ``fmt_rate``
job time         ``cost.job_hours``               ``job_hours.low`` / ``.high``        ``fmt_hours_range``
cost             ``cost.cost_usd``                ``cost_usd.low`` / ``.high``         ``fmt_usd_range``
$ per 1M tokens  ``cost.usd_per_million_tokens``  ``usd_per_million_tokens``           ``fmt_usd_per_mtok``
deadline/budget  ``cost.deadline_status``, ...    ``deadline`` / ``budget``            yes/likely/no/``—``
===============  ===============================  ===================================  ====================

Ranges use an en dash (``–``) and share one unit, chosen by the upper end.

Pure: stdlib only. References: ``docs/estimation.md`` (the method), ``core/cost.py`` (rent
versus buy), ``core/engines.py`` (engine profiles and the rows they were fitted on).
"""

from __future__ import annotations

import datetime as _dt
import math
from dataclasses import dataclass
from typing import Any

from ... import __version__
from ..estimation.cost import HOURS_PER_MONTH, LOAD_FACTOR, BuyVsRent
from ..estimation.results import Candidate, Estimate
from ..formats.user_catalog import months_before
from ..formatting import (
    DASH,
    NONE_MARK,
    TIMES,
    fmt_gib,
    fmt_hours,
    fmt_hours_range,
    fmt_rate,
    fmt_seconds,
    fmt_setup,
    fmt_share,
    fmt_signed_gib,
    fmt_status,
    fmt_usd,
    fmt_usd_per_hour,
    fmt_usd_per_mtok,
    fmt_usd_range,
    plain_gpu_name,
)
from ..specs.catalog_io import CatalogMeta
from ..specs.constants import RANGE_LABEL, kernel_family
from ..specs.engines import PROFILES, Batching, EngineProfile
from ..specs.hardware import GpuSpec
from ..units import GIB
from .prices import pick_price_warnings, rent_as
from .serving_text import engine_name, serving_report
from .wording import (
    change_lines,
    point_to_changes,
    recommendation_text,
    scenario_lines,
    scenario_title,
    setup_name,
)

TABLE_HEADER: tuple[str, ...] = (
    "GPU",
    "Setup",
    "Verdict",
    "Need per GPU (GiB)",
    "Capacity (GiB)",
    "Headroom (GiB)",
    "Tokens per s",
    "Job time",
    "Cost",
    "$ per 1M tokens",
    "Meets deadline",
    "Within budget",
)

#: A session on the machine the user owns (``Estimate.session``): no job, so no time, cost or limits;
#: how fast it answers, how many layers sit on the GPU and the longest context instead.
SESSION_TABLE_HEADER: tuple[str, ...] = (
    *TABLE_HEADER[:7],
    "GPU layers",
    "Prompt",
    "Longest context (tokens)",
)
#: Which weight type fits the one GPU compared (``Estimate.weights_table``).
WEIGHTS_HEADER: tuple[str, ...] = (
    "Weights",
    "Weights (GiB)",
    "Fits",
    "GPU layers",
    "Tokens per s",
    "Prompt tokens per s",
    "Longest context (tokens)",
)

#: A service's comparison rows stop after the headroom (GPU, setup, verdict and memory) and add its
#: memory at the operating point (``serving.memory_gib``).
SERVICE_TABLE_COLUMNS = 6
SERVICE_MEMORY_HEADER: tuple[str, ...] = (
    "Requests in flight per replica",
    "KV cache in flight (GiB)",
    "Engine takes (GiB)",
)

RENT_BUY_HEADER: tuple[str, ...] = (
    "GPU",
    "Purchase price",
    "Power per hour",
    "Owned, per GPU-hour",
    "Rented, per GPU-hour",
    "Break-even utilization",
    "Cheaper at your utilization",
)

#: Where the price part of a catalog source starts (``catalogs/gpus.csv`` convention).
PRICE_SOURCE_MARK = "Prices:"


# -- the report ---------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class TableRow:
    """One GPU in the comparison table; ``cells`` follow :data:`TABLE_HEADER`."""

    gpu_id: str
    key: str
    cells: tuple[str, ...]
    fits: bool
    verdict: str
    recommended: bool = False


@dataclass(frozen=True, slots=True)
class RentBuyRow:
    """Owning against renting one GPU; ``cells`` follow :data:`RENT_BUY_HEADER`."""

    gpu_id: str
    cells: tuple[str, ...]
    buy_is_cheaper: bool


@dataclass(frozen=True, slots=True)
class SourceEntry:
    """Where a GPU's figures come from; ``price_ref`` is a 1-based index into ``Report.price_sources`` (0: none)."""

    gpu_name: str
    spec_source: str
    price_as_of: str
    price_ref: int


@dataclass(frozen=True, slots=True)
class Report:
    """Everything the PDF shows, as plain text and numbers (see the module docstring)."""

    title: str
    scenario_name: str
    date: str  # ISO date the report was made
    app_version: str
    catalog_version: str  # "gpus.csv, schema 1, updated 2026-11-29"
    catalog_updated: str
    price_as_of: tuple[str, ...]  # distinct as-of dates of the prices shown, oldest first
    scenario_lines: tuple[tuple[str, str], ...]  # (label, plain words)
    scenario_notes: str
    recommendation: str
    changes: tuple[str, ...]  # changes that make it work, when nothing fits or meets the limits
    recommended_key: str | None
    runner_up_key: str | None
    table_header: tuple[str, ...]
    table_rows: tuple[TableRow, ...]
    table_notes: tuple[str, ...]
    rent_buy_header: tuple[str, ...]
    rent_buy_rows: tuple[RentBuyRow, ...]
    rent_buy_settings: str
    rent_buy_findings: tuple[str, ...]
    method_lines: tuple[str, ...]
    engine_name: str
    engine_factors: tuple[tuple[str, str], ...]
    engine_calibrated_on: str
    engine_assumed: bool
    sources: tuple[SourceEntry, ...]
    price_sources: tuple[str, ...]
    warnings: tuple[str, ...]
    stale_price_gpus: tuple[str, ...]  # GPU ids whose price is older than the cut-off (or undated)
    #: Whether the estimate was calibrated to the user's measurements, for which GPUs, with what.
    calibration_lines: tuple[str, ...] = ()
    #: A service (``workload.serving``): traffic, targets, the fleet and its cost in words, and the
    #: fleet table (header and rows); empty otherwise.
    serving_lines: tuple[tuple[str, str], ...] = ()
    fleet_header: tuple[str, ...] = ()
    fleet_rows: tuple[tuple[str, ...], ...] = ()
    #: The memory chart's caption when it differs from a batch job's (a service's operating point).
    vram_caption: str = ""
    #: What the fleet table's columns mean, and the latency chart's caption (a service).
    fleet_note: str = ""
    latency_caption: str = ""
    #: What the recommendation box flags about the recommended setup itself (a stale or undated price).
    recommendation_flags: tuple[str, ...] = ()
    #: Where to rent the recommended setup: the instance type and provider, in one sentence.
    rent_as: str = ""
    #: The report's kind, under its title.
    subtitle: str = "GPU comparison report"
    #: A session on the machine the user owns: no job to time, price, rent or buy.
    session: bool = False
    #: Which weight type fits the one GPU compared: a title, :data:`WEIGHTS_HEADER` rows (the
    #: scenario's own marked) and a note; empty when more than one GPU type is compared.
    weights_title: str = ""
    weights_rows: tuple[tuple[str, ...], ...] = ()
    weights_current: int = -1  # index of the scenario's own weights in ``weights_rows``
    weights_note: str = ""


def table_order(est: Estimate) -> list[Candidate]:
    """One candidate per GPU type, its best setup, in the decision's order (see
    :mod:`..estimation.recommendation`): setups that surely meet the limits by expected cost, then
    those that likely meet them, then those that miss a limit (fastest first), then the ones that
    do not fit, closest to fitting first. The recommended setup is the first row."""
    return list(est.best_per_gpu().values())


def report_setup(c: Candidate) -> str:
    """The setup cell of a report row, naming its layout compactly: ``1 GPU``, ``4 × ddp (DP4)``,
    ``64 × TP8·PP4·DP2 ZeRO-1·selective`` (the full name is the layout's ``name``)."""
    full = c.layout_name
    name = c.the_layout.short_name or full
    par = c.parallelism
    if c.gpu_count == 1:
        if c.setup_label == par or full in ("", "1 GPU"):
            return "1 GPU"
        return f"1 GPU ({full.removeprefix('1 GPU · ')})"
    if c.setup_label == par and name:  # a one-word setup: the word and its layout
        return f"{fmt_setup(c.gpu_count, par)} ({name})"
    return f"{c.gpu_count} {TIMES} {name}" if name else fmt_setup(c.gpu_count, par)


def _rate(est: Estimate, c: Candidate) -> float | None:
    """The one tokens/s figure of the candidate every view shows (:meth:`Estimate.tokens_per_s`)."""
    rate = est.tokens_per_s(c)
    return None if rate is None else rate.expected


def row_cells(c: Candidate, est: Estimate) -> tuple[str, ...]:
    """The table cells of one candidate of ``est`` (see :data:`TABLE_HEADER`)."""
    cost = c.cost
    if cost is None:
        job_time = money = deadline = budget = NONE_MARK
    else:
        job_time = fmt_hours_range(cost.job_hours.low, cost.job_hours.high)
        usd = cost.cost_usd
        money = fmt_usd_range(None, None) if usd is None else fmt_usd_range(usd.low, usd.high)
        deadline, budget = fmt_status(cost.deadline_status), fmt_status(cost.budget_status)
    return (
        plain_gpu_name(c.gpu.name),  # the full name: a table cell wraps, it is never cut
        report_setup(c),
        c.verdict,
        fmt_gib(c.memory.device_total / GIB),
        fmt_gib(c.capacity_gib),
        fmt_signed_gib(c.headroom_gib),
        fmt_rate(_rate(est, c)),
        job_time,
        money,
        fmt_usd_per_mtok(None if cost is None else cost.usd_per_million_tokens),
        deadline,
        budget,
    )


def session_cells(c: Candidate, est: Estimate) -> tuple[str, ...]:
    """A session's cells after the first six of :func:`row_cells` (see :data:`SESSION_TABLE_HEADER`):
    the session's figures (:meth:`Estimate.session_of`)."""
    s = est.session_of(c)
    if s is None:
        return (fmt_rate(_rate(est, c)),) + (NONE_MARK,) * 3
    return (
        fmt_rate(s.tokens_per_s),
        f"{s.gpu_layers}/{s.num_layers}",
        fmt_seconds(s.prompt_s),
        f"{s.max_context_tokens:,}",
    )


def weights_cells(row: Any) -> tuple[str, ...]:
    """One weight type's cells (see :data:`WEIGHTS_HEADER`)."""
    return (
        row.label,
        fmt_gib(row.weights_gib),
        {"full": "yes", "partial": "partly in RAM", "no": "no"}[row.fit],
        f"{row.gpu_layers}/{row.num_layers}" if row.gpu_layers is not None else NONE_MARK,
        fmt_rate(row.tokens_per_s),
        fmt_rate(row.prefill_tokens_per_s),
        f"{row.max_context:,}" if row.max_context is not None else NONE_MARK,
    )


def weights_title(est: Estimate) -> str:
    """``Which weight type fits RTX 4090 (llama.cpp)`` ("" without a table)."""
    lead = next(iter(est.best_per_gpu().values()), None)
    if not est.weights_table or lead is None:
        return ""
    return f"Which weight type fits {plain_gpu_name(lead.gpu.name)} ({engine_name(est.engine)})"


def _weights_section(est: Estimate) -> dict[str, Any]:
    """The weights table's part of the report (empty when there is none)."""
    rows = est.weights_table
    lead = next(iter(est.best_per_gpu().values()), None)
    if not rows or lead is None:
        return {}
    current = next((i for i, r in enumerate(rows) if r.current), -1)
    return {
        "weights_title": weights_title(est),
        "weights_rows": tuple(weights_cells(r) for r in rows),
        "weights_current": current,
        "weights_note": (
            "Each row is the whole estimate again with that weight type on the same GPU and count. Fits: "
            "yes (every layer on the GPU), partly in RAM (the GPU layers shown, the rest and the output layer "
            "in system RAM) or no. Tokens per s: "
            + ("generation of one answer" if est.session else "the job's output tokens per second")
            + "; longest context: the longest that fits that setup."
        ),
    }


def service_memory_cells(c: Candidate) -> tuple[str, ...]:
    """A service's memory cells (see :data:`SERVICE_MEMORY_HEADER`) from its fleet's memory at the
    operating point: the requests in flight per replica, their KV cache per GPU, and what the engine
    takes per GPU with its preallocated KV pool."""
    mem = None if c.serving is None else c.serving.memory
    if mem is None:
        return (NONE_MARK,) * len(SERVICE_MEMORY_HEADER)
    return (f"{mem.concurrency:,}", fmt_gib(mem.kv_in_flight / GIB), fmt_gib(mem.engine_total / GIB))


def rent_buy_cells(gpu: GpuSpec, b: BuyVsRent, utilization: float) -> tuple[str, ...]:
    """The rent-versus-buy cells of one GPU, from its candidate's owning against renting."""
    be = b.break_even_utilization
    if be is None:
        be_text = "never (rent is below the power bill)"
    elif be > 1:
        be_text = f"never (needs {fmt_share(be)})"
    else:
        be_text = fmt_share(be)
    return (
        plain_gpu_name(gpu.name),
        fmt_usd(b.purchase_usd, 0),
        fmt_usd_per_hour(b.power_usd_per_hour),
        fmt_usd_per_hour(b.owned_usd_per_hour),
        fmt_usd_per_hour(b.rent_usd_per_hour),
        be_text,
        f"buy ({fmt_share(utilization)})" if b.buy_is_cheaper else "rent",
    )


def _break_even(c: Candidate) -> float:
    """The candidate's break-even utilization for buying (inf when it has none)."""
    buy = c.cost.buy if c.cost is not None else None
    return (
        buy.break_even_utilization if buy is not None and buy.break_even_utilization is not None else math.inf
    )


def _purchase(c: Candidate) -> float:
    """The candidate's purchase price per GPU (inf when it has none)."""
    buy = c.cost.buy if c.cost is not None else None
    return buy.purchase_usd if buy is not None else math.inf


def missing_buy_cells(c: Candidate) -> tuple[str, ...]:
    """The rent-versus-buy cells of a setup that cannot be compared: why, in the first empty cell."""
    if c.cost is None or c.cost.usd_per_hour is None:
        why = "no rental price in the catalog"
    elif not (c.gpu.purchase_new_usd or c.gpu.purchase_used_usd):
        why = "no purchase price (sold only inside systems, or not public)"
    elif c.gpu.tdp_w is None:
        why = "no board power in the catalog (the power bill cannot be counted)"
    else:
        why = "no price for this purchase choice"
    rent = (
        fmt_usd_per_hour(c.cost.usd_per_hour / c.gpu_count)
        if c.cost is not None and c.cost.usd_per_hour is not None
        else NONE_MARK
    )
    return (plain_gpu_name(c.gpu.name), why, NONE_MARK, NONE_MARK, rent, NONE_MARK, NONE_MARK)


def _rent_buy(
    est: Estimate, table: list[Candidate], rec: Candidate | None, runner: Candidate | None
) -> tuple[list[RentBuyRow], list[str]]:
    """The rent-versus-buy table and its findings: a row that cannot be compared says why; then
    which is cheaper at the planned utilization, the break-even rule with this table's range, and
    how busy the recommended service or job alone keeps the cards."""
    chosen, missing = _rent_buy_setups(table, rec, runner)
    rows = [RentBuyRow(gpu_id=c.gpu.id, cells=missing_buy_cells(c), buy_is_cheaper=False) for c in missing]
    for c in chosen:
        assert c.cost is not None and c.cost.buy is not None  # chosen for having both prices
        buy = c.cost.buy
        rows.append(
            RentBuyRow(
                gpu_id=c.gpu.id,
                cells=rent_buy_cells(c.gpu, buy, est.scenario.budget.utilization),
                buy_is_cheaper=buy.buy_is_cheaper,
            )
        )
    first = [x.gpu.id for x in (rec, runner) if x is not None]
    rows.sort(key=lambda r: first.index(r.gpu_id) if r.gpu_id in first else len(first))  # stable
    findings = []
    for c in missing:
        role = "recommended setup" if rec is not None and c.gpu.id == rec.gpu.id else "runner-up"
        findings.append(
            f"The {role}, {plain_gpu_name(c.gpu.name)}, cannot be compared: {missing_buy_cells(c)[1]}."
        )
    if not chosen:
        findings.append(
            "No other GPU that fits has both a purchase price and a rental price in the catalog, so owning "
            "and renting cannot be compared."
            if missing
            else "No GPU that fits has both a purchase price and a rental price in the catalog, so owning "
            "and renting cannot be compared."
        )
        return rows, findings
    findings += [_rent_or_buy_verdict(est, chosen), _break_even_rule(est, chosen)]
    ref = rec or chosen[0]
    usage = _service_usage(est, ref) if est.scenario.workload.serving is not None else None
    if usage is None:
        usage = _job_usage(est, ref)
    if usage is not None:
        findings.append(usage)
    return rows, findings


def _rent_buy_setups(
    table: list[Candidate], rec: Candidate | None, runner: Candidate | None
) -> tuple[list[Candidate], list[Candidate]]:
    """The setups the rent-versus-buy table compares, and those it names but cannot compare.

    The recommendation and the runner-up always have a row, comparable or not (then it says why);
    then the lowest break-even and the lowest purchase price, then the table's order, one row per
    GPU type and four rows at most (two comparable ones at least)."""
    with_buy = [c for c in table if c.fits and c.cost is not None and c.cost.buy is not None]
    chosen: list[Candidate] = []
    picks = [
        min(with_buy, key=_break_even, default=None),
        min(with_buy, key=_purchase, default=None),
    ]
    missing: list[Candidate] = []
    for c in (rec, runner):
        if c is None:
            continue
        if c.cost is not None and c.cost.buy is not None:
            chosen.append(c)
        elif all(c.gpu.id != x.gpu.id for x in missing):
            missing.append(c)
    for c in picks:
        if c is None or c.cost is None or c.cost.buy is None:
            continue
        if all(c.gpu.id != x.gpu.id for x in chosen):
            chosen.append(c)
    for c in with_buy:  # up to four rows when the picks coincide
        if len(chosen) >= 4:
            break
        if all(c.gpu.id != x.gpu.id for x in chosen):
            chosen.append(c)
    return chosen[: max(4 - len(missing), 2)], missing


def _rent_or_buy_verdict(est: Estimate, chosen: list[Candidate]) -> str:
    """Which GPUs shown are cheaper bought and which rented, at the planned utilization."""
    b = est.scenario.budget
    buy = [plain_gpu_name(c.gpu.name) for c in chosen if c.cost.buy.buy_is_cheaper]  # type: ignore[union-attr]
    rent = [plain_gpu_name(c.gpu.name) for c in chosen if not c.cost.buy.buy_is_cheaper]  # type: ignore
    verdict = f"At your planned {fmt_share(b.utilization)} utilization over {b.ownership_months:g} months, "
    if buy and rent:
        return verdict + f"buying is cheaper for {', '.join(buy)} and renting for {', '.join(rent)}."
    if buy:
        return verdict + f"buying is cheaper for every GPU shown ({', '.join(buy)})."
    return verdict + f"renting is cheaper for every GPU shown ({', '.join(rent)})."


def _break_even_rule(est: Estimate, chosen: list[Candidate]) -> str:
    """The rule (buying wins above the break-even utilization) and the break-even range shown."""
    months = f"{est.scenario.budget.ownership_months:g} months"
    rule = (
        "The rule: buying pays back for continuous use (serving around the clock, a training queue that "
        "never empties) and renting wins for sporadic jobs. Precisely, buying wins only when the cards stay "
        "busy above their break-even utilization for the whole ownership period."
    )
    evens = sorted(
        (_break_even(c), plain_gpu_name(c.gpu.name)) for c in chosen if math.isfinite(_break_even(c))
    )
    if len(evens) >= 2:
        rule += (
            f" Here break-even ranges from {fmt_share(evens[0][0])} ({evens[0][1]}) to "
            f"{fmt_share(evens[-1][0])} ({evens[-1][1]}) of the {months}."
        )
    elif evens:
        rule += f" Here break-even is {fmt_share(evens[0][0])} ({evens[0][1]}) of the {months}."
    return rule


def _service_usage(est: Estimate, ref: Candidate) -> str | None:
    """How busy a service keeps its fleet against the break-even, and the monthly cost owned and
    rented (None without a fleet purchase to compare).

    A service runs its fleet a share of every day for as long as it is kept: that share,
    hours_per_day / 24, is the cards' utilization, not a job's hours."""
    service = est.scenario.workload.serving
    if service is None or ref.serving is None or (buy_fleet := ref.serving.buy) is None:
        return None
    fleet = ref.serving
    share = service.hours_per_day / 24.0
    be = ref.cost.buy.break_even_utilization if ref.cost is not None and ref.cost.buy is not None else None
    text = (
        f"The service keeps its {fleet.gpus_total:,} GPU{'s' if fleet.gpus_total != 1 else ''} busy "
        f"{service.hours_per_day:g} h a day ({fmt_share(share)} of the {est.scenario.budget.ownership_months:g} months)"
    )
    if be is not None:
        text += f", {'above' if share >= be else 'below'} the {fmt_share(be)} break-even"
    return text + (
        f": owning the fleet costs {fmt_usd(buy_fleet.owned_usd_per_month)} a month against "
        f"{fmt_usd(buy_fleet.rent_usd_per_month)} rented, so "
        + ("buying pays back." if buy_fleet.buy_is_cheaper else "renting is cheaper.")
    )


def _job_usage(est: Estimate, ref: Candidate) -> str | None:
    """How busy this job alone keeps the recommended setup, as a share of one GPU's ownership
    (GPU-hours / GPUs / (months x hours a month)), against its break-even (None without a price)."""
    if ref.cost is None or ref.cost.buy is None:
        return None
    months = est.scenario.budget.ownership_months
    share = ref.cost.gpu_hours.expected / ref.gpu_count / (months * HOURS_PER_MONTH)
    be = ref.cost.buy.break_even_utilization
    text = (
        f"This job alone keeps {setup_name(ref)} busy for {fmt_hours(ref.cost.job_hours.expected)}: "
        f"{fmt_share(share)} of one GPU's {months:g} months."
    )
    if be is not None and share < be:
        text += (
            f" That is below the {fmt_share(be)} break-even, so the job by itself does not justify a "
            "purchase; buy only if other work will keep the cards busy afterwards."
        )
    elif be is not None:
        text += " That alone is above break-even: buying pays back on this job."
    return text


def _engine(est: Estimate) -> tuple[str, tuple[tuple[str, str], ...], str, bool]:
    constants = est.speed_constants
    e: EngineProfile | None = constants.engines.get(est.engine)
    if e is None:
        return est.engine, (), "unknown", True
    e = e.for_workload(est.scenario.workload)
    eff = est.scenario.efficiency
    factors: list[tuple[str, str]] = []
    if e.kind == "training":
        mfu = f"{e.mfu:.2f} of each GPU's GEMM ceiling"
        if eff.mfu is not None:
            mfu = f"{eff.mfu:.2f} MFU (set by the scenario; profile ceiling {e.mfu:.2f})"
        factors.append(("GEMM efficiency on large matmuls", mfu))
        arch = sorted({c.gpu.architecture for c in est.candidates})
        scale = ", ".join(f"{a} {constants.gemm_ceiling.get(a, 0.75):g}" for a in arch)
        factors.append(("GEMM ceiling by GPU generation", scale + " of the datasheet peak"))
        factors.append(
            (
                "Non-GEMM traffic",
                f"{e.elementwise_bytes_per_h:g} bytes per token, layer and unit of hidden size",
            )
        )
        mfus = [c.performance.mfu for c in est.candidates if c.performance and c.performance.mfu]
        if mfus:
            factors.append(("Resulting MFU", f"{min(mfus):.2f}{DASH}{max(mfus):.2f} across the candidates"))
    else:
        bw = f"{e.bandwidth_efficiency:.2f}"
        if eff.bandwidth_efficiency is not None:
            bw = f"{eff.bandwidth_efficiency:.2f} (set by the scenario; profile {e.bandwidth_efficiency:.2f})"
        pre = f"{e.prefill_mfu:.2f}"
        if eff.prefill_mfu is not None:
            pre = f"{eff.prefill_mfu:.2f} (set by the scenario; profile {e.prefill_mfu:.2f})"
        w = est.scenario.workload
        family = kernel_family(w.quantization_family, w.weights, constants)
        factors += [
            ("Memory bandwidth efficiency (decode)", bw),
            (
                "Kernels per layer and step",
                f"{e.kernels_per_layer:g} ("
                + (
                    "CUDA graphs"
                    if w.uses_cuda_graphs
                    else f"launched from {e.runtime}: {e.layer_overhead_s * 1e6:.0f} µs per layer"
                )
                + ")",
            ),
        ]
        if e.prefill_layer_overhead_s is not None:
            factors.append(
                (
                    "Host time of a prompt's pass",
                    f"{e.prefill_layer_overhead_s * 1e6:.0f} µs per layer (fitted apart from a decode step's)",
                )
            )
        factors += [
            ("GEMM efficiency ceiling (prefill, large batches)", pre),
            (
                "Output head in a prefill",
                "once per prompt (logits only at the position it samples)"
                if e.prompt_logits == "last"
                else "on every prompt token (logits at every position)",
            ),
        ]
        if family is not None:
            factors.append(
                (
                    "Quantization kernels",
                    f"{family.name}: {family.gemv_efficiency:.2f} of the bandwidth efficiency at batch 1",
                )
            )
        if e.gpu_batch_defaults is not None:  # vLLM's default chunk depends on the GPU
            rule = e.gpu_batch_defaults
            large, other = rule.large, rule.other
            factors.append(
                (
                    "Prefill chunk",
                    f"{large.chunk_tokens:,} tokens on a GPU of {rule.large_gpu_gib:g} GiB or more that is not "
                    f"{rule.excluded_name}, else {other.chunk_tokens:,} (vLLM's defaults, with at most "
                    f"{large.max_sequences:,} and {other.max_sequences:,} sequences at once)",
                )
            )
        elif e.prefill_chunk_tokens:
            factors.append(("Prefill chunk", f"{e.prefill_chunk_tokens:,} tokens"))
        if e.seq_host_s:
            factors.append(
                (
                    "Host time per sequence and step",
                    f"{e.seq_host_s * 1e6:.0f} µs (the release's scheduler, inputs, sampling and outputs)",
                )
            )
        if w.serving is not None:
            factors.append(
                (
                    "New prompts while serving",
                    "inside the decode steps (chunked prefill mixed into the batch)"
                    if e.mixed_prefill
                    else "in prefill passes of their own, which every running sequence waits for",
                )
            )
            factors.append(
                (
                    "Tokens streamed",
                    "a step after they are computed (output processed while the next step runs)"
                    if e.token_lag_steps
                    else "as the step that computes them ends",
                )
            )
    factors.append(
        (
            f"Uncertainty ({RANGE_LABEL})",
            f"{DASH}{e.spread_low * 100:.0f}% / +{e.spread_high * 100:.0f}% on speed",
        )
    )
    return f"{e.name} ({e.id})", tuple(factors), e.calibrated_on, e.assumed


def _method(est: Estimate) -> list[str]:
    w, b = est.scenario.workload, est.scenario.budget
    lines = [
        "Memory per GPU = weights + gradients + optimizer state + activations + KV cache + adapters + overhead. "
        "Overhead is the CUDA context (0.6 GiB unless set) plus allocator fragmentation (8% of the tensors in "
        "training, 4% in inference). \u201cNeed per GPU\u201d is this device total, as nvidia-smi would show it; "
        "headroom = usable capacity \u2212 need. A setup fits when the need is at most the capacity and is "
        "\u201ctight\u201d above 95% of it.",
        "Multi-GPU splits: data parallel copies everything; ZeRO-1/2/3 and FSDP shard optimizer state, gradients "
        "and weights; tensor parallelism splits every layer; pipeline parallelism splits the layers into stages. "
        "Each GPU type's row shows its best setup under the deadline and budget (see the comparison notes).",
    ]
    if w.is_training:
        lines.append(
            "Training speed: FLOPs per token = 3F for full training, 2F for LoRA/QLoRA (no weight gradients for the "
            "frozen base), +F with gradient checkpointing, where F = 2 \u00d7 matmul parameters + 2 \u00d7 layers "
            "\u00d7 attention width \u00d7 sequence length. Step time = FLOPs / (GPUs \u00d7 dense peak \u00d7 MFU) + "
            "exposed communication (ring all-reduce, ZeRO-3/FSDP all-gathers, 70% hidden behind the backward pass; "
            "NVLink, PCIe or 400 Gb/s between nodes at 75% efficiency)."
        )
    else:
        lines.append(
            "Inference speed: prefill is compute-bound (2 \u00d7 multiplied parameters, the output head once per "
            "prompt where the engine samples only the last position, + attention FLOPs per prompt "
            "token at a GEMM efficiency that grows with the tokens per matmul); each decode step takes the larger "
            "of the memory time (weights, at the quantization kernels' efficiency, and KV cache over bandwidth "
            "\u00d7 efficiency) and the compute time, plus a few microseconds per kernel; without CUDA graphs the "
            "step takes at least the time to launch its kernels. Tokens/s = batch \u00d7 output tokens / (prefill "
            "+ output tokens \u00d7 step time)."
        )
    if est.own_machine and not w.is_training:
        lines.append(
            "The machine you own: its GPUs as it has them (one unless a count is given), never copies of it "
            "to finish a queue sooner. Without a number of requests it is an interactive session: tokens/s "
            "is the generation of one answer, the prompt's time the wait for its first token. On llama.cpp "
            "a model too big for the card runs with the most layers that keep the card below 95% full; "
            "the other layers and the output head run on the CPU from system RAM, and each token takes "
            "the GPU's layers at its bandwidth plus the CPU's at the host memory's (a stated or assumed "
            "default per machine class). A Mac's GPU shares one memory pool and is never split."
        )
    lines.append(
        f"Job time = job tokens / tokens per second (low\u2013high: the {RANGE_LABEL}, which held 8 in 10 published "
        "measurements that the engine profile was not fitted to). Cost = GPU-hours "
        "\u00d7 price per GPU-hour; the low cost pairs the fastest time with the lowest catalog price, the high cost "
        "the slowest time with the highest price. $ per 1M tokens uses the expected cost."
    )
    lines.append(
        f"Owning: cost per used GPU-hour = purchase price / (months \u00d7 {HOURS_PER_MONTH:g} h \u00d7 utilization) "
        f"+ power, with power = TDP \u00d7 {LOAD_FACTOR:g} (average load) \u00d7 PUE \u00d7 electricity price. "
        f"Break-even utilization = purchase / ((rent \u2212 power) \u00d7 months \u00d7 {HOURS_PER_MONTH:g} h). "
        "Resale value, hosting space, networking and staff are not counted."
    )
    if b.price != "expected" and isinstance(b.price, str):
        lines.append(f"Prices: the scenario asks for the catalog's {b.price} price as the expected figure.")
    lines.append(
        "Full formulas and references: docs/estimation.md; published measurements the speed model was "
        "checked against: docs/validation.md."
    )
    return lines


FACTOR_WORDS = {
    "bandwidth_efficiency": "memory bandwidth efficiency",
    "mfu": "MFU",
    "prefill_mfu": "prefill MFU",
    "runtime_overhead_gib": "runtime memory overhead",
}


def _factor_value(name: str, value: float) -> str:
    return f"{value:.2f} GiB" if name == "runtime_overhead_gib" else f"{value:.3f}"


def _error_pct(value: float | None) -> str:
    return NONE_MARK if value is None else f"{value:.1f}%"


def _calibration(est: Estimate) -> list[str]:
    """Whether calibration to the user's measurements was applied, to which GPUs, and the values."""
    profile = est.calibration
    if profile is None:
        return [
            "Calibration to your own measurements: off. Speed and memory come from the engine profile "
            "and the catalog alone."
        ]
    head = f"Calibration to your own measurements: on (profile of {profile.created})"
    if not est.calibration_fits:
        return [
            head + f", but it holds no values for the engine {est.engine} that this scenario leaves to "
            "the calibration, so no figure was changed."
        ]
    names = {c.gpu.id: plain_gpu_name(c.gpu.name) for c in est.candidates}
    gpus = [names.get(g, g) for g in est.calibrated_gpus]
    lines = [
        head + f". Applied to {len(gpus)} GPU type{'s' if len(gpus) != 1 else ''}: {', '.join(gpus)}; "
        "the other GPUs use the engine profile. Efficiencies the scenario sets itself are kept."
    ]
    for f in est.calibration_fits:
        factor = FACTOR_WORDS.get(f.factor_name, f.factor_name)
        lines.append(
            f"{names.get(f.gpu_id, f.gpu_id)} with {f.engine}: {factor} "
            f"{_factor_value(f.factor_name, f.value)}, fitted on {f.n_measurements} measurement"
            f"{'s' if f.n_measurements != 1 else ''} (median error {_error_pct(f.error_before_pct)} "
            f"with the engine profile, {_error_pct(f.error_after_pct)} after calibration)."
            + (f" {f.note[:1].upper()}{f.note[1:]}." if f.note else "")
        )
    return lines


def _sources(table: list[Candidate]) -> tuple[list[SourceEntry], list[str]]:
    price_sources: list[str] = []
    entries = []
    for c in table:
        spec, mark, price = c.gpu.source.partition(PRICE_SOURCE_MARK)
        spec = spec.strip().rstrip(";").strip()
        price = price.strip()
        ref = 0
        if mark and price:
            if price not in price_sources:
                price_sources.append(price)
            ref = price_sources.index(price) + 1
        entries.append(
            SourceEntry(
                gpu_name=c.gpu.name,
                spec_source=spec or c.gpu.source,
                price_as_of=c.gpu.price_as_of or "undated",
                price_ref=ref,
            )
        )
    return entries, price_sources


def decision_warnings(
    est: Estimate, today: _dt.date, stale_after_months: int = 6, changes_where: str = "below"
) -> list[str]:
    """The warnings a decision needs (the core's, stale or undated prices of the compared GPUs,
    an assumed engine profile or architecture, overridden efficiencies): the report's section
    and the window's summary show the same list. ``changes_where`` says where the changes are."""
    engine_label, _factors, calibrated_on, assumed = _engine(est)
    return _warnings(
        est, table_order(est), today, stale_after_months, engine_label, calibrated_on, assumed, changes_where
    )[0]


def _warnings(
    est: Estimate,
    table: list[Candidate],
    today: _dt.date,
    stale_after_months: int,
    engine_label: str,
    calibrated_on: str,
    engine_assumed: bool,
    changes_where: str = "in section 1",
) -> tuple[list[str], list[str]]:
    # The window lists the changes below the summary; the report names its section. A stale price at
    # the recommendation comes first: it is the one a reviewer must check before anything else.
    out = pick_price_warnings(est, today, stale_after_months) + point_to_changes(est.warnings, changes_where)
    cutoff = months_before(today, stale_after_months)
    stale, undated, stale_ids = [], [], []
    for c in table:
        if c.gpu.cloud_usd_per_hour is None and not c.gpu.purchase_new_usd and not c.gpu.purchase_used_usd:
            continue
        try:
            as_of = _dt.date.fromisoformat(c.gpu.price_as_of)
        except ValueError:
            undated.append(plain_gpu_name(c.gpu.name))
            stale_ids.append(c.gpu.id)
            continue
        if as_of < cutoff:
            stale.append(f"{plain_gpu_name(c.gpu.name)} ({as_of.isoformat()})")
            stale_ids.append(c.gpu.id)
    if stale:
        out.append(
            f"Stale prices: {len(stale)} GPU{'s' if len(stale) != 1 else ''} carry prices older than "
            f"{stale_after_months} months (before {cutoff.isoformat()}): {', '.join(stale)}. "
            "Get current quotes before ordering."
        )
    if undated:
        out.append(f"Undated prices: {', '.join(undated)}. Get current quotes before ordering.")
    unpriced = [
        plain_gpu_name(c.gpu.name) for c in table if c.fits and c.cost is not None and c.cost.cost_usd is None
    ]
    if unpriced:
        providers = est.scenario.budget.providers
        where = (
            "No rental price in the catalog for"
            if providers is None
            else "No cloud instance in the snapshot rents"
            if isinstance(providers, str)
            else f"No instance of {', '.join(providers)} rents"
        )
        out.append(f"{where} {', '.join(unpriced)}: their cost is not shown.")
    w = est.scenario.workload
    if w.weights == "fp8":
        fallback = [
            plain_gpu_name(c.gpu.name)
            for c in table
            if c.performance is not None and c.performance.precision_used != "fp8"
        ]
        if fallback and not any("FP8" in x and "No" in x for x in est.warnings):
            out.append(
                f"FP8 fallback: {', '.join(fallback)} have no FP8 tensor cores; FP8 weights run there at "
                "FP16/BF16 speed."
            )
    if engine_assumed:
        out.append(
            f"Outside the calibrated range: the engine profile {engine_label} is an assumption "
            f"({calibrated_on.removeprefix('assumed:').strip()}), not a fit to measurements. Speed, job time "
            f"and cost may be off by more than the {RANGE_LABEL} shows."
        )
    if est.model.architecture_assumed:
        out.append(
            "Outside the calibrated range: the model's architecture is assumed from its parameter count, "
            "so memory (activations, KV cache) and speed are approximate."
        )
    eff = est.scenario.efficiency
    overrides = [
        f"{k} {v:g}"
        for k, v in (
            ("bandwidth efficiency", eff.bandwidth_efficiency),
            ("MFU", eff.mfu),
            ("prefill MFU", eff.prefill_mfu),
        )
        if v is not None
    ]
    if overrides:
        out.append(
            f"The scenario overrides the engine profile's efficiency ({', '.join(overrides)}): speed figures "
            "rest on those values, not on the calibration."
        )
    return list(dict.fromkeys(out)), stale_ids


def build_report(
    est: Estimate, catalog_meta: CatalogMeta, today: _dt.date, stale_after_months: int = 6, max_rows: int = 40
) -> Report:
    """The report's content for ``est`` (computed against the GPU catalog described by ``catalog_meta``).

    ``today`` dates the report and decides which prices are stale (as-of date more than
    ``stale_after_months`` calendar months before it). The table holds at most ``max_rows`` GPUs,
    best first; a note says how many were left out.
    """
    if max_rows < 1:
        raise ValueError("max_rows must be at least 1")
    if stale_after_months < 0:
        raise ValueError("stale_after_months must be >= 0")
    ordered = table_order(est)
    table = ordered[:max_rows]
    text, rec, runner = recommendation_text(est)
    service = est.scenario.workload.serving is not None
    session = est.session
    # A service is no batch job: its speed and cost are the fleet's (the serving table); a job's
    # tokens/s, time and cost at the scenario's batch would contradict them, so its rows stop at memory.
    columns = SERVICE_TABLE_COLUMNS if service else 6 if session else len(TABLE_HEADER)
    rows = _table_rows(est, table, rec, columns)
    notes = _table_notes(est, rows, rec)
    if len(ordered) > len(table):
        left = len(ordered) - len(table)
        notes.append(
            f"{left} more GPU type{'s' if left != 1 else ''} left out (the table is limited to "
            f"{max_rows} rows); `gpuadvisor-cli estimate` lists them all."
        )
    # A session has no job to rent GPUs for: the PDF says so instead of comparing.
    rent_rows, findings = ([], []) if session else _rent_buy(est, table, rec, runner)
    engine_label, factors, calibrated_on, assumed = _engine(est)
    warnings, stale_ids = _warnings(
        est, table, today, stale_after_months, engine_label, calibrated_on, assumed
    )
    sources, price_sources = _sources(table)
    as_of = tuple(sorted({c.gpu.price_as_of for c in table if c.gpu.price_as_of}))
    meta = catalog_meta
    title = scenario_title(est)
    return Report(
        title=title,
        scenario_name=title,
        date=today.isoformat(),
        app_version=__version__,
        catalog_version=f"{meta.origin}, schema {meta.schema_version}, updated {meta.updated or 'undated'}",
        catalog_updated=meta.updated,
        price_as_of=as_of,
        scenario_lines=tuple(scenario_lines(est)),
        scenario_notes=est.scenario.notes,
        recommendation=text,
        changes=tuple(change_lines(est)),
        recommended_key=rec.key if rec is not None else None,
        runner_up_key=runner.key if runner else None,
        table_header=SESSION_TABLE_HEADER
        if session
        else TABLE_HEADER[:columns] + (SERVICE_MEMORY_HEADER if service else ()),
        table_rows=tuple(rows),
        table_notes=tuple(notes),
        rent_buy_header=RENT_BUY_HEADER,
        rent_buy_rows=tuple(rent_rows),
        rent_buy_settings=_rent_buy_settings(est),
        rent_buy_findings=tuple(findings),
        method_lines=tuple(_method(est)),
        engine_name=engine_label,
        engine_factors=factors,
        engine_calibrated_on=calibrated_on,
        engine_assumed=assumed,
        sources=tuple(sources),
        price_sources=tuple(price_sources),
        warnings=tuple(warnings),
        stale_price_gpus=tuple(stale_ids),
        calibration_lines=tuple(_calibration(est)),
        recommendation_flags=tuple(pick_price_warnings(est, today, stale_after_months)),
        rent_as=rent_as(est),
        **serving_report(est),
        session=session,
        **_weights_section(est),
    )


def _table_rows(est: Estimate, table: list[Candidate], rec: Candidate | None, columns: int) -> list[TableRow]:
    """The comparison table's rows: the first ``columns`` cells of each, then a service's memory at
    its operating point or a session's speed."""
    service = est.scenario.workload.serving is not None
    rows = []
    for c in table:
        extra = service_memory_cells(c) if service else session_cells(c, est) if est.session else ()
        rows.append(
            TableRow(
                gpu_id=c.gpu.id,
                key=c.key,
                cells=row_cells(c, est)[:columns] + extra,
                fits=c.fits,
                verdict=c.verdict,
                recommended=rec is not None and c.key == rec.key,
            )
        )
    return rows


def _table_notes(est: Estimate, rows: list[TableRow], rec: Candidate | None) -> list[str]:
    """The notes under the comparison table: the rows' order, a recommendation that is not a row,
    and what the setup and figure columns mean."""
    notes = [
        "One row per GPU type: its best setup under the deadline and budget. Rows that surely meet them "
        "(even the slow or expensive end of the range) come first, by expected cost; then those that likely "
        "meet them (yes/likely/no in the last two columns); then those that miss a limit, fastest first; "
        "then the ones that do not fit, closest to fitting first. The recommended setup is the first row."
    ]
    if rec is not None and not any(r.recommended for r in rows):
        notes.append(
            f"The recommended setup ({setup_name(rec)}) uses more GPUs than the smallest one that fits on "
            "that GPU type, so it is not a row of this table; its figures are in the recommendation."
        )
    notes.append(_columns_note(est))
    return notes


def _columns_note(est: Estimate) -> str:
    """What the setup column and the memory per GPU hold, then the figures: a service's memory at
    its operating point and what each engine preallocates, a session's speed, or a job's tokens/s,
    time and cost."""
    service = est.scenario.workload.serving is not None
    return (
        "Setup: number of GPUs \u00d7 how the work is split (ddp: a full copy per GPU; zero1/2/3, fsdp: "
        "sharded state; tensor: each layer split; pipeline: layers in stages), with its layout: TP tensor, "
        "PP pipeline (stages), CP context and DP data parallel degrees, EP experts, ZeRO stage and "
        "recomputation; with pipelines the memory is the fuller stage's. Need per GPU: the device "
        "total (tensors + CUDA context + fragmentation)"
        + (
            " of one replica at its operating point: the weights, the activations, the KV cache of the "
            "requests in flight (each reserving its 90th-percentile prompt and, with paged KV, half its "
            "90th-percentile answer; TensorRT-LLM reserves the whole answer) and the overhead. Engine takes: that plus the part of the KV pool "
            "the engine preallocates and no request uses ("
            + ", ".join(
                f"{engine_name(e.id)} {e.kv_pool.setting} {e.kv_pool.fraction:g}"
                # The paged engines first, then those that reserve a request's whole context.
                for e in sorted(PROFILES, key=lambda e: e.batching != Batching.PAGED)
                if e.kv_pool is not None
            )
            + "; what nvidia-smi shows). A service's speed, latency and monthly cost are in the fleet table above, one fleet per GPU type."
            if service
            else ". An interactive session on the machine you own: tokens per s is the generation of one "
            "answer; GPU layers: the layers on the GPU (the rest in system RAM); prompt: the time to read the "
            "prompt, the wait for the first token; no job is timed or priced."
            if est.session
            else ". Tokens/s: aggregate over the setup's GPUs"
            + (" (trained tokens)." if est.scenario.workload.is_training else " (output tokens).")
            + f" Job time and cost: the {RANGE_LABEL} (low\u2013high). \u2014: no deadline, budget or "
            "price to check against."
        )
    )


def _rent_buy_settings(est: Estimate) -> str:
    """The assumptions of the rent-versus-buy table: purchase price, ownership, utilization, power."""
    b = est.scenario.budget
    return (
        f"{b.purchase.capitalize()} purchase price (mean of the catalog's low and high), "
        f"{b.ownership_months:g} months of ownership at {fmt_share(b.utilization)} utilization, electricity "
        f"{fmt_usd_per_hour(b.electricity_usd_per_kwh)} per kWh, PUE {b.pue:g}. Rent is the expected price "
        "per GPU-hour."
    )
