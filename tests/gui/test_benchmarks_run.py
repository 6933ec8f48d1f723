"""The window's update benchmark runs against today's window.

``benchmarks/bench_update.py`` drives the real window's widgets (typing into the batch field,
choosing a kind, a preset, a service's hours). When a widget's interface changes the benchmark
breaks, and nobody notices until the next time someone measures. This runs it in a fresh process,
as a person would, with two changes per case, and checks that every case reports; it asserts no
timing (the benchmark's figures are read by people, not by tests).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_update_benchmark_runs_every_case(tmp_path):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", GPUADVISOR_HOME=str(tmp_path))
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_update.py"), "2"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    lines = [line for line in run.stdout.splitlines() if "update (estimate + redraw)" in line]
    assert [line.split(":")[0].strip() for line in lines] == [
        "batch size",
        "workload kind",
        "model preset",
        "service (h/day)",
    ]
