"""Property tests of the memory model over random valid architectures and workloads.

Every component is finite and non-negative; memory never shrinks when the batch, the context
or the model grows; ZeRO stages never use more memory per GPU than the stage before; FSDP
equals ZeRO-3.
"""

import math
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from gpuadvisor.core.estimation.memory import COMPONENTS, MemoryModel, applicable_parallelisms, kbit_prepared
from gpuadvisor.core.specs.models import ModelSpec
from gpuadvisor.core.specs.workload import KV_PRECISIONS, OPTIMIZERS, Workload

SETTINGS = settings(max_examples=150, deadline=None, database=None)
FIELDS = COMPONENTS + ("logits", "gathered")
SAFE_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "up_proj", "down_proj")  # exist in every model
WEIGHTS_FOR_KIND = {
    "inference": ("fp32", "bf16", "fp16", "fp8", "int8", "int4", "nf4"),
    "lora": ("fp32", "bf16", "fp16", "fp8", "int8", "int4", "nf4"),
    "qlora": ("int8", "int4", "nf4"),
    "full_finetune": ("fp32", "bf16", "fp16", "fp8"),
    "pretrain": ("fp32", "bf16", "fp16", "fp8"),
}
TRAINING = ("lora", "qlora", "full_finetune", "pretrain")


@st.composite
def model_specs(draw):
    heads = draw(st.sampled_from([1, 2, 4, 6, 8, 12, 16, 32, 40, 64]))
    divisors = [d for d in range(1, heads + 1) if heads % d == 0]
    kv_heads = divisors[draw(st.integers(0, len(divisors) - 1))]
    head_dim = draw(st.sampled_from([16, 32, 64, 80, 128]))
    experts = draw(st.integers(1, 8))
    window = draw(st.one_of(st.none(), st.integers(1, 8192)))
    gated, tied, layernorm, learned = (bool(draw(st.integers(0, 15)) >> k & 1) for k in range(4))
    return ModelSpec(
        name="random",
        num_layers=draw(st.integers(1, 96)),
        hidden_size=heads * head_dim,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        intermediate_size=draw(st.integers(16, 32768)),
        vocab_size=draw(st.integers(1000, 256000)),
        gated_mlp=gated,
        tied_embeddings=tied,
        num_experts=experts,
        experts_per_token=draw(st.integers(1, experts)),
        sliding_window=window,
        sliding_window_layer_fraction=draw(st.sampled_from([1.0, 0.5, 0.25])) if window else 1.0,
        norm="layernorm" if layernorm else "rmsnorm",
        position_embedding="learned" if learned else "rope",
        max_context=4096,
    )


@st.composite
def workloads(draw, kinds=tuple(WEIGHTS_FOR_KIND)):
    kind = draw(st.sampled_from(kinds))
    flags = draw(st.integers(0, 63))
    mask = draw(st.integers(1, 63))  # which of SAFE_TARGETS LoRA targets when not all_linear
    checkpointing, flash, dropout, master, double_quant, all_linear = (bool(flags >> k & 1) for k in range(6))
    return Workload(
        kind=kind,
        weights=draw(st.sampled_from(WEIGHTS_FOR_KIND[kind])),
        kv_cache=draw(st.sampled_from((None,) + KV_PRECISIONS)),
        batch_size=draw(st.integers(1, 64)),
        seq_len=draw(st.integers(1, 65536)),
        prompt_tokens=draw(st.integers(1, 65536)),
        output_tokens=draw(st.integers(1, 4096)),
        optimizer=draw(st.sampled_from(OPTIMIZERS)),
        gradient_checkpointing=checkpointing,
        flash_attention=flash,
        lora_rank=draw(st.integers(1, 256)),
        lora_targets="all_linear"
        if all_linear
        else tuple(t for k, t in enumerate(SAFE_TARGETS) if mask >> k & 1),
        lora_dropout=dropout,
        master_weights=master,
        double_quant=double_quant,
    )


def setups(mm, counts=(1, 2, 4, 8)):
    for n in counts:
        for par in applicable_parallelisms(mm.model, mm.workload, n):
            yield n, par


def assert_sane(bd):
    for name in FIELDS:
        value = getattr(bd, name)
        assert math.isfinite(value) and value >= 0, (name, value)
    assert bd.gathered <= bd.weights * (1 + 1e-12)
    assert bd.logits <= bd.activations * (1 + 1e-12) + 1e-6  # the loss buffer is part of activations
    for total in (bd.tensors_total, bd.device_total, bd.model_states):
        assert math.isfinite(total)
    assert bd.tensors_total > 0 and bd.device_total >= bd.tensors_total
    assert bd.model_states >= -1e-6 * bd.tensors_total


def assert_not_smaller(small, big):
    """Every component and both totals of ``big`` are at least those of ``small`` (float slack)."""
    for name in COMPONENTS + ("tensors_total", "device_total"):
        a, b = getattr(small, name), getattr(big, name)
        assert b >= a - 1e-9 * max(abs(a), 1.0), (name, a, b)


@SETTINGS
@given(model_specs(), workloads())
def test_every_component_finite_and_non_negative(model, workload):
    mm = MemoryModel(model, workload)
    assert_sane(mm.breakdown())
    for n, par in setups(mm):
        assert_sane(mm.breakdown(n, par))


@SETTINGS
@given(
    model_specs(),
    workloads(),
    st.integers(1, 64),
    st.integers(1, 64),
    st.integers(1, 65536),
    st.integers(1, 65536),
    st.sampled_from([1, 2, 4, 8]),
)
def test_memory_non_decreasing_in_batch_and_context(model, workload, b1, b2, c1, c2, n):
    mm = MemoryModel(model, workload)
    b_lo, b_hi = sorted((b1, b2))
    c_lo, c_hi = sorted((c1, c2))
    for count, par in setups(mm, (n,)):
        small = mm.breakdown(count, par, batch_size=b_lo)
        assert_sane(small)
        assert_not_smaller(small, mm.breakdown(count, par, batch_size=b_hi))
        short = mm.breakdown(count, par, context=c_lo)
        assert_sane(short)
        assert_not_smaller(short, mm.breakdown(count, par, context=c_hi))


@SETTINGS
@given(model_specs(), workloads(), st.integers(1, 32), st.integers(1, 7), st.sampled_from([1, 2, 4, 8]))
def test_memory_non_decreasing_in_parameters(model, workload, more_layers, more_experts, n):
    """More layers, or more experts (memory counts every expert, even those a token skips)."""
    small = MemoryModel(model, workload)
    deeper = MemoryModel(replace(model, num_layers=model.num_layers + more_layers), workload)
    wider = MemoryModel(replace(model, num_experts=model.num_experts + more_experts), workload)
    assert (
        deeper.model.parameters > small.model.parameters and wider.model.parameters > small.model.parameters
    )
    assert_not_smaller(small.breakdown(), wider.breakdown())
    for count, par in setups(small, (n,)):
        if par == "pipeline":
            continue  # a stage holds ceil(L/p) layers plus the embedding: see the golden tests
        assert_not_smaller(small.breakdown(count, par), deeper.breakdown(count, par))


@SETTINGS
@given(model_specs(), workloads(kinds=TRAINING), st.sampled_from([2, 4, 8, 16, 64]))
def test_zero_stages_never_increase_memory(model, workload, n):
    mm = MemoryModel(model, workload)
    stages = [mm.breakdown(n, par) for par in ("ddp", "zero1", "zero2", "zero3")]
    for i, (before, after) in enumerate(zip(stages, stages[1:])):
        assert after.device_total <= before.device_total * (1 + 1e-12)
        assert after.model_states <= before.model_states * (1 + 1e-12) + 1e-6
        assert after.kv_cache == before.kv_cache
        if i == 0 and kbit_prepared(workload):
            # DDP computes a k-bit prepared base as stored (fp32 hidden states); ZeRO's bf16 casts it.
            assert after.activations <= before.activations
        else:
            assert after.activations == before.activations
    assert mm.breakdown(n, "fsdp") == stages[-1]


def test_reported_logits_are_the_per_gpu_share_in_training():
    model = ModelSpec(
        name="m",
        num_layers=4,
        hidden_size=256,
        num_attention_heads=4,
        num_key_value_heads=4,
        intermediate_size=512,
        vocab_size=32000,
    )
    mm = MemoryModel(model, Workload(kind="pretrain", weights="bf16", seq_len=512))
    one, two = mm.breakdown(), mm.breakdown(2, "tensor")
    assert two.logits == one.logits / 2
    assert two.logits <= two.activations


def test_reported_logits_are_the_per_gpu_share_in_inference():
    model = ModelSpec(
        name="m",
        num_layers=1,
        hidden_size=32,
        num_attention_heads=2,
        num_key_value_heads=1,
        intermediate_size=16,
        vocab_size=1000,
        gated_mlp=False,
    )
    mm = MemoryModel(model, Workload(kind="inference", weights="fp32", prompt_tokens=1, output_tokens=1))
    one, two = mm.breakdown(), mm.breakdown(2, "tensor")
    assert two.logits == one.logits / 2
    assert two.logits <= two.activations  # logits are documented as part of activations
