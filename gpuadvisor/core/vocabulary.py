"""The closed vocabularies of the core, each one ``StrEnum``: scenario values (workload kinds,
precisions, optimizers, parallelisms, recomputation, offload targets) and the words the estimate
judges with (how a setup stands against a deadline, a budget or the planning horizon; what the
decision found).

Files keep the plain strings (a member is its value: ``WorkloadKind.LORA == "lora"``, and JSON
writes it as ``"lora"``); code compares with the members, and the scenario format's lists of
accepted values (:mod:`gpuadvisor.core.specs.workload`) and the window's lists are built from them,
so a value is spelled once. An engine's id is not here: the engine records
(:data:`gpuadvisor.core.specs.engines.RECORDS`) are that vocabulary.
"""

from __future__ import annotations

from enum import StrEnum


class WorkloadKind(StrEnum):
    """What the user wants to run (``workload.kind``)."""

    INFERENCE = "inference"
    LORA = "lora"
    QLORA = "qlora"
    FULL_FINETUNE = "full_finetune"
    PRETRAIN = "pretrain"

    @property
    def is_training(self) -> bool:
        return self is not WorkloadKind.INFERENCE


class Precision(StrEnum):
    """A number format of weights or the KV cache, without a llama.cpp tensor type (those are the
    GGUF types of :mod:`gpuadvisor.core.specs.quant_types`)."""

    FP32 = "fp32"
    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"
    INT8 = "int8"
    INT4 = "int4"
    NF4 = "nf4"


class Optimizer(StrEnum):
    ADAMW = "adamw"
    ADAMW_8BIT = "adamw_8bit"
    SGD = "sgd"
    ADAFACTOR = "adafactor"


class Parallelism(StrEnum):
    """How a setup splits the work over its GPUs (``hardware.parallelism``, ``Candidate.parallelism``)."""

    NONE = "none"
    DDP = "ddp"
    ZERO1 = "zero1"
    ZERO2 = "zero2"
    ZERO3 = "zero3"
    FSDP = "fsdp"
    TENSOR = "tensor"
    PIPELINE = "pipeline"


class Recompute(StrEnum):
    """Activation recomputation (Korthikanti et al. 2022): keep everything, recompute the attention
    core only (Megatron's selective), keep the outputs of every other matrix multiply and the
    attention kernel and recompute the rest (PyTorch's per-operator selective checkpointing,
    torchtitan's ``op``), or keep each layer's input and recompute the whole layer."""

    NONE = "none"
    SELECTIVE = "selective"
    OP = "op"
    FULL = "full"


class OffloadTarget(StrEnum):
    """Where offloaded optimizer states or parameters live (ZeRO-Offload, ZeRO-Infinity, FSDP)."""

    NONE = "none"
    CPU = "cpu"
    NVME = "nvme"


class TargetStatus(StrEnum):
    """A figure's range against a limit it must stay under, judged like a deadline: even the slow
    end of the 80% range is within it, only the expected value is, or not even that. A job's time
    against its deadline (``CostEstimate.deadline_status``) and a service's latencies against its
    targets (``ServingEstimate.status``)."""

    MEETS = "meets"
    LIKELY = "likely"
    AT_RISK = "at risk"


class BudgetStatus(StrEnum):
    """A job against its budget: even the expensive end of its cost range is within it, the expected
    cost is, or not even that."""

    WITHIN = "within"
    LIKELY = "likely"
    OVER = "over"


class HorizonStatus(StrEnum):
    """A job without a deadline against the planning horizon, judged as a deadline is."""

    WITHIN = "within"
    LIKELY = "likely"
    BEYOND = "beyond"


class DecisionStatus(StrEnum):
    """What the decision found: a setup that surely or likely meets the limits, none that meets
    them, or none that fits."""

    SURE = "sure"
    LIKELY = "likely"
    LIMITS_MISSED = "limits missed"
    NOTHING_FITS = "nothing fits"


#: Shardings that split the optimizer state over the data-parallel group (ZeRO-1 and up, FSDP).
OPTIMIZER_SHARDINGS = frozenset({Parallelism.ZERO1, Parallelism.ZERO2, Parallelism.ZERO3, Parallelism.FSDP})
#: Shardings that split the gradients too.
GRADIENT_SHARDINGS = frozenset({Parallelism.ZERO2, Parallelism.ZERO3, Parallelism.FSDP})
#: Shardings that split the weights too, gathering each layer while it runs (ZeRO-3, FSDP).
GATHERING_SHARDINGS = frozenset({Parallelism.ZERO3, Parallelism.FSDP})
