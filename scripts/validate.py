#!/usr/bin/env python3
"""Set the estimator against the published measurements of tests/data/validation.

Usage: .venv/bin/python scripts/validate.py [--out-of-sample | --in-sample | --prospective | --offload] [--json]
                                             [--rows]
                                             [--write] [--include-prospective]
       .venv/bin/python scripts/validate.py --score-new [--dry-run]
       .venv/bin/python scripts/validate.py --retrospective SOURCE --why TEXT

--out-of-sample (default): leave one source out: refit the engine profiles without each source and
                           predict its rows; per group median and 80th-percentile abs. error, coverage
--in-sample:               the shipped engine profiles on every row (secondary)
--prospective:             the ledger (tests/data/validation/ledger.jsonl): each new source's first score
                           by the model as shipped, before anything was fitted on it; with --json
                           {"sources", "rows", "unscorable", "groups": {...: {"n", "median_abs_pct", ...}}};
                           with --now the same rows predicted by the model as it is now (how a change
                           fares on the sources scored before it; the ledger keeps the first scores)
--offload:                 llama.cpp's partial-offload rows (-ngl below the layer count) alone, each source held
                           out: llama.cpp's factors and its host stream efficiency refitted without it, then
                           its rows predicted; per row and per source, the median |error| against issue 42's
                           20% target, and the same rows under the shipped constants (about a minute)
--json:                    print only {"rows", "sources", "groups": {...}} for the chosen mode
--rows:                    also print every row's comparison (with --prospective --now: first score and now)
--write:                   regenerate docs/validation.md (out of sample first, the ledger, in sample last)
--include-prospective:     let the fits and leave-one-source-out read the ledger's sources too (by default
                           they read the baseline's and admitted sources only)
--score-new:               score the rows no ledger entry has scored yet with the model at HEAD (the rows
                           and the model committed first) and append one entry per source to the ledger;
                           --dry-run prints the scores and writes nothing
--retrospective SOURCE:    record in the ledger that SOURCE was added with a model change built while reading
                           it (so it cannot be scored first): it is fitted from then on, never in the
                           prospective figure; --why says so in a sentence
--scenario ROW:            print the scenario file of one row (feed it to `gpuadvisor-cli estimate --json`)
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpuadvisor.core.specs.hardware import load_gpu_catalog  # noqa: E402
from gpuadvisor.core.specs.presets import load_model_catalog  # noqa: E402
from gpuadvisor.validation import (  # noqa: E402
    DATA_DIR,
    Predictor,
    Row,
    ValidationDataError,
    in_sample,
    load_measurements,
    load_sources,
    out_of_sample,
    scenario_dict,
    summary,
)
from gpuadvisor.validation.harness import host_stream_rows, offload_out_of_sample  # noqa: E402
from gpuadvisor.validation.ledger import (  # noqa: E402
    Ledger,
    LedgerError,
    append,
    changed_since_head,
    first_score,
    head_commit,
    load_diagnoses,
    load_ledger,
    pending_rows,
    pending_sources,
    rescore,
    restated_rows,
    score_now,
    today,
)
from gpuadvisor.validation.ledger import summary as ledger_summary  # noqa: E402
from gpuadvisor.validation.report import (  # noqa: E402
    markdown,
    now_text,
    offload_summary,
    offload_text,
    prospective_text,
    text_summary,
)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--out-of-sample", action="store_true", help="leave one source out (the default)")
    mode.add_argument("--in-sample", action="store_true", help="the shipped engine profiles on every row")
    mode.add_argument("--prospective", action="store_true", help="the ledger's first scores")
    mode.add_argument("--offload", action="store_true", help="the partial-offload rows held out by source")
    mode.add_argument("--score-new", action="store_true", help="first-score new rows into the ledger")
    mode.add_argument("--retrospective", metavar="SOURCE", help="record a source read by a model change")
    parser.add_argument("--json", action="store_true", help="print the summary object only")
    parser.add_argument("--rows", action="store_true", help="print every row's comparison")
    parser.add_argument("--write", action="store_true", help="write docs/validation.md")
    parser.add_argument("--data", default=None, help="folder with sources.csv and measurements.csv")
    parser.add_argument("--scenario", metavar="ROW", help="print the scenario file of one row and stop")
    parser.add_argument(
        "--include-prospective",
        action="store_true",
        help="fits and leave-one-source-out read new sources too",
    )
    parser.add_argument("--dry-run", action="store_true", help="with --score-new: print, write nothing")
    parser.add_argument(
        "--why", default="", help="with --retrospective: why the source could not be scored first"
    )
    parser.add_argument(
        "--now", action="store_true", help="with --prospective: the ledger's rows scored by the model now"
    )
    args = parser.parse_args()
    start = time.perf_counter()
    data_dir = Path(args.data) if args.data else DATA_DIR
    try:
        sources = load_sources(data_dir)
        every_row = (
            args.include_prospective or args.scenario or args.score_new or args.now or args.retrospective
        )
        rows = load_measurements(data_dir, sources=sources, include_prospective=bool(every_row))
        ledger = load_ledger(data_dir)
        diagnoses = load_diagnoses(data_dir)
    except ValidationDataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.prospective:
        return _print_prospective(ledger, args.json, rows if args.now else None, args.rows)
    if args.score_new:
        return _score_new(rows, ledger, data_dir, args.dry_run)
    if args.retrospective:
        return _retrospective(args.retrospective, args.why, rows, ledger, data_dir)
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
    if args.offload:
        return _print_offload(rows, predictor, args.json)
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
        used = len({r.source_id for r in rows})
        print(text_summary(results, f"{len(rows)} rows from {used} sources; {title}"))
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
        text = markdown(
            oos,
            ins,
            sources,
            dt.date.today().isoformat(),
            time.perf_counter() - start,
            fitted,
            ledger=ledger,
            diagnoses=diagnoses,
            restated=restated_rows(
                ledger, load_measurements(data_dir, sources=sources, include_prospective=True)
            ),
        )
        (ROOT / "docs" / "validation.md").write_text(text, encoding="utf-8")
    return 0


def _print_prospective(
    ledger: Ledger | None, as_json: bool, rows: list[Row] | None, with_rows: bool = False
) -> int:
    """The ledger's first scores, or with ``rows`` (``--now``) its rows scored by the model now (per
    source, and with ``with_rows`` (``--rows``) row by row)."""
    if ledger is None:
        print("error: the data folder has no ledger.jsonl", file=sys.stderr)
        return 2
    if rows is not None:
        predictor = Predictor(load_gpu_catalog(), load_model_catalog())
        if as_json:
            print(json.dumps(score_now(ledger, rows, predictor)))
        else:
            print(now_text(rescore(ledger, rows, predictor), with_rows))
        return 0
    if as_json:
        print(json.dumps(ledger_summary(ledger)))
    else:
        print(prospective_text(ledger))
    return 0


def _print_offload(rows: list[Row], predictor: Predictor, as_json: bool) -> int:
    """The partial-offload rows held out by source, and under the shipped constants."""
    folds = offload_out_of_sample(rows, predictor)
    shipped = [predictor.compare(r) for r in host_stream_rows(rows)]
    print(json.dumps(offload_summary(folds, shipped)) if as_json else offload_text(folds, shipped))
    return 0


def _retrospective(source: str, why: str, rows: list[Row], ledger: Ledger | None, data_dir: Path) -> int:
    """Append a ``retrospective`` line for ``source`` (a source whose rows a model change read)."""
    if ledger is None:
        print("error: the data folder has no ledger.jsonl", file=sys.stderr)
        return 2
    if source not in {r.source_id for r in rows}:
        print(f"error: source {source!r} has no rows in measurements.csv", file=sys.stderr)
        return 2
    if source in ledger.fitted or any(e.source == source for e in ledger.scores):
        print(f"error: source {source!r} is already in the ledger", file=sys.stderr)
        return 2
    try:
        commit = head_commit(ROOT)
    except (OSError, subprocess.SubprocessError) as exc:
        print(f"error: git could not say the commit ({exc})", file=sys.stderr)
        return 2
    entry = {"kind": "retrospective", "date": today(), "commit": commit, "source": source, "why": why}
    try:
        append(data_dir, entry)
    except LedgerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{source}: recorded as retrospective (fitted from now on, not in the prospective figure)")
    return 0


def _score_new(rows: list[Row], ledger: Ledger | None, data_dir: Path, dry_run: bool) -> int:
    """First scores of the rows no ledger entry has scored, by the model at HEAD, one entry per source."""
    if ledger is None:
        print("error: the data folder has no ledger.jsonl", file=sys.stderr)
        return 2
    pending = pending_rows(rows, ledger)
    if not pending:
        print("no new rows to score")
        return 0
    try:
        changed = changed_since_head(ROOT)
        commit = head_commit(ROOT)
    except (OSError, subprocess.SubprocessError) as exc:
        print(
            f"error: scoring records the commit of the model, and git could not say it ({exc})",
            file=sys.stderr,
        )
        return 2
    if changed and not dry_run:
        print(
            "error: commit the rows and the model first; a first score records the commit it ran at, and "
            f"these differ from it: {', '.join(changed)}",
            file=sys.stderr,
        )
        return 2
    predictor = Predictor(load_gpu_catalog(), load_model_catalog())
    for source in pending_sources(rows, ledger):
        entry = first_score(source, pending, predictor, commit, today())
        groups = ", ".join(
            f"{g} n={f['n']} median {f['median_abs_pct']}%" for g, f in entry["groups"].items() if f["n"]
        )
        print(f"{source}: {len(entry['rows'])} rows scored, {len(entry['unscorable'])} unscorable; {groups}")
        for r in entry["rows"]:
            err = "" if r["error_pct"] is None else f"{r['error_pct']:+.1f}%"
            est = "-" if r["estimate"] is None else format(r["estimate"], ",.4g")
            print(f"    {r['id']:12s} {r['group']:16s} measured {r['measured']:>12,.4g}  estimate {est:>12s}  {err:>8s}"
                  f"{'  in range' if r['covered'] else ''} {r['note']}")  # fmt: skip
        for u in entry["unscorable"]:
            print(f"    {u['id']:12s} unscorable: {u['why']}")
        if not dry_run:
            append(data_dir, entry)
    if not dry_run:
        print(f"appended to {data_dir / 'ledger.jsonl'} at commit {commit}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
