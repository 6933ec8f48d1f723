#!/usr/bin/env python3
"""Benchmark: cold start to a usable window (process start -> window shown), offscreen.

Runs ``python -m gpuadvisor`` N times with GPUADVISOR_STARTUP_TIMING=exit (the app prints the
in-process time when the window is shown, then quits) and reports the wall time of each run.
Usage: .venv/bin/python benchmarks/bench_startup.py [runs]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    walls, inproc = [], []
    with tempfile.TemporaryDirectory() as home:
        env = dict(os.environ, QT_QPA_PLATFORM="offscreen", GPUADVISOR_STARTUP_TIMING="exit",
                   GPUADVISOR_HOME=home)
        for i in range(runs + 1):
            t0 = time.perf_counter()
            out = subprocess.run([sys.executable, "-m", "gpuadvisor"], cwd=ROOT, env=env, capture_output=True,
                                 text=True, timeout=60)
            wall = time.perf_counter() - t0
            if out.returncode != 0:
                print(out.stderr)
                raise SystemExit(1)
            if i == 0:
                continue  # warm the file cache
            walls.append(wall)
            line = [ln for ln in out.stdout.splitlines() if "window shown" in ln]
            if line:
                parts = line[0].split("after ")
                inproc.append((float(parts[1].split(" s")[0]), float(parts[2].split(" s")[0]),
                               float(line[0].rsplit("window shown ", 1)[1].split(" s")[0])))
    print(f"process start -> charts drawn and exit (wall, includes interpreter start and exit): "
          f"median {statistics.median(walls):.3f} s, min {min(walls):.3f} s over {runs} runs")
    if inproc:
        print(f"main() -> window shown (in-process): median {statistics.median(p[0] for p in inproc):.3f} s; "
              f"-> charts drawn: median {statistics.median(p[1] for p in inproc):.3f} s")
        print(f"process start -> window shown (usable: wizard pages, summary, ranking): "
              f"median {statistics.median(p[2] for p in inproc):.2f} s (clock-tick resolution 0.01 s)")


if __name__ == "__main__":
    main()
