"""Speed, cost and advice: the seed article's qualitative claims where they are true physics."""

import pytest

from gpuadvisor.core.errors import InputError
from gpuadvisor.core.estimation.cost import buy_vs_rent
from gpuadvisor.core.estimation.estimate import estimate
from gpuadvisor.core.estimation.memory import MemoryModel
from gpuadvisor.core.estimation.performance import inference_performance
from gpuadvisor.core.formats.scenario import Budget, ModelSource, Scenario
from gpuadvisor.core.specs.constants import engine_for
from gpuadvisor.core.specs.hardware import load_gpu_catalog
from gpuadvisor.core.specs.presets import load_model_catalog
from gpuadvisor.core.specs.workload import Hardware, Workload


@pytest.fixture(scope="module")
def cats():
    return load_gpu_catalog(), load_model_catalog()


def test_a100_beats_rtx_4090_at_batch_1_decode(cats):
    """Seed: bandwidth decides batch-1 decode (2,039 vs 1,008 GB/s) for a model both cards hold; the
    engine's host time per step, the same on both, narrows the ratio below the bandwidths' 2x."""
    gpus, models = cats
    mm = MemoryModel(models.get("llama-2-7b"), Workload(kind="inference", weights="int8", batch_size=1))
    eng = engine_for("vllm", "inference")
    a100 = inference_performance(mm, gpus.get("a100-80gb"), 1, "none", eng)
    rtx = inference_performance(mm, gpus.get("rtx-4090"), 1, "none", eng)
    assert a100.bound == rtx.bound == "memory"
    assert a100.tokens_per_s_per_user > 1.35 * rtx.tokens_per_s_per_user


def test_h100_job_cheaper_than_a100_for_30b_plus_training(cats):
    """Seed: for 30B+ training the H100's speed outweighs its higher hourly price."""
    gpus, models = cats
    sc = Scenario(
        model=ModelSource(preset="qwen3-32b"),
        workload=Workload(
            kind="full_finetune", batch_size=1, gradient_checkpointing=True, train_tokens=1e9, engine="fsdp"
        ),
        hardware=Hardware(gpu_count=8, parallelism="fsdp"),
        budget=Budget(price="expected"),
    )
    est = estimate(sc, gpus, models, gpu_ids=["a100-80gb", "h100-sxm"])
    by = {c.gpu.id: c for c in est.candidates}
    assert by["a100-80gb"].fits and by["h100-sxm"].fits
    assert by["h100-sxm"].cost.job_hours.expected < by["a100-80gb"].cost.job_hours.expected
    assert by["h100-sxm"].cost.cost_usd.expected < by["a100-80gb"].cost.cost_usd.expected


def test_renting_beats_buying_at_low_utilization(cats):
    gpus, _ = cats
    h100 = gpus.get("h100-sxm")
    low = buy_vs_rent(h100, Budget(utilization=0.05), h100.cloud_usd_per_hour.expected)
    high = buy_vs_rent(h100, Budget(utilization=1.0, ownership_months=48), h100.cloud_usd_per_hour.low)
    assert low is not None and not low.buy_is_cheaper
    assert low.break_even_utilization is not None and low.break_even_utilization > 0.05
    assert high is not None


def test_fp8_falls_back_on_ampere(cats):
    gpus, models = cats
    sc = Scenario(
        model=ModelSource(preset="llama-3.1-8b"),
        workload=Workload(kind="inference", weights="fp8"),
        hardware=Hardware(gpu_count=1),
    )
    est = estimate(sc, gpus, models, gpu_ids=["a100-80gb", "h100-sxm"])
    by = {c.gpu.id: c for c in est.candidates}
    assert by["a100-80gb"].performance.precision_used == "bf16"
    assert by["h100-sxm"].performance.precision_used == "fp8"
    assert any("FP8" in w for w in est.warnings)


def test_moe_compute_uses_active_parameters(cats):
    gpus, models = cats
    wl = Workload(kind="inference", batch_size=1)
    eng = engine_for("vllm", "inference")
    mix = inference_performance(MemoryModel(models.get("mixtral-8x7b"), wl), gpus.get("h200"), 1, "none", eng)
    dense = inference_performance(
        MemoryModel(models.get("llama-3.1-70b"), wl), gpus.get("h200"), 2, "tensor", eng
    )
    assert mix.tokens_per_s_per_user > dense.tokens_per_s_per_user


def test_ranking_pareto_and_json_contract(cats):
    from gpuadvisor.core.presentation.serialize import estimate_to_dict

    gpus, models = cats
    sc = Scenario(
        model=ModelSource(preset="llama-3.1-8b"),
        workload=Workload(kind="lora", batch_size=2, train_tokens=1e8),
        budget=Budget(deadline_hours=24),
    )
    est = estimate(sc, gpus, models)
    assert est.ranking and all(c.fits for c in est.ranking)
    costs = [c.cost.cost_usd.expected for c in est.ranking if c.cost.cost_usd]
    assert costs == sorted(costs)
    data = estimate_to_dict(est)
    fitting = [c for c in data["candidates"] if c["fits"]]
    assert any(c["pareto"] for c in fitting)
    for c in fitting:
        for key in (
            "tokens_per_s",
            "bound",
            "job_hours",
            "gpu_hours",
            "cost_usd",
            "usd_per_million_tokens",
            "meets_deadline",
            "within_budget",
            "pareto",
        ):
            assert key in c
        assert c["job_hours"]["low"] <= c["job_hours"]["expected"] <= c["job_hours"]["high"]
    assert "ranking" in data


def test_advice_when_nothing_fits(cats):
    gpus, models = cats
    sc = Scenario(
        model=ModelSource(preset="llama-2-7b"),
        workload=Workload(kind="full_finetune", batch_size=4),
        hardware=Hardware(gpu="rtx-4090", gpu_count=1),
    )
    est = estimate(sc, gpus, models)
    assert not est.ranking
    working = [a for a in est.advice if a.fits]
    assert working, est.advice
    assert any("QLoRA" in a.change or "LoRA" in a.change for a in working)


def test_unknown_engine_rejected(cats):
    gpus, models = cats
    sc = Scenario(model=ModelSource(preset="llama-2-7b"), workload=Workload(kind="inference", engine="warp"))
    with pytest.raises(InputError, match="workload.engine"):
        estimate(sc, gpus, models)


def test_consumer_card_pays_back_for_continuous_inference_only(cats):
    """Seed: buying a consumer card can pay back for continuous inference, not for sporadic use."""
    gpus, _ = cats
    rtx = gpus.get("rtx-4090")
    rent = rtx.cloud_usd_per_hour.expected
    continuous = buy_vs_rent(rtx, Budget(utilization=1.0, ownership_months=24), rent)
    sporadic = buy_vs_rent(rtx, Budget(utilization=0.05, ownership_months=24), rent)
    assert continuous.buy_is_cheaper and not sporadic.buy_is_cheaper
    assert 0.05 < continuous.break_even_utilization < 1.0
    # months to pay back at full use: purchase / ((rent - power) * 730)
    months = continuous.purchase_usd / ((rent - continuous.power_usd_per_hour) * 730)
    assert months < 12


def test_datacenter_card_rent_wins_for_sporadic_training(cats):
    gpus, _ = cats
    h100 = gpus.get("h100-sxm")
    assert not buy_vs_rent(h100, Budget(utilization=0.2), h100.cloud_usd_per_hour.expected).buy_is_cheaper
