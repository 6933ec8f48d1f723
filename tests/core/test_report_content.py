"""The report's content (pure core, no Qt): formatting rules, table order and figures, the
recommendation, rent versus buy, stale prices and the calibration warnings."""

from __future__ import annotations

import dataclasses
import datetime
from dataclasses import replace
from pathlib import Path

import pytest
from report_json import json_row_cells

from gpuadvisor import __version__
from gpuadvisor.core.estimation.estimate import estimate
from gpuadvisor.core.estimation.recommendation import LIKELY, SAME_COST, SURE, sort_key, tier
from gpuadvisor.core.formats.scenario import ModelSource, Scenario, load_scenario
from gpuadvisor.core.formats.scenario import loads_scenario as load_scenario_text
from gpuadvisor.core.formats.user_catalog import months_before
from gpuadvisor.core.formatting import (
    NONE_MARK,
    display_gpu_name,
    fmt_deadline,
    fmt_flag,
    fmt_gib,
    fmt_hours,
    fmt_hours_range,
    fmt_rate,
    fmt_setup,
    fmt_share,
    fmt_signed_gib,
    fmt_usd,
    fmt_usd_per_mtok,
    fmt_usd_range,
)
from gpuadvisor.core.presentation.report import (
    SERVICE_MEMORY_HEADER,
    TABLE_HEADER,
    Report,
    build_report,
    row_cells,
    table_order,
)
from gpuadvisor.core.presentation.serialize import candidate_to_dict
from gpuadvisor.core.specs.constants import shipped_constants
from gpuadvisor.core.specs.workload import Hardware, Workload
from gpuadvisor.storage.user_catalog_store import load_catalogs

SAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "lora-llama-3.1-8b.json"
TODAY = datetime.date(2026, 11, 29)


@pytest.fixture(scope="module")
def cats():
    return load_catalogs()


@pytest.fixture(scope="module")
def sample(cats):
    est = estimate(load_scenario(SAMPLE), *cats)
    return est, build_report(est, cats[0].meta, TODAY)


# -- formatting rules --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "fn, value, text",
    [
        (fmt_gib, 32.71, "32.7"),
        (fmt_gib, 1234.56, "1,234.6"),
        (fmt_gib, None, NONE_MARK),
        (fmt_signed_gib, 7.3, "+7.3"),
        (fmt_signed_gib, -12.04, "-12.0"),
        (fmt_signed_gib, -0.01, "+0.0"),
        (fmt_rate, 6152.4, "6,152"),
        (fmt_rate, 42.46, "42.5"),
        (fmt_rate, 3.141, "3.14"),
        (fmt_hours, 0.5, "30 min"),
        (fmt_hours, 20.46, "20.5 h"),
        (fmt_hours, 91.2, "3.8 days"),
        (fmt_usd, 41.0, "$41"),
        (fmt_usd, 0.583, "$0.58"),
        (fmt_usd, 1234.4, "$1,234"),
        (fmt_usd, 2.5e6, "$2.50M"),
        (fmt_usd_per_mtok, 0.1284, "$0.13"),
        (fmt_usd_per_mtok, 0.0042, "$0.0042"),
        (fmt_share, 0.3, "30%"),
        (fmt_share, 0.045, "4.5%"),
        (fmt_share, 0.0012, "0.1%"),
        (fmt_flag, True, "yes"),
        (fmt_flag, False, "no"),
        (fmt_flag, None, NONE_MARK),
        (fmt_deadline, 24, "24 h"),
        (fmt_deadline, 100, "100 h (4.2 days)"),
    ],
)
def test_format_rules(fn, value, text):
    assert fn(value) == text


def test_ranges_share_one_unit():
    assert fmt_hours_range(17.84, 29.31) == "17.8\u201329.3 h"
    assert fmt_hours_range(45.2, 74.6) == "1.9\u20133.1 days"
    assert fmt_hours_range(0.2, 0.5) == "12\u201330 min"
    assert fmt_usd_range(26.74, 176.2) == "$27\u2013$176"
    assert fmt_usd_range(0.45, 3.2) == "$0.45\u2013$3.20"
    assert fmt_usd_range(None, None) == "no price"
    assert fmt_setup(1, "none") == "1 GPU" and fmt_setup(4, "tensor") == "4 \u00d7 tensor"


def test_gpu_names_for_the_narrow_table():
    assert display_gpu_name("NVIDIA GeForce RTX 4090") == "RTX 4090"
    assert display_gpu_name("NVIDIA Tesla V100 SXM2 16 GB") == "V100 SXM2 16 GB"
    assert display_gpu_name("NVIDIA B200 (HGX, 180 GB)") == "B200 (HGX, 180 GB)"
    assert display_gpu_name("AMD Instinct MI300X") == "AMD Instinct MI300X"
    assert display_gpu_name("NVIDIA GH200 Grace Hopper Superchip (96 GB HBM3)") == "GH200 Grace Hopper\u2026"


def test_months_before_clamps_to_the_month_end():
    assert months_before(datetime.date(2026, 11, 29), 6) == datetime.date(2026, 5, 29)
    assert months_before(datetime.date(2026, 3, 31), 1) == datetime.date(2026, 2, 28)
    assert months_before(datetime.date(2026, 1, 15), 13) == datetime.date(2024, 12, 15)


# -- the report --------------------------------------------------------------------------------------
def _plain(value) -> bool:
    if value is None or isinstance(value, (str, int, float, bool)):
        return True
    if isinstance(value, tuple):
        return all(_plain(v) for v in value)
    if dataclasses.is_dataclass(value):
        return all(_plain(getattr(value, f.name)) for f in dataclasses.fields(value))
    return False


def test_report_is_frozen_plain_data(sample):
    _, report = sample
    assert isinstance(report, Report) and _plain(report)
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.title = "x"  # type: ignore[misc]
    assert report.app_version == __version__
    assert report.catalog_updated == "2026-12-07" and "schema 1" in report.catalog_version
    assert report.date == "2026-11-29"
    assert report.price_as_of == ("2025-06-30", "2026-05-18", "2026-05-20", "2026-06-30", "2026-11-30")


def test_rows_are_the_json_figures_in_table_order(sample):
    est, report = sample
    ordered = table_order(est)
    assert len(est.best_per_gpu()) == len({c.gpu.id for c in est.candidates})  # one row per GPU type
    assert [r.key for r in report.table_rows] == [c.key for c in ordered][:40]  # build_report's max_rows
    assert len(report.table_rows) == min(40, len(est.best_per_gpu()))
    for row, c in zip(report.table_rows, ordered):
        # read from the typed candidate, and the same as the JSON's figures with the report's rules
        assert row.cells == row_cells(c, est) == json_row_cells(candidate_to_dict(c, est=est))
        assert len(row.cells) == len(TABLE_HEADER)
    tiers = [tier(c) for c in ordered]
    assert tiers == sorted(tiers)  # sure, then likely, then limits missed, then not fitting
    for t in (SURE, LIKELY):
        costs = [c.cost.cost_usd.expected for c in ordered if tier(c) == t and c.cost.cost_usd is not None]
        assert costs == sorted(costs)
    fits = [c.fits for c in ordered]
    assert fits == sorted(fits, reverse=True)  # fitting rows first


def test_recommendation_is_the_fastest_of_the_cheapest_workable_setups(sample):
    """The cheapest setup that surely meets the limits, or the fastest one costing the same (within 1%)."""
    est, report = sample
    sure = [c for c in est.candidates if tier(c) == SURE]
    least = min(sure, key=sort_key)
    same = [c for c in sure if c.cost.cost_usd.expected <= least.cost.cost_usd.expected * (1 + SAME_COST)]
    cheapest = min(same, key=lambda c: (c.cost.job_hours.expected, sort_key(c)))
    assert report.recommended_key == cheapest.key == est.decision.recommended_key
    if cheapest.key != least.key:
        assert est.decision.same_cost_as_key == least.key
        assert "It costs the same as the cheapest setup" in report.recommendation
    # Surely meets the 24 h deadline: even the slow end of its range does.
    assert cheapest.cost.job_hours.high <= 24 and cheapest.cost.deadline_status == "meets"
    assert report.recommendation.startswith(
        "Recommended: "
        + ("1 \u00d7 " if cheapest.gpu_count == 1 else f"{cheapest.gpu_count} \u00d7 ")
        + cheapest.gpu.name
    )
    assert report.table_rows[0].key == report.recommended_key and report.table_rows[0].recommended
    assert "24 h deadline" in report.recommendation and "$200 budget" in report.recommendation
    assert report.runner_up_key is not None and "gh200" not in report.runner_up_key
    assert "Runner-up:" in report.recommendation and "ranks second because" in report.recommendation
    assert [r.recommended for r in report.table_rows].count(True) == 1


def test_scenario_in_plain_words(sample):
    _, report = sample
    words = dict(report.scenario_lines)
    assert words["Model"] == "Llama 3.1 8B, 8.03B parameters"
    assert words["Workload"].startswith("LoRA fine-tuning") and "rank 16" in words["Workload"]
    assert "4 sequences of 2,048 tokens" in words["Batch and sequence"]
    assert "gradient checkpointing on" in words["Batch and sequence"]
    assert words["Job size"] == "500M tokens to train"
    assert words["Budget"].startswith("at most $200 for the whole job")
    assert words["Deadline"] == "24 h"
    assert words["Engine profile"] == "Hugging Face Trainer / PEFT (hf-trainer)"


def test_moe_and_inference_in_plain_words(cats):
    sc = Scenario(
        model=ModelSource(preset="mixtral-8x7b"),
        workload=Workload(kind="inference", weights="fp8", batch_size=8, requests=1000),
    )
    est = estimate(sc, *cats)
    report = build_report(est, cats[0].meta, TODAY)
    words = dict(report.scenario_lines)
    assert "active per token" in words["Model"]
    assert words["Precision"] == "weights fp8, KV cache bf16"
    assert words["Job size"].startswith("1k requests to serve")
    assert any("FP8" in w for w in report.warnings)  # cards without FP8 fall back
    assert any(label == "Memory bandwidth efficiency (decode)" for label, _ in report.engine_factors)


def test_the_engine_release_and_how_it_prefills_are_in_the_report(cats):
    """A service on vLLM's V0 engine: the report's engine factors name its host time per sequence
    and that new prompts are prefilled in passes of their own and its tokens streamed a step late;
    vLLM (V1) mixes them in and streams each token as its step ends."""
    import json

    data = json.loads((SAMPLE.parent / "serving-1-replica.json").read_text())
    words = {}
    for engine in ("vllm-v0", "vllm"):
        data["workload"]["engine"] = engine
        est = estimate(load_scenario_text(json.dumps(data)), *cats)
        words[engine] = dict(build_report(est, cats[0].meta, TODAY).engine_factors)
    assert words["vllm-v0"]["Host time per sequence and step"].startswith("100 µs")
    assert "passes of their own" in words["vllm-v0"]["New prompts while serving"]
    assert "Host time per sequence and step" not in words["vllm"]
    assert "mixed into the batch" in words["vllm"]["New prompts while serving"]
    # V0 streams each token a step late (its output is processed while the next step runs).
    assert words["vllm-v0"]["Tokens streamed"].startswith("a step after")
    assert words["vllm"]["Tokens streamed"].startswith("as the step")
    # vLLM's prompt pass has a host time of its own (the fitted figure, per layer).
    pass_host = words["vllm"]["Host time of a prompt's pass"]
    assert pass_host.endswith("µs per layer (fitted apart from a decode step's)"), pass_host
    # vLLM's chunk depends on the GPU; the V0 line keeps its profile's one figure.
    assert "8,192 tokens on a GPU of 70 GiB or more" in words["vllm"]["Prefill chunk"]
    assert "else 2,048" in words["vllm"]["Prefill chunk"]
    assert words["vllm-v0"]["Prefill chunk"] == "8,192 tokens"
    # Where a prefill projects through the output head: once per prompt in a serving engine.
    assert words["vllm"]["Output head in a prefill"].startswith("once per prompt")
    # Transformers' generate projects the last position only since v4.45; a run that states an
    # older release (or an eager loop calling the whole forward) projects every position.
    data["workload"]["engine"] = "transformers"
    data["workload"].pop("serving", None)
    est = estimate(load_scenario_text(json.dumps(data)), *cats)
    hf = dict(build_report(est, cats[0].meta, TODAY).engine_factors)
    assert hf["Output head in a prefill"].startswith("once per prompt")
    assert "Host time of a prompt's pass" not in hf  # its prompts pay an eager step's time
    data["workload"]["prompt_logits"] = "all"
    est = estimate(load_scenario_text(json.dumps(data)), *cats)
    hf = dict(build_report(est, cats[0].meta, TODAY).engine_factors)
    assert hf["Output head in a prefill"].startswith("on every prompt token")


def test_rent_versus_buy_covers_the_pick_and_the_runner_up(cats, sample):
    est, report = sample
    assert 2 <= len(report.rent_buy_rows) <= 4
    rec, runner = est.recommended, est.candidate(est.decision.runner_up_key)
    assert [r.gpu_id for r in report.rent_buy_rows[:2]] == [rec.gpu.id, runner.gpu.id]
    d = candidate_to_dict(rec)["buy_vs_rent"]
    cells = report.rent_buy_rows[0].cells
    assert cells[1] == fmt_usd(d["purchase_usd"], 0) and cells[4] == f"${d['rent_usd_per_gpu_hour']:.2f}"
    assert cells[5] == fmt_share(d["break_even_utilization"])
    assert any(
        f.startswith("The rule: buying pays back for continuous use") and "break-even ranges from" in f
        for f in report.rent_buy_findings
    )
    one = estimate(replace(est.scenario, hardware=replace(est.scenario.hardware, gpu="mi300x")), *cats)
    alone = build_report(one, cats[0].meta, TODAY)
    assert any("This job alone keeps" in f for f in alone.rent_buy_findings)


def test_rent_versus_buy_says_why_the_pick_cannot_be_compared(cats, sample):
    """The GH200 is sold only inside systems (no purchase price): its row says so, it is not left out."""
    est, _ = sample
    gh = estimate(est.scenario, *cats, gpu_ids=["gh200", "h100-sxm"])
    assert gh.recommended.gpu.id == "gh200"
    report = build_report(gh, cats[0].meta, TODAY)
    first = report.rent_buy_rows[0]
    assert first.gpu_id == "gh200" and first.cells[1].startswith("no purchase price")
    assert report.rent_buy_rows[1].gpu_id == "h100-sxm"
    assert any(
        f.startswith("The recommended setup, GH200") and "cannot be compared" in f
        for f in report.rent_buy_findings
    )


def test_stale_prices_depend_on_today(cats, sample):
    est, report = sample
    assert "mi325x" in report.stale_price_gpus  # 2026-05-18 is more than 6 months before 2026-11-29
    assert "h100-sxm" not in report.stale_price_gpus  # 2026-06-30 is not
    earlier = build_report(est, cats[0].meta, datetime.date(2026, 7, 1))
    assert "mi325x" not in earlier.stale_price_gpus and "t4" in earlier.stale_price_gpus
    fresh = build_report(est, cats[0].meta, datetime.date(2025, 7, 1))
    assert fresh.stale_price_gpus == () and not any(w.startswith("Stale prices") for w in fresh.warnings)
    n = len([g for g in report.stale_price_gpus])
    assert any(w.startswith(f"Stale prices: {n} GPU") for w in report.warnings)


def test_calibration_warnings(cats, sample):
    _, report = sample
    assert report.engine_assumed and report.engine_calibrated_on.startswith("assumed")
    assert any(w.startswith("Outside the calibrated range: the engine profile") for w in report.warnings)
    sc = replace(load_scenario(SAMPLE), workload=replace(load_scenario(SAMPLE).workload, engine="fsdp"))
    fitted = build_report(estimate(sc, *cats), cats[0].meta, TODAY)
    assert (
        not fitted.engine_assumed
        and fitted.engine_calibrated_on == shipped_constants().engines["fsdp"].calibrated_on
    )
    assert fitted.engine_calibrated_on.startswith("29 rows: TRN-20")
    assert not any("engine profile" in w for w in fitted.warnings)
    guessed = Scenario(model=ModelSource(parameters=3e9), workload=Workload(kind="lora"))
    rep = build_report(estimate(guessed, *cats), cats[0].meta, TODAY)
    assert any("architecture is assumed" in w and "calibrated range" in w for w in rep.warnings)


def test_nothing_fits_gives_the_cheapest_change(cats):
    sc = Scenario(
        model=ModelSource(preset="llama-3.1-405b"),
        workload=Workload(kind="full_finetune"),
        hardware=Hardware(gpu_count=1),
    )
    report = build_report(estimate(sc, *cats), cats[0].meta, TODAY)
    assert report.recommendation.startswith("Nothing fits on any GPU compared. The cheapest change")
    assert report.recommended_key is None and report.changes
    assert "1x " not in report.recommendation  # candidate keys are spelled out with GPU names
    assert report.rent_buy_rows == () and report.rent_buy_findings
    assert all(not r.fits for r in report.table_rows)
    assert any("see the changes in section 1" in w for w in report.warnings)


def test_max_rows_limits_the_table(sample, cats):
    est, _ = sample
    report = build_report(est, cats[0].meta, TODAY, max_rows=10)
    assert len(report.table_rows) == 10 and len(report.sources) == 10
    assert any(f"{len(est.best_per_gpu()) - 10} more GPU types left out" in n for n in report.table_notes)
    with pytest.raises(ValueError):
        build_report(est, cats[0].meta, TODAY, max_rows=0)


def test_report_states_whether_calibration_was_applied(cats, sample):
    from gpuadvisor.core.estimation.calibration import CalibrationProfile, FactorFit

    _, report = sample
    assert report.calibration_lines == (
        "Calibration to your own measurements: off. Speed and memory come from the engine profile and the "
        "catalog alone.",
    )
    est = sample[0]
    fit = FactorFit(
        gpu_id="a100-80gb",
        engine=est.engine,
        factor_name="mfu",
        value=0.31,
        n_measurements=5,
        error_before_pct=24.6,
        error_after_pct=1.2,
        measurement_ids=("m1", "m2", "m3", "m4", "m5"),
    )
    other = replace(fit, gpu_id="h100-sxm", engine="vllm", factor_name="bandwidth_efficiency")
    profile = CalibrationProfile(fits=(fit, other), created="2026-11-30")
    on = build_report(estimate(est.scenario, *cats, calibration=profile), cats[0].meta, TODAY)
    head, line = on.calibration_lines
    assert head.startswith(
        "Calibration to your own measurements: on (profile of 2026-11-30). Applied to 1 GPU "
        "type: A100 SXM4 80 GB"
    )
    assert "H100" not in head  # the vLLM value does not apply to a training engine
    assert line == (
        f"A100 SXM4 80 GB with {est.engine}: MFU 0.310, fitted on 5 measurements (median error "
        "24.6% with the engine profile, 1.2% after calibration)."
    )
    unused = build_report(
        estimate(est.scenario, *cats, calibration=CalibrationProfile((other,), "2026-11-30")),
        cats[0].meta,
        TODAY,
    )
    assert unused.calibration_lines[0].startswith(
        "Calibration to your own measurements: on (profile of 2026-11-30), but it holds no values"
    )


def test_a_service_compares_memory_per_gpu_type_and_leaves_speed_and_cost_to_the_fleet(cats):
    """A service's comparison rows carry no batch-job tokens/s, time or cost (they would contradict
    the fleet's monthly cost); the fleet table holds the service's figures."""
    path = Path(__file__).resolve().parents[2] / "docs" / "examples" / "serving-20-replicas.json"
    est = estimate(load_scenario(path), *cats)
    report = build_report(est, cats[0].meta, TODAY)
    assert report.table_header == TABLE_HEADER[:6] + SERVICE_MEMORY_HEADER
    assert all(len(row.cells) == 9 for row in report.table_rows)
    assert "Job time" not in report.table_header and "Cost" not in report.table_header
    assert "fleet table" in " ".join(report.table_notes)
    rec = est.recommended
    # The memory at the operating point, read from the JSON: requests in flight, their KV cache and
    # what the engine takes with its preallocated pool.
    mem = candidate_to_dict(rec)["serving"]["memory_gib"]
    row = next(r for r in report.table_rows if r.key == rec.key)
    assert row.cells[3] == f"{mem['need']:.1f}"
    assert row.cells[6:] == (
        f"{mem['concurrency']:,}",
        f"{mem['kv_cache_in_flight']:.1f}",
        f"{mem['engine_total']:.1f}",
    )
    assert dict(report.serving_lines)["Memory per GPU"].startswith(
        f"{mem['concurrency']} requests in flight: {mem['need']:.1f} of"
    )
    assert report.vram_caption and "in flight" in report.vram_caption
    fleet = next(row for row in report.fleet_rows if row[0] == rec.gpu.name)
    assert fleet[1].startswith(f"{rec.serving.replicas} ")


def test_a_change_to_a_gpu_not_compared_names_it_in_words(cats):
    """An 8B full fine-tune with the optimizer in host RAM does not fit one RTX 4090; the change
    "any GPU of the catalog" lands on a GPU the scenario did not compare. The summary and the
    change list name that GPU as people know it, not by its catalog id."""
    from gpuadvisor.core.presentation.wording import change_lines, summary_line
    from gpuadvisor.core.specs.workload import Offload

    s = load_scenario(SAMPLE)
    s = replace(
        s,
        workload=replace(s.workload, kind="full_finetune", offload=Offload(optimizer="cpu")),
        hardware=Hardware(gpu="rtx-4090", gpu_count=1),
        budget=replace(s.budget, deadline_hours=None, max_total_usd=None),
    )
    est = estimate(s, *cats)
    catalog = [a for a in est.advice if a.change == "any GPU of the catalog" and a.fits]
    assert catalog, "the change to another GPU is offered"
    change = catalog[0]
    assert change.gpu_id and change.gpu_id not in {c.gpu.id for c in est.candidates}
    line = next(text for text in change_lines(est) if text.startswith("any GPU of the catalog"))
    assert change.gpu_name in line
    assert f"\u00d7 {change.gpu_id}," not in line
    if est.advice[0] is change:
        assert change.gpu_name in summary_line(est)


def _result_types_with_to_dict():
    """Every class of the core that writes itself as JSON (``to_dict``): the results and their parts."""
    import importlib
    import inspect
    import pkgutil

    import gpuadvisor.core

    found = set()
    for info in pkgutil.walk_packages(gpuadvisor.core.__path__, "gpuadvisor.core."):
        module = importlib.import_module(info.name)
        for _name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == module.__name__ and "to_dict" in vars(cls):
                found.add(cls)
    return found


@pytest.mark.parametrize(
    "example",
    ["lora-llama-3.1-8b", "serving-20-replicas", "serving-disaggregated", "desktop-rtx4090-qwen3-32b"],
)
def test_the_report_reads_the_typed_results_never_their_json(cats, monkeypatch, example):
    """The PDF's content is read from the results the core returns, as the window reads them: with
    the serializer and every result's ``to_dict`` made to fail, a job's, a service's and a session's
    report are what they were."""
    from gpuadvisor.core.presentation import serialize

    path = Path(__file__).resolve().parents[2] / "docs" / "examples" / f"{example}.json"
    est = estimate(load_scenario(path), *cats)
    expected = build_report(est, cats[0].meta, TODAY)
    est = estimate(load_scenario(path), *cats)  # afresh: nothing the first report worked out is kept

    def serialized(*_args, **_kwargs):
        raise AssertionError("the report read a serialized result")

    types = _result_types_with_to_dict()
    assert {"CostEstimate", "BuyVsRent", "ServingEstimate", "ServingMemory", "Session"} <= {
        t.__name__ for t in types
    }
    for cls in types:
        monkeypatch.setattr(cls, "to_dict", serialized)
    for name in ("candidate_to_dict", "estimate_to_dict", "host_to_dict", "calibration_to_dict"):
        monkeypatch.setattr(serialize, name, serialized)
    assert build_report(est, cats[0].meta, TODAY) == expected
