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
from collections.abc import Callable

from .core.estimation.estimate import resolve_model
from .core.estimation.memory import MemoryModel
from .core.specs.presets import ModelCatalog
from .core.formats.scenario import ModelSource, Scenario
from .core.units import GIB
from .core.specs.workload import RuntimeOverhead, Workload

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


# --- throughput -----------------------------------------------------------------------------
@dataclass(frozen=True)
class SpeedCase:
    """A measured speed: tokens/s (aggregate, per GPU or per user) or achieved TFLOPS per GPU."""

    case_id: str
    model: ModelSource
    workload: Workload
    gpu: str
    measured: float
    metric: str  # "per_gpu" (training tokens/s/GPU), "aggregate", "per_user", "tflops_per_gpu"
    gpu_count: int = 1
    parallelism: str = "none"
    in_aim: bool = True
    assumptions: str = ""


def _pretrain(seq: int, engine: str, micro: int = 1) -> Workload:
    return Workload(kind="pretrain", weights="bf16", batch_size=micro, seq_len=seq, engine=engine)


OPT_175B = ModelSource(name="OPT-175B", architecture=(
    ("num_layers", 96), ("hidden_size", 12288), ("num_attention_heads", 96), ("num_key_value_heads", 96),
    ("intermediate_size", 49152), ("vocab_size", 50272), ("gated_mlp", False), ("tied_embeddings", True),
    ("max_context", 2048), ("position_embedding", "learned"), ("norm", "layernorm"), ("attention_bias", True),
    ("attention_out_bias", True), ("mlp_bias", True)))

_NODE = "GPU count not stated: one 8-GPU node with FSDP assumed (per-GPU throughput of large runs is close)."

SPEED_CASES: tuple[SpeedCase, ...] = (
    SpeedCase("TRN-01", ModelSource(preset="llama-2-7b"), _pretrain(4096, "megatron"), "a100-80gb",
              184320, "gpu_hours", 8, "fsdp", assumptions=_NODE + " 2.0T tokens."),
    SpeedCase("TRN-03", ModelSource(preset="llama-2-70b"), _pretrain(4096, "megatron"),
              "a100-80gb", 1720320, "gpu_hours", 8, "fsdp", assumptions=_NODE + " 2.0T tokens."),
    SpeedCase("TRN-05", ModelSource(preset="llama-3.1-8b"), _pretrain(8192, "megatron"),
              "h100-sxm", 1300000, "gpu_hours", 8, "fsdp", in_aim=True,
              assumptions=_NODE + " 15T tokens; the model card's total GPU time likely includes more than "
                                  "the main pre-training run (implied MFU ~17%)."),
    SpeedCase("TRN-12", ModelSource(preset="llama-7b"), _pretrain(2048, "megatron"), "a100-80gb",
              82432, "gpu_hours", 8, "fsdp", assumptions=_NODE + " 1.0T tokens."),
    SpeedCase("TRN-18", OPT_175B, _pretrain(2048, "megatron"), "a100-80gb", 147, "tflops_per_gpu", 8,
              "tensor", assumptions="992 GPUs with FSDP and tensor parallelism; one 8-GPU tensor-parallel group "
                                    "modelled; 'up to' figure."),
    SpeedCase("TRN-20", ModelSource(preset="tinyllama-1.1b"), _pretrain(2048, "fsdp", 8),
              "a100-40gb", 24000, "per_gpu", 16, "fsdp",
              assumptions="16 GPUs (two nodes), FSDP, micro-batch 8 assumed (global 2M tokens)."),
    SpeedCase("TRN-24", ModelSource(preset="mpt-7b"), _pretrain(2048, "fsdp", 6), "h100-sxm", 10643,
              "per_gpu", 8, "fsdp", assumptions="llm-foundry benchmark table: micro-batch 6, 8 GPUs."),
    SpeedCase("TRN-26", ModelSource(preset="mpt-7b"), _pretrain(2048, "fsdp", 6), "a100-80gb", 4641,
              "per_gpu", 8, "fsdp", assumptions="llm-foundry benchmark table: micro-batch 6, 8 GPUs."),
    SpeedCase("INF-01", ModelSource(preset="llama-7b"),
              Workload(kind="inference", weights="fp8", kv_cache="fp8", batch_size=768, prompt_tokens=128,
                       output_tokens=128, engine="tensorrt-llm"), "h100-sxm", 19694, "aggregate",
              assumptions="Static batch of 768, 128 in / 128 out; output tokens/s including prefill."),
    SpeedCase("INF-05", ModelSource(preset="llama-7b"),
              Workload(kind="inference", weights="fp16", batch_size=384, prompt_tokens=128, output_tokens=128,
                       engine="tensorrt-llm"), "a100-80gb", 5586, "aggregate",
              assumptions="Static batch of 384, 128 in / 128 out."),
    SpeedCase("INF-09", ModelSource(preset="gpt-j-6b"),
              Workload(kind="inference", weights="fp8", batch_size=1, prompt_tokens=128, output_tokens=128,
                       engine="tensorrt-llm"), "h100-sxm", 185, "per_user",
              assumptions="Batch-1 decode rate; 128 output tokens assumed."),
    SpeedCase("INF-10", ModelSource(preset="gpt-j-6b"),
              Workload(kind="inference", weights="fp16", batch_size=1, prompt_tokens=128, output_tokens=128,
                       engine="tensorrt-llm"), "a100-80gb", 111, "per_user",
              assumptions="Batch-1 decode rate; 128 output tokens assumed."),
    SpeedCase("INF-12", ModelSource(preset="llama-2-7b", name="CodeLlama-7B"),
              Workload(kind="inference", weights="fp16", batch_size=1, prompt_tokens=1, output_tokens=128,
                       engine="llama.cpp"), "rtx-4090", 61.03, "per_user",
              assumptions="llama-bench tg128: decode from an empty context."),
    SpeedCase("INF-15", ModelSource(preset="llama-7b"),
              Workload(kind="inference", weights="int4", batch_size=1, prompt_tokens=1, output_tokens=128,
                       engine="llama.cpp"), "rtx-3090", 121.82, "per_user",
              assumptions="Q4_0 (4.5 bits per weight) modelled as int4 with group scales (4.25 bits)."),
    SpeedCase("INF-18", ModelSource(preset="llama-2-7b"),
              Workload(kind="inference", weights="int4", batch_size=1, prompt_tokens=128, output_tokens=128,
                       engine="mlc-llm"), "rtx-4090", 191.0, "per_user",
              assumptions="q4f16 weights; prompt length not stated (128 assumed)."),
    SpeedCase("INF-21", ModelSource(preset="llama-2-7b"),
              Workload(kind="inference", weights="bf16", batch_size=1, prompt_tokens=20, output_tokens=50,
                       engine="transformers"), "a100-40gb", 30.97, "per_user",
              assumptions="LitGPT generate, eager PyTorch: modelled with the Transformers (eager) profile."),
)

TOKENS_TRAINED = {"TRN-01": 2.0e12, "TRN-03": 2.0e12, "TRN-05": 15e12, "TRN-12": 1.0e12}


@dataclass(frozen=True)
class SpeedResult:
    case: SpeedCase
    estimate: float
    measured: float  # in the same unit as estimate (GPU-hours rows become tokens/s per GPU)
    unit: str
    error: float


def run_speed_case(case: SpeedCase, models: ModelCatalog, gpus, engine=None) -> SpeedResult:
    from .core.specs.engines import engine_for
    from .core.estimation.performance import inference_performance, training_performance

    model = resolve_model(Scenario(model=case.model), models)
    gpu = gpus.get(case.gpu)
    w = case.workload
    engine = engine or engine_for(w.engine, w.kind)
    mm = MemoryModel(model, w, prefill_chunk_tokens=engine.prefill_chunk_tokens)
    if w.is_training:
        perf = training_performance(mm, gpu, case.gpu_count, case.parallelism, engine)
        per_gpu = perf.tokens_per_s.expected / case.gpu_count
        if case.metric == "tflops_per_gpu":
            est, meas, unit = (perf.mfu or 0) * perf.peak_tflops, case.measured, "TFLOP/s per GPU"
        elif case.metric == "gpu_hours":
            est, unit = per_gpu, "tokens/s per GPU"
            meas = TOKENS_TRAINED[case.case_id] / (case.measured * 3600)
        else:
            est, meas, unit = per_gpu, case.measured, "tokens/s per GPU"
    else:
        perf = inference_performance(mm, gpu, case.gpu_count, case.parallelism, engine)
        if case.metric == "per_user":
            est, unit = perf.tokens_per_s_per_user or 0.0, "tokens/s per user"
        else:
            est, unit = perf.tokens_per_s.expected, "output tokens/s"
        meas = case.measured
    return SpeedResult(case, est, meas, unit, est / meas - 1.0)


def run_speed_validation(models: ModelCatalog, gpus) -> list[SpeedResult]:
    return [run_speed_case(c, models, gpus) for c in SPEED_CASES]
