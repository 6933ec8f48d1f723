#!/usr/bin/env python3
"""How much of the serving error a per-setup correction could remove, and how much it could not.

Every scored serving row is predicted out of sample, exactly as ``scripts/validate.py
--out-of-sample`` does (leave one source out). Then, for ever finer groupings of the rows, each
group gets the one factor that minimises its own median absolute error, *chosen in sample, with
the group's own measurements*. That factor stands for everything a setup does not state and a
held-out prediction cannot know: the host CPU, the engine release and its defaults, the client.

- What such factors remove is the offset between setups.
- What they leave is the shape within one setup: how a figure moves with concurrency, prompt
  and answer lengths on one machine and one engine. No constant per setup, fitted or chosen by
  hand, touches it; only a better model of the engine's steps and queue does.
- Replicated runs (rows that state the same setup, figure, lengths and concurrency) show how far
  the measurements themselves scatter.

Usage: .venv/bin/python scripts/serving_bound.py [--save F.json | --load F.json]
       (10-14 minutes on two CPUs for the out-of-sample predictions; --load reuses saved ones)
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable, Hashable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpuadvisor.core.specs.hardware import load_gpu_catalog
from gpuadvisor.core.specs.presets import load_model_catalog
from gpuadvisor.validation import Predictor, load_measurements, out_of_sample
from gpuadvisor.validation.data import Row

TARGET = 0.15
#: The factors searched: 0.3 to about 6 times the estimate, 1% apart.
GRID = [0.3 * 1.01**i for i in range(300)]
#: The serving figures, as the tables name them.
FIGURES = {
    "serving_output_tokens_per_s": "output tokens/s",
    "serving_ttft_ms": "TTFT",
    "serving_itl_ms": "ITL",
}


def setup(r: Row) -> tuple[Hashable, ...]:
    """One machine running one model: source, engine, GPU, GPU count and model."""
    return (r.source_id, r.fact("engine"), r.fact("gpu"), r.fact("gpu_count"), r.fact("model"))


#: (label, the key a row's group is found by); every key includes the figure.
GROUPINGS: list[tuple[str, Callable[[Row], Hashable]]] = [
    ("figure", lambda r: r.quantity),
    ("figure and source", lambda r: (r.quantity, r.source_id)),
    ("figure, source and engine", lambda r: (r.quantity, r.source_id, r.fact("engine"))),
    ("figure, source, engine and GPU", lambda r: (r.quantity, r.source_id, r.fact("engine"), r.fact("gpu"))),
    ("figure and setup (source, engine, GPUs, model)", lambda r: (r.quantity, *setup(r))),
]


def predictions(load: str | None, save: str | None) -> dict[str, float]:
    """estimate / measured of every scored serving row, out of sample (row id -> ratio)."""
    if load:
        return {k: float(v) for k, v in json.loads(Path(load).read_text()).items()}
    rows = load_measurements()
    predictor = Predictor(load_gpu_catalog(), load_model_catalog())
    ratios = {
        c.row.id: c.estimate / c.measured
        for c in out_of_sample(rows, predictor)
        if c.row.group == "serving" and c.row.scored and c.row.bound == "point" and c.estimate
    }
    if save:
        Path(save).write_text(json.dumps(ratios, indent=0, sort_keys=True))
    return ratios


def best_factor(ratios: list[float]) -> float:
    return min(GRID, key=lambda s: statistics.median(abs(x / s - 1.0) for x in ratios))


def corrected(
    ratios: dict[str, float], rows: dict[str, Row], key: Callable[[Row], Hashable]
) -> dict[str, float]:
    """Each row's absolute error after its group's own best factor."""
    groups: dict[Hashable, list[str]] = defaultdict(list)
    for rid in ratios:
        groups[key(rows[rid])].append(rid)
    out: dict[str, float] = {}
    for ids in groups.values():
        s = best_factor([ratios[i] for i in ids])
        out.update({i: abs(ratios[i] / s - 1.0) for i in ids})
    return out


def medians(errs: dict[str, float], rows: dict[str, Row]) -> list[str]:
    cells = [f"{statistics.median(errs.values()):.1%}"]
    for q in FIGURES:
        cells.append(f"{statistics.median(e for i, e in errs.items() if rows[i].quantity == q):.1%}")
    cells.append(f"{sum(e <= TARGET for e in errs.values()) / len(errs):.0%}")
    return cells


def replicate_scatter(rows: list[Row]) -> dict[str, list[float]]:
    """|value / group geometric mean - 1| of rows that state the same setup, figure, arrival,
    concurrency, requests and lengths (within 5%): runs of one benchmark repeated."""

    def bucket(x: str | None) -> int:
        v = float(x or 0)
        return round(math.log(v) / math.log(1.05)) if v > 0 else 0

    groups: dict[Hashable, list[Row]] = defaultdict(list)
    for r in rows:
        key = (
            r.quantity,
            *setup(r),
            r.fact("weights"),
            r.fact("arrival"),
            r.fact("micro_batch"),
            r.fact("requests"),
            bucket(r.fact("prompt_tokens")),
            bucket(r.fact("output_tokens")),
        )
        groups[key].append(r)
    out: dict[str, list[float]] = defaultdict(list)
    for members in groups.values():
        if len(members) < 2:
            continue
        mean = math.exp(statistics.fmean(math.log(r.value) for r in members))
        out[members[0].quantity] += [abs(r.value / mean - 1.0) for r in members]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--save", metavar="F.json", help="save the out-of-sample ratios to F.json")
    which.add_argument("--load", metavar="F.json", help="reuse ratios saved with --save")
    args = parser.parse_args()
    all_rows = load_measurements()
    rows = {r.id: r for r in all_rows}
    ratios = predictions(args.load, args.save)
    n = len(ratios)
    print(f"{n} scored serving rows, each predicted out of sample; one factor per group chosen in sample:\n")
    heads = " | ".join(FIGURES.values())
    print(f"| One factor per ... | groups | serving median | {heads} | rows within 15% |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    errs = {i: abs(x - 1.0) for i, x in ratios.items()}
    print(f"| none (the out-of-sample estimate) | 0 | {' | '.join(medians(errs, rows))} |")
    for label, key in GROUPINGS:
        groups = len({key(rows[i]) for i in ratios})
        print(f"| {label} | {groups} | {' | '.join(medians(corrected(ratios, rows, key), rows))} |")
    scored = [r for r in all_rows if r.group == "serving" and r.scored and r.bound == "point"]
    scatter = replicate_scatter(scored)
    print("\nReplicated runs (the same setup, figure, concurrency and lengths measured more than once):\n")
    print("| figure | rows | median scatter | largest |")
    print("|---|---:|---:|---:|")
    for q in FIGURES:
        s = scatter.get(q, [])
        if s:
            print(f"| {FIGURES[q]} | {len(s)} | {statistics.median(s):.1%} | {max(s):.0%} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
