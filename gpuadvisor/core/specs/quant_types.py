"""GGUF weight types (llama.cpp quantizations): bits per weight and the per-tensor mix.

A GGML block type stores ``block_elements`` weights in ``block_bytes`` bytes (scales
included), so its bits per weight are ``8 x block_bytes / block_elements``::

    type    block  bytes  bits/weight      type    block  bytes  bits/weight
    f32     1      4      32               q5_0    32     22     5.5
    f16     1      2      16               q4_k    256    144    4.5
    bf16    1      2      16               q4_0    32     18     4.5
    q8_0    32     34     8.5              iq4_xs  256    136    4.25
    q6_k    256    210    6.5625           q3_k    256    110    3.4375
    q5_k    256    176    5.5              q2_k    256    84     2.625
    mxfp4   32     17     4.25             nvfp4   64     36     4.5

A file "type" such as ``q4_k_m`` is a recipe, not one block type: llama.cpp's quantizer
(``llama_tensor_get_type`` in ``src/llama-quant.cpp``) gives some tensors more bits. The rules
modelled here, for a model with ``L`` layers and ``more(i) = i < L/8 or i >= 7L/8 or
(i - L/8) mod 3 == 2`` (about half the layers):

- the output head is ``q6_k`` unless the recipe is ``q8_0`` (then ``q8_0``); the token
  embedding takes the recipe's base type; norms and other 1-D tensors stay ``f32``;
- ``q4_k_m`` / ``q5_k_m``: ``attn_v`` and ``ffn_down`` of the ``more(i)`` layers are ``q6_k``,
  the rest ``q4_k`` / ``q5_k``;
- ``q3_k_m``: ``attn_v`` is ``q5_k`` in the first two layers and ``q4_k`` after; ``ffn_down``
  is ``q5_k`` in the first ``L/16`` layers and ``q4_k`` after; ``attn_output`` is ``q4_k``; the
  rest ``q3_k``;
- ``q2_k``: ``attn_v``, ``ffn_down`` and ``attn_output`` are ``q3_k``, the rest ``q2_k``;
- ``iq4_xs``: ``attn_v`` is ``q5_k`` when 4 or more query heads share a KV head, else ``iq4_xs``;
- ``mxfp4`` (gpt-oss style): MoE expert tensors ``mxfp4``, every other matrix ``q8_0``; a dense
  model has all block matrices in ``mxfp4``;
- ``nvfp4``: block matrices in NVFP4 (16 FP4 values with an FP8 E4M3 scale), embedding and head
  ``q8_0``.

Check: LLaMA-2 7B gives 3.56 GiB (Q4_0), 3.80 GiB (Q4_K_M) and 6.67 GiB (Q8_0), the sizes
llama-bench prints for it (``tests/core/test_local_inference.py``).

References
----------
- ggml ``ggml/src/ggml-common.h`` (block structs) and ``gguf-py/gguf/constants.py``
  (``GGML_QUANT_SIZES``), github.com/ggml-org/llama.cpp.
- llama.cpp ``src/llama-quant.cpp`` ``llama_tensor_get_type`` (the per-tensor recipe).
- OCP Microscaling Formats (MX) v1.0 specification, 2023 (MXFP4: 32 E2M1 values, one E8M0 scale).
- NVIDIA, "Introducing NVFP4 for Efficient and Accurate Low-Precision Inference", 2025 (16 E2M1
  values, one E4M3 scale, plus one FP32 scale per tensor).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from .models import ModelSpec

#: (weights per block, bytes per block) of each GGML block type.
GGML_BLOCKS: dict[str, tuple[int, int]] = {
    "f32": (1, 4),
    "f16": (1, 2),
    "bf16": (1, 2),
    "q8_0": (32, 34),
    "q6_k": (256, 210),
    "q5_k": (256, 176),
    "q5_0": (32, 22),
    "q5_1": (32, 24),
    "q4_k": (256, 144),
    "q4_0": (32, 18),
    "q4_1": (32, 20),
    "q3_k": (256, 110),
    "q2_k": (256, 84),
    "iq4_xs": (256, 136),
    "iq4_nl": (32, 18),
    "mxfp4": (32, 17),
    "nvfp4": (64, 36),
}

#: GGUF file types accepted as ``workload.weights`` (llama.cpp ``--ftype`` names, lower case).
GGUF_WEIGHT_TYPES = (
    "q8_0",
    "q6_k",
    "q5_k_m",
    "q5_0",
    "q4_k_m",
    "q4_0",
    "q3_k_m",
    "q2_k",
    "iq4_xs",
    "mxfp4",
    "nvfp4",
)

#: Base block type of each recipe (what a tensor gets when no rule gives it more bits).
_BASE = {
    "q8_0": "q8_0",
    "q6_k": "q6_k",
    "q5_k_m": "q5_k",
    "q5_0": "q5_0",
    "q4_k_m": "q4_k",
    "q4_0": "q4_0",
    "q3_k_m": "q3_k",
    "q2_k": "q2_k",
    "iq4_xs": "iq4_xs",
    "mxfp4": "mxfp4",
    "nvfp4": "nvfp4",
}

#: KV-cache types of llama.cpp (``--cache-type-k/-v``), bytes per element with block scales.
KV_CACHE_DTYPES = ("f32", "f16", "bf16", "q8_0", "q5_1", "q5_0", "q4_1", "q4_0", "iq4_nl")


def bits_per_weight(block_type: str) -> float:
    """Bits per stored weight of a GGML block type, scales included."""
    elements, size = GGML_BLOCKS[block_type]
    return 8.0 * size / elements


def bytes_per_weight(block_type: str) -> float:
    elements, size = GGML_BLOCKS[block_type]
    return size / elements


def is_gguf_type(weights: str) -> bool:
    return weights in _BASE


def _more_bits(i: int, n: int) -> bool:
    """llama.cpp's ``use_more_bits``: first and last eighth of the layers and every third between."""
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


#: 4-bit floating-point block formats with a shared scale per small block (OCP MX, NVIDIA's NVFP4):
#: llama.cpp tensor types, and also the published checkpoints that serving engines run with their
#: 4-bit kernels (``tensor_type(..., checkpoint=True)``).
MICROSCALED_FP4 = ("mxfp4", "nvfp4")


def tensor_type(recipe: str, role: str, layer: int, model: ModelSpec, checkpoint: bool = False) -> str:
    """Block type llama.cpp gives tensor ``role`` of layer ``layer`` under ``recipe``.

    ``role`` is ``token_embd``, ``output``, ``attn_q``, ``attn_k``, ``attn_v``, ``attn_output``,
    ``ffn_gate``, ``ffn_up``, ``ffn_down`` or ``ffn_exps`` (an MoE expert tensor).

    ``checkpoint``: an FP4 microscaled checkpoint as published and as a serving engine (vLLM,
    SGLang, TensorRT-LLM) loads it, not llama.cpp's conversion: what the recipe leaves out of
    FP4 stays ``bf16`` (gpt-oss's ``quantization_config`` lists the attention, the routers, the
    embedding and the head in ``modules_to_not_convert``; NVIDIA's NVFP4 checkpoints keep the
    embedding and the head in BF16), where llama.cpp stores it as ``q8_0``.
    """
    if checkpoint and recipe in MICROSCALED_FP4:
        kind = tensor_type(recipe, role, layer, model)
        return kind if kind == recipe else "bf16"
    base = _BASE[recipe]
    n = model.num_layers
    if role == "output":
        return "q8_0" if recipe in ("q8_0", "mxfp4", "nvfp4") else "q6_k"
    if role == "token_embd":
        return "q8_0" if recipe in ("mxfp4", "nvfp4") else base
    if recipe == "mxfp4":
        return "mxfp4" if role == "ffn_exps" or not model.is_moe else "q8_0"
    if recipe in ("q4_k_m", "q5_k_m") and role in ("attn_v", "ffn_down") and _more_bits(layer, n):
        return "q6_k"
    if recipe == "q3_k_m":
        if role == "attn_v":
            return "q5_k" if layer < 2 else "q4_k"
        if role == "ffn_down":
            return "q5_k" if layer < n // 16 else "q4_k"
        if role == "attn_output":
            return "q4_k"
    if recipe == "q2_k" and role in ("attn_v", "ffn_down", "attn_output"):
        return "q3_k"
    if (
        recipe == "iq4_xs"
        and role == "attn_v"
        and model.num_attention_heads // model.num_key_value_heads >= 4
    ):
        return "q5_k"
    return base


_ROLE_OF = {"q_proj": "attn_q", "k_proj": "attn_k", "v_proj": "attn_v", "o_proj": "attn_output"}


@dataclass(frozen=True, slots=True)
class GgufWeightBytes:
    """Bytes of a model stored under a GGUF recipe, split like the memory model needs them."""

    blocks: float
    embedding: float
    lm_head: float
    norms_and_other: float
    types: tuple[tuple[str, int], ...]  # (block type, parameters) in descending order

    @property
    def total(self) -> float:
        return self.blocks + self.embedding + self.lm_head + self.norms_and_other


def gguf_weight_bytes(model: ModelSpec, recipe: str, checkpoint: bool = False) -> GgufWeightBytes:
    """Weight bytes of ``model`` quantized with llama.cpp ``recipe`` (see the module docstring).

    Block parameters outside the projection matrices (biases, routers, latent-attention norms)
    are stored as ``f32``, as llama.cpp keeps 1-D tensors (``bf16`` in an FP4 checkpoint as
    published, ``checkpoint``: see :func:`tensor_type`).
    """
    counts = model.counts
    per_type: dict[str, int] = {}

    def add(block_type: str, params: int) -> None:
        per_type[block_type] = per_type.get(block_type, 0) + params

    h = model.hidden_size
    attention = model.attention_shapes()
    mlp_roles = ("ffn_gate", "ffn_up", "ffn_down") if model.gated_mlp else ("ffn_up", "ffn_down")
    counted = 0
    for layer in range(model.num_layers):
        for name, (fan_in, fan_out) in attention.items():
            role = _ROLE_OF.get(name, "attn_q")
            add(tensor_type(recipe, role, layer, model, checkpoint), fan_in * fan_out)
            counted += fan_in * fan_out
        moe_layer = model.is_moe and layer >= model.dense_layers
        width = model.expert_intermediate_size if moe_layer else model.intermediate_size
        for role in mlp_roles:
            params = h * width
            if moe_layer:
                kind = tensor_type(recipe, "ffn_exps", layer, model, checkpoint)
                if role == "ffn_down" and recipe != "mxfp4":
                    # ffn_down_exps follows ffn_down
                    kind = tensor_type(recipe, "ffn_down", layer, model, checkpoint)
                add(kind, params * model.num_experts)
                counted += params * model.num_experts
                if model.shared_experts:
                    add(tensor_type(recipe, role, layer, model, checkpoint), params * model.shared_experts)
                    counted += params * model.shared_experts
            else:
                add(tensor_type(recipe, role, layer, model, checkpoint), params)
                counted += params
    one_d = "bf16" if checkpoint and recipe in MICROSCALED_FP4 else "f32"
    rest = max(0, counts.blocks - counted)  # biases, routers, latent norms
    if rest:
        add(one_d, rest)
    blocks = sum(p * bytes_per_weight(t) for t, p in per_type.items())
    embd_type = tensor_type(recipe, "token_embd", 0, model, checkpoint)
    head_type = tensor_type(recipe, "output", 0, model, checkpoint)
    add(embd_type, counts.embedding)
    if counts.lm_head:
        add(head_type, counts.lm_head)
    add(one_d, counts.norms_and_other)
    return GgufWeightBytes(
        blocks=blocks,
        embedding=counts.embedding * bytes_per_weight(embd_type),
        lm_head=counts.lm_head * bytes_per_weight(head_type),
        norms_and_other=counts.norms_and_other * bytes_per_weight(one_d),
        types=tuple(sorted(per_type.items(), key=lambda kv: -kv[1])),
    )


#: The kernel family llama.cpp's quantized matrix multiplies treat a block type with: ``legacy``
#: (one scale per block of 32 values, unpacked with a shift and a mask); ``k_quant`` (Q4_K, Q5_K:
#: blocks of 256 in sub-blocks of 32 whose 6-bit scales and minimums are unpacked first);
#: ``k_quant_16`` (Q2_K, Q3_K, Q6_K: sub-blocks of 16, so twice the scale multiplies per value,
#: and values reassembled from split bit planes); ``i_quant`` (values looked up in a non-linear
#: grid). FP16/BF16/F32 matrices go to cuBLAS or the float kernels: family ``float``. The CUDA MMQ
#: kernels unpack each family with its own tile loader and dot product (``ggml/src/ggml-cuda/mmq.cuh``,
#: ``load_tiles_*`` and ``vec_dot_*_q8_1_mma``), Metal's ``kernel_mul_mm`` with its own
#: ``dequantize_*`` into threadgroup memory.
KERNEL_FAMILY: dict[str, str] = {
    "q8_0": "legacy",
    "q5_0": "legacy",
    "q5_1": "legacy",
    "q4_0": "legacy",
    "q4_1": "legacy",
    "mxfp4": "legacy",
    "nvfp4": "legacy",
    "q5_k": "k_quant",
    "q4_k": "k_quant",
    "q6_k": "k_quant_16",
    "q3_k": "k_quant_16",
    "q2_k": "k_quant_16",
    "iq4_xs": "i_quant",
    "iq4_nl": "i_quant",
}


#: Prompt speed of the k-quants with sub-blocks of 16 (Q2_K, Q3_K, Q6_K) against those with
#: sub-blocks of 32 (Q4_K, Q5_K), measured on one GPU, one build and one microbatch: LLaMA 3 8B Q6_K
#: 10,199.94 and Q4_K_S 11,032.18 tokens/s at pp2048, microbatch 512, RTX 4090 (llama.cpp PR #8416,
#: rows LCPP-149 and LCPP-150): 0.925. Metal's dequantizing kernels show the same or less (PR #3084,
#: M2 Ultra: Q6_K 977.56 against Q4_K_M 1,028.20 and Q5_K_S 977.60). A measured ratio, not a fit:
#: the fitted rows hold one Q6_K row and no Q2_K or Q3_K row.
K16_PREFILL_RATIO = 0.925


@lru_cache(maxsize=512)
def matmul_kernel_shares(model: ModelSpec, recipe: str) -> tuple[tuple[str, float], ...]:
    """The share of the matrix-multiply parameters of ``model`` under GGUF ``recipe`` (the block
    matrices and the output head; the token embedding is a row lookup and 1-D tensors multiply
    nothing) that each :data:`KERNEL_FAMILY` holds, as (family, share) pairs. A prompt's GEMM FLOPs
    are spread over the tensors in proportion to their parameters, so these shares weigh each
    family's kernel speed (``llamacpp_performance``)."""
    per_family: dict[str, float] = {}
    counts = model.counts
    embd_type = tensor_type(recipe, "token_embd", 0, model)
    one_d = "f32"
    for block_type, params in gguf_weight_bytes(model, recipe).types:
        if block_type == one_d:
            continue  # 1-D tensors (norms, biases, routers): no matrix multiply
        if block_type == embd_type:
            params = max(params - counts.embedding, 0)  # the embedding is a row lookup
        family = KERNEL_FAMILY.get(block_type, "float")
        per_family[family] = per_family.get(family, 0.0) + params
    total = sum(per_family.values())
    if total <= 0:
        return ()
    return tuple(sorted((f, p / total) for f, p in per_family.items() if p > 0))


def kv_bytes_per_element(dtype: str) -> float:
    """Bytes of one KV-cache element of a llama.cpp cache type (block scales included)."""
    return bytes_per_weight(dtype)
