"""Importing and exporting catalog tables (CSV or JSON) for the user's own catalogs.

Export writes a table of ``column -> CSV text`` rows (as :func:`gpuadvisor.core.formats.user_catalog.merge`
gives them) in one of two formats:

* **CSV**, the bundled catalogs' format: the metadata line
  ``# catalog=gpus; schema_version=1; updated=...``, the header in canonical column order, then
  one line per row with the values verbatim (quoted where CSV needs it);
* **JSON**: ``{"catalog": "gpus", "schema_version": 1, "updated": "...", "rows": [{column: text}]}``.

Import reads either format back, and also a CSV without the metadata line (a spreadsheet drops
it) and a plain JSON list of row objects. Each row is checked with
:func:`~gpuadvisor.core.formats.user_catalog.validate_row`; a bad row is rejected with its physical line
in the file (counting the metadata and header lines) and the reason, and the others are applied
to a copy of the current table: an id already in the table is updated in place (columns absent
from the file keep their current values), a new id is appended (absent columns empty).
Problems with the file as a whole (unreadable, wrong catalog kind or schema version, missing
required CSV columns) raise :class:`CatalogError`.

CSV is read with pandas (``dtype=str``, no NA conversion, so ``"0.50"`` stays ``"0.50"`` and
``"NA"`` stays text), imported only when a CSV file is read; the standard ``csv`` module maps
each record to its physical line, since pandas does not report line numbers. Export uses the
``csv`` module alone: it writes the cells verbatim, with the same minimal quoting as the bundled
files, so an export of an unedited catalog is byte-identical to the bundled file.

References: RFC 4180 (CSV); ``docs/catalog.md``, "Your own catalog (user edits)".
"""

from __future__ import annotations

import csv
import io
import json
import os
import warnings as _warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import CatalogError
from ..files import FileKind, csv_problem, parse_json, read_untrusted
from ..specs.catalog_io import parse_meta
from ..specs.hardware import GPU_REQUIRED_COLUMNS
from ..specs.presets import MODEL_REQUIRED_COLUMNS
from .user_catalog import bundled_meta, check_kind, columns, describe_error, full_row, validate_row

FORMATS = ("csv", "json")
_JSON_WS = " \t\n\r"


def required_columns(kind: str) -> tuple[str, ...]:
    """The columns a CSV import must have (the bundled parser's required columns)."""
    check_kind(kind)
    return GPU_REQUIRED_COLUMNS if kind == "gpus" else MODEL_REQUIRED_COLUMNS


# --- export ---------------------------------------------------------------------------------------
def export_text(kind: str, rows: Sequence[Mapping[str, str]], fmt: str, updated: str) -> str:
    """The table as CSV (the bundled format) or JSON text; values are written verbatim.

    ``updated`` goes into the metadata (an ISO date). Each row is written with every canonical
    column in order; missing columns are empty and other keys are left out.
    """
    check_kind(kind)
    if fmt not in FORMATS:
        raise CatalogError("format", f"must be one of {', '.join(FORMATS)}", fmt)
    version = bundled_meta(kind).schema_version
    full = [full_row(kind, r) for r in rows]
    if fmt == "json":
        data = {"catalog": kind, "schema_version": version, "updated": updated, "rows": full}
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    out = io.StringIO()
    out.write(f"# catalog={kind}; schema_version={version}; updated={updated}\n")
    writer = csv.writer(out, lineterminator="\n")
    cols = columns(kind)
    writer.writerow(cols)
    for row in full:
        writer.writerow([row[c] for c in cols])
    return out.getvalue()


# --- the report -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class ImportLine:
    """One row of an imported file: its physical ``line`` (1-based), its id (None when it has none),
    the ``reason`` it was rejected, and for an update the ``columns`` that changed."""

    line: int
    id: str | None
    reason: str = ""
    columns: tuple[str, ...] = ()

    def label(self) -> str:
        """``line 7 (id foo)`` or ``line 7 (no id)``."""
        return f"line {self.line} ({'id ' + self.id if self.id else 'no id'})"


@dataclass
class ImportReport:
    """What an import did. ``rows`` is the resulting full table (current rows with updates applied
    in place, then added rows); rejected rows are not in it. ``origin`` names the file."""

    kind: str
    origin: str
    added: list[ImportLine] = field(default_factory=list)
    updated: list[ImportLine] = field(default_factory=list)
    unchanged: list[ImportLine] = field(default_factory=list)
    rejected: list[ImportLine] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    rows: list[dict[str, str]] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """True when the import adds or updates at least one row."""
        return bool(self.added or self.updated)

    def summary(self) -> str:
        """Readable multi-line text: the counts, then each rejected, updated and added row, then warnings."""
        lines = [
            f"{self.origin}: {len(self.added)} added, {len(self.updated)} updated, "
            f"{len(self.unchanged)} unchanged, {len(self.rejected)} rejected"
        ]
        if self.rejected:
            lines.append("Rejected:")
            lines += [f"  {r.label()}: {r.reason}" for r in self.rejected]
        if self.updated:
            lines.append("Updated:")
            lines += [f"  {r.label()}: {', '.join(r.columns)}" for r in self.updated]
        if self.added:
            lines.append("Added:")
            lines += [f"  {r.label()}" for r in self.added]
        lines += [f"Warning: {w}" for w in self.warnings]
        return "\n".join(lines)

    def details(self, before: list[dict[str, str]]) -> str:
        """:meth:`summary` with every changed value spelled out (``tdp_w: 450 -> 460``), given the
        rows as they were before the import: what applying it changes, not only which rows."""
        old = {r.get("id"): r for r in before}
        new = {r.get("id"): r for r in self.rows}
        lines = [self.summary()]
        if self.updated:
            lines += ["", "Values that change:"]
            for item in self.updated:
                was, now = old.get(item.id, {}), new.get(item.id, {})
                changes = [
                    f"{c}: {was.get(c) or '(empty)'} -> {now.get(c) or '(empty)'}" for c in item.columns
                ]
                lines.append(f"  {item.id}: " + "; ".join(changes))
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: counts are the list lengths; ``rows`` is left out."""

        def lines(items: list[ImportLine], key: str | None = None) -> list[dict[str, Any]]:
            out = []
            for item in items:
                d: dict[str, Any] = {"line": item.line, "id": item.id}
                if key == "reason":
                    d["reason"] = item.reason
                elif key == "columns":
                    d["columns"] = list(item.columns)
                out.append(d)
            return out

        return {
            "kind": self.kind,
            "file": self.origin,
            "added": lines(self.added),
            "updated": lines(self.updated, "columns"),
            "unchanged": lines(self.unchanged),
            "rejected": lines(self.rejected, "reason"),
            "warnings": list(self.warnings),
        }


# --- reading CSV ----------------------------------------------------------------------------------
def _check_meta_line(kind: str, line: str, origin: str) -> None:
    meta = parse_meta(line, origin)
    if meta.kind != kind:
        raise CatalogError(f"{origin}: line 1", f"is a '{meta.kind}' catalog, expected '{kind}'")
    supported = (bundled_meta(kind).schema_version,)
    if meta.schema_version not in supported:
        raise CatalogError(
            f"{origin}: line 1",
            f"schema_version {meta.schema_version} is not supported by this version of "
            f"gpuadvisor (supported: {', '.join(map(str, supported))})",
        )


def _blank(cells: Sequence[str]) -> bool:
    return all(not c.strip() for c in cells)


def _csv_records(kind: str, text: str, origin: str, report: ImportReport) -> list[tuple[int, dict[str, str]]]:
    """(physical line, row) for every non-blank CSV record; bad records go to ``report.rejected``."""
    offset = 0
    body = text
    first, newline, rest = text.partition("\n")
    if first.lstrip().startswith("#"):
        _check_meta_line(kind, first.rstrip("\r"), origin)
        offset, body = 1, rest
    # Pass 1 (csv module): the header, and where each record starts and how many cells it has.
    reader = csv.reader(io.StringIO(body, newline=""))
    header: list[str] | None = None
    header_line = 0
    starts: list[tuple[int, int]] = []  # (physical line, cell count) of non-blank records
    previous_end = 0
    try:
        for record in reader:
            start = previous_end + 1 + offset
            previous_end = reader.line_num
            if not record or _blank(record):
                continue
            if header is None:
                header, header_line = [c.strip() for c in record], start
            else:
                starts.append((start, len(record)))
    except csv.Error as exc:
        raise CatalogError(f"{origin}: line {reader.line_num + offset}", csv_problem(exc)) from None
    if header is None:
        raise CatalogError(origin, "has no header row (and no rows)")
    repeated = sorted({c for c in header if header.count(c) > 1 and c})
    if repeated:
        raise CatalogError(
            f"{origin}: line {header_line}", f"has column(s) {', '.join(repeated)} more than once"
        )
    missing = [c for c in required_columns(kind) if c not in header]
    if missing:
        hint = (
            "; the file looks semicolon-separated: save it as comma-separated CSV"
            if len(header) == 1 and ";" in header[0]
            else ""
        )
        raise CatalogError(
            f"{origin}: line {header_line}", f"is missing required column(s) {', '.join(missing)}{hint}"
        )
    known = set(columns(kind))
    unknown = [c for c in header if c not in known]
    if unknown:
        report.warnings.append(
            f"{origin}: column(s) {', '.join(c or '(unnamed)' for c in unknown)} are not "
            f"{kind} catalog columns and were ignored"
        )
    # Pass 2 (pandas): the values, as text exactly as written.
    import pandas as pd

    with _warnings.catch_warnings(record=True) as caught:
        _warnings.simplefilter("always")
        try:
            frame = pd.read_csv(
                io.StringIO(body),
                dtype=str,
                keep_default_na=False,
                na_filter=False,
                usecols=range(len(header)),
                index_col=False,
                skip_blank_lines=True,
            )
        except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
            raise CatalogError(origin, f"is not valid CSV ({' '.join(str(exc).split())})") from None
    report.warnings += [f"{origin}: {w.message}" for w in caught]
    values = [
        [("" if v is None else str(v)) for v in row] for row in frame.itertuples(index=False, name=None)
    ]
    values = [row for row in values if not _blank(row)]
    if len(values) != len(starts):
        raise CatalogError(
            origin,
            f"could not be read consistently ({len(values)} rows by one reader, "
            f"{len(starts)} by another); save it again as plain comma-separated CSV",
        )
    out = []
    for (line, cells), row in zip(starts, values):
        if cells > len(header):
            report.rejected.append(
                ImportLine(
                    line,
                    row[header.index("id")].strip() or None,
                    f"has {cells} cells but the header has {len(header)} columns "
                    "(a comma in an unquoted value?)",
                )
            )
            continue
        out.append((line, {c: v.strip() for c, v in zip(header, row) if c in known}))
    return out


# --- reading JSON ---------------------------------------------------------------------------------
def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in _JSON_WS:
        i += 1
    return i


def _row_offsets(text: str, top_is_object: bool) -> list[int]:
    """Character offsets where the row objects start (the ``rows`` array, or the top-level list).

    Only called on text that ``json.loads`` accepted.
    """
    decoder = json.JSONDecoder()
    i = _skip_ws(text, 0)
    array = i
    if top_is_object:
        i = _skip_ws(text, i + 1)
        while text[i] != "}":
            key, end = decoder.raw_decode(text, i)
            i = _skip_ws(text, _skip_ws(text, end) + 1)  # past the ':'
            if key == "rows":
                array = i  # the last one wins, as in json.loads
            _, end = decoder.raw_decode(text, i)
            i = _skip_ws(text, end)
            if text[i] == ",":
                i = _skip_ws(text, i + 1)
    offsets: list[int] = []
    i = _skip_ws(text, array + 1)
    while i < len(text) and text[i] != "]":
        offsets.append(i)
        _, end = decoder.raw_decode(text, i)
        i = _skip_ws(text, end)
        if text[i] == ",":
            i = _skip_ws(text, i + 1)
    return offsets


def _cell(value: object) -> str | None:
    """A JSON value as CSV text; None for an object or list."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    return None


def _json_records(
    kind: str, text: str, origin: str, report: ImportReport
) -> list[tuple[int, dict[str, str]]]:
    """(physical line, row) for every row object; bad rows go to ``report.rejected``."""
    data = parse_json(text, origin, error=CatalogError)
    if isinstance(data, dict):
        if "catalog" in data and data["catalog"] != kind:
            raise CatalogError(f"{origin}: catalog", f"is a {data['catalog']!r} catalog, expected {kind!r}")
        version = bundled_meta(kind).schema_version
        if "schema_version" in data and data["schema_version"] != version:
            raise CatalogError(
                f"{origin}: schema_version",
                f"{data['schema_version']!r} is not supported by this version of gpuadvisor "
                f"(supported: {version})",
            )
        items = data.get("rows")
        if not isinstance(items, list):
            raise CatalogError(f"{origin}: rows", "is required: a list of row objects (column -> value)")
    elif isinstance(data, list):
        items = data
    else:
        raise CatalogError(origin, 'must hold an object with "rows" or a list of row objects')
    offsets = _row_offsets(text, isinstance(data, dict))
    known = set(columns(kind))
    unknown: dict[str, None] = {}
    out = []
    line, counted = 1, 0
    for item, offset in zip(items, offsets):
        line += text.count("\n", counted, offset)
        counted = offset
        if not isinstance(item, dict):
            report.rejected.append(ImportLine(line, None, "must be an object of column -> value"))
            continue
        row_id = _cell(item.get("id"))
        row: dict[str, str] = {}
        bad = None
        for column, value in item.items():
            if column not in known:
                unknown[column] = None
                continue
            cell = _cell(value)
            if cell is None:
                bad = f"column {column}: must be text or a number"
                break
            row[column] = cell.strip()
        if bad:
            report.rejected.append(ImportLine(line, (row_id or "").strip() or None, bad))
            continue
        out.append((line, row))
    if unknown:
        report.warnings.append(
            f"{origin}: key(s) {', '.join(unknown)} are not {kind} catalog columns and were ignored"
        )
    return out


# --- import ---------------------------------------------------------------------------------------
def _sniff(text: str) -> str:
    stripped = text.lstrip()
    return "json" if stripped[:1] in ("{", "[") else "csv"


def import_text(
    kind: str,
    text: str,
    current_rows: Sequence[Mapping[str, str]],
    fmt: str | None = None,
    origin: str = "imported file",
) -> ImportReport:
    """Import catalog rows from ``text`` (``fmt`` ``"csv"``, ``"json"`` or None to detect) into a copy of
    ``current_rows`` (not changed). Raises :class:`CatalogError` for a file that is unusable as a
    whole; every row-level problem becomes an entry of ``ImportReport.rejected``."""
    check_kind(kind)
    text = text.removeprefix("\ufeff")
    if not text.strip():
        raise CatalogError(origin, "is empty")
    if "\x00" in text:
        raise CatalogError(origin, "is not a text file (binary content)")
    fmt = fmt or _sniff(text)
    if fmt not in FORMATS:
        raise CatalogError("format", f"must be one of {', '.join(FORMATS)}", fmt)
    report = ImportReport(kind=kind, origin=origin)
    records = (_json_records if fmt == "json" else _csv_records)(kind, text, origin, report)
    table = [full_row(kind, r) for r in current_rows]
    index: dict[str, int] = {}
    for i, row in enumerate(table):
        index.setdefault(row["id"], i)
    seen: dict[str, int] = {}
    for line, values in records:
        row_id = values.get("id", "")
        if not row_id:
            report.rejected.append(ImportLine(line, None, "column id: is required"))
            continue
        if row_id in seen:
            report.rejected.append(
                ImportLine(line, row_id, f"column id: duplicates the row on line {seen[row_id]}")
            )
            continue
        seen[row_id] = line
        current = table[index[row_id]] if row_id in index else None
        merged = {**current, **values} if current is not None else full_row(kind, values)
        try:
            validate_row(kind, merged, origin=origin, line=line)
        except CatalogError as exc:
            report.rejected.append(ImportLine(line, row_id, describe_error(exc)))
            continue
        if current is None:
            table.append(merged)
            index[row_id] = len(table) - 1
            report.added.append(ImportLine(line, row_id))
            continue
        changed = tuple(c for c in columns(kind) if merged[c] != current[c])
        if changed:
            table[index[row_id]] = merged
            report.updated.append(ImportLine(line, row_id, columns=changed))
        else:
            report.unchanged.append(ImportLine(line, row_id))
    report.rejected.sort(key=lambda r: r.line)
    report.rows = table
    return report


def import_file(
    kind: str, path: str | os.PathLike[str], current_rows: Sequence[Mapping[str, str]], fmt: str | None = None
) -> ImportReport:
    """:func:`import_text` for a file: UTF-8 text; the format from ``fmt``, else the suffix, else the content.

    Also raises :class:`CatalogError` for a missing, unreadable, binary or non-UTF-8 file.

    Errors name the file by its name only (``gpus-export.csv: line 2``).
    """
    p = Path(path)
    origin = p.name
    raw = read_untrusted(p, FileKind.CATALOG, error=CatalogError)
    if b"\x00" in raw:
        raise CatalogError(origin, "is not a text file (binary content)")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CatalogError(
            origin, f"is not UTF-8 text (undecodable byte at offset {exc.start}); save it as 'CSV UTF-8'"
        ) from None
    if fmt is None:
        suffix = p.suffix.lower()
        fmt = {".json": "json", ".csv": "csv"}.get(suffix)
    return import_text(kind, text, current_rows, fmt, origin)
