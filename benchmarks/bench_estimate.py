#!/usr/bin/env python3
"""Benchmark: a whole-catalog comparison (every GPU, 1/2/4/8 GPUs, every applicable parallelism).

Usage: .venv/bin/python benchmarks/bench_estimate.py   (prints median and p90 in ms)
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpuadvisor.core.estimation.estimate import estimate
from gpuadvisor.core.estimation.memory import MemoryModel
from gpuadvisor.core.formats.scenario import ModelSource, Scenario
from gpuadvisor.core.specs.hardware import load_gpu_catalog
from gpuadvisor.core.specs.presets import load_model_catalog
from gpuadvisor.core.specs.serving import ServingSpec
from gpuadvisor.core.specs.workload import Hardware, Workload


def timeit(fn, repeat: int = 200) -> tuple[float, float]:
    fn()
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(0.9 * len(samples))]


def main() -> None:
    gpus, models = load_gpu_catalog(), load_model_catalog()
    from gpuadvisor.core.formats.scenario import default_scenario

    cases = {
        "the app's default: LoRA 8B, checkpointing, data-centre GPUs": default_scenario(),
        "full fine-tune 8B, data-centre GPUs": Scenario(
            model=ModelSource(preset="llama-3.1-8b"),
            workload=Workload(kind="full_finetune", batch_size=2),
            hardware=Hardware(segment="data_centre"),
        ),
        "full fine-tune 8B, whole catalog (memory + speed + cost)": Scenario(
            model=ModelSource(preset="llama-3.1-8b"), workload=Workload(kind="full_finetune", batch_size=2)
        ),
        "LoRA 8B, whole catalog": Scenario(
            model=ModelSource(preset="llama-3.1-8b"), workload=Workload(kind="lora", batch_size=4)
        ),
        "inference 70B, whole catalog": Scenario(
            model=ModelSource(preset="llama-3.1-70b"), workload=Workload(kind="inference", batch_size=16)
        ),
    }
    print(f"{len(gpus)} GPUs, counts 1/2/4/8, every applicable parallelism")
    for name, sc in cases.items():
        est = estimate(sc, gpus, models)
        med, p90 = timeit(lambda sc=sc: estimate(sc, gpus, models, with_advice=False))
        print(f"{name:58s} {len(est.candidates):4d} candidates  median {med:6.2f} ms  p90 {p90:6.2f} ms")
        med, p90 = timeit(lambda sc=sc: estimate(sc, gpus, models, speed=False))
        print(
            f"{'  memory and fit only':58s} {len(est.candidates):4d} candidates  median {med:6.2f} ms  p90 {p90:6.2f} ms"
        )
    sc = cases["full fine-tune 8B, whole catalog (memory + speed + cost)"]
    mm = MemoryModel(models.get("llama-3.1-8b"), sc.workload)
    med, _ = timeit(lambda: mm.breakdown(8, "zero3"), repeat=2000)
    print(f"{'one memory breakdown':58s}       median {med * 1000:6.1f} us")
    big = Scenario(
        model=ModelSource(preset="llama-3.1-405b"),
        workload=Workload(kind="full_finetune"),
    )
    med, p90 = timeit(lambda: estimate(big, gpus, models), repeat=20)
    print(
        f"{'405B full fine-tune incl. advice (nothing fits 8 GPUs)':58s}       median {med:6.2f} ms  p90 {p90:6.2f} ms"
    )
    for name, preset in (
        ("serving 8B, 20 req/s, whole catalog", "llama-3.1-8b"),
        ("serving 70B, 5 req/s", "llama-3.1-70b"),
    ):
        serving = Scenario(
            model=ModelSource(preset=preset),
            workload=Workload(
                kind="inference",
                prompt_tokens=2000,
                output_tokens=300,
                serving=ServingSpec(requests_per_s=20.0 if "8B" in name else 5.0, ttft_s=1.0, itl_ms=50.0),
            ),
        )
        est = estimate(serving, gpus, models)
        med, p90 = timeit(lambda sc=serving: estimate(sc, gpus, models), repeat=30)
        print(f"{name:58s} {len(est.candidates):4d} candidates  median {med:6.2f} ms  p90 {p90:6.2f} ms")
    # The layout search: one GPU type, whole nodes up to 4,096 GPUs (aim: under 1 s).
    search = Scenario(
        model=ModelSource(preset="llama-3.1-405b"),
        workload=Workload(kind="pretrain", seq_len=8192, global_batch_size=2048),
        hardware=Hardware(gpu="h100-sxm", gpu_count_max=4096),
    )
    moe = Scenario(
        model=ModelSource(preset="mixtral-8x22b"),
        workload=Workload(kind="pretrain", seq_len=32768, global_batch_size=2048),
        hardware=Hardware(gpu="h100-sxm", gpu_count_max=4096),
    )
    # The whole catalog, no GPU chosen, searched up to 1,024 GPUs (aim: about 2 s).
    catalog_70b = Scenario(
        model=ModelSource(preset="llama-3.1-70b"),
        workload=Workload(kind="pretrain", seq_len=8192, global_batch_size=2048),
        hardware=Hardware(gpu_count_max=1024),
    )
    catalog_moe = Scenario(
        model=ModelSource(preset="mixtral-8x22b"),
        workload=Workload(kind="pretrain", seq_len=32768, global_batch_size=2048),
        hardware=Hardware(gpu_count_max=1024),
    )
    for name, sc in (
        ("405B pretrain, H100, layout search up to 4,096 GPUs", search),
        ("Mixtral 8x22B pretrain 32k (TP/PP/CP/EP), H100, to 4,096", moe),
        ("70B pretrain, whole catalog, layout search up to 1,024", catalog_70b),
        ("Mixtral 8x22B pretrain 32k, whole catalog, to 1,024", catalog_moe),
    ):
        est = estimate(sc, gpus, models)
        med, p90 = timeit(lambda sc=sc: estimate(sc, gpus, models), repeat=10)
        print(f"{name:58s} {len(est.candidates):4d} candidates  median {med:6.2f} ms  p90 {p90:6.2f} ms")


if __name__ == "__main__":
    main()
