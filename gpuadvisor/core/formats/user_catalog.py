"""The user's own GPU and model catalogs, stored as edits on top of the bundled ones.

The bundled catalogs (``catalogs/gpus.csv``, ``catalogs/models.csv``) are read-only. What the
user changes is kept as *edits* per catalog kind (:class:`KindEdits`):

* ``overrides``: bundled id -> only the columns the user changed (CSV text);
* ``added``: full rows of ids the user added, in the user's order;
* ``deleted``: bundled ids the user hid.

Because only changed cells are stored, a newer bundled catalog still reaches every row and
every cell the user did not touch. :func:`merge` applies edits to the bundled rows and gives
the full table an editor shows (:class:`MergedRow`, with a status per row and the changed
columns); :func:`diff` is its inverse and turns the edited table back into minimal edits::

    rows, warnings = merge("gpus", user.gpus)
    table = [r.row for r in rows]           # ... edited by the user ...
    user = user.with_edits("gpus", diff("gpus", table))

    merge(kind, diff(kind, table))[0] rows == table   (bundled ids in bundle order, then added)

Every value is the cell's CSV text (``"700"``, ``""`` for empty), so an export writes back
exactly what was typed. :func:`validate_row` parses a row with the bundled catalog's parser
plus plausibility checks (see ``GPU_RATIO_LIMITS`` and :func:`validate_row`), and
:func:`build_catalogs` turns the merged tables into the typed catalogs the estimator uses,
skipping an invalid row with a warning rather than failing. :func:`dumps` / :func:`loads`
read and write the versioned JSON file that holds the edits (the storage layer decides where).

References: ``docs/catalog.md`` ("Your own catalog (user edits)") for the file format and the
rules; the bundled catalogs' columns are described there too.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from types import MappingProxyType
from typing import Any, Literal

from ..errors import CatalogError, short_key
from ..files import parse_json
from ..specs.catalog_io import CatalogMeta
from ..specs.hardware import GpuCatalog, GpuSpec
from ..specs.presets import ModelCatalog

# The rows as text and their checks live in catalog_rows; re-exported here for the editor and the CLI.
from .catalog_rows import CLOUD_COLUMNS as CLOUD_COLUMNS
from .catalog_rows import GPU_RATIO_LIMITS as GPU_RATIO_LIMITS
from .catalog_rows import ID_PATTERN as ID_PATTERN
from .catalog_rows import KINDS as KINDS
from .catalog_rows import MAX_CLOUD_USD_PER_HOUR as MAX_CLOUD_USD_PER_HOUR
from .catalog_rows import MAX_PCIE_GEN as MAX_PCIE_GEN
from .catalog_rows import MODEL_MAXIMA as MODEL_MAXIMA
from .catalog_rows import PRICE_COLUMNS as PRICE_COLUMNS
from .catalog_rows import PUBLISHED_PARAMS_FACTOR as PUBLISHED_PARAMS_FACTOR
from .catalog_rows import TDP_W_RANGE as TDP_W_RANGE
from .catalog_rows import bundled_meta as bundled_meta
from .catalog_rows import bundled_rows as bundled_rows
from .catalog_rows import bundled_table
from .catalog_rows import check_kind as check_kind
from .catalog_rows import columns as columns
from .catalog_rows import describe_error as describe_error
from .catalog_rows import error_column as error_column
from .catalog_rows import full_row as full_row
from .catalog_rows import validate_row as validate_row

USER_CATALOG_FORMAT = "gpuadvisor-user-catalog"
USER_CATALOG_SCHEMA_VERSIONS = (1,)
USER_CATALOG_SCHEMA_VERSION = USER_CATALOG_SCHEMA_VERSIONS[-1]


# --- edits ----------------------------------------------------------------------------------------
def _frozen_row(row: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(row))


@dataclass(frozen=True)
class KindEdits:
    """The user's edits to one catalog kind (all values are CSV text).

    ``overrides``: bundled id -> only the changed columns; ``added``: full rows of ids the user
    added, in order; ``deleted``: bundled ids the user hid. The mappings are read-only copies.
    """

    overrides: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    added: tuple[Mapping[str, str], ...] = ()
    deleted: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "overrides", MappingProxyType({str(k): _frozen_row(v) for k, v in self.overrides.items()})
        )
        object.__setattr__(self, "added", tuple(_frozen_row(r) for r in self.added))
        object.__setattr__(self, "deleted", tuple(dict.fromkeys(self.deleted)))

    @property
    def is_empty(self) -> bool:
        """True when there are no edits at all."""
        return not (self.overrides or self.added or self.deleted)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dicts and lists."""
        return {
            "overrides": {k: dict(v) for k, v in self.overrides.items()},
            "added": [dict(r) for r in self.added],
            "deleted": list(self.deleted),
        }


@dataclass(frozen=True)
class UserCatalog:
    """The user's edits to both catalogs; ``saved`` is the ISO timestamp of the last save, or ``""``."""

    gpus: KindEdits = field(default_factory=KindEdits)
    models: KindEdits = field(default_factory=KindEdits)
    saved: str = ""

    @classmethod
    def empty(cls) -> UserCatalog:
        """No edits: the effective catalogs are the bundled ones."""
        return cls()

    def edits(self, kind: str) -> KindEdits:
        """The edits of ``kind`` (``"gpus"`` or ``"models"``)."""
        check_kind(kind)
        return self.gpus if kind == "gpus" else self.models

    def with_edits(self, kind: str, edits: KindEdits) -> UserCatalog:
        """A copy with the edits of ``kind`` replaced."""
        check_kind(kind)
        if kind == "gpus":
            return UserCatalog(gpus=edits, models=self.models, saved=self.saved)
        return UserCatalog(gpus=self.gpus, models=edits, saved=self.saved)

    @property
    def is_empty(self) -> bool:
        """True when neither catalog has edits."""
        return self.gpus.is_empty and self.models.is_empty


# --- merge and diff -------------------------------------------------------------------------------
RowStatus = Literal["bundled", "modified", "added"]


@dataclass(frozen=True)
class MergedRow:
    """One row of the effective table.

    ``row`` holds every canonical column; ``status`` is ``"bundled"`` (as shipped),
    ``"modified"`` (a bundled row with user changes) or ``"added"`` (the user's own id);
    ``changed`` the columns that differ from the bundled row (every column for an added row);
    ``bundled`` the bundled row (for "reset to bundled"), None for added rows.
    """

    id: str
    row: dict[str, str]
    status: RowStatus
    changed: frozenset[str] = frozenset()
    bundled: dict[str, str] | None = None


def _changed(row: Mapping[str, str], base: Mapping[str, str], cols: Sequence[str]) -> frozenset[str]:
    return frozenset(c for c in cols if row.get(c, "") != base.get(c, ""))


def merge(
    kind: str, edits: KindEdits, bundled: Sequence[Mapping[str, str]] | None = None
) -> tuple[list[MergedRow], list[str]]:
    """Apply ``edits`` to the bundled rows (default: :func:`bundled_rows`); return rows and warnings.

    Order: bundled rows in bundle order with their overrides, minus deleted ids, then added rows
    in the user's order. Never raises for stale edits; it warns instead, for an override of an
    id the bundle no longer has (the override is not applied, and is dropped at the next
    :func:`diff`), an override of an unknown column or of ``id`` (ignored), and an added row
    whose id the bundle now also has (the user's row takes the bundled row's place and shows as
    ``"modified"``, so the next :func:`diff` stores it as an override).
    """
    check_kind(kind)
    cols = columns(kind)
    base_rows = [full_row(kind, r) for r in (bundled if bundled is not None else bundled_rows(kind))]
    base_ids = {r["id"] for r in base_rows}
    warnings: list[str] = []
    added_by_id: dict[str, Mapping[str, str]] = {}
    for added in edits.added:
        unknown = sorted(set(added) - set(cols))
        if unknown:
            warnings.append(
                f"{kind}: your row {added.get('id', '')!r} has unknown column(s) "
                f"{', '.join(unknown)}; they are ignored"
            )
        if added.get("id", "") in base_ids and added.get("id", "") not in added_by_id:
            added_by_id[added["id"]] = added
    deleted = set(edits.deleted)
    out: list[MergedRow] = []
    for base in base_rows:
        row_id = base["id"]
        override = edits.overrides.get(row_id)
        if row_id in added_by_id:
            warnings.append(
                f"{kind}: the bundled catalog now has {row_id!r}, which you added yourself; your row is used"
            )
            if override:
                warnings.append(
                    f"{kind}: your changes to the bundled row {row_id!r} are ignored "
                    "because you also added a row with that id"
                )
            row = full_row(kind, added_by_id[row_id])
        elif row_id in deleted:
            continue
        else:
            row = dict(base)
            for column, value in (override or {}).items():
                if column == "id":
                    warnings.append(
                        f"{kind}: a change of the id of {row_id!r} is ignored (ids cannot be renamed)"
                    )
                elif column not in row:
                    warnings.append(f"{kind}: a change to {row_id!r} in unknown column {column!r} is ignored")
                else:
                    row[column] = value
        changed = _changed(row, base, cols)
        out.append(
            MergedRow(
                id=row_id,
                row=row,
                status="modified" if changed else "bundled",
                changed=changed,
                bundled=dict(base),
            )
        )
    for row_id, override in edits.overrides.items():
        if row_id not in base_ids:
            warnings.append(
                f"{kind}: your changes to {row_id!r} ({', '.join(override) or 'no columns'}) are "
                "not applied: the bundled catalog no longer has that id"
            )
    for added in edits.added:
        row_id = added.get("id", "")
        if row_id in base_ids and added_by_id.get(row_id) is added:
            continue
        row = full_row(kind, added)
        out.append(MergedRow(id=row_id, row=row, status="added", changed=frozenset(cols), bundled=None))
    return out, warnings


def diff(
    kind: str, rows: Sequence[Mapping[str, str]], bundled: Sequence[Mapping[str, str]] | None = None
) -> KindEdits:
    """The minimal edits that turn the bundled rows into ``rows`` (the editor's full table).

    A row equal to its bundled row gives no override; a bundled id missing from ``rows`` is
    deleted; other ids are added, as full rows, in the order given. Columns missing from a row
    count as empty; keys that are not canonical columns are ignored. Raises
    :class:`CatalogError` when an id is empty or appears twice (``rows[3].id``).
    """
    check_kind(kind)
    cols = columns(kind)
    source = bundled if bundled is not None else bundled_rows(kind)
    base = {r["id"]: r for r in (full_row(kind, b) for b in source)}
    seen: dict[str, int] = {}
    overrides: dict[str, dict[str, str]] = {}
    added: list[dict[str, str]] = []
    for index, raw in enumerate(rows):
        row = full_row(kind, raw)
        row_id = row["id"]
        if not row_id:
            raise CatalogError(f"rows[{index}].id", "is required (every row needs an id before saving)")
        if row_id in seen:
            raise CatalogError(f"rows[{index}].id", f"duplicates rows[{seen[row_id]}]", row_id)
        seen[row_id] = index
        if row_id in base:
            changes = {c: row[c] for c in cols if row[c] != base[row_id][c]}
            if changes:
                overrides[row_id] = changes
        else:
            added.append(row)
    ordered = {k: overrides[k] for k in base if k in overrides}
    deleted = tuple(k for k in base if k not in seen)
    return KindEdits(overrides=ordered, added=tuple(added), deleted=deleted)


def changed_row_count(kind: str, edits: KindEdits, bundled: Sequence[Mapping[str, str]] | None = None) -> int:
    """How many rows differ from the bundle: modified, added and hidden ones."""
    rows, _ = merge(kind, edits, bundled)
    base_ids = {r.get("id", "") for r in (bundled if bundled is not None else bundled_rows(kind))}
    hidden = sum(1 for d in edits.deleted if d in base_ids and d not in {r.id for r in rows})
    return sum(1 for r in rows if r.status != "bundled") + hidden


# --- the effective catalogs -----------------------------------------------------------------------
@cache
def _bundled_specs(kind: str) -> Mapping[str, Any]:
    """The bundled rows parsed and validated once per process (they never change at run time)."""
    out: dict[str, Any] = {}
    for row in bundled_table(kind)[2]:
        try:
            out[row["id"]] = validate_row(kind, row, origin=kind)
        except CatalogError:
            continue  # not expected (a test checks every bundled row); such a row is re-checked below
    return MappingProxyType(out)


def _validated(kind: str, edits: KindEdits, warnings: list[str]) -> tuple[dict[str, Any], CatalogMeta]:
    rows, merge_warnings = merge(kind, edits)
    warnings.extend(merge_warnings)
    items: dict[str, Any] = {}
    bundled_specs = _bundled_specs(kind)
    for merged in rows:
        if merged.status == "bundled" and merged.id in bundled_specs and merged.id not in items:
            items[merged.id] = bundled_specs[merged.id]  # untouched: checked once at first use
            continue
        try:
            spec = validate_row(kind, merged.row, origin=kind)
        except CatalogError as exc:
            warnings.append(f"{kind}: row {merged.id or '(no id)'} skipped: {describe_error(exc)}")
            continue
        if spec.id in items:
            warnings.append(f"{kind}: row {spec.id} skipped: column id: duplicates an earlier row")
            continue
        items[spec.id] = spec
    base = bundled_meta(kind)
    changed = changed_row_count(kind, edits)
    origin = (
        base.origin
        if edits.is_empty
        else (f"bundled catalog + user edits ({changed} changed row{'s' if changed != 1 else ''})")
    )
    meta = CatalogMeta(kind=kind, schema_version=base.schema_version, updated=base.updated, origin=origin)
    return items, meta


def build_catalogs(user: UserCatalog) -> tuple[GpuCatalog, ModelCatalog, list[str]]:
    """The effective GPU and model catalogs (bundled + ``user``) and warnings to show once.

    A merged row that does not validate is left out with a warning naming its id, the column
    and the rule; this never raises for a single bad row. Raises :class:`CatalogError` only
    when no GPU would remain. The catalogs' ``meta.origin`` says
    ``bundled catalog + user edits (N changed rows)`` when there are edits.
    """
    warnings: list[str] = []
    gpus, gpu_meta = _validated("gpus", user.gpus, warnings)
    models, model_meta = _validated("models", user.models, warnings)
    if not gpus:
        raise CatalogError(
            "user catalog", "leaves no valid GPU row (restore a backup or reset the GPU catalog)"
        )
    return GpuCatalog(gpus=gpus, meta=gpu_meta), ModelCatalog(models=models, meta=model_meta), warnings


# --- the JSON file ------------------------------------------------------------------------------
def dumps(user: UserCatalog) -> str:
    """The user catalog as versioned JSON text (UTF-8, indented, ending with a newline)."""
    data = {
        "format": USER_CATALOG_FORMAT,
        "schema_version": USER_CATALOG_SCHEMA_VERSION,
        "saved": user.saved,
        "gpus": user.gpus.to_dict(),
        "models": user.models.to_dict(),
    }
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _json_kind(value: object) -> str:
    kinds = {list: "a list", dict: "an object", str: "text", type(None): "null", bool: "true/false"}
    return kinds.get(type(value), "a number")


def _string_row(origin: str, path: str, value: object) -> dict[str, str]:
    if not isinstance(value, dict):
        raise CatalogError(
            f"{origin}: {path}", f"must be an object of column -> text, not {_json_kind(value)}"
        )
    for column, cell in value.items():
        if not isinstance(cell, str):
            raise CatalogError(
                f"{origin}: {path}.{column}", f"must be a string (the CSV text), not {_json_kind(cell)}", cell
            )
    return dict(value)


def _kind_from_json(origin: str, kind: str, value: object) -> KindEdits:
    if not isinstance(value, dict):
        raise CatalogError(
            f"{origin}: {kind}",
            f"must be an object with overrides, added and deleted, not {_json_kind(value)}",
        )
    unknown = sorted(set(value) - {"overrides", "added", "deleted"})
    if unknown:
        raise CatalogError(
            f"{origin}: {kind}.{short_key(unknown[0])}",
            "is not a known key (expected overrides, added, deleted)",
        )
    overrides = value.get("overrides", {})
    if not isinstance(overrides, dict):
        raise CatalogError(
            f"{origin}: {kind}.overrides",
            f"must be an object of id -> changed columns, not {_json_kind(overrides)}",
        )
    clean_overrides = {
        row_id: _string_row(origin, f"{kind}.overrides.{row_id}", cells)
        for row_id, cells in overrides.items()
    }
    added = value.get("added", [])
    if not isinstance(added, list):
        raise CatalogError(f"{origin}: {kind}.added", f"must be a list of rows, not {_json_kind(added)}")
    clean_added = [_string_row(origin, f"{kind}.added[{i}]", row) for i, row in enumerate(added)]
    deleted = value.get("deleted", [])
    if not isinstance(deleted, list):
        raise CatalogError(f"{origin}: {kind}.deleted", f"must be a list of ids, not {_json_kind(deleted)}")
    for i, row_id in enumerate(deleted):
        if not isinstance(row_id, str):
            raise CatalogError(
                f"{origin}: {kind}.deleted[{i}]",
                f"must be a string (an id), not {_json_kind(row_id)}",
                row_id,
            )
    return KindEdits(overrides=clean_overrides, added=tuple(clean_added), deleted=tuple(deleted))


def loads(text: str | bytes, origin: str = "user catalog") -> UserCatalog:
    """Parse the JSON written by :func:`dumps`.

    Raises :class:`CatalogError` naming where the problem is: ``origin`` alone (empty, binary,
    not UTF-8), ``origin: line L, column C`` (invalid or truncated JSON), or the dotted key
    (``origin: gpus.overrides.h100-sxm.tdp_w: must be a string``); an unknown ``schema_version``
    names the supported ones.
    """
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise CatalogError(
                origin, f"is not UTF-8 text (undecodable byte at offset {exc.start})"
            ) from None
    text = text.removeprefix("\ufeff")
    if not text.strip():
        raise CatalogError(origin, "is empty")
    if "\x00" in text:
        raise CatalogError(origin, "contains binary data (it is not a JSON text file)")
    data = parse_json(text, origin, error=CatalogError)
    if not isinstance(data, dict):
        raise CatalogError(origin, f"must hold a JSON object, not {_json_kind(data)}")
    if data.get("format") != USER_CATALOG_FORMAT:
        raise CatalogError(
            f"{origin}: format",
            f"must be {USER_CATALOG_FORMAT!r} (this is not a gpuadvisor user catalog file)",
            data.get("format"),
        )
    version = data.get("schema_version")
    supported = ", ".join(map(str, USER_CATALOG_SCHEMA_VERSIONS))
    if not isinstance(version, int) or isinstance(version, bool):
        raise CatalogError(
            f"{origin}: schema_version", f"must be a whole number (supported: {supported})", version
        )
    if version not in USER_CATALOG_SCHEMA_VERSIONS:
        newer = " (written by a newer gpuadvisor?)" if version > USER_CATALOG_SCHEMA_VERSION else ""
        raise CatalogError(
            f"{origin}: schema_version",
            f"{version} is not supported by this version of gpuadvisor{newer}; supported: {supported}",
        )
    unknown = sorted(set(data) - {"format", "schema_version", "saved", *KINDS})
    if unknown:
        raise CatalogError(
            f"{origin}: {unknown[0]}",
            "is not a known key (expected format, schema_version, saved, gpus, models)",
        )
    saved = data.get("saved", "")
    if not isinstance(saved, str):
        raise CatalogError(
            f"{origin}: saved", f"must be a string (an ISO timestamp), not {_json_kind(saved)}", saved
        )
    return UserCatalog(
        gpus=_kind_from_json(origin, "gpus", data.get("gpus", {})),
        models=_kind_from_json(origin, "models", data.get("models", {})),
        saved=saved,
    )


# --- price age ------------------------------------------------------------------------------------
def _price_date(row_or_spec: Mapping[str, str] | GpuSpec) -> _dt.date | None:
    text = row_or_spec.price_as_of if isinstance(row_or_spec, GpuSpec) else row_or_spec.get("price_as_of", "")
    try:
        return _dt.date.fromisoformat((text or "").strip())
    except ValueError:
        return None


def _has_price(row_or_spec: Mapping[str, str] | GpuSpec) -> bool:
    if isinstance(row_or_spec, GpuSpec):
        spec = row_or_spec
        return bool(spec.cloud_usd_per_hour or spec.purchase_new_usd or spec.purchase_used_usd)
    return any((row_or_spec.get(c, "") or "").strip() for c in PRICE_COLUMNS)


def months_before(day: _dt.date, months: int) -> _dt.date:
    """The same day ``months`` calendar months earlier (clamped to the month's last day)."""
    total = day.year * 12 + (day.month - 1) - months
    year, month = divmod(total, 12)
    month += 1
    for d in (day.day, 30, 29, 28):
        try:
            return _dt.date(year, month, d)
        except ValueError:
            continue
    raise ValueError(day)  # pragma: no cover - day 28 always exists


def price_age_days(row_or_spec: Mapping[str, str] | GpuSpec, today: _dt.date) -> int | None:
    """Days from ``price_as_of`` to ``today`` (a GPU row or spec); None when undated or not a date."""
    day = _price_date(row_or_spec)
    return None if day is None else (today - day).days


def stale_price(row_or_spec: Mapping[str, str] | GpuSpec, today: _dt.date, months: int) -> bool:
    """True when a GPU's prices are older than ``months`` calendar months before ``today``.

    The report uses the same rule (:func:`months_before`). A row with prices but
    no valid ``price_as_of`` is stale; a row without any price is not (there is nothing to date).
    """
    if not _has_price(row_or_spec):
        return False
    day = _price_date(row_or_spec)
    return day is None or day < months_before(today, months)
