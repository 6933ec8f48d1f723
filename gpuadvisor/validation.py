"""Estimates set against published measurements (``tests/data/calibration.csv``).

Each case restates one measured row as a scenario, says what the source measured (tensor
peak, ``nvidia-smi`` reading, analytic model states) and in which unit, and lists every
assumption made where the source is silent. ``scripts/validate.py`` prints the table and
writes ``docs/validation.md``; the test suite checks the accuracy aims.
"""

from __future__ import annotations

import csv
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .core.estimate import resolve_model
from .core.memory import MemoryModel
from .core.presets import ModelCatalog
from .core.scenario import ModelSource, Scenario
from .core.units import GIB
from .core.workload import RuntimeOverhead, Workload

GB, MIB = 1e9, 2**20


@dataclass(frozen=True)
class MemoryCase:
    """A measured memory figure and the scenario that reproduces it."""

    case_id: str
    model: ModelSource
    workload: Workload
    measured_bytes: float
    basis: str  # "tensors" (max_memory_allocated), "device" (nvidia-smi) or "model_states" (analytic)
    bound: str = "point"  # "point", "lower" (ran out of memory above this) or "upper" (fits within)
    gpu_count: int = 1
    parallelism: str = "none"
    overhead: RuntimeOverhead = field(default_factory=RuntimeOverhead)
    in_aim: bool = True
    assumptions: str = ""
    scale_to_params: float | None = None  # analytic per-parameter rows: rescale to this parameter count


@dataclass(frozen=True)
class MemoryResult:
    case: MemoryCase
    estimate_bytes: float
    error: float | None  # relative, for point values
    ok: bool  # bound respected (or point within 10%)


def _litgpt_lora(model: str, kind: str, weights: str, measured_gb: float, case_id: str, dq: bool = False,
                 note: str = "") -> MemoryCase:
    return MemoryCase(case_id, ModelSource(preset=model),
                      Workload(kind=kind, weights=weights, batch_size=1, seq_len=1304, lora_rank=8,
                               lora_targets=("q_proj", "v_proj"), double_quant=dq, master_weights=False),
                      measured_gb * GB, "tensors",
                      assumptions="LitGPT defaults: LoRA r=8 on the fused qkv (query and value), dropout 0.05; "
                                  "peak set by the longest Alpaca sample (1,304 tokens); GB = 1e9 bytes. " + note)


MEMORY_CASES: tuple[MemoryCase, ...] = (
    MemoryCase("MEM-01", ModelSource(parameters=2.85e9, name="T0_3B"),
               Workload(kind="full_finetune", weights="fp32", batch_size=1, seq_len=256), 47.14 * GIB, "tensors",
               in_aim=False,
               assumptions="T5 encoder-decoder approximated by a 2.85B-parameter decoder; batch and length not "
                           "stated (batch 1, 256 tokens assumed); the PEFT scripts print MiB/1024, read as GiB."),
    MemoryCase("MEM-02", ModelSource(parameters=2.85e9, name="T0_3B"),
               Workload(kind="lora", weights="fp32", batch_size=1, seq_len=256, lora_rank=8,
                        lora_targets=("q_proj", "v_proj")), 14.4 * GIB, "tensors", in_aim=False,
               assumptions="As MEM-01; LoRA r=8 on query and value."),
    _litgpt_lora("llama-2-7b", "lora", "bf16", 21.30, "MEM-08"),
    _litgpt_lora("llama-2-7b", "qlora", "nf4", 14.14, "MEM-10", note="bnb.nf4 without double quantization."),
    _litgpt_lora("llama-2-13b", "lora", "bf16", 38.12, "MEM-11"),
    MemoryCase("MEM-14", ModelSource(preset="llama-2-7b"),
               Workload(kind="inference", weights="bf16", batch_size=1, prompt_tokens=20, output_tokens=50,
                        flash_attention=True), 13.52 * GB, "tensors",
               assumptions="LitGPT generate: short prompt (~20 tokens assumed) and 50 new tokens; GB = 1e9."),
    MemoryCase("MEM-16", ModelSource(preset="llama-2-70b"),
               Workload(kind="inference", weights="nf4", double_quant=True, batch_size=1, prompt_tokens=20,
                        output_tokens=50), 37.21 * GB, "tensors",
               assumptions="bnb.nf4-dq (double quantization); embeddings and head kept in bf16; GB = 1e9."),
    MemoryCase("MEM-18", ModelSource(preset="starcoder-15b", name="bigcode/octocoder"),
               Workload(kind="inference", weights="bf16", batch_size=1, prompt_tokens=20, output_tokens=60),
               29.03 * GIB, "tensors",
               assumptions="octocoder has StarCoder's architecture; values are GiB (the blog divides by 1024^3)."),
    MemoryCase("MEM-19", ModelSource(preset="starcoder-15b", name="bigcode/octocoder"),
               Workload(kind="inference", weights="int8", batch_size=1, prompt_tokens=20, output_tokens=60),
               15.22 * GIB, "tensors", assumptions="LLM.int8 (bitsandbytes); GiB as above."),
    MemoryCase("MEM-23", ModelSource(preset="bert-large"),
               Workload(kind="full_finetune", weights="fp32", batch_size=4, seq_len=512, flash_attention=False),
               14949 * MIB, "device", overhead=RuntimeOverhead(cuda_context_gib=1343 / 1024),
               assumptions="nvidia-smi reading in MiB; CUDA context 1,343 MiB as measured in the same source; "
                           "eager attention with dropout; sequence-classification head."),
    MemoryCase("MEM-25", ModelSource(preset="bert-large"),
               Workload(kind="full_finetune", weights="fp32", batch_size=1, seq_len=512, flash_attention=False,
                        gradient_checkpointing=True),
               6775 * MIB, "device", overhead=RuntimeOverhead(cuda_context_gib=1343 / 1024),
               assumptions="As MEM-23, micro-batch 1 with gradient checkpointing."),
    *(MemoryCase(cid, ModelSource(preset="llama-2-7b"),
                 Workload(kind="pretrain", weights="fp16", optimizer="adamw"), value * GB, "model_states",
                 gpu_count=64, parallelism=par, scale_to_params=7.5e9,
                 assumptions="Analytic model states of the ZeRO paper (7.5B parameters, 64 GPUs, K = 12); "
                             "estimate rescaled to 7.5B parameters; GB = 1e9.")
      for cid, value, par in (("MEM-26", 120, "ddp"), ("MEM-27", 31.4, "zero1"), ("MEM-28", 16.6, "zero2"),
                              ("MEM-29", 1.9, "zero3"))),
    MemoryCase("MEM-31", ModelSource(preset="gpt2-xl"),
               Workload(kind="full_finetune", weights="fp16", batch_size=1, seq_len=128), 24 * GB, "device",
               bound="lower", assumptions="Out of memory on a 24 GB Titan RTX: the need must exceed 24 GB."),
    MemoryCase("MEM-33", ModelSource(preset="llama-65b"),
               Workload(kind="qlora", weights="nf4", double_quant=True, batch_size=1, seq_len=528,
                        gradient_checkpointing=True, lora_rank=64, lora_targets="all_linear",
                        lora_dropout=True),
               48 * GIB, "device", bound="upper",
               assumptions="Guanaco-65B: NF4 with double quantization, LoRA r=64 on all linear layers, "
                           "gradient checkpointing; global batch 16 reached by accumulation over micro-batch 1 "
                           "(the QLoRA repository's 65B script), 16 + 512 tokens; fits a 48 GB card (48 GB GDDR6 cards such "
                           "as the RTX A6000 expose 48 GiB)."),
)

EXCLUDED = {"MEM-03": "ZeRO-3 with CPU offload of parameters and optimizer: offloading is not modelled."}


def run_memory_case(case: MemoryCase, models: ModelCatalog) -> MemoryResult:
    model = resolve_model(Scenario(model=case.model), models)
    bd = MemoryModel(model, case.workload, case.overhead).breakdown(case.gpu_count, case.parallelism)
    value = {"tensors": bd.tensors_total, "device": bd.device_total, "model_states": bd.model_states}[case.basis]
    if case.scale_to_params:
        value *= case.scale_to_params / model.parameters
    if case.bound == "point":
        err = value / case.measured_bytes - 1.0
        return MemoryResult(case, value, err, abs(err) <= 0.10)
    if case.bound == "lower":
        return MemoryResult(case, value, None, value > case.measured_bytes)
    return MemoryResult(case, value, None, value <= case.measured_bytes)


def run_memory_validation(models: ModelCatalog) -> list[MemoryResult]:
    return [run_memory_case(c, models) for c in MEMORY_CASES]


def median_abs_error(results: list, predicate: Callable[[object], bool] = lambda r: True) -> float:
    errors = [abs(r.error) for r in results if r.error is not None and r.case.in_aim and predicate(r)]
    return statistics.median(errors) if errors else 0.0


def calibration_rows(path: str | Path) -> dict[str, dict[str, str]]:
    """The published rows by case id (to print the source next to each comparison)."""
    with open(path, newline="", encoding="utf-8") as fh:
        return {row["case_id"]: row for row in csv.DictReader(fh)}
