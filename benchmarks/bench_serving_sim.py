#!/usr/bin/env python3
"""Benchmark: the request-level serving simulation (core/estimation/serving_sim.py).

Times, for a service over the whole catalog (docs/examples/serving-1-replica.json, and the same
service as a closed loop of 64 clients): one GPU type's leading fleet simulated at its load, every
GPU type's leading fleet at once (what an estimate simulates), every fleet of every setup (the
CLI's JSON, the PDF), the latency-against-load curves of four fleets (the chart), and the whole
estimate. The aims of issue 46: at most 50 ms a GPU type and 500 ms the catalog.

Usage: .venv/bin/python benchmarks/bench_serving_sim.py [--cpu]   (prints median and p90 in ms;
--cpu: this process's CPU time rather than the wall clock, for a machine others share)
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpuadvisor.core.estimation.estimate import estimate  # noqa: E402
from gpuadvisor.core.estimation.serving_load import ensure_at_load, load_curves  # noqa: E402
from gpuadvisor.core.formats.scenario import load_scenario, loads_scenario, scenario_to_dict  # noqa: E402
from gpuadvisor.core.specs.hardware import load_gpu_catalog  # noqa: E402
from gpuadvisor.core.specs.presets import load_model_catalog  # noqa: E402

#: What is timed: "wall" (perf_counter) or "cpu" (this process's CPU time: on a shared machine,
#: what an idle one would take; set by --cpu).
CLOCK = {"wall": time.perf_counter, "cpu": time.process_time}
clock = CLOCK["wall"]


def timeit(fn, repeat: int) -> tuple[float, float]:
    fn()
    samples = []
    for _ in range(repeat):
        t0 = clock()
        fn()
        samples.append((clock() - t0) * 1000)
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(0.9 * len(samples)))]


def closed_loop(sc):
    d = scenario_to_dict(sc)
    serving = d["workload"]["serving"]
    serving.pop("requests_per_s", None)
    serving["concurrency"] = 64
    return loads_scenario(json.dumps(d))


def main() -> None:
    global clock
    if "--cpu" in sys.argv:
        clock = CLOCK["cpu"]
    print(f"times: {'CPU time of this process' if clock is CLOCK['cpu'] else 'wall clock'}")
    gpus, models = load_gpu_catalog(), load_model_catalog()
    base = load_scenario(ROOT / "docs" / "examples" / "serving-1-replica.json")
    rate = base.workload.serving.requests_per_s
    for name, sc in (
        (f"{rate:g} request/s (Poisson)", base),
        ("a closed loop of 64 clients", closed_loop(base)),
    ):
        est = estimate(sc, gpus, models)
        w = sc.workload
        leaders = [c.serving for c in est.best_per_gpu().values() if c.serving is not None]
        fleets = [c.serving for c in est.candidates if c.serving is not None]
        bare = [f._replace(at_load=None) for f in leaders]
        every = [f._replace(at_load=None) for f in fleets]
        print(f"{name}: {len(leaders)} GPU types, {len(fleets)} serving setups")
        per_gpu = [timeit(lambda f=f, w=w: ensure_at_load([f], w), repeat=5)[0] for f in bare]
        print(
            f"  one GPU type's leading fleet        median {statistics.median(per_gpu):7.1f} ms, "
            f"slowest {max(per_gpu):7.1f} ms (aim: 50 ms)"
        )
        med, p90 = timeit(lambda bare=bare, w=w: ensure_at_load(bare, w), repeat=5)
        print(f"  every GPU type's leading fleet      median {med:7.1f} ms, p90 {p90:7.1f} ms (aim: 500 ms)")
        med, p90 = timeit(lambda every=every, w=w: ensure_at_load(every, w), repeat=3)
        print(f"  every setup's fleet                 median {med:7.1f} ms, p90 {p90:7.1f} ms")
        keyed = [(c.key, c.serving) for c in est.best_per_gpu().values() if c.serving is not None][:4]
        med, p90 = timeit(lambda keyed=keyed, w=w: load_curves(keyed, w), repeat=5)
        print(f"  latency-against-load, four fleets   median {med:7.1f} ms, p90 {p90:7.1f} ms")
        med, p90 = timeit(lambda sc=sc: estimate(sc, gpus, models, with_advice=False), repeat=5)
        print(f"  the whole estimate (sized, simulated, resized) median {med:7.1f} ms, p90 {p90:7.1f} ms")


if __name__ == "__main__":
    main()
