"""Calibration: known efficiency factors recovered from synthetic runs made by the real estimator."""

import json
import random
from dataclasses import replace
from datetime import date

import pytest

from gpuadvisor.core.errors import InputError
from gpuadvisor.core.estimation.calibration import (
    CalibrationProfile,
    EstimatePredictor,
    FactorFit,
    Prediction,
    apply_calibration,
    efficiency_for,
    fit_calibration,
    golden_section_min,
    measurement_engine,
    profile_from_json,
    profile_to_dict,
    profile_to_json,
)
from gpuadvisor.core.estimation.estimate import estimate
from gpuadvisor.core.formats.measurements import Measurement
from gpuadvisor.core.formats.scenario import Efficiency, ModelSource, Scenario, scenario_to_dict
from gpuadvisor.core.specs.hardware import load_gpu_catalog
from gpuadvisor.core.specs.presets import load_model_catalog
from gpuadvisor.core.specs.workload import Hardware, RuntimeOverhead, Workload
from gpuadvisor.core.units import GIB

TRUE_BW_EFF = 0.55
TRUE_MFU = 0.33
TRUE_OVERHEAD_GIB = 2.5
NOISE = 0.03


@pytest.fixture(scope="module")
def cats():
    return load_gpu_catalog(), load_model_catalog()


@pytest.fixture(scope="module")
def predictor(cats):
    return EstimatePredictor(*cats)


def inference_scenario(batch):
    return Scenario(
        model=ModelSource(preset="llama-3.1-8b"),
        workload=Workload(
            kind="inference", batch_size=batch, prompt_tokens=512, output_tokens=256, engine="vllm"
        ),
        hardware=Hardware(gpu="h100-sxm", gpu_count=1),
    )


def training_scenario(batch, n):
    return Scenario(
        model=ModelSource(preset="qwen3-1.7b"),
        workload=Workload(
            kind="full_finetune",
            batch_size=batch,
            seq_len=2048,
            engine="hf-trainer",
            gradient_checkpointing=True,
        ),
        hardware=Hardware(gpu="a100-80gb", gpu_count=n, parallelism="ddp" if n > 1 else None),
    )


def run(cats, scenario, efficiency):
    """The 'true' run: the real estimator with the efficiency the hardware actually reached."""
    est = estimate(replace(scenario, efficiency=efficiency), *cats, with_advice=False)
    (cand,) = est.candidates
    assert cand.fits
    return cand


@pytest.fixture(scope="module")
def synthetic(cats):
    """Inference runs on h100-sxm at bandwidth efficiency 0.55 (with nvidia-smi peaks 2.5 GiB above the
    tensors) and training runs on a100-80gb at MFU 0.33, each with +/-3% noise from a fixed seed."""
    rng = random.Random(2026)
    out = []
    for i, batch in enumerate((1, 2, 4, 8, 16, 32)):
        sc = inference_scenario(batch)
        cand = run(cats, sc, Efficiency(bandwidth_efficiency=TRUE_BW_EFF))
        tokens_per_s = cand.performance.tokens_per_s.expected * (1 + rng.uniform(-NOISE, NOISE))
        out.append(
            Measurement(
                id=f"inf{i}",
                gpu_id="h100-sxm",
                kind="inference",
                model="llama-3.1-8b",
                engine="vllm",
                batch_size=batch,
                tokens_per_s=tokens_per_s,
                peak_memory_gib=cand.memory.tensors_total / GIB + TRUE_OVERHEAD_GIB + rng.uniform(-0.1, 0.1),
                source="nvidia-smi log",
                measured_on="2026-11-20",
                scenario=scenario_to_dict(sc),
            )
        )
    for i, (batch, n) in enumerate(((2, 1), (4, 1), (8, 1), (4, 2), (8, 2))):
        sc = training_scenario(batch, n)
        cand = run(cats, sc, Efficiency(mfu=TRUE_MFU))
        tokens_per_s = cand.performance.tokens_per_s.expected * (1 + rng.uniform(-NOISE, NOISE))
        out.append(
            Measurement(
                id=f"trn{i}",
                gpu_id="a100-80gb",
                kind="full_finetune",
                model="qwen3-1.7b",
                num_gpus=n,
                batch_size=batch,
                seq_len=2048,
                seconds_per_step=batch * 2048 * n / tokens_per_s,
                scenario=scenario_to_dict(sc),
            )
        )
    return out


@pytest.fixture(scope="module")
def profile(synthetic, predictor):
    return fit_calibration(synthetic, predictor, created=date(2026, 11, 30), note="synthetic")


def fit(profile, gpu, engine, factor):
    (found,) = [f for f in profile.fits if (f.gpu_id, f.engine, f.factor_name) == (gpu, engine, factor)]
    return found


def test_recovers_bandwidth_efficiency(profile):
    f = fit(profile, "h100-sxm", "vllm", "bandwidth_efficiency")
    assert f.value == pytest.approx(TRUE_BW_EFF, rel=0.03)
    assert f.n_measurements == 6 and f.measurement_ids[0] == "inf0"
    assert f.error_after_pct < f.error_before_pct
    assert f.error_after_pct < 3.0 and f.error_before_pct > 10.0  # vLLM's profile assumes 0.68
    assert f.note == ""


def test_recovers_mfu_with_communication(profile):
    f = fit(profile, "a100-80gb", "hf-trainer", "mfu")  # engine taken from the snapshot
    assert f.value == pytest.approx(TRUE_MFU, rel=0.03)
    assert f.n_measurements == 5
    assert f.error_after_pct < f.error_before_pct and f.error_after_pct < 3.0


def test_recovers_runtime_overhead(profile):
    f = fit(profile, "h100-sxm", "vllm", "runtime_overhead_gib")
    assert f.value == pytest.approx(TRUE_OVERHEAD_GIB, abs=0.1)
    assert f.error_after_pct < f.error_before_pct


def test_profile_metadata_and_summary(profile):
    assert profile.created == "2026-11-30" and profile.note == "synthetic" and profile.skipped == ()
    text = profile.summary()
    assert "h100-sxm / vllm: bandwidth_efficiency = 0.5" in text and "3 factors fitted" in text


def test_efficiency_for(profile):
    values = efficiency_for(profile, "h100-sxm", "vllm")
    assert set(values) == {"bandwidth_efficiency", "runtime_overhead_gib"}
    mfu = fit(profile, "a100-80gb", "hf-trainer", "mfu").value
    assert efficiency_for(profile, "a100-80gb", "hf-trainer") == {"mfu": mfu}
    assert efficiency_for(profile, "h100-sxm", "tensorrt-llm") == {}
    assert efficiency_for(profile, "h100-sxm", None) == {}
    assert efficiency_for(None, "h100-sxm", "vllm") == {}


def test_apply_calibration_brings_the_estimate_to_the_measurement(cats, profile, synthetic):
    m = synthetic[3]
    sc = inference_scenario(m.batch_size)
    calibrated = apply_calibration(sc, profile)
    bw = fit(profile, "h100-sxm", "vllm", "bandwidth_efficiency").value
    overhead = fit(profile, "h100-sxm", "vllm", "runtime_overhead_gib").value
    assert calibrated.efficiency == Efficiency(bandwidth_efficiency=bw)
    assert calibrated.overhead == RuntimeOverhead(cuda_context_gib=overhead, fragmentation=0.0)
    before = estimate(sc, *cats, with_advice=False).candidates[0]
    after = estimate(calibrated, *cats, with_advice=False).candidates[0]
    err = lambda c: abs(c.performance.tokens_per_s.expected / m.tokens_per_s - 1)  # noqa: E731
    assert err(after) < 0.05 < err(before)
    assert after.memory.device_total / GIB == pytest.approx(m.peak_memory_gib, abs=0.2)
    # An efficiency the scenario sets itself wins over the profile.
    own = replace(sc, efficiency=Efficiency(bandwidth_efficiency=0.9))
    assert apply_calibration(own, profile).efficiency.bandwidth_efficiency == 0.9
    # Another engine, or a GPU without fits: unchanged.
    other = replace(sc, workload=replace(sc.workload, engine="tensorrt-llm"))
    assert apply_calibration(other, profile) is other
    with pytest.raises(InputError, match="calibration is per GPU"):
        apply_calibration(replace(sc, hardware=Hardware()), profile)


def test_measurements_that_cannot_be_used_are_listed(synthetic, predictor):
    good = synthetic[0]
    no_snapshot = replace(good, id="x1", scenario=None)
    unknown_gpu = replace(good, id="x2", gpu_id="k80")
    wrong_kind = Measurement(
        id="x3",
        gpu_id="h100-sxm",
        kind="lora",
        model="llama-3.1-8b",
        tokens_per_s=100.0,
        engine="hf-trainer",
        scenario=good.scenario,
    )
    wrong_engine = replace(good, id="x4", engine="megatron")
    tensors_only = replace(good, id="x5", tokens_per_s=None, source="torch.cuda.max_memory_allocated")
    ms = [good, no_snapshot, unknown_gpu, wrong_kind, wrong_engine, tensors_only]
    prof = fit_calibration(ms, predictor)
    reasons = dict(prof.skipped)
    assert "no scenario snapshot" in reasons["x1"]
    assert "unknown GPU id" in reasons["x2"]
    assert "the scenario snapshot is a inference workload" in reasons["x3"]
    assert "is a training engine" in reasons["x4"]
    assert "counts tensors only" in reasons["x5"]
    assert {f.n_measurements for f in prof.fits} == {1}


def test_engine_resolution(synthetic):
    assert measurement_engine(synthetic[0]) == "vllm"
    assert measurement_engine(synthetic[-1]) == "hf-trainer"  # from the snapshot
    bare = Measurement(id="b", gpu_id="h100-sxm", kind="pretrain", model="m", tokens_per_s=1.0)
    assert measurement_engine(bare) == "megatron"


def proportional(k):
    """A stand-in predictor: tokens/s = k x factor, tensors 10 GiB, device 11 GiB."""

    def predict(m, factors):
        value = factors.get("bandwidth_efficiency", factors.get("mfu", 0.5))
        device = 10.0 + factors.get("runtime_overhead_gib", 1.0)
        return Prediction(tokens_per_s=k * value, tensors_gib=10.0, device_gib=device)

    return predict


def plain(i, **kw):
    base = dict(id=f"p{i}", gpu_id="h100-sxm", kind="inference", model="m", scenario={"model": {}})
    base.update(kw)
    return Measurement(**base)


def test_any_predictor_can_be_plugged_in():
    ms = [plain(i, tokens_per_s=1000.0 * 0.42 * f) for i, f in enumerate((0.98, 1.0, 1.02))]
    prof = fit_calibration(ms, proportional(1000.0))
    (f,) = prof.fits
    assert f.value == pytest.approx(0.42, rel=1e-3)
    assert f.error_after_pct == pytest.approx(2.0, abs=0.1)


def test_factor_at_the_bound_is_flagged():
    (f,) = fit_calibration([plain(0, tokens_per_s=5000.0)], proportional(1000.0)).fits
    assert f.value == 1.0 and "upper bound" in f.note


def test_unidentifiable_factor_is_not_fitted():
    flat = lambda m, factors: Prediction(500.0, 10.0, 11.0)  # noqa: E731
    prof = fit_calibration([plain(0, tokens_per_s=400.0)], flat)
    assert prof.fits == ()
    assert "hardly depends on bandwidth_efficiency" in dict(prof.skipped)["p0"]


def test_overhead_clamped_at_zero():
    ms = [plain(i, peak_memory_gib=9.5) for i in range(3)]
    (f,) = fit_calibration(ms, proportional(1.0)).fits
    assert f.factor_name == "runtime_overhead_gib" and f.value == 0.0
    assert "clamped to 0" in f.note


def test_golden_section():
    assert golden_section_min(lambda x: (x - 0.3) ** 2, -2.0, 2.0) == pytest.approx(0.3, abs=1e-5)


# --- the profile file ------------------------------------------------------------------------------------


def test_profile_json_round_trip(profile):
    text = profile_to_json(profile)
    doc = json.loads(text)
    assert doc["format"] == "gpuadvisor-calibration" and doc["schema_version"] == 1
    assert profile_from_json(text) == profile
    skipped = CalibrationProfile(fits=(), created="2026-11-30", skipped=(("m1", "no snapshot"),))
    assert profile_from_json(profile_to_json(skipped)) == skipped


FIT = {
    "gpu_id": "h100-sxm",
    "engine": "vllm",
    "factor_name": "bandwidth_efficiency",
    "value": 0.6,
    "n_measurements": 3,
    "error_before_pct": 12.0,
    "error_after_pct": 1.0,
    "measurement_ids": ["a", "b", "c"],
}


def doc(**changes):
    out = {"format": "gpuadvisor-calibration", "schema_version": 1, "created": "2026-11-30", "fits": [FIT]}
    out.update(changes)
    return json.dumps(out)


def fit_doc(**changes):
    return doc(fits=[dict(FIT, **changes)])


@pytest.mark.parametrize(
    "text, field, reason",
    [
        ("{", "cal.json", "is not valid JSON"),
        ("[]", "cal.json", "must be a JSON object"),
        (doc(format="gpuadvisor-scenario"), "cal.json: format", "is not a gpuadvisor calibration profile"),
        (doc(schema_version=2), "cal.json: schema_version", "version 2 is not supported"),
        (doc(schema_version=True), "cal.json: schema_version", "must be a whole number"),
        (doc(created="yesterday"), "cal.json: created", "ISO date"),
        (doc(extra=1), "cal.json", "unknown key(s) extra"),
        (
            json.dumps({"format": "gpuadvisor-calibration", "schema_version": 1, "created": "2026-11-30"}),
            "cal.json",
            "missing key(s) fits",
        ),
        (doc(fits={}), "cal.json: fits", "must be a list"),
        (doc(fits=[FIT, FIT]), "cal.json: fits[1]", "duplicates fits[0]"),
        (fit_doc(value=1.2), "cal.json: fits[0].value", "must be in (0, 1] for bandwidth_efficiency"),
        (fit_doc(value=0), "cal.json: fits[0].value", "must be in (0, 1]"),
        (fit_doc(factor_name="mfu", value=-0.1), "cal.json: fits[0].value", "must be in (0, 1] for mfu"),
        (fit_doc(factor_name="runtime_overhead_gib", value=250.0), "cal.json: fits[0].value", "[0, 200] GiB"),
        (fit_doc(factor_name="runtime_overhead_gib", value=-1.0), "cal.json: fits[0].value", "[0, 200] GiB"),
        (fit_doc(value="0.6"), "cal.json: fits[0].value", "must be a number"),
        (fit_doc(factor_name="decode_mfu"), "cal.json: fits[0].factor_name", "must be one of"),
        (fit_doc(n_measurements="3"), "cal.json: fits[0].n_measurements", "whole number"),
        (fit_doc(measurement_ids="a,b"), "cal.json: fits[0].measurement_ids", "must be a list"),
        (fit_doc(error_after_pct=-1), "cal.json: fits[0].error_after_pct", ">= 0 or null"),
        (fit_doc(gpu_id=""), "cal.json: fits[0].gpu_id", "non-empty text"),
        (
            doc(fits=[{k: v for k, v in FIT.items() if k != "engine"}]),
            "cal.json: fits[0]",
            "missing key(s) engine",
        ),
        (doc(skipped=[{"measurement": "m1"}]), "cal.json: skipped[0]", "missing key(s) reason"),
    ],
)
def test_malformed_profiles_are_rejected_precisely(text, field, reason):
    with pytest.raises(InputError) as exc:
        profile_from_json(text, origin="cal.json")
    assert exc.value.field == field
    assert reason in exc.value.reason


def test_profile_dict_values_in_range_load():
    top = FactorFit("a100-80gb", "fsdp", "runtime_overhead_gib", 200.0, 1, None, None, ("m1",))
    prof = CalibrationProfile(fits=(top,), created="2026-11-30")
    assert profile_from_json(json.dumps(profile_to_dict(prof))) == prof
