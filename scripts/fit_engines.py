#!/usr/bin/env python3
"""Fit the speed model's global constants and engine profiles to the scored speed rows of the
validation set.

The fit is :func:`gpuadvisor.validation.harness.fit_all`: engine factors (coordinate descent with a
golden-section search on each free factor, minimising the mean absolute log error over that
engine's rows plus a pull towards the documented prior), then the global constants of
``FIT_GLOBALS`` over all rows, then the engines again. ``scripts/validate.py --out-of-sample``
calls the same function with one source held out. This script prints the values fitted to all
rows next to the shipped ones (``gpuadvisor/core/specs/engines.py``), and the serving stacks'
per-request times (``REQUEST_OVERHEAD_S`` and ``REQUEST_OVERHEAD_BY_ENGINE`` in
``gpuadvisor/core/estimation/serving.py``).

Usage: .venv/bin/python scripts/fit_engines.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpuadvisor.core.estimation.serving import REQUEST_OVERHEAD_S, default_request_overhead_s
from gpuadvisor.core.specs import constants as core_constants
from gpuadvisor.core.specs.constants import ENGINES
from gpuadvisor.core.specs.hardware import load_gpu_catalog
from gpuadvisor.core.specs.presets import load_model_catalog
from gpuadvisor.validation import Predictor, load_measurements
from gpuadvisor.validation.data import scenario_engine
from gpuadvisor.validation.harness import (
    EVERY_STACK,
    FIT_GLOBALS,
    _global,
    _loss,
    factors_for,
    fit_all,
    fit_request_overheads,
    get_factor,
    speed_rows,
)


def main() -> None:
    rows = load_measurements()
    predictor = Predictor(load_gpu_catalog(), load_model_catalog())
    constants, fitted = fit_all([r for r in rows if r.scored], predictor)
    for name in FIT_GLOBALS:
        print(
            f"{name:30s} fitted {_global(constants, name):.4g}   shipped {_global(core_constants.FITTED, name):.4g}"
        )
    for engine_id, profile in fitted.items():
        own = [r for r in speed_rows(rows) if scenario_engine(r) == engine_id]
        shipped = ENGINES[engine_id]
        names = list(factors_for(shipped))
        print(f"{engine_id:13s} rows: {', '.join(r.id for r in own) or 'none (prior kept)'}")
        if not own:
            continue
        before = _loss(predictor.compare(r) for r in own)
        with core_constants.using_constants(constants):
            after = _loss(predictor.compare(r, {engine_id: profile}) for r in own)
        print(
            f"{'':13s} fitted  "
            + ", ".join(f"{n}={get_factor(profile, n):.4g}" for n in names)
            + f"  (mean |log error| {after:.3f})"
        )
        print(
            f"{'':13s} shipped "
            + ", ".join(f"{n}={get_factor(shipped, n):.4g}" for n in names)
            + f"  (mean |log error| {before:.3f})"
        )
    # The serving stacks' per-request time, under the shipped constants (as the planner uses it).
    for stack, value in fit_request_overheads(rows, predictor).items():
        shipped_s = REQUEST_OVERHEAD_S if stack == EVERY_STACK else default_request_overhead_s(stack)
        label = "every stack" if stack == EVERY_STACK else stack
        print(
            f"per-request time {label:14s} fitted {value * 1000:.1f} ms   shipped {shipped_s * 1000:.1f} ms"
        )


if __name__ == "__main__":
    main()
