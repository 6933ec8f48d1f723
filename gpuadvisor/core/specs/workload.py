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

The kernel family (``quantization``) decides the constants that travel with a 4-bit weight,
in bits per weight for a group of ``g`` weights::

    awq, gptq, exllama   4 + (16 + 4)/g      fp16 scale and packed 4-bit zero per group (g = 128): 4.156
    marlin               4 + 16/g            symmetric, fp16 scale per group (g = 128): 4.125
    torchao              4 + 32/g            bf16 scale and zero per group (int4 weight-only, g = 128): 4.25
    hqq                  4 + 32/g            fp16 scale and zero per group (g = 64): 4.5
    bnb                  nf4/fp4 as above; int8 is LLM.int8 with a per-row fp32 scale
    gguf                 llama.cpp block formats: Q4_0 4.5 (32 weights share an fp16 scale), Q8_0 8.5
    fp8                  8 (one scale per tensor)

An 8-bit weight of the GPTQ/AWQ-style families stores 8 bits plus the same group constants.

References
----------
- Dettmers et al. 2022, "LLM.int8()"; Dettmers et al. 2023, "QLoRA" (NF4, double quantization:
  0.127 bits per parameter of constants, paged optimizers).
- Frantar et al. 2022, "GPTQ"; Lin et al. 2023, "AWQ" (group-wise int4).
- Micikevicius et al. 2018, "Mixed Precision Training" (fp32 master weights).
- Frantar et al. 2024, "MARLIN: Mixed-Precision Auto-Regressive Parallel Inference on Large Language
  Models" (symmetric group-wise int4); llama.cpp ``ggml/src/ggml-common.h`` (block_q4_0, block_q8_0).
- Badri & Shaji 2023, "Half-Quadratic Quantization of Large Machine Learning Models" (HQQ).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..errors import InputError
from ..vocabulary import OffloadTarget, Optimizer, Parallelism, Precision, Recompute, WorkloadKind
from .engines import PromptLogits, record_of
from .fields import FIELD_RULES, checked
from .quant_types import (
    GGUF_WEIGHT_TYPES,
    KV_CACHE_DTYPES,
    MICROSCALED_FP4,
    bytes_per_weight,
    is_gguf_type,
)
from .serving import ServingSpec
from .speculative import SpeculativeSpec

WORKLOAD_KINDS: tuple[WorkloadKind, ...] = tuple(WorkloadKind)
TRAINING_KINDS: tuple[WorkloadKind, ...] = tuple(k for k in WorkloadKind if k.is_training)
WEIGHT_PRECISIONS: tuple[str, ...] = tuple(Precision) + GGUF_WEIGHT_TYPES
KV_PRECISIONS: tuple[Precision, ...] = tuple(p for p in Precision if p is not Precision.NF4)
OPTIMIZERS: tuple[Optimizer, ...] = tuple(Optimizer)
PARALLELISMS: tuple[Parallelism, ...] = tuple(p for p in Parallelism if p is not Parallelism.NONE)
QUANTIZED = ("int8", "int4", "nf4")
QUANTIZATIONS = ("awq", "gptq", "marlin", "exllama", "bnb", "gguf", "fp8", "w8a8", "torchao", "hqq")
OPTIMIZER_STATE_DTYPES = ("fp32", "bf16")
PROMPT_LOGITS: tuple[PromptLogits, ...] = tuple(PromptLogits)
#: Activation recomputation (Korthikanti et al. 2022): keep everything, recompute the attention
#: core only (Megatron's selective), keep the outputs of every other matrix multiply and the
#: attention kernel and recompute the rest (PyTorch's per-operator selective checkpointing, torchtitan's
#: ``op``), or keep each layer's input and recompute the whole layer.
RECOMPUTE_CHOICES: tuple[Recompute, ...] = tuple(Recompute)
#: Precision of the training GEMMs (Transformer Engine): weights and master copy stay 16/32-bit.
COMPUTE_PRECISIONS = ("bf16", "fp8", "mxfp8")
#: Where offloaded optimizer states or parameters live (ZeRO-Offload, ZeRO-Infinity, FSDP CPU offload).
OFFLOAD_TARGETS: tuple[OffloadTarget, ...] = tuple(OffloadTarget)
#: Weight precisions each kernel family can run (other weights values, e.g. llama.cpp types, go to gguf).
QUANTIZATION_WEIGHTS = {
    "awq": ("int4",),
    "gptq": ("int4", "int8"),
    "marlin": ("int4", "int8"),
    "exllama": ("int4",),
    "bnb": ("nf4", "int4", "int8"),
    "fp8": ("fp8",),
    "w8a8": ("int8",),
    "torchao": ("int4", "int8", "fp8", "nf4"),
    "hqq": ("int4", "int8"),
}
#: Group size and bits of constants per group (scale + zero) of the group-wise families.
_GROUP = {
    "mlc": (32, 16.0),
    "awq": (128, 20.0),
    "gptq": (128, 20.0),
    "vllm-gptq": (128, 20.0),
    "exllama": (128, 20.0),
    "marlin": (128, 16.0),
    "torchao": (128, 32.0),
    "hqq": (64, 32.0),
}
#: llama.cpp block formats chosen for the generic weights values (bytes per weight, block constants included).
_GGUF_BYTES = {"int4": 18 / 32, "int8": 34 / 32, "fp8": 34 / 32}

_BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5, "nf4": 0.5}


def bytes_per_element(precision: str) -> float:
    """Storage bytes of one element, without quantization constants."""
    return _BYTES[precision]


def is_fp4_checkpoint(weights: str, engine: str | None, kind: str) -> bool:
    """Whether FP4 microscaled weights (``mxfp4``, ``nvfp4``) are a published checkpoint that a
    serving engine (any but llama.cpp, which reads a GGUF; vLLM when none is named) runs with its
    4-bit kernels and loads as it is: the FP4 tensors as stored, the rest in BF16."""
    return weights in MICROSCALED_FP4 and kind == "inference" and not record_of(engine, kind).reads_gguf


def default_quantization(weights: str, engine: str | None, kind: str) -> str | None:
    """The kernel family that runs ``weights`` on ``engine`` when the scenario does not say.

    None for 16/32-bit weights. Serving engines run 4-bit and 8-bit checkpoints with the kernels
    their record names (:attr:`~.engines.EngineProfile.int4_kernel`, ``int8_kernel``: vLLM Marlin,
    TensorRT-LLM AWQ-style weight-only, Transformers GPTQ through the ExLlama kernels, MLC LLM its
    own q4f16 kernels, reported as ``mlc``); the GGUF engine (llama.cpp) runs GGUF; training
    (QLoRA) uses bitsandbytes.
    """
    if weights in ("fp32", "bf16", "fp16"):
        return None
    if weights == "fp8":
        return "fp8"
    if is_fp4_checkpoint(weights, engine, kind):
        # A checkpoint with FP4 microscaled experts (gpt-oss's MXFP4) on a serving engine runs its
        # fused 4-bit weight-only kernels (vLLM: Marlin's MXFP4 path or Triton's matmul_ogs;
        # TensorRT-LLM: its weight-only MoE GEMMs), which never write a 16-bit copy: the engine's
        # int4 family, not llama.cpp's GGUF path.
        weights = "int4"
    elif weights not in QUANTIZED:
        return "gguf"  # a llama.cpp tensor type
    if weights == "nf4" or kind in TRAINING_KINDS:
        return "bnb"
    record = record_of(engine, kind)
    return record.int8_kernel if weights == "int8" else record.int4_kernel


def weight_bytes_per_param(
    precision: str, in_features: int = 4096, double_quant: bool = True, quantization: str | None = None
) -> float:
    """Bytes of one quantized-block weight including its quantization constants."""
    if quantization == "gguf" and precision in _GGUF_BYTES:
        return _GGUF_BYTES[precision]
    if quantization == "bnb" and precision == "int4":
        precision = "nf4"  # bitsandbytes FP4 stores like NF4: 4 bits plus block absmax
    if quantization in _GROUP and precision in ("int4", "int8"):
        group, const_bits = _GROUP[quantization]
        return (4.0 if precision == "int4" else 8.0) / 8 + const_bits / group / 8
    if precision == "int8":
        return 1.0 + 4.0 / in_features
    if precision == "int4":
        return 0.5 + 4.0 / 128
    if precision == "nf4":
        return 0.5 + (1.0 / 64 + 4.0 / (64 * 256) if double_quant else 4.0 / 64)
    if is_gguf_type(precision):
        return bytes_per_weight(
            {"q5_k_m": "q5_k", "q4_k_m": "q4_k", "q3_k_m": "q3_k"}.get(precision, precision)
        )
    return _BYTES[precision]


def is_quantized_weights(precision: str) -> bool:
    """Weights stored below 16 bits (integer, FP8 or a GGUF type): read through dequantizing kernels."""
    return precision in ("int8", "int4", "nf4", "fp8") or is_gguf_type(precision)


def _field(obj: object, section: str, name: str) -> None:
    """Check ``obj.name`` against the scenario key's one rule (:data:`~.fields.FIELD_RULES`); a whole
    number given as a float (``4.0``) is kept as an int. None (not set) passes."""
    value = getattr(obj, name)
    if value is None:
        return
    key = f"{section}.{name}"
    checked(key, value)
    if FIELD_RULES[key].integer and not isinstance(value, int):
        object.__setattr__(obj, name, int(value))


def _choice(name: str, value: object, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise InputError(name, f"must be one of {', '.join(choices)}", value)


#: Concurrent sequences when serving, micro-batch per GPU when training.
DEFAULT_BATCH_SIZE = 1


@dataclass(frozen=True, slots=True)
class Offload:
    """Training state kept off the GPU: ``optimizer`` (fp32 master copy, moments and the gradients
    they consume) and ``parameters`` (16-bit weights, gathered layer by layer), each ``none``,
    ``cpu`` or ``nvme``."""

    optimizer: str = "none"
    parameters: str = "none"

    def __post_init__(self) -> None:
        _choice("workload.offload.optimizer", self.optimizer, OFFLOAD_TARGETS)
        _choice("workload.offload.parameters", self.parameters, OFFLOAD_TARGETS)

    @property
    def any(self) -> bool:
        return self.optimizer != "none" or self.parameters != "none"


def _offload(value: object) -> Offload:
    """``workload.offload`` as given in a scenario: an :class:`Offload` or a JSON object."""
    if isinstance(value, Offload):
        return value
    if not isinstance(value, dict):
        raise InputError("workload.offload", 'must be an object like {"optimizer": "cpu"}', value)
    unknown = [k for k in value if k not in ("optimizer", "parameters")]
    if unknown:
        raise InputError("workload.offload", "knows only optimizer and parameters", unknown[0])
    return Offload(**value)


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
    batch_size: int = DEFAULT_BATCH_SIZE
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
    #: QLoRA: whether PEFT's ``prepare_model_for_kbit_training`` cast the base's 16-bit weights to
    #: fp32 (None: the engine's habit, ``EngineProfile.kbit_preparation``).
    kbit_preparation: bool | None = None
    #: Inference: where the prefill computes logits, "all" (every prompt position, as Hugging Face
    #: Transformers' generate before v4.45) or "last" (None: the engine's habit,
    #: ``EngineProfile.prompt_logits``).
    prompt_logits: str | None = None
    engine: str | None = None
    quantization: str | None = None
    optimizer_state_dtype: str = "fp32"
    cuda_graphs: bool | None = None
    # llama.cpp (local inference): KV-cache type and layers offloaded to the GPU (None: all).
    kv_cache_dtype: str | None = None
    gpu_layers: int | None = None
    # Job size (used by the speed and cost estimates).
    train_tokens: float | None = None
    dataset_tokens: float | None = None
    epochs: float = 1.0
    requests: float | None = None
    # A service (``workload.serving``): traffic and latency targets, and the long tail of lengths.
    serving: ServingSpec | None = None
    #: Speculative decoding (inference): who drafts, how many tokens, how many are accepted.
    speculative: SpeculativeSpec | None = None
    prompt_tokens_p90: int | None = None
    output_tokens_p90: int | None = None
    # Large training jobs (see docs/scenario.md, "Layouts"): recomputation, sequences per optimizer
    # step, GEMM precision and offloaded state.
    activation_recompute: str | None = None
    global_batch_size: int | None = None
    compute_precision: str | None = None
    offload: Offload = field(default_factory=Offload)
    ignored_keys: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        _choice("workload.kind", self.kind, WORKLOAD_KINDS)
        _choice("workload.weights", self.weights, WEIGHT_PRECISIONS)
        if self.kv_cache is not None:
            _choice("workload.kv_cache", self.kv_cache, KV_PRECISIONS)
        for name in ("batch_size", "seq_len", "prompt_tokens", "output_tokens", "lora_rank"):
            if getattr(self, name) is None:  # a null in the file: these have no "not set"
                raise InputError(f"workload.{name}", "must be a number", None)
            _field(self, "workload", name)
        _choice("workload.optimizer", self.optimizer, OPTIMIZERS)
        self._check_local_keys()
        for name in (
            "gradient_checkpointing",
            "flash_attention",
            "lora_dropout",
            "master_weights",
            "double_quant",
        ):
            if not isinstance(getattr(self, name), bool):
                raise InputError(f"workload.{name}", "must be true or false", getattr(self, name))
        self._check_lora_targets()
        for name in ("train_tokens", "dataset_tokens", "requests", "epochs"):
            _field(self, "workload", name)
        self._check_serving_keys()
        self._check_layout_keys()
        self._check_weights_for_kind()
        _choice("workload.optimizer_state_dtype", self.optimizer_state_dtype, OPTIMIZER_STATE_DTYPES)
        for name in ("cuda_graphs", "kbit_preparation"):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), bool):
                raise InputError(f"workload.{name}", "must be true or false", getattr(self, name))
        if self.prompt_logits is not None:
            _choice("workload.prompt_logits", self.prompt_logits, PROMPT_LOGITS)
        self._check_quantization()

    def _check_lora_targets(self) -> None:
        """lora_targets: 'all_linear' or a non-empty list of module names (a list kept as a tuple)."""
        if not isinstance(self.lora_targets, (str, tuple, list)):
            raise InputError(
                "workload.lora_targets", "must be 'all_linear' or a list of module names", self.lora_targets
            )
        if isinstance(self.lora_targets, list):
            object.__setattr__(self, "lora_targets", tuple(self.lora_targets))
        if not isinstance(self.lora_targets, str):
            if not self.lora_targets or not all(isinstance(t, str) and t for t in self.lora_targets):
                raise InputError(
                    "workload.lora_targets",
                    "must be 'all_linear' or a non-empty list of module names",
                    self.lora_targets,
                )

    def _check_weights_for_kind(self) -> None:
        """Full training needs unquantized weights; QLoRA a quantized base."""
        if self.kind in ("full_finetune", "pretrain") and self.weights in QUANTIZED:
            raise InputError(
                "workload.weights",
                f"{self.kind} trains every weight and needs fp32, bf16, fp16 or fp8; "
                "to train on a quantized base use kind qlora",
                self.weights,
            )
        if self.kind == "qlora" and self.weights not in QUANTIZED:
            raise InputError(
                "workload.weights", "qlora needs a quantized base: nf4, int4 or int8", self.weights
            )

    def _check_quantization(self) -> None:
        """The quantization method against the weights it runs and the kind of work."""
        if self.quantization is None:
            return
        _choice("workload.quantization", self.quantization, QUANTIZATIONS)
        if self.weights in ("fp32", "bf16", "fp16") and self.quantization != "gguf":
            raise InputError(
                "workload.quantization",
                f"needs quantized weights (int4, int8, nf4, fp8 or a GGUF type); "
                f"the weights are {self.weights}",
                self.quantization,
            )
        allowed = QUANTIZATION_WEIGHTS.get(self.quantization)
        if allowed is not None and self.weights not in allowed:
            raise InputError(
                "workload.quantization",
                f"{self.quantization} runs {' or '.join(allowed)} weights, not {self.weights}",
                self.quantization,
            )
        if self.quantization == "gguf" and self.weights == "nf4":
            raise InputError(
                "workload.quantization",
                "gguf has no nf4 type; use a GGUF type or int4",
                self.quantization,
            )
        if self.kind in TRAINING_KINDS and self.quantization not in ("bnb", "hqq", "torchao", "fp8"):
            raise InputError(
                "workload.quantization",
                f"training on a quantized base uses bnb, hqq or torchao, not {self.quantization}",
                self.quantization,
            )

    def _check_layout_keys(self) -> None:
        """activation_recompute, global_batch_size, compute_precision and offload."""
        if self.activation_recompute is not None:
            _choice("workload.activation_recompute", self.activation_recompute, RECOMPUTE_CHOICES)
        _field(self, "workload", "global_batch_size")
        if self.compute_precision is not None:
            _choice("workload.compute_precision", self.compute_precision, COMPUTE_PRECISIONS)
        object.__setattr__(self, "offload", _offload(self.offload))
        training_only = {
            "activation_recompute": self.activation_recompute is not None,
            "global_batch_size": self.global_batch_size is not None,
            "compute_precision": self.compute_precision is not None,
            "offload": self.offload.any,
        }
        if self.kind == "inference":
            for name, given in training_only.items():
                if given:
                    raise InputError(
                        f"workload.{name}",
                        "is a training setting; for inference use gpu_layers to keep layers in host RAM",
                        getattr(self, name) if name != "offload" else "set",
                    )

    @property
    def recompute(self) -> str:
        """Activation recomputation in force: ``activation_recompute``, else ``full`` with
        gradient checkpointing, else ``none``."""
        if self.activation_recompute is not None:
            return self.activation_recompute
        return "full" if self.gradient_checkpointing else "none"

    @property
    def quantization_family(self) -> str | None:
        """The kernel family that runs the weights: as given, else the engine's default (None for 16/32 bit)."""
        if self.weights in ("fp32", "bf16", "fp16"):
            return None  # a 16/32-bit GGUF file runs the plain half-precision kernels
        if self.quantization is not None:
            own = record_of(self.engine, self.kind).format_kernels
            return own.get(self.quantization, self.quantization)
        return default_quantization(self.weights, self.engine, self.kind)

    @property
    def uses_cuda_graphs(self) -> bool:
        """Whether the decode step is captured in CUDA graphs: as given, else the engine's default."""
        if self.cuda_graphs is not None:
            return self.cuda_graphs
        return record_of(self.engine, self.kind).cuda_graphs

    def _check_serving_keys(self) -> None:
        """``workload.serving`` (a JSON object becomes a :class:`ServingSpec`) and the p90 lengths."""
        if self.serving is not None:
            if self.kind != "inference":
                raise InputError("workload.serving", "is for inference; set kind to inference", self.kind)
            object.__setattr__(self, "serving", ServingSpec.from_value(self.serving))
        if self.speculative is not None:
            if self.kind != "inference":
                raise InputError("workload.speculative", "is for inference; set kind to inference", self.kind)
            object.__setattr__(self, "speculative", SpeculativeSpec.from_value(self.speculative))
        for name, mean in (
            ("prompt_tokens_p90", self.prompt_tokens),
            ("output_tokens_p90", self.output_tokens),
        ):
            value = getattr(self, name)
            if value is None:
                continue
            _field(self, "workload", name)
            value = getattr(self, name)
            if value < mean:
                raise InputError(
                    f"workload.{name}", f"must be at least the mean ({mean:,}); the 90th percentile", value
                )

    @property
    def prompt_p90(self) -> int:
        """The 90th-percentile prompt length (the mean when no tail is given)."""
        return self.prompt_tokens_p90 or self.prompt_tokens

    @property
    def output_p90(self) -> int:
        """The 90th-percentile output length (the mean when no tail is given)."""
        return self.output_tokens_p90 or self.output_tokens

    def _check_local_keys(self) -> None:
        """The llama.cpp keys: GGUF weight types, kv_cache_dtype and gpu_layers."""
        if is_gguf_type(self.weights) and self.kind != "inference":
            raise InputError(
                "workload.weights",
                "GGUF types are llama.cpp inference formats; for training "
                "use bf16, fp16 or fp8 (qlora: nf4, int4 or int8)",
                self.weights,
            )
        if self.kv_cache_dtype is not None:
            _choice("workload.kv_cache_dtype", self.kv_cache_dtype, KV_CACHE_DTYPES)
            if self.kv_cache is not None:
                raise InputError(
                    "workload.kv_cache_dtype",
                    "give either kv_cache or kv_cache_dtype, not both",
                    self.kv_cache_dtype,
                )
            if self.kv_cache_dtype not in ("f32", "f16", "bf16") and not self.flash_attention:
                raise InputError(
                    "workload.kv_cache_dtype",
                    "a quantized V cache needs flash attention in "
                    "llama.cpp; set flash_attention to true or use f16",
                    self.kv_cache_dtype,
                )
        _field(self, "workload", "gpu_layers")
        if self.gpu_layers is not None:
            if self.kind != "inference":
                raise InputError(
                    "workload.gpu_layers", "partial offload is for inference only", self.gpu_layers
                )

    @property
    def is_gguf(self) -> bool:
        """Whether the weights are a llama.cpp GGUF type."""
        return is_gguf_type(self.weights)

    @property
    def fp4_checkpoint(self) -> bool:
        """Whether the weights are an FP4 checkpoint a serving engine loads as published
        (:func:`is_fp4_checkpoint`), not a llama.cpp GGUF."""
        return is_fp4_checkpoint(self.weights, self.engine, self.kind)

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
            return {"f32": "fp32", "f16": "fp16", "bf16": "bf16", "q8_0": "int8"}.get(
                self.kv_cache_dtype, "int4"
            )
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


#: Layout axes of :class:`Hardware`, each a whole number of GPUs (or stages) >= 1.
LAYOUT_AXES = (
    "tensor_parallel",
    "pipeline_parallel",
    "context_parallel",
    "expert_parallel",
    "expert_tensor_parallel",
    "virtual_pipeline_stages",
    "data_parallel_shard",
)
#: Largest GPU count a comparison searches (``hardware.gpu_count_max``).
MAX_GPU_COUNT = 16_384

#: Parts of the catalog (``GpuSpec.segment``) a comparison can be limited to.
SEGMENTS = ("data_centre", "local")


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
    # Which part of the catalog to compare when no GPU is chosen: "data_centre" (rented or bought
    # for a cluster), "local" (laptops and desktops: Apple silicon, GeForce, Radeon) or None for all.
    segment: str | None = None
    # The layout of a large job (docs/scenario.md, "Layouts"); None leaves the axis to the search
    # (or 1 when the scenario sets a parallelism or another axis).
    tensor_parallel: int | None = None
    pipeline_parallel: int | None = None
    context_parallel: int | None = None
    expert_parallel: int | None = None
    # Tensor parallelism inside the expert layers (Megatron's --expert-tensor-parallel-size; None: TP's).
    expert_tensor_parallel: int | None = None
    virtual_pipeline_stages: int | None = None
    # Hybrid sharding (HSDP, ZeRO over part of the data-parallel ranks): ZeRO or FSDP shards the
    # training state over groups of this many ranks of the DP x CP group and replicates it across
    # the groups (PyTorch FSDP's HYBRID_SHARD, torchtitan's data_parallel_shard_degree); None: the
    # whole group.
    data_parallel_shard: int | None = None
    sequence_parallel: bool | None = None
    # Whether an NVLink bridge joins pairs of the cards (PCIe cards that take one: RTX 3090, RTX
    # A6000, A40, A100 and H100 PCIe, H100 NVL); None or false: they talk over PCIe.
    nvlink_bridge: bool | None = None
    # Host RAM per node available to the job (GiB) and its bandwidth (GB/s; None: the catalog's default).
    host_memory_gib: float | None = None
    host_memory_bandwidth_gb_s: float | None = None
    # Largest GPU count the comparison tries when gpu_count is not set (whole nodes beyond one node).
    gpu_count_max: int | None = None

    def __post_init__(self) -> None:
        for name in (*LAYOUT_AXES, "host_memory_gib", "host_memory_bandwidth_gb_s", "gpu_count_max"):
            _field(self, "hardware", name)
        if self.sequence_parallel is not None and not isinstance(self.sequence_parallel, bool):
            raise InputError("hardware.sequence_parallel", "must be true or false", self.sequence_parallel)
        if self.nvlink_bridge is not None and not isinstance(self.nvlink_bridge, bool):
            raise InputError("hardware.nvlink_bridge", "must be true or false", self.nvlink_bridge)
        if self.segment is not None:
            _choice("hardware.segment", self.segment, SEGMENTS)
        _field(self, "hardware", "memory_gib")
        if self.gpu is not None and (not isinstance(self.gpu, str) or not self.gpu):
            raise InputError("hardware.gpu", "must be a catalog id", self.gpu)
        _field(self, "hardware", "gpu_count")
        if self.parallelism is not None:
            _choice("hardware.parallelism", self.parallelism, PARALLELISMS)
        _field(self, "hardware", "gpus_per_node")

    @property
    def layout_given(self) -> bool:
        """Whether the scenario fixes the layout (a parallelism or any layout axis)."""
        return self.parallelism is not None or any(getattr(self, a) is not None for a in LAYOUT_AXES)


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
        _field(self, "overhead", "cuda_context_gib")
        _field(self, "overhead", "fragmentation")

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
    sequences) and training (micro-batch per GPU), goes back to the default when that meaning changes;
    a service's targets (``serving``) are dropped."""
    if kind == workload.kind:
        return workload
    batch = workload.batch_size
    if (kind in TRAINING_KINDS) != workload.is_training:
        batch = DEFAULT_BATCH_SIZE
    weights = weights_for_kind(kind, workload.weights)
    if kind in TRAINING_KINDS:
        # A service is inference: training has no traffic targets, and layers in host RAM
        # (llama.cpp -ngl) are an inference setting.
        return replace(
            workload,
            kind=kind,
            weights=weights,
            batch_size=batch,
            serving=None,
            speculative=None,
            gpu_layers=None,
        )
    # The training-only keys mean nothing for inference.
    return replace(
        workload,
        kind=kind,
        weights=weights,
        batch_size=batch,
        serving=None,
        activation_recompute=None,
        global_batch_size=None,
        compute_precision=None,
        offload=Offload(),
    )
