"""How a job is laid out over its GPUs: tensor x pipeline x context x data parallel, experts,
interleaved stages, sequence parallelism, activation recomputation and the data-parallel sharding.

A :class:`Layout` is a cheap immutable value (a named tuple: a whole-catalog comparison builds
hundreds). The GPU count is ``TP x PP x CP x DP``; expert parallelism adds no GPUs: Megatron-Core's
MoE parallel folding (Liu et al. 2025, arXiv:2504.14960; ``megatron/core/parallel_state.py``)
lays the expert layers of each pipeline stage over the same ``TP x CP x DP`` GPUs as
``ETP x EP x EDP``: expert tensor parallel (``--expert-tensor-parallel-size``, TP's by default),
expert parallel, and the expert data-parallel group ``EDP = TP x CP x DP / (EP x ETP)`` that
gradients are reduced and the distributed optimizer shards over. ``EP x ETP`` must divide
``TP x CP x DP`` (and EP the expert count): EP32 with ETP1 fits TP2 x DP16, which Megatron's
older rule (EP divides DP x CP) refused.

:func:`scenario_layouts` gives the layouts a scenario asks for at one GPU count: the one it sets
(``hardware.parallelism`` and the layout axes, validated; the shorthands ``tensor`` and
``pipeline`` put every GPU on that axis), or, when it leaves the layout open, the data-parallel,
tensor and pipeline setups within one node and a pruned search beyond it (docs/estimation.md,
"Layout search"):

- TP over the divisors of the node size that divide the attention heads (never across nodes);
- PP over the divisors of the layer count (at least one layer per stage);
- CP 1, and 2, 4, 8 for long sequences (each rank keeps at least 8,192 tokens);
- EP 1 to 64 (dividing the experts and DP x CP; expert TP = TP) for mixture-of-experts models;
- recomputation none, selective and full (unless the workload sets it);
- ZeRO-1 (Megatron's distributed optimizer) or ZeRO-3 over the data-parallel replicas.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..errors import InputError
from ..specs.engines import record_of
from ..specs.models import ModelSpec
from ..specs.workload import Hardware, Workload
from ..vocabulary import GATHERING_SHARDINGS, OPTIMIZER_SHARDINGS

DATA_PARALLEL = ("ddp", "zero1", "zero2", "zero3", "fsdp")
#: Sequence length from which the search also tries context parallelism.
CP_MIN_TOKENS = 16_384
#: Context-parallel degrees the search tries for long sequences.
CP_CHOICES = (1, 2, 4, 8)
#: Expert-parallel degrees the search tries for mixture-of-experts models.
EP_CHOICES = (1, 2, 4, 8, 16, 32, 64)
#: How a layout's name calls its recomputation policy, where not by its key.
RECOMPUTE_NAMES = {"op": "per-op"}
_SHARDING_NAMES = {
    "zero1": "ZeRO-1",
    "zero2": "ZeRO-2",
    "zero3": "ZeRO-3",
    "fsdp": "FSDP",
}


class Layout(NamedTuple):
    """One way to lay a job over ``gpus`` GPUs (see the module docstring)."""

    tp: int = 1
    pp: int = 1
    cp: int = 1
    ep: int = 1
    dp: int = 1
    vpp: int = 1
    sequence_parallel: bool = False
    recompute: str = "none"
    sharding: str = "none"  # none (one replica), ddp, zero1, zero2, zero3, fsdp
    #: The old one-word setup this layout came from ("" for a composite layout).
    shorthand: str = ""
    #: Tensor parallelism inside the expert layers; 0: the same as ``tp`` (Megatron's default).
    etp: int = 0
    #: Ranks of the DP x CP group each ZeRO/FSDP shard group spans (hybrid sharding, HSDP: the
    #: state is sharded inside a group and replicated across the groups); 0: the whole group.
    shard: int = 0

    @property
    def shard_ways(self) -> int:
        """How many ways ZeRO/FSDP divides the training state: the shard group, else DP x CP."""
        return self.shard or self.dp * self.cp

    @property
    def shard_replicas(self) -> int:
        """Copies of the sharded state across the DP x CP group (1 without hybrid sharding)."""
        return max(1, self.dp * self.cp // self.shard_ways)

    @property
    def expert_tp(self) -> int:
        """Expert tensor parallel (ETP): ``etp`` when set, else TP."""
        return self.etp or self.tp

    @property
    def expert_dp(self) -> int:
        """Expert data parallel (EDP): the GPUs of a stage, ``TP x CP x DP``, over ``EP x ETP``."""
        return max(1, self.tp * self.cp * self.dp // (self.ep * self.expert_tp))

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.cp * self.dp

    @property
    def parallelism(self) -> str:
        """The one-word setup: the shorthand it came from, else the data-parallel sharding."""
        if self.shorthand:
            return self.shorthand
        if self.gpus == 1:
            return "none"
        if self.tp == self.gpus:
            return "tensor"
        if self.pp == self.gpus:
            return "pipeline"
        return self.sharding if self.sharding != "none" else "model"

    @property
    def name(self) -> str:
        """A short human name: ``TP8 · PP4 · DP32 · selective recompute``."""
        parts = []
        if self.tp > 1:
            parts.append(f"TP{self.tp}" + (" SP" if self.sequence_parallel else ""))
        if self.pp > 1:
            parts.append(f"PP{self.pp}" + (f"×{self.vpp}" if self.vpp > 1 else ""))
        if self.cp > 1:
            parts.append(f"CP{self.cp}")
        if self.ep > 1 or self.expert_tp != self.tp:
            parts.append(f"EP{self.ep}" + (f" ETP{self.expert_tp}" if self.expert_tp != self.tp else ""))
        shard = _SHARDING_NAMES.get(self.sharding)
        if shard and self.shard_replicas > 1:  # hybrid: sharded in groups, replicated across them
            shard = f"{'HSDP' if self.sharding in GATHERING_SHARDINGS else shard} in groups of {self.shard}"
        if self.dp > 1:
            parts.append(f"DP{self.dp}" + (f" {shard}" if shard else ""))
        elif shard and self.cp > 1:
            parts.append(shard)  # sharded over the context-parallel ranks
        if not parts:
            parts.append("1 GPU")
        if self.recompute != "none":
            parts.append(f"{RECOMPUTE_NAMES.get(self.recompute, self.recompute)} recompute")
        return " · ".join(parts)

    @property
    def short_name(self) -> str:
        """A compact name for narrow table cells: ``TP8·PP4·DP2 ZeRO-1·selective``."""
        return (
            self.name.replace(" SP", "").replace(" · ", "·").replace(" recompute", "").replace("1 GPU·", "")
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "tensor_parallel": self.tp,
            "pipeline_parallel": self.pp,
            "context_parallel": self.cp,
            "expert_parallel": self.ep,
            "expert_tensor_parallel": self.expert_tp,
            "data_parallel": self.dp,
            "virtual_pipeline_stages": self.vpp,
            "sequence_parallel": self.sequence_parallel,
            "activation_recompute": self.recompute,
            "data_parallel_sharding": self.sharding,
            "data_parallel_shard": self.shard_ways,
            "name": self.name,
        }


def default_sequence_parallel(workload: Workload, tp: int) -> bool:
    """Sequence parallelism goes with tensor parallelism in Megatron (the pretraining default)."""
    return tp > 1 and record_of(workload.engine, workload.kind).sequence_parallel


def from_parallelism(
    workload: Workload, gpu_count: int, parallelism: str, hw: Hardware | None = None
) -> Layout:
    """The layout of the one-word setup ``parallelism`` over ``gpu_count`` GPUs."""
    n = max(1, gpu_count)
    recompute = workload.recompute if workload.is_training else "none"
    sp_given = hw.sequence_parallel if hw is not None else None
    if n == 1 or parallelism == "none":
        return Layout(recompute=recompute, shorthand="none" if n == 1 else parallelism)
    if parallelism == "tensor":
        # The tensor-parallel setups of earlier versions kept sequence parallelism on; an explicit
        # hardware.sequence_parallel wins.
        sp = True if sp_given is None else sp_given
        return Layout(tp=n, sequence_parallel=sp, recompute=recompute, shorthand="tensor")
    if parallelism == "pipeline":
        return Layout(pp=n, recompute=recompute, shorthand="pipeline")
    return Layout(dp=n, recompute=recompute, sharding=parallelism, shorthand=parallelism)


def plain_layout(gpu_count: int, parallelism: str) -> Layout:
    """The layout of a one-word setup without recomputation (candidates built without a workload)."""
    n = max(1, gpu_count)
    if n == 1 or parallelism == "none":
        return Layout(shorthand="none" if n == 1 else parallelism)
    if parallelism == "tensor":
        return Layout(tp=n, sequence_parallel=True, shorthand="tensor")
    if parallelism == "pipeline":
        return Layout(pp=n, shorthand="pipeline")
    return Layout(dp=n, sharding=parallelism, shorthand=parallelism)


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _check_expert_parallel(model: ModelSpec, layout: Layout, gpus_per_node: int) -> None:
    """Raise when expert parallelism ``layout.ep`` x expert tensor parallelism cannot split the
    model's experts over the stage's ``TP x CP x DP`` GPUs (MoE parallel folding)."""
    etp = layout.expert_tp
    field = "hardware.expert_parallel" if layout.ep > 1 else "hardware.expert_tensor_parallel"
    if not model.is_moe:
        raise InputError(field, "needs a mixture-of-experts model", layout.ep if layout.ep > 1 else etp)
    if model.num_experts % layout.ep:
        raise InputError(
            "hardware.expert_parallel",
            f"the {model.num_experts} experts do not divide evenly over EP{layout.ep}",
            layout.ep,
        )
    if etp != layout.tp:
        if etp > gpus_per_node:
            raise InputError(
                "hardware.expert_tensor_parallel",
                f"ETP{etp} is larger than a node of {gpus_per_node} GPUs: expert tensor parallelism "
                "stays inside a node",
                etp,
            )
        if model.expert_intermediate_size % etp:
            raise InputError(
                "hardware.expert_tensor_parallel",
                f"the experts' {model.expert_intermediate_size} hidden units do not divide evenly over ETP{etp}",
                etp,
            )
    stage = layout.tp * layout.cp * layout.dp
    if stage % (layout.ep * etp):
        hint = "; set hardware.expert_tensor_parallel (1: experts whole on each GPU)" if etp > 1 else ""
        raise InputError(
            "hardware.expert_parallel",
            f"EP{layout.ep} x expert TP{etp} must divide the tensor x context x data-parallel group "
            f"({stage} GPUs){hint}",
            layout.ep,
        )


def check_layout(model: ModelSpec, workload: Workload, hw: Hardware, layout: Layout) -> Layout:
    """Raise a one-line :class:`InputError` naming the field when ``layout`` cannot run."""
    if layout.tp > 1:
        if layout.tp > hw.gpus_per_node:
            raise InputError(
                "hardware.tensor_parallel",
                f"TP{layout.tp} is larger than a node of {hw.gpus_per_node} GPUs: tensor parallelism "
                "stays inside a node (raise gpus_per_node if your nodes are larger)",
                layout.tp,
            )
        if model.num_attention_heads % layout.tp:
            raise InputError(
                "hardware.tensor_parallel",
                f"the {model.num_attention_heads} attention heads do not divide evenly over TP{layout.tp}",
                layout.tp,
            )
    if layout.pp > model.num_layers:
        raise InputError(
            "hardware.pipeline_parallel",
            f"PP{layout.pp} needs at least one of the {model.num_layers} layers per stage",
            layout.pp,
        )
    if layout.vpp > 1:
        if layout.pp == 1:
            raise InputError(
                "hardware.virtual_pipeline_stages", "interleaving needs pipeline_parallel > 1", layout.vpp
            )
        if layout.pp * layout.vpp > model.num_layers:
            raise InputError(
                "hardware.virtual_pipeline_stages",
                f"PP{layout.pp} x {layout.vpp} chunks need at least one of the {model.num_layers} layers each",
                layout.vpp,
            )
    if layout.ep > 1 or layout.expert_tp != layout.tp:
        _check_expert_parallel(model, layout, hw.gpus_per_node)
    if layout.cp > 1 and workload.seq_len % layout.cp:
        raise InputError(
            "hardware.context_parallel",
            f"the sequence of {workload.seq_len} tokens does not split evenly over CP{layout.cp}",
            layout.cp,
        )
    if layout.shard:
        _check_shard(workload, layout)
    off = workload.offload
    if off.parameters != "none" and layout.sharding not in GATHERING_SHARDINGS and layout.gpus > 1:
        raise InputError(
            "workload.offload.parameters",
            "offloading parameters needs ZeRO-3 or FSDP (hardware.parallelism zero3 or fsdp)",
            off.parameters,
        )
    if not workload.is_training and layout.tp > 1 and layout.pp > 1:
        raise InputError(
            "hardware.pipeline_parallel",
            "serving is modelled with tensor or pipeline parallelism in each replica, not both",
            layout.pp,
        )
    if not workload.is_training and (
        layout.cp > 1 or layout.ep > 1 or layout.vpp > 1 or layout.expert_tp != layout.tp
    ):
        raise InputError(
            "hardware.context_parallel" if layout.cp > 1 else "hardware.expert_parallel",
            "context, expert and interleaved pipeline parallelism are modelled for training only",
            max(layout.cp, layout.ep, layout.vpp),
        )
    return layout


def _check_shard(workload: Workload, layout: Layout) -> None:
    """Raise when the hybrid-sharding group cannot run: it shards ZeRO or FSDP training state, over
    a whole number of groups of the DP x CP ranks."""
    group = layout.dp * layout.cp
    if not workload.is_training or layout.sharding not in OPTIMIZER_SHARDINGS:
        raise InputError(
            "hardware.data_parallel_shard",
            "hybrid sharding groups ZeRO or FSDP training state: set hardware.parallelism to zero1, "
            "zero2, zero3 or fsdp",
            layout.shard,
        )
    if group % layout.shard:
        raise InputError(
            "hardware.data_parallel_shard",
            f"shard groups of {layout.shard} do not divide the {group} data-parallel ranks "
            f"(DP{layout.dp} x CP{layout.cp}) evenly",
            layout.shard,
        )


def explicit_layout(model: ModelSpec, workload: Workload, hw: Hardware, gpu_count: int) -> Layout:
    """The layout the scenario sets at ``gpu_count`` GPUs (unset axes are 1), validated."""
    n = gpu_count
    par = hw.parallelism
    tp = hw.tensor_parallel or 1
    pp = hw.pipeline_parallel or 1
    cp = hw.context_parallel or 1
    if par == "tensor" and hw.tensor_parallel is None:
        tp = max(1, n // (pp * cp))
    if par == "pipeline" and hw.pipeline_parallel is None:
        pp = max(1, n // (tp * cp))
    group = tp * pp * cp
    if n % group:
        raise InputError(
            "hardware.gpu_count",
            f"{n} GPUs do not divide into whole replicas of TP{tp} x PP{pp} x CP{cp} = {group} GPUs",
            n,
        )
    dp = n // group
    if par in DATA_PARALLEL:
        # ZeRO and FSDP shard over the data-parallel x context group (context-parallel ranks hold the
        # same weights): CP8 with one data-parallel replica still shards eight ways.
        sharded = dp * cp > 1 or workload.offload.parameters != "none"
        sharding = par if sharded else "none"
    elif par in ("tensor", "pipeline") and dp > 1:
        sharding = "ddp"
    else:
        sharding = "ddp" if dp > 1 else "none"
    if par in DATA_PARALLEL and not workload.is_training and par != "ddp":
        raise InputError(
            "hardware.parallelism",
            "ZeRO and FSDP shard training state; for inference use ddp (replicas), tensor or pipeline",
            par,
        )
    sp = hw.sequence_parallel
    if sp is None:
        sp = default_sequence_parallel(workload, tp) or (par == "tensor" and tp > 1)
    recompute = workload.recompute if workload.is_training else "none"
    simple = (
        hw.tensor_parallel is None
        and hw.pipeline_parallel is None
        and hw.context_parallel is None
        and hw.expert_parallel is None
        and hw.expert_tensor_parallel is None
        and hw.virtual_pipeline_stages is None
        and hw.data_parallel_shard in (None, dp * cp)  # a shard group of the whole group: plain
    )
    shard = hw.data_parallel_shard or 0
    layout = Layout(
        tp=tp,
        pp=pp,
        cp=cp,
        ep=hw.expert_parallel or 1,
        dp=dp,
        vpp=hw.virtual_pipeline_stages or 1,
        etp=hw.expert_tensor_parallel if hw.expert_tensor_parallel not in (None, tp) else 0,
        sequence_parallel=bool(sp and tp > 1),
        recompute=recompute,
        sharding=sharding,
        shorthand=(par or "") if simple and par else ("none" if n == 1 and simple else ""),
        # A shard group as large as the whole group is plain sharding.
        shard=shard if shard and shard != dp * cp else 0,
    )
    if shard and shard > dp * cp:
        raise InputError(
            "hardware.data_parallel_shard",
            f"shard groups of {shard} are larger than the {dp * cp} data-parallel ranks (DP{dp} x CP{cp})",
            shard,
        )
    return check_layout(model, workload, hw, layout)


def searched_layouts(model: ModelSpec, workload: Workload, hw: Hardware, gpu_count: int) -> list[Layout]:
    """Every layout the search tries at ``gpu_count`` GPUs (see the module docstring)."""
    n = gpu_count
    node = hw.gpus_per_node
    recomputes = (
        (workload.recompute,)
        if workload.activation_recompute is not None or workload.gradient_checkpointing
        else ("none", "selective", "full")
    )
    tps = [t for t in _divisors(node) if model.num_attention_heads % t == 0 and n % t == 0]
    pps = [p for p in _divisors(model.num_layers) if n % p == 0]
    # Context parallelism for long sequences only: each rank keeps at least 8k tokens.
    cps = tuple(c for c in CP_CHOICES if c == 1 or workload.seq_len // c >= CP_MIN_TOKENS // 2)
    params_offload = workload.offload.parameters != "none"
    out: list[Layout] = []
    for t in tps:
        sp = default_sequence_parallel(workload, t) if hw.sequence_parallel is None else hw.sequence_parallel
        for p in pps:
            for c in cps:
                group = t * p * c
                if n % group or (c > 1 and workload.seq_len % c):
                    continue
                d = n // group
                shardings = ("zero3",) if params_offload else ("zero1", "zero3") if d > 1 else ("none",)
                eps = [e for e in EP_CHOICES if model.num_experts % e == 0 and (d * c) % e == 0]
                for e in eps if model.is_moe else (1,):
                    for shard in shardings:
                        for r in recomputes:
                            out.append(
                                Layout(
                                    tp=t,
                                    pp=p,
                                    cp=c,
                                    ep=e,
                                    dp=d,
                                    sequence_parallel=bool(sp and t > 1),
                                    recompute=r,
                                    sharding=shard,
                                )
                            )
    return out


def gpu_counts(hw: Hardware, defaults: tuple[int, ...]) -> tuple[int, ...]:
    """GPU counts a comparison tries: the scenario's count, else ``defaults`` and whole nodes up to
    ``hardware.gpu_count_max`` (doubling: 2, 4, 8, ... nodes, and the maximum itself)."""
    if hw.gpu_count:
        return (hw.gpu_count,)
    top = hw.gpu_count_max or max(defaults)
    counts = [c for c in defaults if c <= top]
    node = hw.gpus_per_node
    nodes = 2
    while node * nodes <= top:
        counts.append(node * nodes)
        nodes *= 2
    whole = top // node * node
    if whole > node and whole not in counts:
        counts.append(whole)
    return tuple(sorted(set(counts)))
