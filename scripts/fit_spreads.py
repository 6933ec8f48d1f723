#!/usr/bin/env python3
"""Each engine's 80% range from the leave-one-source-out residuals of the validation set.

Runs the harness's leave-one-source-out (:func:`gpuadvisor.validation.harness.out_of_sample`),
takes measured / estimate of every scored speed row (time-like quantities inverted, so a ratio
above 1 always means "faster than estimated"), and prints each engine's ``spread_low`` /
``spread_high`` from :func:`gpuadvisor.core.estimation.speed_fit.engine_spreads`: the split-conformal 10% and 90% order statistics
per engine with at least 15 rows, else those of its kind. ``gpuadvisor/core/specs/engines.py`` holds
these values (``_FITTED_ENGINES``, ``SPREAD_PROVENANCE``). The serving rows get one range per
figure (output tokens/s, TTFT, ITL: ``SERVING_SPREADS`` in ``gpuadvisor/core/estimation/serving.py``).

Usage: .venv/bin/python scripts/fit_spreads.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpuadvisor.core.estimation.serving import SERVING_SPREADS
from gpuadvisor.core.estimation.speed_fit import engine_spreads, spread_from_ratios
from gpuadvisor.core.specs.engines import ENGINES
from gpuadvisor.core.specs.hardware import load_gpu_catalog
from gpuadvisor.core.specs.presets import load_model_catalog
from gpuadvisor.validation import Predictor, load_measurements
from gpuadvisor.validation.data import scenario_engine
from gpuadvisor.validation.harness import out_of_sample

TIME_LIKE = (
    "train_step_time_s",
    "time_to_first_token_ms",
    "request_latency_s",
    "decode_ms_per_token",
    "serving_ttft_ms",
    "serving_itl_ms",
)
#: The serving figures with a range of their own (``core.estimation.serving.SERVING_SPREADS``).
SERVING_FIGURES = {
    "serving_output_tokens_per_s": "tokens_per_s",
    "serving_ttft_ms": "ttft",
    "serving_itl_ms": "itl",
}


def main() -> None:
    rows = load_measurements()
    comparisons = out_of_sample(rows, Predictor(load_gpu_catalog(), load_model_catalog()))
    ratios: dict[str, list[float]] = {}
    serving: dict[str, list[float]] = {}
    for c in comparisons:
        r = c.row
        if not r.scored or not c.estimate:
            continue
        ratio = c.measured / c.estimate
        ratio = 1 / ratio if r.quantity in TIME_LIKE else ratio
        if r.group == "serving":
            serving.setdefault(SERVING_FIGURES[r.quantity], []).append(ratio)
        elif r.group in ("inference_speed", "training_speed"):
            ratios.setdefault(scenario_engine(r), []).append(ratio)
    kinds = {eid: p.kind for eid, p in ENGINES.items()}
    for eid, (low, high) in engine_spreads(ratios, kinds).items():
        shipped = ENGINES[eid]
        print(
            f"{eid:13s} rows {len(ratios.get(eid, [])):3d}  spread_low={low:.2f} spread_high={high:.2f}"
            f"   (shipped {shipped.spread_low:.2f} / {shipped.spread_high:.2f})"
        )
    for figure, values in serving.items():
        low, high = spread_from_ratios(values, 0.1, 0.9)
        shipped_low, shipped_high = SERVING_SPREADS[figure]
        print(
            f"serving {figure:13s} rows {len(values):3d}  spread_low={low:.2f} spread_high={high:.2f}"
            f"   (shipped {shipped_low:.2f} / {shipped_high:.2f})"
        )


if __name__ == "__main__":
    main()
