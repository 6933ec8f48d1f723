#!/usr/bin/env python3
"""Set the estimator against the published measurements of tests/data/validation.

Usage: .venv/bin/python scripts/validate.py [--out-of-sample | --in-sample] [--json] [--rows] [--write]

--out-of-sample (default): leave one source out: refit the engine profiles without each source and
                           predict its rows; per group median and 80th-percentile abs. error, coverage
--in-sample:               the shipped engine profiles on every row (secondary)
--json:                    print only {"rows", "sources", "groups": {...}} for the chosen mode
--rows:                    also print every row's comparison
--write:                   regenerate docs/validation.md (out of sample first, in sample last)
--scenario ROW:            print the scenario file of one row (feed it to `gpuadvisor-cli estimate --json`)
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpuadvisor.core.specs.hardware import load_gpu_catalog  # noqa: E402
from gpuadvisor.core.specs.presets import load_model_catalog  # noqa: E402
from gpuadvisor.validation import (  # noqa: E402
    Predictor,
    ValidationDataError,
    in_sample,
    load_measurements,
    load_sources,
    out_of_sample,
    scenario_dict,
    summary,
)
from gpuadvisor.validation.report import markdown, text_summary  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--out-of-sample", action="store_true", help="leave one source out (the default)")
    mode.add_argument("--in-sample", action="store_true", help="the shipped engine profiles on every row")
    parser.add_argument("--json", action="store_true", help="print the summary object only")
    parser.add_argument("--rows", action="store_true", help="print every row's comparison")
    parser.add_argument("--write", action="store_true", help="write docs/validation.md")
    parser.add_argument("--data", default=None, help="folder with sources.csv and measurements.csv")
    parser.add_argument("--scenario", metavar="ROW", help="print the scenario file of one row and stop")
    args = parser.parse_args()
    start = time.perf_counter()
    try:
        kw = {"data_dir": args.data} if args.data else {}
        sources = load_sources(**kw)
        rows = load_measurements(sources=sources, **kw)
    except ValidationDataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.scenario:
        row = next((r for r in rows if r.id == args.scenario), None)
        if row is None:
            print(f"error: row {args.scenario!r} is not in measurements.csv", file=sys.stderr)
            return 2
        data, omitted = scenario_dict(row)
        data["notes"] = f"Validation row {row.id} ({row.source_id}, {row.locator})" + (
            "; not in the scenario: " + "; ".join(omitted) if omitted else ""
        )
        print(json.dumps(data, indent=2))
        return 0
    predictor = Predictor(load_gpu_catalog(), load_model_catalog())
    ins = in_sample(rows, predictor)
    results = ins if args.in_sample else out_of_sample(rows, predictor)
    seconds = time.perf_counter() - start
    if args.json:
        print(json.dumps(summary(results)))
    else:
        title = (
            "in sample (shipped engine profiles)"
            if args.in_sample
            else "out of sample (leave one source out)"
        )
        print(text_summary(results, f"{len(rows)} rows from {len(sources)} sources; {title}"))
        if args.rows:
            print()
            for c in results:
                err = f"{c.error:+.1%}" if c.error is not None else ("right" if c.right else "-")
                est = "-" if c.estimate is None else f"{c.estimate:,.4g}"
                flag = "" if c.row.scored else "  (unscored)"
                print(
                    f"  {c.row.id:10s} {c.row.group:16s} measured {c.measured:>10,.4g}  estimate {est:>10s}  "
                    f"{err:>8s} {'in range' if c.covered else ''}{flag} {c.note}"
                )
        print(f"\n({seconds:.1f} s)")
    if args.write:
        oos = results if not args.in_sample else out_of_sample(rows, predictor)
        fitted = in_sample(rows, predictor, fitted=True)
        text = markdown(oos, ins, sources, dt.date.today().isoformat(), time.perf_counter() - start, fitted)
        (ROOT / "docs" / "validation.md").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
