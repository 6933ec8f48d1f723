"""A plan a person would run: the planning horizon without a deadline, same cost goes to the faster
setup, and the provisioning notes never flag the recommendation against itself."""

from __future__ import annotations

import datetime
from dataclasses import replace
from pathlib import Path

import pytest

from gpuadvisor.core.estimation.estimate import estimate
from gpuadvisor.core.estimation.recommendation import LIKELY, MISSED, SAME_COST, SURE, sort_key, tier
from gpuadvisor.core.formats.scenario import (
    Budget,
    ModelSource,
    ScenarioError,
    default_scenario,
    load_scenario,
    scenario_from_dict,
)
from gpuadvisor.core.presentation.detail import candidate_detail
from gpuadvisor.core.presentation.report import build_report
from gpuadvisor.core.presentation.serialize import estimate_to_dict
from gpuadvisor.core.presentation.wording import summary_line
from gpuadvisor.core.specs.hardware import load_gpu_catalog
from gpuadvisor.core.specs.presets import load_model_catalog
from gpuadvisor.core.specs.workload import Hardware, Workload

TODAY = datetime.date(2026, 12, 6)
EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


@pytest.fixture(scope="module")
def cats():
    return load_gpu_catalog(), load_model_catalog()


@pytest.fixture(scope="module")
def lora(cats):
    """The app's default: LoRA of Llama 3.1 8B on the data-centre GPUs, no deadline, no budget."""
    return estimate(default_scenario(), *cats)


def _pretrain(horizon_days: float | None = None) -> object:
    budget = Budget() if horizon_days is None else Budget(horizon_days=horizon_days)
    return replace(
        default_scenario(),
        model=ModelSource(preset="llama-3.1-70b"),
        workload=Workload(kind="pretrain", weights="bf16", batch_size=1, seq_len=4096, train_tokens=2e12),
        hardware=Hardware(segment="data_centre", gpu_count_max=4096),
        budget=budget,
    )


@pytest.fixture(scope="module")
def pretrain(cats):
    return estimate(_pretrain(), *cats)


def test_same_cost_goes_to_the_faster_setup(lora):
    """Eight GPUs of the same type cost the same as one (within 1%) and finish about 8x sooner."""
    rec = lora.recommended
    workable = [c for c in lora.candidates if tier(c) in (SURE, LIKELY) and c.cost.cost_usd is not None]
    cheapest = min(workable, key=sort_key)
    limit = cheapest.cost.cost_usd.expected * (1 + SAME_COST)
    same = [c for c in workable if tier(c) == tier(cheapest) and c.cost.cost_usd.expected <= limit]
    assert rec.key == min(same, key=lambda c: (c.cost.job_hours.expected, sort_key(c))).key
    assert rec.cost.job_hours.expected < cheapest.cost.job_hours.expected
    assert lora.decision.same_cost_as_key == cheapest.key
    speedup = cheapest.cost.job_hours.expected / rec.cost.job_hours.expected
    line = summary_line(lora)
    assert "same cost as " in line and f"{speedup:.0f}x faster" in line
    assert estimate_to_dict(lora)["recommendation"]["same_cost_as"] == cheapest.key


def test_the_per_gpu_rows_take_the_faster_setup_of_the_same_cost(lora):
    for best in lora.best_per_gpu().values():
        if tier(best) not in (SURE, LIKELY) or best.cost.cost_usd is None:
            continue
        same_gpu = [c for c in lora.candidates if c.gpu.id == best.gpu.id and tier(c) == tier(best)]
        for c in same_gpu:
            if c.cost.cost_usd is not None and c.cost.cost_usd.expected <= best.cost.cost_usd.expected:
                # Anything cheaper is slower and within 1%, or it would be the row.
                assert c.cost.job_hours.expected >= best.cost.job_hours.expected or (
                    c.cost.cost_usd.expected * (1 + SAME_COST) >= best.cost.cost_usd.expected
                )


def test_without_a_deadline_the_answer_names_the_horizon(lora):
    line = summary_line(lora)
    assert "no deadline given: the cheapest setup that finishes within 90 days" in line
    report = build_report(lora, load_gpu_catalog().meta, TODAY)
    assert "no deadline given" in report.recommendation and "Budget page" in report.recommendation


def test_a_long_pretraining_job_is_planned_within_the_horizon(pretrain):
    """2T tokens of a 70B model: the cheapest setups take years; the plan finishes within 90 days."""
    rec = pretrain.recommended
    assert rec is not None
    assert rec.cost.job_hours.expected <= 90 * 24
    assert rec.cost.horizon_status == "within"
    slow = [c for c in pretrain.candidates if c.cost is not None and c.cost.job_hours.expected > 90 * 24]
    assert slow and all(c.cost.horizon_status == "beyond" and tier(c) == MISSED for c in slow if c.fits)
    assert "within 90 days" in summary_line(pretrain)


def test_the_horizon_is_a_budget_setting(cats, pretrain):
    short = estimate(_pretrain(horizon_days=10), *cats)
    assert short.recommended.cost.job_hours.expected <= 10 * 24
    assert "within 10 days" in summary_line(short)
    none = estimate(_pretrain(horizon_days=0.5), *cats)
    assert none.recommended is None and none.decision.status == "limits missed"
    assert summary_line(none).startswith("No setup finishes within 0.5 days (no deadline given")


def test_the_horizon_is_judged_as_a_deadline_is(cats, pretrain):
    """Within the horizon surely when the slow end of the 80% job-time range is; likely when only the
    expected time is; beyond when that is not either (deadline_status: meets / likely / at risk)."""
    for c in pretrain.candidates:
        if c.cost is None:
            continue
        h, horizon = c.cost.job_hours, 90 * 24
        want = "within" if h.high <= horizon else "likely" if h.expected <= horizon else "beyond"
        assert c.cost.horizon_status == want
        if c.fits and want == "likely":
            assert tier(c) in (LIKELY, MISSED)  # likely, unless the budget rules it out
        if c.fits and want == "beyond":
            assert tier(c) == MISSED


def test_a_sure_setup_goes_before_a_cheaper_one_only_likely_within_the_horizon(cats):
    """8 days: 4,096 MI300X take 6.1 days expected but 12.2 at the slow end, so the plan is a setup
    whose slow end is within 8 days, and the answer says why the cheaper one was passed over."""
    est = estimate(_pretrain(horizon_days=8), *cats)
    rec = est.recommended
    assert rec.cost.horizon_status == "within" and rec.cost.job_hours.high <= 8 * 24
    assert est.decision.status == "sure"
    cheaper = [
        c
        for c in est.ranking
        if c.cost is not None
        and c.cost.cost_usd is not None
        and c.cost.cost_usd.expected < rec.cost.cost_usd.expected
        and c.cost.horizon_status == "likely"
    ]
    assert cheaper  # the cheaper setups only likely finish in time
    text = build_report(est, load_gpu_catalog().meta, TODAY).recommendation
    assert "A cheaper setup only likely finishes within 8 days" in text
    assert "finishes within 8 days" in summary_line(est) and "likely" not in summary_line(est)


def test_a_plan_only_likely_within_the_horizon_says_so(cats):
    """3 days: no setup finishes within them at the slow end of its range; the cheapest that does at
    its expected time is recommended as likely, in the summary, the report and the detail panel."""
    est = estimate(_pretrain(horizon_days=3), *cats)
    rec = est.recommended
    assert rec is not None and rec.cost.horizon_status == "likely" and est.decision.status == "likely"
    assert rec.cost.job_hours.expected <= 3 * 24 < rec.cost.job_hours.high
    line = summary_line(est)
    assert (
        "the cheapest setup that likely finishes within 3 days (the slow end of its time range does not)"
        in line
    )
    text = build_report(est, load_gpu_catalog().meta, TODAY).recommendation
    assert "likely finishes within 3 days" in text
    assert "may go past the planning horizon of 3 days at the slow end of the range" in text
    notes = [t for _k, t in candidate_detail(est, rec.key, TODAY)]
    assert any(t.startswith("Likely finishes within the planning horizon of 3 days") for t in notes)
    fitting = [c for c in estimate_to_dict(est)["candidates"] if c["fits"]]
    assert {"likely", "beyond"} <= {c["horizon"] for c in fitting}  # the JSON says it per setup


def test_a_deadline_replaces_the_horizon(cats):
    est = estimate(replace(default_scenario(), budget=Budget(deadline_hours=48, horizon_days=0.01)), *cats)
    assert est.recommended is not None
    assert all(c.cost.horizon_status is None for c in est.candidates if c.cost is not None)
    assert "no deadline given" not in summary_line(est)


def test_horizon_and_providers_are_checked_and_saved():
    data = {"model": {"preset": "llama-3.1-8b"}, "budget": {"horizon_days": 30, "providers": ["lambda"]}}
    s = scenario_from_dict(data)
    assert s.budget.horizon_days == 30 and s.budget.providers == ("lambda",)
    for bad in ({"horizon_days": 0}, {"horizon_days": 5000}, {"providers": []}, {"providers": 3}):
        with pytest.raises(ScenarioError):
            scenario_from_dict({"model": {"preset": "llama-3.1-8b"}, "budget": bad})


def test_the_recommendation_is_never_flagged_by_its_own_detail(cats, lora, pretrain):
    service = estimate(load_scenario(EXAMPLES / "serving-1-replica.json"), *cats)
    for est in (lora, pretrain, service):
        rec = est.recommended
        assert rec is not None
        lines = [text for _kind, text in candidate_detail(est, rec.key, TODAY)]
        assert not any("provisioned" in line for line in lines), lines
    # A service's notes speak of its targets, never of a deadline it does not have.
    for c in service.candidates:
        for _kind, text in candidate_detail(service, c.key, TODAY):
            assert "deadline" not in text.lower() or "no deadline" in text.lower()


def test_over_provisioned_says_which_limit(lora):
    flagged = [
        c for c in lora.candidates if c.over_provisioned and c.key != lora.decision.recommended_key and c.fits
    ]
    assert flagged
    for c in flagged:
        notes = [t for _k, t in candidate_detail(lora, c.key, TODAY) if t.startswith("Over-provisioned")]
        assert len(notes) == 1
        assert "of the memory is used" in notes[0] or "planning horizon of 90 days" in notes[0]


def test_a_speed_on_an_unfitted_engine_says_so_wherever_it_is_shown(cats, lora, pretrain):
    """The Hugging Face Trainer's efficiency is a prior no measured run was fitted to: the detail
    panel (a caution), the CLI's text and the report say so in the same words; Megatron's, fitted
    to published runs, says nothing of the kind."""
    from gpuadvisor.core.presentation.text import render_estimate
    from gpuadvisor.core.presentation.wording import speed_assumption

    sentence = speed_assumption(lora)
    assert lora.engine == "hf-trainer" and sentence is not None
    assert sentence.startswith("Speed: Hugging Face Trainer / PEFT's efficiency is an assumption")
    assert "within 10% of the estimate to several times slower" in sentence
    detail = candidate_detail(lora, lora.recommended.key, TODAY)
    assert ("caution", sentence) in detail
    assert sentence in render_estimate(lora)
    assert build_report(lora, load_gpu_catalog().meta, TODAY).engine_assumed
    assert pretrain.engine == "megatron" and speed_assumption(pretrain) is None
    assert not any(
        "is an assumption" in t for _k, t in candidate_detail(pretrain, pretrain.recommended.key, TODAY)
    )
