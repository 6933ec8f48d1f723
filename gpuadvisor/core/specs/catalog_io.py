"""Reading versioned catalog files (CSV with a metadata line).

Every bundled catalog starts with one comment line of ``key=value`` pairs, then a CSV header
whose column names carry their units::

    # catalog=gpus; schema_version=1; updated=2026-11-29
    id,name,...,memory_bandwidth_gb_s,...

The reader checks the catalog kind and schema version (an unknown version gets a readable
error rather than wrong numbers), and hands rows to a typed parser that reports problems
by line number and column. It uses the standard ``csv`` module: loading is a few
milliseconds and the core stays importable without pandas at start-up.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from ..errors import CatalogError
from ..files import csv_problem

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class CatalogMeta:
    """The metadata line of a catalog file."""

    kind: str
    schema_version: int
    updated: str
    origin: str


def parse_meta(line: str, origin: str) -> CatalogMeta:
    """Parse ``# catalog=gpus; schema_version=1; updated=...``."""
    if not line.startswith("#"):
        raise CatalogError(
            f"{origin}: line 1", "must be the metadata line '# catalog=...; schema_version=...'", line[:60]
        )
    pairs = {}
    for part in line.lstrip("#").split(";"):
        if "=" in part:
            key, value = part.split("=", 1)
            pairs[key.strip()] = value.strip()
    try:
        version = int(pairs.get("schema_version", ""))
    except ValueError:
        raise CatalogError(
            f"{origin}: line 1",
            "schema_version is missing or not a whole number",
            pairs.get("schema_version"),
        ) from None
    return CatalogMeta(
        kind=pairs.get("catalog", ""), schema_version=version, updated=pairs.get("updated", ""), origin=origin
    )


def read_catalog_text(
    text: str, origin: str, kind: str, supported_versions: Iterable[int], required_columns: Iterable[str]
) -> tuple[CatalogMeta, list[tuple[int, dict[str, str]]]]:
    """Split catalog text into its metadata and ``(line number, row)`` pairs, checking the header."""
    if "\x00" in text:
        raise CatalogError(origin, "is not a text CSV file (binary content)")
    lines = text.splitlines()
    if not lines or not lines[0].strip():
        raise CatalogError(origin, "is empty")
    meta = parse_meta(lines[0], origin)
    if meta.kind != kind:
        raise CatalogError(f"{origin}: line 1", f"is a '{meta.kind}' catalog, expected '{kind}'")
    supported = tuple(supported_versions)
    if meta.schema_version not in supported:
        raise CatalogError(
            f"{origin}: line 1",
            f"schema_version {meta.schema_version} is not supported by this version of gpuadvisor "
            f"(supported: {', '.join(map(str, supported))})",
        )
    reader = csv.DictReader(io.StringIO("\n".join(lines[1:])))
    try:
        header = reader.fieldnames or []
        missing = [c for c in required_columns if c not in header]
        if missing:
            raise CatalogError(f"{origin}: line 2", f"missing column(s) {', '.join(missing)}")
        rows = []
        for index, row in enumerate(reader):
            line_no = index + 3
            if None in row:
                raise CatalogError(f"{origin}: line {line_no}", "has more cells than the header")
            if all(not (v or "").strip() for v in row.values()):
                continue
            rows.append((line_no, {k: (v or "").strip() for k, v in row.items()}))
    except csv.Error as exc:  # a cell over the csv module's limit, a NUL byte: the line, in words
        raise CatalogError(f"{origin}: line {reader.line_num + 1}", csv_problem(exc)) from None
    return meta, rows


def read_catalog_file(
    path: str | os.PathLike[str],
    kind: str,
    supported_versions: Iterable[int],
    required_columns: Iterable[str],
) -> tuple[CatalogMeta, list[tuple[int, dict[str, str]]]]:
    """Read a catalog file from disk; errors name the file (by its name only) and line."""
    p = Path(path)
    origin = p.name
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise CatalogError(origin, "file not found") from None
    except OSError as exc:
        raise CatalogError(origin, f"cannot be read ({exc.strerror})") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise CatalogError(origin, "is not UTF-8 text") from None
    return read_catalog_text(text, origin, kind, supported_versions, required_columns)


class RowReader:
    """Typed access to one catalog row; every error names file, line and column."""

    def __init__(self, origin: str, line: int, row: dict[str, str]) -> None:
        self.origin, self.line, self.row = origin, line, row

    def where(self, column: str) -> str:
        return f"{self.origin}: line {self.line}, column {column}"

    def text(self, column: str, required: bool = True) -> str:
        value = self.row.get(column, "")
        if required and not value:
            raise CatalogError(self.where(column), "is required")
        return value

    def number(
        self, column: str, required: bool = True, positive: bool = True, minimum: float | None = None
    ) -> float | None:
        value = self.row.get(column, "")
        if not value:
            if required:
                raise CatalogError(self.where(column), "is required")
            return None
        try:
            number = float(value.replace(",", "").replace("_", ""))
        except ValueError:
            raise CatalogError(self.where(column), "is not a number", value) from None
        if number != number or number in (float("inf"), float("-inf")):
            raise CatalogError(self.where(column), "is not a finite number", value)
        if positive and number <= 0:
            raise CatalogError(self.where(column), "must be > 0", value)
        if minimum is not None and number < minimum:
            raise CatalogError(self.where(column), f"must be >= {minimum:g}", value)
        return number

    def integer(self, column: str, required: bool = True, minimum: int = 1) -> int | None:
        number = self.number(column, required=required, positive=False, minimum=minimum)
        if number is None:
            return None
        if number != int(number):
            raise CatalogError(self.where(column), "must be a whole number", self.row.get(column))
        return int(number)

    def boolean(self, column: str, default: bool = False) -> bool:
        value = self.row.get(column, "").lower()
        if not value:
            return default
        if value in ("true", "yes", "1"):
            return True
        if value in ("false", "no", "0"):
            return False
        raise CatalogError(self.where(column), "must be true or false", self.row.get(column))


def parse_rows(
    meta: CatalogMeta,
    rows: list[tuple[int, dict[str, str]]],
    parse: Callable[[RowReader], T],
    id_of: Callable[[T], str],
) -> dict[str, T]:
    """Parse every row with ``parse`` and check that ids are unique."""
    out: dict[str, T] = {}
    for line, row in rows:
        item = parse(RowReader(meta.origin, line, row))
        key = id_of(item)
        if key in out:
            raise CatalogError(f"{meta.origin}: line {line}, column id", "duplicates an earlier row", key)
        out[key] = item
    return out
