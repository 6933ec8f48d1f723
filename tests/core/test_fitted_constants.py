"""The fitted constants as data, one record per engine, and estimates as a pure function of the
constants they are given.

- ``gpuadvisor/core/specs/fitted_constants.json`` matches the validation data it was fitted from
  (``make fit-check``), and the check fails when a value is edited by hand, a row or a catalog spec
  changes, or a prior moves;
- an engine record states every field, and the file states every engine;
- estimates on four threads with four sets of constants give what they give one after another.
"""

from __future__ import annotations

import copy
import dataclasses
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import pytest

from gpuadvisor.core.estimation.estimate import estimate
from gpuadvisor.core.formats.scenario import ModelSource, Scenario
from gpuadvisor.core.specs.constants import (
    PRIORS,
    FittedFileError,
    constants_from_values,
    fitted_fields,
    shipped_constants,
)
from gpuadvisor.core.specs.engines import PROFILES, RECORDS, EngineProfile
from gpuadvisor.core.specs.hardware import load_gpu_catalog
from gpuadvisor.core.specs.presets import load_model_catalog
from gpuadvisor.core.specs.serving import ServingSpec
from gpuadvisor.core.specs.workload import Hardware, Workload
from gpuadvisor.validation import fit, load_measurements
from gpuadvisor.validation.data import scenario_engine
from gpuadvisor.validation.harness import Predictor, fit_engine, speed_rows


@pytest.fixture(scope="module")
def rows():
    return load_measurements()


@pytest.fixture(scope="module")
def shipped_file():
    return fit.read()


@pytest.fixture(scope="module")
def cats():
    return load_gpu_catalog(), load_model_catalog()


# --- the file matches the data ------------------------------------------------------------------
def test_the_shipped_file_is_what_the_fit_wrote_for_this_data(rows, shipped_file):
    assert fit.check(shipped_file, rows) == []


def test_the_program_reads_the_values_of_the_file(shipped_file):
    k = shipped_constants()
    values = shipped_file["values"]
    assert fit.flatten(fit.values_of(k)) == fit.flatten(values)
    assert k.engines["vllm"].prefill_mfu == values["engines"]["vllm"]["prefill_mfu"]
    assert k.request_overhead_for("vllm-v0") == values["request_overhead_s"]["vllm"]  # a release line
    assert k.request_overhead_for("mlc-llm") == values["request_overhead_s"]["*"]  # no fit of its own


def test_a_value_edited_by_hand_fails_the_check(rows, shipped_file):
    edited = copy.deepcopy(shipped_file)
    edited["values"]["engines"]["vllm"]["prefill_mfu"] += 0.01
    problems = fit.check(edited, rows)
    assert any("edited by hand" in p for p in problems)
    # Rewriting the values' hash as well does not hide it: the value is not the fit's.
    edited["values_sha256"] = fit.sha256_json(edited["values"])
    problems = fit.check(edited, rows)
    assert problems and all("engines[vllm].prefill_mfu" in p for p in problems)


def test_an_engine_s_words_count_the_rows_its_factors_rest_on(rows, shipped_file):
    """The report prints an engine's ``calibrated_on`` ("498 rows: ..."): a count that is not the
    number of rows its fitted factors rest on (sources admitted since it was written) fails the
    check, naming the engine."""
    for eid, fields_ in shipped_file["values"]["engines"].items():
        n = len(shipped_file["rests_on"].get(f"engine:{eid}", ()))
        words = fields_["calibrated_on"]
        assert words.startswith(f"{n} rows") or (n == 0 and not words[:1].isdigit()), (eid, words[:40])
    stale = copy.deepcopy(shipped_file)
    words = stale["values"]["engines"]["vllm"]["calibrated_on"]
    stale["values"]["engines"]["vllm"]["calibrated_on"] = "296" + words[words.index(" rows") :]
    stale["values_sha256"] = fit.sha256_json(stale["values"])
    problems = fit.check(stale, rows)
    assert len(problems) == 1 and "engine vllm: its words say 296 rows" in problems[0]


def test_a_changed_row_or_catalog_spec_fails_the_check(rows, shipped_file, tmp_path):
    moved = [replace(r, value=r.value * 1.1) if i == 0 else r for i, r in enumerate(rows)]
    assert any("changed since the fit" in p for p in fit.check(shipped_file, moved))
    # A catalog's price is not data the fit reads; a spec is.
    for name in ("gpus.csv", "models.csv"):
        (tmp_path / name).write_text((fit.CATALOGS / name).read_text(encoding="utf-8"), encoding="utf-8")
    gpus = (tmp_path / "gpus.csv").read_text(encoding="utf-8")
    priced = gpus.replace(",2026-06-30,", ",2026-07-01,", 1)
    assert priced != gpus
    (tmp_path / "gpus.csv").write_text(priced, encoding="utf-8")
    assert fit.check(shipped_file, rows, tmp_path) == []
    # A GPU no row names is not data the fit reads either: adding one needs no refit.
    line = next(line for line in gpus.splitlines() if line.startswith("rtx-4090,"))
    added = gpus.rstrip("\n") + "\n" + line.replace("rtx-4090,", "my-new-gpu,", 1) + "\n"
    (tmp_path / "gpus.csv").write_text(added, encoding="utf-8")
    assert fit.check(shipped_file, rows, tmp_path) == []
    faster = gpus.replace("rtx-4090,NVIDIA GeForce RTX 4090,nvidia,ada,pcie,2022,24,23.99,GDDR6X,1008,",
                          "rtx-4090,NVIDIA GeForce RTX 4090,nvidia,ada,pcie,2022,24,23.99,GDDR6X,1009,")  # fmt: skip
    assert faster != gpus
    (tmp_path / "gpus.csv").write_text(faster, encoding="utf-8")
    assert any("changed since the fit" in p for p in fit.check(shipped_file, rows, tmp_path))


def test_a_moved_prior_fails_the_check(rows, shipped_file):
    edited = copy.deepcopy(shipped_file)
    edited["priors"]["engines[vllm].prefill_mfu"] = 0.5
    assert any("a prior changed" in p for p in fit.check(edited, rows))


def test_every_kept_value_says_why(shipped_file):
    kept = shipped_file["fit"]["kept"]
    assert all(str(why).strip() for why in kept.values())
    assert set(kept) <= set(shipped_file["fit"]["fitted"])


def test_the_fit_reads_only_the_sources_the_ledger_lets_it(rows, shipped_file):
    from gpuadvisor.validation.ledger import fitted_sources

    allowed = fitted_sources()
    assert allowed is not None and set(shipped_file["data"]["sources"]) <= allowed
    assert {r.source_id for r in rows} <= allowed


def test_the_check_takes_seconds_not_a_fit(rows, shipped_file, monkeypatch):
    """make fit-check runs no fit: the harness's fitting functions are never called."""
    from gpuadvisor.validation import harness

    def refuse(*args, **kwargs):
        raise AssertionError("the check ran a fit")

    for name in ("fit_all", "fit_engine", "fit_globals", "fit_request_overheads", "out_of_sample"):
        monkeypatch.setattr(harness, name, refuse)
    assert fit.check(shipped_file, rows) == []


def test_settle_rounds_to_each_values_digits_and_keeps_what_it_is_told(shipped_file):
    fitted = {"engines[vllm].prefill_mfu": 0.40312, "globals.gemm_tokens_half": 6.4411}
    shipped = dict(shipped_file["values"])
    shipped["engines"] = {**shipped["engines"], "vllm": {**shipped["engines"]["vllm"], "prefill_mfu": 0.4}}
    before = {"values": shipped, "fit": {"digits": {"engines[vllm].prefill_mfu": 2}}}
    values, digits, kept = fit.settle(fitted, before)
    assert values == {"engines[vllm].prefill_mfu": 0.4, "globals.gemm_tokens_half": 6.44}
    assert digits == {"engines[vllm].prefill_mfu": 2, "globals.gemm_tokens_half": 3} and kept == {}
    values, digits, kept = fit.settle({"engines[vllm].prefill_mfu": 0.37}, before, keep="a reason")
    assert values == {"engines[vllm].prefill_mfu": 0.4} and kept == {"engines[vllm].prefill_mfu": "a reason"}


def test_a_refitted_value_keeps_two_significant_digits_at_least(shipped_file):
    """One digit can be a quarter off the fit: a value written with one is refitted with two."""
    before = {"values": shipped_file["values"], "fit": {"digits": {"engines[vllm].prefill_mfu": 1}}}
    values, digits, _kept = fit.settle({"engines[vllm].prefill_mfu": 0.4436}, before)
    assert values == {"engines[vllm].prefill_mfu": 0.44} and digits == {"engines[vllm].prefill_mfu": 2}


# --- one record per engine --------------------------------------------------------------------------
def test_an_engine_record_states_every_field():
    assert all(
        f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        for f in dataclasses.fields(EngineProfile)
    )
    vllm = {f.name: getattr(RECORDS["vllm"], f.name) for f in dataclasses.fields(EngineProfile)}
    del vllm["batching"]
    with pytest.raises(TypeError, match="batching"):
        EngineProfile(**vllm)


def test_an_inference_record_states_how_it_serves_and_a_training_one_does_not():
    vllm = RECORDS["vllm"]
    with pytest.raises(ValueError, match="batching"):
        replace(vllm, batching=None)
    with pytest.raises(ValueError, match="unknown kernel family"):
        replace(vllm, int4_kernel="no-such-kernels")
    with pytest.raises(ValueError, match="training engine"):
        replace(RECORDS["megatron"], batching=vllm.batching)


def test_the_file_states_every_engine_and_each_its_fitted_fields(shipped_file):
    values = shipped_file["values"]
    assert sorted(values["engines"]) == sorted(p.id for p in PROFILES)
    for p in PROFILES:
        assert sorted(values["engines"][p.id]) == sorted(fitted_fields(p))
    missing = copy.deepcopy(values)
    del missing["engines"]["sglang"]
    with pytest.raises(FittedFileError, match="engines must be exactly"):
        constants_from_values(missing)
    short = copy.deepcopy(values)
    del short["engines"]["vllm"]["layer_overhead_s"]
    with pytest.raises(FittedFileError, match="vllm must set exactly"):
        constants_from_values(short)


def test_constants_hold_only_engines_that_have_a_record():
    """An engine is one record (core.specs.engines): constants can refit a record's factors, never
    carry an engine the records do not have, under another id, or of the other kind."""
    k = shipped_constants()
    vllm = k.engines["vllm"]
    with pytest.raises(ValueError, match="no record"):
        k.with_engines(new=replace(vllm, id="my-engine", name="My engine"))
    with pytest.raises(ValueError, match="no record"):
        replace(k, engines={**k.engines, "sglang": vllm})
    # Refitting a record's factors is what constants are for.
    assert k.with_engines(vllm=replace(vllm, prefill_mfu=0.3)).engines["vllm"].prefill_mfu == 0.3
    assert set(k.engines) == set(RECORDS)


# --- estimates are a function of the constants they are given ----------------------------------------
def _variants():
    k = shipped_constants()
    vllm = k.engines["vllm"]
    return [
        k,
        PRIORS,
        replace(k, gemm_tokens_half=4 * k.gemm_tokens_half, request_overhead_s={"*": 0.2}),
        k.with_engines(
            vllm=replace(vllm, prefill_mfu=vllm.prefill_mfu / 2, layer_overhead_s=3e-4),
            trainer=replace(k.engines["hf-trainer"], mfu=0.5),
        ),
    ]


def _figures(est):
    return [
        (
            c.key,
            c.performance.tokens_per_s if c.performance else None,
            c.cost.cost_usd if c.cost else None,
            c.serving.ttft_s if c.serving else None,
        )
        for c in est.candidates
    ]


def test_estimates_on_four_threads_with_different_constants_give_the_serial_results(cats):
    gpus, models = cats
    scenarios = [
        Scenario(
            model=ModelSource(preset="llama-3.1-8b"),
            workload=Workload(kind="inference", engine="vllm", batch_size=16, prompt_tokens=2000),
        ),
        Scenario(
            model=ModelSource(preset="llama-3.1-8b"),
            workload=Workload(
                kind="inference",
                engine="vllm",
                prompt_tokens=1000,
                output_tokens=200,
                serving=ServingSpec(requests_per_s=4.0, ttft_s=2.0, itl_ms=60.0),
            ),
            hardware=Hardware(gpu="h100-sxm"),
        ),
        Scenario(model=ModelSource(preset="llama-3.1-8b"), workload=Workload(kind="lora")),
    ]
    jobs = [(sc, k) for sc in scenarios for k in _variants()]

    def run(job):
        sc, k = job
        return _figures(estimate(sc, gpus, models, with_advice=False, constants=k))

    serial = [run(job) for job in jobs]
    assert len({str(s) for s in serial}) == len(jobs)  # every variant moves every scenario
    with ThreadPoolExecutor(max_workers=4) as pool:
        for _ in range(2):
            assert list(pool.map(run, jobs)) == serial
    # Nothing the threads did changed the shipped constants.
    assert run((scenarios[0], None)) == serial[0]


def test_the_fitter_recovers_a_known_factor(cats, rows):
    """Rows whose measured figure is the estimate under a known GEMM ceiling (Megatron's ``mfu`` at
    0.62, its prior 0.80): the fit finds it again."""
    gpus, models = cats
    predictor = Predictor(gpus, models)
    truth = replace(PRIORS.engines["megatron"], mfu=0.62)
    k = shipped_constants().with_engines(megatron=truth)
    mine = [r for r in speed_rows(rows) if scenario_engine(r) == "megatron"][:8]
    assert len(mine) == 8
    made = []
    for r in mine:
        c = predictor.compare(r, k)
        assert c.estimate
        made.append(replace(r, value=c.estimate if r.quantity != "train_gpu_hours" else r.value))
    made = [r for r in made if r.quantity != "train_gpu_hours"]
    fitted = fit_engine(shipped_constants().engines["megatron"], made, predictor)
    assert fitted.mfu == pytest.approx(0.62, rel=0.03)
