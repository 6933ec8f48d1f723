"""The speed model's constants: the global ones, each engine's fitted factors and the kernel
families, as one immutable value (:class:`SpeedConstants`) that an estimate is computed with.

Three groups (the per-engine facts that no fit moves live in :mod:`.engines`, the kernel families'
priors in :mod:`.kernels`):

1. **Per engine** (:class:`~.engines.EngineProfile`, fitted): ``bandwidth_efficiency`` (llama.cpp),
   ``prefill_mfu``, ``layer_overhead_s``, ``mfu``, the per-architecture multipliers and each
   engine's 80% range.
2. **Per kernel family** (:class:`~.kernels.KernelFamily`): how well the family's GEMV streams the
   quantized weights at batch 1, the extra kernels it launches per linear layer, the bytes a
   dequantized 16-bit copy costs once a batch is too large for the GEMV kernel, and the share of
   16-bit tensor throughput its GEMM reaches.
3. **Global** (:class:`SpeedConstants`): launch times per kernel (CPU side for Python and C++
   runtimes, GPU side), the GEMM-shape half-saturation sizes, the attention-kernel efficiency,
   the FP8 GEMM factor and the GEMM ceiling per GPU generation.

``PRIORS`` holds the documented priors (datasheet-level facts, kernel counts read from the engines'
code, published kernel benchmarks; ``docs/estimation.md`` lists each with its source). ``FITTED``
holds the values in use; its ``provenance`` says which rows they were fitted to. The validation
harness (:mod:`gpuadvisor.validation.harness`) refits them, with each source held out for the
out-of-sample figures.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TypedDict

from ..errors import InputError
from .engines import PROFILES, EngineProfile, default_engine, with_release_lines
from .kernels import KERNEL_FAMILIES, KernelFamily

#: What the low and high figures of every speed, time and cost range mean.
RANGE_LABEL = "80% range"
RANGE_COVERAGE = 0.8


@dataclass(frozen=True, slots=True)
class LlamaCppModel:
    """llama.cpp's own speed model: prompt processing (pp) and token generation (tg) apart.

    Generation streams every weight once per token at the llama.cpp profile's
    ``bandwidth_efficiency`` of the memory bandwidth (GGUF blocks included: the MMVQ kernels read
    them at the same rate as 16-bit weights) plus a fixed cost per layer and token
    (``layer_overhead_s``: kernel launches and small ops, cut by CUDA graphs, llama.cpp's default
    for single-sequence decode on CUDA since mid-2024); prompt processing reaches
    ``prefill_mfu`` of the FP16 peak, or of the INT8 tensor peak when quantized weights run on
    llama.cpp's MMQ kernels (NVIDIA). Metal and CUDA kernels differ, so the profile carries a
    multiplier per architecture (``layer_overhead_by_arch``, ``prefill_mfu_by_arch``; ``cuda_graphs``
    for decode replayed from CUDA graphs, ``int8`` for prefill on the INT8 peak). Those six factors
    are fitted by the validation harness
    (``scripts/fit_engines.py``; refitted with each source held out by ``scripts/validate.py
    --out-of-sample``) to the published llama-bench rows of tests/data/validation. This class holds
    what is not fitted; see docs/estimation.md, "llama.cpp".
    """

    decode_mfu: float = 0.3
    prefill_chunk_tokens: int = 512  # llama.cpp's default batch (-b / -ub 512)
    #: Share of the host memory's datasheet bandwidth that the CPU's dot products stream the layers
    #: kept off the GPU at (partial offload, ``-ngl`` below the layer count). Fitted by
    #: ``scripts/fit_host_stream.py`` to the scored partial-offload rows of tests/data/validation
    #: (2026-12-06: OFL-01..10, three sources; held out one source at a time it misses by a median
    #: 32%: machines differ, see docs/estimation.md, "Partial offload"). Before it, the GPU's 0.93.
    host_stream_efficiency: float = 0.54
    #: The 80% range of a step with layers on the CPU (measured / estimate over the same rows, held
    #: out by source): wider than the engine's own, since the host's memory and cores vary.
    split_spread_low: float = 0.35
    split_spread_high: float = 1.04


LLAMA_CPP = LlamaCppModel()


@dataclass(frozen=True)
class SpeedConstants:
    """Global constants of the speed model and the engine profiles, fitted together (see the module
    docstring). ``provenance`` says where the values come from."""

    engines: Mapping[str, EngineProfile]
    families: Mapping[str, KernelFamily] = field(default_factory=lambda: dict(KERNEL_FAMILIES))
    #: CPU time to launch one kernel of an eager step (framework dispatch included), seconds.
    cpu_kernel_s: Mapping[str, float] = field(default_factory=lambda: {"python": 12e-6, "cpp": 4e-6})
    #: GPU-side cost of one small kernel (launch latency and tail) even inside a CUDA graph, seconds.
    gpu_kernel_s: float = 2.5e-6
    #: Host time of one decode step of an engine that replays CUDA graphs, by runtime: scheduling
    #: the batch, preparing its inputs, sampling and handing the tokens out, which a graph does not
    #: remove (the eager engines' per-layer launch time holds it). Priors: about a millisecond for
    #: a Python scheduler (vLLM's v0.6.0 post, Sept. 2024: before multi-step scheduling the GPU was
    #: busy only 38% of a Llama 3 8B step on an H100), a few tenths for a C++ runtime; fitted.
    graph_step_host_s: Mapping[str, float] = field(default_factory=lambda: {"python": 1.0e-3, "cpp": 0.3e-3})
    #: Kernels a mixture-of-experts layer adds to a decode step (counted from vLLM's fused-MoE path:
    #: router GEMM, top-k softmax, token alignment, two grouped expert GEMMs, activation, weighted
    #: sum), each paying ``gpu_kernel_s`` (and a launch without CUDA graphs).
    moe_kernels_per_layer: float = 7.0
    #: Share of the dense kernels' throughput (weight streaming and FLOPs alike) that a
    #: mixture-of-experts layer's expert kernels reach in serving: grouped GEMMs over many small
    #: per-expert shapes, with the tokens permuted to their experts and the outputs gathered back.
    #: The TensorRT-LLM team describes the routed experts of a tensor-parallel MoE at tens to a few
    #: hundred tokens as memory-bound yet paying for small per-expert shapes, expert scheduling,
    #: input permutation and output accumulation ("MoE as Dense GEMM", TensorRT-LLM tech blog 24).
    #: Prior 0.7 (an assumption: no published share of the dense stream); fitted on the MoE rows.
    #: Applies to the MLP share of an MoE model's blocks (``core.estimation.performance.moe_mlp_bytes``).
    moe_expert_efficiency: float = 0.7
    #: Tokens per GEMM at which a GEMM reaches half its ceiling: e = T / (T + this).
    gemm_tokens_half: float = 8.0
    #: Hidden size (per tensor-parallel rank) at which training GEMMs reach half their ceiling.
    gemm_width_half: float = 320.0
    #: Share of dense peak that the attention kernel (FlashAttention forward + backward) reaches, on Ampere.
    attention_efficiency: float = 0.5
    #: The same on other generations where a published figure exists (else scaled by the GEMM ceiling):
    #: FlashAttention-2 on H100 SXM reaches about a third of the BF16 peak in forward + backward
    #: (Shah et al. 2024, FlashAttention-3, figures 5-6, the FlashAttention-2 baseline).
    attention_efficiency_by_arch: Mapping[str, float] = field(default_factory=lambda: {"hopper": 0.33})
    #: Share of the BF16 GEMM efficiency that FP8 GEMMs reach (scaling, casts, smaller tiles).
    fp8_gemm_factor: float = 0.65
    #: Share of the memory bandwidth that non-GEMM training kernels reach.
    elementwise_bandwidth_efficiency: float = 0.7
    #: Ceiling of dense GEMM throughput per GPU generation as a share of the datasheet peak.
    gemm_ceiling: Mapping[str, float] = field(default_factory=lambda: dict(GEMM_CEILING))
    #: Share of the datasheet memory bandwidth that streaming kernels reach, per GPU generation.
    bandwidth_ceiling: Mapping[str, float] = field(default_factory=lambda: dict(BANDWIDTH_CEILING))
    #: Bandwidth efficiency of decode attention (KV-cache reads) relative to weight streaming.
    kv_bandwidth_factor: float = 0.7
    #: Share of the shorter of an eager decode step's two streams (GPU work, host launches) that the
    #: other does not hide: 0 when the host always runs ahead (step = the longer stream), 1 when
    #: they alternate (step = their sum). Synchronising ops and kernels shorter than their own
    #: launch leave the GPU waiting part of the time; fitted (prior 0.5: no reason for either end).
    host_exposed_share: float = 0.5
    provenance: str = ""

    def with_engines(self, **profiles: EngineProfile) -> SpeedConstants:
        engines = dict(self.engines)
        engines.update({p.id: p for p in profiles.values()})
        return replace(self, engines=engines)


#: Dense BF16/FP16 GEMM throughput reached by large cuBLAS/hipBLASLt GEMMs as a share of the
#: datasheet peak (boost clock). A100 about 290 of 312 TFLOPS; H100 SXM about 750-800 of 989


#: for other generations are assumptions. See docs/estimation.md.
GEMM_CEILING: Mapping[str, float] = MappingProxyType(
    {
        "ampere": 0.90,
        "hopper": 0.78,
        "blackwell": 0.75,
        "ada": 0.85,
        "volta": 0.85,
        "turing": 0.80,
        "cdna2": 0.60,
        "cdna3": 0.50,
        "cdna4": 0.50,
        "pascal": 0.80,
        "other": 0.75,
    }
)

#: Streaming bandwidth reached as a share of the datasheet figure, relative to NVIDIA HBM parts
#: (whose engines' bandwidth efficiencies are fitted). AMD CDNA parts reach a smaller share of their
#: larger datasheet bandwidth in LLM decode kernels (assumption, see docs/estimation.md).
BANDWIDTH_CEILING: Mapping[str, float] = MappingProxyType({"cdna2": 0.75, "cdna3": 0.75, "cdna4": 0.75})


def kernel_family(
    family: str | None, weights: str, constants: SpeedConstants | None = None
) -> KernelFamily | None:
    """The :class:`KernelFamily` that runs ``weights`` (None for 16/32-bit weights)."""
    if family is None:
        return None
    if family == "bnb" and weights == "int8":
        family = "bnb-int8"
    return (constants or active_constants()).families[family]


PRIORS = SpeedConstants(
    engines=MappingProxyType(with_release_lines({p.id: p for p in PROFILES})),
    cpu_kernel_s={"python": 12e-6, "cpp": 4e-6},
    provenance="priors (docs/estimation.md): no row fitted",
)


class _EngineFit(TypedDict, total=False):
    """The :class:`EngineProfile` fields that a fit overrides."""

    bandwidth_efficiency: float
    prefill_mfu: float
    layer_overhead_s: float
    mfu: float
    layer_overhead_by_arch: tuple[tuple[str, float], ...]
    prefill_mfu_by_arch: tuple[tuple[str, float], ...]
    spread_low: float
    spread_high: float
    calibrated_on: str


class _FamilyFit(TypedDict, total=False):
    """The :class:`KernelFamily` fields that a fit overrides."""

    gemv_efficiency: float


# Values fitted by scripts/fit_engines.py from the priors (rounded), with the rows they rest on.
# An engine's bandwidth efficiency is never fitted (its documented prior; the fitted bandwidth
# ceiling of each GPU generation below scales it).
_FITTED_ENGINES: dict[str, _EngineFit] = {
    "tensorrt-llm": dict(
        prefill_mfu=0.56,
        layer_overhead_s=34e-6,
        spread_low=0.43,
        spread_high=0.28,
        calibrated_on="147 rows: INF-01..10, H200-01..07, F180-01/05, TRTB-01..04; the serving ITLs, "
        "tokens/s and first tokens SRV-01..31 (NIM, TensorRT-LLM perf overview), SRV-42/44 (GPUStack), SRB-43..81 "
        "(TensorRT-LLM perf overview v0.17, Triton bursts), SRT-01..54 (GPUStack's bursts on H100 and A100), "
        "SRG-07..111 (GPUStack's gpt-oss bursts on H100)",
    ),
    "vllm": dict(
        prefill_mfu=0.40,
        layer_overhead_s=113e-6,
        spread_low=0.12,
        spread_high=0.62,
        calibrated_on="296 rows: MI300-01..10 (MI300X), INB-09/10 (RTX 4090), INB-57 (RTX A6000); the "
        "serving ITLs, tokens/s and first tokens SRV-19/20 (A40), SRV-36/38 and SRV-48..50 (GPUStack, H100), "
        "SRB-01..09 (RTX 4090 sweep), SRB-83/84/90 (A100, RTX 4090), SRR-01..08 (Modal: L4, A100), "
        "SRX-34..48 (RTX 4090, 1-32 clients), SRG-01..180 and SRQ-01..120 (GPUStack: gpt-oss-120b and "
        "-20b on one to four H100 or A100, Qwen3-235B-A22B on four or eight, DeepSeek-R1 on eight H200)",
    ),
    "llama.cpp": dict(
        bandwidth_efficiency=0.93,
        prefill_mfu=0.69,
        layer_overhead_s=93e-6,
        layer_overhead_by_arch=(("apple", 1.81), ("cuda_graphs", 0.44)),
        prefill_mfu_by_arch=(("apple", 1.01), ("int8", 0.25)),
        spread_low=0.35,
        spread_high=0.28,
        calibrated_on="148 rows: INF-12, INF-15, LCPP-01..148 (llama.cpp discussions #4167 and #15013, "
        "PR #4766, GPU-Benchmarks-on-LLM-Inference)",
    ),
    "mlc-llm": dict(
        spread_low=0.12,
        spread_high=0.62,
        calibrated_on="2 rows: INF-18 (RTX 4090), INB-61 (RTX A6000), decode only; prefill is the prior",
    ),
    "transformers": dict(
        prefill_mfu=0.41,
        layer_overhead_s=644e-6,
        spread_low=0.38,
        spread_high=0.39,
        calibrated_on="41 rows: INF-21, INT8-01..08, LIT-16..34, INB-01..12 and INB-58..60 (engine comparisons), "
        "INB-39..56 (Optimum GPTQ: generate and prefill-only)",
    ),
    "megatron": dict(
        mfu=0.68,
        spread_low=0.50,
        spread_high=0.41,
        calibrated_on="39 rows: TRN-01/03/12/18, MEG1-01/02, LAY-01..42 (Megatron-LM layouts, Megatron-Bridge)",
    ),
    "fsdp": dict(
        mfu=0.85,
        spread_low=0.23,
        spread_high=0.16,
        calibrated_on="29 rows: TRN-20, TRN-24, TRN-26, LF-01..19, TT-01..06, LAY-06",
    ),
    "deepspeed": dict(
        spread_low=0.31,
        spread_high=0.21,
        calibrated_on="assumed: the FSDP prior (eager PyTorch modules under ZeRO); the pooled training range",
    ),
    "hf-trainer": dict(
        spread_low=0.31,
        spread_high=0.21,
        calibrated_on="assumed: prior (eager modules; no Trainer throughput row in the data)",
    ),
    "sglang": dict(
        prefill_mfu=0.28,
        layer_overhead_s=146e-6,
        spread_low=0.12,
        spread_high=0.62,
        calibrated_on="163 rows: the serving ITLs, tokens/s and first tokens SRV-39..53 (GPUStack, H100; the bursts of "
        "block-FP8 Qwen3 pull the prefill factor down), SRR-04/05 (Modal), SRX-01..33 and SRY-01..111 "
        "(SGLang's cookbook on eight A100, B200 or MI300X, mostly large MoE models), SRG-04..108 and "
        "SRQ-04..93 (GPUStack's MoE bursts); range pooled",
    ),
    "autoawq": dict(
        layer_overhead_s=44e-6,
        spread_low=0.12,
        spread_high=0.62,
        calibrated_on="14 rows: AWQ-01..37 decode (one source)",
    ),
    "exllamav2": dict(
        layer_overhead_s=34e-6,
        prefill_mfu=0.56,
        spread_low=0.26,
        spread_high=0.28,
        calibrated_on="31 rows: EXL-01..07, INB-05/06/62 and INB-15..38 (ExLlama v1, the same kernels' lineage)",
    ),
    "torchtune": dict(
        spread_low=0.31,
        spread_high=0.21,
        calibrated_on="assumed: prior (the README's speed rows are unscored: checkpointing not stated)",
    ),
}
#: How the 80% ranges above were set (scripts/fit_spreads.py): split-conformal 10% and 90% order
#: statistics (the floor((n+1) 0.1)-th and ceil((n+1) 0.9)-th of n ratios; Vovk et al. 2005, Lei et
#: al. 2018) of measured / estimate over the leave-one-source-out residuals of tests/data/validation
#: (2026-12-04), per engine with at least 15 speed rows (TensorRT-LLM, Transformers, llama.cpp, ExLlamaV2, Megatron, FSDP), else
#: pooled over the engines of the same kind with fewer rows (inference 0.88-1.62, training
#: 0.69-1.21); each side at least 10%.
SPREAD_PROVENANCE = (
    "split-conformal 10%/90% order statistics of leave-one-source-out residuals, tests/data/validation, "
    "2026-12-04"
)
_FITTED_FAMILIES: dict[str, _FamilyFit] = {}
#: Global constants fitted with them (scripts/fit_engines.py; the validation harness refits them with
#: each source held out): bandwidth ceilings relative to the engines' priors per NVIDIA generation,
#: the exposed share of host launches, the GPU time of a small kernel, the KV-read factor, the
#: GEMM half sizes and the MoE layers' extra kernels and expert-kernel efficiency.
_FITTED_GLOBALS = dict(
    bandwidth_ceiling=MappingProxyType({**BANDWIDTH_CEILING, "ada": 1.25, "ampere": 0.96, "hopper": 0.86}),
    host_exposed_share=0.65,
    gpu_kernel_s=4.12e-6,
    kv_bandwidth_factor=0.92,
    gemm_tokens_half=6.44,
    gemm_width_half=312.0,
    graph_step_host_s=MappingProxyType({"python": 1.02e-3, "cpp": 0.02e-3}),
    moe_kernels_per_layer=10.1,
    moe_expert_efficiency=0.65,
)

FITTED = replace(
    PRIORS,
    engines=with_release_lines({p.id: replace(p, **_FITTED_ENGINES.get(p.id, {})) for p in PROFILES}),
    families=MappingProxyType(
        {f.id: replace(f, **_FITTED_FAMILIES.get(f.id, {})) for f in KERNEL_FAMILIES.values()}
    ),
    **_FITTED_GLOBALS,  # type: ignore[arg-type]
    provenance="engine factors and global constants: scripts/fit_engines.py over the scored speed rows "
    "of tests/data/validation (2026-12-04: the 734 rows the fit takes, from 41 sources); engines' bandwidth efficiencies are their priors, scaled by "
    "the fitted bandwidth ceiling of each GPU generation; 80% ranges: " + SPREAD_PROVENANCE,
)

#: The engine profiles in use (``FITTED.engines``; a validation harness may swap entries for a refit).
ENGINES: dict[str, EngineProfile] = FITTED.engines  # type: ignore[assignment]

#: Global constants in force when a caller passes none (innermost :func:`using_constants` first).
_ACTIVE: list[SpeedConstants] = []


def active_constants() -> SpeedConstants:
    """The speed model's global constants in force: ``FITTED`` unless :func:`using_constants` says
    otherwise. (The engine profiles always come from :data:`ENGINES`.)"""
    return _ACTIVE[-1] if _ACTIVE else FITTED


@contextmanager
def using_constants(constants: SpeedConstants | None) -> Iterator[None]:
    """Within the block, estimates use ``constants``' global values (launch times, GEMM half
    sizes, attention efficiency, ...) instead of ``FITTED``'s: how a leave-one-source-out
    validation refits them without the held-out source. ``None`` changes nothing."""
    if constants is None:
        yield
        return
    _ACTIVE.append(constants)
    try:
        yield
    finally:
        _ACTIVE.pop()


def engine_for(engine_id: str | None, kind: str, constants: SpeedConstants | None = None) -> EngineProfile:
    """The profile named ``engine_id``, or the default one for the workload kind."""
    if engine_id is None:
        engine_id = default_engine(kind)
    engines = (constants or FITTED).engines
    profile = engines.get(engine_id)
    if profile is None:
        raise InputError("workload.engine", f"unknown engine; known engines: {', '.join(engines)}", engine_id)
    wanted = "inference" if kind == "inference" else "training"
    if profile.kind != wanted:
        names = ", ".join(p.id for p in engines.values() if p.kind == wanted)
        raise InputError(
            "workload.engine", f"is a {profile.kind} engine; for {kind} use one of {names}", engine_id
        )
    return profile
