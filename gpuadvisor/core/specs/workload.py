"""What the user wants to run: workload kind, precisions, batch and sequence, optimizer,
LoRA settings, and how the GPUs are combined.

All inputs are frozen dataclasses validated in ``__post_init__``; every error names the
scenario field (``workload.batch_size``) and the value.

Bytes per stored weight (quantization constants included)::

    fp32 4 | bf16/fp16 2 | fp8 1 (per-tensor scale) | int8 1 + 4/in_features (per-row fp32 scale)
    int4 0.5 + 4/128 (GPTQ/AWQ: fp16 scale and zero per group of 128) = 0.531
    nf4  0.5 + 4/64 (fp32 absmax per block of 64)                        = 0.5625
    nf4 with double quantization 0.5 + 1/64 + 4/(64*256)                 = 0.516

Embeddings, the LM head and norms stay in 16 bit when the blocks are quantized (bitsandbytes,
GPTQ, AWQ and FP8 checkpoints all keep them so).

References
----------
- Dettmers et al. 2022, "LLM.int8()"; Dettmers et al. 2023, "QLoRA" (NF4, double quantization:
  0.127 bits per parameter of constants, paged optimizers).
- Frantar et al. 2022, "GPTQ"; Lin et al. 2023, "AWQ" (group-wise int4).
- Micikevicius et al. 2018, "Mixed Precision Training" (fp32 master weights).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from ..errors import InputError
from .quant_types import GGUF_WEIGHT_TYPES, KV_CACHE_DTYPES, bytes_per_weight, is_gguf_type

WORKLOAD_KINDS = ("inference", "lora", "qlora", "full_finetune", "pretrain")
TRAINING_KINDS = ("lora", "qlora", "full_finetune", "pretrain")
WEIGHT_PRECISIONS = ("fp32", "bf16", "fp16", "fp8", "int8", "int4", "nf4") + GGUF_WEIGHT_TYPES
KV_PRECISIONS = ("fp32", "bf16", "fp16", "fp8", "int8", "int4")
OPTIMIZERS = ("adamw", "adamw_8bit", "sgd", "adafactor")
PARALLELISMS = ("ddp", "zero1", "zero2", "zero3", "fsdp", "tensor", "pipeline")
QUANTIZED = ("int8", "int4", "nf4")

_BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5, "nf4": 0.5}


def bytes_per_element(precision: str) -> float:
    """Storage bytes of one element, without quantization constants."""
    return _BYTES[precision]


def weight_bytes_per_param(precision: str, in_features: int = 4096, double_quant: bool = True) -> float:
    """Bytes of one quantized-block weight including its quantization constants."""
    if precision == "int8":
        return 1.0 + 4.0 / in_features
    if precision == "int4":
        return 0.5 + 4.0 / 128
    if precision == "nf4":
        return 0.5 + (1.0 / 64 + 4.0 / (64 * 256) if double_quant else 4.0 / 64)
    if is_gguf_type(precision):
        return bytes_per_weight({"q5_k_m": "q5_k", "q4_k_m": "q4_k", "q3_k_m": "q3_k"}.get(precision, precision))
    return _BYTES[precision]


def is_quantized_weights(precision: str) -> bool:
    """Weights stored below 16 bits (integer, FP8 or a GGUF type): read through dequantizing kernels."""
    return precision in ("int8", "int4", "nf4", "fp8") or is_gguf_type(precision)


def _positive_int(name: str, value: object, minimum: int = 1, maximum: int | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InputError(name, f"must be a whole number >= {minimum}", value)
    if maximum is not None and value > maximum:
        raise InputError(name, f"must be at most {maximum:,}", value)


def _positive_float(name: str, value: object, allow_zero: bool = False, maximum: float | None = None) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0 or (value == 0 and not allow_zero):
        raise InputError(name, "must be a number " + (">= 0" if allow_zero else "> 0"), value)
    if maximum is not None and value > maximum:
        raise InputError(name, f"must be at most {maximum:g}", value)


def _choice(name: str, value: object, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise InputError(name, f"must be one of {', '.join(choices)}", value)


@dataclass(frozen=True, slots=True)
class Workload:
    """A workload: what runs on each GPU.

    ``batch_size`` is the per-GPU micro-batch in training, and the number of concurrent
    sequences in inference. ``seq_len`` is the training sequence length; inference uses
    ``prompt_tokens + output_tokens`` as the context of each sequence.
    """

    kind: str = "inference"
    weights: str = "bf16"
    kv_cache: str | None = None
    batch_size: int = 1
    seq_len: int = 2048
    prompt_tokens: int = 1024
    output_tokens: int = 256
    optimizer: str = "adamw"
    gradient_checkpointing: bool = False
    flash_attention: bool = True
    lora_rank: int = 16
    lora_targets: tuple[str, ...] | str = "all_linear"
    lora_dropout: bool = True
    master_weights: bool = True
    double_quant: bool = True
    engine: str | None = None
    # llama.cpp (local inference): KV-cache type and layers offloaded to the GPU (None: all).
    kv_cache_dtype: str | None = None
    gpu_layers: int | None = None
    # Job size (used by the speed and cost estimates).
    train_tokens: float | None = None
    dataset_tokens: float | None = None
    epochs: float = 1.0
    requests: float | None = None
    ignored_keys: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        _choice("workload.kind", self.kind, WORKLOAD_KINDS)
        _choice("workload.weights", self.weights, WEIGHT_PRECISIONS)
        if self.kv_cache is not None:
            _choice("workload.kv_cache", self.kv_cache, KV_PRECISIONS)
        _positive_int("workload.batch_size", self.batch_size, maximum=1_000_000)
        _positive_int("workload.seq_len", self.seq_len, maximum=100_000_000)
        _positive_int("workload.prompt_tokens", self.prompt_tokens, maximum=100_000_000)
        _positive_int("workload.output_tokens", self.output_tokens, maximum=100_000_000)
        _choice("workload.optimizer", self.optimizer, OPTIMIZERS)
        self._check_local_keys()
        _positive_int("workload.lora_rank", self.lora_rank, maximum=65536)
        for name in ("gradient_checkpointing", "flash_attention", "lora_dropout", "master_weights", "double_quant"):
            if not isinstance(getattr(self, name), bool):
                raise InputError(f"workload.{name}", "must be true or false", getattr(self, name))
        if not isinstance(self.lora_targets, (str, tuple, list)):
            raise InputError("workload.lora_targets", "must be 'all_linear' or a list of module names",
                             self.lora_targets)
        if isinstance(self.lora_targets, list):
            object.__setattr__(self, "lora_targets", tuple(self.lora_targets))
        if not isinstance(self.lora_targets, str):
            if not self.lora_targets or not all(isinstance(t, str) and t for t in self.lora_targets):
                raise InputError("workload.lora_targets", "must be 'all_linear' or a non-empty list of module names",
                                 self.lora_targets)
        for name in ("train_tokens", "dataset_tokens", "requests"):
            value = getattr(self, name)
            if value is not None:
                _positive_float(f"workload.{name}", value, maximum=1e18)
        _positive_float("workload.epochs", self.epochs, maximum=1e6)
        if self.kind in ("full_finetune", "pretrain") and self.weights in QUANTIZED:
            raise InputError("workload.weights",
                             f"{self.kind} trains every weight and needs fp32, bf16, fp16 or fp8; "
                             "to train on a quantized base use kind qlora", self.weights)
        if self.kind == "qlora" and self.weights not in QUANTIZED:
            raise InputError("workload.weights", "qlora needs a quantized base: nf4, int4 or int8", self.weights)

    def _check_local_keys(self) -> None:
        """The llama.cpp keys: GGUF weight types, kv_cache_dtype and gpu_layers."""
        if is_gguf_type(self.weights) and self.kind != "inference":
            raise InputError("workload.weights", "GGUF types are llama.cpp inference formats; for training "
                             "use bf16, fp16 or fp8 (qlora: nf4, int4 or int8)", self.weights)
        if self.kv_cache_dtype is not None:
            _choice("workload.kv_cache_dtype", self.kv_cache_dtype, KV_CACHE_DTYPES)
            if self.kv_cache is not None:
                raise InputError("workload.kv_cache_dtype", "give either kv_cache or kv_cache_dtype, not both",
                                 self.kv_cache_dtype)
            if self.kv_cache_dtype not in ("f32", "f16", "bf16") and not self.flash_attention:
                raise InputError("workload.kv_cache_dtype", "a quantized V cache needs flash attention in "
                                 "llama.cpp; set flash_attention to true or use f16", self.kv_cache_dtype)
        if self.gpu_layers is not None:
            _positive_int("workload.gpu_layers", self.gpu_layers, minimum=0, maximum=10_000)
            if self.kind != "inference":
                raise InputError("workload.gpu_layers", "partial offload is for inference only", self.gpu_layers)

    @property
    def is_gguf(self) -> bool:
        """Whether the weights are a llama.cpp GGUF type."""
        return is_gguf_type(self.weights)

    @property
    def kv_bytes_per_element(self) -> float:
        """Bytes of one KV-cache element: kv_cache_dtype (llama.cpp types) or kv_precision."""
        if self.kv_cache_dtype is not None:
            return bytes_per_weight(self.kv_cache_dtype)
        if self.kv_precision == "int4":
            return 0.5 + 4.0 / 64  # group scales
        return _BYTES[self.kv_precision]

    @property
    def is_training(self) -> bool:
        return self.kind in TRAINING_KINDS

    @property
    def trains_base(self) -> bool:
        """Whether every base weight gets a gradient (full fine-tuning and pre-training)."""
        return self.kind in ("full_finetune", "pretrain")

    @property
    def uses_adapters(self) -> bool:
        return self.kind in ("lora", "qlora")

    @property
    def kv_precision(self) -> str:
        """KV-cache precision: as given, else the weights' 16/32-bit type, else bf16."""
        if self.kv_cache is not None:
            return self.kv_cache
        if self.kv_cache_dtype is not None:
            return {"f32": "fp32", "f16": "fp16", "bf16": "bf16", "q8_0": "int8"}.get(self.kv_cache_dtype, "int4")
        if is_gguf_type(self.weights):
            return "fp16"  # llama.cpp's default cache type
        return self.weights if self.weights in ("fp32", "bf16", "fp16") else "bf16"

    @property
    def activation_bytes(self) -> float:
        """Bytes of one activation element: fp32 runs keep fp32 activations, everything else 16-bit."""
        return 4.0 if self.weights == "fp32" else 2.0

    @property
    def context_tokens(self) -> int:
        """Tokens each sequence holds at its longest: seq_len in training, prompt + output in inference."""
        return self.seq_len if self.is_training else self.prompt_tokens + self.output_tokens


@dataclass(frozen=True, slots=True)
class Hardware:
    """Which GPUs and how they are combined. ``gpu=None`` compares the whole catalog;
    ``gpu_count=None`` compares 1, 2, 4 and 8; ``parallelism=None`` tries every applicable one."""

    gpu: str | None = None
    gpu_count: int | None = None
    parallelism: str | None = None
    gpus_per_node: int = 8
    # Memory fitted to the part, GiB (a Mac's RAM size, a MIG slice); None keeps the catalog's.
    memory_gib: float | None = None

    def __post_init__(self) -> None:
        if self.memory_gib is not None:
            _positive_float("hardware.memory_gib", self.memory_gib, maximum=4096)
        if self.gpu is not None and (not isinstance(self.gpu, str) or not self.gpu):
            raise InputError("hardware.gpu", "must be a catalog id", self.gpu)
        if self.gpu_count is not None:
            _positive_int("hardware.gpu_count", self.gpu_count, maximum=100_000)
        if self.parallelism is not None:
            _choice("hardware.parallelism", self.parallelism, PARALLELISMS)
        _positive_int("hardware.gpus_per_node", self.gpus_per_node, maximum=1024)


@dataclass(frozen=True, slots=True)
class RuntimeOverhead:
    """Memory outside the tensors: CUDA context and kernels, and allocator fragmentation.

    ``cuda_context_gib``: the CUDA context, cuBLAS/cuDNN handles and loaded kernels. 0.3-0.5 GiB
    with CUDA 12 lazy module loading; 1.3 GiB measured with older stacks (Hugging Face's
    "model training anatomy" guide, V100). Default 0.6 GiB.
    ``fragmentation``: share of the tensor peak that the caching allocator holds on top
    (reserved minus allocated). Default 8% in training, 4% in inference; ``None`` uses those.
    """

    cuda_context_gib: float = 0.6
    fragmentation: float | None = None

    def __post_init__(self) -> None:
        _positive_float("overhead.cuda_context_gib", self.cuda_context_gib, allow_zero=True, maximum=64)
        if self.fragmentation is not None:
            _positive_float("overhead.fragmentation", self.fragmentation, allow_zero=True, maximum=1.0)

    def fragmentation_for(self, training: bool) -> float:
        if self.fragmentation is not None:
            return self.fragmentation
        return 0.08 if training else 0.04


def weights_for_kind(kind: str, weights: str) -> str:
    """The weights precision a workload of ``kind`` keeps when switched to it: ``weights`` itself when
    :class:`Workload` accepts the pair, else the nearest one it accepts (a quantized base becomes bf16
    for full training; QLoRA needs a quantized base, nf4)."""
    if kind in ("full_finetune", "pretrain") and weights in QUANTIZED:
        return "bf16"
    if kind == "qlora" and weights not in QUANTIZED:
        return "nf4"
    return weights


def adapt_to_kind(workload: Workload, kind: str) -> Workload:
    """``workload`` switched to ``kind``: weights that the new kind cannot use are replaced
    (:func:`weights_for_kind`), and the batch, whose meaning changes between serving (concurrent
    sequences) and training (micro-batch per GPU), goes back to the default when that meaning changes."""
    if kind == workload.kind:
        return workload
    changes: dict = {"kind": kind, "weights": weights_for_kind(kind, workload.weights)}
    if (kind in TRAINING_KINDS) != workload.is_training:
        changes["batch_size"] = Workload.__dataclass_fields__["batch_size"].default
    return replace(workload, **changes)
