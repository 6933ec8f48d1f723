"""Large jobs as they are laid out: TP x PP x CP x DP, experts, interleaving, recomputation, offload
and the layout search (docs/estimation.md, "Layouts")."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuadvisor.cli.parser import main
from gpuadvisor.core.errors import InputError
from gpuadvisor.core.estimation.communication import (
    NodeLink,
    _data_parallel_time,
    _network,
    expert_state_shares,
    group_link,
    layout_training_performance,
    node_link,
    ring_latency,
    sharded_exposed,
)
from gpuadvisor.core.estimation.estimate import estimate
from gpuadvisor.core.estimation.layout import Layout, explicit_layout, gpu_counts, searched_layouts
from gpuadvisor.core.estimation.memory import MemoryModel
from gpuadvisor.core.estimation.performance import NVLINK_LATENCY_S, training_prelude
from gpuadvisor.core.formats.scenario import (
    ModelSource,
    Scenario,
    dumps_scenario,
    loads_scenario,
    scenario_from_dict,
)
from gpuadvisor.core.presentation.serialize import estimate_to_dict
from gpuadvisor.core.specs.constants import engine_for
from gpuadvisor.core.specs.hardware import load_gpu_catalog
from gpuadvisor.core.specs.presets import load_model_catalog
from gpuadvisor.core.specs.workload import Hardware, Offload, Workload
from gpuadvisor.core.units import GIB


@pytest.fixture(scope="module")
def cats():
    return load_gpu_catalog(), load_model_catalog()


def pretrain(**extra):
    return Workload(kind="pretrain", seq_len=4096, batch_size=1, **extra)


def sc(model="llama-3.1-70b", workload=None, hardware=None):
    return scenario_from_dict(
        {
            "model": {"preset": model},
            "workload": workload or {"kind": "pretrain", "seq_len": 4096, "batch_size": 1},
            "hardware": hardware or {},
        }
    )


# --- the value ----------------------------------------------------------------------------


def test_layout_name_and_dict():
    lay = Layout(tp=8, pp=4, dp=32, sequence_parallel=False, recompute="selective", sharding="zero1")
    assert lay.gpus == 1024
    assert lay.name == "TP8 · PP4 · DP32 ZeRO-1 · selective recompute"
    d = lay.to_dict()
    assert d["tensor_parallel"] == 8 and d["pipeline_parallel"] == 4 and d["data_parallel"] == 32
    assert d["activation_recompute"] == "selective" and d["data_parallel_sharding"] == "zero1"
    assert Layout().name == "1 GPU" and Layout().gpus == 1


def test_single_gpu_json_layout_is_all_ones(cats):
    est = estimate(sc("llama-3.1-8b", hardware={"gpu": "h100-sxm", "gpu_count": 1}), *cats)
    c = estimate_to_dict(est)["candidates"][0]
    lay = c["layout"]
    for key in (
        "tensor_parallel",
        "pipeline_parallel",
        "context_parallel",
        "expert_parallel",
        "data_parallel",
    ):
        assert lay[key] == 1
    assert lay["virtual_pipeline_stages"] == 1 and lay["sequence_parallel"] is False
    assert c["host_memory_gib"] == 0 and c["layout_name"] == "1 GPU"


# --- scenario keys ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "section, key, value",
    [
        ("hardware", "tensor_parallel", 0),
        ("hardware", "pipeline_parallel", 2.5),
        ("hardware", "context_parallel", "two"),
        ("hardware", "expert_parallel", -1),
        ("hardware", "expert_tensor_parallel", 0),
        ("hardware", "expert_tensor_parallel", "one"),
        ("hardware", "virtual_pipeline_stages", 0),
        ("hardware", "sequence_parallel", "yes"),
        ("hardware", "host_memory_gib", -4),
        ("hardware", "host_memory_bandwidth_gb_s", 0),
        ("hardware", "gpu_count_max", 20_000),
        ("workload", "activation_recompute", "some"),
        ("workload", "global_batch_size", 0),
        ("workload", "compute_precision", "fp4"),
        ("workload", "offload", "cpu"),
        ("workload", "offload", {"optimizer": "disk"}),
        ("workload", "offload", {"gradients": "cpu"}),
    ],
)
def test_bad_keys_name_the_field(section, key, value):
    data = {"model": {"preset": "llama-3.1-8b"}, "workload": {"kind": "pretrain"}, "hardware": {}}
    data[section][key] = value
    with pytest.raises(InputError) as err:
        scenario_from_dict(data)
    assert err.value.field.startswith(f"{section}.{key}")
    assert "\n" not in str(err.value)


def test_training_keys_refused_for_inference():
    with pytest.raises(InputError) as err:
        Workload(kind="inference", activation_recompute="full")
    assert err.value.field == "workload.activation_recompute"


def test_keys_round_trip_through_the_file():
    s = sc(
        workload={
            "kind": "pretrain",
            "activation_recompute": "selective",
            "global_batch_size": 1024,
            "compute_precision": "fp8",
            "offload": {"optimizer": "cpu"},
        },
        hardware={
            "tensor_parallel": 8,
            "pipeline_parallel": 4,
            "context_parallel": 2,
            "virtual_pipeline_stages": 2,
            "sequence_parallel": True,
            "host_memory_gib": 1024,
            "host_memory_bandwidth_gb_s": 200,
            "gpu_count_max": 512,
        },
    )
    again = loads_scenario(dumps_scenario(s))
    assert again.workload == s.workload and again.hardware == s.hardware
    assert again.workload.offload == Offload(optimizer="cpu")


@pytest.mark.parametrize(
    "hardware, field, words",
    [
        ({"gpu_count": 60, "tensor_parallel": 8, "pipeline_parallel": 4}, "hardware.gpu_count", "divide"),
        ({"gpu_count": 32, "tensor_parallel": 16}, "hardware.tensor_parallel", "node"),
        ({"gpu_count": 96, "pipeline_parallel": 96}, "hardware.pipeline_parallel", "layers"),
        ({"gpu_count": 12, "tensor_parallel": 3}, "hardware.tensor_parallel", "heads"),
        (
            {"gpu_count": 64, "pipeline_parallel": 32, "virtual_pipeline_stages": 3},
            "hardware.virtual_pipeline_stages",
            "layers",
        ),
        ({"gpu_count": 16, "expert_parallel": 2}, "hardware.expert_parallel", "mixture-of-experts"),
        (
            {"gpu_count": 16, "tensor_parallel": 2, "expert_tensor_parallel": 1},
            "hardware.expert_tensor_parallel",
            "mixture-of-experts",
        ),
    ],
)
def test_bad_layouts_get_one_line_errors(cats, hardware, field, words):
    with pytest.raises(InputError) as err:
        estimate(sc(hardware={"gpu": "h100-sxm", **hardware}), *cats)
    assert err.value.field == field and words in str(err.value) and "\n" not in str(err.value)


def test_cli_exits_2_on_a_bad_layout(tmp_path, capsys):
    path = tmp_path / "bad.json"
    path.write_text(
        json.dumps(
            {
                "format": "gpuadvisor-scenario",
                "version": 1,
                "model": {"preset": "llama-3.1-70b"},
                "workload": {"kind": "pretrain"},
                "hardware": {
                    "gpu": "h100-sxm",
                    "gpu_count": 60,
                    "tensor_parallel": 8,
                    "pipeline_parallel": 4,
                },
            }
        )
    )
    assert main(["estimate", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "hardware.gpu_count" in err


def test_shorthands_keep_meaning_every_gpu_on_one_axis(cats):
    _, models = cats
    m = models.get("llama-3.1-70b")
    w = pretrain()
    t = explicit_layout(m, w, Hardware(gpu_count=8, parallelism="tensor"), 8)
    p = explicit_layout(m, w, Hardware(gpu_count=8, parallelism="pipeline"), 8)
    z = explicit_layout(m, w, Hardware(gpu_count=64, parallelism="zero1", tensor_parallel=8), 64)
    assert (t.tp, t.dp) == (8, 1) and (p.pp, p.dp) == (8, 1)
    assert (z.tp, z.dp, z.sharding) == (8, 8, "zero1")


def test_sequence_parallel_defaults_with_megatron_only():
    m = load_model_catalog().get("llama-3.1-70b")
    mega = explicit_layout(m, pretrain(), Hardware(gpu_count=16, tensor_parallel=8), 16)
    hf = explicit_layout(
        m, Workload(kind="full_finetune", engine="hf-trainer"), Hardware(gpu_count=16, tensor_parallel=8), 16
    )
    assert mega.sequence_parallel and not hf.sequence_parallel


# --- memory -------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    preset=st.sampled_from(["llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b", "gpt2-xl"]),
    tp=st.sampled_from([1, 2, 4, 8]),
    pp=st.sampled_from([1, 2, 4, 8]),
    more=st.sampled_from(["tp", "pp"]),
    sharding=st.sampled_from(["none", "zero1", "zero3"]),
)
def test_more_tp_or_pp_never_raises_per_gpu_weights(preset, tp, pp, more, sharding):
    m = load_model_catalog().get(preset)
    mm = MemoryModel(m, pretrain())
    dp = 2 if sharding != "none" else 1
    base = Layout(tp=tp, pp=pp, dp=dp, sharding=sharding)
    bigger = base._replace(tp=tp * 2) if more == "tp" else base._replace(pp=pp * 2)
    a = mm.breakdown(layout=base)
    b = mm.breakdown(layout=bigger)
    # The weights of the fuller stage never grow; the full per-GPU state never grows either.
    assert b.weights <= a.weights * (1 + 1e-9)
    assert b.model_states <= a.model_states * (1 + 1e-9)


@pytest.mark.parametrize("flash", [True, False])
@pytest.mark.parametrize("tp, pp, sp", [(1, 1, False), (8, 1, True), (8, 1, False), (4, 4, True)])
def test_recompute_none_over_selective_over_full(flash, tp, pp, sp):
    m = load_model_catalog().get("llama-3.1-70b")
    mm = MemoryModel(m, pretrain(flash_attention=flash))
    act = {
        r: mm.breakdown(layout=Layout(tp=tp, pp=pp, sequence_parallel=sp, recompute=r)).activations
        for r in ("none", "selective", "full")
    }
    assert act["selective"] > act["full"]
    if flash:  # flash attention keeps no scores: the attention core has nothing left to drop
        assert act["none"] >= act["selective"]
    else:
        assert act["none"] > act["selective"]


def test_per_operator_checkpointing_keeps_every_other_matmul_and_the_attention_output():
    """torchtitan's ``op`` policy on Llama 3.1 8B: a block keeps its input, q (1st matmul), v (3rd),
    gate (5th), down (7th), the attention output and its log-sum-exp (4 bytes per head); it
    recomputes k, o and up (parallelize_llama.py at torchtitan commit 004b314)."""
    from gpuadvisor.core.estimation.recompute import op_policy

    m = load_model_catalog().get("llama-3.1-8b")
    kept = op_policy(m, 2.0)
    h, dq, dkv, i = 4096, 4096, 1024, 14336
    assert kept.per_token_layer(1, False) == 2 * (h + dq + dkv + i + h + dq) + 4 * 32
    assert kept.recompute_flops == 2 * (h * dkv + dq * h + h * i) * 32
    # Under TP8 the row-parallel output (down) stays a whole-sequence partial sum; with SP the block
    # input splits and each of the two reduce-scatters keeps its split output.
    split = 2 * (dq + dkv + i + dq) + 4 * 32
    assert kept.per_token_layer(8, False) == pytest.approx(split / 8 + 2 * h + 2 * h)
    assert kept.per_token_layer(8, True) == pytest.approx(split / 8 + 2 * h + 2 * h / 8 + 2 * (2 * h) / 8)
    w = Workload(kind="pretrain", engine="fsdp", seq_len=8192, batch_size=2, activation_recompute="op")
    mm = MemoryModel(m, w)
    act = {
        r: mm.breakdown(layout=Layout(recompute=r)).activations for r in ("none", "selective", "op", "full")
    }
    assert act["none"] >= act["selective"] > act["op"] > act["full"]
    # 16,384 tokens x 32 layers x 62 KiB kept, one layer rebuilt, and the loss's 10 bytes per logit.
    assert act["op"] / GIB == pytest.approx(53.8, abs=0.5)


def test_per_operator_checkpointing_costs_speed_between_selective_and_full(cats):
    lay = Layout(dp=8, sharding="fsdp")
    w = Workload(kind="pretrain", seq_len=8192, batch_size=2, global_batch_size=16, activation_recompute="op")
    m = cats[1].get("llama-3.1-8b")
    speeds = {
        r: _speed(cats, w, lay._replace(recompute=r), model="llama-3.1-8b").tokens_per_s.expected
        for r in ("selective", "op", "full")
    }
    assert speeds["selective"] > speeds["op"] > speeds["full"]
    # op recomputes k, o and up: 2 L (h d_kv + d_q h + h i) FLOPs per token more than no recomputation.
    h, dkv, i = m.hidden_size, m.kv_dim, m.intermediate_size
    extra = 2 * m.num_layers * (h * dkv + h * h + h * i)
    assert extra / (6 * 8.03e9) == pytest.approx(0.105, abs=0.01)


def test_sequence_parallel_splits_what_tensor_parallel_leaves_whole():
    m = load_model_catalog().get("llama-3.1-70b")
    mm = MemoryModel(m, pretrain())
    with_sp = mm.breakdown(layout=Layout(tp=8, sequence_parallel=True)).activations
    without = mm.breakdown(layout=Layout(tp=8, sequence_parallel=False)).activations
    one = mm.breakdown(layout=Layout()).activations
    assert with_sp < without < one
    assert with_sp == pytest.approx(one / 8, rel=0.01)


def test_pipeline_first_stage_holds_pp_micro_batches_and_interleaving_more():
    m = load_model_catalog().get("llama-3.1-70b")
    mm = MemoryModel(m, pretrain(activation_recompute="selective"))
    lay = Layout(pp=4, recompute="selective")
    bd = mm.breakdown(layout=lay)
    assert bd.stage == "first"
    one_stage_one_mb = mm.breakdown(layout=Layout(recompute="selective")).activations / 4
    # 4 micro-batches of a quarter of the layers: about one micro-batch of the whole model.
    assert bd.activations == pytest.approx(4 * one_stage_one_mb, rel=0.1)
    inter = mm.breakdown(layout=lay._replace(vpp=2)).activations
    assert inter == pytest.approx(bd.activations * (1 + 3 / 8), rel=0.01)
    # With fewer micro-batches per step than stages, fewer are in flight.
    few = MemoryModel(m, pretrain(activation_recompute="selective", global_batch_size=2))
    assert few.breakdown(layout=lay).activations < bd.activations


def test_context_parallel_ranks_are_sharded_like_data_parallel_ones(cats):
    """FSDP over CP8 with one data-parallel replica still shards eight ways (torchtitan's
    ``dp_shard x cp`` mesh): Llama 3.1 8B at 262,144 tokens, as torchtitan ran it in 84.5 GiB."""
    gpus, models = cats
    m = models.get("llama-3.1-8b")
    w = Workload(kind="pretrain", seq_len=262144, batch_size=1, activation_recompute="full")
    lay = explicit_layout(
        m, w, Hardware(gpu="h100-sxm", gpu_count=8, parallelism="fsdp", context_parallel=8), 8
    )
    assert (lay.cp, lay.dp, lay.sharding) == (8, 1, "fsdp") and lay.name == "CP8 · FSDP · full recompute"
    mm = MemoryModel(m, w)
    sharded = mm.breakdown(layout=lay)
    whole = mm.breakdown(layout=lay._replace(sharding="none"))
    assert sharded.optimizer == pytest.approx(whole.optimizer / 8)
    assert sharded.device_total / GIB < 80


def test_fsdp_under_a_pipeline_holds_its_stage_gathered_and_its_gradients_unsharded():
    """PyTorch pipelining with FSDP2 (torchtitan): no resharding after forward and no gradient
    reduction until the last micro-batch, so a stage keeps its 16-bit weights and fp32 gradients."""
    m = load_model_catalog().get("llama-3.1-405b")
    w = Workload(
        kind="pretrain", seq_len=8192, batch_size=4, global_batch_size=256, activation_recompute="full"
    )
    mm = MemoryModel(m, w)
    lay = Layout(tp=8, pp=8, dp=8, sequence_parallel=True, recompute="full", sharding="fsdp")
    bd = mm.breakdown(layout=lay)
    stage_params = m.counts.blocks * 16 / 126 / 8
    assert bd.accumulating == pytest.approx(4 * stage_params, rel=0.05)
    assert bd.gathered == pytest.approx(2 * stage_params, rel=0.1)
    assert bd.model_states < bd.device_total / 3  # the sharded state is the smaller part
    assert 70 < bd.device_total / GIB < 85  # measured 75-85 GiB (torchtitan, 512 H100)
    # Without a pipeline FSDP gathers three layers at a time and reduces every micro-batch.
    flat = mm.breakdown(layout=Layout(tp=8, dp=64, sequence_parallel=True, recompute="full", sharding="fsdp"))
    assert flat.accumulating == 0 and flat.gathered < bd.gathered / 4


def test_interleaving_holds_no_more_micro_batches_than_a_step_has():
    m = load_model_catalog().get("llama-3.1-70b")
    w = pretrain(activation_recompute="full", global_batch_size=4)  # 4 micro-batches for PP4
    mm = MemoryModel(m, w)
    lay = Layout(pp=4, recompute="full")
    assert mm.breakdown(layout=lay._replace(vpp=2)).activations == pytest.approx(
        mm.breakdown(layout=lay).activations, rel=1e-9
    )


def test_context_parallel_splits_the_sequence():
    m = load_model_catalog().get("llama-3.1-70b")
    mm = MemoryModel(m, Workload(kind="pretrain", seq_len=131072, batch_size=1))
    one = mm.breakdown(layout=Layout(tp=8, sequence_parallel=True)).activations
    four = mm.breakdown(layout=Layout(tp=8, cp=4, sequence_parallel=True)).activations
    assert four == pytest.approx(one / 4, rel=0.01)


def test_zero_shards_over_data_parallel_only():
    m = load_model_catalog().get("llama-3.1-70b")
    mm = MemoryModel(m, pretrain())
    a = mm.breakdown(layout=Layout(tp=8, dp=8, sharding="zero1"))
    b = mm.breakdown(layout=Layout(tp=8, dp=1))
    assert a.optimizer == pytest.approx(b.optimizer / 8)
    assert a.weights == pytest.approx(b.weights) and a.gradients == pytest.approx(b.gradients)


def test_experts_shard_over_expert_parallel():
    m = load_model_catalog().get("mixtral-8x7b")
    mm = MemoryModel(m, pretrain())
    one = mm.breakdown(layout=Layout(dp=8, sharding="ddp"))
    ep = mm.breakdown(layout=Layout(dp=8, ep=8, sharding="ddp"))
    assert ep.weights < one.weights / 3
    assert ep.optimizer < one.optimizer / 3


def test_optimizer_offload_moves_its_bytes_to_host():
    m = load_model_catalog().get("llama-2-13b")
    w = Workload(kind="full_finetune", batch_size=1, seq_len=512)
    on_gpu = MemoryModel(m, w).breakdown()
    off = MemoryModel(
        m, Workload(kind="full_finetune", batch_size=1, seq_len=512, offload={"optimizer": "cpu"})
    )
    bd = off.breakdown()
    assert bd.optimizer == 0
    assert bd.host == pytest.approx(on_gpu.optimizer + on_gpu.gradients)
    assert bd.weights == on_gpu.weights and bd.gradients < on_gpu.gradients / 10


def test_parameter_offload_keeps_only_gathered_layers():
    m = load_model_catalog().get("llama-3.1-70b")
    w = pretrain(offload={"optimizer": "cpu", "parameters": "cpu"})
    mm = MemoryModel(m, w)
    bd = mm.breakdown(layout=Layout(dp=8, sharding="zero3"))
    assert bd.weights < 3.5 * mm.block_weight_bytes / m.num_layers
    assert bd.host > mm.weight_bytes / 8


def test_host_memory_too_small_is_a_does_not_fit_that_says_why(cats):
    data = {"kind": "full_finetune", "batch_size": 1, "seq_len": 512, "offload": {"optimizer": "cpu"}}
    small = estimate(
        sc("llama-2-13b", data, {"gpu": "a100-80gb", "gpu_count": 1, "host_memory_gib": 64}), *cats
    )
    big = estimate(
        sc("llama-2-13b", data, {"gpu": "a100-80gb", "gpu_count": 1, "host_memory_gib": 512}), *cats
    )
    c = small.candidates[0]
    assert not c.fits and "host memory" in c.misfit and any("host_memory_gib" in x for x in c.warnings)
    assert big.candidates[0].fits and big.candidates[0].host_memory_gib > 150
    assert estimate_to_dict(small)["candidates"][0]["does_not_fit_because"].startswith("host memory")


def test_fsdp_only_70b_on_64_gpus_does_not_fit_but_a_real_layout_does(cats):
    """The issue's example: 70B, 64 H100, FSDP and no recomputation needs far more than 80 GB."""
    work = {"kind": "pretrain", "seq_len": 8192, "batch_size": 1, "activation_recompute": "none"}
    fsdp = estimate(
        sc(workload=work, hardware={"gpu": "h100-sxm", "gpu_count": 64, "parallelism": "fsdp"}), *cats
    )
    assert not fsdp.candidates[0].fits and fsdp.candidates[0].memory.activations > 150 * GIB
    laid = estimate(
        sc(
            workload={**work, "activation_recompute": "selective", "global_batch_size": 512},
            hardware={"gpu": "h100-sxm", "gpu_count": 64, "tensor_parallel": 8, "pipeline_parallel": 4},
        ),
        *cats,
    )
    assert laid.candidates[0].fits


# --- speed --------------------------------------------------------------------------------


def _speed(cats, workload, layout, gpu="h100-sxm", model="llama-3.1-70b"):
    gpus, models = cats
    mm = MemoryModel(models.get(model), workload)
    g = gpus.get(gpu)
    engine = engine_for(workload.engine, workload.kind)
    return layout_training_performance(mm, g, layout, engine, prelude=training_prelude(mm, g, engine))


def test_more_micro_batches_shrink_the_bubble(cats):
    lay = Layout(tp=8, pp=8, dp=4, sequence_parallel=True, recompute="selective", sharding="zero1")
    few = _speed(cats, pretrain(global_batch_size=32), lay)
    many = _speed(cats, pretrain(global_batch_size=512), lay)
    assert many.tokens_per_s.expected > few.tokens_per_s.expected
    inter = _speed(cats, pretrain(global_batch_size=32), lay._replace(vpp=5))
    assert inter.tokens_per_s.expected > few.tokens_per_s.expected


def test_nccl_ring_latency_counts_one_hop_per_step():
    """NCCL src/graph/tuning.cc (ring, Simple): base 8.4 us, 3.4 us per NVLink hop, 9.6 us per
    network hop; an all-gather over d ranks on k nodes takes d - 1 steps, k - 1 of them between nodes."""
    assert ring_latency(8, 1, 8, NVLINK_LATENCY_S) == pytest.approx(8.4e-6 + 7 * 3.4e-6)
    assert ring_latency(16, 1, 8, NVLINK_LATENCY_S) == pytest.approx(8.4e-6 + 14 * 3.4e-6 + 9.6e-6)
    # A group strided over TP8 has one member per node: every step crosses the network.
    assert ring_latency(4, 8, 8, NVLINK_LATENCY_S) == pytest.approx(8.4e-6 + 3 * 9.6e-6)


def test_sharded_gathers_are_exposed_only_where_a_layer_computes_for_less_time():
    g = 7 / 8 * 1e9 / 100e9 + 20e-6  # one layer's gather: 1 GB over 8 ranks at 100 GB/s
    r = 7 / 8 * 2e9 / 100e9 + 20e-6  # its gradients' reduce-scatter (fp32)
    args = (1e9, 2e9, 8, 100e9, 20e-6)
    # Long layers hide every gather but the first and every reduce-scatter but the last.
    assert sharded_exposed(*args, 1.0, 2.0, 32) == pytest.approx(g + r)
    # Short layers leave the rest exposed, layer by layer.
    short = sharded_exposed(*args, 1e-3, 2e-3, 32)
    assert short == pytest.approx(g + r + 31 * (g - 1e-3) + 31 * (g + r - 2e-3))
    assert sharded_exposed(*args, 0.0, 0.0, 32) == pytest.approx(32 * g + 32 * (g + r) - g)


def test_fsdp_with_little_work_per_replica_exposes_its_gathers(cats):
    """Llama 3.1 8B under FSDP over 256 H100: at 512 tokens per GPU a layer computes for less time
    than its gather takes, so the step waits on the network; at 16K tokens the gathers hide."""
    lay = Layout(dp=256, sharding="fsdp")
    thin = _speed(cats, Workload(kind="pretrain", seq_len=512, batch_size=1, global_batch_size=256), lay,
                  model="llama-3.1-8b")  # fmt: skip
    thick = _speed(cats, Workload(kind="pretrain", seq_len=8192, batch_size=2, global_batch_size=512), lay,
                   model="llama-3.1-8b")  # fmt: skip
    assert thin.communication_share > 0.3
    assert thick.communication_share < 0.1
    assert thin.mfu < thick.mfu


def test_recompute_costs_speed(cats):
    lay = Layout(tp=8, dp=8, sequence_parallel=True, sharding="zero1")
    w = pretrain(global_batch_size=256)
    speeds = [
        _speed(cats, w, lay._replace(recompute=r)).tokens_per_s.expected
        for r in ("none", "selective", "full")
    ]
    assert speeds[0] >= speeds[1] > speeds[2]
    assert speeds[2] / speeds[0] == pytest.approx(3 / 4, rel=0.1)


def test_tensor_parallel_across_nodes_is_refused_and_dp_across_nodes_is_slower(cats):
    near = _speed(cats, pretrain(global_batch_size=64), Layout(tp=8, dp=1))
    far = _speed(cats, pretrain(global_batch_size=64), Layout(tp=8, dp=16, sharding="zero3"))
    assert far.communication_share > near.communication_share


def test_fp8_compute_is_faster_on_hopper_and_costs_a_weight_copy(cats):
    lay = Layout(tp=8, dp=8, sequence_parallel=True, sharding="zero1")
    bf16 = _speed(cats, pretrain(global_batch_size=256), lay)
    fp8 = _speed(cats, pretrain(compute_precision="fp8", global_batch_size=256), lay)
    assert fp8.tokens_per_s.expected > 1.1 * bf16.tokens_per_s.expected and fp8.precision_used == "fp8"
    old = _speed(cats, pretrain(compute_precision="fp8"), lay, gpu="a100-80gb")
    assert old.precision_used != "fp8"
    m = load_model_catalog().get("llama-3.1-70b")
    assert (
        MemoryModel(m, pretrain(compute_precision="fp8")).weight_bytes
        > MemoryModel(m, pretrain()).weight_bytes
    )


def test_optimizer_offload_slows_training(cats):
    w = Workload(kind="full_finetune", batch_size=8, seq_len=512, engine="deepspeed")
    off = Workload(
        kind="full_finetune", batch_size=8, seq_len=512, engine="deepspeed", offload={"optimizer": "cpu"}
    )
    on = _speed(cats, w, Layout(), gpu="a100-80gb", model="llama-2-7b")
    moved = _speed(cats, off, Layout(), gpu="a100-80gb", model="llama-2-7b")
    assert moved.tokens_per_s.expected < on.tokens_per_s.expected


def test_context_and_expert_parallel_add_communication(cats):
    long = Workload(kind="pretrain", seq_len=131072, batch_size=1)
    cp = _speed(cats, long, Layout(tp=8, cp=4, sequence_parallel=True))
    assert cp.communication_share > 0
    # EP8 on one node: each GPU keeps one expert whole (no expert gradients to reduce), and every
    # token's hidden state goes to its two experts and back (four all-to-alls a layer).
    moe = _speed(cats, pretrain(), Layout(dp=8, ep=8, sharding="zero1"), model="mixtral-8x7b")
    assert moe.communication_share > 0


def test_expert_gradients_are_reduced_over_the_expert_data_parallel_group_only(cats):
    """Megatron-Core reduces a routed expert's gradients over its expert data-parallel group
    (TP x CP x DP / (EP x ETP) GPUs, ranks EP x ETP apart), each GPU holding 1 / (EP x ETP) of the
    experts; the rest of the weights over DP x CP. With EP64 on 64 GPUs every expert lives on one
    GPU and only the dense weights' gradients cross the data-parallel group."""
    gpus, models = cats
    g = gpus.get("h100-sxm")
    mm = MemoryModel(models.get("qwen3-30b-a3b"), pretrain())
    node, net = node_link(g, 8, 8), _network()

    def reduce_s(layout: Layout) -> float:  # no compute to hide behind: the whole reduction
        return _data_parallel_time(mm, layout, 8, 8, node, net, 0.0, 1, 48, 1 / 3)

    grad_e, _ = expert_state_shares(mm)
    assert 0.9 < grad_e < 1.0  # Qwen3 30B-A3B: almost every weight is a routed expert's
    bw, lat = group_link(1, 64, 8, node, net, 8)
    dense = 2 * 63 / 64 * mm.grad_bytes * (1 - grad_e) / bw + lat
    assert reduce_s(Layout(dp=64, ep=64, sharding="zero1")) == pytest.approx(dense)
    bw_e, lat_e = group_link(8, 8, 8, node, net, 8)  # EDP8: one rank a node, over the NICs
    ep8 = dense + 2 * 7 / 8 * mm.grad_bytes * grad_e / 8 / bw_e + lat_e
    assert reduce_s(Layout(dp=64, ep=8, sharding="zero1")) == pytest.approx(ep8)
    # Without expert parallelism every GPU holds and reduces every expert over all 64.
    whole = 2 * 63 / 64 * mm.grad_bytes / bw + lat
    assert reduce_s(Layout(dp=64, sharding="zero1")) == pytest.approx(whole)
    assert dense < ep8 < whole
    # ZeRO-3 gathers and reduce-scatters the experts only inside their expert data-parallel group.
    z3 = [reduce_s(Layout(dp=64, ep=e, sharding="zero3")) for e in (64, 8, 1)]
    assert z3[0] < z3[1] < z3[2]
    # EP2 x ETP1 under TP8 without data parallelism: each expert on four GPUs of the TP group,
    # whose gradients those four reduce (NVLink); nothing dense to reduce.
    tp8 = Layout(tp=8, ep=2, etp=1)
    bw_tp, lat_tp = group_link(2, 4, 8, node, net, 8)
    alone = 2 * 3 / 4 * mm.grad_bytes * grad_e / 2 / bw_tp + lat_tp
    assert reduce_s(tp8) == pytest.approx(alone)
    assert _speed(cats, pretrain(), tp8, model="qwen3-30b-a3b").communication_share > 0


def test_host_bandwidth_override_sets_partial_offload_speed(cats):
    base = {"kind": "inference", "engine": "llama.cpp", "weights": "q4_0", "gpu_layers": 16}
    slow = estimate(
        sc("llama-2-7b", base, {"gpu": "rtx-4090", "gpu_count": 1, "host_memory_bandwidth_gb_s": 40}), *cats
    )
    fast = estimate(
        sc("llama-2-7b", base, {"gpu": "rtx-4090", "gpu_count": 1, "host_memory_bandwidth_gb_s": 120}), *cats
    )
    assert (
        fast.candidates[0].performance.tokens_per_s_per_user
        > 1.5 * slow.candidates[0].performance.tokens_per_s_per_user
    )


def test_deepspeed_engine_is_known(cats):
    est = estimate(
        sc(
            "llama-3.1-8b",
            {"kind": "full_finetune", "engine": "deepspeed"},
            {"gpu": "h100-sxm", "gpu_count": 8},
        ),
        *cats,
    )
    assert est.engine == "deepspeed" and est.ranking


# --- search -------------------------------------------------------------------------------


def test_counts_go_beyond_a_node_in_whole_nodes():
    assert gpu_counts(Hardware(), (1, 2, 4, 8)) == (1, 2, 4, 8)
    assert gpu_counts(Hardware(gpu_count_max=64), (1, 2, 4, 8)) == (1, 2, 4, 8, 16, 32, 64)
    assert gpu_counts(Hardware(gpu_count_max=100), (1, 2, 4, 8)) == (1, 2, 4, 8, 16, 32, 64, 96)
    assert gpu_counts(Hardware(gpu_count=24), (1, 2, 4, 8)) == (24,)


def test_search_respects_node_layers_and_sequence():
    m = load_model_catalog().get("llama-3.1-70b")
    lays = searched_layouts(m, Workload(kind="pretrain", seq_len=65536), Hardware(), 256)
    assert lays and all(lay.gpus == 256 for lay in lays)
    assert all(lay.tp <= 8 and m.num_layers % lay.pp == 0 for lay in lays)
    assert {lay.cp for lay in lays} == {1, 2, 4, 8}
    assert {lay.recompute for lay in lays} == {"none", "selective", "full"}
    short = searched_layouts(m, Workload(kind="pretrain", seq_len=4096), Hardware(), 256)
    assert {lay.cp for lay in short} == {1}


def test_search_keeps_the_fastest_fitting_layouts_and_runner_ups(cats):
    est = estimate(
        sc(
            workload={"kind": "pretrain", "seq_len": 8192}, hardware={"gpu": "h100-sxm", "gpu_count_max": 128}
        ),
        *cats,
    )
    at_64 = [c for c in est.candidates if c.gpu_count == 64]
    assert 1 <= len(at_64) <= 3 and all(c.fits for c in at_64)
    speeds = [c.performance.tokens_per_s.expected for c in at_64]
    assert speeds == sorted(speeds, reverse=True)
    best = at_64[0]
    assert est.layout_alternatives(best) == tuple(at_64[1:])
    assert all(len({c.key for c in est.candidates}) == len(est.candidates) for _ in (0,))


def test_the_search_tries_zero1_and_chooses_it_where_it_is_best(cats):
    """An 8B model pre-trained on two nodes of H100s: every replica's model states fit with the
    optimizer sharded (ZeRO-1: 2Psi + 2Psi + 12Psi/16, 35 GiB of model states a GPU), so
    nothing is gained by also sharding the weights (ZeRO-3 gathers every layer's weights in the
    forward and the backward pass: 1.5x the data-parallel traffic, ZeRO section 7.2.2) or by
    splitting the layers (TP2 all-reduces every layer's activations). The search must try ZeRO-1
    and choose it: DP16 ZeRO-1."""
    model = cats[1].get("llama-3.1-8b")
    workload = Workload(kind="pretrain", seq_len=4096, batch_size=1)
    tried = searched_layouts(model, workload, Hardware(), 16)
    assert {lay.sharding for lay in tried if lay.dp > 1} == {"zero1", "zero3"}
    est = estimate(sc("llama-3.1-8b", hardware={"gpu": "h100-sxm", "gpu_count": 16}), *cats)
    best = est.recommended
    assert best is not None and best.gpu_count == 16 and best.fits
    assert (best.layout.tp, best.layout.pp, best.layout.cp, best.layout.dp) == (1, 1, 1, 16)
    assert best.layout.sharding == "zero1" and best.layout.name.startswith("DP16 ZeRO-1")
    # Its ZeRO-3 twin (the same layout with the weights sharded too) fits and is slower.
    twin = next(c for c in est.candidates if c.layout == best.layout._replace(sharding="zero3"))
    assert twin.fits
    assert twin.performance.tokens_per_s.expected < best.performance.tokens_per_s.expected
    assert twin.memory.device_total < best.memory.device_total


def test_a_searched_layout_fits_where_the_old_setups_did_not(cats):
    est = estimate(
        sc(
            "llama-3.1-405b",
            {"kind": "pretrain", "seq_len": 8192},
            {"gpu": "h100-sxm", "gpu_count_max": 1024},
        ),
        *cats,
    )
    assert not any(c.fits for c in est.candidates if c.gpu_count <= 8)
    assert est.recommended is not None and est.recommended.gpu_count > 8
    assert est.recommended.layout is not None and not est.recommended.layout.shorthand


def test_a_layout_without_a_count_is_tried_at_the_counts_that_hold_it(cats):
    est = estimate(sc(hardware={"gpu": "h100-sxm", "tensor_parallel": 8, "pipeline_parallel": 2}), *cats)
    assert {c.gpu_count for c in est.candidates} == {16}
    wide = estimate(
        sc(hardware={"gpu": "h100-sxm", "tensor_parallel": 4, "gpu_count_max": 64}),
        *cats,
    )
    assert {c.gpu_count for c in wide.candidates} == {4, 8, 16, 32, 64}
    assert all(c.layout.tp == 4 for c in wide.candidates)


def test_report_rows_name_the_layout(cats):
    from gpuadvisor.core.presentation.report import row_cells

    laid = estimate(
        sc(
            workload={"kind": "pretrain", "seq_len": 8192, "activation_recompute": "selective"},
            hardware={"gpu": "h100-sxm", "gpu_count": 64, "tensor_parallel": 8, "pipeline_parallel": 4},
        ),
        *cats,
    )
    assert row_cells(laid.candidates[0], laid)[1] == "64 × TP8·PP4·DP2·selective"
    eight = estimate(
        sc("llama-3.1-8b", hardware={"gpu": "h100-sxm", "gpu_count": 8, "parallelism": "tensor"}), *cats
    )
    assert row_cells(eight.candidates[0], eight)[1] == "8 × tensor (TP8)"
    one = estimate(sc("llama-3.1-8b", hardware={"gpu": "h100-sxm", "gpu_count": 1}), *cats)
    assert row_cells(one.candidates[0], one)[1] == "1 GPU"


def test_partial_inference_offload_is_read_from_host_memory(cats):
    base = {"kind": "inference", "engine": "transformers", "weights": "bf16"}
    full = estimate(sc("llama-2-7b", base, {"gpu": "rtx-4090", "gpu_count": 1}), *cats).candidates[0]
    half = estimate(sc("llama-2-7b", {**base, "gpu_layers": 16}, {"gpu": "rtx-4090", "gpu_count": 1}), *cats)
    c = half.candidates[0]
    assert c.memory.host > 6 * GIB and c.host_memory_gib > 6
    # Half the weights cross PCIe (about 32 GB/s) every step instead of GDDR6X (about 1 TB/s).
    assert c.performance.tokens_per_s_per_user < full.performance.tokens_per_s_per_user / 5
    assert any("Partial offload" in n for n in c.performance.notes)


def test_serving_replicas_of_a_tensor_parallel_group(cats):
    work = {"kind": "inference", "batch_size": 64}
    one = estimate(
        sc("llama-3.1-70b", work, {"gpu": "h100-sxm", "gpu_count": 8, "tensor_parallel": 8}), *cats
    )
    assert one.candidates[0].parallelism == "tensor" and one.candidates[0].layout.tp == 8
    two = estimate(
        sc("llama-3.1-70b", work, {"gpu": "h100-sxm", "gpu_count": 16, "tensor_parallel": 8}), *cats
    )
    c1, c2 = one.candidates[0], two.candidates[0]
    assert c2.layout.dp == 2 and c2.layout_name == "TP8 · DP2"
    # Each replica serves half the requests: less KV cache per GPU, more requests served in all.
    assert c2.memory.kv_cache == pytest.approx(c1.memory.kv_cache / 2, rel=0.01)
    assert c2.performance.tokens_per_s.expected > 1.2 * c1.performance.tokens_per_s.expected
    with pytest.raises(InputError) as err:
        estimate(
            sc(
                "llama-3.1-70b",
                work,
                {"gpu": "h100-sxm", "gpu_count": 16, "tensor_parallel": 8, "pipeline_parallel": 2},
            ),
            *cats,
        )
    assert err.value.field == "hardware.pipeline_parallel"


def test_offloaded_parameters_are_only_tried_with_zero3_or_fsdp(cats):
    work = {"kind": "full_finetune", "offload": {"optimizer": "cpu", "parameters": "cpu"}}
    est = estimate(sc("llama-3.1-70b", work, {"gpu": "a100-80gb"}), *cats)
    assert {c.parallelism for c in est.candidates if c.gpu_count > 1} == {"zero3", "fsdp"}
    one = next(c for c in est.candidates if c.gpu_count == 1)
    assert one.memory.weights < 3.5 * est.memory_model.block_weight_bytes / 80


def test_cli_text_names_the_layout_and_json_has_it(tmp_path, capsys):
    path = tmp_path / "laid_out.json"
    path.write_text(
        json.dumps(
            {
                "format": "gpuadvisor-scenario",
                "version": 1,
                "model": {"preset": "llama-3.1-70b"},
                "workload": {"kind": "pretrain", "seq_len": 8192, "activation_recompute": "selective"},
                "hardware": {
                    "gpu": "h100-sxm",
                    "gpu_count": 64,
                    "tensor_parallel": 8,
                    "pipeline_parallel": 4,
                },
            }
        )
    )
    assert main(["estimate", str(path)]) == 0
    assert "64 \u00d7 TP8 SP · PP4 · DP2 · selective recompute" in capsys.readouterr().out
    assert main(["estimate", str(path), "--json"]) == 0
    cand = json.loads(capsys.readouterr().out)["candidates"][0]
    assert cand["layout"]["data_parallel"] == 2 and cand["memory_stage"] == "first"
    assert cand["layout_name"] == "TP8 SP · PP4 · DP2 · selective recompute"


def _kept_by_pricing_everything(model, workload, gpu, n, cap_gib=None):
    """The searched layouts of ``gpu`` at ``n`` GPUs that the search keeps, found the slow way:
    every layout priced, the siblings that recompute more dropped once a lighter one fits."""
    mm = MemoryModel(model, workload)
    engine = engine_for(workload.engine, workload.kind)
    prelude = training_prelude(mm, gpu, engine, None)
    cap = (cap_gib or gpu.memory_gib_usable) * GIB
    fitting, lighter_fits = [], set()
    for lay in searched_layouts(model, workload, Hardware(), n):
        sibling = lay._replace(recompute="none")
        if sibling in lighter_fits:
            continue
        bd = mm.breakdown(n, lay.parallelism, layout=lay)
        if bd.device_total <= cap:
            lighter_fits.add(sibling)
            perf = layout_training_performance(mm, gpu, lay, engine, prelude=prelude)
            fitting.append((-round(perf.tokens_per_s.expected, 6), bd.device_total, lay))
    return [lay for _, _, lay in sorted(fitting, key=lambda r: (r[0], r[1]))[:3]]


@pytest.mark.parametrize(
    ("preset", "seq_len", "gpu_id"),
    [
        ("llama-3.1-70b", 8192, "h100-sxm"),
        ("mixtral-8x22b", 32768, "a100-80gb"),
        ("llama-3.1-405b", 8192, "b200"),
    ],
)
def test_the_pruned_search_keeps_what_pricing_every_layout_keeps(cats, preset, seq_len, gpu_id):
    gpus, models = cats
    workload = Workload(kind="pretrain", seq_len=seq_len, global_batch_size=1024)
    est = estimate(
        Scenario(
            model=ModelSource(preset=preset),
            workload=workload,
            hardware=Hardware(gpu=gpu_id, gpu_count_max=256),
        ),
        gpus,
        models,
    )
    gpu = next(g for g in gpus if g.id == gpu_id)
    kept = 0
    for n in (16, 64, 256):
        shown = [c.layout for c in est.candidates if c.gpu_count == n and c.fits]
        assert shown == _kept_by_pricing_everything(models.get(preset), workload, gpu, n)
        kept += len(shown)
    assert kept >= 3  # the comparison is not between two empty lists


def test_the_speed_ceiling_bounds_every_searched_layout(cats):
    from gpuadvisor.core.estimation.communication import speed_ceiling

    gpus, models = cats
    model = models.get("mixtral-8x22b")
    workload = Workload(kind="pretrain", seq_len=32768, global_batch_size=512)
    mm = MemoryModel(model, workload)
    engine = engine_for(workload.engine, workload.kind)
    for gpu in (g for g in gpus if g.id in ("h100-sxm", "rtx-4090", "mi300x")):
        prelude = training_prelude(mm, gpu, engine, None)
        for lay in searched_layouts(model, workload, Hardware(), 128):
            perf = layout_training_performance(mm, gpu, lay, engine, prelude=prelude)
            assert perf.tokens_per_s.expected <= speed_ceiling(mm, lay, prelude) * (1 + 1e-12)


def test_the_constants_given_reach_a_layouts_speed(cats):
    """A refit (the validation harness passes its constants to the estimate) must reach every
    layout's speed: the layout speed and the layout search took the shipped ``gemm_width_half`` and
    GEMM constants when none were passed, so a fit, in sample or with a source held out, saw only
    part of the values it tried, and the shipped values (fitted with the held-out source) leaked
    into its fold."""
    from dataclasses import replace

    from gpuadvisor.core.formats.scenario import ModelSource, Scenario
    from gpuadvisor.core.specs.constants import shipped_constants

    gpus, models = cats
    workload = pretrain()
    mm = MemoryModel(models.get("llama-3.1-70b"), workload)
    gpu = gpus.get("h100-sxm")
    engine = engine_for(workload.engine, workload.kind)
    lay = Layout(tp=8, pp=4, dp=4, sequence_parallel=True, recompute="selective", sharding="zero1")
    shipped = shipped_constants()
    wider = replace(shipped, gemm_width_half=4 * shipped.gemm_width_half)

    def speed(constants=None):
        prelude = training_prelude(mm, gpu, engine, None, constants)
        perf = layout_training_performance(mm, gpu, lay, engine, prelude=prelude, constants=constants)
        return perf.tokens_per_s.expected

    base, stated = speed(), speed(wider)
    hw = Hardware(
        gpu="h100-sxm", gpu_count=128, tensor_parallel=8, pipeline_parallel=4, sequence_parallel=True
    )
    sc = Scenario(
        model=ModelSource(preset="llama-3.1-70b"),
        workload=replace(workload, activation_recompute="selective"),
        hardware=hw,
    )
    model = models.get("llama-3.1-70b")
    in_estimate = [
        estimate(sc, gpus, models, _model=model, with_advice=False, constants=k).candidates[0]
        for k in (None, wider)
    ]
    # Eight-way tensor parallelism leaves 1,024 of the hidden 8,192 per rank: a wider half width
    # is slower, whether the constants are passed or in force.
    assert stated < base
    assert in_estimate[1].performance.tokens_per_s.expected < in_estimate[0].performance.tokens_per_s.expected
    assert speed() == base  # nothing changed the shipped constants


# --- MoE parallel folding: experts laid out over TP x CP x DP ---------------------------------

#: Megatron-Bridge's Qwen3 235B-A22B recipe on 256 H100 (performance summary, 26.04 container):
#: TP2 x PP8 x DP16 for attention, EP32 for the experts, which only fits with expert TP1.
QWEN_FOLDED = {
    "gpu": "h100-sxm",
    "gpu_count": 256,
    "tensor_parallel": 2,
    "pipeline_parallel": 8,
    "expert_parallel": 32,
    "expert_tensor_parallel": 1,
    "parallelism": "zero1",
}


def _moe_run(**extra):
    return {"kind": "pretrain", "seq_len": 4096, "batch_size": 1, "global_batch_size": 1024, **extra}


def test_folded_expert_layout_is_accepted_with_a_speed(cats):
    est = estimate(sc("qwen3-235b-a22b", _moe_run(), QWEN_FOLDED), *cats)
    c = estimate_to_dict(est)["candidates"][0]
    assert c["layout"]["expert_parallel"] == 32 and c["layout"]["expert_tensor_parallel"] == 1
    assert c["layout"]["data_parallel"] == 16 and "EP32 ETP1" in c["layout_name"]
    assert c["fits"] and c["tokens_per_s"] > 0 and 0 < c["communication_share"] < 1


def test_expert_tp_defaults_to_tp_and_says_how_to_fold(cats):
    """Megatron's --expert-tensor-parallel-size defaults to TP: EP32 x ETP2 does not divide
    TP2 x DP16 = 32 GPUs, and the message names the key that folds it."""
    hw = {k: v for k, v in QWEN_FOLDED.items() if k != "expert_tensor_parallel"}
    with pytest.raises(InputError) as err:
        estimate(sc("qwen3-235b-a22b", _moe_run(), hw), *cats)
    assert err.value.field == "hardware.expert_parallel" and "\n" not in str(err.value)
    assert "expert_tensor_parallel" in str(err.value) and "32 GPUs" in str(err.value)


@pytest.mark.parametrize(
    "hardware, field, words",
    [
        ({"expert_tensor_parallel": 16}, "hardware.expert_tensor_parallel", "node"),
        ({"expert_tensor_parallel": 5}, "hardware.expert_tensor_parallel", "hidden units"),
        ({"expert_parallel": 64, "expert_tensor_parallel": 1}, "hardware.expert_parallel", "divide"),
    ],
)
def test_bad_expert_tensor_parallel_gets_one_line(cats, hardware, field, words):
    hw = {**QWEN_FOLDED, **hardware}
    with pytest.raises(InputError) as err:
        estimate(sc("qwen3-235b-a22b", _moe_run(), hw), *cats)
    assert err.value.field == field and words in str(err.value) and "\n" not in str(err.value)


def test_expert_tensor_parallel_is_training_only(cats):
    with pytest.raises(InputError) as err:
        estimate(
            sc(
                "mixtral-8x7b",
                {"kind": "inference"},
                {"gpu": "h100-sxm", "gpu_count": 2, "tensor_parallel": 2, "expert_tensor_parallel": 1},
            ),
            *cats,
        )
    assert "training only" in str(err.value)


def test_expert_tensor_parallel_round_trips_and_equal_to_tp_changes_nothing(cats):
    base = {
        "gpu": "h100-sxm",
        "gpu_count": 16,
        "tensor_parallel": 2,
        "expert_parallel": 8,
        "parallelism": "zero1",
    }
    s = sc("mixtral-8x7b", _moe_run(), {**base, "expert_tensor_parallel": 2})
    assert loads_scenario(dumps_scenario(s)).hardware == s.hardware
    given_ = estimate_to_dict(estimate(s, *cats))["candidates"][0]
    plain = estimate_to_dict(estimate(sc("mixtral-8x7b", _moe_run(), base), *cats))["candidates"][0]
    assert given_["tokens_per_s"] == plain["tokens_per_s"]
    assert given_["memory_per_gpu_gib"] == plain["memory_per_gpu_gib"]
    assert given_["layout_name"] == plain["layout_name"]


def test_folded_experts_memory_follows_the_folding_formula(cats):
    """A GPU keeps 1/TP of the dense state and 1/(EP x ETP) of the routed experts unsharded; under
    the distributed optimizer every GPU holds 1/(TP x CP x DP) of the stage's state whatever the
    folding, the experts' share being sharded over EDP = TP x CP x DP / (EP x ETP)."""
    model = cats[1].get("mixtral-8x7b")
    c = model.counts
    mm = MemoryModel(model, pretrain())
    ddp = mm.breakdown(layout=Layout(tp=2, ep=8, etp=1, dp=8, sequence_parallel=True, sharding="ddp"))
    local = ((c.total - c.routed_experts) / 2 + c.routed_experts / (8 * 1)) / c.total
    assert ddp.optimizer == pytest.approx(local * mm.optim_bytes, rel=1e-9)
    assert ddp.gradients == pytest.approx(local * mm.grad_bytes, rel=1e-9)
    # ETP2 keeps half as many experts per GPU as ETP1 at the same EP... and EP4 x ETP2 as EP8 x ETP1.
    etp2 = mm.breakdown(layout=Layout(tp=2, ep=8, dp=8, sequence_parallel=True, sharding="ddp"))
    assert etp2.optimizer < ddp.optimizer
    ep4 = mm.breakdown(layout=Layout(tp=2, ep=4, dp=8, sequence_parallel=True, sharding="ddp"))
    assert ep4.optimizer == pytest.approx(ddp.optimizer, rel=1e-9)
    for etp, ep in ((1, 8), (2, 8), (1, 16), (2, 4)):
        z = mm.breakdown(layout=Layout(tp=2, ep=ep, etp=etp, dp=8, sequence_parallel=True, sharding="zero1"))
        assert z.optimizer == pytest.approx(mm.optim_bytes / (2 * 8), rel=1e-9)
        assert Layout(tp=2, ep=ep, etp=etp, dp=8).expert_dp == 16 // (ep * etp)


def test_folded_expert_speed_is_monotone(cats):
    """Dropping the experts' TP (ETP1) takes the MoE layers' tensor-parallel collectives away and
    puts the EP group on neighbouring ranks: never slower. A wider EP group that crosses nodes
    sends more of its all-to-all over the network: more time in communication."""
    w = pretrain(global_batch_size=256)
    base = Layout(tp=2, ep=8, dp=16, sequence_parallel=True, sharding="zero1")
    etp2 = _speed(cats, w, base, model="mixtral-8x7b")
    etp1 = _speed(cats, w, base._replace(etp=1), model="mixtral-8x7b")
    assert etp1.tokens_per_s.expected > etp2.tokens_per_s.expected
    qwen = cats[1].get("qwen3-30b-a3b")
    assert qwen.num_experts % 32 == 0
    inside = _speed(
        cats,
        w,
        Layout(tp=2, ep=4, etp=1, dp=16, sequence_parallel=True, sharding="zero1"),
        model="qwen3-30b-a3b",
    )
    across = _speed(
        cats,
        w,
        Layout(tp=2, ep=32, etp=1, dp=16, sequence_parallel=True, sharding="zero1"),
        model="qwen3-30b-a3b",
    )
    assert across.communication_share > inside.communication_share
    assert across.tokens_per_s.expected < inside.tokens_per_s.expected


# --- NVLink domains larger than a node (GB200 NVL72) ------------------------------------------


def test_gb200_is_one_nvlink_domain_of_72():
    """NVIDIA's GB200 NVL72 datasheet: 72 Blackwell GPUs joined by one NVLink switch fabric; a
    server's GPUs are their own domain."""
    gpus = load_gpu_catalog()
    assert gpus.get("gb200").nvlink_domain_gpus == 72 and gpus.get("gb200").link_domain(8) == 72
    assert gpus.get("h100-sxm").nvlink_domain_gpus is None and gpus.get("h100-sxm").link_domain(8) == 8
    assert gpus.get("h100-sxm").link_domain(16) == 16  # hardware.gpus_per_node still counts


def test_a_group_inside_the_domain_stays_on_nvlink():
    node, net = NodeLink(900e9, 1e-5), (37.5e9, 3e-5)
    assert group_link(1, 72, 8, node, net, domain=72) == (900e9, 1e-5)
    assert group_link(1, 72, 8, node, net) == (8 * 37.5e9, 3e-5)  # nine nodes over their NICs
    # Beyond the domain: the NICs of each node's members, as between servers.
    assert group_link(1, 144, 8, node, net, domain=72) == group_link(1, 144, 8, node, net)


@pytest.mark.parametrize("keys", [{"gradient_checkpointing": True}, {"activation_recompute": "full"}])
def test_fsdp_over_one_nvl72_rack_runs_at_nvlink_speed(cats, keys):
    """FSDP over the 72 GPUs of one GB200 NVL72 rack (the one-word setup and a laid-out job): the
    gathers and reduce-scatters stay on NVLink, so the speed is the NVLink one and communication a
    small share; the same 72 GPUs as nine separate 8-GPU servers pay the NICs."""
    from dataclasses import replace

    work = {"kind": "pretrain", "seq_len": 8192, "batch_size": 1, **keys}
    hw = {"gpu": "gb200", "gpu_count": 72, "parallelism": "fsdp"}
    est = estimate(sc("llama-3.1-70b", work, hw), *cats)
    c = est.candidates[0]
    assert c.fits and c.performance.tokens_per_s.expected > 0
    assert c.performance.communication_share < 0.05
    assert any("one 72-GPU NVLink domain" in n for n in est.warnings)
    gpus, models = cats
    servers = replace(gpus, gpus={**gpus.gpus, "gb200": replace(gpus.get("gb200"), nvlink_domain_gpus=None)})
    apart = estimate(sc("llama-3.1-70b", work, hw), servers, models).candidates[0]
    assert apart.performance.tokens_per_s.expected < c.performance.tokens_per_s.expected
    assert apart.performance.communication_share > c.performance.communication_share


def test_beyond_one_rack_the_network_returns(cats):
    """Two racks (144 GPUs) of FSDP pay the network for the part between them: never faster per
    GPU than one rack."""
    work = {"kind": "pretrain", "seq_len": 8192, "batch_size": 1, "gradient_checkpointing": True}
    one = estimate(sc("llama-3.1-70b", work, {"gpu": "gb200", "gpu_count": 72, "parallelism": "fsdp"}), *cats)
    two = estimate(
        sc("llama-3.1-70b", work, {"gpu": "gb200", "gpu_count": 144, "parallelism": "fsdp"}), *cats
    )
    per_gpu = [e.candidates[0].performance.tokens_per_s.expected / n for e, n in ((one, 72), (two, 144))]
    assert per_gpu[1] < per_gpu[0]
    assert any("2 NVLink domains of 72" in n for n in two.warnings)


# --- hybrid sharding (HSDP) -----------------------------------------------------------------------


def _fsdp_run(shard=None, gpus=256, model="llama-3.1-8b", engine="fsdp"):
    hw = {"gpu": "h100-sxm", "gpu_count": gpus, "parallelism": "fsdp"}
    if shard is not None:
        hw["data_parallel_shard"] = shard
    return sc(model, {"kind": "pretrain", "engine": engine, "seq_len": 2048, "batch_size": 1}, hw)


def test_hybrid_sharding_names_its_groups_and_plain_sharding_is_a_whole_group(cats):
    lay = Layout(dp=128, sharding="fsdp", shard=8)
    assert lay.shard_ways == 8 and lay.shard_replicas == 16
    assert lay.name == "DP128 HSDP in groups of 8" and lay.to_dict()["data_parallel_shard"] == 8
    assert Layout(tp=2, dp=64, sharding="zero1", shard=16).name == "TP2 · DP64 ZeRO-1 in groups of 16"
    assert Layout(dp=128, sharding="fsdp").to_dict()["data_parallel_shard"] == 128
    # A shard group as large as the whole data-parallel group is plain FSDP.
    whole = estimate(_fsdp_run(shard=256), *cats).candidates[0]
    plain = estimate(_fsdp_run(), *cats).candidates[0]
    assert whole.layout == plain.layout and whole.layout.name == "DP256 FSDP"


def test_hybrid_sharding_divides_the_state_over_its_group_only(cats):
    """HSDP shards parameters, gradients and optimizer states over the shard group and keeps one
    copy per group: 8-way shards hold 32 times the state of 256-way ones (every other term alike)."""
    m = load_model_catalog().get("llama-3.1-8b")
    mm = MemoryModel(m, Workload(kind="pretrain", seq_len=2048, batch_size=1))
    full = mm.breakdown(layout=Layout(dp=256, sharding="fsdp"))
    hybrid = mm.breakdown(layout=Layout(dp=256, sharding="fsdp", shard=8))
    assert hybrid.optimizer == pytest.approx(32 * full.optimizer, rel=1e-9)
    assert hybrid.gradients == pytest.approx(32 * full.gradients, rel=1e-9)
    assert hybrid.activations == full.activations
    assert hybrid.weights > full.weights
    # ZeRO-1 in groups: only the optimizer states are sharded, over the group.
    z1 = mm.breakdown(layout=Layout(dp=256, sharding="zero1", shard=8))
    assert z1.optimizer == pytest.approx(hybrid.optimizer, rel=1e-9)


def test_hybrid_sharding_keeps_the_gathers_inside_a_node(cats):
    """FSDP over 32 nodes of H100 gathers every layer's weights over the network at one sequence of
    2,048 tokens per GPU; in groups of 8 the gathers stay on NVLink and only each rank's gradient
    shard crosses the network once a step: less exposed communication, more tokens/s, more memory."""
    plain = estimate(_fsdp_run(), *cats).candidates[0]
    hybrid = estimate(_fsdp_run(shard=8), *cats).candidates[0]
    assert plain.fits and hybrid.fits
    assert hybrid.performance.communication_share < plain.performance.communication_share
    assert hybrid.performance.tokens_per_s.expected > plain.performance.tokens_per_s.expected
    assert hybrid.memory.device_total > plain.memory.device_total


@pytest.mark.parametrize(
    ("hardware", "words"),
    [
        ({"parallelism": "fsdp", "data_parallel_shard": 12}, "do not divide the 256 data-parallel ranks"),
        ({"parallelism": "fsdp", "data_parallel_shard": 512}, "larger than the 256 data-parallel ranks"),
        ({"parallelism": "ddp", "data_parallel_shard": 8}, "set hardware.parallelism to zero1"),
        ({"parallelism": "fsdp", "data_parallel_shard": 0}, "hardware.data_parallel_shard"),
    ],
)
def test_a_shard_group_that_cannot_run_is_refused_by_name(cats, hardware, words):
    scenario = {"gpu": "h100-sxm", "gpu_count": 256, **hardware}
    with pytest.raises(InputError, match="data_parallel_shard") as err:
        estimate(sc("llama-3.1-8b", {"kind": "pretrain", "seq_len": 2048, "batch_size": 1}, scenario), *cats)
    assert words in str(err.value)


def test_a_shard_group_without_a_gpu_count_compares_whole_groups(cats):
    """Asked for groups of 8 and no count, the comparison takes the counts that hold whole groups
    (8: one group, plain FSDP) and two groups (16), never a count a group does not fit."""
    work = {"kind": "pretrain", "seq_len": 2048, "batch_size": 1}
    est = estimate(
        sc("llama-3.1-8b", work, {"gpu": "h100-sxm", "parallelism": "fsdp", "data_parallel_shard": 8}), *cats
    )
    by_count = {c.gpu_count: c.layout for c in est.candidates}
    assert sorted(by_count) == [8, 16]
    assert by_count[8].shard == 0 and by_count[16].shard == 8
