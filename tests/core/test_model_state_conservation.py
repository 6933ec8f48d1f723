"""Conservation of model state: sharding moves bytes between GPUs, it never makes them vanish.

For any training layout (TP x PP x CP x DP, expert parallelism, ZeRO 0-3 or FSDP, offload) the
per-GPU weights, gradients and optimizer state times the GPU count, plus what each GPU moved to
host RAM or NVMe, must hold at least the model's whole state (one copy of every byte), and at
most that times the replication the layout implies:

    data parallel   DP x CP copies of what ZeRO leaves whole (weights below ZeRO-3, gradients
                    below ZeRO-2, optimizer state below ZeRO-1), 1 of what it shards;
    tensor parallel norms stay whole on every TP rank: 1 + (TP - 1) x (their share of the bytes);
    pipeline        the fuller stage is reported for every stage: its layers rounded up, and its
                    end (embedding or head) on every stage.

An expert split over EP and again over the whole data-parallel group (the fault this test was
written for: Kimi K2 on 32 GPUs, ZeRO-3, EP16 showed 25 GiB of optimizer state per GPU instead of
about 358 GiB) breaks the lower bound. Models: dense and mixture-of-experts presets (with shared
experts and leading dense layers) and random architectures.
"""

import math

import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from gpuadvisor.core.errors import InputError
from gpuadvisor.core.estimation.layout import Layout, check_layout
from gpuadvisor.core.estimation.memory import MemoryModel
from gpuadvisor.core.specs.models import ModelSpec
from gpuadvisor.core.specs.presets import load_model_catalog
from gpuadvisor.core.specs.workload import Hardware, Offload, Workload
from gpuadvisor.core.units import GIB

EXAMPLES = 1200
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow],
)
PRESETS = (
    "llama-3.1-8b",
    "qwen3-0.6b",
    "gpt2-xl",
    "mixtral-8x7b",
    "qwen3-30b-a3b",
    "gpt-oss-20b",
    "deepseek-v3",
    "kimi-k2",
)
WEIGHTS = {
    "pretrain": ("bf16", "fp32", "fp8"),
    "full_finetune": ("bf16", "fp16", "fp32"),
    "lora": ("bf16", "int4"),
    "qlora": ("nf4",),
}
SHARDINGS = ("none", "ddp", "zero1", "zero2", "zero3", "fsdp")
ZERO_WEIGHTS = ("zero3", "fsdp")
ZERO_GRADS = ("zero2", "zero3", "fsdp")
ZERO_OPTIM = ("zero1", "zero2", "zero3", "fsdp")
_CATALOG = load_model_catalog()


@st.composite
def random_models(draw):
    heads = draw(st.sampled_from([4, 8, 16, 32]))
    experts = draw(st.sampled_from([1, 1, 4, 8, 16, 64]))
    layers = draw(st.integers(2, 48))
    return ModelSpec(
        name="random",
        num_layers=layers,
        hidden_size=heads * 64,
        num_attention_heads=heads,
        num_key_value_heads=draw(st.sampled_from([h for h in (1, 2, 4, heads) if heads % h == 0])),
        intermediate_size=draw(st.integers(64, 8192)),
        vocab_size=draw(st.integers(1000, 160_000)),
        tied_embeddings=draw(st.booleans()),
        num_experts=experts,
        experts_per_token=min(experts, draw(st.integers(1, 8))),
        moe_intermediate_size=draw(st.integers(64, 2048)) if experts > 1 else None,
        dense_layers=draw(st.integers(0, min(3, layers))) if experts > 1 else 0,
        shared_experts=draw(st.integers(0, 2)) if experts > 1 else 0,
        norm=draw(st.sampled_from(["rmsnorm", "layernorm"])),
        position_embedding=draw(st.sampled_from(["rope", "learned"])),
        max_context=4096,
    )


def _divisors(n, cap):
    return [d for d in range(1, min(n, cap) + 1) if n % d == 0]


@st.composite
def jobs(draw):
    """(model, workload, layout) for a valid training layout."""
    if draw(st.booleans()):
        model = _CATALOG.get(draw(st.sampled_from(PRESETS)))
    else:
        model = draw(random_models())
    kind = draw(st.sampled_from(tuple(WEIGHTS)))
    tp = draw(st.sampled_from(_divisors(model.num_attention_heads, 8)))
    pp = draw(st.sampled_from([p for p in (1, 2, 4, 8) if p <= model.num_layers]))
    cp = draw(st.sampled_from([1, 2, 4]))
    dp = draw(st.sampled_from([1, 2, 4, 8, 16, 32]))
    # Expert TP: TP's (0) or, folded (Megatron's MoE parallel folding), its own degree with EP x ETP
    # dividing TP x CP x DP.
    etp = draw(st.sampled_from([0, 0, 1, 2, 4])) if model.is_moe else 0
    fold = etp or tp
    eps = [
        e for e in (1, 2, 4, 8, 16, 32, 64) if model.num_experts % e == 0 and (tp * dp * cp) % (e * fold) == 0
    ]
    assume(eps or not model.is_moe)
    ep = draw(st.sampled_from(eps)) if model.is_moe else 1
    sharding = draw(st.sampled_from(SHARDINGS)) if dp * cp > 1 else "none"
    opt_off = draw(st.sampled_from(["none", "none", "cpu", "nvme"]))
    par_off = draw(st.sampled_from(["none", "cpu", "nvme"])) if sharding in ZERO_WEIGHTS else "none"
    workload = Workload(
        kind=kind,
        weights=draw(st.sampled_from(WEIGHTS[kind])),
        batch_size=draw(st.integers(1, 8)),
        seq_len=1024 * cp,
        optimizer=draw(st.sampled_from(("adamw", "adamw_8bit", "sgd", "adafactor"))),
        optimizer_state_dtype=draw(st.sampled_from(("fp32", "bf16"))),
        master_weights=draw(st.booleans()),
        lora_rank=draw(st.sampled_from([8, 64])),
        offload=Offload(optimizer=opt_off, parameters=par_off),
        global_batch_size=None,
    )
    layout = Layout(
        tp=tp,
        pp=pp,
        cp=cp,
        ep=ep,
        dp=dp,
        etp=etp if etp != tp else 0,
        sharding=sharding,
        sequence_parallel=tp > 1,
    )
    try:
        check_layout(model, workload, Hardware(gpus_per_node=8), layout)
    except InputError:
        assume(False)
    return model, workload, layout


def _bounds(mm: MemoryModel, layout: Layout) -> dict[str, tuple[float, float]]:
    """Whole state and upper replication factor per component (see the module docstring)."""
    c = mm.model.counts
    t, p, dpc, L = layout.tp, layout.pp, layout.dp * layout.cp, mm.layers
    rounding = math.ceil(L / p) * p / L

    def tp_pp(norm_share: float, edge_share: float) -> float:
        tp = 1 + (t - 1) * norm_share
        pp = rounding + (p * edge_share if p > 1 else 0.0)
        return tp * pp

    state_edges = max(c.embedding, c.lm_head or c.embedding) / c.total
    weight_edges = max(mm.embedding_bytes, mm.head_bytes or mm.embedding_bytes) / mm.weight_bytes
    states = tp_pp(c.norms_and_other / c.total, state_edges)
    weights = tp_pp(mm.norm_bytes / mm.weight_bytes, weight_edges)
    s = layout.sharding
    # Folded experts split fewer ways than TP (EP x ETP < TP) are copied on TP / (EP x ETP) of the
    # tensor-parallel ranks too: at most that many more copies of what ZeRO leaves whole.
    whole = dpc * max(1.0, t / (layout.ep * layout.expert_tp))
    return {
        "weights": (mm.weight_bytes, weights * (1 if s in ZERO_WEIGHTS else whole)),
        "adapters": (mm.adapter_bytes, rounding * (1 if s in ZERO_WEIGHTS else whole)),
        "gradients": (
            mm.grad_bytes,
            (rounding if mm.workload.uses_adapters else states) * (1 if s in ZERO_GRADS else whole),
        ),
        "optimizer": (
            mm.optim_bytes,
            (rounding if mm.workload.uses_adapters else states) * (1 if s in ZERO_OPTIM else whole),
        ),
    }


@SETTINGS
@given(jobs())
def test_sharded_state_adds_up_to_the_whole_model(job):
    model, workload, layout = job
    for label in (
        "MoE" if model.is_moe else "dense",
        f"sharding {layout.sharding}",
        "EP > 1" if layout.ep > 1 else "EP 1",
        "folded (ETP != TP)" if layout.expert_tp != layout.tp else "ETP = TP",
        "TP > 1" if layout.tp > 1 else "TP 1",
        "PP > 1" if layout.pp > 1 else "PP 1",
        "CP > 1" if layout.cp > 1 else "CP 1",
        "offload" if workload.offload.any else "no offload",
    ):
        event(label)
    mm = MemoryModel(model, workload)
    n = layout.gpus
    # With pipeline parallelism each component is taken from the stage that holds more of it (the
    # first stage holds the embedding, the last the head): every GPU holds at most that.
    stages = [mm.stage_breakdown(layout, s) for s in ("first", "last")] if layout.pp > 1 else []
    bd = max(stages, key=lambda b: b.offloaded) if stages else mm.breakdown(layout=layout)
    per_gpu = {
        name: max(value(b) for b in stages or [bd])
        for name, value in (
            ("weights", lambda b: b.weights - b.gathered),
            ("adapters", lambda b: b.adapters),
            ("gradients", lambda b: b.gradients - b.accumulating),
            ("optimizer", lambda b: b.optimizer),
        )
    }
    bounds = _bounds(mm, layout)
    whole = sum(b[0] for b in bounds.values())
    held = n * (sum(per_gpu.values()) + bd.offloaded)
    assert held >= whole * (1 - 1e-9), (layout.name, held / GIB, whole / GIB)
    if not workload.offload.any:
        for name, (total, replication) in bounds.items():
            got = n * per_gpu[name]
            assert got >= total * (1 - 1e-9), (name, layout.name, got / GIB, total / GIB)
            assert got <= total * replication * (1 + 1e-9) + 1.0, (
                name,
                layout.name,
                got / total,
                replication,
            )
    else:
        # Offloaded gradients stream through the GPU: up to two layers of them stay there too.
        ceiling = (
            sum(total * replication for total, replication in bounds.values()) + n * per_gpu["gradients"]
        )
        assert held <= ceiling * (1 + 1e-9) + 1.0, (layout.name, held / whole)


KIMI_K2_ZERO3_EP16 = Layout(dp=32, ep=16, sharding="zero3")


def test_kimi_k2_pretraining_holds_a_thirty_second_of_its_optimizer_state_per_gpu():
    """Kimi K2 (1.03T parameters) pre-trained on 32 H100 with ZeRO-3 and EP16: 12 bytes of AdamW
    state per parameter (fp32 master copy and two moments) over 32 GPUs is about 358 GiB each."""
    model = _CATALOG.get("kimi-k2")
    mm = MemoryModel(model, Workload(kind="pretrain", weights="bf16", batch_size=1, seq_len=4096))
    bd = mm.breakdown(layout=KIMI_K2_ZERO3_EP16)
    assert bd.optimizer / GIB == pytest.approx(12 * model.counts.total / 32 / GIB, rel=1e-9)
    assert 355 < bd.optimizer / GIB < 362
    # Weights and gradients too are 1/32 of the whole under ZeRO-3 (plus the layers in flight).
    assert bd.gradients == pytest.approx(mm.grad_bytes / 32, rel=1e-9)
    assert bd.weights - bd.gathered == pytest.approx(mm.weight_bytes / 32, rel=1e-9)


def test_expert_parallel_without_zero_splits_only_the_routed_experts():
    """DDP with EP: every GPU keeps the dense part whole and 1/EP of the routed experts."""
    model = _CATALOG.get("deepseek-v3")
    mm = MemoryModel(model, Workload(kind="pretrain", weights="bf16", batch_size=1, seq_len=4096))
    c = model.counts
    bd = mm.breakdown(layout=Layout(dp=8, ep=8, sharding="ddp"))
    expected = (c.total - c.routed_experts + c.routed_experts / 8) / c.total * mm.optim_bytes
    assert bd.optimizer == pytest.approx(expected, rel=1e-9)
    # Shared experts, routers and the three leading dense layers are not routed experts.
    assert 0 < c.routed_experts < c.mlp
