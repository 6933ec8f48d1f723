"""The core keeps no shared mutable state: an estimate is a function of the scenario, the catalogs
and the speed model's constants alone, so the window's worker thread, a validation fold and the
CLI can run estimates side by side.

- no module of the core declares ``global`` state;
- estimates of every example scenario and of the heavy cases (advice with its re-estimates, the
  layout search beyond a node, a service) run on four threads at once give the serial answers,
  and leave every module-level table of the core as it was.
"""

from __future__ import annotations

import ast
import datetime as dt
import importlib
import json
import pkgutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import gpuadvisor.core as core
from gpuadvisor.core.estimation.estimate import estimate
from gpuadvisor.core.formats.scenario import ModelSource, Scenario, load_scenario
from gpuadvisor.core.presentation.serialize import estimate_to_dict
from gpuadvisor.core.specs.constants import shipped_constants
from gpuadvisor.core.specs.hardware import load_gpu_catalog
from gpuadvisor.core.specs.presets import load_model_catalog
from gpuadvisor.core.specs.workload import Hardware, Workload

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "docs" / "examples").glob("*.json"))
TODAY = dt.date(2026, 12, 7)


def _core_modules() -> list[str]:
    return [m.name for m in pkgutil.walk_packages(core.__path__, "gpuadvisor.core.")]


def _module_tables() -> dict[str, str]:
    """Every module-level dict, list, set or bytearray of the core, by module and name, as text."""
    out = {}
    for name in _core_modules():
        module = importlib.import_module(name)
        for key, value in vars(module).items():
            if isinstance(value, dict | list | set | bytearray) and not key.startswith("__"):
                out[f"{name}.{key}"] = repr(value)
    return out


def test_no_module_of_the_core_declares_global_state():
    found = []
    for path in sorted((REPO / "gpuadvisor" / "core").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Global):
                found.append(f"{path.relative_to(REPO)}:{node.lineno} global {', '.join(node.names)}")
    assert found == []


@pytest.fixture(scope="module")
def cats():
    return load_gpu_catalog(), load_model_catalog()


def _scenarios() -> list[tuple[Scenario, bool]]:
    """(scenario, with advice): the examples, a job nothing fits (the advice re-estimates each
    remedy), a layout search beyond a node and the app's default."""
    out = [(load_scenario(p), True) for p in EXAMPLES]
    assert len(out) >= 5
    out.append(
        (Scenario(model=ModelSource(preset="llama-3.1-405b"), workload=Workload(kind="full_finetune")), True)
    )
    out.append(
        (
            Scenario(
                model=ModelSource(preset="llama-3.1-70b"),
                workload=Workload(kind="pretrain", seq_len=4096, train_tokens=1e10),
                hardware=Hardware(gpu="h100-sxm", gpu_count_max=256),
            ),
            True,
        )
    )
    return out


def test_estimates_on_four_threads_agree_and_change_no_module_table(cats):
    gpus, models = cats
    jobs = _scenarios()

    def run(job: tuple[Scenario, bool]) -> str:
        sc, advice = job
        est = estimate(sc, gpus, models, with_advice=advice)
        return json.dumps(estimate_to_dict(est, today=TODAY), sort_keys=True, default=str)

    before = _module_tables()
    shipped = shipped_constants()
    serial = [run(job) for job in jobs]
    with ThreadPoolExecutor(max_workers=4) as pool:
        assert list(pool.map(run, jobs)) == serial
    assert _module_tables() == before
    assert shipped_constants() is shipped
