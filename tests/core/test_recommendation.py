"""One answer: the decision is computed once in the core and every output names the same setup."""

from __future__ import annotations

import datetime
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuadvisor.core.estimation.estimate import estimate
from gpuadvisor.core.estimation.recommendation import LIKELY, MISSED, NO_FIT, SURE, tier
from gpuadvisor.core.formats.scenario import Budget, ModelSource, Scenario, default_scenario
from gpuadvisor.core.presentation.report import build_report
from gpuadvisor.core.presentation.serialize import estimate_to_dict
from gpuadvisor.core.presentation.wording import summary_line
from gpuadvisor.core.specs.hardware import load_gpu_catalog
from gpuadvisor.core.specs.presets import load_model_catalog
from gpuadvisor.core.specs.workload import Hardware, Workload

TODAY = datetime.date(2026, 11, 30)
# The app's default scenario on the whole catalog (the app itself opens on the data-centre GPUs).
DEFAULT = replace(default_scenario(), hardware=Hardware())


@pytest.fixture(scope="module")
def cats():
    return load_gpu_catalog(), load_model_catalog()


def _names_same_setup(est, gpus) -> str | None:
    """Check that the summary line, the JSON and the report agree; return the recommended key."""
    decision = est.decision
    report = build_report(est, gpus.meta, TODAY)
    assert estimate_to_dict(est)["recommendation"]["recommended"] == decision.recommended_key
    assert report.recommended_key == decision.recommended_key
    line = summary_line(est)
    if decision.recommended_key is None:
        assert not line.startswith("Recommended")
        assert not any(r.recommended for r in report.table_rows)
        return None
    rec = est.candidate(decision.recommended_key)
    assert line.startswith("Recommended: ") and rec.gpu.name in line
    assert (
        report.recommendation.startswith("Recommended: ")
        and rec.gpu.name in report.recommendation.split(".")[0]
    )
    # The recommended setup is always a row of the report's table, and its first one.
    assert report.table_rows[0].key == rec.key and report.table_rows[0].recommended
    assert [r.recommended for r in report.table_rows].count(True) == 1
    # ... and the first of the per-GPU rows the window's ranking shows.
    assert next(iter(est.best_per_gpu().values())).key == rec.key
    return rec.key


def test_deadline_changes_the_recommendation_everywhere(cats):
    """Default scenario with a 2 h deadline: the 4.1 h single-GPU setup can no longer be recommended."""
    plain = estimate(DEFAULT, *cats)
    assert plain.recommended is not None and plain.recommended.cost.job_hours.expected > 2
    est = estimate(replace(DEFAULT, budget=Budget(deadline_hours=2)), *cats)
    key = _names_same_setup(est, cats[0])
    rec = est.candidate(key)
    assert rec.cost.job_hours.high <= 2 and rec.cost.deadline_status == "meets"
    assert "meets the 2 h deadline" in summary_line(est)


def test_budget_cap_below_the_cheapest_is_not_recommended(cats):
    plain = estimate(DEFAULT, *cats)
    cheapest = plain.recommended.cost.cost_usd.expected
    est = estimate(replace(DEFAULT, budget=Budget(max_total_usd=round(cheapest * 0.97, 2))), *cats)
    rec = est.recommended
    if rec is not None:
        assert rec.cost.cost_usd.expected <= cheapest * 0.97
    else:
        assert est.decision.status == "limits missed"
        assert "No setup stays within" in summary_line(est)
    _names_same_setup(est, cats[0])


def test_a_range_that_straddles_the_deadline_is_only_likely(cats):
    """A setup whose expected time meets the deadline but whose slow end does not is "likely", never "meets"."""
    est = estimate(DEFAULT, *cats)
    rec = est.recommended
    hours = rec.cost.job_hours
    deadline = (hours.expected + hours.high) / 2  # between the expected and the slow end
    est2 = estimate(replace(DEFAULT, budget=Budget(deadline_hours=deadline)), *cats)
    c = est2.candidate(rec.key)
    assert c.cost.deadline_status == "likely" and c.cost.meets_deadline is False
    assert tier(c) == LIKELY
    _names_same_setup(est2, cats[0])
    if est2.decision.status == "likely":
        assert "likely meets" in summary_line(est2)


def test_no_duplicate_rows_per_gpu_and_tiers_in_order(cats):
    est = estimate(replace(DEFAULT, budget=Budget(deadline_hours=3)), *cats)
    best = list(est.best_per_gpu().values())
    assert len({c.gpu.id for c in best}) == len(best) == len({c.gpu.id for c in est.candidates})
    tiers = [tier(c) for c in best]
    assert tiers == sorted(tiers)
    assert set(tiers) <= {SURE, LIKELY, MISSED, NO_FIT}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    kind=st.sampled_from(["inference", "lora", "qlora", "full_finetune"]),
    batch=st.integers(1, 64),
    seq=st.sampled_from([512, 2048, 8192]),
    deadline=st.one_of(st.none(), st.floats(0.05, 500)),
    cap=st.one_of(st.none(), st.floats(1, 5000)),
    preset=st.sampled_from(["llama-3.1-8b", "llama-2-7b", "llama-3.1-70b"]),
)
def test_every_output_names_the_same_setup(cats, kind, batch, seq, deadline, cap, preset):
    weights = "nf4" if kind == "qlora" else "bf16"
    w = Workload(
        kind=kind,
        weights=weights,
        batch_size=batch,
        seq_len=seq,
        train_tokens=50e6,
        prompt_tokens=min(seq, 1024),
        output_tokens=256,
        requests=1000,
    )
    scenario = Scenario(
        name="random",
        model=ModelSource(preset=preset),
        workload=w,
        budget=Budget(deadline_hours=deadline, max_total_usd=cap),
    )
    est = estimate(scenario, *cats)
    _names_same_setup(est, cats[0])
