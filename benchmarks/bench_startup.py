#!/usr/bin/env python3
"""Benchmark: start to a usable window (process start -> window shown), offscreen.

Runs ``python -m gpuadvisor`` (or a built executable, ``--binary dist/gpuadvisor/gpuadvisor``) N
times with GPUADVISOR_STARTUP_TIMING=exit (the app prints the in-process time when the window is
shown, then quits) and reports the wall time of each run. ``--cold`` empties the kernel's page
cache before every run (root only, Linux), so each start reads Python, Qt and the app from disk.
Usage: .venv/bin/python benchmarks/bench_startup.py [runs] [--binary PATH] [--cold]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def drop_page_cache() -> None:
    """Write back and drop the page cache, dentries and inodes (needs root)."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w", encoding="ascii") as fh:
            fh.write("3\n")
    except OSError as exc:
        raise SystemExit(f"--cold needs root on Linux (/proc/sys/vm/drop_caches: {exc.strerror})") from None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="?", type=int, default=7)
    parser.add_argument(
        "--binary", type=Path, help="a built gpuadvisor executable instead of python -m gpuadvisor"
    )
    parser.add_argument("--cold", action="store_true", help="drop the page cache before each run (root)")
    args = parser.parse_args()
    cmd = [str(args.binary.resolve())] if args.binary else [sys.executable, "-m", "gpuadvisor"]
    walls, inproc = [], []
    with tempfile.TemporaryDirectory() as home:
        env = dict(
            os.environ, QT_QPA_PLATFORM="offscreen", GPUADVISOR_STARTUP_TIMING="exit", GPUADVISOR_HOME=home
        )
        for i in range(args.runs + 1):
            if args.cold:
                drop_page_cache()
            t0 = time.perf_counter()
            out = subprocess.run(
                cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False
            )
            wall = time.perf_counter() - t0
            if out.returncode != 0:
                print(out.stderr)
                raise SystemExit(1)
            if i == 0 and not args.cold:
                continue  # warm the file cache
            walls.append(wall)
            line = [ln for ln in out.stdout.splitlines() if "window shown" in ln]
            if line:
                parts = line[0].split("after ")
                inproc.append(
                    (
                        float(parts[1].split(" s")[0]),
                        float(parts[2].split(" s")[0]),
                        float(line[0].rsplit("window shown ", 1)[1].split(" s")[0]),
                    )
                )
    n = len(walls)
    print(f"{' '.join(cmd)} ({'cold: page cache dropped before each run' if args.cold else 'warm'})")
    print(
        f"process start -> charts drawn and exit (wall, includes interpreter start and exit): "
        f"median {statistics.median(walls):.3f} s, min {min(walls):.3f} s over {n} runs"
    )
    if inproc:
        print(
            f"main() -> window shown (in-process): median {statistics.median(p[0] for p in inproc):.3f} s; "
            f"-> charts drawn: median {statistics.median(p[1] for p in inproc):.3f} s"
        )
        print(
            f"process start -> window shown (usable: wizard pages, summary, ranking): "
            f"median {statistics.median(p[2] for p in inproc):.2f} s, "
            f"max {max(p[2] for p in inproc):.2f} s "
            f"(clock-tick resolution 0.01 s)"
        )


if __name__ == "__main__":
    main()
