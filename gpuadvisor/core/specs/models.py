"""Model architectures and their parameter counts.

A :class:`ModelSpec` describes a transformer by the shapes that decide memory and compute:
layers, hidden size, attention heads and key/value heads (grouped- and multi-query
attention), MLP width and kind (plain or gated), vocabulary, tied embeddings,
mixture-of-experts routing and sliding-window attention.

Parameter count (per layer, with ``h`` hidden size, ``d_q = heads x head_dim``,
``d_kv = kv_heads x head_dim``, ``i`` the MLP width of one expert, ``E`` experts)::

    attention = h*d_q + 2*h*d_kv + d_q*h            (+ biases)
    mlp       = E * (3*h*i if gated else 2*h*i)     (+ biases)   + router h*E when E > 1
    norms     = norms_per_layer * (h for RMSNorm, 2h for LayerNorm)
    total     = layers*(attention + mlp + norms) + V*h (+ V*h untied head) (+ positions*h) + final norm

Active parameters (what one token touches, used for compute) count ``experts_per_token``
experts instead of ``E``. Memory always counts all experts.

References
----------
- Vaswani et al. 2017, "Attention Is All You Need" (the block).
- Shazeer 2019, "Fast Transformer Decoding: One Write-Head is All You Need" (multi-query attention).
- Ainslie et al. 2023, "GQA: Training Generalized Multi-Query Transformer Models" (grouped-query attention).
- Shazeer 2020, "GLU Variants Improve Transformer" (gated MLPs such as SwiGLU).
- Jiang et al. 2024, "Mixtral of Experts" (sparse MoE: 46.7B total, 12.9B active parameters).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from ..errors import InputError

POSITION_KINDS = ("rope", "learned", "alibi", "none")
NORM_KINDS = ("rmsnorm", "layernorm")
MODEL_KINDS = ("decoder", "encoder")

#: Linear modules a LoRA adapter can target, in Hugging Face's Llama naming.
CANONICAL_LINEAR_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")

#: Other names used by model families for the same projections (PEFT ``target_modules`` spellings).
LINEAR_MODULE_ALIASES: dict[str, tuple[str, ...]] = {
    "query": ("q_proj",),
    "key": ("k_proj",),
    "value": ("v_proj",),
    "q": ("q_proj",),
    "k": ("k_proj",),
    "v": ("v_proj",),
    "o": ("o_proj",),
    "wq": ("q_proj",),
    "wk": ("k_proj",),
    "wv": ("v_proj",),
    "wo": ("o_proj",),
    "qkv_proj": ("q_proj", "k_proj", "v_proj"),
    "query_key_value": ("q_proj", "k_proj", "v_proj"),
    "c_attn": ("q_proj", "k_proj", "v_proj"),
    "Wqkv": ("q_proj", "k_proj", "v_proj"),
    "out_proj": ("o_proj",),
    "dense": ("o_proj",),
    "c_proj": ("o_proj", "down_proj"),
    "gate_up_proj": ("gate_proj", "up_proj"),
    "w1": ("gate_proj",),
    "w3": ("up_proj",),
    "w2": ("down_proj",),
    "fc1": ("up_proj",),
    "fc2": ("down_proj",),
    "fc_in": ("up_proj",),
    "fc_out": ("down_proj",),
    "c_fc": ("up_proj",),
    "dense_h_to_4h": ("up_proj",),
    "dense_4h_to_h": ("down_proj",),
    "intermediate.dense": ("up_proj",),
    "output.dense": ("down_proj",),
}


@dataclass(frozen=True, slots=True)
class ParameterCounts:
    """Parameter counts of a model, split by where the parameters live."""

    embedding: int
    lm_head: int
    attention: int
    mlp: int
    norms_and_other: int
    total: int
    active: int
    #: Parameters of the routed experts (what expert parallelism shards); 0 for a dense model.
    routed_experts: int = 0

    @property
    def blocks(self) -> int:
        """Parameters inside the transformer blocks (what weight quantization usually covers)."""
        return self.attention + self.mlp


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A transformer architecture. Sizes are counts (layers, heads) or widths in elements."""

    name: str
    num_layers: int
    hidden_size: int
    num_attention_heads: int
    num_key_value_heads: int
    intermediate_size: int
    vocab_size: int
    gated_mlp: bool = True
    tied_embeddings: bool = False
    num_experts: int = 1
    experts_per_token: int = 1
    head_dim: int | None = None
    moe_intermediate_size: int | None = None
    max_context: int = 4096
    sliding_window: int | None = None
    sliding_window_layer_fraction: float = 1.0
    kind: str = "decoder"
    position_embedding: str = "rope"
    norm: str = "rmsnorm"
    norms_per_layer: int = 2
    attention_bias: bool = False
    attention_out_bias: bool = False
    mlp_bias: bool = False
    extra_params: int = 0
    # Multi-head latent attention (DeepSeek-V2/V3, Kimi K2): low-rank query and key/value.
    kv_lora_rank: int | None = None
    q_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    qk_nope_head_dim: int | None = None
    v_head_dim: int | None = None
    # Mixture of experts: leading dense layers (first_k_dense_replace) and always-active shared
    # experts of the expert width (n_shared_experts).
    dense_layers: int = 0
    shared_experts: int = 0
    # A model read from a GGUF file: the exact bytes of its tensors and its llama.cpp type.
    file_weight_bytes: int | None = None
    file_type: str = ""
    id: str = ""
    family: str = ""
    published_params: int | None = None
    source: str = ""
    notes: str = ""
    architecture_assumed: bool = False
    _counts: ParameterCounts | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in (
            "num_layers",
            "hidden_size",
            "num_attention_heads",
            "num_key_value_heads",
            "intermediate_size",
            "vocab_size",
            "num_experts",
            "experts_per_token",
            "max_context",
            "norms_per_layer",
        ):
            _require_positive_int(
                f"model.architecture.{name}", getattr(self, name), allow_zero=name == "norms_per_layer"
            )
            _require_at_most(f"model.architecture.{name}", getattr(self, name))
        for name in (
            "head_dim",
            "moe_intermediate_size",
            "sliding_window",
            "kv_lora_rank",
            "q_lora_rank",
            "qk_rope_head_dim",
            "qk_nope_head_dim",
            "v_head_dim",
        ):
            value = getattr(self, name)
            if value is not None:
                _require_positive_int(f"model.architecture.{name}", value)
                _require_at_most(f"model.architecture.{name}", value)
        for name in ("dense_layers", "shared_experts"):
            _require_positive_int(f"model.architecture.{name}", getattr(self, name), allow_zero=True)
            _require_at_most(f"model.architecture.{name}", getattr(self, name))
        if self.dense_layers > self.num_layers:
            raise InputError(
                "model.architecture.dense_layers",
                f"cannot exceed num_layers ({self.num_layers})",
                self.dense_layers,
            )
        if self.kv_lora_rank is not None and (
            self.qk_rope_head_dim is None or self.qk_nope_head_dim is None or self.v_head_dim is None
        ):
            raise InputError(
                "model.architecture.kv_lora_rank",
                "latent attention also needs qk_rope_head_dim, qk_nope_head_dim and v_head_dim",
            )
        if self.extra_params < 0 or not isinstance(self.extra_params, int):
            raise InputError(
                "model.architecture.extra_params", "must be a whole number >= 0", self.extra_params
            )
        if self.num_attention_heads % self.num_key_value_heads:
            raise InputError(
                "model.architecture.num_key_value_heads",
                f"must divide num_attention_heads ({self.num_attention_heads})",
                self.num_key_value_heads,
            )
        if self.head_dim is None and self.hidden_size % self.num_attention_heads:
            raise InputError(
                "model.architecture.head_dim",
                "is required when hidden_size is not a multiple of num_attention_heads",
            )
        if self.experts_per_token > self.num_experts:
            raise InputError(
                "model.architecture.experts_per_token",
                f"cannot exceed num_experts ({self.num_experts})",
                self.experts_per_token,
            )
        if not 0.0 < self.sliding_window_layer_fraction <= 1.0:
            raise InputError(
                "model.architecture.sliding_window_layer_fraction",
                "must be in (0, 1]",
                self.sliding_window_layer_fraction,
            )
        _require_choice("model.architecture.kind", self.kind, MODEL_KINDS)
        _require_choice("model.architecture.position_embedding", self.position_embedding, POSITION_KINDS)
        _require_choice("model.architecture.norm", self.norm, NORM_KINDS)
        counts = _count_parameters(self)
        if counts.total > MAX_MODEL_PARAMETERS:
            raise InputError(
                "model.architecture",
                f"describes {counts.total:.3g} parameters; at most {MAX_MODEL_PARAMETERS:g} are accepted "
                "(a hundred trillion; the largest published models have about two trillion)",
            )
        object.__setattr__(self, "_counts", counts)

    # --- derived shapes -------------------------------------------------------------------
    @property
    def head_dim_(self) -> int:
        """Width of one attention head."""
        return self.head_dim if self.head_dim is not None else self.hidden_size // self.num_attention_heads

    @property
    def is_mla(self) -> bool:
        """Multi-head latent attention (the KV cache holds a compressed latent per token)."""
        return self.kv_lora_rank is not None

    @property
    def q_dim(self) -> int:
        if self.is_mla:
            assert self.qk_nope_head_dim is not None and self.qk_rope_head_dim is not None
            return self.num_attention_heads * (self.qk_nope_head_dim + self.qk_rope_head_dim)
        return self.num_attention_heads * self.head_dim_

    @property
    def kv_elements_per_token_layer(self) -> int:
        """KV-cache elements one token keeps in one layer: keys and values (2 x kv_heads x head_dim),
        or with latent attention the compressed latent and the shared rotary key
        (kv_lora_rank + qk_rope_head_dim; DeepSeek-V2 paper, section 2.1)."""
        if self.is_mla:
            assert self.kv_lora_rank is not None and self.qk_rope_head_dim is not None
            return self.kv_lora_rank + self.qk_rope_head_dim
        return 2 * self.kv_dim

    @property
    def kv_head_groups(self) -> int:
        """How many parts a tensor-parallel split can divide the KV cache into: its KV heads, or
        one with latent attention, whose compressed latent every head reads (so every rank holds
        all of it: SGLang v0.4 release notes, lmsys.org/blog/2024-12-04-sglang-v0-4, "Data
        Parallelism Attention": "DeepSeek models use MLA and only have one KV head. If we use
        tensor parallelism on 8 GPUs, it will lead to duplicated KV cache")."""
        return 1 if self.is_mla else self.num_key_value_heads

    def kv_copies(self, tensor_parallel: int) -> float:
        """How many whole KV caches ``tensor_parallel`` ranks hold (and read each step) together:
        ``ceil(g / t) t / g`` for ``g`` :attr:`kv_head_groups`; 1 while every rank holds its own
        heads, ``t`` with latent attention, 2 for 4 KV heads over 8 ranks."""
        g, t = self.kv_head_groups, max(1, tensor_parallel)
        return math.ceil(g / t) * t / g

    @property
    def kv_dim(self) -> int:
        """Width of the keys (or values) of one token in one layer: kv_heads x head_dim."""
        return self.num_key_value_heads * self.head_dim_

    def attended_tokens(self, context: float) -> float:
        """Keys one token attends to (and holds in the KV cache) at ``context`` tokens of context,
        averaged over the layers: sliding-window layers stop at their window."""
        w = self.sliding_window
        if w is None or context <= w:
            return float(context)
        f = self.sliding_window_layer_fraction
        return f * w + (1.0 - f) * context

    def prefill_attended_tokens(self, prompt: float) -> float:
        """Keys a prompt token attends to in one causal pass over ``prompt`` tokens, averaged over
        the prompt's positions and the layers: ``P / 2`` in a full-attention layer, and in a
        sliding-window layer ``W - W^2 / (2 P)`` once the prompt is longer than its window ``W``
        (the first ``W`` positions see ``W / 2`` on average, every later one ``W``). The attention
        core of a pass costs ``4 d_q`` FLOPs per key per layer (scores and the weighted values).

        Llama 4's chunked layers are stored as a window (the cache they hold is the same); within
        one chunk the two agree, past it a chunk-local token sees ``C / 2`` keys on average, not ``C``."""
        w = self.sliding_window
        if w is None or prompt <= w:
            return prompt / 2.0
        f = self.sliding_window_layer_fraction
        return f * (w - w * w / (2.0 * prompt)) + (1.0 - f) * prompt / 2.0

    @property
    def expert_intermediate_size(self) -> int:
        return self.moe_intermediate_size or self.intermediate_size

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 1

    @property
    def has_kv_cache(self) -> bool:
        """Encoders (BERT) process a whole sequence at once and keep no KV cache."""
        return self.kind == "decoder"

    @property
    def counts(self) -> ParameterCounts:
        assert self._counts is not None  # set in __post_init__
        return self._counts

    @property
    def parameters(self) -> int:
        """Total parameters (all experts)."""
        return self.counts.total

    @property
    def active_parameters(self) -> int:
        """Parameters one token passes through (experts_per_token of num_experts)."""
        return self.counts.active

    def attention_shapes(self) -> dict[str, tuple[int, int]]:
        """(in_features, out_features) of the attention projections of one block.

        With latent attention: q_proj is the query down-projection (or the full query without
        q_lora_rank), k_proj the joint key/value down-projection (kv_a_proj_with_mqa), v_proj the
        key/value up-projection (kv_b_proj) and o_proj the output."""
        h = self.hidden_size
        if self.is_mla:
            assert (
                self.kv_lora_rank is not None
                and self.qk_rope_head_dim is not None
                and self.qk_nope_head_dim is not None
                and self.v_head_dim is not None
            )
            heads, v_dim = self.num_attention_heads, self.num_attention_heads * self.v_head_dim
            shapes = {
                "q_proj": (h, self.q_lora_rank or self.q_dim),
                "k_proj": (h, self.kv_lora_rank + self.qk_rope_head_dim),
                "v_proj": (self.kv_lora_rank, heads * (self.qk_nope_head_dim + self.v_head_dim)),
                "o_proj": (v_dim, h),
            }
            if self.q_lora_rank:
                shapes["q_b_proj"] = (self.q_lora_rank, self.q_dim)
            return shapes
        return {
            "q_proj": (h, self.q_dim),
            "k_proj": (h, self.kv_dim),
            "v_proj": (h, self.kv_dim),
            "o_proj": (self.q_dim, h),
        }

    def linear_shapes(self) -> dict[str, tuple[int, int]]:
        """(in_features, out_features) of each projection of one block, by canonical name."""
        h, i = self.hidden_size, self.expert_intermediate_size
        shapes = {k: v for k, v in self.attention_shapes().items() if k != "q_b_proj"}
        shapes.update({"up_proj": (h, i), "down_proj": (i, h)})
        if self.gated_mlp:
            shapes["gate_proj"] = (h, i)
        return shapes

    def module_copies(self, module: str) -> int:
        """How many copies of a projection a block holds (MLP projections repeat per expert)."""
        return self.num_experts if module in ("gate_proj", "up_proj", "down_proj") else 1

    def with_name(self, name: str) -> ModelSpec:
        return replace(self, name=name)

    @classmethod
    def from_parameter_count(cls, parameters: int, name: str = "") -> ModelSpec:
        """A Llama-shaped dense decoder with about ``parameters`` parameters.

        Used when the user knows only a parameter count. Shapes follow the Llama 2/3 aspect
        ratios (head_dim 128, hidden/layers ~ 128, SwiGLU width 3.5 x hidden, 8 KV heads);
        the KV cache and activation figures are therefore approximate, and the result says so.
        """
        if not isinstance(parameters, (int, float)) or not math.isfinite(parameters) or parameters < 1e6:
            raise InputError("model.parameters", "must be a number of parameters >= 1,000,000", parameters)
        target = float(parameters)
        vocab = 32000 if target < 2e9 else 128256
        candidates: list[ModelSpec] = []
        for layers in range(4, 161, 2):
            # ~12.75 h^2 per layer (GQA attention ~2.25 h^2, SwiGLU MLP 10.5 h^2) + 2 V h embeddings.
            a, b = 12.75 * layers, 2.0 * vocab
            h_real = (-b + math.sqrt(b * b + 4 * a * target)) / (2 * a)
            hidden = max(128, int(round(h_real / 128)) * 128)
            heads = hidden // 128
            candidates.append(
                cls(
                    name=name or f"custom {target / 1e9:.3g}B",
                    num_layers=layers,
                    hidden_size=hidden,
                    num_attention_heads=heads,
                    num_key_value_heads=math.gcd(heads, 8),
                    intermediate_size=max(256, int(round(hidden * 3.5 / 256)) * 256),
                    vocab_size=vocab,
                    gated_mlp=True,
                    tied_embeddings=False,
                    max_context=8192,
                    architecture_assumed=True,
                    published_params=int(target),
                    notes="Architecture assumed from the parameter count (Llama-like shapes).",
                )
            )
        close = [c for c in candidates if abs(c.parameters - target) <= 0.03 * target] or candidates
        best = min(
            close,
            key=lambda c: (abs(math.log(c.hidden_size / c.num_layers / 128)), abs(c.parameters - target)),
        )
        return best


def _count_parameters(m: ModelSpec) -> ParameterCounts:
    h = m.hidden_size
    d_q, d_kv = m.num_attention_heads * m.head_dim_, m.num_key_value_heads * m.head_dim_
    if m.is_mla:
        # Projections plus the RMSNorms on the query and key/value latents.
        attn = (
            sum(a * b for a, b in m.attention_shapes().values())
            + (m.q_lora_rank or 0)
            + (m.kv_lora_rank or 0)
        )
    else:
        attn = h * d_q + 2 * h * d_kv + d_q * h
        if m.attention_bias:
            attn += d_q + 2 * d_kv
    if m.attention_out_bias:
        attn += h
    i = m.expert_intermediate_size
    expert = (3 if m.gated_mlp else 2) * h * i
    if m.mlp_bias:
        expert += (2 * i if m.gated_mlp else i) + h
    router = h * m.num_experts if m.num_experts > 1 else 0
    norm_width = h if m.norm == "rmsnorm" else 2 * h
    norms = m.norms_per_layer * norm_width
    embedding = m.vocab_size * h + (m.max_context * h if m.position_embedding == "learned" else 0)
    lm_head = 0 if m.tied_embeddings else m.vocab_size * h
    final_norm = norm_width
    attention_total = m.num_layers * attn
    moe_layers = m.num_layers - m.dense_layers if m.is_moe else m.num_layers
    dense_mlp = (3 if m.gated_mlp else 2) * h * m.intermediate_size  # leading dense layers' MLP
    mlp_total = (
        moe_layers * ((m.num_experts + m.shared_experts) * expert + router)
        + (m.num_layers - moe_layers) * dense_mlp
    )
    other = m.num_layers * norms + final_norm + m.extra_params
    total = embedding + lm_head + attention_total + mlp_total + other
    inactive = moe_layers * (m.num_experts - m.experts_per_token) * expert
    return ParameterCounts(
        embedding=embedding,
        lm_head=lm_head,
        attention=attention_total,
        mlp=mlp_total,
        norms_and_other=other,
        total=total,
        active=total - inactive,
        routed_experts=moe_layers * m.num_experts * expert if m.is_moe else 0,
    )


#: Largest size of each architecture field: far above any published model, low enough that no
#: figure computed from them overflows or reads as nonsense.
ARCHITECTURE_LIMITS: dict[str, tuple[int, str]] = {
    "num_layers": (100_000, "the deepest published models have a few hundred layers"),
    "hidden_size": (1_048_576, "published models are at most about 50,000 wide"),
    "num_attention_heads": (65_536, "published models have at most a few hundred heads"),
    "num_key_value_heads": (65_536, "published models have at most a few hundred heads"),
    "intermediate_size": (16_777_216, "published MLPs are at most about 200,000 wide"),
    "moe_intermediate_size": (16_777_216, "published MLPs are at most about 200,000 wide"),
    "vocab_size": (16_777_216, "published vocabularies hold at most about a million tokens"),
    "num_experts": (1_048_576, "published models have at most a few thousand experts"),
    "experts_per_token": (1_048_576, "published models route to at most a few dozen experts"),
    "shared_experts": (1_048_576, "published models have at most a few shared experts"),
    "max_context": (1_000_000_000, "published models read at most about ten million tokens"),
    "sliding_window": (1_000_000_000, "a window longer than any context"),
    "norms_per_layer": (64, "blocks have two to four norms"),
    "dense_layers": (100_000, "the deepest published models have a few hundred layers"),
}
_DIMENSION_LIMIT = (1_048_576, "published heads and ranks are at most a few thousand wide")
#: Largest parameter count accepted from any source.
MAX_MODEL_PARAMETERS = 1e14


def _require_at_most(field_name: str, value: int) -> None:
    limit, why = ARCHITECTURE_LIMITS.get(field_name.rsplit(".", 1)[-1], _DIMENSION_LIMIT)
    if value > limit:
        raise InputError(field_name, f"must be at most {limit:,} ({why})", value)


def _require_positive_int(field_name: str, value: object, allow_zero: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < (0 if allow_zero else 1):
        raise InputError(field_name, "must be a whole number " + (">= 0" if allow_zero else "> 0"), value)


def _require_choice(field_name: str, value: object, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise InputError(field_name, f"must be one of {', '.join(choices)}", value)


def resolve_lora_targets(model: ModelSpec, targets: tuple[str, ...] | str) -> tuple[str, ...]:
    """Canonical projection names for a LoRA ``target_modules`` value (a list, or ``"all_linear"``)."""
    available = model.linear_shapes()
    if isinstance(targets, str):
        if targets.replace("-", "_") in ("all_linear", "all"):
            return tuple(name for name in CANONICAL_LINEAR_MODULES if name in available)
        targets = (targets,)
    resolved: list[str] = []
    for target in targets:
        names = (target,) if target in CANONICAL_LINEAR_MODULES else LINEAR_MODULE_ALIASES.get(target)
        if names is None:
            known = ", ".join(CANONICAL_LINEAR_MODULES + tuple(LINEAR_MODULE_ALIASES))
            raise InputError(
                "workload.lora_targets", f"unknown module name; use all_linear or one of {known}", target
            )
        for name in names:
            if name in available and name not in resolved:
                resolved.append(name)
    if not resolved:
        raise InputError("workload.lora_targets", "names no projection this model has", list(targets))
    return tuple(resolved)


def lora_parameters(model: ModelSpec, rank: int, targets: tuple[str, ...]) -> int:
    """Trainable LoRA parameters: rank x (in + out) per targeted projection, per layer (and expert)."""
    shapes = model.linear_shapes()
    per_layer = sum(rank * sum(shapes[t]) * model.module_copies(t) for t in targets)
    return per_layer * model.num_layers
