"""Per-GPU memory: weights, gradients, optimizer states, activations, KV cache, adapters, overhead.

Model states (Rajbhandari et al. 2020, ZeRO, section 3 and Figure 1). For ``T`` trainable
parameters in mixed precision with AdamW: 2 bytes of 16-bit weights, 2 bytes of gradients and
K = 12 bytes of optimizer state (fp32 master copy 4, first and second moments 4 + 4), i.e.
16 bytes per parameter. Over ``N_d`` data-parallel GPUs::

    DDP    (2 + 2 + K) T          ZeRO-1  (2 + 2) T + K T / N_d
    ZeRO-2 2 T + (2 + K) T / N_d  ZeRO-3 / FSDP  (2 + 2 + K) T / N_d  (+ gathered layers in flight)

8-bit AdamW keeps 2 bytes of moments (Dettmers et al. 2022, "8-bit Optimizers via Block-wise
Quantization"); SGD with momentum 4; Adafactor keeps factored row and column second moments
(Shazeer & Stern 2018). LoRA (Hu et al. 2021) trains ``rank x (in + out)`` parameters per
targeted projection; the frozen base has no gradient or optimizer state.

Activations (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
Models", section 4): the bytes each layer keeps for the backward pass, counted tensor by tensor
for a pre-norm block, per token::

    norms      RMSNorm keeps its input upcast to fp32 (4h), LayerNorm its input (a h); a
               trainable norm weight also keeps the normalized output (a h)
    attention  the projection input (a h), q, k, v (a (d_q + 2 d_kv)), the attention output
               (a d_q) and the o_proj input (a d_q); without FlashAttention (Dao et al. 2022) also
               the softmax (4 + a bytes per score, a s scores per token and head)
    MLP        the input (a h); gated: gate, activation, up and product (4 a i); plain: 2 a i

with ``a`` the activation bytes (2 for 16-bit). A frozen linear layer keeps no input (PyTorch
saves a matmul input only when its weight needs a gradient); bitsandbytes' 4-bit layers
(QLoRA) keep it anyway. Each LoRA-targeted projection keeps its input and dropout mask.
Gradient checkpointing keeps each layer's input (a h per token and layer) and recomputes one
layer at a time. The loss keeps 16-bit logits, their fp32 log-probabilities and the fp32
gradient: 10 bytes per vocabulary entry per token (encoders are assumed fine-tuned with a
small classification head).

Parallelism: tensor parallelism (Shoeybi et al. 2019, Megatron-LM) divides weights, gradients,
optimizer state and, with sequence parallelism (Korthikanti et al. 2022), activations by the
GPU count; KV heads are split when there are at least as many. Pipeline parallelism divides
the layers; the first stage of a 1F1B schedule keeps ``p`` micro-batches of ``L/p`` layers,
i.e. one micro-batch of the whole model (Narayanan et al. 2021). Mixture-of-experts layers fold
their own layout over a stage's ``TP x CP x DP`` GPUs (Liu et al. 2025, MoE parallel folding): a
GPU keeps ``1 / (EP x ETP)`` of the routed experts and ``1 / TP`` of the rest, and ZeRO shards the
experts' state over the expert data-parallel group ``TP x CP x DP / (EP x ETP)``, so a sharded
GPU holds ``1 / (TP x CP x DP)`` of the stage's whole state either way::

    experts, unsharded   E / (EP x ETP)         experts, ZeRO   E / (EP x ETP x EDP)

KV cache (inference): ``2 x layers x kv_heads x head_dim x bytes`` per token, grouped- and
multi-query aware, with sliding-window layers holding at most ``window`` tokens (Pope et al.
2022, "Efficiently Scaling Transformer Inference").

Two totals: the **tensor total** (what ``torch.cuda.max_memory_allocated`` reports) and the
**device total** (what ``nvidia-smi`` shows: the tensor total plus the CUDA context and the
caching allocator's fragmentation).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..errors import InputError
from ..specs.engines import record_of
from ..specs.models import ModelSpec, lora_parameters, resolve_lora_targets
from ..specs.quant_types import gguf_weight_bytes
from ..specs.workload import RuntimeOverhead, Workload, bytes_per_element, weight_bytes_per_param
from ..units import GIB
from ..vocabulary import GATHERING_SHARDINGS, GRADIENT_SHARDINGS, OPTIMIZER_SHARDINGS
from .layout import Layout, from_parallelism
from .recompute import op_policy

COMPONENTS = ("weights", "gradients", "optimizer", "activations", "kv_cache", "adapters", "overhead")
DATA_PARALLEL = ("ddp", "zero1", "zero2", "zero3", "fsdp")
INFERENCE_PARALLELISMS = ("ddp", "tensor", "pipeline")

#: Model families whose checkpoints already hold q, k and v as one projection (MPT ``Wqkv``, Falcon
#: ``query_key_value``, Phi-3/Phi-4 ``qkv_proj``, GPT-2/StarCoder ``c_attn``): nothing is copied.
FUSED_QKV_FAMILIES = ("MPT", "Falcon", "Phi-3", "Phi-4", "GPT-2", "StarCoder")


def activation_framework(workload: Workload) -> str:
    """``"fused"`` (Megatron-Core with Transformer Engine) or ``"eager"`` (PyTorch modules): the
    engine's :attr:`~gpuadvisor.core.specs.engines.EngineProfile.fused_activations`."""
    return "fused" if record_of(workload.engine, workload.kind).fused_activations else "eager"


def fp8_gemms(workload: Workload) -> bool:
    """Whether training runs its GEMMs in FP8: ``compute_precision`` fp8 or mxfp8, or FP8 weights
    without a stated compute precision (the memory model is the same on every GPU: one without FP8
    tensor cores falls back in the speed model only)."""
    if not workload.is_training:
        return False
    cp = workload.compute_precision
    return cp in ("fp8", "mxfp8") or (cp is None and workload.weights == "fp8")


def kbit_prepared(workload: Workload) -> bool:
    """Whether a QLoRA run's base went through PEFT's ``prepare_model_for_kbit_training`` (its
    16-bit weights cast to fp32): the workload's ``kbit_preparation``, else the engine's habit
    (:attr:`~gpuadvisor.core.specs.engines.EngineProfile.kbit_preparation`)."""
    if workload.kind != "qlora":
        return False
    if workload.kbit_preparation is not None:
        return workload.kbit_preparation
    return record_of(workload.engine, workload.kind).kbit_preparation


def expert_divisor(layout: Layout) -> float:
    """How many ways the routed experts are split beyond the ``TP`` that splits a dense block:
    ``EP x ETP / TP`` (MoE parallel folding), which is EP when the experts' TP is the layout's."""
    if layout.expert_tp == layout.tp:
        return layout.ep
    return layout.ep * layout.expert_tp / layout.tp


#: The projections that read a norm's output, by the norm (the attention's and the MLP's).
NORM_FED = {
    "q_proj": "attention",
    "k_proj": "attention",
    "v_proj": "attention",
    "gate_proj": "mlp",
    "up_proj": "mlp",
}

#: What a LoRA adapter reads in a fused (Megatron-Core) block, by its projection: a norm's output
#: (:data:`NORM_FED`), the attention output or the activation output. Adapters reading the same
#: tensor keep it once.
FUSED_ADAPTER_INPUT = {**NORM_FED, "o_proj": "attention_output", "down_proj": "mlp_activation"}

_OPTIMIZER_STATE_BYTES = {"adamw": 8.0, "adamw_8bit": 2.0, "sgd": 4.0, "adafactor": 0.0}


@dataclass(frozen=True, slots=True)
class MemoryBreakdown:
    """Per-GPU memory in bytes, one field per component (see the module docstring)."""

    weights: float
    gradients: float
    optimizer: float
    activations: float
    kv_cache: float
    adapters: float
    overhead: float
    logits: float = 0.0  # part of ``activations``: the loss buffer, reported for transparency
    gathered: float = 0.0  # part of ``weights``: ZeRO-3/FSDP layers gathered in flight
    host: float = 0.0  # not on the GPU: layers kept in host RAM (gpu_layers), offloaded training state
    stage: str = ""  # with pipeline parallelism, the stage these figures are for ("first" or "last")
    offloaded: float = 0.0  # training state moved off the GPU, to host RAM or NVMe (ZeRO-Offload/Infinity)
    accumulating: float = 0.0  # part of ``gradients``: a sharded pipeline stage's unsharded fp32 gradients

    @property
    def model_states(self) -> float:
        """Sharded weights, gradients and optimizer state (the ZeRO paper's "model states")."""
        return (
            self.weights - self.gathered + self.gradients - self.accumulating + self.optimizer + self.adapters
        )

    @property
    def tensors_total(self) -> float:
        """Bytes of live tensors at the peak (``torch.cuda.max_memory_allocated``)."""
        return (
            self.weights + self.gradients + self.optimizer + self.activations + self.kv_cache + self.adapters
        )

    @property
    def device_total(self) -> float:
        """Bytes the card must hold (``nvidia-smi``): tensors plus context and fragmentation."""
        return self.tensors_total + self.overhead

    def gib(self) -> dict[str, float]:
        """Every component and both totals in GiB."""
        out = {name: getattr(self, name) / GIB for name in COMPONENTS}
        out["tensors_total"] = self.tensors_total / GIB
        out["device_total"] = self.device_total / GIB
        return out


def applicable_parallelisms(
    model: ModelSpec, workload: Workload, gpu_count: int, gpus_per_node: int = 8
) -> tuple[str, ...]:
    """Parallelisms that make sense for ``gpu_count`` GPUs ("none" for one GPU)."""
    if gpu_count == 1:
        return ("none",)
    options: list[str] = ["ddp"]
    if workload.is_training:
        options += ["zero1", "zero2", "zero3", "fsdp"]
    if model.num_attention_heads % gpu_count == 0 and gpu_count <= gpus_per_node:
        options.append("tensor")
    if gpu_count <= model.num_layers:
        options.append("pipeline")
    return tuple(options)


def check_parallelism(model: ModelSpec, workload: Workload, gpu_count: int, parallelism: str) -> str:
    """Validate a user-chosen parallelism for ``gpu_count`` GPUs; returns the normalized name."""
    if gpu_count == 1:
        return "none"
    if not workload.is_training and parallelism not in INFERENCE_PARALLELISMS:
        raise InputError(
            "hardware.parallelism",
            "ZeRO and FSDP shard training state; for inference use ddp (replicas), tensor or pipeline",
            parallelism,
        )
    if parallelism == "tensor" and model.num_attention_heads % gpu_count:
        raise InputError(
            "hardware.parallelism",
            f"tensor parallelism needs the {model.num_attention_heads} attention heads to divide "
            f"evenly over {gpu_count} GPUs",
            parallelism,
        )
    if parallelism == "pipeline" and gpu_count > model.num_layers:
        raise InputError(
            "hardware.parallelism",
            f"pipeline parallelism needs at least one of the {model.num_layers} layers per GPU",
            parallelism,
        )
    return parallelism


class StageHeld(NamedTuple):
    """What a pipeline stage sharded by ZeRO-3/FSDP holds unsharded through a step (bytes per GPU)."""

    gathered: float  # the stage's 16-bit weights, gathered once and kept
    gradients: float  # the stage's gradients, accumulated unsharded in fp32


def pipeline_sharded_stage(stage_grad_bytes: float, unsharded_weight_bytes: float) -> StageHeld:
    """FSDP under a pipeline schedule (PyTorch's ``torch.distributed.pipelining`` with FSDP2, as
    torchtitan runs it): the stage's layers are gathered once and not resharded after their forward
    pass (``reshard_after_forward=False``: no gather per micro-batch), and the backward passes of all
    but the last micro-batch skip the reduce-scatter (``set_requires_gradient_sync(False)``), so the
    stage's gradients accumulate unsharded, upcast to the fp32 reduce dtype (FSDP2's
    ``to_accumulated_grad_if_needed``), until the last micro-batch reduces them. Per GPU that is the
    stage's 16-bit weights and 4 bytes per trainable parameter of the stage (``stage_grad_bytes``
    holds 2 per 16-bit gradient), beside the sharded state. (DeepSpeed refuses ZeRO-2/3 with its
    pipeline engine; Megatron shards no weights.)"""
    return StageHeld(max(unsharded_weight_bytes, 0.0), 2.0 * stage_grad_bytes)


class MemoryModel:
    """Precomputes what depends only on the model and workload; :meth:`breakdown` then prices a
    GPU count, parallelism, batch and context in a few microseconds."""

    def __init__(
        self,
        model: ModelSpec,
        workload: Workload,
        overhead: RuntimeOverhead | None = None,
        prefill_chunk_tokens: int | None = None,
    ) -> None:
        self.model, self.workload = model, workload
        self._cache: dict[str, object] = {}
        self.overhead = overhead or RuntimeOverhead()
        self.prefill_chunk_tokens = prefill_chunk_tokens
        m, w = model, workload
        self.layers = m.num_layers
        self.training = w.is_training
        shapes = m.linear_shapes()
        self._init_weights(shapes)
        self._init_trainable(shapes)
        self._init_activations(shapes)
        self._init_inference()

    def _init_weights(self, shapes: dict[str, tuple[int, int]]) -> None:
        """The weights' bytes by part (blocks, embedding, head, norms) and the dequantization buffer."""
        m, w = self.model, self.workload
        counts, h = m.counts, m.hidden_size
        # --- weights ----------------------------------------------------------------------
        family = w.quantization_family
        quantized = family is not None
        if w.is_gguf:
            # llama.cpp's per-tensor recipe (quant_types.py): some tensors get more bits. A serving
            # engine reads an FP4 microscaled checkpoint as published instead (the rest in BF16).
            checkpoint = w.fp4_checkpoint
            gguf = gguf_weight_bytes(m, w.weights, checkpoint)
            # A model read from a .gguf file: its exact bytes, split like the recipe splits them.
            scale = m.file_weight_bytes / gguf.total if m.file_weight_bytes and not checkpoint else 1.0
            self.block_weight_bytes, self.embedding_bytes = gguf.blocks * scale, gguf.embedding * scale
            self.head_bytes, self.norm_bytes = gguf.lm_head * scale, gguf.norms_and_other * scale
            self.block_bytes_per_weight = self.block_weight_bytes / max(counts.blocks, 1)
        else:
            block_bytes = weight_bytes_per_param(w.weights, h, w.double_quant, w.quantization_family)
            if w.weights == "fp8" and w.is_training and w.trains_base:
                block_bytes = 3.0  # bf16 weights plus the cached fp8 copy (Transformer Engine)
            elif w.weights == "fp8" and w.is_training:
                # A frozen base held in FP8 (NeMo's fp8_params, Transformer Engine's fp8_model_init):
                # its FP8 data alone, as a quantized base is. On Hopper and Ada, Transformer Engine
                # also keeps a transposed FP8 copy for the backward's data-gradient GEMM, which
                # Blackwell's non-TN FP8 GEMMs do not need (tensor/storage/float8_tensor_storage.py,
                # commit d0067d0): like the FP8 cache below, the figure leaves that byte out.
                block_bytes = 1.0
            elif w.is_training and w.compute_precision in ("fp8", "mxfp8") and not quantized:
                # FP8 GEMMs on 16-bit weights: Transformer Engine caches the fp8 copy of each weight
                # (MXFP8 adds one 8-bit scale per 32 values).
                block_bytes += 1.0 + (1.0 / 32 if w.compute_precision == "mxfp8" else 0.0)
            other_bytes = 2.0 if quantized else bytes_per_element(w.weights)
            if kbit_prepared(w):
                other_bytes = 4.0  # PEFT's k-bit preparation: the unquantized weights in fp32
            self.block_bytes_per_weight = block_bytes
            self.block_weight_bytes = counts.blocks * block_bytes
            self.embedding_bytes = counts.embedding * other_bytes
            self.head_bytes = counts.lm_head * other_bytes
            self.norm_bytes = counts.norms_and_other * other_bytes
        self.weight_bytes = self.block_weight_bytes + self.embedding_bytes + self.head_bytes + self.norm_bytes
        # Dequantized copy of the largest projection while it runs (bitsandbytes, weight-only int4).
        largest = max(a_ * b_ for a_, b_ in shapes.values())
        # (Marlin, AWQ, GGUF, torchao and FP8 kernels dequantize in registers and keep no copy.)
        self.dequant_buffer = largest * 2.0 if family in ("bnb", "gptq", "exllama", "hqq") else 0.0

    def _init_trainable(self, shapes: dict[str, tuple[int, int]]) -> None:
        """Gradients, optimizer state and LoRA adapters: what training keeps besides the weights."""
        m, w = self.model, self.workload
        counts = m.counts
        # --- trainable state --------------------------------------------------------------
        # Pure bf16 training (torchtune-style): AdamW moments in bf16 and no fp32 master copy.
        bf16_states = w.optimizer_state_dtype == "bf16"
        master = 4.0 if (w.master_weights and w.weights != "fp32" and not bf16_states) else 0.0
        grad_bytes = 4.0 if w.weights == "fp32" else 2.0
        states = _OPTIMIZER_STATE_BYTES[w.optimizer]
        if bf16_states and w.optimizer in ("adamw", "sgd"):
            states /= 2.0
        factored_bytes = 2.0 if bf16_states else 4.0
        if w.trains_base:
            trainable = counts.total
            self.grad_bytes = trainable * grad_bytes
            self.optim_bytes = trainable * (master + states)
            if w.optimizer == "adafactor":
                factored = (
                    sum((a_ + b_) * m.module_copies(n) for n, (a_, b_) in shapes.items()) * m.num_layers
                )
                self.optim_bytes += factored_bytes * (factored + counts.total - counts.blocks)
            self.adapter_params = 0
            self.adapter_bytes = 0.0
        elif w.uses_adapters:
            self.targets = resolve_lora_targets(m, w.lora_targets)
            self.adapter_params = lora_parameters(m, w.lora_rank, self.targets)
            adapter_dtype = 4.0 if w.weights == "fp32" else 2.0
            self.adapter_bytes = self.adapter_params * adapter_dtype
            self.grad_bytes = self.adapter_params * adapter_dtype
            # Adapters are small: AdamW moments in fp32, no separate master copy (QLoRA reference setup).
            adapter_states = states if w.optimizer != "adafactor" else factored_bytes
            self.optim_bytes = self.adapter_params * adapter_states
        else:
            self.adapter_params = 0
            self.adapter_bytes = self.grad_bytes = self.optim_bytes = 0.0
        if not w.uses_adapters:
            self.targets = ()

    def _init_activations(self, shapes: dict[str, tuple[int, int]]) -> None:
        """Training activations per token and layer, and what expert parallelism shards."""
        m, w = self.model, self.workload
        counts, a = m.counts, w.activation_bytes
        self.activation_framework = activation_framework(w)
        per_token, replicated = self._per_token_layer(shapes, a)
        # PEFT's k-bit preparation leaves the embeddings and norms in fp32, so the hidden states and
        # the norms' outputs (the inputs of q, k, v, gate and up) are fp32 where the weights compute
        # as stored (one GPU, DDP); under ZeRO or FSDP the run's mixed precision computes in 16 bits
        # (DeepSpeed's bf16 mode casts the module, FSDP's param_dtype gathers it so) and the
        # activations stay 16-bit (the figures above). The fp32 weights stay either way.
        self.prepared_per_token_layer = self._per_token_layer(shapes, 4.0) if kbit_prepared(w) else None
        self.act_per_token_layer = per_token
        # Norm inputs/outputs and residual dropout masks: what tensor parallelism leaves whole on
        # every rank unless sequence parallelism splits it (Korthikanti et al. 2022, eq. 2 vs 3).
        self.act_replicated_per_token_layer = replicated
        # Share of the block weights in the routed experts (expert parallelism shards them; shared
        # experts, routers and the leading dense layers' MLPs stay whole on every rank).
        self.expert_share = counts.routed_experts / max(counts.blocks, 1) if m.is_moe else 0.0
        # Share of the LoRA adapters on the routed experts' projections (split over EP with them).
        self.adapter_expert_share = 0.0
        if m.is_moe and self.adapter_params:
            expert_targets = [t for t in self.targets if t in ("gate_proj", "up_proj", "down_proj")]
            on_experts = lora_parameters(m, w.lora_rank, tuple(expert_targets)) if expert_targets else 0
            self.adapter_expert_share = on_experts / self.adapter_params

    def _per_token_layer(self, shapes: dict[str, tuple[int, int]], f: float) -> tuple[float, float]:
        """(bytes kept per token and layer, the part tensor parallelism leaves whole) with the hidden
        states and the norms' outputs ``f`` bytes an element (16-bit, or fp32 after PEFT's k-bit
        preparation)."""
        m, w = self.model, self.workload
        h, a = m.hidden_size, w.activation_bytes
        d_q, d_kv, i, k_exp = m.q_dim, m.kv_dim, m.expert_intermediate_size, m.experts_per_token
        rms = m.norm == "rmsnorm"
        dropout = m.position_embedding == "learned"  # GPT-2/BERT-era models train with dropout 0.1
        keep_inputs = w.trains_base or w.kind == "qlora"
        fused = self.activation_framework == "fused"
        if fused:
            # Megatron-Core + Transformer Engine: the norm is fused into the next linear, which keeps
            # the norm input (a h, for the norm's backward) and, when its weight trains, its output
            # (a h, the input of the weight's gradient); fused RoPE and flash attention keep q, k, v
            # and the attention output; the activation function keeps fc1's output (gate and up, or
            # GELU's input) and fc2 keeps its input when its weight trains. A frozen base keeps no
            # GEMM input for a weight gradient: Transformer Engine saves a linear's input only when
            # ``weight.requires_grad``, and LayerNormLinear / LayerNormMLP free the norm output and
            # the activation output of frozen weights (module/linear.py ``backward_needs_input``,
            # layernorm_linear.py and layernorm_mlp.py, commit d0067d0). LoRA's adapters keep what
            # they read (below).
            # With FP8 GEMMs a linear keeps its input as the FP8 tensor it multiplied, 1 byte an
            # element (linear.py keeps the quantized input, its column-wise data), and the output
            # projection quantizes the attention output into an FP8 copy of its own.
            g = 1.0 if fp8_gemms(w) else a
            norm_keep = a * h + g * h if keep_inputs else a * h
            per_token = m.norms_per_layer * norm_keep
            replicated = per_token
            per_token += a * (d_q + 2 * d_kv) + a * d_q
            if keep_inputs and g < a:
                per_token += g * d_q
            fc1_out = (2.0 if m.gated_mlp else 1.0) * a * i
            per_token += k_exp * (fc1_out + (g * i if keep_inputs else 0.0))
        else:
            # Eager PyTorch modules (Hugging Face, LitGPT, llm-foundry): an RMSNorm upcasts its input
            # to fp32 (4h, kept by pow and mul); a trainable norm weight also keeps the normalized
            # 16-bit tensor (a h); the next linear keeps the norm's output (a h).
            norm_keep = 4.0 * h if rms and a < 4 else f * h
            if w.trains_base:
                norm_keep += a * h  # normalized output, for the norm weight's gradient
            per_token = m.norms_per_layer * norm_keep
            replicated = per_token
            per_token += a * (d_q + 2 * d_kv) + a * d_q  # q, k, v (after RoPE) and the attention output
            if keep_inputs:
                per_token += a * h + a * d_q + a * h  # attention input, o_proj input (a copy), MLP input
            mlp_gated = (4.0 if keep_inputs else 3.0) * a * i  # gate, SiLU output, up, product
            mlp_plain = (2.0 if keep_inputs else 1.0) * a * i
            per_token += k_exp * (mlp_gated if m.gated_mlp else mlp_plain)
        if dropout:
            per_token += 2 * h  # two residual dropout masks (1 byte each)
            replicated += 2 * h
        fp32_inputs: set[str] = set()  # the fp32 norm outputs an adapter keeps (each counted once)
        shared_inputs: set[str] = set()  # fused: the inputs adapters share, each kept once
        one_adapter = record_of(w.engine, w.kind).fused_projections  # one adapter per fused projection
        for target in self.targets:
            fan_in = shapes[target][0]
            copies = k_exp if target in ("gate_proj", "up_proj", "down_proj") else 1
            if fused and not keep_inputs:
                # Megatron-Core hands the adapters of a fused projection the tensor its base reads
                # (the norm's output for q, k, v and for gate, up; the attention output, which the
                # attention already keeps, for o; fc2's input for down): one tensor, kept once. An
                # engine that fuses q, k, v (and gate, up) into one projection adapts it with one
                # adapter, whose dropout masks and copies its input once.
                source = FUSED_ADAPTER_INPUT.get(target, target)
                shared = source in shared_inputs
                extra = 0.0 if shared or source == "attention_output" else a * fan_in
                shared_inputs.add(source)
                if w.lora_dropout and not (shared and one_adapter):
                    extra += (1.0 + a) * fan_in  # the adapter's dropout mask and dropped copy
                per_token += copies * extra
                continue
            # The input's bytes an adapter reads: fp32 after a prepared base's norms (q, k, v, gate
            # and up read a norm's output; the 4-bit matmul keeps its own 16-bit copy of it).
            from_norm = f > a and target in NORM_FED
            width = f if from_norm else a
            extra = 0.0 if keep_inputs else a * fan_in  # frozen layers keep no input: LoRA's A needs it
            if w.lora_dropout:
                extra += (1.0 + width) * fan_in  # dropout mask and the dropped copy the adapter reads
            elif from_norm and NORM_FED[target] not in fp32_inputs:
                fp32_inputs.add(NORM_FED[target])
                extra += f * fan_in  # LoRA's A keeps the fp32 norm output itself
            per_token += copies * extra
        return per_token, replicated

    def _init_inference(self) -> None:
        """Attention scores, the loss's logits, the KV cache per token and the inference transients."""
        m, w = self.model, self.workload
        h, a = m.hidden_size, w.activation_bytes
        d_q, d_kv, i, k_exp = m.q_dim, m.kv_dim, m.expert_intermediate_size, m.experts_per_token
        dropout = m.position_embedding == "learned"  # GPT-2/BERT-era models train with dropout 0.1
        self._layouts: dict[tuple[int, str], Layout] = {}
        self._stages: dict[Layout, str] = {}
        # Eager attention keeps the softmax: fp32 output plus the 16-bit copy (and dropout mask/output).
        score_bytes = (4.0 + (a if a < 4 else 0.0)) + ((1.0 + a) if dropout else 0.0)
        self.score_bytes = 0.0 if w.flash_attention else score_bytes * m.num_attention_heads
        # A checkpointed block keeps its input, the hidden state (fp32 after PEFT's k-bit preparation
        # where the weights compute as stored: see ``prepared_per_token_layer``).
        self.checkpoint_per_token_layer = a * h
        # Per-operator selective checkpointing (recompute.py): the block input, every other matmul
        # output and the attention output.
        self.op_kept = op_policy(m, a)
        # Loss: 16-bit logits, fp32 log-probabilities and their fp32 gradient (eager); Megatron's fused
        # cross entropy keeps the 16-bit logits and one fp32 softmax.
        loss_bytes = (a + 4.0) if self.activation_framework == "fused" else (a + 4.0 + 4.0)
        engine = record_of(w.engine, w.kind).for_workload(w)
        if engine.chunked_loss:
            # torchtune's CEWithChunkedOutputLoss: 16-bit logits, upcast to fp32 one of 8 chunks at a time.
            loss_bytes = a + 8.0 / 8

        self.logit_bytes_per_token = 0.0 if m.kind == "encoder" else m.vocab_size * loss_bytes

        # --- inference ----------------------------------------------------------------------
        self.full_prompt_logits = engine.full_prompt_logits and not w.is_training
        self.logit_bytes_inference = (a + 4.0) if self.full_prompt_logits else 4.0
        # KV cache per token and layer: the model's elements (latent attention stores its compressed
        # latent) times the element size (llama.cpp's cache types, or the KV precision).
        kv_elem = w.kv_bytes_per_element
        self.kv_bytes_per_token_layer = m.kv_elements_per_token_layer * kv_elem if m.has_kv_cache else 0.0
        self.inference_transient_per_token = a * (2 * h + d_q + 2 * d_kv + 3 * i * k_exp)
        # Load peak of engines that fuse q/k/v into a copy (EngineProfile.qkv_copy_on_load): the run's peak is
        # the larger of it and the inference peak.
        self.qkv_copy_bytes = 0.0
        if not self.training and engine.qkv_copy_on_load and m.family not in FUSED_QKV_FAMILIES:
            shapes = m.attention_shapes()
            qkv = sum(a_ * b_ for name, (a_, b_) in shapes.items() if name in ("q_proj", "k_proj", "v_proj"))
            self.qkv_copy_bytes = self.layers * qkv * self.block_bytes_per_weight

    def cached(self, name: str, compute: Callable[[], Any]) -> Any:
        """A value derived from the model and workload alone, computed once (speed model helpers)."""
        try:
            return self._cache[name]
        except KeyError:
            value = self._cache[name] = compute()
            return value

    def cached_for(self, name: str, key: object, compute: Callable[[], Any]) -> Any:
        """A value derived from the model, the workload and ``key`` (compared by identity), kept for
        the last ``key`` asked only: a fit tries many constants objects, each on many rows."""
        got = self._cache.get(name)
        if isinstance(got, tuple) and got[0] is key:
            return got[1]
        value = compute()
        self._cache[name] = (key, value)  # one assignment: a reader sees the old pair or the new
        return value

    # ------------------------------------------------------------------------------------
    def kv_tokens_per_layer(self, context: int) -> float:
        """Average tokens held per layer, with sliding-window layers capped at the window."""
        return self.model.attended_tokens(context)

    def layout_for(self, gpu_count: int, parallelism: str) -> Layout:
        """The :class:`Layout` of a one-word setup (cached: the views ask for it per candidate)."""
        key = (max(1, gpu_count), parallelism)
        found = self._layouts.get(key)
        if found is None:
            found = self._layouts[key] = from_parallelism(self.workload, key[0], parallelism)
        return found

    def micro_batches(self, layout: Layout, batch_size: int | None = None) -> int:
        """Micro-batches per optimizer step and pipeline: ``global_batch_size / (micro-batch x DP)``,
        else 4 per pipeline stage with pipeline parallelism and 1 without."""
        b = self.workload.batch_size if batch_size is None else batch_size
        gbs = self.workload.global_batch_size
        if gbs is None:
            return 4 * layout.pp if layout.pp > 1 else 1
        return max(1, math.ceil(gbs / (b * layout.dp)))

    def breakdown(
        self,
        gpu_count: int = 1,
        parallelism: str = "none",
        batch_size: int | None = None,
        context: int | None = None,
        layout: Layout | None = None,
    ) -> MemoryBreakdown:
        """Per-GPU memory for ``gpu_count`` GPUs combined by ``parallelism`` (or laid out by ``layout``).

        ``batch_size`` defaults to the workload's; in inference it is the total number of
        concurrent sequences (split over replicas with ``ddp``). ``context`` overrides the
        sequence length (training) or the prompt length plus output (inference). With pipeline
        parallelism the figures are those of the stage that is fuller at the scenario's own batch
        and context (:attr:`MemoryBreakdown.stage`).
        """
        if layout is None:
            layout = self.layout_for(gpu_count, parallelism)
        if layout.pp > 1 and self.training:
            # The fuller stage at the scenario's own batch and context; what-if curves follow that
            # stage, so every component grows with the batch and the context.
            stage = self._stages.get(layout)
            if stage is None:
                first = self._breakdown(layout, None, None, "first")
                last = self._breakdown(layout, None, None, "last")
                stage = self._stages[layout] = "first" if first.device_total >= last.device_total else "last"
            return self._breakdown(layout, batch_size, context, stage)
        return self._breakdown(layout, batch_size, context, "")

    def stage_breakdown(self, layout: Layout, stage: str) -> MemoryBreakdown:
        """Per-GPU memory of one pipeline stage of a training layout: ``"first"`` (with the
        embedding) or ``"last"`` (with the head), at the workload's batch and context."""
        if stage not in ("first", "last"):
            raise InputError("stage", "must be first or last", stage)
        return self._breakdown(layout, None, None, stage)

    def _breakdown(
        self, layout: Layout, batch_size: int | None, context: int | None, stage: str
    ) -> MemoryBreakdown:
        w = self.workload
        b = w.batch_size if batch_size is None else batch_size
        if context is None:
            s = w.context_tokens
            prompt = w.prompt_tokens
        else:
            s = context
            prompt = max(1, context - w.output_tokens)
        t, p = layout.tp, layout.pp
        sharding = layout.sharding
        L = self.layers
        # Experts are sharded over expert parallelism and expert tensor parallelism (EP x ETP), the
        # rest of a block over TP: the block share one GPU holds, relative to 1 / TP.
        split = expert_divisor(layout)
        block_mult = 1.0 - self.expert_share + self.expert_share / split if split != 1 else 1.0

        # Model-parallel share of the weights held by one GPU, and of the trainable state: ``local``
        # with the routed experts split over EP x ETP (what a GPU keeps unsharded), ``whole`` without
        # (what ZeRO divides: dense state over TP and then the DP x CP group, the experts over EP x ETP
        # and then the expert data-parallel group of TP x CP x DP / (EP x ETP) GPUs, which is again
        # 1 / (TP x DP x CP) of the stage's whole).
        stage_layers = math.ceil(L / p)
        block_share, weights, whole_weights, share_local, share_whole = self._weight_shares(
            layout, stage, stage_layers, block_mult
        )
        if self.workload.uses_adapters:  # LoRA adapters live only in the blocks
            share_whole = block_share / t
            ep_mult = 1.0 - self.adapter_expert_share + self.adapter_expert_share / split
            share_local = share_whole * ep_mult
        # Context-parallel ranks hold the same weights, so ZeRO/FSDP shards over DP x CP (Megatron's
        # data-parallel-with-context group; torchtitan's dp_shard x cp mesh), never over TP or PP;
        # with hybrid sharding (HSDP) over a shard group of it only, each group holding a copy.
        d = layout.shard_ways
        zero = sharding in OPTIMIZER_SHARDINGS
        zero_grads = sharding in GRADIENT_SHARDINGS
        optim = self.optim_bytes * (share_whole if zero else share_local)
        grads = self.grad_bytes * (share_whole if zero_grads else share_local)
        adapters = self.adapter_bytes * share_local
        if zero:
            optim /= d
        if zero_grads:
            grads /= d
        # Layers gathered in flight: the one computing, the one prefetched, one reducing.
        layer = self.block_weight_bytes * block_mult / L / t
        accumulating = 0.0
        if sharding in GATHERING_SHARDINGS:
            full = weights
            weights = whole_weights / d
            adapters = self.adapter_bytes * share_whole / d
            if self.training and p > 1:
                held = pipeline_sharded_stage(self.grad_bytes * share_local, full - weights)
                gathered, accumulating = held.gathered, held.gradients
                grads += accumulating
            else:
                gathered = min(3 * layer, max(full - weights, 0.0))
            weights += gathered
        else:
            gathered = 0.0

        host = offloaded = 0.0
        if self.training:
            act, logits = self._training_activations(layout, b, s, stage, stage_layers)
            kv = 0.0
            off = w.offload
            if off.any:
                optim, grads, weights, gathered, host, offloaded = self._offloaded(
                    optim, grads, weights, gathered, layer, stage_layers, accumulating
                )
        else:
            act, kv, logits, weights, host = self._inference_memory(
                layout, b, s, prompt, d, stage_layers, weights
            )
        tensors = weights + grads + optim + act + kv + adapters
        overhead = (
            self.overhead.cuda_context_gib * GIB + self.overhead.fragmentation_for(self.training) * tensors
        )
        return MemoryBreakdown(
            weights=weights,
            gradients=grads,
            optimizer=optim,
            activations=act,
            kv_cache=kv,
            adapters=adapters,
            overhead=overhead,
            logits=logits,
            gathered=gathered,
            accumulating=accumulating,
            host=host,
            offloaded=offloaded,
            stage=stage,
        )

    def _weight_shares(
        self, layout: Layout, stage: str, stage_layers: int, block_mult: float
    ) -> tuple[float, float, float, float, float]:
        """(share of the blocks on one pipeline stage, weight bytes one GPU holds, the same without
        expert parallelism, the share of the trainable state one GPU keeps unsharded, the share ZeRO
        divides): see :meth:`_breakdown`."""
        w = self.workload
        t, p = layout.tp, layout.pp
        L = self.layers
        c = self.model.counts
        if p > 1:
            block_share = stage_layers / L
            if stage == "first":
                edge, edge_params = self.embedding_bytes, c.embedding
            elif stage == "last":  # the head (a copy of the embedding when they are tied)
                edge = self.head_bytes or self.embedding_bytes
                edge_params = c.lm_head or c.embedding
            else:  # inference: the larger end
                edge = max(self.embedding_bytes, self.head_bytes or self.embedding_bytes)
                edge_params = max(c.embedding, c.lm_head or c.embedding)
            weights = (self.block_weight_bytes * block_share * block_mult + edge) / t
            weights += self.norm_bytes * block_share
            whole_weights = (self.block_weight_bytes * block_share + edge) / t + self.norm_bytes * block_share
            share_local = (
                (c.blocks * block_share * block_mult + edge_params) / t + c.norms_and_other * block_share
            ) / c.total
            share_whole = (
                (c.blocks * block_share + edge_params) / t + c.norms_and_other * block_share
            ) / c.total
            if not self.training and record_of(w.engine, w.kind).balanced_pipeline:
                # accelerate's device_map="auto" fills the GPUs to balanced byte counts, whole layers
                # at a time, so the GPU with the embedding holds fewer layers than the others.
                total = self.block_weight_bytes + self.embedding_bytes + self.head_bytes + self.norm_bytes
                weights = min(weights, (total / p + self.block_weight_bytes / L) / t)
        else:
            block_share = 1.0
            weights = (
                self.block_weight_bytes * block_mult + self.embedding_bytes + self.head_bytes
            ) / t + self.norm_bytes
            whole_weights = (
                self.block_weight_bytes + self.embedding_bytes + self.head_bytes
            ) / t + self.norm_bytes
            share_whole = 1.0 / t
            share_local = (c.total - c.blocks * (1.0 - block_mult)) / c.total / t
        return block_share, weights, whole_weights, share_local, share_whole

    def _training_activations(
        self, layout: Layout, b: int, s: int, stage: str, stage_layers: int
    ) -> tuple[float, float]:
        """(activation bytes, logit bytes) one GPU keeps for a training step of ``layout``."""
        t, p, cp = layout.tp, layout.pp, layout.cp
        L = self.layers
        tokens = b * s / cp  # context parallelism splits every sequence
        per_tok = self.act_per_token_layer
        rep = self.act_replicated_per_token_layer
        ckpt = self.checkpoint_per_token_layer
        if self.prepared_per_token_layer is not None and layout.sharding not in OPTIMIZER_SHARDINGS:
            # PEFT's k-bit preparation, the weights computing as stored: fp32 hidden states.
            per_tok, rep = self.prepared_per_token_layer
            ckpt = 4.0 * self.model.hidden_size
        if layout.sequence_parallel or t == 1:
            layer_tok = per_tok / t
            ckpt_tok = ckpt / t
        else:
            layer_tok = rep + (per_tok - rep) / t
            ckpt_tok = ckpt
        score_tok = self.score_bytes * s / t  # attention heads split over TP
        rec = layout.recompute
        if rec == "none":
            keep, one_layer = tokens * (layer_tok + score_tok), 0.0
        elif rec == "selective":
            # Korthikanti et al. 2022, section 5: the attention core (softmax, its dropout and
            # the score matmuls) is recomputed; its buffers live for one layer at a time.
            keep, one_layer = tokens * layer_tok, tokens * score_tok
        elif rec == "op":
            # Per-operator selective checkpointing (recompute.py): what the policy saves stays;
            # the rest of one layer is rebuilt at a time in the backward pass.
            op_tok = self.op_kept.per_token_layer(t, layout.sequence_parallel)
            keep, one_layer = tokens * op_tok, tokens * (layer_tok + score_tok)
        else:
            keep, one_layer = tokens * ckpt_tok, tokens * (layer_tok + score_tok)
        logits = tokens * self.logit_bytes_per_token / t
        if p > 1:
            if stage == "first":
                # 1F1B: the first stage holds the activations of up to PP micro-batches (fewer
                # when a step has fewer); interleaving adds 1 + (p - 1) / (p v) (Korthikanti
                # et al. 2022, section 4.2.3), never beyond every micro-batch of the step.
                micro = self.micro_batches(layout, b)
                in_flight = min(p, micro)
                factor = 1.0 + (p - 1) / (p * layout.vpp) if layout.vpp > 1 else 1.0
                act = keep * stage_layers * min(in_flight * factor, micro) + one_layer
                logits = 0.0
            else:
                act = keep * stage_layers + one_layer + logits
        else:
            act = keep * L + one_layer + logits
        act += self.dequant_buffer / t
        return act, logits

    def _offloaded(
        self,
        optim: float,
        grads: float,
        weights: float,
        gathered: float,
        layer: float,
        stage_layers: int,
        accumulating: float = 0.0,
    ) -> tuple[float, float, float, float, float, float]:
        """(optimizer, gradients, weights, gathered bytes left on the GPU, host bytes, offloaded
        bytes) once ZeRO-Offload or ZeRO-Infinity moves state to the host or NVMe; ``accumulating``
        (part of ``grads``) is a sharded pipeline stage's unsharded accumulation, which stays on the
        GPU until its last micro-batch reduces it."""
        host = offloaded = 0.0
        off = self.workload.offload
        if off.optimizer != "none":
            # ZeRO-Offload: the fp32 master copy and moments live in host memory (or on NVMe
            # behind pinned host buffers) and the 16-bit gradients stream to them layer by
            # layer, so the GPU keeps about two layers of gradients in flight.
            sharded_grads = grads - accumulating
            moved = optim + sharded_grads
            offloaded += moved
            in_flight_grads = min(sharded_grads, 2 * sharded_grads / max(stage_layers, 1))
            host += moved if off.optimizer == "cpu" else 2 * moved / max(stage_layers, 1)
            optim, grads = 0.0, in_flight_grads + accumulating
        if off.parameters != "none":
            # ZeRO-Infinity / FSDP CPU offload: the GPU holds only the layers being gathered.
            shard = weights - gathered
            offloaded += shard
            keep_w = gathered if gathered > 0 else min(3 * layer, weights)
            host += shard if off.parameters == "cpu" else keep_w
            weights, gathered = keep_w, keep_w
        return optim, grads, weights, gathered, host, offloaded

    def _inference_memory(
        self, layout: Layout, b: int, s: int, prompt: int, d: int, stage_layers: int, weights: float
    ) -> tuple[float, float, float, float, float]:
        """(activation bytes, KV cache, logit bytes, weights on the GPU, host bytes) of serving
        ``layout``: the prefill's transients, the cache of the batch, llama.cpp's layers in host RAM."""
        m, w = self.model, self.workload
        t, p = layout.tp, layout.pp
        sharding = layout.sharding
        host = 0.0
        replicas = d if sharding == "ddp" else 1
        b_gpu = math.ceil(b / replicas) if replicas > 1 else b
        chunk = b_gpu * prompt
        if self.prefill_chunk_tokens:
            chunk = min(chunk, self.prefill_chunk_tokens)
        # Without FlashAttention each pass materializes the scores of its rows against every key:
        # a chunked prefill (llama.cpp's batch, a serving engine's token budget) holds those of one
        # chunk at a time, not of the whole prompt.
        scores = 0.0 if w.flash_attention else m.num_attention_heads * chunk * prompt * 6.0
        # Serving engines compute the logits of the last position only; a Hugging Face forward
        # (Transformers before v4.45, AutoAWQ) returns them for every prompt token, upcast to fp32.
        logit_rows = b_gpu * (prompt if self.full_prompt_logits else 1)
        logits = (logit_rows * m.vocab_size * self.logit_bytes_inference if m.has_kv_cache else 0.0) / t
        act = (chunk * self.inference_transient_per_token + scores) / t + logits + self.dequant_buffer / t
        kv_layers = stage_layers
        kv_heads_share = m.kv_copies(t) / t  # each rank's share of one whole cache
        kv = b_gpu * self.kv_tokens_per_layer(s) * kv_layers * self.kv_bytes_per_token_layer * kv_heads_share
        # A load that copies q/k/v peaks above a short run: the peak is the larger of the two.
        act = max(act, self.qkv_copy_bytes / (t * p) - kv)
        share = self.gpu_layer_share
        if share < 1.0:
            # llama.cpp -ngl: the first layers, the embedding and the output head stay in host RAM
            # with their KV cache; the GPU holds the offloaded layers' weights and cache.
            gpu_weights = (self.block_weight_bytes + self.norm_bytes) * share / t
            host = weights - gpu_weights + kv * (1.0 - share)
            weights, kv = gpu_weights, kv * share
        return act, kv, logits, weights, host

    @property
    def gpu_layer_share(self) -> float:
        """Share of the layers on the GPU (``workload.gpu_layers`` of ``num_layers``; 1 when all)."""
        g = self.workload.gpu_layers
        if g is None or self.training or g >= self.layers:
            return 1.0
        return g / self.layers

    # ------------------------------------------------------------------------------------
    def max_batch(
        self,
        capacity_bytes: float,
        gpu_count: int = 1,
        parallelism: str = "none",
        layout: Layout | None = None,
    ) -> int:
        """Largest batch (per-GPU micro-batch in training; total sequences in inference) that fits."""
        one = self.breakdown(gpu_count, parallelism, batch_size=1, layout=layout).device_total
        if one > capacity_bytes:
            return 0
        if not self.training and parallelism == "ddp" and gpu_count > 1:
            per_replica = self._max_batch_linear(capacity_bytes, 1, "none", one, None)
            return per_replica * gpu_count
        return self._max_batch_linear(capacity_bytes, gpu_count, parallelism, one, layout)

    def _max_batch_linear(self, capacity: float, n: int, par: str, one: float, layout: Layout | None) -> int:
        two = self.breakdown(n, par, batch_size=2, layout=layout).device_total
        slope = two - one
        if slope <= 0:
            return 1_000_000
        best = 1 + int((capacity - one) // slope)
        # In inference the first sequences also widen the prefill chunk, which stops growing once
        # the prompts fill it: from there each sequence adds less, so step up on the slope there.
        for _ in range(4):
            at = self.breakdown(n, par, batch_size=best, layout=layout).device_total
            step = self.breakdown(n, par, batch_size=best + 1, layout=layout).device_total - at
            more = int((capacity - at) // step) if at <= capacity and step > 0 else 0
            if more <= 0:
                break
            best += more
        # Guard the closed form against rounding: step down until it really fits.
        while best > 1 and self.breakdown(n, par, batch_size=best, layout=layout).device_total > capacity:
            best -= 1
        return min(best, 1_000_000)

    def max_context(
        self,
        capacity_bytes: float,
        gpu_count: int = 1,
        parallelism: str = "none",
        limit: int = 10_000_000,
        layout: Layout | None = None,
    ) -> int:
        """Longest context (sequence length, or prompt + output) that fits; 0 if none does."""
        floor = self.workload.output_tokens + 1 if not self.training else 1

        def fits(ctx: int) -> bool:
            bd = self.breakdown(gpu_count, parallelism, context=ctx, layout=layout)
            return bd.device_total <= capacity_bytes

        if not fits(floor):
            return 0
        lo, hi = floor, max(floor + 1, 1024)
        while hi < limit and fits(hi):
            lo, hi = hi, hi * 2
        if hi >= limit and fits(limit):
            return limit
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if fits(mid):
                lo = mid
            else:
                hi = mid
        return lo


def memory_curve(
    mm: MemoryModel,
    axis: str,
    values: list[int],
    gpu_count: int = 1,
    parallelism: str = "none",
    layout: Layout | None = None,
) -> list[float]:
    """Per-GPU device totals in GiB as ``axis`` ("context" or "batch") takes each of ``values``."""
    if axis == "context":
        return [
            mm.breakdown(gpu_count, parallelism, context=v, layout=layout).device_total / GIB for v in values
        ]
    if axis == "batch":
        return [
            mm.breakdown(gpu_count, parallelism, batch_size=v, layout=layout).device_total / GIB
            for v in values
        ]
    raise InputError("what_if.axis", "must be context or batch", axis)


def curve_points(start: int, stop: int, count: int = 48) -> list[int]:
    """About ``count`` integers spread geometrically from ``start`` to ``stop`` (inclusive, no repeats)."""
    start, stop = max(1, start), max(start + 1, stop)
    ratio = (stop / start) ** (1 / max(1, count - 1))
    out: list[int] = []
    x = float(start)
    for _ in range(count):
        v = int(round(x))
        if not out or v > out[-1]:
            out.append(v)
        x *= ratio
    if out[-1] != stop:
        out.append(stop)
    return out
