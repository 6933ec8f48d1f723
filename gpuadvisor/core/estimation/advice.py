"""Ranking, the Pareto frontier, provisioning flags and the cheapest change that makes it work.

- Ranking: candidates that fit, by expected job cost (then time); unpriced ones last.
- Pareto frontier: fitting candidates that no other candidate beats on both expected time and
  expected cost.
- Under-provisioned: does not fit, or memory utilization above 95% (the seed article's target
  is 85-95% of VRAM). Over-provisioned: fits with less than half the memory used, or another
  candidate meets the same deadline for less than half the cost.
- Changes: when nothing fits, meets the deadline or the budget, the scenario is re-estimated
  with each standard remedy (QLoRA, gradient checkpointing, 8-bit optimizer, FP8/INT8/INT4
  weights, an FP8 KV cache, ZeRO-3, a smaller batch) and the cheapest working candidate of
  each is reported with its effect on memory, time and cost.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..vocabulary import Parallelism, WorkloadKind
from .results import Change as Change  # a remedy's result type, kept importable here

if TYPE_CHECKING:
    from ..formats.scenario import Scenario
    from ..specs.workload import Hardware, Workload
    from .cost import CostEstimate
    from .results import Candidate, Estimate

#: A change to a scenario (one remedy).
Transform = Callable[["Scenario"], "Scenario"]


def cost_hours(cost: CostEstimate | None) -> tuple[float, float]:
    """(expected cost, expected hours) of a candidate's cost estimate; unpriced costs sort last."""
    if cost is None:
        return (float("inf"), float("inf"))
    usd = cost.cost_usd.expected if cost.cost_usd is not None else float("inf")
    return (usd, cost.job_hours.expected)


def cost_key(c: Candidate) -> tuple[float, ...]:
    if c.serving is not None:
        return c.serving.order  # the decision's order too
    return cost_hours(c.cost)


def rank(candidates: tuple[Candidate, ...]) -> tuple[Candidate, ...]:
    """Fitting candidates by expected cost, then time."""
    return tuple(sorted((c for c in candidates if c.fits), key=cost_key))


def pareto_indices(keys: list[tuple[float, float] | None]) -> set[int]:
    """Indices of the cost-versus-time Pareto frontier; ``keys`` holds (cost, hours) or None (not fitting)."""
    points = sorted((k[1], k[0], i) for i, k in enumerate(keys) if k is not None and k[0] != float("inf"))
    frontier, best_cost = set(), float("inf")
    for _hours, cost, i in points:
        if cost < best_cost:
            frontier.add(i)
            best_cost = cost
    return frontier


def under_provisioned(fits: bool, utilization: float) -> bool:
    """Does not fit, or leaves under 5% of VRAM (the seed article's target is 85-95%)."""
    return (not fits) or utilization > 0.95


def over_provisioned(
    fits: bool, utilization: float, key: tuple[float, float] | None, cheapest_meeting: float | None
) -> bool:
    """Fits with under half the memory used, or something at under half the cost meets the same deadline."""
    if not fits:
        return False
    if utilization < 0.5:
        return True
    return (
        key is not None
        and cheapest_meeting is not None
        and key[0] != float("inf")
        and cheapest_meeting < 0.5 * key[0]
    )


def remedies(est: Estimate) -> list[tuple[str, str, Transform]]:
    """(label, why, scenario transform) for each standard remedy that applies to this workload:
    the training job's or the inference's memory savers, then more or other GPUs."""
    w, hw = est.scenario.workload, est.scenario.hardware
    savers = _training_remedies(w, hw) if w.is_training else _inference_remedies(w)
    return savers + _hardware_remedies(hw)


def _workload_change(**kw: Any) -> Transform:
    """A scenario transform that sets workload fields."""
    return lambda s: replace(s, workload=replace(s.workload, **kw))


def _training_remedies(w: Workload, hw: Hardware) -> list[tuple[str, str, Transform]]:
    """A training job's memory savers: a lighter method, optimizer, checkpointing, micro-batch,
    sharding, and the combinations."""
    wl = _workload_change
    out: list[tuple[str, str, Transform]] = []
    if w.kind in (WorkloadKind.FULL_FINETUNE, WorkloadKind.PRETRAIN):
        out.append(
            (
                "LoRA instead of full fine-tuning",
                "no gradients or optimizer state for the frozen base",
                wl(kind="lora"),
            )
        )
        if w.optimizer == "adamw":
            out.append(
                (
                    "8-bit AdamW",
                    "optimizer moments take 2 instead of 8 bytes per parameter",
                    wl(optimizer="adamw_8bit"),
                )
            )
    if w.kind in (WorkloadKind.FULL_FINETUNE, WorkloadKind.LORA):
        out.append(
            (
                "QLoRA (NF4 base)",
                "the frozen base takes about 0.52 instead of 2 bytes per parameter",
                wl(kind="qlora", weights="nf4"),
            )
        )
    if not w.gradient_checkpointing:
        out.append(
            (
                "gradient checkpointing",
                "keeps one tensor per layer and recomputes the rest (~+33% compute)",
                wl(gradient_checkpointing=True),
            )
        )
    if w.batch_size > 1:
        out.append(
            (
                f"micro-batch 1 with {w.batch_size}x gradient accumulation",
                "activations scale with the micro-batch; the optimizer sees the same global batch",
                wl(batch_size=1),
            )
        )
    if hw.parallelism in (None, Parallelism.DDP):
        out.append(
            (
                "ZeRO-3 / FSDP",
                "shards weights, gradients and optimizer state over the GPUs",
                lambda s: replace(s, hardware=replace(s.hardware, parallelism="zero3", gpu_count=None)),
            )
        )
    savers = {"gradient_checkpointing": True, "batch_size": 1}
    if w.kind in (WorkloadKind.FULL_FINETUNE, WorkloadKind.LORA):
        out.append(
            (
                "QLoRA + gradient checkpointing + micro-batch 1",
                "every memory saver at once",
                wl(kind="qlora", weights="nf4", **savers),
            )
        )
    if w.kind in (WorkloadKind.FULL_FINETUNE, WorkloadKind.PRETRAIN):
        out.append(
            (
                "LoRA + gradient checkpointing + micro-batch 1",
                "adapters only, activations minimal",
                wl(kind="lora", **savers),
            )
        )
    return out


def _inference_remedies(w: Workload) -> list[tuple[str, str, Transform]]:
    """Inference's memory savers: lighter weights and KV cache, fewer sequences at once."""
    wl = _workload_change
    out: list[tuple[str, str, Transform]] = []
    if w.weights in ("fp32", "bf16", "fp16", "fp8") and w.kv_precision in ("fp32", "bf16", "fp16"):
        out.append(("INT4 weights + FP8 KV cache", "both savers at once", wl(weights="int4", kv_cache="fp8")))
    if w.weights in ("fp32", "bf16", "fp16"):
        out.append(
            (
                "FP8 weights",
                "1 byte per weight; full speed on Ada, Hopper and Blackwell",
                wl(weights="fp8"),
            )
        )
        out.append(("INT4 weights (AWQ/GPTQ)", "about 0.53 bytes per weight", wl(weights="int4")))
    if w.kv_precision in ("fp32", "bf16", "fp16"):
        out.append(("FP8 KV cache", "halves the KV cache", wl(kv_cache="fp8")))
    if w.batch_size > 1:
        out.append(
            (
                f"{max(1, w.batch_size // 2)} concurrent sequences",
                "the KV cache scales with them",
                wl(batch_size=max(1, w.batch_size // 2)),
            )
        )
    return out


def _hardware_remedies(hw: Hardware) -> list[tuple[str, str, Transform]]:
    """More GPUs of the type asked for, or any GPU of the catalog."""
    out: list[tuple[str, str, Transform]] = []
    if hw.gpu_count and hw.gpu_count < 8:
        out.append(
            (
                "up to 8 GPUs",
                "more GPUs share the model (tensor parallelism or ZeRO-3 over NVLink)",
                lambda s: replace(s, hardware=replace(s.hardware, gpu_count=None, parallelism=None)),
            )
        )
    if hw.gpu:
        out.append(
            (
                "any GPU of the catalog",
                "a larger card may hold it alone",
                lambda s: replace(s, hardware=replace(s.hardware, gpu=None)),
            )
        )
    return out


def mig_hint(est: Estimate) -> str | None:
    """Small inference jobs: a MIG slice is enough on A100/H100-class cards."""
    if est.scenario.workload.is_training:
        return None
    for c in est.candidates:
        if (
            c.gpu_count == 1
            and c.gpu.mig_instances >= 7
            and c.memory.device_total <= c.capacity_gib * 2**30 / 7
        ):
            return (
                f"Needs {c.memory.device_total / 2**30:.1f} GiB: a 1/7 MIG slice of a {c.gpu.name} "
                f"({c.capacity_gib / 7:.1f} GiB) is enough; share the card."
            )
    return None
