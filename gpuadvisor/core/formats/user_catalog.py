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
import re
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType
from typing import Any, Literal, Mapping, Sequence

from ..specs.catalog_io import CatalogMeta, RowReader, read_catalog_file
from ..errors import CatalogError
from ..specs.hardware import (GPU_REQUIRED_COLUMNS, GPU_SCHEMA_VERSIONS, GpuCatalog, GpuSpec, bundled_catalog_dir,
                       parse_gpu_row)
from ..specs.models import ModelSpec
from ..specs.presets import MODEL_REQUIRED_COLUMNS, MODEL_SCHEMA_VERSIONS, ModelCatalog, parse_model_row

KINDS: tuple[str, ...] = ("gpus", "models")

USER_CATALOG_FORMAT = "gpuadvisor-user-catalog"
USER_CATALOG_SCHEMA_VERSIONS = (1,)
USER_CATALOG_SCHEMA_VERSION = USER_CATALOG_SCHEMA_VERSIONS[-1]

#: Ids: a lowercase letter or digit, then lowercase letters, digits, ``.``, ``_``, ``+`` or ``-``.
ID_PATTERN = re.compile(r"[a-z0-9][a-z0-9._+-]*\Z")
_ID_RULE = "must be a lowercase letter or digit followed by lowercase letters, digits, '.', '_', '+' or '-'"
_DATE_PATTERN = re.compile(r"\d{4}-\d{2}-\d{2}\Z")

#: Tensor-core throughput columns and the most each may be, as a multiple of fp16_dense_tflops.
#: Lower precisions run at most 2x per halving of the bits on every GPU so far (FP8 2x, FP4 4x
#: of FP16 on Blackwell); the limits leave one more factor of 2 for sparse figures typed by mistake
#: to be caught while nothing real is rejected.
GPU_RATIO_LIMITS: tuple[tuple[str, float], ...] = (
    ("tf32_dense_tflops", 1.0), ("bf16_dense_tflops", 2.0), ("fp8_dense_tflops", 4.0),
    ("int8_dense_tops", 8.0), ("fp4_dense_tflops", 8.0),
)
TDP_W_RANGE = (5.0, 5000.0)
MAX_CLOUD_USD_PER_HOUR = 1000.0
MAX_PCIE_GEN = 7
#: A model's parameter count computed from its shapes must be within this factor of published_params.
PUBLISHED_PARAMS_FACTOR = 1.5
MODEL_MAXIMA: tuple[tuple[str, int], ...] = (
    ("num_layers", 2000), ("hidden_size", 262_144), ("vocab_size", 4_000_000), ("max_context", 100_000_000),
)

_CLOUD_COLUMNS = ("cloud_usd_per_hour_low", "cloud_usd_per_hour_expected", "cloud_usd_per_hour_high")
_PRICE_COLUMNS = _CLOUD_COLUMNS + ("purchase_new_usd_low", "purchase_new_usd_high", "purchase_used_usd_low",
                                   "purchase_used_usd_high")


def check_kind(kind: str) -> None:
    """Raise CatalogError unless ``kind`` is ``"gpus"`` or ``"models"``."""
    if kind not in KINDS:
        raise CatalogError("kind", f"must be one of {', '.join(KINDS)}", kind)


# --- the bundled catalogs as text rows ----------------------------------------------------------
@lru_cache(maxsize=None)
def _bundled(kind: str) -> tuple[CatalogMeta, tuple[str, ...], tuple[Mapping[str, str], ...]]:
    """(meta, header, rows) of a bundled catalog file, read once per process."""
    if kind == "gpus":
        versions, required = GPU_SCHEMA_VERSIONS, GPU_REQUIRED_COLUMNS
    else:
        versions, required = MODEL_SCHEMA_VERSIONS, MODEL_REQUIRED_COLUMNS
    meta, rows = read_catalog_file(bundled_catalog_dir() / f"{kind}.csv", kind, versions, required)
    header = tuple(rows[0][1]) if rows else tuple(required)
    return meta, header, tuple(MappingProxyType(dict(row)) for _, row in rows)


def columns(kind: str) -> tuple[str, ...]:
    """The canonical column order of a catalog kind: the bundled file's header."""
    check_kind(kind)
    return _bundled(kind)[1]


def bundled_rows(kind: str) -> list[dict[str, str]]:
    """The bundled rows as ``column -> CSV text`` dicts, in file order (fresh copies; cached read)."""
    check_kind(kind)
    return [dict(row) for row in _bundled(kind)[2]]


def bundled_meta(kind: str) -> CatalogMeta:
    """The metadata line of a bundled catalog (kind, schema version, updated date)."""
    check_kind(kind)
    return _bundled(kind)[0]


def full_row(kind: str, row: Mapping[str, str]) -> dict[str, str]:
    """``row`` with every canonical column, in order (missing ones ``""``; other keys dropped)."""
    return {c: row.get(c, "") or "" for c in columns(kind)}


# --- validation -----------------------------------------------------------------------------------
class _Reader(RowReader):
    """A RowReader whose locations say ``origin: line N`` or, without a line, ``origin: id X``."""

    def __init__(self, origin: str, line: int | None, row: dict[str, str]) -> None:
        super().__init__(origin, line or 0, row)
        self.has_line = line is not None

    def where(self, column: str) -> str:
        if self.has_line:
            return f"{self.origin}: line {self.line}, column {column}"
        row_id = self.row.get("id", "")
        return f"{self.origin}: id {row_id}, column {column}" if row_id else f"{self.origin}: column {column}"


def error_column(exc: CatalogError) -> str | None:
    """The column an error from :func:`validate_row` is about (``"tdp_w"``), or None.

    Every row error's ``field`` ends with ``column <name>``; an editor uses this to mark the cell.
    """
    match = re.search(r"column (\w+)\Z", exc.field)
    return match.group(1) if match else None


def describe_error(exc: CatalogError) -> str:
    """A row error without its location prefix: ``column tdp_w: must be > 0 (got '-5')``."""
    column = error_column(exc)
    shown = "" if exc.value is None else f" (got {exc.value!r})"
    return f"{'column ' + column + ': ' if column else ''}{exc.reason}{shown}"


def _number(r: RowReader, column: str) -> float | None:
    return r.number(column, required=False, positive=False)


def _check_date(r: RowReader, column: str, today: _dt.date) -> None:
    value = r.row.get(column, "")
    if not value:
        return
    try:
        if not _DATE_PATTERN.match(value):
            raise ValueError(value)
        day = _dt.date.fromisoformat(value)
    except ValueError:
        raise CatalogError(r.where(column), "must be an ISO date YYYY-MM-DD", value) from None
    if day > today + _dt.timedelta(days=1):
        raise CatalogError(r.where(column), f"must not be in the future (today is {today.isoformat()})",
                           value)


def _check_gpu(r: RowReader, spec: GpuSpec, today: _dt.date) -> None:
    low, high = TDP_W_RANGE
    if not low <= spec.tdp_w <= high:
        raise CatalogError(r.where("tdp_w"), f"must be between {low:g} and {high:g} W", r.row.get("tdp_w"))
    if spec.memory_gb is not None and spec.memory_gib_usable > spec.memory_gb * 1.001:
        raise CatalogError(r.where("memory_gib_usable"),
                           f"must not exceed memory_gb ({spec.memory_gb:g}): usable GiB are at most the "
                           "marketed GB",
                           r.row.get("memory_gib_usable"))
    for column, limit in GPU_RATIO_LIMITS:
        value = getattr(spec, column)
        if value is not None and value > spec.fp16_dense_tflops * limit:
            raise CatalogError(r.where(column),
                               f"must be at most {limit:g}x fp16_dense_tflops ({spec.fp16_dense_tflops:g}); "
                               "is it a sparse figure?", r.row.get(column))
    if spec.pcie_gen is not None and spec.pcie_gen > MAX_PCIE_GEN:
        raise CatalogError(r.where("pcie_gen"), f"must be 1 to {MAX_PCIE_GEN}", r.row.get("pcie_gen"))
    if spec.launch_year is not None and spec.launch_year > today.year + 2:
        raise CatalogError(r.where("launch_year"), f"must not be after {today.year + 2}",
                           r.row.get("launch_year"))
    for column in _CLOUD_COLUMNS:
        value = _number(r, column)
        if value is not None and value > MAX_CLOUD_USD_PER_HOUR:
            rule = f"must be at most {MAX_CLOUD_USD_PER_HOUR:g} USD per GPU-hour"
            raise CatalogError(r.where(column), rule, r.row.get(column))
    _check_date(r, "price_as_of", today)


def _check_model(r: RowReader, spec: ModelSpec) -> None:
    for column, maximum in MODEL_MAXIMA:
        if getattr(spec, column) > maximum:
            raise CatalogError(r.where(column), f"must be at most {maximum:,}", r.row.get(column))
    published = spec.published_params
    if published is not None:
        computed = spec.parameters
        if not published / PUBLISHED_PARAMS_FACTOR <= computed <= published * PUBLISHED_PARAMS_FACTOR:
            raise CatalogError(r.where("published_params"),
                               f"must be within {PUBLISHED_PARAMS_FACTOR:g}x of the count computed from the "
                               f"architecture columns ({computed:,}); check num_layers, hidden_size and "
                               "intermediate_size", r.row.get("published_params"))
    active = r.integer("published_active_params", required=False)
    if active is not None and published is not None and active > published:
        raise CatalogError(r.where("published_active_params"), "must not exceed published_params",
                           r.row.get("published_active_params"))


def validate_row(kind: str, row: Mapping[str, str], origin: str = "user catalog", line: int | None = None, *,
                 today: _dt.date | None = None) -> GpuSpec | ModelSpec:
    """Parse one row (``column -> CSV text``) into a :class:`GpuSpec` or :class:`ModelSpec`.

    Values are stripped of surrounding spaces first; missing columns count as empty. Raises
    :class:`CatalogError` whose ``field`` ends with ``column <name>`` (see :func:`error_column`)
    and whose ``reason`` states the rule. Beyond the bundled parser's rules: the id's spelling
    (``ID_PATTERN``); for GPUs ``tdp_w`` within ``TDP_W_RANGE``, usable memory at most
    ``memory_gb``, lower-precision throughput within ``GPU_RATIO_LIMITS`` of FP16, ``pcie_gen``
    up to 7, ``launch_year`` at most two years ahead, cloud prices up to 1000 USD per GPU-hour,
    ``price_as_of`` an ISO date at most one day after ``today`` (default: the system date); for
    models upper bounds on shapes (``MODEL_MAXIMA``) and ``published_params`` within 1.5x of the
    count computed from the architecture.
    """
    check_kind(kind)
    today = today or _dt.date.today()
    clean = {k: (v or "").strip() for k, v in row.items() if isinstance(k, str) and isinstance(v, str)}
    r = _Reader(origin, line, clean)
    row_id = r.text("id")
    if not ID_PATTERN.match(row_id):
        raise CatalogError(r.where("id"), _ID_RULE, row_id)
    if kind == "gpus":
        gpu = parse_gpu_row(r)
        _check_gpu(r, gpu, today)
        return gpu
    model = parse_model_row(r)
    _check_model(r, model)
    return model


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
        object.__setattr__(self, "overrides", MappingProxyType(
            {str(k): _frozen_row(v) for k, v in self.overrides.items()}))
        object.__setattr__(self, "added", tuple(_frozen_row(r) for r in self.added))
        object.__setattr__(self, "deleted", tuple(dict.fromkeys(self.deleted)))

    @property
    def is_empty(self) -> bool:
        """True when there are no edits at all."""
        return not (self.overrides or self.added or self.deleted)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dicts and lists."""
        return {"overrides": {k: dict(v) for k, v in self.overrides.items()},
                "added": [dict(r) for r in self.added], "deleted": list(self.deleted)}


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


def merge(kind: str, edits: KindEdits, bundled: Sequence[Mapping[str, str]] | None = None
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
            warnings.append(f"{kind}: your row {added.get('id', '')!r} has unknown column(s) "
                            f"{', '.join(unknown)}; they are ignored")
        if added.get("id", "") in base_ids and added.get("id", "") not in added_by_id:
            added_by_id[added["id"]] = added
    deleted = set(edits.deleted)
    out: list[MergedRow] = []
    for base in base_rows:
        row_id = base["id"]
        override = edits.overrides.get(row_id)
        if row_id in added_by_id:
            warnings.append(f"{kind}: the bundled catalog now has {row_id!r}, which you added yourself; "
                            "your row is used")
            if override:
                warnings.append(f"{kind}: your changes to the bundled row {row_id!r} are ignored "
                                "because you also added a row with that id")
            row = full_row(kind, added_by_id[row_id])
        elif row_id in deleted:
            continue
        else:
            row = dict(base)
            for column, value in (override or {}).items():
                if column == "id":
                    warnings.append(f"{kind}: a change of the id of {row_id!r} is ignored "
                                    "(ids cannot be renamed)")
                elif column not in row:
                    warnings.append(f"{kind}: a change to {row_id!r} in unknown column {column!r} is ignored")
                else:
                    row[column] = value
        changed = _changed(row, base, cols)
        out.append(MergedRow(id=row_id, row=row, status="modified" if changed else "bundled", changed=changed,
                             bundled=dict(base)))
    for row_id, override in edits.overrides.items():
        if row_id not in base_ids:
            warnings.append(f"{kind}: your changes to {row_id!r} ({', '.join(override) or 'no columns'}) are "
                            "not applied: the bundled catalog no longer has that id")
    for added in edits.added:
        row_id = added.get("id", "")
        if row_id in base_ids and added_by_id.get(row_id) is added:
            continue
        row = full_row(kind, added)
        out.append(MergedRow(id=row_id, row=row, status="added", changed=frozenset(cols), bundled=None))
    return out, warnings


def diff(kind: str, rows: Sequence[Mapping[str, str]], bundled: Sequence[Mapping[str, str]] | None = None
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
@lru_cache(maxsize=None)
def _bundled_specs(kind: str) -> Mapping[str, Any]:
    """The bundled rows parsed and validated once per process (they never change at run time)."""
    out: dict[str, Any] = {}
    for row in _bundled(kind)[2]:
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
    origin = base.origin if edits.is_empty else (
        f"bundled catalog + user edits ({changed} changed row{'s' if changed != 1 else ''})")
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
        raise CatalogError("user catalog",
                           "leaves no valid GPU row (restore a backup or reset the GPU catalog)")
    return GpuCatalog(gpus=gpus, meta=gpu_meta), ModelCatalog(models=models, meta=model_meta), warnings


# --- the JSON file ------------------------------------------------------------------------------
def dumps(user: UserCatalog) -> str:
    """The user catalog as versioned JSON text (UTF-8, indented, ending with a newline)."""
    data = {"format": USER_CATALOG_FORMAT, "schema_version": USER_CATALOG_SCHEMA_VERSION, "saved": user.saved,
            "gpus": user.gpus.to_dict(), "models": user.models.to_dict()}
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _json_kind(value: object) -> str:
    kinds = {list: "a list", dict: "an object", str: "text", type(None): "null", bool: "true/false"}
    return kinds.get(type(value), "a number")


def _string_row(origin: str, path: str, value: object) -> dict[str, str]:
    if not isinstance(value, dict):
        raise CatalogError(f"{origin}: {path}",
                           f"must be an object of column -> text, not {_json_kind(value)}")
    for column, cell in value.items():
        if not isinstance(cell, str):
            raise CatalogError(f"{origin}: {path}.{column}",
                               f"must be a string (the CSV text), not {_json_kind(cell)}", cell)
    return dict(value)


def _kind_from_json(origin: str, kind: str, value: object) -> KindEdits:
    if not isinstance(value, dict):
        raise CatalogError(f"{origin}: {kind}", f"must be an object with overrides, added and deleted, "
                                                f"not {_json_kind(value)}")
    unknown = sorted(set(value) - {"overrides", "added", "deleted"})
    if unknown:
        raise CatalogError(f"{origin}: {kind}.{unknown[0]}", "is not a known key (expected overrides, added, "
                                                             "deleted)")
    overrides = value.get("overrides", {})
    if not isinstance(overrides, dict):
        raise CatalogError(f"{origin}: {kind}.overrides", f"must be an object of id -> changed columns, "
                                                          f"not {_json_kind(overrides)}")
    clean_overrides = {row_id: _string_row(origin, f"{kind}.overrides.{row_id}", cells)
                       for row_id, cells in overrides.items()}
    added = value.get("added", [])
    if not isinstance(added, list):
        raise CatalogError(f"{origin}: {kind}.added", f"must be a list of rows, not {_json_kind(added)}")
    clean_added = [_string_row(origin, f"{kind}.added[{i}]", row) for i, row in enumerate(added)]
    deleted = value.get("deleted", [])
    if not isinstance(deleted, list):
        raise CatalogError(f"{origin}: {kind}.deleted", f"must be a list of ids, not {_json_kind(deleted)}")
    for i, row_id in enumerate(deleted):
        if not isinstance(row_id, str):
            raise CatalogError(f"{origin}: {kind}.deleted[{i}]",
                               f"must be a string (an id), not {_json_kind(row_id)}", row_id)
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
            raise CatalogError(origin,
                               f"is not UTF-8 text (undecodable byte at offset {exc.start})") from None
    text = text.removeprefix("\ufeff")
    if not text.strip():
        raise CatalogError(origin, "is empty")
    if "\x00" in text:
        raise CatalogError(origin, "contains binary data (it is not a JSON text file)")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CatalogError(f"{origin}: line {exc.lineno}, column {exc.colno}",
                           f"is not valid JSON ({exc.msg}); the file may be truncated") from None
    except (ValueError, RecursionError) as exc:
        raise CatalogError(origin, f"is not valid JSON ({type(exc).__name__})") from None
    if not isinstance(data, dict):
        raise CatalogError(origin, f"must hold a JSON object, not {_json_kind(data)}")
    if data.get("format") != USER_CATALOG_FORMAT:
        raise CatalogError(f"{origin}: format", f"must be {USER_CATALOG_FORMAT!r} (this is not a gpuadvisor "
                                                "user catalog file)", data.get("format"))
    version = data.get("schema_version")
    supported = ", ".join(map(str, USER_CATALOG_SCHEMA_VERSIONS))
    if not isinstance(version, int) or isinstance(version, bool):
        raise CatalogError(f"{origin}: schema_version", f"must be a whole number (supported: {supported})",
                           version)
    if version not in USER_CATALOG_SCHEMA_VERSIONS:
        newer = " (written by a newer gpuadvisor?)" if version > USER_CATALOG_SCHEMA_VERSION else ""
        raise CatalogError(f"{origin}: schema_version",
                           f"{version} is not supported by this version of gpuadvisor{newer}; "
                           f"supported: {supported}")
    unknown = sorted(set(data) - {"format", "schema_version", "saved", *KINDS})
    if unknown:
        raise CatalogError(f"{origin}: {unknown[0]}",
                           "is not a known key (expected format, schema_version, saved, gpus, models)")
    saved = data.get("saved", "")
    if not isinstance(saved, str):
        raise CatalogError(f"{origin}: saved",
                           f"must be a string (an ISO timestamp), not {_json_kind(saved)}", saved)
    return UserCatalog(gpus=_kind_from_json(origin, "gpus", data.get("gpus", {})),
                       models=_kind_from_json(origin, "models", data.get("models", {})), saved=saved)


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
    return any((row_or_spec.get(c, "") or "").strip() for c in _PRICE_COLUMNS)


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
