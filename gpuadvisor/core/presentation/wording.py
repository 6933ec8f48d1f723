"""The report's wording: how a scenario, its limits and the recommended setup are put in words.

Pure text from an :class:`~gpuadvisor.core.estimation.results.Estimate`; figures are written by
:mod:`gpuadvisor.core.formatting`. The report (:mod:`.report`) and the window's summary use
these sentences, so both say the same thing in the same words.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from ..estimation.estimate import CHANGES_POINTER
from ..estimation.memory import kbit_prepared
from ..estimation.recommendation import LIKELY, SAME_COST, SURE, tier
from ..estimation.results import Candidate, Estimate
from ..formatting import (
    TIMES,
    fmt_count,
    fmt_days,
    fmt_deadline,
    fmt_gib,
    fmt_hours,
    fmt_hours_range,
    fmt_rate,
    fmt_seconds,
    fmt_share,
    fmt_signed_gib,
    fmt_speedup,
    fmt_usd,
    fmt_usd_per_hour,
    fmt_usd_range,
)
from ..specs.engines import RECORDS
from ..units import GIB
from .serving_text import fleet_figures, fleet_name, serving_summary, targets_phrase, traffic_phrase
from .titles import TITLE_WORDS as TITLE_WORDS  # the titles are the wording's too
from .titles import default_title as default_title
from .titles import scenario_title as scenario_title

KIND_WORDS = {
    "inference": "Inference (serving requests)",
    "lora": "LoRA fine-tuning (adapters on a frozen base)",
    "qlora": "QLoRA fine-tuning (adapters on a 4-bit base)",
    "full_finetune": "Full fine-tuning",
    "pretrain": "Pre-training",
}
#: How the assumptions name a recomputation policy where its key is not a word (``op``).
RECOMPUTE_WORDS = {"op": "per operator (every other matrix multiply kept)"}
OPTIMIZER_WORDS = {
    "adamw": "AdamW",
    "adamw_8bit": "8-bit AdamW",
    "sgd": "SGD with momentum",
    "adafactor": "Adafactor",
}
PARALLELISM_WORDS = {
    "none": "one GPU",
    "ddp": "data parallel (a full copy per GPU)",
    "zero1": "ZeRO-1 (optimizer state sharded)",
    "zero2": "ZeRO-2 (optimizer state and gradients sharded)",
    "zero3": "ZeRO-3 (everything sharded)",
    "fsdp": "FSDP (everything sharded)",
    "tensor": "tensor parallel (each layer split)",
    "pipeline": "pipeline (layers in stages)",
}
#: A runner-up within this share of the recommended cost is called a tie on cost.
NEAR_TIE = 0.05


def point_to_changes(warnings: Iterable[str], where: str) -> list[str]:
    """The core's warnings with their pointer to the suggested changes (:data:`CHANGES_POINTER`)
    naming where this view lists them: "below", "above", "in section 1"."""
    return [w.replace(CHANGES_POINTER, f"see the changes {where}") for w in warnings]


def is_workable(c: Candidate) -> bool:
    """Fits and is not ruled out by the deadline or the budget (a "likely" setup stays in)."""
    return c.fits and (c.cost is None or c.cost.workable)


def cost_of(c: Candidate) -> float:
    return c.cost.cost_usd.expected if c.cost is not None and c.cost.cost_usd is not None else math.inf


def setup_name(c: Candidate) -> str:
    """``1 × NVIDIA H100 SXM5 80 GB``, ``2 × NVIDIA L4 (tensor)`` or, for a laid-out job,
    ``64 × NVIDIA H100 SXM5 80 GB (TP8 · PP4 · DP2 ZeRO-1 · selective recompute)``."""
    lay = c.layout
    if lay is not None and not lay.shorthand:
        return f"{c.gpu_count} {TIMES} {c.gpu.name} ({lay.name})"
    return (
        f"1 {TIMES} {c.gpu.name}"
        if c.gpu_count == 1
        else f"{c.gpu_count} {TIMES} {c.gpu.name} ({c.parallelism})"
    )


def key_name(key: str | None, names: dict[str, str]) -> str:
    """``1x mi325x (none)`` (a candidate key) -> ``1 × AMD Instinct MI325X``; unknown ids stay as they are."""
    if not key:
        return "no GPU"
    count, _, rest = key.partition("x ")
    gpu_id, _, par = rest.partition(" (")
    par = par.rstrip(")")
    name = names.get(gpu_id, gpu_id)
    if not count.isdigit():
        return key
    return f"1 {TIMES} {name}" if count == "1" else f"{count} {TIMES} {name} ({par})"


def _gpu_names(est: Estimate) -> dict[str, str]:
    """GPU id -> name for the compared GPUs and those the changes landed on."""
    names = {a.gpu_id: a.gpu_name for a in est.advice if a.gpu_id and a.gpu_name}
    names.update({c.gpu.id: c.gpu.name for c in est.candidates})
    return names


def change_lines(est: Estimate, limit: int = 6) -> list[str]:
    """The cheapest changes that make the scenario work (``est.advice``), in words, best first."""
    names = _gpu_names(est)
    out = []
    for a in est.advice:
        if not a.fits:
            continue
        text = f"{a.change}: {key_name(a.candidate, names)}"
        if a.memory_per_gpu_gib is not None:
            text += f", {fmt_gib(round(a.memory_per_gpu_gib, 2))} GiB per GPU"
        if a.job_hours is not None:
            text += f", about {fmt_hours(a.job_hours)}"
        if a.cost_usd is not None:
            text += f", about {fmt_usd(a.cost_usd)}"
        out.append(text + f" ({a.why}).")
        if len(out) == limit:
            break
    return out


def scenario_lines(est: Estimate) -> list[tuple[str, str]]:
    """The scenario as the report's table of assumptions: one (label, value) row per question the
    estimate answers, in the same order for every workload."""
    return [
        ("Model", _model_value(est)),
        ("Workload", _workload_value(est)),
        ("Precision", _precision_value(est)),
        _batch_row(est),
        ("Job size", _job_value(est)),
        ("Budget", _budget_value(est)),
        ("Deadline", _deadline_value(est)),
        ("Engine profile", _engine_value(est)),
        ("GPUs compared", _gpus_compared_value(est)),
        ("Ownership", _ownership_value(est)),
    ]


def _model_value(est: Estimate) -> str:
    """The model, its size, the experts a token uses and whether its architecture was assumed."""
    m = est.model
    model = f"{m.name}, {fmt_count(m.parameters)} parameters"
    if m.is_moe:
        model += (
            f" ({fmt_count(m.active_parameters)} active per token: {m.experts_per_token} of "
            f"{m.num_experts} experts)"
        )
    if m.architecture_assumed:
        model += "; architecture assumed from the parameter count (Llama-like)"
    return model


def _workload_value(est: Estimate) -> str:
    """The kind of work, with the adapters' rank and target layers; a session on the machine you own."""
    w = est.scenario.workload
    if not w.is_training and est.session:
        return "Inference: an interactive session on the machine you own"
    kind = KIND_WORDS.get(w.kind, w.kind)
    if w.uses_adapters:
        targets = (
            "all linear layers"
            if w.lora_targets == "all_linear"
            else ", ".join(w.lora_targets)
            if not isinstance(w.lora_targets, str)
            else w.lora_targets
        )
        kind += f", rank {w.lora_rank} on {targets}"
    return kind


def _precision_value(est: Estimate) -> str:
    """Weights and activations with the optimizer for training; weights and KV cache for inference."""
    w = est.scenario.workload
    if not w.is_training:
        return f"weights {w.weights}, KV cache {w.kv_precision}"
    if kbit_prepared(w):  # a QLoRA base: quantized weights, 16-bit activations otherwise
        prec = (
            f"weights {w.weights}; embeddings, head and norms in fp32 (PEFT's k-bit preparation; for a "
            "script that keeps them 16-bit choose No under k-bit preparation, workload.kbit_preparation "
            "false), so on one GPU or DDP the hidden states are fp32 and the other activations 16-bit"
        )
    else:
        prec = f"weights {w.weights}, activations {'fp32' if w.weights == 'fp32' else '16-bit'}"
    opt = OPTIMIZER_WORDS.get(w.optimizer, w.optimizer)
    if w.trains_base and w.master_weights and w.weights in ("bf16", "fp16", "fp8"):
        opt += " with an fp32 master copy"
    return prec + f"; optimizer {opt}"


def _batch_row(est: Estimate) -> tuple[str, str]:
    """The batch and sequence (with recomputation and FlashAttention for training), or a service's
    traffic in their place."""
    w = est.scenario.workload
    if w.serving is not None:  # a service: traffic and targets instead of a batch
        return ("Traffic", traffic_phrase(est))
    if w.is_training:
        extras = [
            f"gradient checkpointing {'on' if w.gradient_checkpointing else 'off'}"
            if w.activation_recompute is None
            else f"activation recomputation {RECOMPUTE_WORDS.get(w.activation_recompute, w.activation_recompute)}",
            f"FlashAttention {'on' if w.flash_attention else 'off'}",
        ]
        return (
            "Batch and sequence",
            f"{w.batch_size:,} sequences of {w.seq_len:,} tokens per GPU (micro-batch); {', '.join(extras)}",
        )
    if est.session and w.batch_size == 1:
        return (
            "Batch and sequence",
            f"one answer at a time: a {w.prompt_tokens:,}-token prompt and {w.output_tokens:,} output tokens",
        )
    return (
        "Batch and sequence",
        f"{w.batch_size:,} concurrent requests, each a {w.prompt_tokens:,}-token "
        f"prompt and {w.output_tokens:,} output tokens",
    )


def _job_value(est: Estimate) -> str:
    """The job's size: tokens to train, requests to serve, a fleet's targets or none for a session;
    a default is said to be one."""
    w = est.scenario.workload
    if w.serving is not None:  # a service: a fleet sized for its targets instead of a job
        return f"a fleet sized for {targets_phrase(est)}"
    if w.is_training:
        if w.train_tokens:
            return f"{fmt_count(w.train_tokens)} tokens to train"
        if w.dataset_tokens:
            return (
                f"{fmt_count(w.dataset_tokens)} tokens {TIMES} {w.epochs:g} epochs = "
                f"{fmt_count(w.dataset_tokens * w.epochs)} tokens to train"
            )
        return "100M tokens to train (default: the scenario gives no job size)"
    if est.session:
        return (
            "none: an interactive session on the machine you own (give a number of requests to time "
            "and price a job)"
        )
    requests = w.requests or 10_000
    return (
        f"{fmt_count(requests)} requests to serve ({fmt_count(requests * w.output_tokens)} output tokens)"
        + ("" if w.requests else " (default: the scenario gives no job size)")
    )


def _budget_value(est: Estimate) -> str:
    """The limits on the whole job and on the hourly rate, and the price the setups are priced at."""
    b = est.scenario.budget
    limits = []
    if b.max_total_usd is not None:
        limits.append(f"at most {fmt_usd(b.max_total_usd)} for the whole job")
    if b.max_usd_per_hour is not None:
        limits.append(f"at most {fmt_usd_per_hour(b.max_usd_per_hour)} per hour for all GPUs together")
    if not isinstance(b.price, str):
        price = f"{fmt_usd_per_hour(b.price)} per GPU-hour (the scenario's own price)"
    elif b.providers is None:
        price = f"the catalog's {b.price} cloud price per GPU-hour"
    else:
        who = "any provider" if isinstance(b.providers, str) else ", ".join(b.providers)
        dates = est.instances.price_dates if est.instances is not None else ()
        price = (
            f"the cheapest cloud instances of {who} (whole instances, {b.price} price; instance snapshot of "
            f"{', '.join(dates) or 'no date'})"
        )
    return ("; ".join(limits) if limits else "no limit set") + f"; priced at {price}"


def _deadline_value(est: Estimate) -> str:
    """The deadline, or what stands in for it: a service's targets or the planning horizon."""
    b = est.scenario.budget
    if b.deadline_hours is not None:
        return fmt_deadline(b.deadline_hours)
    if est.scenario.workload.serving is not None:
        return "none (a service runs on; its targets are the limits)"
    if est.session:
        return "none (an interactive session: no job to time)"
    return f"none set: the job is planned to finish within {fmt_days(b.horizon_days)} (the planning horizon)"


def _engine_value(est: Estimate) -> str:
    """The engine profile by name and id (the bare key of an engine without a record)."""
    engine = RECORDS.get(est.engine)
    return f"{engine.name} ({engine.id})" if engine else est.engine


def _gpus_compared_value(est: Estimate) -> str:
    """Which GPU types, how many of each per setup, how they are split, and the node size."""
    hw = est.scenario.hardware
    if est.gpu_ids:
        gpus = f"{len(est.gpu_ids)} selected GPU type{'s' if len(est.gpu_ids) != 1 else ''}"
    else:
        part = {
            "data_centre": "the data-centre GPUs of the catalog",
            "local": "the laptop and desktop GPUs of the catalog",
        }.get(hw.segment or "", "the whole catalog")
        gpus = f"{part} ({len(est.best_per_gpu())} GPU types)"
    counts = f"{hw.gpu_count} GPU{'s' if hw.gpu_count != 1 else ''}" if hw.gpu_count else "1, 2, 4 and 8 GPUs"
    if est.own_machine and not hw.gpu_count:
        counts = "the one GPU of the machine you own (set a GPU count for more)"
    if not hw.gpu_count and (hw.gpu_count_max or 0) > 8:
        counts = f"1 to 8 GPUs and whole nodes up to {hw.gpu_count_max:,} GPUs"
    return f"{gpus}; {counts} per setup; {_parallelism_phrase(est)}; {hw.gpus_per_node} GPUs per node"


def _parallelism_phrase(est: Estimate) -> str:
    """The split asked for: the parallel axes above one (``TP2 x PP4, ddp``), a named parallelism,
    or every applicable split (beyond a node: the layout search)."""
    hw = est.scenario.hardware
    axes = [
        f"{label}{value}"
        for label, value in (
            ("TP", hw.tensor_parallel),
            ("PP", hw.pipeline_parallel),
            ("CP", hw.context_parallel),
            ("EP", hw.expert_parallel),
        )
        if value and value > 1
    ]
    etp = hw.expert_tensor_parallel
    if etp is not None and etp != (hw.tensor_parallel or 1):
        axes.append(f"ETP{etp}")  # the experts' own tensor parallelism (MoE parallel folding)
    pars = hw.parallelism or ("every applicable split" if not axes else "ddp over the replicas")
    if hw.data_parallel_shard and hw.parallelism:
        pars += f" in shard groups of {hw.data_parallel_shard}"  # hybrid sharding (HSDP)
    if axes:
        pars = " x ".join(axes) + f", {pars}"
    elif not hw.layout_given and (hw.gpu_count_max or 0) > 8:
        pars += " (beyond a node: the fastest tensor x pipeline x context x data layout that fits)"
    return pars


def _ownership_value(est: Estimate) -> str:
    """The cards bought: how long they are kept, how busy, and the electricity they draw."""
    b = est.scenario.budget
    return (
        f"{b.purchase} cards kept {b.ownership_months:g} months at {fmt_share(b.utilization)} "
        f"utilization; electricity {fmt_usd_per_hour(b.electricity_usd_per_kwh)} per kWh, PUE {b.pue:g}"
    )


def horizon_applies(est: Estimate) -> bool:
    """Whether the job is planned within the horizon: no deadline, and a job rather than a service."""
    return est.scenario.budget.deadline_hours is None and est.scenario.workload.serving is None


def horizon_likely(est: Estimate) -> bool:
    """Whether the recommendation finishes within the planning horizon at its expected time only
    (the slow end of its job-time range does not), as a deadline is "likely" met."""
    rec = est.recommended
    return (
        horizon_applies(est)
        and rec is not None
        and rec.cost is not None
        and rec.cost.horizon_status == "likely"
    )


def finishes_within_days(est: Estimate) -> str:
    """``finishes within 90 days`` (the planning horizon)."""
    return f"finishes within {fmt_days(est.scenario.budget.horizon_days)}"


def finishes_within(est: Estimate) -> str:
    """``finishes within 90 days``, or ``likely finishes within 90 days`` (see :func:`horizon_likely`)."""
    return f"{'likely ' if horizon_likely(est) else ''}{finishes_within_days(est)}"


def horizon_phrase(est: Estimate) -> str:
    """``no deadline given: the cheapest setup that finishes within 90 days`` ("" with a deadline);
    ``... that likely finishes within 90 days (the slow end of its time range does not)`` when the
    recommendation is only likely to."""
    if not horizon_applies(est):
        return ""
    text = f"no deadline given: the cheapest setup that {finishes_within(est)}"
    if horizon_likely(est):
        text += " (the slow end of its time range does not)"
    return text


def same_cost_phrase(est: Estimate) -> str:
    """``same cost as 1 × NVIDIA GH200 ..., 8x faster`` when the decision preferred a faster setup of the
    same cost (within 1%) to the cheapest one; "" otherwise."""
    d, rec = est.decision, est.recommended
    other = est.candidate(d.same_cost_as_key) if d is not None and d.same_cost_as_key else None
    if rec is None or other is None or rec.cost is None or other.cost is None:
        return ""
    rh, oh = rec.cost.job_hours.expected, other.cost.job_hours.expected
    if not (rh > 0 and math.isfinite(oh)):
        return ""
    name = (
        f"{other.gpu_count} GPU{'s' if other.gpu_count != 1 else ''}"
        if other.gpu.id == rec.gpu.id
        else setup_name(other)
    )
    return f"same cost as {name}, {fmt_speedup(oh / rh)} faster"


def limits_phrase(est: Estimate) -> str:
    b = est.scenario.budget
    parts = []
    if b.deadline_hours is not None:
        parts.append(f"meets the {fmt_deadline(b.deadline_hours)} deadline")
    if b.max_total_usd is not None:
        parts.append(f"stays within the {fmt_usd(b.max_total_usd)} budget")
    if b.max_usd_per_hour is not None:
        parts.append(f"stays under {fmt_usd_per_hour(b.max_usd_per_hour)} per hour")
    return " and ".join(parts)


def figures_phrase(c: Candidate) -> str:
    """``$41.00 expected ($26.74–$176), 22.0 h (17.8–29.3 h)`` for a candidate, from its cost."""
    if c.cost is None:
        return ""
    out = []
    usd = c.cost.cost_usd
    if usd is not None:
        out.append(f"{fmt_usd(usd.expected)} expected ({fmt_usd_range(usd.low, usd.high)})")
    h = c.cost.job_hours
    out.append(f"takes {fmt_hours(h.expected)} ({fmt_hours_range(h.low, h.high)})")
    return ", ".join(out)


def memory_phrase(c: Candidate) -> str:
    return (
        f"{fmt_gib(c.memory.device_total / GIB)} GiB needed of {fmt_gib(c.capacity_gib)} GiB "
        f"per GPU ({fmt_signed_gib(c.headroom_gib)} GiB headroom)"
    )


def why_lost(rec: Candidate, other: Candidate) -> str:
    """Why ``other`` ranks below ``rec``: cost first, then time and memory headroom."""
    reasons = []
    rc, oc = cost_of(rec), cost_of(other)
    if math.isfinite(rc) and math.isfinite(oc) and oc > rc:
        more = f"{fmt_usd(oc - rc)} ({fmt_share((oc - rc) / rc)}) more"
        if (oc - rc) < NEAR_TIE * rc:
            reasons.append(f"it costs only {more}: practically a tie on cost")
        else:
            reasons.append(f"it costs {more}")
    elif not math.isfinite(oc) and math.isfinite(rc):
        reasons.append("it has no known price")
    if rec.cost is not None and other.cost is not None:
        rh, oh = rec.cost.job_hours.expected, other.cost.job_hours.expected
        if oh > rh * 1.02:
            reasons.append(f"it is slower ({fmt_hours(oh)} against {fmt_hours(rh)})")
        elif oh < rh * 0.98:
            reasons.append(
                f"even though it finishes sooner ({fmt_hours(oh)} against {fmt_hours(rh)}); "
                "choose it if time matters more than cost"
            )
    if other.headroom_gib < rec.headroom_gib and other.verdict == "tight":
        reasons.append(f"and it leaves only {fmt_signed_gib(other.headroom_gib)} GiB of memory headroom")
    if not reasons:
        return "it ties on cost and time; either is a sound choice."
    text = reasons[0]
    for r in reasons[1:]:
        text += ", " + r if not r.startswith("and ") else " " + r
    return text + "."


def likely_caveat(est: Estimate, c: Candidate) -> str:
    """Why a "likely" recommendation is not sure: the far end of its range crosses a limit."""
    b, cost = est.scenario.budget, c.cost
    out = []
    if cost is not None and cost.deadline_status == "likely" and b.deadline_hours is not None:
        out.append(
            f"its job time ({fmt_hours_range(cost.job_hours.low, cost.job_hours.high)}) may exceed the "
            f"{fmt_deadline(b.deadline_hours)} deadline at the slow end of the range"
        )
    if cost is not None and cost.budget_status == "likely" and cost.cost_usd is not None:
        out.append(
            f"its cost ({fmt_usd_range(cost.cost_usd.low, cost.cost_usd.high)}) may exceed the budget at "
            "the expensive end of the range"
        )
    if cost is not None and cost.horizon_status == "likely" and horizon_applies(est):
        out.append(
            f"its job time ({fmt_hours_range(cost.job_hours.low, cost.job_hours.high)}) may go past the "
            f"planning horizon of {fmt_days(b.horizon_days)} at the slow end of the range"
        )
    return ("Not certain: " + " and ".join(out) + ".") if out else ""


def recommendation_text(est: Estimate) -> tuple[str, Candidate | None, Candidate | None]:
    """The recommendation in words, with the recommended setup and the runner-up it names.

    A service gets its fleet and targets, a session on the machine you own how fast it runs and how
    much fits; where nothing fits or nothing meets the limits, the text says so and names the
    cheapest change. Otherwise: the recommended setup and why, then the notes that apply (a tie on
    cost, an uncertain limit, tight memory, the runner-up, a cheaper setup that misses a limit or
    only likely meets them)."""
    if est.scenario.workload.serving is not None:  # a service: the fleet and its targets
        return _service_recommendation(est)
    if est.session:  # one person on the machine they own: how fast and how much fits
        return session_line(est), est.recommended, None
    if not est.ranking:
        return _nothing_fits_text(est), None, None
    rec = est.recommended
    if rec is None:
        return _nothing_meets_limits_text(est), None, None
    decision = est.decision
    runner = est.candidate(decision.runner_up_key) if decision and decision.runner_up_key else None
    text = _recommended_sentence(est, rec) + _same_cost_note(est, rec)
    if decision is not None and decision.status == "likely":
        text += " " + likely_caveat(est, rec)
    text += _tight_memory_note(est, rec)
    if runner is not None:
        at = " at " if math.isfinite(cost_of(runner)) else ": "  # an unpriced runner-up has a time only
        text += f" Runner-up: {setup_name(runner)}{at}{figures_phrase(runner)}; it ranks second because {why_lost(rec, runner)}"
    text += _cheaper_misses_note(est, rec) + _cheaper_only_likely_note(est, rec)
    return text, rec, runner


def _service_recommendation(est: Estimate) -> tuple[str, Candidate | None, Candidate | None]:
    """A service: the recommended fleet against its targets, and the runner-up fleet's figures."""
    rec = est.recommended
    runner = (
        est.candidate(est.decision.runner_up_key) if est.decision and est.decision.runner_up_key else None
    )
    text = serving_summary(est)
    if rec is not None and runner is not None and runner.serving is not None:
        text += f" Runner-up: {fleet_name(runner)}: {fleet_figures(runner.serving)}."
    return text, rec, runner


def _nothing_fits_text(est: Estimate) -> str:
    """Nothing fits: the cheapest change that makes it fit, or that a larger GPU or smaller model is needed."""
    working = [a for a in est.advice if a.fits]
    if not working:
        return (
            "Nothing fits on any GPU compared, and no standard change (QLoRA, checkpointing, smaller "
            "batches, sharding, quantization, more GPUs) makes it fit. A larger GPU or a smaller model "
            "is needed."
        )
    a = working[0]
    return (
        f"Nothing fits on any GPU compared. The cheapest change that makes it fit: {a.change} "
        f"({a.why}), which runs on {key_name(a.candidate, _gpu_names(est))} with "
        f"{fmt_gib(round(a.memory_per_gpu_gib or 0.0, 2))} GiB per GPU"
        + (f", about {fmt_hours(a.job_hours)}" if a.job_hours is not None else "")
        + (f" for about {fmt_usd(a.cost_usd)}" if a.cost_usd is not None else "")
        + "."
        + (" Other changes that work are listed below." if len(working) > 1 else "")
    )


def _nothing_meets_limits_text(est: Estimate) -> str:
    """Setups fit but none meets the limits: the cheapest and the fastest of them, and the cheapest
    change that meets the limits."""
    ranking = list(est.ranking)
    limits = limits_phrase(est)
    cheapest = ranking[0]
    fastest = min(
        (c for c in ranking if c.cost is not None),
        key=lambda c: c.cost.job_hours.expected if c.cost is not None else math.inf,
        default=None,
    )
    if not limits and horizon_applies(est):
        limits = (
            f"finishes within {fmt_days(est.scenario.budget.horizon_days)} (no deadline given: the "
            "planning horizon, which the Budget page sets)"
        )
    text = (
        f"No setup {limits or 'meets the limits'}. The cheapest that fits is {setup_name(cheapest)}: "
        f"{figures_phrase(cheapest)}."
    )
    if fastest is not None and fastest.key != cheapest.key:
        text += f" The fastest is {setup_name(fastest)}: {figures_phrase(fastest)}."
    working = [a for a in est.advice if a.fits]
    if not working:
        return text + " No standard change meets them either: relax the deadline or the budget."
    a = working[0]
    return text + (
        f" The cheapest change that meets them: {a.change} ({a.why}), on "
        f"{key_name(a.candidate, _gpu_names(est))}"
        + (f", about {fmt_usd(a.cost_usd)}" if a.cost_usd is not None else "")
        + ". The changes are listed below."
    )


def _recommended_sentence(est: Estimate, rec: Candidate) -> str:
    """``Recommended: <setup>, the cheapest setup that fits and <limits>. It costs ...; <memory>.``"""
    limits = limits_phrase(est)
    decision = est.decision
    what = (
        "the cheapest setup that fits"
        if math.isfinite(cost_of(rec))
        else "the fastest-ranked setup that fits"
    )
    likely = decision is not None and decision.status == "likely"
    if not limits and horizon_applies(est) and math.isfinite(cost_of(rec)):
        what += f" and {finishes_within(est)}"
    text = f"Recommended: {setup_name(rec)}, {what}" + (
        f" and {'likely ' if likely else ''}{limits}" if limits else ""
    )
    if horizon_applies(est):
        text += (
            f" (no deadline given: the job is planned within {fmt_days(est.scenario.budget.horizon_days)}; "
            "set a deadline or another horizon on the Budget page)"
        )
    return text + ". " + f"It costs {figures_phrase(rec)}; {memory_phrase(rec)}."


def _same_cost_note(est: Estimate, rec: Candidate) -> str:
    """Where the cheapest setup costs the same within 1%, that the faster one is chosen and by how much."""
    decision = est.decision
    other = est.candidate(decision.same_cost_as_key) if decision and decision.same_cost_as_key else None
    if other is None or other.cost is None or rec.cost is None or not rec.cost.job_hours.expected > 0:
        return ""
    speedup = fmt_speedup(other.cost.job_hours.expected / rec.cost.job_hours.expected)
    return (
        f" It costs the same as the cheapest setup, {setup_name(other)} ({figures_phrase(other)}), "
        f"within 1%, and finishes {speedup} faster, so it is chosen over it."
    )


def _tight_memory_note(est: Estimate, rec: Candidate) -> str:
    """Memory above 95% of capacity, and the cheapest setup with room to spare."""
    if rec.verdict != "tight":
        return ""
    text = " Memory is tight (above 95% of capacity): a longer sample or an allocator spike may not fit."
    roomy = [c for c in est.best_per_gpu().values() if c.verdict == "fits" and is_workable(c)]
    if roomy:
        text += (
            f" The cheapest setup with room to spare is {setup_name(roomy[0])}: {figures_phrase(roomy[0])}; "
            f"{memory_phrase(roomy[0])}."
        )
    return text


def _cheaper_misses_note(est: Estimate, rec: Candidate) -> str:
    """The cheapest setup below the recommended one that misses a limit, and which limits it misses."""
    cheaper = [
        c
        for c in est.ranking
        if math.isfinite(cost_of(c)) and cost_of(c) < cost_of(rec) and not is_workable(c)
    ]
    if not cheaper:
        return ""
    c = cheaper[0]
    missed = []
    if c.cost is not None and c.cost.deadline_status == "at risk":
        missed.append("the deadline")
    if c.cost is not None and c.cost.budget_status == "over":
        missed.append("the budget")
    if c.cost is not None and c.cost.horizon_status == "beyond":
        missed.append(
            f"the planning horizon of {fmt_days(est.scenario.budget.horizon_days)} "
            f"(it takes {fmt_hours(c.cost.job_hours.expected)})"
        )
    return f" A cheaper setup misses {' and '.join(missed) or 'a limit'}: {setup_name(c)} at {figures_phrase(c)}."


def _cheaper_only_likely_note(est: Estimate, rec: Candidate) -> str:
    """A cheaper setup that only likely meets the limits, where the recommended one surely does."""
    unsure = [
        c
        for c in est.ranking
        # cheaper beyond the same-cost rule's 1%, which would have given the tie to the faster setup
        if math.isfinite(cost_of(c))
        and cost_of(c) * (1 + SAME_COST) < cost_of(rec)
        and tier(c) == LIKELY
        and tier(rec) == SURE
    ]
    if not unsure:
        return ""
    c = unsure[0]
    limits = limits_phrase(est)
    only = limits or (finishes_within_days(est) if horizon_applies(est) else "meets the limits")
    return (
        f" A cheaper setup only likely {only} (the slow or expensive end of its range does not), so the "
        f"sure one is chosen: {setup_name(c)} at {figures_phrase(c)}."
    )


# -- the window's summary and detail panel: the same sentences as plain text ------------------------
def model_line(est: Estimate) -> str:
    """``Llama 3.1 8B: 8.03B parameters, 32 layers, context up to 131,072 tokens.``"""
    m = est.model
    return (
        f"{m.name}: {fmt_count(m.parameters)} parameters"
        + (f", {fmt_count(m.active_parameters)} active per token" if m.is_moe else "")
        + f", {m.num_layers} layers, context up to {m.max_context:,} tokens."
    )


def workload_line(est: Estimate) -> str:
    """``lora · weights bf16 · micro-batch 4 · 2,048 tokens`` (the model name goes in front)."""
    w = est.scenario.workload
    if w.serving is not None:
        return f"serving · weights {w.weights} · {traffic_phrase(est)}"
    return (
        f"{w.kind.replace('_', ' ')} · weights {w.weights} · "
        f"{'micro-batch' if w.is_training else 'concurrent sequences'} {w.batch_size} · "
        f"{w.context_tokens:,} tokens"
    )


def summary_line(est: Estimate) -> str:
    """The answer in one line, as the window's summary and the CLI print it: the decision's
    recommended setup (the same as the report's), or why there is none and the cheapest change."""
    if est.scenario.workload.serving is not None:
        return serving_summary(est)
    if est.session:
        return session_line(est)
    rec = est.recommended
    limits = limits_phrase(est)
    if rec is not None:
        likely = est.decision is not None and est.decision.status == "likely"
        cost = rec.cost
        figures = []
        if cost is not None:
            figures.append(
                f"{fmt_hours(cost.job_hours.expected)} "
                f"({fmt_hours_range(cost.job_hours.low, cost.job_hours.high)})"
            )
            if cost.cost_usd is not None:
                figures.append(f"about {fmt_usd(cost.cost_usd.expected)}")
        text = f"Recommended: {setup_name(rec)}" + (": " + ", ".join(figures) if figures else "")
        speed = speed_phrase(est, rec) if not est.scenario.workload.is_training else None
        if speed:
            text += f"; {speed}"
        if limits:
            text += f"; {'likely ' if likely else ''}{limits}"
            if likely:
                text += " (the slow or expensive end of the range does not)"
        for phrase in (same_cost_phrase(est), horizon_phrase(est)):
            if phrase:
                text += f"; {phrase}"
        return text + "."
    names = _gpu_names(est)
    working = [a for a in est.advice if a.fits]
    fix = (
        f" Cheapest change: {working[0].change}, on {key_name(working[0].candidate, names)}."
        if working
        else ""
    )
    if not est.ranking:
        return "Nothing fits on any GPU compared." + (fix or " No standard change makes it fit.")
    closest = next(iter(est.best_per_gpu().values()))
    cost = closest.cost
    when = ""
    if cost is not None:
        when = f" ({fmt_hours(cost.job_hours.expected)}" + (
            f", about {fmt_usd(cost.cost_usd.expected)})" if cost.cost_usd is not None else ")"
        )
    if not limits and horizon_applies(est):
        limits = f"finishes within {fmt_days(est.scenario.budget.horizon_days)} (no deadline given: the planning horizon)"
    return f"No setup {limits or 'meets the limits'}; closest: {setup_name(closest)}{when}." + fix


def calibration_note(est: Estimate) -> str:
    """Whether the figures are calibrated to the user's measurements ("" when calibration is off)."""
    if est.calibration is None:
        return ""
    n = len(est.calibrated_gpus)
    if not n:
        return "Calibration on (no values for this scenario's engine)."
    return f"Calibrated to your measurements on {n} GPU type{'s' if n != 1 else ''}."


def prompt_size(tokens: int) -> str:
    """A prompt's length as people say it: ``4k``, ``1.5k``, ``512``."""
    if tokens >= 1000:
        if tokens % 1024 == 0:  # 4,096 is "4k" as people say it
            return f"{tokens // 1024}k"
        k = tokens / 1000
        return f"{k:.0f}k" if abs(k - round(k)) < 0.05 else f"{k:.1f}k"
    return f"{tokens}"


def prompt_phrase(tokens: int, seconds: float) -> str:
    """``a 4k-token prompt in 1.2 s`` (``in under 1 ms`` for a tiny one)."""
    return f"a {prompt_size(tokens)}-token prompt in {fmt_seconds(seconds)}"


def speed_phrase(est: Estimate, c: Candidate) -> str | None:
    """How fast a batch job's setup answers, with the estimate's one tokens/s figure (the ranking's):
    "runs at ~232 tokens/s in all (33.0 per sequence), a 1k-token prompt in 1.1 s". None without a
    speed."""
    perf, rate = c.performance, est.tokens_per_s(c)
    if perf is None or rate is None or not perf.prefill_tokens_per_s:
        return None
    w = est.scenario.workload
    prompt_s = w.prompt_tokens / perf.prefill_tokens_per_s
    per_sequence = perf.tokens_per_s_per_user
    line = f"runs at ~{fmt_rate(rate.expected)} tokens/s"
    if per_sequence and (c.gpu_count > 1 or w.batch_size > 1):
        line += f" in all ({fmt_rate(per_sequence)} per sequence)"
    line += f", {prompt_phrase(w.prompt_tokens, prompt_s)}"
    if c.memory.host:
        line += f", with {c.memory.host / 2**30:.1f} GiB of the model in host RAM"
    return line


def host_phrase(est: Estimate, c: Candidate) -> str:
    """The host RAM the layers kept off the GPU may use, and whether it is assumed:
    "28 GiB available, assumed for a desktop with 32 GB of dual-channel DDR5-5600"."""
    hw = est.scenario.hardware
    if hw.host_memory_gib is not None:
        return f"{fmt_gib(hw.host_memory_gib)} GiB available (your setting)"
    defaults = c.gpu.host_defaults
    if defaults.ram_gib is None:
        return "host RAM not checked"
    return f"{fmt_gib(defaults.ram_gib)} GiB available, assumed for {defaults.machine}"


def fit_phrase(est: Estimate, c: Candidate) -> str:
    """How the model sits on the machine: "fits with 43 of 80 layers on the GPU, 19.2 GiB in system
    RAM (28 GiB available, assumed for a desktop ...)", a Mac's one memory pool, or "fits"."""
    layers = est.model.num_layers
    if c.gpu_layers is not None:
        return (
            f"fits with {c.gpu_layers} of {layers} layers on the GPU, {fmt_gib(c.host_memory_gib)} GiB in "
            f"system RAM ({host_phrase(est, c)})"
        )
    if c.gpu.unified_memory:
        return f"one memory pool shared with macOS, of which Metal lets the GPU use {fmt_gib(c.capacity_gib)} GiB"
    return "fits"


def session_figures(est: Estimate, c: Candidate) -> str:
    """The session's figures: "~41.6 tokens/s, a 1k-token prompt in 587 ms; up to 15,234 tokens of
    context; 3.7 GiB of 24.0 GiB free"."""
    s = est.session_of(c)
    if s is None:
        return ""
    left = (
        f"{fmt_gib(s.memory_left_gib)} GiB of it left"
        if c.gpu.unified_memory
        else f"{fmt_gib(s.memory_left_gib)} GiB of {fmt_gib(c.capacity_gib)} GiB free"
    )
    return (
        f"~{fmt_rate(s.tokens_per_s)} tokens/s, {prompt_phrase(s.prompt_tokens, s.prompt_s)}; "
        f"up to {s.max_context_tokens:,} tokens of context; {left}"
    )


def machine_name(est: Estimate, c: Candidate) -> str:
    """The machine in a session's answer: ``1 × NVIDIA GeForce RTX 4090``, ``1 × Apple M3 Max (40-core
    GPU) with 64 GB``."""
    name = setup_name(c)
    if c.gpu.unified_memory and c.gpu.memory_gb:
        name += f" with {c.gpu.memory_gb:g} GB"
    return name


def session_line(est: Estimate) -> str:
    """A session's answer in one line: on the machine the user owns, how fast and how much fits."""
    rec = est.recommended
    if rec is not None and est.session_of(rec) is not None:
        several = len(est.best_per_gpu()) > 1
        head = (
            f"Recommended: {machine_name(est, rec)}, the fastest that fits"
            if several
            else f"On {machine_name(est, rec)}"
        )
        fit = fit_phrase(est, rec)
        return f"{head}: " + (f"{fit}; " if fit != "fits" else "") + session_figures(est, rec) + "."
    names = _gpu_names(est)
    working = [a for a in est.advice if a.fits]
    fix = (
        f" Cheapest change: {working[0].change}, on {key_name(working[0].candidate, names)}."
        if working
        else " No standard change makes it fit."
    )
    closest = next(iter(est.best_per_gpu().values()), None)
    if closest is None:
        return "Nothing fits on any GPU compared." + fix
    why = closest.misfit or (
        f"needs {fmt_gib(closest.memory.device_total / 2**30)} GiB of {fmt_gib(closest.capacity_gib)} GiB"
    )
    return f"Does not fit {machine_name(est, closest)}: {why}." + fix


def speed_assumption(est: Estimate) -> str | None:
    """A sentence saying that the speed rests on an engine profile no measured run was fitted to
    (its ``calibrated_on`` begins "assumed"), with what it rests on instead; None for a fitted
    profile, and for an estimate without speeds."""
    engine = est.speed_constants.engines.get(est.engine)
    if engine is None or not engine.assumed:
        return None
    if not any(c.performance is not None for c in est.candidates):
        return None
    basis = engine.calibrated_on.split(":", 1)[1].strip() if ":" in engine.calibrated_on else ""
    return (
        f"Speed: {engine.name}'s efficiency is an assumption, not fitted to measured runs"
        + (f": {basis}" if basis else "")
        + ". Its 80% range is borrowed from the engines that were."
    )
