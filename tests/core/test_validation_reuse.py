"""What the validation harness reuses to run faster gives the figures it would compute anew.

A fit of the per-request time keeps each serving row's replica curves and changes only that time
(``core.estimation.serving.ReplicaCurve.with_overhead``); the predictor remembers each serving
run's figures, which its tokens/s, TTFT and ITL rows share (``Predictor.run_point``). Both must be
exact: the out-of-sample figures are the same to the last bit with them or without.
"""

from dataclasses import replace

import pytest

from gpuadvisor.core.estimation.memory import MemoryModel
from gpuadvisor.core.specs import constants as core_constants
from gpuadvisor.core.specs.constants import engine_for
from gpuadvisor.core.specs.hardware import load_gpu_catalog
from gpuadvisor.core.specs.presets import load_model_catalog
from gpuadvisor.core.specs.workload import Workload
from gpuadvisor.validation import Predictor, load_measurements, load_sources
from gpuadvisor.validation.harness import fit_request_overhead
from gpuadvisor.validation.replay import BenchReplica, burst, closed_loop, lockstep, paced


@pytest.fixture(scope="module")
def cats():
    return load_gpu_catalog(), load_model_catalog()


@pytest.fixture(scope="module")
def rows():
    return load_measurements(sources=load_sources())


@pytest.mark.parametrize("engine_id", ["vllm", "sglang", "tensorrt-llm"])
def test_a_kept_curve_with_another_per_request_time_is_a_new_curve(cats, engine_id):
    gpus, models = cats
    engine = engine_for(engine_id, "inference")
    w = Workload(kind="inference", engine=engine_id, prompt_tokens=1000, output_tokens=300, batch_size=16)
    mm = MemoryModel(models.get("llama-3.1-8b"), w, prefill_chunk_tokens=engine.prefill_chunk_tokens)
    gpu = gpus.get("h100-sxm")
    memo: dict = {}
    for overhead in (0.0, 0.05, 0.2, 0.05, None):
        replica = BenchReplica(mm, gpu, 1, "none", engine, request_overhead_s=overhead)
        for model, args in (
            (closed_loop, (16, None, None)),
            (closed_loop, (16, 80, 600)),  # a finite loop with draining answers
            (burst, (200, 600)),
            (lockstep, (24,)),
            (paced, (16, 2.0)),
        ):
            assert model(replica, *args, memo) == model(replica, *args, None), (model, overhead)
    assert memo  # the curves were kept


def test_the_rows_of_one_run_share_its_figures_and_get_what_they_would_alone(cats, rows):
    """GPUStack reports tokens/s, TTFT and ITL of each run: the three rows share one benchmark,
    and each gets the figure a predictor that never saw the others gives it."""
    serving = [
        r for r in rows if r.scored and r.group == "serving" and r.source_id == "gpustack-performance-lab"
    ]
    shared = Predictor(*cats)
    keys = {}
    for r in serving[:30]:
        prepared = shared.prepare(r)
        keys.setdefault(shared.run_key(r, prepared[0]), []).append(r)
    runs = [group for group in keys.values() if len(group) == 3]
    assert len(runs) >= 5
    for group in runs[:5]:
        together = [shared.compare(r) for r in group]
        alone = [Predictor(*cats).compare(r) for r in group]
        assert together == alone
        assert {c.row.quantity for c in together} == {
            "serving_output_tokens_per_s",
            "serving_ttft_ms",
            "serving_itl_ms",
        }


def test_remembered_figures_follow_the_profile_the_constants_and_the_per_request_time(cats, rows):
    row = next(r for r in rows if r.id == "SRV-37")  # a TTFT row through the API server
    predictor = Predictor(*cats)
    shipped = predictor.compare(row).estimate
    assert predictor.compare(row, None, 0.0).estimate < shipped  # the per-request time counts
    assert predictor.compare(row).estimate == shipped
    constants = core_constants.shipped_constants()
    engine = constants.engines["vllm"]
    slower = constants.with_engines(vllm=replace(engine, prefill_mfu=engine.prefill_mfu / 2))
    assert predictor.compare(row, slower).estimate > shipped  # another profile object
    moved = predictor.compare(
        row, replace(constants, gemm_tokens_half=4 * constants.gemm_tokens_half)
    ).estimate
    assert moved != shipped  # other constants
    assert predictor.compare(row).estimate == shipped


def test_the_per_request_time_fit_is_the_same_with_kept_curves(cats, rows):
    """The fit with kept curves and remembered runs against the same golden-section search over a
    loss that works every row out anew for each trial value (a fresh predictor each time)."""
    from gpuadvisor.validation import harness

    serving = [
        r for r in rows if r.source_id == "mrahman-4090-vllm-sweep" and harness._carries_request_overhead(r)
    ]
    assert len(serving) >= 5
    kept = fit_request_overhead(serving, Predictor(*cats), iterations=6)
    cache: dict[float, float] = {}

    def loss(value: float) -> float:
        if value not in cache:
            cache[value] = harness._loss(Predictor(*cats).compare(r, None, value) for r in serving)
        return cache[value]

    lo, hi = harness.REQUEST_OVERHEAD_RANGE
    best = harness.golden_section_min(loss, lo, hi, tol=0.0, max_iter=6)
    assert kept == min((loss(v), v) for v in (best, lo, hi))[1]


def test_a_row_whose_benchmark_facts_change_is_worked_out_again(cats, rows):
    """The same row id with another run size or answer cap (as tests ask) is another run."""
    row = next(r for r in rows if r.id == "SRY-64")  # 80 requests, answers up to 1,000 tokens
    predictor = Predictor(*cats)
    finite = predictor.compare(row).estimate
    steady = replace(
        row, facts=tuple((k, "" if k in ("requests", "output_tokens_max") else v) for k, v in row.facts)
    )
    assert predictor.compare(steady).estimate == Predictor(*cats).compare(steady).estimate != finite
    assert predictor.compare(row).estimate == finite


def test_a_fold_refits_only_the_engines_of_its_scored_rows():
    """Holding out a source whose rows are all unscored refits nothing, even where their engine has
    no profile in the product (Apple MLX's rows, which crashed a run with the ledger's sources
    admitted)."""
    from gpuadvisor.validation.data import load_measurements as every_row
    from gpuadvisor.validation.harness import _refitted_engines

    every = every_row()
    mlx = [r for r in every if r.source_id == "mlx-maintainer-figures"]
    assert mlx and not any(r.scored for r in mlx)
    assert _refitted_engines(mlx) == set()
    awq = [r for r in every if r.source_id == "autoawq-readme"]
    assert _refitted_engines(awq) == {"autoawq"}
