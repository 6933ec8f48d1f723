"""``estimate(..., calibration=profile)``: per-GPU values, precedence, serialization and comparisons."""

from dataclasses import replace

import pytest

import gpuadvisor.core.estimation.estimate as estimate_module
from gpuadvisor.core.estimation.calibration import (
    CalibrationProfile,
    EstimatePredictor,
    FactorFit,
    apply_calibration,
    calibrated_factors,
    compare_measurements,
)
from gpuadvisor.core.estimation.estimate import estimate
from gpuadvisor.core.formats.measurements import Measurement
from gpuadvisor.core.formats.scenario import Efficiency, ModelSource, Scenario, scenario_snapshot
from gpuadvisor.core.presentation.serialize import estimate_to_dict
from gpuadvisor.core.specs.hardware import load_gpu_catalog
from gpuadvisor.core.specs.presets import load_model_catalog
from gpuadvisor.core.specs.workload import Hardware, RuntimeOverhead, Workload
from gpuadvisor.core.units import GIB


@pytest.fixture(scope="module")
def cats():
    return load_gpu_catalog(), load_model_catalog()


def fit(gpu, engine, name, value, n=4):
    return FactorFit(
        gpu_id=gpu,
        engine=engine,
        factor_name=name,
        value=value,
        n_measurements=n,
        error_before_pct=20.0,
        error_after_pct=1.5,
        measurement_ids=tuple(f"m{i}" for i in range(n)),
    )


def profile(*fits):
    return CalibrationProfile(fits=tuple(fits), created="2026-11-30")


INFERENCE = Scenario(
    model=ModelSource(preset="llama-3.1-8b"),
    workload=Workload(kind="inference", batch_size=8, prompt_tokens=512, output_tokens=256, engine="vllm"),
)
TRAINING = Scenario(
    model=ModelSource(preset="qwen3-1.7b"),
    workload=Workload(
        kind="full_finetune", batch_size=4, seq_len=2048, engine="hf-trainer", gradient_checkpointing=True
    ),
)
PROFILE = profile(
    fit("h100-sxm", "vllm", "bandwidth_efficiency", 0.5),
    fit("h100-sxm", "vllm", "runtime_overhead_gib", 3.0),
    fit("a100-80gb", "hf-trainer", "mfu", 0.33),
    fit("l4", "tensorrt-llm", "bandwidth_efficiency", 0.2),
)


def by_key(est):
    return {c.key: c for c in est.candidates}


def test_no_profile_changes_nothing(cats):
    plain = estimate(INFERENCE, *cats)
    none = estimate(INFERENCE, *cats, calibration=None)
    assert none.candidates == plain.candidates and none.calibration is None
    assert none.calibration_fits == () and none.calibrated_gpus == ()


def test_inference_values_apply_to_their_gpu_only(cats):
    plain, cal = estimate(INFERENCE, *cats), estimate(INFERENCE, *cats, calibration=PROFILE)
    assert cal.calibrated_gpus == ("h100-sxm",) and cal.is_calibrated("h100-sxm")
    assert {f.factor_name for f in cal.calibration_fits} == {"bandwidth_efficiency", "runtime_overhead_gib"}
    # The same figures as the one-GPU scenario with the values written into it.
    one = replace(INFERENCE, hardware=Hardware(gpu="h100-sxm"))
    ref = by_key(estimate(apply_calibration(one, PROFILE), *cats))
    a, b = by_key(plain), by_key(cal)
    for key, c in b.items():
        if c.gpu.id == "h100-sxm":
            assert c.memory.device_total == pytest.approx(c.memory.tensors_total + 3.0 * GIB)
            assert c.memory.device_total == pytest.approx(ref[key].memory.device_total)
            assert c.utilization == pytest.approx(ref[key].utilization)
            if c.performance is not None:
                assert c.performance.tokens_per_s.expected == pytest.approx(
                    ref[key].performance.tokens_per_s.expected
                )
                assert c.performance.tokens_per_s.expected < a[key].performance.tokens_per_s.expected
        else:  # every other GPU keeps the engine profile and the shared breakdowns
            assert c.memory == a[key].memory
            assert c.performance == a[key].performance


def test_what_if_uses_the_calibrated_overhead(cats):
    big = profile(fit("h100-sxm", "vllm", "runtime_overhead_gib", 20.0))
    est = estimate(INFERENCE, *cats, calibration=big)
    c = est.best_per_gpu()["h100-sxm"]
    wi = est.what_if(c)
    plain = estimate(INFERENCE, *cats)
    assert wi.max_batch < plain.what_if(plain.best_per_gpu()["h100-sxm"]).max_batch
    mm = est._memory_model_for("h100-sxm")
    assert (
        mm.breakdown(c.gpu_count, c.parallelism, batch_size=wi.max_batch).device_total <= c.capacity_gib * GIB
    )
    assert est._memory_model_for("a100-80gb") is est.memory_model


def test_training_mfu(cats):
    plain, cal = estimate(TRAINING, *cats), estimate(TRAINING, *cats, calibration=PROFILE)
    assert cal.calibrated_gpus == ("a100-80gb",)
    ref = by_key(estimate(replace(TRAINING, efficiency=Efficiency(mfu=0.33)), *cats, gpu_ids=["a100-80gb"]))
    for key, c in by_key(cal).items():
        if c.gpu.id == "a100-80gb" and c.performance is not None:
            assert c.performance.tokens_per_s.expected == pytest.approx(
                ref[key].performance.tokens_per_s.expected
            )
        elif c.performance is not None:
            assert c.performance == by_key(plain)[key].performance


def test_the_scenarios_own_values_win(cats):
    own = replace(
        INFERENCE,
        efficiency=Efficiency(bandwidth_efficiency=0.6),
        overhead=RuntimeOverhead(cuda_context_gib=1.0),
    )
    est = estimate(own, *cats, calibration=PROFILE)
    assert est.calibration is PROFILE and est.calibration_fits == ()
    assert by_key(est) == by_key(estimate(own, *cats))


def test_other_engines_are_not_calibrated(cats):
    trt = replace(INFERENCE, workload=replace(INFERENCE.workload, engine="tensorrt-llm"))
    est = estimate(trt, *cats, calibration=PROFILE)
    assert est.calibrated_gpus == ("l4",)
    assert all(f.engine == "tensorrt-llm" for f in est.calibration_fits)


def test_advice_estimates_get_the_profile(cats, monkeypatch):
    seen = []
    real = estimate_module.estimate

    def spy(*args, **kwargs):
        seen.append(kwargs.get("calibration"))
        return real(*args, **kwargs)

    monkeypatch.setattr(estimate_module, "estimate", spy)
    sc = Scenario(
        model=ModelSource(preset="llama-3.1-70b"),
        workload=Workload(kind="full_finetune"),
        hardware=Hardware(gpu="h100-sxm", gpu_count=1),
    )
    est = real(sc, *cats, calibration=PROFILE)
    assert est.advice and seen and all(p is PROFILE for p in seen)


def test_json_says_what_was_calibrated(cats):
    d = estimate_to_dict(estimate(INFERENCE, *cats, calibration=PROFILE))
    assert d["calibration"]["enabled"] is True and d["calibration"]["gpus"] == ["h100-sxm"]
    assert {
        (f["gpu"], f["factor"], f["value"], f["n_measurements"]) for f in d["calibration"]["factors"]
    } == {("h100-sxm", "bandwidth_efficiency", 0.5, 4), ("h100-sxm", "runtime_overhead_gib", 3.0, 4)}
    flags = {c["gpu"]: c["calibrated"] for c in d["candidates"]}
    assert flags["h100-sxm"] is True and flags["a100-80gb"] is False
    off = estimate_to_dict(estimate(INFERENCE, *cats))
    assert off["calibration"] == {"enabled": False, "created": None, "gpus": [], "factors": []}


def test_compare_measurements_against_the_estimate(cats):
    one = replace(INFERENCE, hardware=Hardware(gpu="h100-sxm", gpu_count=1))
    truth = estimate(replace(one, efficiency=Efficiency(bandwidth_efficiency=0.5)), *cats).candidates[0]
    m = Measurement(
        id="m1",
        gpu_id="h100-sxm",
        kind="inference",
        model="llama-3.1-8b",
        engine="vllm",
        batch_size=8,
        tokens_per_s=truth.performance.tokens_per_s.expected,
        peak_memory_gib=truth.memory.tensors_total / GIB + 3.0,
        scenario=scenario_snapshot(one),
    )
    bare = Measurement(id="m2", gpu_id="h100-sxm", kind="inference", model="x", tokens_per_s=100.0)
    c, missing = compare_measurements([m, bare], EstimatePredictor(*cats), PROFILE)
    assert c.problem == "" and c.tokens_error_pct > 5  # vLLM's profile assumes more bandwidth
    assert c.calibrated_tokens_error_pct == pytest.approx(0.0, abs=1e-6)
    assert c.calibrated_memory_error_pct == pytest.approx(0.0, abs=1e-6)
    assert abs(c.memory_error_pct) > 1
    assert missing.estimated_tokens_per_s is None and "snapshot" in missing.problem
    # The snapshot's own efficiency wins over the profile, as in estimate().
    own = replace(
        m, scenario=scenario_snapshot(replace(one, efficiency=Efficiency(bandwidth_efficiency=0.6)))
    )
    assert calibrated_factors(PROFILE, own) == {"runtime_overhead_gib": 3.0}
