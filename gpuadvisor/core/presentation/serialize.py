"""Estimates as plain JSON-ready data (the edge of the core: the CLI's ``--json``, the report).

Memory figures are GiB, rounded to 3 decimals; money is USD; times are hours unless the key
says ``_s``. The keys are a contract that scripts rely on (see ``docs/cli.md``).
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

from ..estimation.results import Candidate, Estimate
from ..specs.hardware import GpuSpec
from ..specs.models import ModelSpec


def _r(x: float, digits: int = 3) -> float:
    return round(float(x), digits)


def model_to_dict(model: ModelSpec) -> dict[str, Any]:
    return {
        "id": model.id or None,
        "name": model.name,
        "parameters": model.parameters,
        "active_parameters": model.active_parameters,
        "published_parameters": model.published_params,
        "num_layers": model.num_layers,
        "hidden_size": model.hidden_size,
        "num_attention_heads": model.num_attention_heads,
        "num_key_value_heads": model.num_key_value_heads,
        "head_dim": model.head_dim_,
        "intermediate_size": model.intermediate_size,
        "vocab_size": model.vocab_size,
        "num_experts": model.num_experts,
        "experts_per_token": model.experts_per_token,
        "max_context": model.max_context,
        "sliding_window": model.sliding_window,
        "architecture_assumed": model.architecture_assumed,
        "source": model.source,
    }


def gpu_to_dict(gpu: GpuSpec) -> dict[str, Any]:
    cloud = gpu.cloud_usd_per_hour
    return {
        "id": gpu.id,
        "name": gpu.name,
        "vendor": gpu.vendor,
        "architecture": gpu.architecture,
        "memory_gib": gpu.memory_gib_usable,
        "memory_gb": gpu.memory_gb,
        "memory_type": gpu.memory_type,
        "memory_bandwidth_gb_s": gpu.memory_bandwidth_gb_s,
        "fp16_dense_tflops": gpu.fp16_dense_tflops,
        "bf16_dense_tflops": gpu.bf16_dense_tflops,
        "fp8_dense_tflops": gpu.fp8_dense_tflops,
        "int8_dense_tops": gpu.int8_dense_tops,
        "fp4_dense_tflops": gpu.fp4_dense_tflops,
        "fp16_acc16_dense_tflops": gpu.fp16_acc16_dense_tflops,
        "tdp_w": gpu.tdp_w,
        "nvlink_gb_s": gpu.nvlink_gb_s,
        "pcie_gen": gpu.pcie_gen,
        "mig_instances": gpu.mig_instances,
        "cloud_usd_per_hour": None
        if cloud is None
        else {"low": cloud.low, "expected": cloud.expected, "high": cloud.high},
        "purchase_new_usd": list(gpu.purchase_new_usd) if gpu.purchase_new_usd else None,
        "purchase_used_usd": list(gpu.purchase_used_usd) if gpu.purchase_used_usd else None,
        "price_as_of": gpu.price_as_of or None,
        "source": gpu.source,
        "segment": gpu.segment,
        "unified_memory": gpu.unified_memory,
        "memory_options_gib": list(gpu.memory_options_gib),
        "host_memory_bandwidth_gb_s": gpu.host_memory_bandwidth_gb_s,
    }


def candidate_to_dict(
    c: Candidate, calibrated: bool | None = None, est: Estimate | None = None
) -> dict[str, Any]:
    """One candidate; ``calibrated`` (when given) adds whether its GPU used calibrated values; ``est``
    (the estimate it belongs to) adds the figures only the estimate knows: the one tokens/s figure
    of every view (generation speed in a session), the layers on the GPU and the session."""
    mem = {k: _r(v) for k, v in c.memory.gib().items()}
    out: dict[str, Any] = {
        "gpu": c.gpu.id,
        "gpu_name": c.gpu.name,
        "gpu_count": c.gpu_count,
        "parallelism": c.parallelism,
        "layout": c.the_layout.to_dict(),
        "layout_name": c.layout_name,
        "setup_label": c.setup_label,
        "layout_short_name": c.the_layout.short_name,
        "fits": c.fits,
        "verdict": c.verdict,
        "capacity_gib": _r(c.capacity_gib),
        "headroom_gib": _r(c.headroom_gib),
        "memory_utilization": _r(c.utilization, 4),
        "memory_per_gpu_gib": mem,
        # With pipeline parallelism the figures are those of the fuller stage ("first" or "last").
        "memory_stage": c.memory.stage or None,
        "logits_gib": _r(c.memory.logits / 2**30),
        # Host RAM per node: offloaded training state, layers kept in host RAM (gpu_layers).
        "host_memory_gib": _r(c.host_memory_gib if c.layout is not None else c.memory.host / 2**30),
    }
    if c.misfit:
        out["does_not_fit_because"] = c.misfit
    if c.performance is not None:
        out.update(c.performance.to_dict())
    if est is not None:
        out.update(_estimate_figures(c, est))
    if c.cost is not None:
        out.update(c.cost.to_dict())
    if c.serving is not None:
        out["serving"] = c.serving.to_dict()
    out.update(
        {"pareto": c.pareto, "under_provisioned": c.under_provisioned, "over_provisioned": c.over_provisioned}
    )
    if calibrated is not None:
        out["calibrated"] = calibrated
    if c.warnings:
        out["warnings"] = list(c.warnings)
    return out


def _estimate_figures(c: Candidate, est: Estimate) -> dict[str, Any]:
    """A candidate's figures that need its estimate (see :func:`candidate_to_dict`)."""
    out: dict[str, Any] = {}
    rate = est.tokens_per_s(c)
    if rate is not None:
        out["tokens_per_s"] = round(rate.expected, 2)
        out["tokens_per_s_range"] = rate.to_dict(2)
    w = est.scenario.workload
    if not w.is_training:
        layers = est.model.num_layers
        out["gpu_layers"] = None if not c.fits else (layers if c.gpu_layers is None else c.gpu_layers)
        out["num_layers"] = layers
        if c.gpu_layers is not None or est.own_machine:
            out["host"] = host_to_dict(c, est)
    session = est.session_of(c)
    if session is not None:
        out["session"] = session.to_dict()
    return out


def host_to_dict(c: Candidate, est: Estimate) -> dict[str, Any]:
    """The host the layers kept off the GPU would use: its RAM available to them and its memory's
    bandwidth, and whether those are the machine class's defaults (stated in the answer)."""
    hw = est.scenario.hardware
    defaults = c.gpu.host_defaults
    ram = hw.host_memory_gib if hw.host_memory_gib is not None else defaults.ram_gib
    return {
        "machine": defaults.machine,
        "machine_class": str(c.gpu.machine_class),
        "ram_available_gib": ram,
        "ram_assumed": hw.host_memory_gib is None,
        "bandwidth_gb_s": c.gpu.host_memory_bandwidth_gb_s,
        "bandwidth_assumed": hw.host_memory_bandwidth_gb_s is None,
        "memory": defaults.memory if hw.host_memory_bandwidth_gb_s is None else "as stated",
    }


def calibration_to_dict(est: Estimate) -> dict[str, Any]:
    """Whether calibration was on, which GPUs it changed, and the values used (with n and errors)."""
    return {
        "enabled": est.calibration is not None,
        "created": est.calibration.created if est.calibration is not None else None,
        "gpus": list(est.calibrated_gpus),
        "factors": [
            {
                "gpu": f.gpu_id,
                "engine": f.engine,
                "factor": f.factor_name,
                "value": f.value,
                "n_measurements": f.n_measurements,
                "error_before_pct": f.error_before_pct,
                "error_after_pct": f.error_after_pct,
            }
            for f in est.calibration_fits
        ],
    }


def _with_load(est: Estimate, c: Candidate, out: dict[str, Any]) -> dict[str, Any]:
    """A candidate's dict whose fleet carries its figures at the load (every serving candidate
    reports ``serving.at_load``, simulated on first use where the estimate did not)."""
    if c.serving is not None:
        fleet = est.serving_of(c)
        if fleet is not None:
            out["serving"] = fleet.to_dict()
    return out


def estimate_to_dict(est: Estimate, today: _dt.date | None = None, stale_months: int = 6) -> dict[str, Any]:
    """The whole estimate as JSON-ready data; ``today`` (default: the system date) and
    ``stale_months`` decide which prices are stale."""
    from .prices import pick_price_warnings, price_date, price_stale, rented_costs
    from .titles import scenario_title

    today = today or _dt.date.today()
    w = est.scenario.workload
    calibrated = set(est.calibrated_gpus)
    candidates = []
    for c in est.candidates:
        d = _with_load(est, c, candidate_to_dict(c, calibrated=c.gpu.id in calibrated, est=est))
        d["price_date"] = price_date(est, c)
        d["price_stale"] = price_stale(est, c, today, stale_months)
        d["instances"] = [r.to_dict() for r in rented_costs(est, c)]
        candidates.append(d)
    out: dict[str, Any] = {
        "scenario": scenario_title(est),
        "model": model_to_dict(est.model),
        "workload": {
            "kind": w.kind,
            "weights": w.weights,
            "kv_cache": w.kv_precision,
            "batch_size": w.batch_size,
            "context_tokens": w.context_tokens,
            "engine": est.engine,
        },
        # "session": one person on the machine they own (no job to time or price); "job" otherwise.
        "answer": "session" if est.session else "job",
        "own_machine": est.own_machine,
        "candidates": candidates,
        "warnings": list(dict.fromkeys(list(est.warnings) + pick_price_warnings(est, today, stale_months))),
    }
    if est.weights_table:
        out["weights_table"] = [row.to_dict() for row in est.weights_table]
    out["what_if"] = [
        {
            "gpu": c.gpu.id,
            "gpu_count": c.gpu_count,
            "parallelism": c.parallelism,
            "layout_name": c.layout_name,
            "max_batch": wi.max_batch,
            "max_context": wi.max_context,
            **({"max_concurrent_requests": wi.max_batch} if not w.is_training else {}),
        }
        for c in est.best_per_gpu().values()
        for wi in (est.what_if(c),)
    ]
    if est.decision is not None:
        out["recommendation"] = est.decision.to_dict()
    if est.ranking:
        out["ranking"] = [c.key for c in est.ranking]
    if est.advice:
        out["advice"] = [a.to_dict() for a in est.advice]
    out["calibration"] = calibration_to_dict(est)
    return out
