"""llama.cpp's partial offload against published split runs, each source held out (issue 42's target:
median |error| within 20%; docs/estimation.md, "Validation of the split").

The run refits llama.cpp's factors and its host stream efficiency without each source (about a
minute), so the module is marked ``validation``: ``make validate`` runs it, ``make test`` does not.
``scripts/validate.py --offload`` prints the same figures row by row.
"""

import statistics

import pytest

from gpuadvisor.core.specs.hardware import load_gpu_catalog
from gpuadvisor.core.specs.presets import load_model_catalog
from gpuadvisor.validation import Predictor, load_measurements
from gpuadvisor.validation.harness import HOST_STREAM_GRID, host_stream_rows, offload_out_of_sample
from gpuadvisor.validation.report import SPLIT_TARGET_PCT, offload_summary

pytestmark = pytest.mark.validation


@pytest.fixture(scope="module")
def rows():
    return load_measurements()


@pytest.fixture(scope="module")
def predictor():
    return Predictor(load_gpu_catalog(), load_model_catalog())


@pytest.fixture(scope="module")
def folds(rows, predictor):
    return offload_out_of_sample(rows, predictor)


def test_every_split_run_is_predicted_once_without_its_source(rows, folds):
    split = host_stream_rows(rows)
    held = [c for f in folds for c in f.comparisons]
    assert sorted(c.row.id for c in held) == sorted(r.id for r in split)
    assert {f.source for f in folds} == {r.source_id for r in split}
    assert len({r.source_id for r in split}) >= 3
    for f in folds:
        assert all(c.row.source_id == f.source for c in f.comparisons)
        assert f.host_stream_efficiency in HOST_STREAM_GRID
        assert all(c.estimate and c.estimate > 0 for c in f.comparisons)


def test_split_runs_held_out_by_source_meet_the_target(folds, rows, predictor):
    """2026-12-06: 19.95% over 14 rows of three sources (the hosts stream at 0.5 to 0.7 of their
    datasheet bandwidth, so the held-out fit misses each machine by 13% to 21%): met, narrowly."""
    errors = [abs(c.error) * 100.0 for f in folds for c in f.comparisons]
    held_out = statistics.median(errors)
    shipped = [predictor.compare(r) for r in host_stream_rows(rows)]
    summary = offload_summary(folds, shipped)
    assert summary["median_abs_pct"] == pytest.approx(held_out, abs=0.01)
    assert held_out <= SPLIT_TARGET_PCT
