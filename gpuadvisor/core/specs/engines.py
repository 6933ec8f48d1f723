"""Engine profiles, kernel families and the speed model's constants: the one place that holds
every number the speed model takes from measurements rather than from datasheets.

The speed model (:mod:`gpuadvisor.core.performance`) is physics with few parameters. This
module holds them, in three groups:

1. **Per engine** (:class:`EngineProfile`). Inference: ``bandwidth_efficiency`` (share of the
   memory bandwidth that weight and KV-cache streaming reaches in decode), ``prefill_mfu`` (the
   ceiling of the GEMM efficiency curve, reached by long prompts and large batches),
   ``kernels_per_layer`` (kernel launches per layer and decode step, counted from each engine's
   layer code) and ``runtime`` (who launches them: Python or C++). Training: ``mfu`` (the GEMM
   efficiency ceiling of the framework on large matmuls, before the shape, attention,
   element-wise and overhead terms) and ``elementwise_bytes_per_h`` (bytes moved per token,
   layer and unit of hidden size by the non-GEMM kernels of forward and backward: norms,
   RoPE, activation, residual adds, casts; large for eager PyTorch modules, small for fused
   Transformer Engine layers). ``spread_low`` / ``spread_high``: the 80% range of the ratio
   measured / predicted.
2. **Per kernel family** (:class:`KernelFamily`, ``workload.quantization``): how well the
   family's GEMV streams the quantized weights at batch 1, the extra kernels it launches per
   linear layer, the bytes a dequantized 16-bit copy costs once a batch is too large for the
   GEMV kernel, and the share of 16-bit tensor throughput its GEMM reaches.
3. **Global** (:class:`SpeedConstants`): launch times per kernel (CPU side for Python and C++
   runtimes, GPU side), the GEMM-shape half-saturation sizes, the attention-kernel efficiency,
   the FP8 GEMM factor and cast bytes and the GEMM ceiling per GPU generation.

``FITTED`` holds the values in use. Its ``provenance`` says which rows they were fitted to;
:func:`gpuadvisor.core.estimation.speed_fit.fit_speed_constants` refits them over any set of rows (the
validation harness refits with each source held out). Values not fitted are documented priors
(datasheet-level facts, kernel counts read from the engines' code, published kernel
benchmarks); ``docs/estimation.md`` lists each with its source.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Literal, TypedDict, overload

from ..errors import InputError

#: What the low and high figures of every speed, time and cost range mean.
RANGE_LABEL = "80% range"
RANGE_COVERAGE = 0.8


@dataclass(frozen=True, slots=True)
class EngineProfile:
    id: str
    name: str
    kind: str  # "inference" or "training"
    bandwidth_efficiency: float = 0.8
    prefill_mfu: float = 0.6
    kernels_per_layer: float = 12.0
    runtime: str = "cpp"  # "python" or "cpp": who launches the kernels of an eager step
    layer_overhead_s: float = 0.0  # host time to launch one layer's kernels without CUDA graphs
    prefill_chunk_tokens: int | None = None
    mfu: float = 0.6
    elementwise_bytes_per_h: float = 300.0
    spread_low: float = 0.2  # the 80% range is expected x (1 - spread_low) .. expected x (1 + spread_high)
    spread_high: float = 0.2
    calibrated_on: str = ""
    # Per-architecture multipliers of layer_overhead_s and prefill_mfu (llama.cpp: Metal and CUDA
    # kernels differ), as (architecture, factor) pairs; "int8" applies to prefill on the INT8 peak.
    # Ratios, so a refit of the two base values moves every architecture with them.
    layer_overhead_by_arch: tuple[tuple[str, float], ...] = ()
    prefill_mfu_by_arch: tuple[tuple[str, float], ...] = ()
    #: Quantized prefill runs on the INT8 tensor-core peak (llama.cpp's MMQ kernels) where known.
    int8_prefill: bool = False
    #: 16-bit GEMMs accumulate in FP16 (cuBLAS ``cublasHgemm`` or ``CUBLAS_COMPUTE_16F``), which
    #: GeForce cards run at twice their FP32-accumulate rate (the catalog's ``fp16_acc16_dense_tflops``).
    fp16_accumulate: bool = False
    #: Host time per sequence in flight and decode step (s): the scheduler's bookkeeping, the
    #: batch's input preparation, sampling and output processing, which grow with the batch and
    #: which no CUDA graph removes.
    seq_host_s: float = 0.0
    #: Whether a serving step carries new prompts' chunks together with the running sequences'
    #: decode (chunked prefill mixed into decode batches) or runs each prefill as a pass of its
    #: own that the running sequences wait for.
    mixed_prefill: bool = True
    #: Where a prefill computes logits: "last", only at each prompt's last position, where it
    #: samples (vLLM, SGLang, TensorRT-LLM, ExLlama, MLC: the LM head runs once per prompt), or
    #: "all", at every prompt position (Transformers' generate before v4.45, AutoAWQ's fused
    #: forward, llama.cpp builds before PR #6122, which most of its rows ran).
    prompt_logits: Literal["last", "all"] = "last"

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

    @property
    def spread(self) -> float:
        """The larger side of the range, as one relative figure."""
        return max(self.spread_low, self.spread_high)


@dataclass(frozen=True, slots=True)
class KernelFamily:
    """How one quantization kernel family runs (see the module docstring)."""

    id: str
    name: str
    gemv_efficiency: (
        float  # share of the engine's 16-bit bandwidth efficiency its batch-1 weight stream reaches
    )
    extra_kernels_per_linear: float  # launches added per quantized linear layer and step
    gemv_max_tokens: int  # tokens per GEMM up to which the GEMV/fused kernel runs
    dequant_bytes_per_weight: float  # beyond that: bytes per weight to write and read a 16-bit copy
    gemm_efficiency: float  # share of 16-bit tensor throughput its GEMM reaches (prefill, large batches)
    source: str = ""
    #: Whether the small-batch kernel streams the quantized weights once per row of the batch
    #: (a matrix-vector kernel run for each sequence) rather than once per step.
    gemv_per_row: bool = False
    #: With ``gemv_per_row``: rows of the batch one pass over the weights serves (a kernel whose
    #: thread blocks each take a tile of the weights and up to this many rows streams the weights
    #: ``ceil(batch / gemv_row_block)`` times).
    gemv_row_block: int = 1


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
    #: (2026-12-06: OFL-01..16, four sources; in sample a median 13.4%, held out one source at a
    #: time 21%: machines differ, see docs/estimation.md, "Partial offload"). 0.54 on the first
    #: three sources; before it, the GPU's 0.93.
    host_stream_efficiency: float = 0.68
    #: The 80% range of a step with layers on the CPU (measured / estimate over the same rows, held
    #: out by source): wider than the engine's own, since the host's memory and cores vary.
    split_spread_low: float = 0.29
    split_spread_high: float = 0.69


LLAMA_CPP = LlamaCppModel()


#: Kernel families (``workload.quantization``). ``bnb`` with 8-bit weights is LLM.int8 (``bnb-int8``).
KERNEL_FAMILIES: Mapping[str, KernelFamily] = MappingProxyType(
    {
        k.id: k
        for k in (
            KernelFamily(
                "marlin",
                "Marlin (vLLM)",
                0.95,
                0.0,
                64,
                0.0,
                0.90,
                "Frantar et al. 2024 (MARLIN): near-ideal 3.9x over FP16 up to batch 16-32",
            ),
            KernelFamily(
                "awq",
                "AWQ (GEMV at batch 1, GEMM beyond)",
                0.90,
                0.0,
                8,
                0.0,
                0.60,
                "Lin et al. 2023 (AWQ), TinyChat kernels; AutoAWQ: GEMV for batch 1, GEMM slower than FP16 at large batch",
            ),
            KernelFamily(
                "exllama",
                "ExLlama(v2) GPTQ kernels",
                0.95,
                0.0,
                32,
                4.0,
                1.00,
                "turboderp/exllamav2: reconstructs an FP16 matrix for larger batches and runs cuBLAS; "
                "the small-batch q4 kernel (exllama's q4_matmul, a grid over the batch's rows) reads the "
                "weights for each row",
                gemv_per_row=True,
            ),
            KernelFamily(
                "gptq",
                "GPTQ (AutoGPTQ CUDA/Triton kernels)",
                0.70,
                0.0,
                32,
                4.0,
                0.90,
                "Frantar et al. 2022 (GPTQ) kernels: about 3x over FP16 at batch 1 on A100, reconstruct beyond; "
                "AutoGPTQ's cuda kernels (VecQuant4MatMul) are matrix-vector products, one per row of the batch",
                gemv_per_row=True,
            ),
            KernelFamily(
                "vllm-gptq",
                "GPTQ kernel of vLLM and SGLang (gptq_gemm, from ExLlamaV2)",
                0.85,
                0.0,
                50,
                4.0,
                0.90,
                "vllm-project/vllm csrc/quantization/gptq/q_gemm.cu (commit 03b2ee5): each thread block "
                "multiplies a tile of the weights with up to BLOCK_M_SIZE_MAX = 8 rows of the batch, so the "
                "weights stream once per 8 rows; beyond MAX_Q_GEMM_ROWS = 50 rows the matrix is reconstructed "
                "to FP16 for cuBLAS. The engine runs it where a GPTQ checkpoint is loaded with quantization "
                "'gptq' (not gptq_marlin). Batch-1 efficiency a prior between AutoGPTQ's and ExLlama's",
                gemv_per_row=True,
                gemv_row_block=8,
            ),
            KernelFamily(
                "w8a8",
                "INT8 W8A8 (SmoothQuant, compressed-tensors; CUTLASS scaled_mm)",
                0.65,
                0.5,
                1,
                0.0,
                1.00,
                "INT8 weights and activations on the INT8 tensor cores (vLLM's CUTLASS scaled_mm): a GEMM "
                "padded to a tile at batch 1, not a GEMV, with a small kernel quantizing the activations "
                "per token; priors as the FP8 family's",
            ),
            KernelFamily(
                "bnb",
                "bitsandbytes 4-bit (NF4/FP4)",
                0.45,
                3.0,
                1,
                4.5,
                0.95,
                "Dettmers et al. 2023 (QLoRA); bitsandbytes gemv_4bit at batch 1, a full FP16 dequantization "
                "per matmul otherwise",
            ),
            KernelFamily(
                "bnb-int8",
                "bitsandbytes LLM.int8 (outlier decomposition)",
                0.40,
                8.0,
                1,
                1.0,
                0.45,
                "Dettmers et al. 2022 (LLM.int8): int8 matmul plus an FP16 matmul of the outlier columns, "
                "activations quantized per row on the fly; slower than FP16",
            ),
            KernelFamily(
                "gguf",
                "llama.cpp GGUF",
                0.75,
                0.0,
                32,
                4.0,
                1.0,
                "llama.cpp: MMVQ kernels for small batches; beyond, the weights are dequantized to FP16 and "
                "multiplied with cuBLAS",
            ),
            KernelFamily(
                "fp8",
                "FP8 (W8A8 tensor cores)",
                0.65,
                0.5,
                1,
                0.0,
                1.00,
                "FP8 weights and activations: an FP8 GEMM padded to a tile at batch 1, not a GEMV; dynamic "
                "activation scales add a small kernel",
            ),
            KernelFamily(
                "mlc",
                "MLC LLM q4f16 (TVM-generated)",
                0.90,
                0.0,
                8,
                0.0,
                0.60,
                "mlc-ai/mlc-llm: group-32 symmetric int4 with fp16 scales, kernels tuned per GPU",
            ),
            KernelFamily(
                "torchao",
                "torchao int4 weight-only (tinygemm)",
                0.62,
                0.0,
                8,
                0.0,
                0.35,
                "pytorch-labs/gpt-fast README: Llama-2-7B on A100, int4 862.69 GB/s vs bf16 1397.31 GB/s",
            ),
            KernelFamily(
                "hqq",
                "HQQ (torchao tinygemm backend)",
                0.60,
                0.5,
                8,
                0.0,
                0.35,
                "mobiusml/hqq: inference through the torchao int4 kernel",
            ),
        )
    }
)


def kernel_family(
    family: str | None, weights: str, constants: SpeedConstants | None = None
) -> KernelFamily | None:
    """The :class:`KernelFamily` that runs ``weights`` (None for 16/32-bit weights)."""
    if family is None:
        return None
    if family == "bnb" and weights == "int8":
        family = "bnb-int8"
    return (constants or active_constants()).families[family]


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
    #: Share of the BF16 GEMM efficiency that a large FP8 GEMM itself reaches, before its casts
    #: (``core.estimation.performance.fp8_gemm_share`` adds them by GEMM width and GPU): 1, the
    #: same share of its peak as a BF16 GEMM (an assumption; docs/estimation.md, "FP8 GEMMs").
    fp8_gemm_factor: float = 1.0
    #: Bytes moved per element of a training GEMM's input and output gradient to cast it to FP8:
    #: the 16-bit tensor read (2), its FP8 copy and the transposed FP8 copy the other pass needs
    #: written (1 + 1). See :func:`~gpuadvisor.core.estimation.performance.fp8_gemm_share`.
    fp8_cast_bytes: float = 4.0
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
#: (the datasheet clock is not held under load); MI300X well below its 1,307 TFLOPS. The values
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

#: Kept for readers of older profiles: achieved MFU relative to Ampere is now the GEMM ceiling ratio.
ARCH_MFU_FACTOR = {k: round(v / GEMM_CEILING["ampere"], 3) for k, v in GEMM_CEILING.items()}

# Priors: what each engine's own documentation, kernel counts and published kernel benchmarks
# suggest before any row is fitted (docs/estimation.md, "Priors"). The fit starts from them and
# pulls towards them, so an engine without rows keeps its prior.
_PRIOR_PROFILES = (
    EngineProfile(
        "tensorrt-llm",
        "TensorRT-LLM",
        "inference",
        bandwidth_efficiency=0.80,
        prefill_mfu=0.70,
        kernels_per_layer=9,
        runtime="cpp",
        layer_overhead_s=36e-6,
        prefill_chunk_tokens=8192,
    ),
    EngineProfile(
        "vllm",
        "vLLM",
        "inference",
        bandwidth_efficiency=0.76,
        prefill_mfu=0.62,
        kernels_per_layer=10,
        runtime="python",
        layer_overhead_s=120e-6,
        prefill_chunk_tokens=8192,
    ),
    EngineProfile(
        "llama.cpp",
        "llama.cpp",
        "inference",
        bandwidth_efficiency=0.80,
        prefill_mfu=0.80,
        kernels_per_layer=22,
        runtime="cpp",
        layer_overhead_s=88e-6,
        prefill_chunk_tokens=2048,
        # Priors: Metal and CUDA alike, MMQ prefill at the same share of the INT8 peak as
        # cuBLAS of the FP16 peak; the fit moves each multiplier from 1.
        layer_overhead_by_arch=(("apple", 1.0), ("cuda_graphs", 1.0)),
        prefill_mfu_by_arch=(("apple", 1.0), ("int8", 1.0)),
        # Builds before llama.cpp PR #6122 (merged 2024-03) projected every token of a prompt
        # batch through the head; later ones only the tokens whose logits are asked for. Most
        # llama-bench rows this profile is fitted to ran the earlier builds (discussion #4167's
        # reference build 8e672ef, PR #3084, PR #4766), so it keeps their behaviour: on a current
        # build a prompt is faster by the head's share of its FLOPs (3-7% for 7-8B models).
        prompt_logits="all",
    ),
    EngineProfile(
        "mlc-llm",
        "MLC LLM",
        "inference",
        bandwidth_efficiency=0.80,
        prefill_mfu=0.5,
        kernels_per_layer=10,
        runtime="cpp",
        layer_overhead_s=40e-6,
        prefill_chunk_tokens=2048,
    ),
    EngineProfile(
        "transformers",
        "Hugging Face Transformers / eager PyTorch",
        "inference",
        bandwidth_efficiency=0.75,
        prefill_mfu=0.55,
        kernels_per_layer=42,
        runtime="python",
        layer_overhead_s=504e-6,
        prompt_logits="all",
    ),
    EngineProfile(
        "sglang",
        "SGLang",
        "inference",
        bandwidth_efficiency=0.76,
        prefill_mfu=0.62,
        kernels_per_layer=10,
        runtime="python",
        layer_overhead_s=120e-6,
        prefill_chunk_tokens=8192,
        # SGLang runs a prefill batch as a forward pass of its own unless --enable-mixed-chunk is
        # given (default off: sgl-project/sglang docs, server arguments).
        mixed_prefill=False,
    ),
    EngineProfile(
        "autoawq",
        "AutoAWQ (fused modules)",
        "inference",
        bandwidth_efficiency=0.75,
        prefill_mfu=0.55,
        kernels_per_layer=10,
        runtime="python",
        layer_overhead_s=120e-6,
        prompt_logits="all",  # its fused model's forward projects every position
    ),
    EngineProfile(
        "exllamav2",
        "ExLlamaV2",
        "inference",
        bandwidth_efficiency=0.75,
        prefill_mfu=0.55,
        kernels_per_layer=12,
        runtime="cpp",
        layer_overhead_s=48e-6,
        prefill_chunk_tokens=2048,
        fp16_accumulate=True,
    ),
    EngineProfile(
        "megatron",
        "Megatron-LM / large-scale custom stacks",
        "training",
        mfu=0.80,
        elementwise_bytes_per_h=120.0,
        kernels_per_layer=30,
        runtime="python",
    ),
    EngineProfile(
        "fsdp",
        "PyTorch FSDP (llm-foundry, lit-gpt)",
        "training",
        mfu=0.85,
        elementwise_bytes_per_h=250.0,
        kernels_per_layer=60,
        runtime="python",
    ),
    EngineProfile(
        "deepspeed",
        "DeepSpeed (ZeRO, ZeRO-Offload, ZeRO-Infinity)",
        "training",
        mfu=0.85,
        elementwise_bytes_per_h=250.0,
        kernels_per_layer=60,
        runtime="python",
    ),
    EngineProfile(
        "hf-trainer",
        "Hugging Face Trainer / PEFT",
        "training",
        mfu=0.75,
        elementwise_bytes_per_h=500.0,
        kernels_per_layer=80,
        runtime="python",
    ),
    EngineProfile(
        "torchtune",
        "torchtune (torch.compile)",
        "training",
        mfu=0.80,
        elementwise_bytes_per_h=150.0,
        kernels_per_layer=30,
        runtime="python",
    ),
)


#: How far one host-bound decode step varies between machines (ms, lowest and highest): the same
#: engine release (vLLM 0.7.3), model (Qwen2.5-0.5B-Instruct, BF16) and batch (one sequence)
#: measured per output token on eight machines, each of whose GPUs reads that model's weights
#: in 1.3 ms or less: H100 SXM 2.21, A100 40 GB 3.15, RTX 3090 3.53, A100 80 GB 3.83, RTX 4090
#: 4.47, RTX A6000 5.12, RTX 6000 Ada 5.13, H200 5.17 (AccelMark, github.com/FreedomIntelligence/
#: AccelMark commit 5797fc4, results/verified/<run>/interactive/result.json, key
#: metrics.interactive.tpot_ms_p50; validation rows SRA-326, -042, -187, -150, -233, -488, -446,
#: -368). The host's CPU, not the GPU, sets such a step: the fastest memory came last.
HOST_STEP_SPREAD_MS: tuple[float, float] = (2.2, 5.2)
#: Where :data:`HOST_STEP_SPREAD_MS` comes from, as the notes cite it.
HOST_STEP_SPREAD_SOURCE = "AccelMark's published runs of vLLM 0.7.3"


class ReleaseLine(TypedDict):
    """An earlier release line of an engine that runs the same kernels with a different host side."""

    of: str  # the engine id whose fitted factors it shares
    name: str
    seq_host_s: float
    mixed_prefill: bool
    source: str


#: Earlier release lines of an engine, each an engine id of its own (a user picks the release they
#: run). They share their engine's fitted factors (every refit carries over) and differ only where
#: the release's host code did. vLLM before 0.8 ran the V0 engine: the Python scheduler, input
#: preparation, sampler and output processing loop over every sequence in every step, about 20 ms
#: for a batch of 200 (vllm-project/vllm issue #6801, comment of 2024-08-08: "when BS is 200, all
#: this together [sampling, prepare input, process_model_output, scheduler] can be 20ms"), so
#: 100 us per sequence and step; vLLM's V1 engine (default from 0.8.0, March 2025) moved that work
#: off the GPU's critical path.
RELEASE_LINES: Mapping[str, ReleaseLine] = MappingProxyType(
    {
        "vllm-v0": ReleaseLine(
            of="vllm",
            name="vLLM 0.7 and earlier (V0 engine)",
            seq_host_s=100e-6,
            # V0 schedules waiting prompts first, in steps of their own: chunked prefill is on by
            # default only for contexts above 32K (vLLM docs, "Optimization and Tuning", chunked
            # prefill: "In vLLM V1, chunked prefill is always enabled by default. This is different
            # from vLLM V0, where it was conditionally enabled based on model characteristics").
            mixed_prefill=False,
            source="vllm-project/vllm issue #6801 (2024-08-08): about 20 ms of scheduling, input "
            "preparation, sampling and output processing per step at a batch of 200",
        ),
    }
)


@overload
def engine_lineage(engine_id: str) -> str: ...
@overload
def engine_lineage(engine_id: None) -> None: ...
@overload
def engine_lineage(engine_id: str | None) -> str | None: ...


def engine_lineage(engine_id: str | None) -> str | None:
    """The engine whose behaviour ``engine_id`` shares (its own id unless a release line's; None
    stays None)."""
    line = RELEASE_LINES.get(engine_id or "")
    return line["of"] if line else engine_id


def with_release_lines(engines: Mapping[str, EngineProfile]) -> dict[str, EngineProfile]:
    """``engines`` with every release line of an engine in it derived from that engine's profile
    (its factors, fitted or prior, and the line's own host time per sequence)."""
    out: dict[str, EngineProfile] = {}
    for engine_id, base in engines.items():
        if engine_id in RELEASE_LINES:
            continue
        out[engine_id] = base
        # Each line follows its engine (the order the window lists them in).
        for line_id, line in RELEASE_LINES.items():
            if line["of"] == engine_id:
                out[line_id] = replace(
                    base,
                    id=line_id,
                    name=line["name"],
                    seq_host_s=line["seq_host_s"],
                    mixed_prefill=line["mixed_prefill"],
                    calibrated_on=(base.calibrated_on + "; " if base.calibrated_on else "")
                    + f"host time per sequence and step {line['seq_host_s'] * 1e6:.0f} µs: {line['source']}",
                )
    return out


PRIORS = SpeedConstants(
    engines=MappingProxyType(with_release_lines({p.id: p for p in _PRIOR_PROFILES})),
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
    engines=with_release_lines({p.id: replace(p, **_FITTED_ENGINES.get(p.id, {})) for p in _PRIOR_PROFILES}),
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


DEFAULT_INFERENCE_ENGINE = "vllm"
DEFAULT_TRAINING_ENGINE = "hf-trainer"
DEFAULT_PRETRAIN_ENGINE = "megatron"


#: Weight types that are both GGUF types and checkpoints serving engines publish and run (gpt-oss's
#: MXFP4, NVFP4): the engine is not implied by them.
_CHECKPOINT_FP4 = ("mxfp4", "nvfp4")


def engine_of(workload: Any, source: Any = None) -> str | None:
    """The engine a workload runs on: the one it names, else llama.cpp for inference of a ``.gguf``
    file or of a GGUF weight type (but not an FP4 checkpoint format, which serving engines run too),
    else None (the kind's default, :func:`engine_for`)."""
    named: str | None = workload.engine
    if named is not None or workload.kind != "inference":
        return named
    from_file = source is not None and getattr(source, "gguf", None) is not None
    if from_file or (workload.is_gguf and workload.weights not in _CHECKPOINT_FP4):
        return "llama.cpp"
    return None


def engine_for(engine_id: str | None, kind: str, constants: SpeedConstants | None = None) -> EngineProfile:
    """The profile named ``engine_id``, or the default one for the workload kind."""
    if engine_id is None:
        engine_id = {"inference": DEFAULT_INFERENCE_ENGINE, "pretrain": DEFAULT_PRETRAIN_ENGINE}.get(
            kind, DEFAULT_TRAINING_ENGINE
        )
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
