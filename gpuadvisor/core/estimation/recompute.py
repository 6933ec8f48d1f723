"""Per-operator selective activation checkpointing: what it keeps and what it recomputes.

Three recomputation policies come from Megatron (Korthikanti et al. 2022, "Reducing Activation
Recomputation in Large Transformer Models", sections 4-5): ``none`` keeps every activation,
``selective`` recomputes the attention core only, ``full`` keeps each layer's input and recomputes
the layer. PyTorch's selective activation checkpointing (``torch.utils.checkpoint.
create_selective_checkpoint_contexts``) lets a policy decide per operator; torchtitan's ``op`` option
(``activation_checkpoint.mode = "selective"``, ``selective_ac_option = "op"``, the default of its
Llama configurations) wraps each transformer block and saves only the outputs of

- the block's matrix multiplies (``aten.mm``), except every second one in the order they run,
- the attention kernel (``scaled_dot_product_flash/efficient_attention``: its output and the
  log-sum-exp statistics, 4 bytes per head and token),
- the tensor-parallel reduce-scatters (``reduce_scatter_tensor``), with sequence parallelism,

and recomputes everything else (norms, RoPE, activation functions, residual adds, the skipped
matrix multiplies) when the backward pass reaches the block (pytorch/torchtitan
``torchtitan/parallelisms/parallelize_llama.py``, ``_apply_ac_to_transformer_block``, commit
004b314). A Llama block runs its projections in the order q, k, v, o, gate (w1), up (w3), down
(w2), so it keeps q, v, gate and down and recomputes k, o and up:

    kept per token and layer = a (h + d_q + d_kv + i + h + d_q) + 4 heads
                               (block input, q, v, gate, down, attention output)
    recomputed forward FLOPs  = 2 (h d_kv + d_q h + h i) per token and layer

With tensor parallelism a row-parallel projection (o, down) computes a partial sum over the whole
sequence on every rank, so its saved output is ``a h`` per token whatever the TP degree; the
column-parallel outputs and the attention output are split over TP; the block input is split only
with sequence parallelism, which also saves the reduce-scatter output after each row-parallel
projection (``a h / t`` each).

References: Korthikanti et al. 2022 (arXiv:2205.05198); PyTorch ``torch.utils.checkpoint``
(selective checkpointing, PyTorch 2.4); torchtitan ``docs/performance.md`` and
``parallelize_llama.py`` (commit 004b314).
"""

from __future__ import annotations

from typing import NamedTuple

from ..specs.models import ModelSpec

#: The policies ``workload.activation_recompute`` takes (see the module docstring).
POLICIES = ("none", "selective", "op", "full")
#: Projections whose output a row-parallel split leaves as a whole-sequence partial sum.
ROW_PARALLEL = ("o_proj", "down_proj")
#: Bytes per head and token of the attention kernel's log-sum-exp statistics (fp32).
LSE_BYTES = 4.0


class OpKept(NamedTuple):
    """What the ``op`` policy keeps per token and layer, in bytes, by how tensor parallelism splits it
    (see :func:`op_policy`), and the forward FLOPs per token it recomputes over the whole model."""

    residual: float  # the block input: split over TP with sequence parallelism only
    split: float  # column-parallel outputs, the attention output and its statistics: split over TP
    rowwise: float  # row-parallel outputs: whole-sequence partial sums on every rank
    rowwise_count: int  # row-parallel projections per layer (one reduce-scatter each with SP)
    hidden_bytes: float  # a h: one reduce-scatter output before the TP split
    recompute_flops: float  # forward FLOPs per token of the matrix multiplies run again

    def per_token_layer(self, tp: int, sequence_parallel: bool) -> float:
        """Bytes kept per token and layer on one rank of a ``tp``-way tensor-parallel group."""
        if tp <= 1:
            return self.residual + self.split + self.rowwise
        kept = self.split / tp + self.rowwise
        if sequence_parallel:
            return kept + self.residual / tp + self.rowwise_count * self.hidden_bytes / tp
        return kept + self.residual


def projection_order(model: ModelSpec) -> list[tuple[str, int, int]]:
    """(name, in features, out features) of one block's matrix multiplies in the order they run:
    the attention projections, then the MLP's (gate before up when gated, down last)."""
    shapes = model.attention_shapes()
    order: list[tuple[str, int, int]] = [
        (n, *shapes[n]) for n in ("q_proj", "q_b_proj", "k_proj", "v_proj", "o_proj") if n in shapes
    ]
    h, i = model.hidden_size, model.expert_intermediate_size
    if model.gated_mlp:
        order.append(("gate_proj", h, i))
    order += [("up_proj", h, i), ("down_proj", i, h)]
    return order


def op_policy(model: ModelSpec, activation_bytes: float) -> OpKept:
    """What the per-operator policy keeps and recomputes for ``model`` (see the module docstring).
    A mixture-of-experts layer's MLP projections run once per routed expert of a token
    (``experts_per_token`` copies, each counted in the alternation)."""
    a, h = activation_bytes, model.hidden_size
    residual = a * h
    split = a * model.q_dim + LSE_BYTES * model.num_attention_heads  # attention output and statistics
    rowwise = 0.0
    rows = 0
    recompute_params = 0.0
    k = model.experts_per_token
    count = 0
    for name, fan_in, fan_out in projection_order(model):
        copies = k if name in ("gate_proj", "up_proj", "down_proj") else 1
        for _ in range(copies):
            count += 1
            if count % 2 == 0:
                recompute_params += fan_in * fan_out
            elif name in ROW_PARALLEL:
                rowwise += a * fan_out
            else:
                split += a * fan_out
        if name in ROW_PARALLEL:
            rows += 1
    return OpKept(
        residual=residual,
        split=split,
        rowwise=rowwise,
        rowwise_count=rows,
        hidden_bytes=a * h,
        recompute_flops=2.0 * recompute_params * model.num_layers,
    )
