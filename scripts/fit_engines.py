#!/usr/bin/env python3
"""Fit the speed model's constants (engine profiles, kernel families, global constants) to the
published speed rows, and calibrate each engine's 80% range out of sample.

The fit is :func:`gpuadvisor.core.calibration.fit_speed_constants` over the rows of
``tests/data/calibration.csv`` that ``gpuadvisor.validation.SPEED_CASES`` describes; the spreads
come from leave-one-source-out residuals (:func:`held_out_residuals`, :func:`calibrate_spreads`).
Prints the fitted values next to the shipped ones (``gpuadvisor/core/engines.py``, which holds
these values rounded) and the out-of-sample errors.

Usage: .venv/bin/python scripts/fit_engines.py
"""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpuadvisor.core.calibration import (calibrate_spreads, fit_speed_constants, held_out_residuals,  # noqa: E402
                                         speed_row)
from gpuadvisor.core.engines import FITTED  # noqa: E402
from gpuadvisor.core.estimate import resolve_model  # noqa: E402
from gpuadvisor.core.hardware import load_gpu_catalog  # noqa: E402
from gpuadvisor.core.presets import load_model_catalog  # noqa: E402
from gpuadvisor.core.scenario import Scenario  # noqa: E402
from gpuadvisor.validation import SPEED_CASES, TOKENS_TRAINED, calibration_rows  # noqa: E402

METRIC = {"per_gpu": "tokens_per_s_per_gpu", "aggregate": "tokens_per_s", "per_user": "tokens_per_s_per_user",
          "tflops_per_gpu": "tflops_per_gpu", "gpu_hours": "tokens_per_s_per_gpu"}


def rows():
    models, gpus = load_model_catalog(), load_gpu_catalog()
    csv_rows = calibration_rows(Path(__file__).resolve().parents[1] / "tests" / "data" / "calibration.csv")
    out = []
    for c in SPEED_CASES:
        if not c.in_aim or c.case_id == "TRN-05":  # TRN-05: total GPU time of more than the run (docs)
            continue
        measured = c.measured
        if c.metric == "gpu_hours":
            measured = TOKENS_TRAINED[c.case_id] / (c.measured * 3600)
        source = csv_rows.get(c.case_id, {}).get("source", c.case_id)
        model = resolve_model(Scenario(model=c.model), models)
        out.append(speed_row(c.case_id, source, model, c.workload, gpus.get(c.gpu), measured, METRIC[c.metric],
                             c.gpu_count, c.parallelism))
    return out


def describe(constants) -> str:
    lines = []
    for p in constants.engines.values():
        if p.kind == "inference":
            lines.append(f"  {p.id:13s} bandwidth_efficiency={p.bandwidth_efficiency:.3f} "
                         f"prefill_mfu={p.prefill_mfu:.3f} spread=-{p.spread_low:.2f}/+{p.spread_high:.2f}")
        else:
            lines.append(f"  {p.id:13s} mfu={p.mfu:.3f} spread=-{p.spread_low:.2f}/+{p.spread_high:.2f}")
    for f in constants.families.values():
        lines.append(f"  family {f.id:9s} gemv_efficiency={f.gemv_efficiency:.3f}")
    lines.append(f"  cpu_kernel_s={dict((k, round(v * 1e6, 2)) for k, v in constants.cpu_kernel_s.items())} us, "
                 f"gpu_kernel_s={constants.gpu_kernel_s * 1e6:.2f} us, "
                 f"attention_efficiency={constants.attention_efficiency:.3f}, "
                 f"gemm_width_half={constants.gemm_width_half:.0f}")
    return "\n".join(lines)


def main() -> None:
    data = rows()
    print(f"{len(data)} rows from {len({r.source for r in data})} sources")
    fitted = fit_speed_constants(data)
    print("fitted (in sample):")
    print(describe(fitted))
    errs = [abs(r.predict(fitted) / r.measured - 1) for r in data]
    print(f"in-sample median absolute error {statistics.median(errs):.1%}")
    res = held_out_residuals(data)
    oos = [abs(1 / ratio - 1) for _r, ratio in res if math.isfinite(ratio)]
    for r, ratio in res:
        print(f"  held out {r.row_id:8s} ({r.engine:12s}) predicted/measured - 1 = {1 / ratio - 1:+.1%}")
    print(f"leave-one-source-out median absolute error {statistics.median(oos):.1%} over {len(oos)} rows")
    spread = calibrate_spreads(res, fitted)
    print("with calibrated 80% ranges:")
    print(describe(spread))
    print("shipped:")
    print(describe(FITTED))


if __name__ == "__main__":
    main()
