"""Estimates against published measurements (tests/data/calibration.csv; see docs/validation.md)."""

import pytest

from gpuadvisor.core.specs.hardware import load_gpu_catalog
from gpuadvisor.core.specs.presets import load_model_catalog
from gpuadvisor.validation import median_abs_error, run_memory_validation, run_speed_validation


@pytest.fixture(scope="module")
def memory_results():
    return run_memory_validation(load_model_catalog())


@pytest.fixture(scope="module")
def speed_results():
    return run_speed_validation(load_model_catalog(), load_gpu_catalog())


def test_memory_median_error_at_most_10_percent(memory_results):
    assert median_abs_error(memory_results) <= 0.10


def test_memory_bounds_on_the_right_side(memory_results):
    """Out-of-memory rows estimate above the card, 'fits' rows within it."""
    bounds = [r for r in memory_results if r.case.bound != "point"]
    assert bounds and all(r.ok for r in bounds), [(r.case.case_id, r.estimate_bytes) for r in bounds if not r.ok]


@pytest.mark.parametrize("case_id", ["MEM-08", "MEM-10", "MEM-11", "MEM-14", "MEM-16", "MEM-18", "MEM-19",
                                     "MEM-23", "MEM-25", "MEM-26", "MEM-27", "MEM-28", "MEM-29"])
def test_each_well_specified_memory_row_within_10_percent(memory_results, case_id):
    r = next(r for r in memory_results if r.case.case_id == case_id)
    assert abs(r.error) <= 0.10, (case_id, r.error)


def test_speed_median_error_at_most_20_percent(speed_results):
    assert median_abs_error(speed_results) <= 0.20


def test_every_calibration_row_is_covered(memory_results, speed_results):
    import csv
    from pathlib import Path
    from gpuadvisor.validation import EXCLUDED
    path = Path(__file__).resolve().parents[1] / "data" / "calibration.csv"
    with open(path, newline="", encoding="utf-8") as fh:
        ids = {row["case_id"] for row in csv.DictReader(fh)}
    covered = {r.case.case_id for r in memory_results} | {r.case.case_id for r in speed_results} | set(EXCLUDED)
    assert ids == covered
