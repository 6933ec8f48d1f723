"""Property tests of the memory model over random valid architectures and workloads.

Every component is finite and non-negative; memory never shrinks when the batch, the context
or the model grows; ZeRO stages never use more memory per GPU than the stage before; FSDP
equals ZeRO-3.
"""

import math
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from gpuadvisor.core.memory import COMPONENTS, MemoryModel, applicable_parallelisms
from gpuadvisor.core.models import ModelSpec
from gpuadvisor.core.workload import KV_PRECISIONS, OPTIMIZERS, Workload

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
    kv_heads = draw(st.sampled_from([d for d in range(1, heads + 1) if heads % d == 0]))
    head_dim = draw(st.sampled_from([16, 32, 64, 80, 128]))
    experts = draw(st.integers(1, 8))
    window = draw(st.one_of(st.none(), st.integers(1, 8192)))
    return ModelSpec(
        name="random",
        num_layers=draw(st.integers(1, 96)),
        hidden_size=heads * head_dim,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        intermediate_size=draw(st.integers(16, 32768)),
        vocab_size=draw(st.integers(1000, 256000)),
        gated_mlp=draw(st.booleans()),
        tied_embeddings=draw(st.booleans()),
        num_experts=experts,
        experts_per_token=draw(st.integers(1, experts)),
        sliding_window=window,
        sliding_window_layer_fraction=draw(st.sampled_from([1.0, 0.5, 0.25])) if window else 1.0,
        norm=draw(st.sampled_from(["rmsnorm", "layernorm"])),
        position_embedding=draw(st.sampled_from(["rope", "learned"])),
        max_context=draw(st.sampled_from([2048, 4096, 32768])),
    )


@st.composite
def workloads(draw, kinds=tuple(WEIGHTS_FOR_KIND)):
    kind = draw(st.sampled_from(kinds))
    return Workload(
        kind=kind,
        weights=draw(st.sampled_from(WEIGHTS_FOR_KIND[kind])),
        kv_cache=draw(st.one_of(st.none(), st.sampled_from(KV_PRECISIONS))),
        batch_size=draw(st.integers(1, 64)),
        seq_len=draw(st.integers(1, 65536)),
        prompt_tokens=draw(st.integers(1, 65536)),
        output_tokens=draw(st.integers(1, 4096)),
        optimizer=draw(st.sampled_from(OPTIMIZERS)),
        gradient_checkpointing=draw(st.booleans()),
        flash_attention=draw(st.booleans()),
        lora_rank=draw(st.integers(1, 256)),
        lora_targets=draw(st.one_of(st.just("all_linear"),
                                    st.lists(st.sampled_from(SAFE_TARGETS), min_size=1, max_size=6,
                                             unique=True).map(tuple))),
        lora_dropout=draw(st.booleans()),
        master_weights=draw(st.booleans()),
        double_quant=draw(st.booleans()),
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
    assert bd.logits <= bd.activations * (1 + 1e-12)
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
@given(model_specs(), workloads(), st.integers(1, 64), st.integers(1, 64), st.sampled_from([1, 2, 4, 8]))
def test_memory_non_decreasing_in_batch(model, workload, b1, b2, n):
    mm = MemoryModel(model, workload)
    lo, hi = sorted((b1, b2))
    for count, par in setups(mm, (n,)):
        assert_not_smaller(mm.breakdown(count, par, batch_size=lo), mm.breakdown(count, par, batch_size=hi))


@SETTINGS
@given(model_specs(), workloads(), st.integers(1, 65536), st.integers(1, 65536), st.sampled_from([1, 2, 4, 8]))
def test_memory_non_decreasing_in_context(model, workload, c1, c2, n):
    mm = MemoryModel(model, workload)
    lo, hi = sorted((c1, c2))
    for count, par in setups(mm, (n,)):
        assert_not_smaller(mm.breakdown(count, par, context=lo), mm.breakdown(count, par, context=hi))


@SETTINGS
@given(model_specs(), workloads(), st.integers(1, 32), st.sampled_from([1, 2, 4, 8]))
def test_memory_non_decreasing_in_layers(model, workload, extra, n):
    small, big = MemoryModel(model, workload), MemoryModel(replace(model, num_layers=model.num_layers + extra),
                                                           workload)
    assert big.model.parameters > small.model.parameters
    for count, par in setups(small, (n,)):
        if par == "pipeline":
            continue  # stages hold ceil(L/p) layers: adding a layer may move the edge share (see golden tests)
        assert_not_smaller(small.breakdown(count, par), big.breakdown(count, par))


@SETTINGS
@given(model_specs(), workloads(), st.integers(1, 7))
def test_memory_non_decreasing_in_experts(model, workload, extra):
    """Memory counts every expert, even those a token does not use."""
    bigger = replace(model, num_experts=model.num_experts + extra)
    assert_not_smaller(MemoryModel(model, workload).breakdown(), MemoryModel(bigger, workload).breakdown())


@SETTINGS
@given(model_specs(), workloads(kinds=TRAINING), st.sampled_from([2, 4, 8, 16, 64]))
def test_zero_stages_never_increase_memory(model, workload, n):
    mm = MemoryModel(model, workload)
    stages = [mm.breakdown(n, par) for par in ("ddp", "zero1", "zero2", "zero3")]
    for before, after in zip(stages, stages[1:]):
        assert after.device_total <= before.device_total * (1 + 1e-12)
        assert after.model_states <= before.model_states * (1 + 1e-12) + 1e-6
        assert after.activations == before.activations and after.kv_cache == before.kv_cache
    assert mm.breakdown(n, "fsdp") == stages[-1]
