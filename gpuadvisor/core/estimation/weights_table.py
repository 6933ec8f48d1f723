"""Which weight type fits my card: the scenario once per weight type its engine runs, on one GPU type.

When one GPU type is compared (``hardware.gpu``, or one ``--gpu``) for inference without traffic
targets, :func:`weights_table` estimates the scenario again for each weight type the engine runs
(:attr:`~gpuadvisor.core.specs.engines.EngineProfile.weight_types`: llama.cpp's GGUF types and 16-bit; a serving engine's BF16, FP8, INT8 and
INT4 kernels; ...), on the same GPU with the same count, and keeps per type the setup the decision
ranks first: whether it fits whole, with layers in host RAM or not at all, with how many layers on
the GPU, its generation and prompt speed and the longest context that fits. The question people ask
LM Studio; the answer is the same physics as the estimate's, computed once per type
(``benchmarks/bench_weights_table.py``: at most 20 ms for one card).

A model read from a ``.gguf`` file has its exact bytes only for the file's own type; the other rows
use llama.cpp's recipe for the model's shapes (:mod:`~gpuadvisor.core.specs.quant_types`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..specs.engines import record_of
from ..specs.hardware import GpuCatalog
from ..specs.models import ModelSpec
from ..specs.presets import ModelCatalog
from ..specs.workload import Workload
from ..units import GIB
from ..vocabulary import Parallelism, WorkloadKind
from .results import Estimate

#: How a row's weights read in a table ("AWQ/GPTQ int4" where the engine runs those kernels).
WEIGHT_LABELS = {
    "bf16": "BF16",
    "fp16": "FP16",
    "fp8": "FP8",
    "int8": "INT8",
    "int4": "INT4 (AWQ/GPTQ)",
    "nf4": "NF4 (bitsandbytes)",
}


@dataclass(frozen=True, slots=True)
class WeightsRow:
    """One weight type on the chosen GPU (units in the field names)."""

    weights: str
    weights_gib: float  # the model's weights in this type
    fit: str  # "full", "partial" (layers in host RAM) or "no"
    gpu_layers: int | None  # layers on the GPU (the model's layer count when all fit); None: no fit
    num_layers: int
    tokens_per_s: float | None  # the estimate's one tokens/s figure (generation in a session)
    prefill_tokens_per_s: float | None
    max_context: int | None  # the longest context that fits; None: no fit
    memory_gib: float  # the GPU's memory need (the setup ranked first)
    full_memory_gib: float  # the GPU's memory need with every layer on it (where a split starts)
    current: bool = False  # the scenario's own weights

    @property
    def label(self) -> str:
        """``Q4_K_M``, ``BF16``, ``INT4 (AWQ/GPTQ)``."""
        return WEIGHT_LABELS.get(self.weights, self.weights.upper())

    def to_dict(self) -> dict[str, Any]:
        return {
            "weights": self.weights,
            "label": self.label,
            "weights_gib": round(self.weights_gib, 3),
            "fit": self.fit,
            "gpu_layers": self.gpu_layers,
            "num_layers": self.num_layers,
            "tokens_per_s": None if self.tokens_per_s is None else round(self.tokens_per_s, 2),
            "prefill_tokens_per_s": None
            if self.prefill_tokens_per_s is None
            else round(self.prefill_tokens_per_s, 1),
            "max_context": self.max_context,
            "memory_gib": round(self.memory_gib, 3),
            "full_memory_gib": round(self.full_memory_gib, 3),
            "current": self.current,
        }


def table_weights(engine_id: str, workload: Workload) -> tuple[str, ...]:
    """The weight types of the table: the engine's
    (:attr:`~gpuadvisor.core.specs.engines.EngineProfile.weight_types`), with the scenario's own
    added where the engine's list lacks it."""
    kinds = record_of(engine_id, workload.kind).weight_types
    return kinds if workload.weights in kinds else (*kinds, workload.weights)


def wants_table(est: Estimate) -> bool:
    """Whether this estimate gets a table: inference without traffic targets, one GPU type compared."""
    w = est.scenario.workload
    gpus = {c.gpu.id for c in est.candidates}
    return w.kind == WorkloadKind.INFERENCE and w.serving is None and len(gpus) == 1


def weights_table(
    est: Estimate, gpus: GpuCatalog, models: ModelCatalog, estimate_fn: Any
) -> tuple[WeightsRow, ...]:
    """One row per weight type the estimate's engine runs, on the estimate's one GPU type (the
    count and setup of its first-ranked candidate kept); () when :func:`wants_table` says no.

    ``estimate_fn`` is :func:`~gpuadvisor.core.estimation.estimate.estimate` (passed in: the
    orchestrator calls this module, not the other way round)."""
    if not wants_table(est):
        return ()
    lead = next(iter(est.best_per_gpu().values()), None)
    if lead is None:
        return ()
    s = est.scenario
    hardware = replace(s.hardware, gpu_count=lead.gpu_count)
    if lead.gpu_count > 1 and lead.parallelism != Parallelism.NONE:
        hardware = replace(hardware, parallelism=lead.parallelism)
    rows = []
    for weights in table_weights(est.engine, s.workload):
        if weights == s.workload.weights:
            variant = est
        else:
            workload = _with_weights(s.workload, weights, est.engine)
            if workload is None:
                continue
            variant = estimate_fn(
                replace(s, workload=workload, hardware=hardware),
                gpus,
                models,
                gpu_ids=[lead.gpu.id],
                with_advice=False,
                _model=_model_for(est.model, weights, s.workload.weights),
                calibration=est.calibration,
                constants=est.constants,
            )
        rows.append(_row(variant, weights, weights == s.workload.weights))
    return tuple(rows)


def _with_weights(workload: Workload, weights: str, engine_id: str) -> Workload | None:
    """The workload with ``weights`` on the estimate's engine (its default kernels), or None where
    the pair is refused."""
    try:
        return replace(workload, weights=weights, engine=engine_id, quantization=None)
    except ValueError:
        return None


def _model_for(model: ModelSpec, weights: str, own: str) -> ModelSpec:
    """The model for another weight type: a ``.gguf`` file's exact bytes hold only for its own type."""
    if weights == own or not model.file_weight_bytes:
        return model
    return replace(model, file_weight_bytes=0, file_type="")


def _row(est: Estimate, weights: str, current: bool) -> WeightsRow:
    """The table's row of one weight type: the setup the decision ranks first."""
    mm = est.memory_model
    layers = est.model.num_layers
    best = next(iter(est.best_per_gpu().values()), None)
    full = (
        mm.breakdown(best.gpu_count, best.parallelism, layout=best.layout).device_total / GIB
        if best is not None
        else 0.0
    )
    if best is None or not best.fits:
        need = best.memory.device_total / GIB if best is not None else 0.0
        return WeightsRow(
            weights, mm.weight_bytes / GIB, "no", None, layers, None, None, None, need, full, current
        )
    rate = est.tokens_per_s(best)
    perf = best.performance
    return WeightsRow(
        weights=weights,
        weights_gib=mm.weight_bytes / GIB,
        fit=best.fit_kind,
        gpu_layers=layers if best.gpu_layers is None else best.gpu_layers,
        num_layers=layers,
        tokens_per_s=rate.expected if rate is not None else None,
        prefill_tokens_per_s=perf.prefill_tokens_per_s if perf is not None else None,
        max_context=est.what_if(best).max_context,
        memory_gib=best.memory.device_total / GIB,
        full_memory_gib=full,
        current=current,
    )
