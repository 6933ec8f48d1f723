#!/usr/bin/env python3
"""Benchmark: the weights table of one card (``Estimate.weights_table``), budget 20 ms.

One GPU type compared for inference: the scenario again for each weight type the engine runs.
Timed alone (the table from an estimate that has everything else) and as part of the whole
one-card estimate the window runs on every edit.

Usage: .venv/bin/python benchmarks/bench_weights_table.py   (prints median and p90 in ms)
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpuadvisor.core.estimation.estimate import estimate
from gpuadvisor.core.estimation.weights_table import weights_table
from gpuadvisor.core.formats.scenario import ModelSource, Scenario
from gpuadvisor.core.specs.hardware import load_gpu_catalog
from gpuadvisor.core.specs.presets import load_model_catalog
from gpuadvisor.core.specs.workload import Hardware, Workload

BUDGET_MS = 20.0


def timeit(fn, repeat: int = 100) -> tuple[float, float]:
    fn()
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(0.9 * len(samples))]


def main() -> int:
    gpus, models = load_gpu_catalog(), load_model_catalog()
    cases = {
        "Qwen3 32B Q4_K_M on one RTX 4090 (llama.cpp, 9 types)": Scenario(
            model=ModelSource(preset="qwen3-32b"),
            workload=Workload(kind="inference", weights="q4_k_m"),
            hardware=Hardware(gpu="rtx-4090"),
        ),
        "Llama 3.1 70B Q4_K_M on one RTX 4090 (layers split, 9 types)": Scenario(
            model=ModelSource(preset="llama-3.1-70b"),
            workload=Workload(kind="inference", weights="q4_k_m"),
            hardware=Hardware(gpu="rtx-4090"),
        ),
        "Llama 3.1 70B Q4_K_M on an M3 Max 64 GB (9 types)": Scenario(
            model=ModelSource(preset="llama-3.1-70b"),
            workload=Workload(kind="inference", weights="q4_k_m"),
            hardware=Hardware(gpu="apple-m3-max", memory_gib=64),
        ),
        "Llama 3.1 8B BF16 on one H100 (vLLM, 4 types, counts 1-8)": Scenario(
            model=ModelSource(preset="llama-3.1-8b"),
            workload=Workload(kind="inference", weights="bf16", batch_size=16),
            hardware=Hardware(gpu="h100-sxm"),
        ),
    }
    worst = 0.0
    for name, sc in cases.items():
        est = estimate(sc, gpus, models)
        med, p90 = timeit(lambda est=est: weights_table(est, gpus, models, estimate))
        whole, whole90 = timeit(lambda sc=sc: estimate(sc, gpus, models))
        worst = max(worst, p90)
        print(
            f"{name}: table median {med:.1f} ms, p90 {p90:.1f} ms ({len(est.weights_table)} rows); "
            f"whole estimate with it: median {whole:.1f} ms, p90 {whole90:.1f} ms"
        )
    print(
        f"worst p90 {worst:.1f} ms against a budget of {BUDGET_MS:.0f} ms: {'ok' if worst <= BUDGET_MS else 'OVER'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
