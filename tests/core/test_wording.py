"""The window's summary and detail wording (core/presentation/wording.py): the report's figures, in words."""

import pytest

from gpuadvisor.core.estimation.estimate import estimate
from gpuadvisor.core.formats.scenario import ModelSource, Scenario, default_scenario
from gpuadvisor.core.formatting import fmt_hours, fmt_hours_range, fmt_usd, fmt_usd_range
from gpuadvisor.core.presentation.detail import TITLE, candidate_detail
from gpuadvisor.core.presentation.report import row_cells
from gpuadvisor.core.presentation.wording import (
    calibration_note,
    model_line,
    setup_name,
    summary_line,
    workload_line,
)
from gpuadvisor.core.specs.hardware import load_gpu_catalog
from gpuadvisor.core.specs.presets import load_model_catalog
from gpuadvisor.core.specs.workload import Workload


@pytest.fixture(scope="module")
def cats():
    return load_gpu_catalog(), load_model_catalog()


@pytest.fixture(scope="module")
def est(cats):
    return estimate(default_scenario(), *cats)


def test_summary_names_the_recommended_setup_with_its_time_and_cost(est):
    rec = est.recommended
    line = summary_line(est)
    assert rec is not None and rec.key == est.decision.recommended_key
    assert line.startswith(
        f"Recommended: {setup_name(rec)}: {fmt_hours(rec.cost.job_hours.expected)} "
        f"({fmt_hours_range(rec.cost.job_hours.low, rec.cost.job_hours.high)}), about "
        f"{fmt_usd(rec.cost.cost_usd.expected)}"
    )
    assert model_line(est).startswith("Llama 3.1 8B: ") and "parameters, 32 layers" in model_line(est)
    assert workload_line(est) == "lora · weights bf16 · micro-batch 4 · 2,048 tokens"
    assert calibration_note(est) == ""


def test_detail_uses_the_report_cells(est):
    today = __import__("datetime").date(2026, 11, 30)
    for c in list(est.best_per_gpu().values())[:12]:
        lines = [text for kind, text in candidate_detail(est, c.key, today) if kind != TITLE]
        cells = row_cells(c, est)
        assert lines[0].startswith(f"{c.verdict.capitalize()}: {cells[3]} of {cells[4]} GiB per GPU")
        assert f"headroom {cells[5]} GiB" in lines[0]
        if c.cost is not None and c.cost.cost_usd is not None:
            speed = next(line for line in lines if " tokens/s (" in line)
            assert f"({fmt_hours_range(c.cost.job_hours.low, c.cost.job_hours.high)})" in speed
            assert fmt_usd_range(c.cost.cost_usd.low, c.cost.cost_usd.high) in speed
            assert cells[7] in speed and cells[8] in speed and f"{cells[9]} per 1M tokens" in speed
        assert all("nan" not in line for line in lines)


def test_nothing_fits_says_so(cats):
    huge = Scenario(model=ModelSource(preset="llama-3.1-405b"), workload=Workload(kind="full_finetune"))
    est = estimate(huge, *cats, gpu_ids=["t4"])
    assert summary_line(est).startswith("Nothing fits on any GPU compared.")


def test_the_text_points_to_the_changes_where_it_prints_them(cats):
    """The terminal text prints the suggested changes before its warnings, so "see the changes"
    points up there, not "below"."""
    from gpuadvisor.core.presentation.text import render_estimate

    huge = Scenario(model=ModelSource(preset="llama-3.1-405b"), workload=Workload(kind="full_finetune"))
    lines = render_estimate(estimate(huge, *cats)).splitlines()
    changes = [i for i, line in enumerate(lines) if line.startswith("Change: ")]
    (warning,) = [i for i, line in enumerate(lines) if "Nothing fits: see the changes" in line]
    assert changes and max(changes) < warning
    assert lines[warning].endswith("see the changes above.")


def test_a_combined_change_the_scenario_already_has_is_not_listed_twice(cats):
    """At micro-batch 1 with gradient checkpointing on, "QLoRA + gradient checkpointing +
    micro-batch 1" is QLoRA alone: the changes list it once, and no two listed changes are the
    same setup with the same figures."""
    huge = Scenario(
        model=ModelSource(preset="llama-3.1-405b"),
        workload=Workload(kind="full_finetune", batch_size=1, gradient_checkpointing=True),
    )
    est = estimate(huge, *cats, gpu_ids=["h100-sxm", "mi300x", "gh200"])
    assert est.ranking == () and est.advice
    labels = [ch.change for ch in est.advice]
    assert any(label.startswith("QLoRA") for label in labels)
    assert not any(label.startswith("QLoRA +") for label in labels)
    outcomes = [
        (ch.candidate, ch.memory_per_gpu_gib, ch.job_hours, ch.cost_usd) for ch in est.advice if ch.fits
    ]
    assert len(outcomes) == len(set(outcomes))


@pytest.mark.parametrize(
    "engine, stated, said",
    [
        ("hf-trainer", None, True),
        ("hf-trainer", False, False),
        ("torchtune", None, False),
        ("torchtune", True, True),
    ],
)
def test_the_assumptions_say_when_a_qlora_base_is_taken_as_prepared_by_peft(cats, engine, stated, said):
    """The report's, the window's and the CLI's table of assumptions says that a QLoRA estimate counts
    PEFT's k-bit preparation (fp32 embeddings, head and norms, and so fp32 hidden states), and how to
    say otherwise; an engine without that habit, or a workload that states false, is not told so."""
    from gpuadvisor.core.presentation.wording import scenario_lines

    workload = Workload(kind="qlora", weights="nf4", engine=engine, kbit_preparation=stated)
    scenario = Scenario(model=ModelSource(preset="llama-3.1-8b"), workload=workload)
    precision = dict(scenario_lines(estimate(scenario, *cats, gpu_ids=["rtx-4090"])))["Precision"]
    assert ("k-bit preparation" in precision) is said
    assert ("workload.kbit_preparation" in precision) is said
