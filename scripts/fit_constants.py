#!/usr/bin/env python3
"""Fit every constant of the speed model to the validation rows and write
gpuadvisor/core/specs/fitted_constants.json (``make fit``), or check that file (``make fit-check``).

The fit and the file are described in gpuadvisor/validation/fit.py; docs/estimation.md, "Fitting and
the 80% range", says what each value is. The rows are those of the sources the ledger lets fits read
(tests/data/validation: the baseline's and the admitted ones).

Usage:
    .venv/bin/python scripts/fit_constants.py            fit everything and write the file (several
                                                          minutes: the 80% ranges need a
                                                          leave-one-source-out run)
    .venv/bin/python scripts/fit_constants.py --check    check the file against the data (seconds)
    .venv/bin/python scripts/fit_constants.py --keep "WHY"
                                                          record the fit but keep the shipped
                                                          values, listing each one the fit would
                                                          move with WHY (no estimate changes)
    .venv/bin/python scripts/fit_constants.py --keep "WHY" --refit "llama_cpp." --refit "engines[llama.cpp]."
                                                          as --keep, but the values whose names start
                                                          with a --refit prefix take the fit (names as
                                                          fit.flatten writes them)
    .venv/bin/python scripts/fit_constants.py --dry-run  print what would change; write nothing
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpuadvisor.core.specs.hardware import load_gpu_catalog
from gpuadvisor.core.specs.presets import load_model_catalog
from gpuadvisor.validation import fit, load_measurements
from gpuadvisor.validation.harness import Predictor


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="check the file; run no fit")
    parser.add_argument("--keep", metavar="WHY", help="keep the shipped values, listing those the fit moves")
    parser.add_argument(
        "--refit",
        metavar="PREFIX",
        action="append",
        default=[],
        help="with --keep: values whose names start with PREFIX take the fit (repeatable)",
    )
    parser.add_argument("--dry-run", action="store_true", help="print the changes, write nothing")
    args = parser.parse_args()
    if args.refit and not args.keep:
        parser.error("--refit needs --keep (without --keep every value takes the fit)")
    rows = load_measurements()
    before = fit.read()
    if args.check:
        problems = fit.check(before, rows)
        for line in problems:
            print(f"fit-check: {line}", file=sys.stderr)
        if not problems:
            kept = before["fit"]["kept"]
            print(
                f"fit-check: {fit.FITTED_PATH.name} matches the data ({len(rows)} rows, "
                f"{len(before['data']['sources'])} sources); {len(kept)} value(s) kept off the fit"
            )
        return 1 if problems else 0
    start = time.monotonic()
    predictor = Predictor(load_gpu_catalog(), load_model_catalog())

    def say(step: str) -> None:
        print(f"[{time.monotonic() - start:5.0f} s] {step}", file=sys.stderr)

    result = fit.run_fit(
        rows, predictor, written=lambda c: fit.written_constants(c, before, args.keep, args.refit), say=say
    )
    scored = [r for r in rows if r.scored]
    provenance = (
        before.get("provenance", "")
        if args.keep
        else (
            f"make fit: {len(scored)} scored rows of {len({r.source_id for r in rows})} sources of "
            "tests/data/validation (the ledger's baseline and admitted sources); engines' bandwidth "
            "efficiencies are their priors, scaled by the fitted bandwidth ceiling of each GPU "
            "generation; 80% ranges: split-conformal 10%/90% order statistics of leave-one-source-out "
            "residuals"
        )
    )
    if args.refit:
        provenance += (
            f"; refitted with make fit on {time.strftime('%Y-%m-%d')}: {', '.join(args.refit)} from the fit, "
            "every other value as shipped or kept (fit.kept)"
        )
    data = fit.file_for(result, rows, before, keep=args.keep, provenance=provenance, refit=args.refit)
    old, new = fit.flatten(before["values"]), fit.flatten(data["values"])
    for name in sorted(new):
        mark = "kept" if name in data["fit"]["kept"] else ""
        if old.get(name) != new[name] or mark:
            print(f"{name:55s} {old.get(name, float('nan')):<12.6g} -> {new[name]:<12.6g} "
                  f"(fit {result.fitted[name]:.6g}) {mark}")  # fmt: skip
    if args.dry_run:
        return 0
    fit.write(data)
    say(f"wrote {fit.FITTED_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
