"""Engine profiles: one record per serving or training engine, holding everything the estimate
takes from the engine rather than from the model or the GPU.

An :class:`EngineProfile` is complete or refused: every field is required (a record that leaves
one out fails at import), so no table elsewhere falls back to a default for an engine it does not
list. Adding an engine is one record in :data:`PROFILES` plus its validation rows. A record holds:

- **Speed, before any fit** (the priors ``docs/estimation.md`` sources). Inference:
  ``bandwidth_efficiency`` (share of the memory bandwidth that weight and KV-cache streaming
  reaches in decode), ``prefill_mfu`` (the ceiling of the GEMM efficiency curve, reached by long
  prompts and large batches), ``kernels_per_layer`` (kernel launches per layer and decode step,
  counted from each engine's layer code), ``runtime`` (who launches them: Python or C++) and
  ``layer_overhead_s`` (the host time that takes per layer without CUDA graphs). Training: ``mfu``
  (the GEMM efficiency ceiling of the framework on large matmuls, before the shape, attention,
  element-wise and overhead terms) and ``elementwise_bytes_per_h`` (bytes moved per token, layer
  and unit of hidden size by the non-GEMM kernels of forward and backward: norms, RoPE,
  activation, residual adds, casts; large for eager PyTorch modules, small for fused Transformer
  Engine layers). ``spread_low`` / ``spread_high``: the 80% range of the ratio measured /
  predicted. The fitted values replace these from ``fitted_constants.json``
  (:mod:`gpuadvisor.core.specs.constants`).
- **How it runs**: whether it replays the decode step from CUDA graphs by default, whether it has
  a speed model of its own (llama.cpp), the quantization kernels it runs each weight type with,
  the weight types it runs at all (the Weight types table), where its prefill computes logits.
- **How it serves**: its batching (continuous with a paged KV cache, the same with the whole
  context reserved at admission, one slot per sequence, static batches), the KV pool it
  preallocates and its default share of the GPU, its GPU-dependent scheduler defaults.
- **What its memory holds**: the logits of every prompt position, a copy of q/k/v while it fuses
  them at load, a split over GPUs balanced by bytes, a chunked loss, fused activation kernels,
  sequence parallelism with tensor parallelism.

Earlier release lines of an engine (:data:`RELEASE_LINES`, such as ``vllm-v0``) are records
derived from their engine's with the release's own host side.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Protocol, TypedDict, overload

from ..errors import InputError
from .kernels import KERNEL_FAMILIES
from .quant_types import K16_PREFILL_RATIO


class EngineKind(StrEnum):
    """What an engine runs."""

    INFERENCE = "inference"
    TRAINING = "training"


class Runtime(StrEnum):
    """Who launches the kernels of an eager step."""

    PYTHON = "python"
    CPP = "cpp"


class Batching(StrEnum):
    """How an engine schedules requests (see :mod:`gpuadvisor.core.specs.serving`)."""

    #: Continuous batching, KV cache in pages: a sequence holds only the pages it has filled.
    PAGED = "paged"
    #: The same, but a request is admitted only with the pages of its whole context reserved.
    PAGED_RESERVED = "paged-reserved"
    #: Continuous batching, each sequence reserves its whole context up front.
    SLOTS = "slots"
    #: A batch starts together and ends with its longest member.
    STATIC = "static"


class PromptLogits(StrEnum):
    """Where a prefill computes logits."""

    #: Only at each prompt's last position, where it samples: the LM head runs once per prompt.
    LAST = "last"
    #: At every prompt position.
    ALL = "all"


class SpeedModel(StrEnum):
    """Which speed model predicts an engine."""

    #: The roofline of :mod:`gpuadvisor.core.estimation.performance` with the global constants.
    ROOFLINE = "roofline"
    #: llama.cpp's own (``performance.llamacpp_performance``): prompt processing and token
    #: generation apart, reading none of the global constants.
    LLAMA_CPP = "llama.cpp"


class PoolBasis(StrEnum):
    """What an engine's KV-pool share is a share of."""

    #: The GPU's memory, for everything the engine allocates (weights, activations, KV pool).
    TOTAL = "total"
    #: The GPU's memory, for the weights and the KV pool.
    STATIC = "static"
    #: The memory left free after the weights and activations.
    FREE = "free"


class RunStatements(Protocol):
    """What a run states about its engine's habits (a :class:`~.workload.Workload` does; named here so
    that the engine records need not import the workload)."""

    @property
    def prompt_logits(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class KvPool:
    """How an engine sizes its preallocated KV pool (see :mod:`gpuadvisor.core.specs.serving`)."""

    setting: str  # the engine's option, in its own spelling
    fraction: float  # its default
    basis: PoolBasis


@dataclass(frozen=True, slots=True)
class BatchDefaults:
    """How many sequences an engine schedules at once and how many prompt tokens one step carries,
    when started without those settings on a given GPU."""

    max_sequences: int  # vLLM's max_num_seqs
    chunk_tokens: int  # vLLM's max_num_batched_tokens: the prompt tokens one step prefills at most


@dataclass(frozen=True, slots=True)
class GpuBatchDefaults:
    """Scheduler defaults that depend on the GPU: ``large`` on a GPU of at least ``large_gpu_gib``
    whose name does not contain ``excluded``, ``other`` elsewhere."""

    large_gpu_gib: float
    excluded: str
    large: BatchDefaults
    other: BatchDefaults

    @property
    def excluded_name(self) -> str:
        """The excluded GPUs in words ("an A100")."""
        name = self.excluded.upper()
        return f"{'an' if name[:1] in 'AEFHILMNORSX' else 'a'} {name}"

    def on(self, gpu_name: str, memory_gib: float) -> BatchDefaults:
        """The defaults on a GPU named ``gpu_name`` with ``memory_gib`` of memory."""
        large = memory_gib >= self.large_gpu_gib and self.excluded not in gpu_name.lower()
        return self.large if large else self.other


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineProfile:
    """Everything engine-specific (see the module docstring). Every field is required."""

    id: str
    name: str
    kind: EngineKind
    # --- speed (priors; the fitted values come from fitted_constants.json) ---
    bandwidth_efficiency: float
    prefill_mfu: float
    kernels_per_layer: float
    runtime: Runtime
    #: Host time to launch one layer's kernels without CUDA graphs (s).
    layer_overhead_s: float
    #: Host time per layer of a prompt's pass where it is not an eager decode step's (s): vLLM's V1
    #: engine builds each prompt's inputs, attention metadata and sampling around a pass that no
    #: decode graph replays, a floor its runs with CUDA graphs show under short prompts, which the
    #: decode step (replayed, or launched eagerly) does not pay. None: a prompt's pass launches
    #: as an eager decode step does (``layer_overhead_s``).
    prefill_layer_overhead_s: float | None
    #: Prompt tokens one prefill step carries at most (None: the whole prompt).
    prefill_chunk_tokens: int | None
    mfu: float
    elementwise_bytes_per_h: float
    #: The 80% range is expected x (1 - spread_low) .. expected x (1 + spread_high).
    spread_low: float
    spread_high: float
    #: The rows the fitted values rest on, in words ("assumed: ..." for an engine without rows).
    calibrated_on: str
    #: Per-architecture multipliers of layer_overhead_s and prefill_mfu (llama.cpp: Metal and CUDA
    #: kernels differ), as (architecture, factor) pairs; "int8" applies to prefill on the INT8
    #: peak, "cuda_graphs" to decode replayed from CUDA graphs; in ``prefill_mfu_by_arch``,
    #: "k_quant" and "i_quant" are the prompt speed of llama.cpp's k-quant and i-quant kernels
    #: against its legacy quants (:meth:`prefill_kernel_factor`). Ratios, so a refit of the two
    #: base values moves every architecture with them.
    layer_overhead_by_arch: tuple[tuple[str, float], ...]
    prefill_mfu_by_arch: tuple[tuple[str, float], ...]
    #: 16-bit GEMMs accumulate in FP16 (cuBLAS ``cublasHgemm`` or ``CUBLAS_COMPUTE_16F``), which
    #: GeForce cards run at twice their FP32-accumulate rate (the catalog's ``fp16_acc16_dense_tflops``).
    fp16_accumulate: bool
    #: Host time per sequence in flight and decode step (s): the scheduler's bookkeeping, the
    #: batch's input preparation, sampling and output processing, which grow with the batch and
    #: which no CUDA graph removes.
    seq_host_s: float
    #: Whether a serving step carries new prompts' chunks together with the running sequences'
    #: decode (chunked prefill mixed into decode batches) or runs each prefill as a pass of its
    #: own that the running sequences wait for.
    mixed_prefill: bool
    #: Steps between the step that computes a token and the moment its client has it: 1 where the
    #: engine processes a step's output (sampling's results, detokenization, the response) while
    #: the next step runs and returns it when that one ends (vLLM's V0 engine from 0.6.0,
    #: "asynchronous output processing"), 0 where the step's tokens leave as soon as it ends
    #: (vLLM's V1 engine core and SGLang's scheduler hand them to a detokenizer process;
    #: TensorRT-LLM's executor, llama.cpp's server and the others stream them from the step).
    token_lag_steps: int
    #: Where a prefill computes logits: "last" (vLLM, SGLang, TensorRT-LLM, ExLlama, MLC, Transformers'
    #: generate from v4.45) or "all" (Transformers' generate before v4.45, AutoAWQ's fused forward,
    #: llama.cpp builds before PR #6122, which most of its rows ran). ``workload.prompt_logits``
    #: states it for one run (:meth:`with_logits`).
    prompt_logits: PromptLogits
    # --- how it runs ---
    #: Whether it captures the decode step in CUDA graphs (or runs a compiled graph) by default.
    cuda_graphs: bool
    speed_model: SpeedModel
    #: Whether it runs GGUF files (llama.cpp): a ``.gguf`` model or a GGUF weight type runs on it.
    reads_gguf: bool
    #: Whether the advisor may split its layers between the GPU and host RAM.
    splits_layers: bool
    #: The kernel family that runs 4-bit and 8-bit integer weights when the scenario names none.
    int4_kernel: str
    int8_kernel: str
    #: Checkpoint formats it runs with its own kernels, format -> kernel family (ExLlamaV2 loads
    #: GPTQ checkpoints into its QMatrix kernels; vLLM and SGLang run ``quantization='gptq'`` with
    #: a GPTQ GEMM adapted from ExLlamaV2, the ``vllm-gptq`` family).
    format_kernels: Mapping[str, str]
    #: The weight types it runs, from the most bits to the fewest (the Weight types table's rows).
    weight_types: tuple[str, ...]
    # --- how it serves ---
    batching: Batching | None
    #: The KV pool it preallocates when it starts (None: none beyond what its sequences reserve).
    kv_pool: KvPool | None
    #: Scheduler defaults that depend on the GPU (vLLM V1's ``max_num_seqs`` and
    #: ``max_num_batched_tokens``); None where none is known.
    gpu_batch_defaults: GpuBatchDefaults | None
    # --- what its memory holds ---
    #: Its prefill returns the logits of every prompt position, upcast to fp32 (a Hugging Face
    #: forward before Transformers v4.45, AutoAWQ's fused forward).
    full_prompt_logits: bool
    #: It fuses q, k and v into one new tensor after loading while the originals stay referenced.
    qkv_copy_on_load: bool
    #: Its layer-by-layer split over GPUs balances bytes, not layer counts.
    balanced_pipeline: bool
    #: It computes the loss over chunks of the sequence (torchtune: 8 chunks).
    chunked_loss: bool
    #: Its layers run fused kernels (Transformer Engine) rather than eager PyTorch modules.
    fused_activations: bool
    #: Its layers hold q, k and v as one projection and the MLP's gate and up as another
    #: (Megatron-Core's ``linear_qkv`` and ``linear_fc1``), so LoRA adapts four projections a layer
    #: (NeMo's ``target_modules`` linear_qkv, linear_proj, linear_fc1, linear_fc2) where Hugging
    #: Face models have seven.
    fused_projections: bool
    #: Its QLoRA runs through PEFT's ``prepare_model_for_kbit_training`` (as TRL's ``SFTTrainer`` and
    #: Axolotl call it on a 4-bit base): every weight left in 16 bits (embeddings, head, norms) is
    #: cast to fp32, so the hidden states between the blocks, the norms' outputs and the adapters'
    #: inputs are fp32 too. ``workload.kbit_preparation`` overrides it for one run.
    kbit_preparation: bool
    #: It runs sequence parallelism with tensor parallelism by default (Megatron).
    sequence_parallel: bool

    def __post_init__(self) -> None:
        inference = self.kind == EngineKind.INFERENCE
        where = f"engine profile {self.id}"
        if inference and (self.batching is None or not self.weight_types):
            raise ValueError(f"{where}: an inference engine states its batching and weight types")
        if not inference and (self.batching is not None or self.kv_pool is not None or self.weight_types):
            raise ValueError(f"{where}: a training engine has no batching, KV pool or weight types")
        for family in (self.int4_kernel, self.int8_kernel, *self.format_kernels.values()):
            if family not in KERNEL_FAMILIES:
                raise ValueError(f"{where}: unknown kernel family {family!r}")
        object.__setattr__(self, "format_kernels", MappingProxyType(dict(self.format_kernels)))

    def for_workload(self, workload: RunStatements) -> EngineProfile:
        """This profile as one run uses it: the one place where what a workload states about its
        engine's habits overrides the profile (today ``workload.prompt_logits``, :meth:`with_logits`).
        Every reader of an engine for a workload (the estimate, the memory model, the speed of a
        setup judged too big, the report, the validation harness) takes it from here."""
        return self.with_logits(workload.prompt_logits)

    def with_logits(self, stated: str | None) -> EngineProfile:
        """This profile for a run that states where its prefill computes logits
        (``workload.prompt_logits``): "all" projects every prompt position and holds their logits
        (a Hugging Face forward before Transformers v4.45: a 16-bit copy and its fp32 upcast),
        "last" only the position it samples. None, or the engine's own habit (llama.cpp's "all",
        whose output buffer holds one micro-batch, not a Hugging Face forward's logits): this
        profile."""
        if stated is None or PromptLogits(stated) == self.prompt_logits:
            return self
        logits = PromptLogits(stated)
        return replace(self, prompt_logits=logits, full_prompt_logits=logits == PromptLogits.ALL)

    @property
    def prompt_pass_layer_s(self) -> float:
        """Host time per layer of a prompt's pass: ``prefill_layer_overhead_s`` where the record
        sets it apart, else an eager decode step's ``layer_overhead_s``."""
        own = self.prefill_layer_overhead_s
        return self.layer_overhead_s if own is None else own

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

    def prefill_kernel_factor(self, shares: Iterable[tuple[str, float]]) -> float:
        """The prompt GEMM speed of quantized weights whose matrix parameters fall in kernel families
        by ``shares`` ((family, share) pairs, :func:`~.quant_types.matmul_kernel_shares`), against
        weights all in the legacy family: each family's FLOPs take share / factor of the time, so
        the factors combine harmonically (``legacy`` and ``float`` count 1, ``k_quant_16`` is
        ``k_quant`` x :data:`~.quant_types.K16_PREFILL_RATIO`; a family without a multiplier
        counts 1)."""
        factors = dict(self.prefill_mfu_by_arch)
        factors["k_quant_16"] = factors.get("k_quant", 1.0) * K16_PREFILL_RATIO
        time = sum(share / factors.get(family, 1.0) for family, share in shares)
        return 1.0 / time if time > 0 else 1.0

    @property
    def assumed(self) -> bool:
        """Whether its speed factors are an assumption no measured run was fitted to (its
        ``calibrated_on`` says "assumed: ..." and what it rests on instead)."""
        return self.calibrated_on.lower().startswith("assumed")

    @property
    def spread(self) -> float:
        """The larger side of the range, as one relative figure."""
        return max(self.spread_low, self.spread_high)

    def batch_defaults_on(self, gpu_name: str, memory_gib: float) -> BatchDefaults | None:
        """The sequences and prompt tokens per step it schedules by default on a GPU named
        ``gpu_name`` with ``memory_gib`` of memory (None where no GPU-dependent default is known)."""
        rule = self.gpu_batch_defaults
        return None if rule is None else rule.on(gpu_name, memory_gib)


#: Field names an :class:`EngineProfile` record must state (all of them).
PROFILE_FIELDS = tuple(f.name for f in fields(EngineProfile))

_INFERENCE_NEVER: dict[str, Any] = dict(
    mfu=0.6,
    elementwise_bytes_per_h=300.0,
    chunked_loss=False,
    fused_activations=False,
    fused_projections=False,
    kbit_preparation=False,
    sequence_parallel=False,
)
"""Training-only fields as an inference record states them (no inference estimate reads them)."""

_TRAINING_NEVER: dict[str, Any] = dict(
    bandwidth_efficiency=0.8,
    prefill_mfu=0.6,
    layer_overhead_s=0.0,
    prefill_layer_overhead_s=None,
    prefill_chunk_tokens=None,
    layer_overhead_by_arch=(),
    prefill_mfu_by_arch=(),
    fp16_accumulate=False,
    seq_host_s=0.0,
    mixed_prefill=True,
    token_lag_steps=0,
    prompt_logits=PromptLogits.LAST,
    speed_model=SpeedModel.ROOFLINE,
    reads_gguf=False,
    splits_layers=False,
    int4_kernel="bnb",
    int8_kernel="bnb",
    format_kernels={},
    weight_types=(),
    batching=None,
    kv_pool=None,
    gpu_batch_defaults=None,
    full_prompt_logits=False,
    qkv_copy_on_load=False,
    balanced_pipeline=False,
)
"""Inference-only fields as a training record states them (QLoRA runs bitsandbytes kernels)."""

#: Before any fit every engine has the same range and no rows.
_UNFITTED: dict[str, Any] = dict(spread_low=0.2, spread_high=0.2, calibrated_on="")

#: vLLM's V1 defaults for ``vllm serve`` depend on the GPU: a GPU with at least 70 GiB that is not
#: an A100 gets ``max_num_seqs`` 1024 and ``max_num_batched_tokens`` 8192, every other GPU 256 and
#: 2048 (vllm-project/vllm ``vllm/engine/arg_utils.py``, commit 99d7eb5, ``EngineArgs``: "if
#: device_memory >= 70 * GiB_bytes and "a100" not in device_name: # For GPUs like H100 and MI300x,
#: use larger default values", with the A100 excluded because "Setting large
#: `max_num_batched_tokens` for A100 reduces throughput, see PR #17885").
VLLM_BATCH_DEFAULTS = GpuBatchDefaults(70.0, "a100", BatchDefaults(1024, 8192), BatchDefaults(256, 2048))

#: The weight types a serving engine with FP8 and INT8 kernels runs.
_SERVING_WEIGHTS = ("bf16", "fp8", "int8", "int4")

# Priors: what each engine's own documentation, kernel counts and published kernel benchmarks
# suggest before any row is fitted (docs/estimation.md, "Priors"). The fit starts from them and
# pulls towards them, so an engine without rows keeps its prior. KV pools: vLLM's
# gpu_memory_utilization, SGLang's mem_fraction_static and TensorRT-LLM's
# free_gpu_memory_fraction with their defaults (sources in core/specs/serving.py).
PROFILES: tuple[EngineProfile, ...] = (
    EngineProfile(
        id="tensorrt-llm",
        name="TensorRT-LLM",
        kind=EngineKind.INFERENCE,
        bandwidth_efficiency=0.80,
        prefill_mfu=0.70,
        kernels_per_layer=9,
        runtime=Runtime.CPP,
        layer_overhead_s=36e-6,
        prefill_layer_overhead_s=None,
        prefill_chunk_tokens=8192,
        **_UNFITTED,
        layer_overhead_by_arch=(),
        prefill_mfu_by_arch=(),
        fp16_accumulate=False,
        seq_host_s=0.0,
        mixed_prefill=True,
        token_lag_steps=0,
        prompt_logits=PromptLogits.LAST,
        cuda_graphs=True,
        speed_model=SpeedModel.ROOFLINE,
        reads_gguf=False,
        splits_layers=False,
        int4_kernel="awq",
        int8_kernel="gptq",
        format_kernels={},
        weight_types=_SERVING_WEIGHTS,
        batching=Batching.PAGED_RESERVED,
        kv_pool=KvPool("free_gpu_memory_fraction", 0.9, PoolBasis.FREE),
        gpu_batch_defaults=None,
        full_prompt_logits=False,
        qkv_copy_on_load=False,
        balanced_pipeline=False,
        **_INFERENCE_NEVER,
    ),
    EngineProfile(
        id="vllm",
        name="vLLM",
        kind=EngineKind.INFERENCE,
        bandwidth_efficiency=0.76,
        prefill_mfu=0.62,
        kernels_per_layer=10,
        runtime=Runtime.PYTHON,
        layer_overhead_s=120e-6,
        # Prior: a prompt's pass launched as an eager step is (the fit sets it apart).
        prefill_layer_overhead_s=120e-6,
        prefill_chunk_tokens=8192,
        **_UNFITTED,
        layer_overhead_by_arch=(),
        prefill_mfu_by_arch=(),
        fp16_accumulate=False,
        seq_host_s=0.0,
        mixed_prefill=True,
        token_lag_steps=0,
        prompt_logits=PromptLogits.LAST,
        cuda_graphs=True,
        speed_model=SpeedModel.ROOFLINE,
        reads_gguf=False,
        splits_layers=False,
        int4_kernel="marlin",
        int8_kernel="gptq",
        format_kernels={"gptq": "vllm-gptq"},
        weight_types=_SERVING_WEIGHTS,
        batching=Batching.PAGED,
        kv_pool=KvPool("gpu_memory_utilization", 0.9, PoolBasis.TOTAL),
        gpu_batch_defaults=VLLM_BATCH_DEFAULTS,
        full_prompt_logits=False,
        qkv_copy_on_load=False,
        balanced_pipeline=False,
        **_INFERENCE_NEVER,
    ),
    EngineProfile(
        id="llama.cpp",
        name="llama.cpp",
        kind=EngineKind.INFERENCE,
        bandwidth_efficiency=0.80,
        prefill_mfu=0.80,
        kernels_per_layer=22,
        runtime=Runtime.CPP,
        layer_overhead_s=88e-6,
        prefill_layer_overhead_s=None,
        prefill_chunk_tokens=2048,
        **_UNFITTED,
        # Priors: Metal and CUDA alike, MMQ prefill at the same share of the INT8 peak as
        # cuBLAS of the FP16 peak, every GGUF kernel family as fast as the legacy quants (one
        # scale per 32 values); the fit moves each multiplier from 1. ``k_quant`` and ``i_quant``
        # set the prompt's GEMM efficiency by the share of the weights in each family
        # (quant_types.KERNEL_FAMILY, matmul_kernel_shares; see llamacpp_performance); the
        # k-quants with sub-blocks of 16 run at K16_PREFILL_RATIO of ``k_quant`` (measured).
        layer_overhead_by_arch=(("apple", 1.0), ("cuda_graphs", 1.0)),
        prefill_mfu_by_arch=(("apple", 1.0), ("int8", 1.0), ("k_quant", 1.0), ("i_quant", 1.0)),
        fp16_accumulate=False,
        seq_host_s=0.0,
        mixed_prefill=True,
        token_lag_steps=0,
        # Builds before llama.cpp PR #6122 (merged 2024-03) projected every token of a prompt
        # batch through the head; later ones only the tokens whose logits are asked for. Most
        # llama-bench rows this profile is fitted to ran the earlier builds (discussion #4167's
        # reference build 8e672ef, PR #3084, PR #4766), so it keeps their behaviour: on a current
        # build a prompt is faster by the head's share of its FLOPs (3-7% for 7-8B models).
        prompt_logits=PromptLogits.ALL,
        cuda_graphs=True,
        speed_model=SpeedModel.LLAMA_CPP,
        reads_gguf=True,
        splits_layers=True,
        int4_kernel="gguf",
        int8_kernel="gguf",
        format_kernels={},
        weight_types=("bf16", "q8_0", "q6_k", "q5_k_m", "q4_k_m", "q4_0", "iq4_xs", "q3_k_m", "q2_k"),
        # llama.cpp's server allocates its slots' whole contexts up front.
        batching=Batching.SLOTS,
        kv_pool=None,
        gpu_batch_defaults=None,
        full_prompt_logits=False,
        qkv_copy_on_load=False,
        balanced_pipeline=False,
        **_INFERENCE_NEVER,
    ),
    EngineProfile(
        id="mlc-llm",
        name="MLC LLM",
        kind=EngineKind.INFERENCE,
        bandwidth_efficiency=0.80,
        prefill_mfu=0.5,
        kernels_per_layer=10,
        runtime=Runtime.CPP,
        layer_overhead_s=40e-6,
        prefill_layer_overhead_s=None,
        prefill_chunk_tokens=2048,
        **_UNFITTED,
        layer_overhead_by_arch=(),
        prefill_mfu_by_arch=(),
        fp16_accumulate=False,
        seq_host_s=0.0,
        mixed_prefill=True,
        token_lag_steps=0,
        prompt_logits=PromptLogits.LAST,
        cuda_graphs=True,
        speed_model=SpeedModel.ROOFLINE,
        reads_gguf=False,
        splits_layers=False,
        int4_kernel="mlc",
        int8_kernel="gptq",
        format_kernels={},
        weight_types=("fp16", "int4"),
        batching=Batching.PAGED,
        # MLC LLM also preallocates, but its share is not taken here without a source: its pool is
        # shown as the KV cache in flight.
        kv_pool=None,
        gpu_batch_defaults=None,
        full_prompt_logits=False,
        qkv_copy_on_load=False,
        balanced_pipeline=False,
        **_INFERENCE_NEVER,
    ),
    EngineProfile(
        id="transformers",
        name="Hugging Face Transformers / eager PyTorch",
        kind=EngineKind.INFERENCE,
        bandwidth_efficiency=0.75,
        prefill_mfu=0.55,
        kernels_per_layer=42,
        runtime=Runtime.PYTHON,
        layer_overhead_s=504e-6,
        prefill_layer_overhead_s=None,
        prefill_chunk_tokens=None,
        **_UNFITTED,
        layer_overhead_by_arch=(),
        prefill_mfu_by_arch=(),
        fp16_accumulate=False,
        seq_host_s=0.0,
        mixed_prefill=True,
        token_lag_steps=0,
        # generate() asks the model for the last position's logits only since v4.45 (2024-09-25:
        # huggingface/transformers pull #31292, ``num_logits_to_keep``, later ``logits_to_keep``);
        # before it, and in eager loops that call the whole forward (LitGPT, gpt-fast), every
        # position's: ``workload.prompt_logits: all``.
        prompt_logits=PromptLogits.LAST,
        cuda_graphs=False,
        speed_model=SpeedModel.ROOFLINE,
        reads_gguf=False,
        splits_layers=False,
        # GPTQ checkpoints through the ExLlama kernels; LLM.int8 (bitsandbytes) for 8-bit weights.
        int4_kernel="exllama",
        int8_kernel="bnb",
        format_kernels={},
        weight_types=("bf16", "int8", "int4", "nf4"),
        batching=Batching.STATIC,
        kv_pool=None,
        gpu_batch_defaults=None,
        full_prompt_logits=False,
        qkv_copy_on_load=False,
        # accelerate's device_map="auto": infer_auto_device_map with the balanced strategy of
        # get_balanced_memory.
        balanced_pipeline=True,
        **_INFERENCE_NEVER,
    ),
    EngineProfile(
        id="sglang",
        name="SGLang",
        kind=EngineKind.INFERENCE,
        bandwidth_efficiency=0.76,
        prefill_mfu=0.62,
        kernels_per_layer=10,
        runtime=Runtime.PYTHON,
        layer_overhead_s=120e-6,
        prefill_layer_overhead_s=None,
        prefill_chunk_tokens=8192,
        **_UNFITTED,
        layer_overhead_by_arch=(),
        prefill_mfu_by_arch=(),
        fp16_accumulate=False,
        seq_host_s=0.0,
        # SGLang runs a prefill batch as a forward pass of its own unless --enable-mixed-chunk is
        # given (default off: sgl-project/sglang docs, server arguments).
        mixed_prefill=False,
        token_lag_steps=0,
        prompt_logits=PromptLogits.LAST,
        cuda_graphs=True,
        speed_model=SpeedModel.ROOFLINE,
        reads_gguf=False,
        splits_layers=False,
        int4_kernel="marlin",
        int8_kernel="gptq",
        format_kernels={"gptq": "vllm-gptq"},
        weight_types=_SERVING_WEIGHTS,
        batching=Batching.PAGED,
        kv_pool=KvPool("mem_fraction_static", 0.88, PoolBasis.STATIC),
        gpu_batch_defaults=None,
        full_prompt_logits=False,
        qkv_copy_on_load=False,
        balanced_pipeline=False,
        **_INFERENCE_NEVER,
    ),
    EngineProfile(
        id="autoawq",
        name="AutoAWQ (fused modules)",
        kind=EngineKind.INFERENCE,
        bandwidth_efficiency=0.75,
        prefill_mfu=0.55,
        kernels_per_layer=10,
        runtime=Runtime.PYTHON,
        layer_overhead_s=120e-6,
        prefill_layer_overhead_s=None,
        prefill_chunk_tokens=None,
        **_UNFITTED,
        layer_overhead_by_arch=(),
        prefill_mfu_by_arch=(),
        fp16_accumulate=False,
        seq_host_s=0.0,
        mixed_prefill=True,
        token_lag_steps=0,
        prompt_logits=PromptLogits.ALL,  # its fused model's forward projects every position
        cuda_graphs=False,
        speed_model=SpeedModel.ROOFLINE,
        reads_gguf=False,
        splits_layers=False,
        int4_kernel="awq",
        int8_kernel="gptq",
        format_kernels={},
        weight_types=("fp16", "int4"),
        batching=Batching.STATIC,
        kv_pool=None,
        gpu_batch_defaults=None,
        full_prompt_logits=True,
        # ``fuse_layers``: LlamaFuser keeps the list of original attention modules while _fuse_qkv
        # concatenates qweight/qzeros/scales (casper-hansen/AutoAWQ awq/models/llama.py, commit
        # 0091f1e), so the load peaks at the weights plus a second copy of every layer's q/k/v.
        qkv_copy_on_load=True,
        balanced_pipeline=False,
        **_INFERENCE_NEVER,
    ),
    EngineProfile(
        id="exllamav2",
        name="ExLlamaV2",
        kind=EngineKind.INFERENCE,
        bandwidth_efficiency=0.75,
        prefill_mfu=0.55,
        kernels_per_layer=12,
        runtime=Runtime.CPP,
        layer_overhead_s=48e-6,
        prefill_layer_overhead_s=None,
        prefill_chunk_tokens=2048,
        **_UNFITTED,
        layer_overhead_by_arch=(),
        prefill_mfu_by_arch=(),
        fp16_accumulate=True,
        seq_host_s=0.0,
        mixed_prefill=True,
        token_lag_steps=0,
        prompt_logits=PromptLogits.LAST,
        cuda_graphs=False,
        speed_model=SpeedModel.ROOFLINE,
        reads_gguf=False,
        splits_layers=False,
        int4_kernel="exllama",
        int8_kernel="gptq",
        # turboderp/exllamav2 README: "supports the same 4-bit GPTQ models as V1".
        format_kernels={"gptq": "exllama"},
        weight_types=("fp16", "int4"),
        batching=Batching.SLOTS,
        kv_pool=None,
        gpu_batch_defaults=None,
        full_prompt_logits=False,
        qkv_copy_on_load=False,
        balanced_pipeline=False,
        **_INFERENCE_NEVER,
    ),
    EngineProfile(
        id="megatron",
        name="Megatron-LM / large-scale custom stacks",
        kind=EngineKind.TRAINING,
        mfu=0.80,
        elementwise_bytes_per_h=120.0,
        kernels_per_layer=30,
        runtime=Runtime.PYTHON,
        **_UNFITTED,
        cuda_graphs=True,
        chunked_loss=False,
        fused_activations=True,
        fused_projections=True,
        kbit_preparation=False,
        sequence_parallel=True,
        **_TRAINING_NEVER,
    ),
    EngineProfile(
        id="fsdp",
        name="PyTorch FSDP (llm-foundry, lit-gpt)",
        kind=EngineKind.TRAINING,
        mfu=0.85,
        elementwise_bytes_per_h=250.0,
        kernels_per_layer=60,
        runtime=Runtime.PYTHON,
        **_UNFITTED,
        cuda_graphs=False,
        chunked_loss=False,
        fused_activations=False,
        fused_projections=False,
        kbit_preparation=False,
        sequence_parallel=False,
        **_TRAINING_NEVER,
    ),
    EngineProfile(
        id="deepspeed",
        name="DeepSpeed (ZeRO, ZeRO-Offload, ZeRO-Infinity)",
        kind=EngineKind.TRAINING,
        mfu=0.85,
        elementwise_bytes_per_h=250.0,
        kernels_per_layer=60,
        runtime=Runtime.PYTHON,
        **_UNFITTED,
        cuda_graphs=False,
        chunked_loss=False,
        fused_activations=False,
        fused_projections=False,
        kbit_preparation=False,
        sequence_parallel=False,
        **_TRAINING_NEVER,
    ),
    EngineProfile(
        id="hf-trainer",
        name="Hugging Face Trainer / PEFT",
        kind=EngineKind.TRAINING,
        mfu=0.75,
        elementwise_bytes_per_h=500.0,
        kernels_per_layer=80,
        runtime=Runtime.PYTHON,
        **_UNFITTED,
        cuda_graphs=False,
        chunked_loss=False,
        fused_activations=False,
        fused_projections=False,
        kbit_preparation=True,
        sequence_parallel=False,
        **_TRAINING_NEVER,
    ),
    EngineProfile(
        id="torchtune",
        name="torchtune (torch.compile)",
        kind=EngineKind.TRAINING,
        mfu=0.80,
        elementwise_bytes_per_h=150.0,
        kernels_per_layer=30,
        runtime=Runtime.PYTHON,
        **_UNFITTED,
        cuda_graphs=False,
        chunked_loss=True,
        fused_activations=False,
        fused_projections=False,
        kbit_preparation=False,
        sequence_parallel=False,
        **_TRAINING_NEVER,
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
    token_lag_steps: int
    #: Its GPU-dependent scheduler defaults (None: the release has none known).
    gpu_batch_defaults: GpuBatchDefaults | None
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
            # V0's asynchronous output processing (vLLM 0.6.0, pull request #7049, on by default)
            # processes a step's output while the next step runs, and the engine returns it when
            # that step ends: every token reaches its client one step after it was computed.
            token_lag_steps=1,
            # The GPU-dependent defaults are V1's (VLLM_BATCH_DEFAULTS).
            gpu_batch_defaults=None,
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
    (its factors, fitted or prior, and the line's own host side)."""
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
                    token_lag_steps=line["token_lag_steps"],
                    gpu_batch_defaults=line["gpu_batch_defaults"],
                    calibrated_on=(base.calibrated_on + "; " if base.calibrated_on else "")
                    + f"host time per sequence and step {line['seq_host_s'] * 1e6:.0f} µs: {line['source']}",
                )
    return out


#: Every engine's record as written (priors; release lines derived), by id, in the window's order.
RECORDS: Mapping[str, EngineProfile] = MappingProxyType(with_release_lines({p.id: p for p in PROFILES}))

DEFAULT_INFERENCE_ENGINE = "vllm"
DEFAULT_TRAINING_ENGINE = "hf-trainer"
DEFAULT_PRETRAIN_ENGINE = "megatron"


def default_engine(kind: str) -> str:
    """The engine a workload of ``kind`` runs on when it names none."""
    return {"inference": DEFAULT_INFERENCE_ENGINE, "pretrain": DEFAULT_PRETRAIN_ENGINE}.get(
        kind, DEFAULT_TRAINING_ENGINE
    )


def record_of(engine_id: str | None, kind: str) -> EngineProfile:
    """The record of ``engine_id`` (the kind's default engine when None): what the engine is, not
    what a fit made of its speed factors (:func:`gpuadvisor.core.specs.constants.engine_for`)."""
    eid = engine_id if engine_id is not None else default_engine(kind)
    record = RECORDS.get(eid)
    if record is None:
        raise InputError("workload.engine", f"unknown engine; known engines: {', '.join(RECORDS)}", eid)
    return record


def gguf_engine() -> str:
    """The engine that runs GGUF files (the one record with ``reads_gguf``)."""
    return next(p.id for p in PROFILES if p.reads_gguf)


#: Weight types that are both GGUF types and checkpoints serving engines publish and run (gpt-oss's
#: MXFP4, NVFP4): the engine is not implied by them.
_CHECKPOINT_FP4 = ("mxfp4", "nvfp4")


def engine_of(workload: Any, source: Any = None) -> str | None:
    """The engine a workload runs on: the one it names, else the GGUF engine (llama.cpp) for
    inference of a ``.gguf`` file or of a GGUF weight type (but not an FP4 checkpoint format, which
    serving engines run too), else None (the kind's default, :func:`default_engine`)."""
    named: str | None = workload.engine
    if named is not None or workload.kind != "inference":
        return named
    from_file = source is not None and getattr(source, "gguf", None) is not None
    if from_file or (workload.is_gguf and workload.weights not in _CHECKPOINT_FP4):
        return gguf_engine()
    return None
