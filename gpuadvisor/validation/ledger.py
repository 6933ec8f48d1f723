"""The prospective ledger (``tests/data/validation/ledger.jsonl``): each new source scored by the
model as shipped, before anything is fitted on it, and that first score kept as written.

Leave-one-source-out (:func:`.harness.out_of_sample`) refits the constants without each source, but
the model's structure (its formulas, regimes and exceptions) was chosen after reading every source
of the set, which no refit undoes. A source scored by the shipped model before its rows are read
for any change is the honest test of that structure: its *prospective* score. The ledger keeps
those scores, one JSON object per line, append-only:

- ``baseline`` (the first line): the sources in the set when the ledger began, with the commit.
  They are retrospective: every fit and leave-one-source-out run reads them.
- ``first_score``: the first score of a new source's rows by the model at a recorded commit (the
  rows committed first, then scored at that commit with nothing else changed: ``scripts/validate.py
  --score-new``). Per row: the measured and estimated figure, the error, the estimate's 80% range
  and whether it held the measurement; per group: rows, median absolute error and coverage. Rows the
  model cannot express yet (a layout it has no key for, a GPU not in the catalog) are listed with the
  reason and counted apart; they are first-scored the day they become expressible, in an entry of
  their own. A row is first-scored once.
- ``admitted``: a scored source that takes part in the fits from that day on (its first score stays
  as written, and stays the figure the ledger reports).
- ``retrospective``: a source added together with a model change that was built while reading it
  (it cannot be scored before anything read it), fitted from the start and never in the prospective
  figure; the line says why (``scripts/validate.py --retrospective SOURCE --why TEXT``).

Until it is admitted, a new source takes part in no fit and in no leave-one-source-out run:
:func:`load_measurements` (the package's ``gpuadvisor.validation.load_measurements``, which every
fit, script and test reads) leaves its rows out unless asked to include them.

Tamper evidence: each line carries ``prev_sha256``, the SHA-256 of the file's text before it, so
that rewriting an earlier line breaks the chain of every later one; a scored entry also carries
``rows_sha256`` (the rows as they were scored: measurements.csv only grows and later decisions go to
rescored.csv, so this must still match the data; the lines written before a fact was restated leave
that column out, :data:`RESTATED_COLUMNS`) and ``predictions_sha256`` (its first predictions).
``tests/core/test_ledger.py`` checks all three and, in a git checkout, that the ledger at each
recorded commit is a prefix of the ledger now.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import statistics
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .data import DATA_DIR, GROUPS, Row, Source, ValidationDataError
from .data import load_measurements as load_every_measurement

LEDGER_FILE = "ledger.jsonl"
DIAGNOSES_FILE = "diagnoses.csv"
KINDS = ("baseline", "first_score", "admitted", "retrospective")
#: A source whose first score has a speed or memory median above this gets a written diagnosis
#: (``diagnoses.csv``, printed in docs/validation.md).
DIAGNOSIS_THRESHOLD_PCT = 30.0
#: What a scoring run must find unchanged since the commit it records (the model, its catalogs and
#: the data it scores); the ledger and the diagnoses are written after it.
SCORED_PATHS = ("gpuadvisor", "catalogs", "tests/data/validation/measurements.csv",
                "tests/data/validation/sources.csv", "tests/data/validation/rescored.csv")  # fmt: skip


class LedgerError(ValidationDataError):
    """The ledger breaks its format or its chain: the message names the line."""


@dataclass(frozen=True, slots=True)
class ScoredRow:
    """One row's first score, as the ledger keeps it (figures in the harness's compared units)."""

    id: str
    group: str
    quantity: str
    measured: float
    estimate: float | None
    low: float | None
    high: float | None
    error_pct: float | None  # estimate / measured - 1, in %; None for a bounds row
    covered: bool
    right: bool | None  # bounds rows: the estimate on the right side of the card
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "group": self.group,
            "quantity": self.quantity,
            "measured": self.measured,
            "estimate": self.estimate,
            "low": self.low,
            "high": self.high,
            "error_pct": self.error_pct,
            "covered": self.covered,
            "right": self.right,
            "note": self.note,
        }


@dataclass(frozen=True, slots=True)
class Entry:
    """One line of the ledger."""

    line: int
    kind: str
    date: str
    commit: str
    source: str = ""
    sources: tuple[str, ...] = ()
    rows: tuple[ScoredRow, ...] = ()
    unscorable: tuple[tuple[str, str], ...] = ()  # (row id, why)
    rows_sha256: str = ""
    predictions_sha256: str = ""
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def hash_omits(self) -> tuple[str, ...]:
        """The columns its ``rows_sha256`` leaves out: those its line names (``rows_hash_omits``,
        written since 2026-12-06, empty) and the :data:`RESTATED_COLUMNS` stated after the line
        was written (:data:`RESTATED_SINCE`), else every restated column (the lines written before)."""
        named = self.raw.get("rows_hash_omits")
        if not isinstance(named, list):
            return tuple(RESTATED_COLUMNS)
        # A column stated after the line was written (the ledger had ``line - 1`` lines then).
        later = [c for c in RESTATED_COLUMNS if self.line <= RESTATED_SINCE[c] and c not in named]
        return (*named, *later)


@dataclass(frozen=True, slots=True)
class Ledger:
    entries: tuple[Entry, ...]

    @property
    def baseline(self) -> frozenset[str]:
        return frozenset(s for e in self.entries if e.kind == "baseline" for s in e.sources)

    @property
    def admitted(self) -> frozenset[str]:
        """Scored sources admitted to the fits since, and sources added as retrospective."""
        return frozenset(e.source for e in self.entries if e.kind in ("admitted", "retrospective"))

    @property
    def scores(self) -> tuple[Entry, ...]:
        return tuple(e for e in self.entries if e.kind == "first_score")

    @property
    def fitted(self) -> frozenset[str]:
        """The sources every fit reads: the baseline's and those admitted since."""
        return self.baseline | self.admitted

    def first_scored_ids(self) -> set[str]:
        """Every row id with a first score or listed as unscorable in a scored entry."""
        out: set[str] = set()
        for e in self.scores:
            out.update(r.id for r in e.rows)
        return out

    def scored_rows(self) -> list[ScoredRow]:
        return [r for e in self.scores for r in e.rows]


# --- reading -------------------------------------------------------------------------------------
def ledger_path(data_dir: str | Path = DATA_DIR) -> Path:
    return Path(data_dir) / LEDGER_FILE


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def load_ledger(data_dir: str | Path = DATA_DIR) -> Ledger | None:
    """The ledger, its chain and entries checked; None where the data folder has none."""
    path = ledger_path(data_dir)
    if not path.exists():
        return None
    return parse_ledger(path.read_text(encoding="utf-8"))


def parse_ledger(text: str) -> Ledger:
    """The ledger in ``text``, its chain and entries checked (:class:`LedgerError` names the line)."""
    entries: list[Entry] = []
    consumed = ""
    scored: dict[str, int] = {}
    for n, line in enumerate(text.splitlines(keepends=True), start=1):
        where = f"{LEDGER_FILE} line {n}"
        try:
            raw = json.loads(line)
        except json.JSONDecodeError:
            raise LedgerError(f"{where}: not a JSON object") from None
        if not isinstance(raw, dict):
            raise LedgerError(f"{where}: not a JSON object")
        if raw.get("prev_sha256") != sha256_text(consumed):
            raise LedgerError(
                f"{where}: prev_sha256 does not match the lines before it (an earlier line was rewritten)"
            )
        entry = _entry(raw, n, where)
        if (n == 1) != (entry.kind == "baseline"):
            raise LedgerError(f"{where}: the first line, and only it, is the baseline")
        if entry.kind == "first_score":
            for r in entry.rows:
                if r.id in scored:
                    raise LedgerError(f"{where}: row {r.id} was first-scored on line {scored[r.id]}")
                scored[r.id] = n
            if entry.predictions_sha256 != predictions_sha256(entry.rows):
                raise LedgerError(f"{where}: predictions_sha256 does not match the rows' predictions")
        if entry.kind == "admitted" and not any(
            e.source == entry.source for e in entries if e.kind == "first_score"
        ):
            raise LedgerError(f"{where}: source {entry.source} is admitted before any first score")
        entries.append(entry)
        consumed += line
    return Ledger(tuple(entries))


def _entry(raw: dict[str, Any], n: int, where: str) -> Entry:
    kind = raw.get("kind")
    if kind not in KINDS:
        raise LedgerError(f"{where}: kind must be one of {', '.join(KINDS)}")
    date = raw.get("date", "")
    try:
        dt.date.fromisoformat(date)
    except (TypeError, ValueError):
        raise LedgerError(f"{where}: date must be YYYY-MM-DD") from None
    commit = raw.get("commit", "")
    if not (isinstance(commit, str) and len(commit) == 40 and all(c in "0123456789abcdef" for c in commit)):
        raise LedgerError(f"{where}: commit must be a full 40-digit commit hash")
    if kind == "baseline":
        sources = raw.get("sources")
        if not isinstance(sources, list) or not sources:
            raise LedgerError(f"{where}: a baseline lists its sources")
        return Entry(n, kind, date, commit, sources=tuple(sources), raw=raw)
    source = raw.get("source")
    if not isinstance(source, str) or not source:
        raise LedgerError(f"{where}: source is missing")
    if kind == "admitted":
        return Entry(n, kind, date, commit, source=source, raw=raw)
    if kind == "retrospective":
        if not isinstance(raw.get("why"), str) or len(raw["why"]) < 20:
            raise LedgerError(f"{where}: a retrospective source says why it could not be scored first")
        return Entry(n, kind, date, commit, source=source, raw=raw)
    try:
        rows = tuple(ScoredRow(**r) for r in raw["rows"])
        unscorable = tuple((u["id"], u["why"]) for u in raw.get("unscorable", []))
    except (KeyError, TypeError):
        raise LedgerError(f"{where}: rows and unscorable must be lists of the documented objects") from None
    if not rows and not unscorable:
        raise LedgerError(f"{where}: a first score has rows or unscorable rows")
    return Entry(
        n,
        kind,
        date,
        commit,
        source=source,
        rows=rows,
        unscorable=unscorable,
        rows_sha256=str(raw.get("rows_sha256", "")),
        predictions_sha256=str(raw.get("predictions_sha256", "")),
        raw=raw,
    )


def load_measurements(
    data_dir: str | Path = DATA_DIR,
    sources: dict[str, Source] | None = None,
    include_prospective: bool = False,
) -> list[Row]:
    """The measurement rows (:func:`.data.load_measurements`) of the sources the fits read: rows of
    prospective sources (added after the ledger began and not admitted since) are left out unless
    ``include_prospective``, so that every fit, every leave-one-source-out run and every figure read
    from these rows stays what it was until a source is admitted on purpose. Without a ledger file
    every row counts (a bare data folder of the format)."""
    rows = load_every_measurement(data_dir, sources)
    if include_prospective:
        return rows
    fitted = fitted_sources(data_dir)
    return rows if fitted is None else [r for r in rows if r.source_id in fitted]


def fitted_sources(data_dir: str | Path = DATA_DIR) -> frozenset[str] | None:
    """The sources the fits read (baseline and admitted); None without a ledger (every source)."""
    ledger = load_ledger(data_dir)
    return None if ledger is None else ledger.fitted


def prospective_rows(rows: Iterable[Row], ledger: Ledger) -> list[Row]:
    """The rows of sources the fits do not read (first-scored or not scored yet)."""
    fitted = ledger.fitted
    return [r for r in rows if r.source_id not in fitted]


def pending_rows(rows: Iterable[Row], ledger: Ledger) -> list[Row]:
    """Prospective rows without a first score: new rows, and rows recorded as unscorable that are
    scored now (their layout became expressible; rescored.csv says so)."""
    first = ledger.first_scored_ids()
    listed = {rid for e in ledger.scores for rid, _ in e.unscorable}
    return [
        r for r in prospective_rows(rows, ledger) if r.id not in first and (r.id not in listed or r.scored)
    ]


def pending_sources(rows: Iterable[Row], ledger: Ledger) -> list[str]:
    """The sources of :func:`pending_rows`, in the order of the data."""
    return list(dict.fromkeys(r.source_id for r in pending_rows(rows, ledger)))


# --- hashes --------------------------------------------------------------------------------------
#: Columns of measurements.csv that state, for rows first-scored before the column existed, a fact
#: of the row's own source that a later model change reads (column -> when and why it was added).
#: The model that first scored those rows did not read the column, so stating it afterwards leaves
#: the first score as it was; the hashes of the lines written before 2026-12-06's last entries leave
#: these columns out (:attr:`Entry.hash_omits`; a line written since names what its hash omits,
#: nothing), and docs/validation.md says which ledger rows state them.
RESTATED_COLUMNS = {
    "prompt_logits": "2026-12-06: Transformers' generate computes only the sampled position's logits "
    "since v4.45; runs of older releases and of eager loops state 'all'",
    "tflops_attention": "2026-12-07: Megatron-LM counts the causal half of the attention core in the "
    "TFLOPS it logs since 2025-03-06 (commit 8873b55); runs of its later releases state 'causal'",
}
#: How many lines the ledger had when each restated column was added: the entries from then on were
#: scored by a model that read the column.
RESTATED_SINCE = {"prompt_logits": 65, "tflops_attention": 74}


def rows_sha256(rows: Sequence[Row], omit: Iterable[str] = ()) -> str:
    """The rows as scored: every cell but the scoring decision (``scored``/``why``, which
    rescored.csv may change later), empty cells (so a column added at the end changes nothing) and
    the columns ``omit`` names (an entry's :attr:`Entry.hash_omits`)."""
    left_out = frozenset(omit)
    data = [
        [r.id, r.source_id, r.locator, r.quote, r.group, r.quantity, r.unit, r.value, r.bound, r.basis,
         [[k, v] for k, v in r.facts if v and k not in left_out]]
        for r in sorted(rows, key=lambda r: r.id)
    ]  # fmt: skip
    return sha256_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")))


def predictions_sha256(rows: Sequence[ScoredRow]) -> str:
    data = [r.to_dict() for r in rows]
    return sha256_text(json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":")))


# --- scoring -------------------------------------------------------------------------------------
def _sig(x: float | None) -> float | None:
    return None if x is None else float(f"{x:.6g}")


def scored_row(c: Any) -> ScoredRow:
    """A harness comparison (:class:`.harness.Comparison`) as the ledger keeps it."""
    error = c.error
    return ScoredRow(
        id=c.row.id,
        group=c.row.group,
        quantity=c.row.quantity,
        measured=_sig(c.measured) or 0.0,
        estimate=_sig(c.estimate),
        low=_sig(c.low),
        high=_sig(c.high),
        error_pct=None if error is None else round(100.0 * error, 2),
        covered=bool(c.covered),
        right=c.right if c.row.bound != "point" else None,
        note=c.note,
    )


def first_score(source: str, rows: Sequence[Row], predictor: Any, commit: str, date: str) -> dict[str, Any]:
    """The ledger entry of ``source``'s rows: ``rows`` are the pending ones (:func:`pending_rows`);
    each scored row predicted by :meth:`.harness.Predictor.compare` with the shipped engine
    profiles, speed constants and per-request times (nothing refitted: this is the model a user has
    today), each unscored row listed with why."""
    mine = [r for r in rows if r.source_id == source]
    scored = [scored_row(predictor.compare(r, simulate=True)) for r in mine if r.scored]
    entry: dict[str, Any] = {
        "kind": "first_score",
        "source": source,
        "date": date,
        "commit": commit,
        "rows_sha256": rows_sha256(mine),
        "rows_hash_omits": [],
        "predictions_sha256": predictions_sha256(scored),
        "groups": {g: s for g, s in group_figures(scored).items() if s["n"]},
        "rows": [r.to_dict() for r in scored],
        "unscorable": [{"id": r.id, "why": r.why} for r in mine if not r.scored],
    }
    return entry


def append(data_dir: str | Path, entry: dict[str, Any]) -> None:
    """Append ``entry`` to the ledger with the hash of everything before it (the file is created
    with a baseline entry only)."""
    path = ledger_path(data_dir)
    before = path.read_text(encoding="utf-8") if path.exists() else ""
    if not before and entry.get("kind") != "baseline":
        raise LedgerError(f"{LEDGER_FILE}: the first entry must be the baseline")
    line = json.dumps(
        {**entry, "prev_sha256": sha256_text(before)}, ensure_ascii=False, separators=(",", ":")
    )
    parse_ledger(before + line + "\n")  # checked before anything is written: a refused entry leaves no trace
    with path.open("a", encoding="utf-8") as fh:
        fh.write(line + "\n")


# --- figures -------------------------------------------------------------------------------------
def group_figures(rows: Sequence[ScoredRow]) -> dict[str, dict[str, Any]]:
    """Per group: rows, median absolute error (%) and coverage (share inside the estimate's 80%
    range; memory within 10% of the estimate); bounds: rows and how many are on the right side."""
    out: dict[str, dict[str, Any]] = {}
    for g in GROUPS:
        mine = [r for r in rows if r.group == g]
        if g == "bounds":
            out[g] = {"n": len(mine), "median_abs_pct": None, "right": sum(bool(r.right) for r in mine)}
            continue
        errs = [abs(r.error_pct) if r.error_pct is not None else 100.0 for r in mine]
        out[g] = {
            "n": len(mine),
            "median_abs_pct": round(statistics.median(errs), 2) if errs else None,
            "coverage": round(sum(r.covered for r in mine) / len(mine), 3) if mine else None,
        }
    return out


def summary(ledger: Ledger) -> dict[str, Any]:
    """``scripts/validate.py --prospective --json``: the first scores of every ledger source, rows
    pooled per group (``rows``: rows scored; ``unscorable``: rows recorded that the model cannot
    express yet, counted apart)."""
    scores = ledger.scores
    rows = ledger.scored_rows()
    return {
        "sources": len({e.source for e in scores}),
        "rows": len(rows),
        "unscorable": sum(len(e.unscorable) for e in scores),
        "groups": group_figures(rows),
    }


def per_source(ledger: Ledger) -> list[tuple[str, str, str, int, int, dict[str, dict[str, Any]]]]:
    """(source, date, commit, rows scored, rows unscorable, figures per group) per source, its
    entries together, in the order they were first scored."""
    by: dict[str, list[Entry]] = {}
    for e in ledger.scores:
        by.setdefault(e.source, []).append(e)
    out = []
    for source, entries in by.items():
        rows = [r for e in entries for r in e.rows]
        out.append(
            (
                source,
                entries[0].date,
                entries[0].commit,
                len(rows),
                sum(len(e.unscorable) for e in entries),
                group_figures(rows),
            )
        )
    return out


def worst_median(figures: dict[str, dict[str, Any]]) -> float | None:
    """The worst median absolute error (%) over a source's groups with rows."""
    meds = [
        f["median_abs_pct"]
        for g, f in figures.items()
        if g != "bounds" and f.get("median_abs_pct") is not None
    ]
    return max(meds) if meds else None


# --- git -----------------------------------------------------------------------------------------
def _git(root: Path, *args: str) -> str:
    out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True, timeout=60)
    return out.stdout


def head_commit(root: Path) -> str:
    return _git(root, "rev-parse", "HEAD").strip()


def changed_since_head(root: Path) -> list[str]:
    """Paths of :data:`SCORED_PATHS` that differ from HEAD (staged, unstaged or untracked)."""
    out = _git(root, "status", "--porcelain", "--untracked-files=all", "--", *SCORED_PATHS)
    return [line[3:] for line in out.splitlines() if line.strip()]


def today() -> str:
    return dt.date.today().isoformat()


# --- diagnoses -----------------------------------------------------------------------------------
DIAGNOSIS_COLUMNS = ("source_id", "date_written", "diagnosis")


def load_diagnoses(data_dir: str | Path = DATA_DIR) -> dict[str, tuple[str, str]]:
    """``diagnoses.csv``: source -> (date written, what its runs have that the model lacks), for the
    ledger sources whose first score was worse than :data:`DIAGNOSIS_THRESHOLD_PCT`; {} without one."""
    from .data import _check_date, _read

    path = Path(data_dir) / DIAGNOSES_FILE
    if not path.exists():
        return {}
    out: dict[str, tuple[str, str]] = {}
    for raw in _read(path, DIAGNOSIS_COLUMNS):
        where = f"{DIAGNOSES_FILE} source {raw['source_id'] or '?'}"
        if not raw["source_id"] or raw["source_id"] in out:
            raise ValidationDataError(f"{where}: source_id must be present and unique")
        if not raw["diagnosis"]:
            raise ValidationDataError(f"{where}: diagnosis is empty")
        _check_date(raw["date_written"], f"{where}: date_written")
        out[raw["source_id"]] = (raw["date_written"], raw["diagnosis"])
    return out


def restated_rows(ledger: Ledger | None, rows: Iterable[Row]) -> list[tuple[str, str, str, int]]:
    """The rows of first scores written before a :data:`RESTATED_COLUMNS` column existed that state
    it (scored and unscorable alike), as (column, value, source, rows), for docs/validation.md: the
    facts a later model reads that their first score did not."""
    if ledger is None:
        return []
    counts: dict[tuple[str, str, str], int] = {}
    by_id = {r.id: r for r in rows}
    for column in RESTATED_COLUMNS:
        before = ledger.entries[: RESTATED_SINCE[column]]
        scored = [e for e in before if e.kind == "first_score"]
        for rid in [r.id for e in scored for r in e.rows] + [rid for e in scored for rid, _ in e.unscorable]:
            value = by_id[rid].fact(column) if rid in by_id else ""
            if value:
                key = (column, value, by_id[rid].source_id)
                counts[key] = counts.get(key, 0) + 1
    return [(*k, n) for k, n in sorted(counts.items())]


# --- the ledger's rows scored again --------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Rescored:
    """One ledger row: its source, its first score and the model's score of it now."""

    source: str
    first: ScoredRow
    now: ScoredRow


def rescore(ledger: Ledger, rows: Sequence[Row], predictor: Any) -> list[Rescored]:
    """The ledger's first-scored rows beside the model's prediction of them now (shipped constants,
    nothing refitted), in the ledger's order; rows no longer in the data are left out."""
    by_id = {r.id: r for r in rows}
    return [
        Rescored(e.source, r, scored_row(predictor.compare(by_id[r.id], simulate=True)))
        for e in ledger.scores
        for r in e.rows
        if r.id in by_id
    ]


def rescored_per_source(pairs: Sequence[Rescored]) -> list[tuple[str, str, int, float | None, float | None]]:
    """Per source and group (ledger order; bounds left out): (source, group, rows, first-score
    median |error| %, median now)."""
    out = []
    for source in dict.fromkeys(p.source for p in pairs):
        mine = [p for p in pairs if p.source == source]
        for g in GROUPS:
            if g == "bounds":
                continue
            first = [p.first for p in mine if p.first.group == g]
            if first:
                now = [p.now for p in mine if p.now.group == g]
                out.append(
                    (
                        source,
                        g,
                        len(first),
                        group_figures(first)[g]["median_abs_pct"],
                        group_figures(now)[g]["median_abs_pct"],
                    )
                )
    return out


def score_now(ledger: Ledger, rows: Sequence[Row], predictor: Any) -> dict[str, Any]:
    """The ledger's first-scored rows predicted by the model as it is now (shipped constants, nothing
    refitted), in the shape of :func:`summary`: how a model change fares on the sources scored before
    it (their first scores stay as written; this is never appended)."""
    now = [p.now for p in rescore(ledger, rows, predictor)]
    return {
        "sources": len({e.source for e in ledger.scores}),
        "rows": len(now),
        "unscorable": sum(len(e.unscorable) for e in ledger.scores),
        "groups": group_figures(now),
    }
