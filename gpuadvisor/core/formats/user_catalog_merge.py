"""Three-way merge of the user's catalog edits, so that two programs saving at once lose nothing.

A window opens the user catalog (``base``), the user edits it (``ours``), and meanwhile another
window or a ``gpuadvisor-cli catalog import`` saved its own change (``theirs``, on disk now).
Saving ``ours`` as it is would undo ``theirs``. :func:`merge_user_catalogs` keeps both::

    for every cell (id, column) of the overrides, every added row (by id) and every hidden id:
        ours differs from base  ->  ours   (this program changed it: its value, or its removal)
        otherwise               ->  theirs (untouched here: whatever the other program left)

When both changed the same cell, the later save (ours) wins, as with any editor. Rows are kept in
the order ``theirs`` has them, with rows only ``ours`` added appended in its order.

:func:`rebase_rows` is the same merge for an editor's table: once the editor shows a merged save,
every table its undo stack would put back is moved onto the merged edits the same way (the rows the
other program changed come along), so undo takes back the editor's own edits and nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from ..errors import CatalogError
from .user_catalog import KINDS, KindEdits, UserCatalog, diff, merge

K = TypeVar("K")
V = TypeVar("V")


def _pick(base: Mapping[K, V], ours: Mapping[K, V], theirs: dict[K, V]) -> None:
    """Apply to ``theirs`` every key whose value (or absence) differs between ``base`` and ``ours``."""
    for key in {*base, *ours}:
        if ours.get(key) != base.get(key):
            if key in ours:
                theirs[key] = ours[key]
            else:
                theirs.pop(key, None)


def _cells(overrides: Mapping[str, Mapping[str, str]]) -> dict[tuple[str, str], str]:
    return {(row_id, col): value for row_id, row in overrides.items() for col, value in row.items()}


def _by_id(rows: tuple[Mapping[str, str], ...]) -> dict[str, dict[str, str]]:
    return {r.get("id", ""): dict(r) for r in rows}


def merge_kind(base: KindEdits, ours: KindEdits, theirs: KindEdits) -> KindEdits:
    """The edits of one kind merged cell by cell (see the module docstring)."""
    cells = _cells(theirs.overrides)
    _pick(_cells(base.overrides), _cells(ours.overrides), cells)
    overrides: dict[str, dict[str, str]] = {}
    for (row_id, col), value in cells.items():
        overrides.setdefault(row_id, {})[col] = value

    added = _by_id(theirs.added)
    _pick(_by_id(base.added), _by_id(ours.added), added)
    order = [r.get("id", "") for r in (*theirs.added, *ours.added)]
    rows = tuple(added[i] for i in dict.fromkeys(order) if i in added)

    hidden = dict.fromkeys(theirs.deleted, True)
    _pick(dict.fromkeys(base.deleted, True), dict.fromkeys(ours.deleted, True), hidden)
    deleted = tuple(d for d in dict.fromkeys((*theirs.deleted, *ours.deleted)) if d in hidden)
    return KindEdits(overrides=overrides, added=rows, deleted=deleted)


def merge_user_catalogs(base: UserCatalog, ours: UserCatalog, theirs: UserCatalog) -> UserCatalog:
    """``theirs`` with every change ``ours`` made since ``base`` (see the module docstring)."""
    merged = theirs
    for kind in KINDS:
        merged = merged.with_edits(kind, merge_kind(base.edits(kind), ours.edits(kind), theirs.edits(kind)))
    return merged


def same_edits(a: UserCatalog, b: UserCatalog) -> bool:
    """True when ``a`` and ``b`` hold the same edits (the save stamp aside)."""
    return all(a.edits(kind) == b.edits(kind) for kind in KINDS)


def rebase_rows(
    kind: str, rows: list[dict[str, str]], base: KindEdits, theirs: KindEdits
) -> list[dict[str, str]]:
    """An editor's table ``rows`` of ``kind``, made when its edits were ``base``, moved onto
    ``theirs`` (the merged edits it now shows): every change ``rows`` holds against ``base`` over
    ``theirs`` (see the module docstring). A table whose ids are missing or repeated (which the
    editor refuses before they happen) is returned as it is."""
    try:
        ours = diff(kind, rows)
    except CatalogError:
        return rows
    merged, _warnings = merge(kind, merge_kind(base, ours, theirs))
    return [dict(m.row) for m in merged]
