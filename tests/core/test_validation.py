"""The validation set (tests/data/validation) and its harness; targets from issue 14 (see docs/validation.md)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from expected_misses import marked

from gpuadvisor.core.formats.scenario import scenario_from_dict
from gpuadvisor.core.specs.hardware import load_gpu_catalog
from gpuadvisor.core.specs.presets import load_model_catalog
from gpuadvisor.validation import (
    GROUPS,
    Predictor,
    ValidationDataError,
    in_sample,
    load_measurements,
    load_sources,
    out_of_sample,
    scenario_dict,
    summary,
)
from gpuadvisor.validation.data import DATA_DIR, arrival_kind, paced_interval, scenario_engine
from gpuadvisor.validation.harness import SCORE_ONLY_SOURCES, fit_request_overhead, group_stats, speed_rows

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def sources():
    return load_sources()


@pytest.fixture(scope="module")
def rows(sources):
    """The rows every fit and leave-one-source-out run reads: the ledger's baseline sources (and any
    admitted since); the prospective sources' rows are checked in tests/core/test_ledger.py."""
    return load_measurements(sources=sources)


@pytest.fixture(scope="module")
def every_row(sources):
    return load_measurements(sources=sources, include_prospective=True)


@pytest.fixture(scope="module")
def predictor():
    return Predictor(load_gpu_catalog(), load_model_catalog())


@pytest.fixture(scope="module")
def oos(rows, predictor):
    return out_of_sample(rows, predictor)


@pytest.fixture(scope="module")
def oos_summary(oos):
    return summary(oos)


def test_every_scored_row_cites_its_source_and_quotes_the_figure(every_row, sources):
    for r in every_row:
        assert r.locator and r.quote and r.date_read, r.id
        assert sources[r.source_id].citation, r.id
        if r.scored:
            assert r.fact("gpu") and (r.fact("model") or r.fact("architecture") or r.fact("params_b")), r.id
        else:
            assert r.why, r.id


def test_the_set_is_large_and_diverse(rows, every_row, sources):
    used = {r.source_id for r in every_row}
    assert used == set(sources), "every source has rows and every row a source"
    assert len({r.source_id for r in rows}) >= 20, len(sources)
    assert len(rows) >= 120, len(rows)
    for g in GROUPS:
        assert any(r.scored and r.group == g for r in rows), g


def test_the_former_calibration_rows_are_kept(rows):
    import csv

    with open(ROOT / "tests" / "data" / "calibration.csv", newline="", encoding="utf-8") as fh:
        old = {row["case_id"]: float(row["value"].lstrip("<>=")) for row in csv.DictReader(fh)}
    ours = {r.id: r.value for r in rows}
    assert set(old) <= set(ours)
    for cid, value in old.items():
        assert ours[cid] == pytest.approx(value * (1000 if cid in ("MEM-23", "MEM-25") else 1)), cid


def test_every_scored_row_is_a_valid_scenario(every_row):
    for r in every_row:
        if not r.scored:
            continue
        data, omitted = scenario_dict(r)
        scenario_from_dict(data)  # raises a ScenarioError naming the field if not
        assert all(isinstance(o, str) and o for o in omitted)


def test_facts_without_a_scenario_key_are_listed_not_dropped_silently(rows):
    quantized = next(r for r in rows if r.scored and r.fact("quantization") == "bnb")
    data, omitted = scenario_dict(
        quantized, weight_choices=("bf16", "nf4", "int8", "int4", "fp16", "fp32", "fp8")
    )
    assert "quantization" in data["workload"] or any(o.startswith("workload.quantization") for o in omitted)


def test_a_broken_data_file_names_the_row_and_column(tmp_path):
    shutil.copy(DATA_DIR / "sources.csv", tmp_path / "sources.csv")
    text = (DATA_DIR / "measurements.csv").read_text(encoding="utf-8").splitlines()
    header = text[1].split(",")
    cells = next(iter(__import__("csv").reader([text[2]])))
    cells[header.index("value")] = "lots"
    import csv
    import io

    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(cells)
    (tmp_path / "measurements.csv").write_text(
        "\n".join(text[:2] + [buf.getvalue().strip()]) + "\n", encoding="utf-8"
    )
    with pytest.raises(ValidationDataError, match=rf"row {cells[0]}: value must be a number"):
        load_measurements(tmp_path)


def test_rows_may_stop_before_the_columns_added_at_the_end(tmp_path):
    shutil.copy(DATA_DIR / "sources.csv", tmp_path / "sources.csv")
    text = (DATA_DIR / "measurements.csv").read_text(encoding="utf-8").splitlines()
    short = text[2]  # written before vp, recompute, arrival, output_tokens_max, requests, ep, speculative,
    # disaggregated, sp, kbit_preparation, prompt_logits, etp, tflops_attention, dp_shard and
    # prefix_cache_hit_rate existed
    import csv

    assert len(next(csv.reader([short]))) == len(next(csv.reader([text[1]]))) - 15
    (tmp_path / "measurements.csv").write_text("\n".join(text[:3]) + "\n", encoding="utf-8")
    (row,) = load_measurements(tmp_path)
    assert row.fact("vp") == "" and row.fact("recompute") == "" and row.fact("arrival") == ""
    assert row.fact("output_tokens_max") == "" and row.fact("requests") == "" and row.fact("ep") == ""
    assert row.fact("sp") == "" and row.fact("kbit_preparation") == "" and row.fact("prompt_logits") == ""
    assert row.fact("etp") == "" and row.fact("tflops_attention") == "" and row.fact("dp_shard") == ""
    # A row that stops earlier still is an error.
    (tmp_path / "measurements.csv").write_text(
        "\n".join(text[:2] + [short.rsplit(",", 1)[0]]) + "\n", encoding="utf-8"
    )
    with pytest.raises(ValidationDataError, match="wrong number of cells"):
        load_measurements(tmp_path)


def test_every_scored_serving_row_says_whether_its_load_is_stated(rows):
    """``serving_load.csv`` judges each serving run: stated (every figure scored) or unstated
    (tokens/s scored, its latencies counting for coverage), with the reason."""
    serving = [r for r in rows if r.scored and r.group == "serving"]
    assert all(r.fact("load") in ("stated", "unstated") and r.fact("load_why") for r in serving)
    stated = [r for r in serving if r.fact("load") == "stated"]
    assert len(stated) >= 150
    # A burst's or a paced client's admission is never stated.
    assert all(arrival_kind(r.fact("arrival")) in ("closed_loop", "lockstep") for r in stated)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("SRV-38,busy,because", "load must be stated or unstated"),
        ("SRV-38,stated,", "why is empty"),
        ("NOPE-1,stated,because", "id is not in measurements.csv"),
        ("INF-01,stated,because", "load is for serving rows"),
    ],
)
def test_a_serving_load_decision_is_checked(tmp_path, line, message):
    for name in ("sources.csv", "measurements.csv"):
        shutil.copy(DATA_DIR / name, tmp_path / name)
    head = (DATA_DIR / "serving_load.csv").read_text(encoding="utf-8").splitlines()[:2]
    (tmp_path / "serving_load.csv").write_text("\n".join([*head, line]) + "\n", encoding="utf-8")
    with pytest.raises(ValidationDataError, match=message):
        load_measurements(tmp_path)


def _with_arrival(tmp_path, row_id: str, arrival: str) -> None:
    """The data folder with one serving row whose ``arrival`` cell is replaced."""
    _with_cell(tmp_path, row_id, "arrival", arrival)


def _with_cell(tmp_path, row_id: str, column: str, value: str) -> None:
    """The data folder with one row whose ``column`` cell is replaced."""
    import csv
    import io

    shutil.copy(DATA_DIR / "sources.csv", tmp_path / "sources.csv")
    text = (DATA_DIR / "measurements.csv").read_text(encoding="utf-8").splitlines()
    header = next(csv.reader([text[1]]))
    line = next(t for t in text[2:] if t.startswith(row_id + ","))
    cells = next(csv.reader([line]))
    cells += [""] * (len(header) - len(cells))  # a row may stop before the columns added at the end
    cells[header.index(column)] = value
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(cells)
    (tmp_path / "measurements.csv").write_text(
        "\n".join(text[:2] + [buf.getvalue().strip()]) + "\n", encoding="utf-8"
    )


@pytest.mark.parametrize(
    "arrival, message",
    [
        (
            "poisson",
            "arrival must be closed_loop, lockstep, burst, paced:<seconds between requests> or empty",
        ),
        ("in_step", "arrival must be closed_loop, lockstep, burst, paced"),
        ("paced:", "arrival must be closed_loop, lockstep, burst, paced"),
        ("paced:0", "arrival must be closed_loop, lockstep, burst, paced"),
        ("paced:fast", "arrival must be closed_loop, lockstep, burst, paced"),
        ("", "a scored serving row needs arrival"),
    ],
)
def test_a_serving_row_says_how_its_requests_arrived(tmp_path, arrival, message):
    _with_arrival(tmp_path, "SRV-38", arrival)
    with pytest.raises(ValidationDataError, match=rf"row SRV-38: {message}"):
        load_measurements(tmp_path)


@pytest.mark.parametrize(
    "row_id, column, value, message",
    [
        # The longest answer: a burst's, or a closed loop's of stated requests; never below the mean.
        # (NIM's 70B FP8 sweep: a closed loop whose run size is not stated.)
        (
            "SRV-02",
            "output_tokens_max",
            "4000",
            "output_tokens_max is for the varying answers of a burst or of a closed loop",
        ),
        (
            "SRA-003",
            "output_tokens_max",
            "300",
            r"output_tokens_max must be at least output_tokens \(their mean\)",
        ),
        ("SRA-003", "output_tokens_max", "many", "output_tokens_max must be a number"),
        # A run's requests in all: a closed loop's only, never fewer than its clients.
        ("SRA-003", "requests", "500", "requests is for a closed loop of a stated number of requests"),
        ("SRY-65", "requests", "8", r"requests must be at least the clients \(micro_batch\)"),
        ("SRY-65", "requests", "eighty", "requests must be a number"),
        # The share of each prompt a prefix cache held: a serving row's, a share below one.
        ("SRY-65", "prefix_cache_hit_rate", "1", "prefix_cache_hit_rate must be a share from 0 to below 1"),
        ("SRY-65", "prefix_cache_hit_rate", "most", "prefix_cache_hit_rate must be a share"),
        ("MEM-01", "prefix_cache_hit_rate", "0.5", "prefix_cache_hit_rate is for serving rows"),
    ],
)
def test_the_trailing_serving_columns_are_checked(tmp_path, row_id, column, value, message):
    _with_cell(tmp_path, row_id, column, value)
    with pytest.raises(ValidationDataError, match=rf"row {row_id}: {message}"):
        load_measurements(tmp_path)


def test_a_short_closed_loop_is_predicted_with_its_first_wave_and_last_answers(rows, predictor):
    """SGLang's cookbook runs five requests per client: the row states the run's requests and the
    longest answer its random dataset draws, and the prediction (a first wave, the steady loop, a
    draining end) makes fewer tokens/s than the steady loop and a later first token."""
    from dataclasses import replace

    by_id = {r.id: r for r in rows}
    for tokens_row, ttft_row in (("SRY-64", "SRY-65"), ("SRX-04", "SRX-05")):
        row = by_id[tokens_row]
        assert row.fact("requests") == "80" and "80 prompts" in row.fact("assumptions")
        assert row.fact("output_tokens_max") == "1000"
        steady = tuple((k, "" if k in ("requests", "output_tokens_max") else v) for k, v in row.facts)
        assert predictor.compare(row).estimate < 0.95 * predictor.compare(replace(row, facts=steady)).estimate
        row = by_id[ttft_row]
        steady = tuple((k, "" if k in ("requests", "output_tokens_max") else v) for k, v in row.facts)
        # TTFT is time-like: the harness compares it in ms, a later first token is a larger figure.
        assert predictor.compare(row).estimate > predictor.compare(replace(row, facts=steady)).estimate


def test_prompts_found_in_the_prefix_cache_come_sooner_and_faster(rows, predictor):
    """A benchmark that sends the same prompts again to a server whose cache holds them states the
    share found there: less of each prompt is prefilled, so the first token comes sooner and the
    loop makes more tokens/s, replayed in closed form and request by request alike."""
    from dataclasses import replace

    by_id = {r.id: r for r in rows}
    for tokens_row, ttft_row in (("SRY-64", "SRY-65"),):
        for simulate in (False, True):
            cold, warm = (
                replace(by_id[tokens_row], facts=(*by_id[tokens_row].facts, ("prefix_cache_hit_rate", h)))
                for h in ("", "0.9")
            )
            got = [predictor.compare(r, simulate=simulate).estimate for r in (cold, warm)]
            assert got[1] > got[0], got
            cold, warm = (
                replace(by_id[ttft_row], facts=(*by_id[ttft_row].facts, ("prefix_cache_hit_rate", h)))
                for h in ("", "0.9")
            )
            got = [predictor.compare(r, simulate=simulate).estimate for r in (cold, warm)]
            assert got[1] < 0.8 * got[0], got


def test_a_disaggregated_runs_prefill_pool_skips_what_its_prefix_cache_holds(every_row, predictor):
    """The prefill instances of a disaggregated run prefill only what their cache does not hold: a
    stated share of each prompt found there brings the first token sooner."""
    from dataclasses import replace

    row = next(
        r for r in every_row if r.fact("disaggregated") and r.quantity == "serving_ttft_ms" and r.scored
    )
    cold, warm = (replace(row, facts=(*row.facts, ("prefix_cache_hit_rate", h))) for h in ("", "0.9"))
    got = [predictor.compare(r).estimate for r in (cold, warm)]
    assert got[1] < got[0], got


def test_a_burst_of_answers_cut_at_max_tokens_is_predicted_draining(rows, predictor):
    """AccelMark's offline bursts stop each answer at its end token or at max_tokens: the row
    states the cap, and the prediction drains (fewer tokens/s than equal answers of the mean)."""
    from dataclasses import replace

    row = next(r for r in rows if r.id == "SRA-003")
    assert row.fact("output_tokens_max") == "512" and "max_tokens 512" in row.fact("assumptions")
    facts = tuple((k, "" if k == "output_tokens_max" else v) for k, v in row.facts)
    equal = predictor.compare(replace(row, facts=facts)).estimate
    draining = predictor.compare(row).estimate
    assert equal is not None and draining is not None
    assert draining < 0.9 * equal


@pytest.mark.parametrize(
    "row_id, basis, message",
    [
        ("SRV-38", "http", "basis must be empty or 'engine' for serving rows"),
        ("INF-01", "engine", "basis is only for memory and serving rows"),
    ],
)
def test_a_serving_rows_basis_is_the_api_or_the_engines_process(tmp_path, row_id, basis, message):
    _with_cell(tmp_path, row_id, "basis", basis)
    with pytest.raises(ValidationDataError, match=rf"row {row_id}: {message}"):
        load_measurements(tmp_path)


def test_rows_taken_in_the_engines_process_get_no_api_time_and_do_not_fit_it(rows, predictor):
    """A client inside the engine's process (AccelMark's in-process engine) meets no API server:
    its rows are predicted without the per-request time, whatever value is offered, and take no
    part in that time's fit; a row taken through the API server gets the value offered."""
    from gpuadvisor.core.specs.constants import shipped_constants

    inside = [r for r in rows if r.scored and r.group == "serving" and r.basis == "engine"]
    assert len(inside) >= 100 and {r.source_id for r in inside} == {"accelmark"}
    first = next(r for r in inside if r.quantity == "serving_ttft_ms")
    assert "one request at a time" in first.fact("assumptions")
    got = {predictor.compare(first, None, v).estimate for v in (None, 0.0, 0.15)}
    assert len(got) == 1 and None not in got
    # Fitted to these rows alone there is nothing to fit: the shipped value stays.
    assert fit_request_overhead(inside, predictor) == shipped_constants().request_overhead_s["*"]
    api = next(r for r in rows if r.id == "SRV-37")  # GPUStack's vLLM, 4 clients through the API
    assert api.basis == ""
    slow, fast = (predictor.compare(api, None, v).estimate for v in (0.15, 0.0))
    assert slow is not None and fast is not None and slow - fast == pytest.approx(150.0, rel=0.05)


def test_serving_figures_of_runs_the_engine_paces_join_the_fit(rows):
    """The ITL, the tokens/s and the time to first token of closed loops (in step or not) and bursts
    alike are the decode step, the prefill and the queue of prompts the engine factors describe (the
    per-request time is fitted after them, ``fit_request_overheads``; the first token joined the fit
    on 2026-12-04); a paced client's figures are scored, not fitted (where its pace binds they are
    the client's schedule)."""
    fit = {r.id for r in speed_rows(rows)}
    serving = [r for r in rows if r.scored and r.group == "serving"]
    kinds = {arrival_kind(r.fact("arrival")) for r in serving}
    assert kinds == {"closed_loop", "lockstep", "burst", "paced"}
    assert {r.quantity for r in serving} == {
        "serving_itl_ms",
        "serving_output_tokens_per_s",
        "serving_ttft_ms",
    }
    for r in serving:
        expected = (
            r.quantity in ("serving_itl_ms", "serving_output_tokens_per_s", "serving_ttft_ms")
            and arrival_kind(r.fact("arrival")) in ("closed_loop", "lockstep", "burst")
            and r.source_id not in SCORE_ONLY_SOURCES
        )
        assert (r.id in fit) == expected, r.id
    fitted = [r for r in serving if r.id in fit]
    assert {r.fact("arrival") for r in fitted} == {"closed_loop", "burst"}
    assert len(fitted) >= 60


def test_a_score_only_source_is_scored_everywhere_and_fitted_nowhere(rows, every_row, oos, predictor):
    """The NIM sizing dataset's rows (and every other score-only source's) count in every median and
    table (they are scored and predicted with their source held out like any other) but move no
    fitted constant: no speed fit, and the per-request time is fitted to the other sources' serving
    rows alone. A score-only source still prospective in the ledger (issue 46's two) is kept out of
    the fits and out of leave-one-source-out by the ledger itself: its rows are scored there."""
    from gpuadvisor.core.specs.constants import shipped_constants

    assert SCORE_ONLY_SOURCES, "the mechanism is in use"
    fitted = {s.id for s in speed_rows(rows)}
    baseline = {r.source_id for r in rows}
    for source, why in SCORE_ONLY_SOURCES.items():
        assert len(why) > 40, source
        if source not in baseline:  # prospective: the ledger holds its first score, no fold reads it
            assert sum(r.source_id == source and r.scored for r in every_row) >= 20, source
            continue
        held = [r for r in rows if r.source_id == source and r.scored]
        assert len(held) >= 20, source  # a large source kept out of the fits
        assert not any(r.id in fitted for r in held), source
        scored = {c.row.id for c in oos if c.row.source_id == source and c.estimate is not None}
        assert scored >= {r.id for r in held}, source
    only = [r for r in rows if r.source_id in SCORE_ONLY_SOURCES]
    # Fitted to nothing but these rows, the per-request time stays at the shipped value.
    assert fit_request_overhead(only, predictor) == shipped_constants().request_overhead_s["*"]


def test_a_closed_loop_is_in_step_only_where_its_source_shows_fixed_lengths_and_a_common_start(rows):
    """``lockstep`` is a fact of the benchmark, not a fit: every such row says its clients started
    together and every request had the same lengths (the source's own counts), and it is predicted
    with the core's lockstep figures (a wave's first token)."""
    from gpuadvisor.core.specs.hardware import load_gpu_catalog
    from gpuadvisor.core.specs.presets import load_model_catalog
    from gpuadvisor.validation import Predictor

    in_step = [r for r in rows if r.scored and r.fact("arrival") == "lockstep"]
    assert len(in_step) >= 100
    for r in in_step:
        assert "all started together" in r.fact("assumptions") and "the same length" in r.fact(
            "assumptions"
        ), r.id
        assert "output tokens per request" in r.fact("assumptions"), r.id  # the counts that show it
    row = next(r for r in rows if r.id == "SRN-041")  # 25 clients, 2,000-token prompts, an H100
    assert row.fact("arrival") == "lockstep"
    predictor = Predictor(load_gpu_catalog(), load_model_catalog())
    got = predictor.compare(row)
    sc, _model, _omitted = predictor.prepare(row)
    assert got.estimate is not None and sc.workload.batch_size == 25
    # The TTFT of a wave of 25 prompts: far beyond one prompt's prefill.
    single = predictor.compare(next(r for r in rows if r.id == "SRN-038"))
    assert got.estimate > 5 * single.estimate


def test_per_request_times_are_fitted_per_stack_with_enough_first_token_rows(rows, predictor):
    """A stack gets its own per-request time when its rows hold enough first tokens to pin it; the
    others share the value fitted to every stack's rows, and each row is predicted with its stack's."""
    from gpuadvisor.validation.data import scenario_engine
    from gpuadvisor.validation.harness import (
        EVERY_STACK,
        REQUEST_OVERHEAD_MIN_TTFT_ROWS,
        REQUEST_OVERHEAD_RANGE,
        fit_request_overheads,
        overhead_for,
    )

    trt = [r for r in rows if r.source_id == "nim-llm-benchmarking"]
    sglang = [r for r in rows if r.id in ("SRV-39", "SRV-40", "SRV-41", "SRV-45", "SRV-46", "SRV-47")]
    assert {scenario_engine(r) for r in trt} == {"tensorrt-llm"}
    assert {scenario_engine(r) for r in sglang} == {"sglang"}
    assert sum(r.quantity == "serving_ttft_ms" for r in sglang) < REQUEST_OVERHEAD_MIN_TTFT_ROWS
    got = fit_request_overheads(trt + sglang, predictor, iterations=6)
    assert set(got) == {EVERY_STACK, "tensorrt-llm"}
    assert all(REQUEST_OVERHEAD_RANGE[0] <= v <= REQUEST_OVERHEAD_RANGE[1] for v in got.values())
    assert overhead_for(trt[0], got) == got["tensorrt-llm"]
    assert overhead_for(sglang[0], got) == got[EVERY_STACK]
    assert overhead_for(trt[0], None) is None  # in sample: the shipped values
    # Asked for one stack that has its own value, only that value is fitted, and it is the same.
    assert fit_request_overheads(trt + sglang, predictor, iterations=6, stacks={"tensorrt-llm"}) == {
        "tensorrt-llm": got["tensorrt-llm"]
    }


def test_a_paced_row_is_predicted_with_its_clients_pace(rows):
    """AIMultiple's client offers one request every 0.5 s: at 16 clients on a B200 the engine could
    turn over more, so the estimate is the client's 2 requests/s, not the closed loop's. (On an H200
    the engine's own rate is estimated below the pace since the MoE constants are fitted.)"""
    from gpuadvisor.core.specs.hardware import load_gpu_catalog
    from gpuadvisor.core.specs.presets import load_model_catalog
    from gpuadvisor.validation import Predictor

    row = next(r for r in rows if r.id == "SRB-33")
    assert paced_interval(row.fact("arrival")) == 0.5
    c = Predictor(load_gpu_catalog(), load_model_catalog()).compare(row)
    assert c.estimate == pytest.approx(2.0 * float(row.fact("output_tokens")))


def test_layout_rows_reach_the_scenario(rows):
    row = next(r for r in rows if r.id == "LAY-01")
    data, omitted = scenario_dict(row)
    hw, wl = data["hardware"], data["workload"]
    assert (hw["tensor_parallel"], hw["pipeline_parallel"], hw["virtual_pipeline_stages"]) == (4, 8, 5)
    assert (
        hw["parallelism"] == "zero1" and wl["global_batch_size"] == 256 and wl["compute_precision"] == "fp8"
    )
    assert not any(o.startswith("layout") for o in omitted)
    offload = next(r for r in rows if r.id == "LAY-07")
    assert scenario_dict(offload)[0]["workload"]["offload"] == {"optimizer": "cpu"}


def test_a_stack_s_own_words_reach_the_scenario_as_the_scenario_s(every_row):
    """torchtitan's "selective" checkpointing is its per-operator policy, and its tensor parallelism
    always splits the sequence; a Megatron row's "selective" stays Megatron's, and a row's own ``sp``
    cell wins over any stack's default."""
    by_id = {r.id: r for r in every_row}
    fsdp = scenario_dict(by_id["TTB-02"])[0]
    assert fsdp["workload"]["activation_recompute"] == "op"
    assert "sequence_parallel" not in fsdp["hardware"]  # no TP: nothing to split
    tp = scenario_dict(by_id["TTB-22"])[0]
    assert tp["workload"]["activation_recompute"] == "full" and tp["hardware"]["sequence_parallel"] is True
    megatron = next(r for r in every_row if r.engine == "megatron" and r.fact("recompute") == "selective")
    assert scenario_dict(megatron)[0]["workload"]["activation_recompute"] == "selective"
    from dataclasses import replace

    stated = replace(
        by_id["TTB-22"], facts=tuple((k, "no" if k == "sp" else v) for k, v in by_id["TTB-22"].facts)
    )
    assert scenario_dict(stated)[0]["hardware"]["sequence_parallel"] is False


def test_rescored_rows_take_the_later_decision_and_a_bad_one_names_the_row(tmp_path, every_row):
    rescored = (DATA_DIR / "rescored.csv").read_text(encoding="utf-8").splitlines()
    import csv

    decisions = {r["id"]: r["scored"] for r in csv.DictReader(rescored[1:])}
    decided = set(decisions)
    by_id = {r.id: r for r in every_row}
    assert decided and {"yes", "no"} >= set(decisions.values())
    for i, scored in decisions.items():  # the later decision wins, either way
        assert by_id[i].scored == (scored == "yes"), i
        assert by_id[i].scored or by_id[i].why, i
    for name in ("sources.csv", "measurements.csv"):
        shutil.copy(DATA_DIR / name, tmp_path / name)
    (tmp_path / "rescored.csv").write_text(
        "\n".join(rescored[:2] + ["NO-SUCH-ROW,no,a reason,2026-12-01"]) + "\n", encoding="utf-8"
    )
    with pytest.raises(ValidationDataError, match=r"rescored.csv row NO-SUCH-ROW: id is not in measurements"):
        load_measurements(tmp_path)
    (tmp_path / "rescored.csv").write_text(
        "\n".join(rescored[:2] + [f"{next(iter(decided))},no,,2026-12-01"]) + "\n", encoding="utf-8"
    )
    with pytest.raises(ValidationDataError, match=r"why is empty"):
        load_measurements(tmp_path)


def test_summary_has_exactly_the_documented_shape(oos_summary, rows, sources):
    assert set(oos_summary) == {"rows", "sources", "groups"}
    assert oos_summary["rows"] == len(rows) and oos_summary["sources"] == len({r.source_id for r in rows})
    assert set(oos_summary["groups"]) == set(GROUPS)
    assert set(oos_summary["groups"]["bounds"]) == {"n", "right"}
    assert set(oos_summary["groups"]["memory"]) == {"n", "median_abs_pct", "p80_abs_pct", "coverage"}
    for g in ("inference_speed", "training_speed", "serving"):
        # The speed groups also say how often a range calibrated without a source holds its rows.
        s = oos_summary["groups"][g]
        assert set(s) == {"n", "median_abs_pct", "p80_abs_pct", "coverage", "coverage_held_out"}
        assert 0 < s["coverage_held_out"] <= 1
    for g in ("memory", "inference_speed", "training_speed", "serving"):
        s = oos_summary["groups"][g]
        assert s["n"] > 0 and 0 <= s["coverage"] <= 1 and s["median_abs_pct"] <= s["p80_abs_pct"]


def test_held_out_coverage_recalibrates_without_each_source(oos):
    """A source whose rows all lie far outside every other source's errors is never covered, however
    the shipped ranges (which its own residuals helped to set) look."""
    from dataclasses import replace as _replace

    from gpuadvisor.validation.harness import held_out_coverage

    speed = [c for c in oos if c.row.scored and c.row.group == "training_speed" and c.estimate]
    far = [_replace(c, estimate=c.measured / 50.0) for c in speed[:3]]
    moved = {c.row.id for c in far}
    lonely = [_replace(c, row=_replace(c.row, source_id="a-lonely-source")) for c in far]
    rest = [c for c in speed if c.row.id not in moved]
    both = held_out_coverage(rest + lonely)["training_speed"]
    # The lonely source's three rows add no hit: at most the other rows are covered.
    assert both * (len(rest) + 3) <= len(rest) + 1e-9
    assert held_out_coverage(rest)["training_speed"] > 0.5


def test_in_sample_with_the_shipped_profiles_runs(rows, predictor):
    ins = in_sample(rows, predictor)
    assert [c.row.id for c in ins] == [r.id for r in rows]
    assert all(c.estimate is not None for c in ins if c.row.scored)


def test_the_script_prints_the_json_summary():
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "validate.py"), "--in-sample", "--json"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    data = json.loads(out.stdout)
    assert set(data["groups"]) == set(GROUPS)


# --- issue 14's targets, out of sample (never weaken them; see docs/validation.md) ------------------
MEDIAN_TARGETS = {"memory": 10.0, "inference_speed": 15.0, "training_speed": 15.0, "serving": 15.0}
COVERAGE_TARGET = 0.80
#: Targets the current estimator misses, with the figure measured when the mark was set (strict: a pass
#: turns the mark into a failure, so it is removed as soon as the physics meets the target).
MEDIAN_MISSES: dict[str, str] = {
    "serving": (
        "out-of-sample median 19.9% > 15% over 1,000 rows (2026-12-07, tokens streamed as their step ends "
        "on every engine but vLLM V0, refitted whole; 20.4% before, refitted with llama.cpp's prompt "
        "speed by weight type and MoE training shapes; 20.5% after the refit with each "
        "prompt's host time, 20.1% before; issue 46: the TTFT and ITL of "
        "the 426 runs whose load is unstated count for coverage only, the 204 at a stated load are "
        "replayed by the request-level simulation; 22.4% when every row's latencies counted as before; "
        "the two sources of speculative decoding and disaggregated pools are prospective in the ledger, "
        "first scored 16.1% and 39.2%); "
        "22.4% over 1,000 rows from 14 sources (2026-12-04: a prompt "
        "runs the LM head once, FP4 checkpoints counted as published, an untied head counted once "
        "and the first tokens in the fit, 23.1% before; 2026-12-03: sliding-window layers attend to their window only and tensor-parallel ranks each hold the "
        "KV heads they cannot split, 24.5% before; a step holds at most one prefill chunk, 24.6% "
        "before; vLLM's "
        "per-GPU defaults, 256 sequences and 2,048-token chunks on an A100 or a GPU under 70 GiB, "
        "25.2% before; a benchmark's sequences capped by the engine's default KV pool, 25.4% "
        "before; GPUStack's MoE pages joined "
        "that day, 267 rows now at 28.5% (43.8% before vLLM's per-GPU defaults, 48.1% before the "
        "cap; 28.5% again since 2026-12-04); the 733 rows scored before stand at 21.5% (21.8% before "
        "2026-12-04, 21.4% before vLLM's per-GPU defaults), "
        "from 23.7% with the MoE expert-kernel efficiency and kernels fitted and MXFP4 on the "
        "engines' 4-bit kernels; 28.7% before vLLM 0.7's V0 release line, a burst's one wait per "
        "request, SGLang's prefill passes and finite closed loops; 32.2% before draining bursts, the "
        "closed loop's arrival theorem, vLLM's GPTQ and INT8 W8A8 kernels, MoE prefill reads and eager "
        "prefill launches): gpt-oss bursts of short answers to long prompts on an A100 (their "
        "prefill is about twice as fast as modelled); TTFT 37.6% (29% at best with a "
        "per-request time chosen in sample per source, stack and GPU: scripts/ttft_bound.py; "
        "19% with one factor per setup chosen in sample: scripts/serving_bound.py), "
        "tokens/s 19.0%, ITL 21.8%"
    ),
}


@pytest.mark.parametrize("group", marked(MEDIAN_TARGETS, MEDIAN_MISSES))
def test_out_of_sample_median_error_within_target(oos_summary, group):
    s = oos_summary["groups"][group]
    assert s["median_abs_pct"] <= MEDIAN_TARGETS[group], s


#: Coverage with the 80% ranges themselves held out (``coverage_held_out``: recalibrated without each
#: source before its rows are checked, the coverage a new source can expect) below the target, with the
#: figure measured when the mark was set (strict: remove the mark as soon as the target holds).
HELD_OUT_COVERAGE_MISSES: dict[str, str] = {
    "inference_speed": "held-out coverage 76% over 291 rows on 2026-12-06 (84% with the shipped ranges, calibrated on every source, "
    "their spreads rounded outward; 77% before the prompt speed by weight type, 78% before the whole refit): "
    "errors cluster by source, so a range calibrated without a source misses its rows more often",
    "training_speed": "held-out coverage 71% over 68 rows on 2026-12-06 (85% with the shipped ranges; 72% before published TFLOPS "
    "were compared in Megatron's convention; 69% and 82% before FP8 "
    "casts by GEMM width and ZeRO-3/FSDP gathers layer by layer): the training sources each miss in their own direction "
    "(DeepSpeed ZeRO-3 at one to four sequences per GPU fast, FP8 Megatron recipes slow)",
    "serving": "held-out coverage 78% over 1,000 rows on 2026-12-07 (81% with the shipped ranges; 79% before tokens were "
    "streamed as their step ends; 78% before their spreads were rounded outward, 79% before the whole refit)",
}


@pytest.mark.parametrize("group", marked(MEDIAN_TARGETS, HELD_OUT_COVERAGE_MISSES))
def test_out_of_sample_coverage_at_least_80_percent(oos_summary, group):
    """The target on the honest figure: for the speed groups the share of rows inside an 80% range
    calibrated without their own source (``coverage_held_out``); the shipped ranges were calibrated on
    every source's residuals, the held-out one's included, so their ``coverage`` says how well they
    were fitted, not how well they predict. Memory's band (10% of the estimate) is not calibrated on
    the rows: its ``coverage`` is already held out."""
    s = oos_summary["groups"][group]
    figure = s["coverage"] if group == "memory" else s["coverage_held_out"]
    assert figure >= COVERAGE_TARGET, s


@pytest.mark.parametrize("group", ["inference_speed", "training_speed", "serving"])
def test_the_shipped_ranges_hold_80_percent_of_the_rows_they_were_calibrated_on(oos_summary, group):
    """A check of the calibration itself (split-conformal at 10%/90% over these residuals), not of
    the target: see test_out_of_sample_coverage_at_least_80_percent."""
    s = oos_summary["groups"][group]
    assert s["coverage"] >= COVERAGE_TARGET - 0.02, s


def _sections(text: str) -> dict[str, str]:
    """The text under each ``##``/``###`` heading (the heading line as the key)."""
    out: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith(("## ", "### ")):
            current = line
            out[current] = []
        elif current is not None:
            out[current].append(line)
    return {k: "\n".join(v).strip() for k, v in out.items()}


def test_docs_validation_md_is_what_the_script_prints_now(oos, rows, sources, predictor):
    """docs/validation.md as scripts/validate.py --write would write it today, section by section: the
    out-of-sample tables, the ledger's first scores, the sources, the unscored rows, every row's
    comparison, the in-sample table and the data format. Not compared: the first paragraph (its date
    and run time) and the table of profiles refitted to every row (``--write`` alone computes it)."""
    from gpuadvisor.validation.ledger import load_diagnoses, load_ledger, restated_rows
    from gpuadvisor.validation.report import markdown

    ins = in_sample(rows, predictor)
    ledger = load_ledger()
    every = load_measurements(DATA_DIR, sources=sources, include_prospective=True)
    now = _sections(
        markdown(
            oos,
            ins,
            sources,
            "today",
            0.0,
            None,
            ledger=ledger,
            diagnoses=load_diagnoses(),
            restated=restated_rows(ledger, every),
        )
    )
    doc = _sections((ROOT / "docs" / "validation.md").read_text(encoding="utf-8"))
    assert list(now) == list(doc), "the same sections in the same order"
    stale = []
    for heading, text in now.items():
        if heading == "## In sample (secondary)":
            if not doc[heading].startswith(text):  # the refitted-profiles table follows in the doc
                stale.append(heading)
        elif doc.get(heading) != text:
            stale.append(heading)
    assert not stale, f"docs/validation.md is stale (run scripts/validate.py --write): {stale}"


def test_out_of_sample_bounds_all_right(oos_summary):
    s = oos_summary["groups"]["bounds"]
    assert s["n"] > 0 and s["right"] == s["n"], s


def test_inference_speed_median_without_the_llama_cpp_rows(oos):
    """The group target must not be met by one engine's many rows alone: 14.1% over the other
    engines' 117 rows (2026-12-04: a prompt runs the LM head once, an untied head is counted once,
    FP4 checkpoints as published and the first tokens in the fit); 14.9% on 2026-12-03,
    sliding-window layers attend to their window only and tensor parallel ranks each hold the KV
    heads they cannot split (the refit moved the Hopper bandwidth ceiling from 0.87 to 0.84). It was a strict expected failure at 15.7% (a step held at most one
    prefill chunk) and 15.2% (vLLM's per-GPU scheduling defaults); 14.7% before, with the MoE
    constants fitted; 14.9% on 2026-12-02, attention at the 16-bit rate beside FP8 GEMMs and
    per-request times fitted within each fold; 15.1% before, 14.8% and 16.9% in earlier rounds of
    that day)."""
    rest = [
        c
        for c in oos
        if c.row.scored and c.row.group == "inference_speed" and c.row.fact("engine") != "llama.cpp"
    ]
    stats = group_stats(rest)["inference_speed"]
    assert stats.median_abs_pct <= MEDIAN_TARGETS["inference_speed"], stats


def test_llama_cpp_rows_meet_the_targets_on_their_own(oos):
    """llama.cpp's pp/tg model (five fitted factors, refitted with each source held out) on its own
    rows: Apple silicon (discussion #4167), consumer CUDA cards (#15013) and the rest."""
    mine = [
        c
        for c in oos
        if c.row.scored and c.row.group == "inference_speed" and c.row.fact("engine") == "llama.cpp"
    ]
    assert len(mine) >= 140
    assert {c.row.source_id for c in mine} >= {"llamacpp-disc4167", "llamacpp-disc15013"}
    stats = group_stats(mine)["inference_speed"]
    assert stats.median_abs_pct <= MEDIAN_TARGETS["inference_speed"], stats
    assert stats.coverage >= COVERAGE_TARGET, stats


def test_the_serving_figures_are_reported_one_by_one(oos):
    """The serving median must not hide one figure: docs/validation.md splits it by figure (tokens/s,
    TTFT, ITL), by how the requests were sent and by whether the source is fitted to, each split
    covering every scored serving row."""
    from gpuadvisor.validation.report import serving_table

    lines = serving_table(oos)
    n = sum(1 for c in oos if c.row.scored and c.row.group == "serving")
    counts = {line.split("|")[1].strip(): int(line.split("|")[2]) for line in lines[2:]}
    figures = ("output tokens/s", "time to first token", "inter-token latency")
    arrivals = (
        "closed loop",
        "closed loop in step (fixed lengths, started together)",
        "burst",
        "paced client",
    )
    fitting = ("sources the constants are fitted to", "sources scored, not fitted")
    loads = (
        *(f"stated load: {f}" for f in figures),
        "load unstated: output tokens/s",
        "load unstated: TTFT and ITL (coverage only)",
    )
    assert set(counts) == {*figures, *arrivals, *fitting, *loads}
    assert sum(counts[f] for f in figures) == n == sum(counts[a] for a in arrivals)
    assert sum(counts[f] for f in fitting) == n == sum(counts[f] for f in loads)
    # The unstated runs' latencies are judged on coverage alone: no median in their line.
    unstated = next(line for line in lines if "coverage only" in line)
    assert unstated.split("|")[3].strip() == ""


#: A run at a stated load is judged on each of its figures (issue 46): the median |error| of each,
#: out of sample, over the serving rows whose load is stated.
STATED_FIGURES = ("serving_output_tokens_per_s", "serving_ttft_ms", "serving_itl_ms")
#: Stated-load figures the current estimator misses, with the figure measured when the mark was set.
STATED_MISSES: dict[str, str] = {
    "serving_output_tokens_per_s": (
        "18.1% > 15% over 162 rows (2026-12-08, vLLM's prompt pass given a host time of its own and refitted; "
        "18.2% on 2026-12-07, five single-GPU vLLM V1 sources admitted to the fits and "
        "refitted: on the 103 rows fitted before 17.7% to 15.1% in the trial; the RTX 4090 sweep's first tokens at "
        "4-32 clients restated with "
        "the prefix-cache hits of their repeated prompts and refitted: vLLM's per-request time 31 ms; 17.5% before, "
        "vLLM's per-request time fitted on its runs at a stated load, 6 ms; "
        "18.3% before, tokens streamed as their step ends on every engine but vLLM "
        "V0 and each request's time outside the engine drawn about its mean, refitted whole; 17.6% before, "
        "the ranges' spreads rounded outward; 17.7% with each prompt's "
        "host time in the engine and the whole refit; 18.3% before): AccelMark's 82 rows at 19.6% (its closed loops through the in-process async "
        "engine), GPUStack's six at four clients a median 22% low; issue 46's two sources are prospective in the "
        "ledger, not in these folds: their first scores 16.1% (speculative) and 39.2% "
        "(disaggregated, gpt-oss-120b on H200: prefill about twice, decode about 30% slower than "
        "measured)"
    ),
    "serving_ttft_ms": (
        "42.1% > 15% over 114 rows (2026-12-08, vLLM's prompt pass given a host time of its own and refitted; "
        "39.7% on 2026-12-07, five single-GPU vLLM V1 sources admitted and refitted, their own "
        "single-client first tokens still late in the model when held out; 41.3% over the 55 before, "
        "the RTX 4090 sweep's four first tokens at 4-32 clients, found in the "
        "prefix cache, stated and scored: vLLM's per-request time refitted 6 to 31 ms; 41.5% over 51 before, "
        "vLLM's per-request time fitted on its runs at a stated load: "
        "6 ms, where 41 ms fitted over bursts; GPUStack's six stated first tokens 114% to 48%, the RTX 4090 "
        "runs' 229% and 28% to 106% and 34%, AccelMark's in-process rows, which take no per-request time, "
        "40% to 42% with the refit's prefill factor 0.44; "
        "40.4% before, tokens streamed as their step ends on every engine but vLLM V0, "
        "refitted whole: vLLM V1's single clients no longer a step late; 41.4% before, "
        "refitted whole with llama.cpp's prompt speed by weight type; "
        "42.3% with each prompt's host time in the engine and the whole refit, vLLM's prefill factor written 0.45 where one digit wrote 0.4; 50.9% and 59.5% "
        "before): AccelMark's single-client first tokens on slow hosts (a 0.5B model's 86-token "
        "prompt 10-16 ms modelled, 11-40 ms measured) and its 28,000-token prompts (still slow: vLLM's long "
        "prefill runs nearer the peak than its fitted prefill factor)"
    ),
}


@pytest.mark.parametrize("figure", marked(STATED_FIGURES, STATED_MISSES))
def test_runs_at_a_stated_load_meet_the_median_target_on_each_figure(oos, figure):
    mine = [
        c
        for c in oos
        if c.row.scored
        and c.row.group == "serving"
        and c.row.fact("load") == "stated"
        and c.row.quantity == figure
    ]
    assert len(mine) >= 40
    stats = group_stats(mine)["serving"]
    assert stats.median_abs_pct <= MEDIAN_TARGETS["serving"], stats


@pytest.mark.xfail(
    strict=True,
    reason="about 79.3% of 440 on 2026-12-08 once vLLM's prompt pass got a host time of its own and was "
    "refitted (79.8% on 2026-12-07 after five vLLM serving sources were admitted; 80.0% of 426 before)",
)
def test_the_latencies_of_runs_whose_load_is_unstated_count_for_coverage(oos):
    """80.3% (342 of 426) on 2026-12-06, once the spreads were rounded outward; 79.8% before (the
    nearest hundredth had narrowed the slow ends of the ITL's and TTFT's ranges below the rows that
    set them). 79.8% (340) on 2026-12-07, once vLLM's per-request time was fitted at stated loads
    (6 ms) and the first token's range narrowed; 80.0% (341) since, the RTX 4090 sweep's first
    tokens restated with their prefix-cache hits and refitted (31 ms; the range's slow end +102%)."""
    mine = [
        c
        for c in oos
        if c.row.scored
        and c.row.group == "serving"
        and c.row.fact("load") == "unstated"
        and c.row.quantity != "serving_output_tokens_per_s"
    ]
    stats = group_stats(mine)["serving"]
    assert stats.median_abs_pct is None  # not in any median
    assert stats.coverage >= COVERAGE_TARGET, stats


def test_a_held_out_serving_source_never_reaches_its_prediction_through_the_shipped_per_request_times(
    rows, predictor, monkeypatch
):
    """The shipped per-request times were fitted with every source, so leave-one-source-out must
    not use them: each fold fits its own, without the held-out source (for its engine and global
    fits as well as for the held-out rows). Shipped values far off leave every prediction as it
    was. Three small vLLM serving sources stand in for the whole set (a run of seconds)."""
    from dataclasses import replace

    from gpuadvisor.core.specs.constants import shipped_constants

    few = [
        r
        for r in rows
        if r.source_id in ("mrahman-4090-vllm-sweep", "violet-quartz-4090-vllm", "databasemart-a40-vllm")
    ]
    assert sum(r.scored and r.group == "serving" for r in few) >= 15
    before = {c.row.id: c.estimate for c in out_of_sample(few, predictor)}
    far = replace(
        shipped_constants(), request_overhead_s={"*": 0.2, "vllm": 0.2, "tensorrt-llm": 0.2, "sglang": 0.2}
    )
    other = Predictor(predictor.gpus, predictor.models, far)
    after = {c.row.id: c.estimate for c in out_of_sample(few, other)}
    assert after == before
    # ... while a prediction that is handed no per-request time does take the one of its constants.
    row = next(r for r in few if r.scored and r.quantity == "serving_ttft_ms" and r.basis != "engine")
    shipped = predictor.compare(row).estimate
    none = replace(shipped_constants(), request_overhead_s={"*": 0.0, "vllm": 0.0})
    assert predictor.compare(row, none).estimate < shipped


def test_leave_one_source_out_gives_the_same_answer_in_one_process_or_several(rows, predictor):
    """The folds run in forked processes where there are CPUs for them: the same comparisons as
    one after another, in the rows' order."""
    few = [
        r
        for r in rows
        if r.source_id
        in (
            "llamacpp-pr4766",
            "mlc-llm-perf-bench",
            "databasemart-a40-vllm",
            "llm-k8s-vllm-nd96asr",
            "zero-paper",
        )
    ]
    alone = out_of_sample(few, predictor, workers=1)
    spread = out_of_sample(few, predictor, workers=3)
    assert [c.row.id for c in spread] == [r.id for r in few]
    assert spread == alone
    assert any(c.estimate for c in alone)


@pytest.mark.parametrize(("raw", "want"), [("1", 1), (" 3 ", 3), ("0", 1)])
def test_the_number_of_validation_processes_can_be_set(monkeypatch, raw, want):
    from gpuadvisor.validation.harness import WORKERS_ENV, validation_workers

    monkeypatch.setenv(WORKERS_ENV, raw)
    assert validation_workers() == want


def test_a_number_of_validation_processes_that_is_not_a_number_is_named(monkeypatch):
    from gpuadvisor.validation.harness import WORKERS_ENV, validation_workers

    monkeypatch.setenv(WORKERS_ENV, "many")
    with pytest.raises(ValueError, match="GPUADVISOR_VALIDATION_WORKERS must be a whole number"):
        validation_workers()


@pytest.mark.parametrize(
    "name",
    [
        "bandwidth_ceiling:ada",
        "bandwidth_ceiling:ampere",
        "bandwidth_ceiling:hopper",
        "graph_step_host_s:python",
        "graph_step_host_s:cpp",
        "prompt_host_s:python",
        "prompt_host_s:cpp",
        "moe_kernels_per_layer",
        "moe_expert_efficiency",
    ],
)
def test_a_global_constant_moves_only_the_rows_said_to_read_it(rows, predictor, name):
    """The global fit works out again, for each trial value of a constant, only the rows that read
    it (``rows_reading``); moving the constant far must leave every other row where it was. Rows of
    every engine, GPU architecture and kind of figure stand in for the set."""
    from gpuadvisor.core.specs import constants as core_constants
    from gpuadvisor.validation.harness import _global, _with_global, global_rows, rows_reading

    picked = {}
    for r in global_rows(rows):
        prepared = predictor.prepare(r)
        if isinstance(prepared, str):
            continue
        sc = prepared[0]
        arch = predictor.gpus.get(sc.hardware.gpu).architecture
        key = (scenario_engine(r), arch, r.quantity, r.fact("arrival"), prepared[1].is_moe)
        picked.setdefault(key, r)
    some = list(picked.values())
    reading = set(rows_reading(name, some, predictor) or range(len(some)))
    assert 0 < len(reading) < len(some), "the constant is read by some rows and not others"
    shipped = core_constants.shipped_constants()
    moved = _with_global(shipped, name, _global(shipped, name) * 1.7)
    before = [predictor.compare(r).estimate for r in some]
    after = [predictor.compare(r, moved).estimate for r in some]
    assert [i for i, (b, a) in enumerate(zip(before, after)) if a != b and i not in reading] == []
    assert any(after[i] != before[i] for i in reading), "moving the constant moves some row that reads it"


def test_a_rows_shard_group_is_passed_on_for_zero_and_fsdp_only(tmp_path, predictor):
    """``dp_shard`` states hybrid sharding (FSDP's HYBRID_SHARD, fms-fsdp's "hsdp"): an FSDP row's
    scenario shards its state in groups of that many data-parallel ranks; a row that does not shard
    its state (data parallel alone) cannot state it, and a group must be a number."""
    _with_cell(tmp_path, "FMSE-05", "dp_shard", "8")
    (row,) = load_measurements(tmp_path, include_prospective=True)
    prepared = predictor.prepare(row)
    assert not isinstance(prepared, str)
    scenario, _model, _omitted = prepared
    assert scenario.hardware.parallelism == "fsdp" and scenario.hardware.data_parallel_shard == 8
    _with_cell(tmp_path, "FMSE-05", "dp_shard", "eight")
    with pytest.raises(ValidationDataError, match="row FMSE-05: dp_shard must be a number"):
        load_measurements(tmp_path, include_prospective=True)
    _with_cell(tmp_path, "MEM-01", "dp_shard", "8")
    with pytest.raises(
        ValidationDataError, match="row MEM-01: dp_shard is for training rows of ZeRO or FSDP"
    ):
        load_measurements(tmp_path)
