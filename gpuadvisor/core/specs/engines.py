"""Engine profiles: how close each software stack gets to the hardware roofline.

A profile holds the efficiency factors that turn peak datasheet figures into achievable ones.
The values are fitted to the published measurements in ``tests/data/calibration.csv`` by
``scripts/fit_engines.py`` (least median absolute log error over the rows of that engine),
and ``docs/estimation.md`` lists each fitted value with the rows it rests on. Where no row
exists for an engine the value is an assumption, and ``calibrated_on`` says so.

Inference factors:
- ``bandwidth_efficiency``: share of the memory bandwidth that weight and KV-cache streaming
  reaches in decode (STREAM-like kernels reach 80-90%).
- ``quantized_bandwidth_factor``: extra factor for int8/int4/fp8 weight kernels, which spend
  time dequantizing (both TensorRT-LLM FP8 batch-1 and llama.cpp Q4_0 rows show about 0.6).
- ``layer_overhead_s``: fixed time per layer and decode step (kernel launches, Python in eager
  frameworks); it is what makes small models at batch 1 slower than the bandwidth bound.
- ``prefill_mfu`` / ``decode_mfu``: share of dense tensor peak reached by compute-bound prefill
  and by large-batch decode.
Training factor: ``mfu`` (model FLOPs utilization of dense peak, Chowdhery et al. 2022, PaLM,
appendix B), on Ampere; ``ARCH_MFU_FACTOR`` scales it to other generations.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError


@dataclass(frozen=True, slots=True)
class EngineProfile:
    id: str
    name: str
    kind: str  # "inference" or "training"
    bandwidth_efficiency: float = 0.8
    quantized_bandwidth_factor: float = 0.6
    layer_overhead_s: float = 0.0
    prefill_mfu: float = 0.5
    decode_mfu: float = 0.4
    prefill_chunk_tokens: int | None = None
    mfu: float = 0.4
    spread: float = 0.2  # +/- relative uncertainty of the efficiency, for low/high ranges
    calibrated_on: str = ""
    # Per-architecture multipliers of layer_overhead_s and prefill_mfu (llama.cpp: Metal and CUDA
    # kernels differ), as (architecture, factor) pairs; "int8" applies to prefill on the INT8 peak.
    # Ratios, so a refit of the two base values moves every architecture with them.
    layer_overhead_by_arch: tuple[tuple[str, float], ...] = ()
    prefill_mfu_by_arch: tuple[tuple[str, float], ...] = ()
    #: Quantized prefill runs on the INT8 tensor-core peak (llama.cpp's MMQ kernels) where known.
    int8_prefill: bool = False

    def layer_overhead_for(self, architecture: str) -> float:
        """Fixed time per layer and decode step on this architecture, s."""
        for arch, factor in self.layer_overhead_by_arch:
            if arch == architecture:
                return self.layer_overhead_s * factor
        return self.layer_overhead_s

    def prefill_mfu_for(self, architecture: str, int8_peak: bool) -> float:
        """Share of the prefill peak reached: the ``int8`` entry when prefill runs on the INT8 peak."""
        key = "int8" if int8_peak else architecture
        for arch, factor in self.prefill_mfu_by_arch:
            if arch == key:
                return min(1.0, self.prefill_mfu * factor)
        return self.prefill_mfu


# Values written by scripts/fit_engines.py (see docs/estimation.md, "Engine profiles").
ENGINES: dict[str, EngineProfile] = {p.id: p for p in (
    EngineProfile("tensorrt-llm", "TensorRT-LLM", "inference", bandwidth_efficiency=0.75,
                  quantized_bandwidth_factor=0.60, layer_overhead_s=40e-6, prefill_mfu=0.50, decode_mfu=0.50,
                  prefill_chunk_tokens=8192, spread=0.15, calibrated_on="INF-01, INF-05, INF-09, INF-10"),
    EngineProfile("vllm", "vLLM", "inference", bandwidth_efficiency=0.68, quantized_bandwidth_factor=0.60,
                  layer_overhead_s=60e-6, prefill_mfu=0.45, decode_mfu=0.45, prefill_chunk_tokens=8192,
                  spread=0.25, calibrated_on="assumed: TensorRT-LLM's fit less 10% (no vLLM row in the data)"),
    # llama.cpp: decode streams every weight once per token at about 92% of the bandwidth plus a
    # fixed cost per layer and token (kernel launches and small ops): about 125 us on Metal and
    # 40 us on CUDA. Prefill reaches about 70% of the Apple GPU's FP16 ALU peak, and about 27% of
    # the INT8 tensor peak with quantized weights on NVIDIA (MMQ kernels). Fitted by hand to
    # llama-bench rows of discussions #4167 (Metal) and #15013 (CUDA); see docs/estimation.md.
    EngineProfile("llama.cpp", "llama.cpp", "inference", bandwidth_efficiency=0.92,
                  quantized_bandwidth_factor=1.0, layer_overhead_s=40e-6, prefill_mfu=0.35, decode_mfu=0.3,
                  prefill_chunk_tokens=512, spread=0.2,
                  calibrated_on="llama.cpp discussions #4167 (Apple M1-M4, 2023 build) and #15013 "
                                "(RTX 40/50, 2025 builds), LLaMA-2 7B pp512/tg128; INF-12",
                  layer_overhead_by_arch=(("apple", 3.125),),  # 125 us on Metal
                  prefill_mfu_by_arch=(("apple", 2.0), ("int8", 0.27 / 0.35)), int8_prefill=True),
    EngineProfile("mlc-llm", "MLC LLM", "inference", bandwidth_efficiency=0.80, quantized_bandwidth_factor=0.96,
                  layer_overhead_s=0.0, prefill_mfu=0.4, decode_mfu=0.35, prefill_chunk_tokens=2048,
                  spread=0.2, calibrated_on="INF-18"),
    EngineProfile("transformers", "Hugging Face Transformers / eager PyTorch", "inference",
                  bandwidth_efficiency=0.80, quantized_bandwidth_factor=0.5, layer_overhead_s=670e-6,
                  prefill_mfu=0.4, decode_mfu=0.3, spread=0.3, calibrated_on="INF-21"),
    EngineProfile("megatron", "Megatron-LM / large-scale custom stacks", "training", mfu=0.49, spread=0.15,
                  calibrated_on="TRN-01, TRN-03, TRN-12, TRN-18 (TRN-05 is an outlier, see docs)"),
    EngineProfile("fsdp", "PyTorch FSDP (llm-foundry, lit-gpt)", "training", mfu=0.64, spread=0.15,
                  calibrated_on="TRN-20, TRN-24, TRN-26"),
    EngineProfile("hf-trainer", "Hugging Face Trainer / PEFT", "training", mfu=0.43, spread=0.3,
                  calibrated_on="assumed: two thirds of the FSDP fit (no Trainer throughput row in the data)"),
)}

DEFAULT_INFERENCE_ENGINE = "vllm"
DEFAULT_TRAINING_ENGINE = "hf-trainer"
DEFAULT_PRETRAIN_ENGINE = "megatron"

#: Achieved MFU relative to Ampere for the same stack. Hopper: 46.4% vs 64.2% MFU for MPT-7B
#: with the same llm-foundry setup (TRN-24 vs TRN-26); Blackwell assumed like Hopper (tensor
#: peak grew faster than memory bandwidth); older and consumer parts assumed slightly lower.
ARCH_MFU_FACTOR = {"ampere": 1.0, "hopper": 0.72, "blackwell": 0.72, "ada": 0.85, "volta": 0.85,
                   "turing": 0.8, "cdna2": 0.7, "cdna3": 0.6, "cdna4": 0.6, "pascal": 0.8, "other": 0.8}


def engine_for(engine_id: str | None, kind: str) -> EngineProfile:
    """The profile named ``engine_id``, or the default one for the workload kind."""
    if engine_id is None:
        engine_id = {"inference": DEFAULT_INFERENCE_ENGINE, "pretrain": DEFAULT_PRETRAIN_ENGINE}.get(
            kind, DEFAULT_TRAINING_ENGINE)
    profile = ENGINES.get(engine_id)
    if profile is None:
        raise InputError("workload.engine", f"unknown engine; known engines: {', '.join(ENGINES)}", engine_id)
    wanted = "inference" if kind == "inference" else "training"
    if profile.kind != wanted:
        names = ", ".join(p.id for p in ENGINES.values() if p.kind == wanted)
        raise InputError("workload.engine", f"is a {profile.kind} engine; for {kind} use one of {names}", engine_id)
    return profile
