"""The user's cloud instance snapshot: ``instances.csv`` in the user data folder.

Importing price lists (``gpuadvisor-cli prices import``, the catalog editor's "Import price
list…") saves the instance types they hold here, per provider; the effective snapshot is the
bundled one with the rows of every provider the user imported replaced by the user's
(:func:`~gpuadvisor.core.specs.instances.merge_instances`).

The file is kept as the other stored files are (:mod:`gpuadvisor.storage.locking`,
``docs/security.md``):

* **Loading never fails.** The file is read as untrusted input
  (:func:`~gpuadvisor.storage.stored_file.read_stored`: a regular file of at most 16 MB, the
  orphans of a killed save tidied first). A damaged one (not UTF-8, a bad row, an unknown schema
  version, a FIFO or folder in its place) is set aside as ``instances.csv.<tag>-<date>``, never
  deleted; a warning says why, and the bundled snapshot is used.
* **No lost import.** Every change is one read -> change -> write under the file's lock, and it
  replaces the rows of the providers it names only: an import of Lambda's list and one of AWS's
  at the same moment both stay, and the undo of one (:func:`put_provider_rows` with the rows it
  replaced) leaves the other's rows as they are.
* **Never half-written.** Writing is atomic and keeps the previous file as ``instances.csv.bak``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import CatalogError
from ..core.files import MAX_BYTES, FileKind
from ..core.specs.catalog_io import CatalogMeta
from ..core.specs.instances import (
    INSTANCE_SCHEMA_VERSIONS,
    InstanceCatalog,
    InstanceType,
    bundled_instances,
    dumps_instances,
    load_instance_catalog,
    merge_instances,
)
from .atomic import atomic_write_text, set_aside_and_say
from .errors import StorageError, os_reason
from .locking import locked
from .paths import UserPaths, ensure_dir, user_paths
from .stored_file import read_stored

INSTANCES_FILENAME = "instances.csv"
#: The guarded reader's kind (and size cap, 16 MB) for the user's instance list: a catalog file.
INSTANCES_KIND = FileKind.CATALOG

log = logging.getLogger(__name__)


def instances_file(paths: UserPaths | None = None) -> Path:
    """Where the user's imported instance types live: ``<data_dir>/instances.csv``."""
    return (paths or user_paths()).data_dir / INSTANCES_FILENAME


def _read(path: Path) -> tuple[InstanceCatalog | None, list[str]]:
    """The user's file at ``path`` (None when there is none, or it was damaged and set aside) and
    the warnings to show once; never raises."""
    try:
        raw = read_stored(path, INSTANCES_KIND, CatalogError)
    except CatalogError as exc:
        problem, tag = exc.reason, "unreadable"
    else:
        if raw is None:
            return None, []
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            problem, tag = "is not UTF-8 text", "corrupt"
        else:
            try:
                return load_instance_catalog(text=text), []
            except CatalogError as exc:
                problem = str(exc).removeprefix(f"{INSTANCES_FILENAME}: ")
                tag = "unsupported" if "schema_version" in problem else "corrupt"
    _kept, where = set_aside_and_say(path, tag)
    return None, [
        f"Your imported cloud instance list in {path} could not be read: {problem}. The bundled "
        f"one is used.{where}"
    ]


def load_user_instances(paths: UserPaths | None = None) -> tuple[InstanceCatalog | None, list[str]]:
    """The user's imported instance types (None when there are none) and warnings to show once."""
    return _read(instances_file(paths))


def load_instances(paths: UserPaths | None = None) -> tuple[InstanceCatalog, list[str]]:
    """The effective instance snapshot (bundled + the user's imports) and warnings to show once."""
    user, warnings = load_user_instances(paths)
    return _effective(user), warnings


def _effective(user: InstanceCatalog | None) -> InstanceCatalog:
    base = bundled_instances()
    if user is None or not len(user):
        return base
    return merge_instances(base, user.types, user.meta.updated)


def _empty() -> InstanceCatalog:
    return InstanceCatalog((), CatalogMeta("instances", INSTANCE_SCHEMA_VERSIONS[-1], "", INSTANCES_FILENAME))


def _replaced(
    user: InstanceCatalog, providers: Iterable[str], rows: Sequence[InstanceType], updated: str
) -> InstanceCatalog:
    """``user`` with the rows of ``providers`` replaced by ``rows`` (none: those providers go back
    to the bundled snapshot's rows); the other providers' rows as they are."""
    gone = set(providers) | {t.provider for t in rows}
    kept = tuple(t for t in user.types if t.provider not in gone)
    meta = CatalogMeta(
        "instances", INSTANCE_SCHEMA_VERSIONS[-1], max(updated, user.meta.updated), INSTANCES_FILENAME
    )
    return InstanceCatalog(kept + tuple(rows), meta)


def _write(path: Path, catalog: InstanceCatalog) -> Path:
    """Write ``catalog`` (the lock is held), or remove the file when it holds no row."""
    if not len(catalog):
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            raise StorageError(path.name, f"cannot remove {path.name}: {os_reason(exc)}", path=path) from exc
        return path
    text = dumps_instances(catalog)
    cap = MAX_BYTES[INSTANCES_KIND]
    if len(text.encode("utf-8")) > cap:  # it could never be read back: refuse it now, with the reason
        raise StorageError(
            path.name,
            f"cannot save {len(catalog):,} cloud instance types: {path.name} would be larger than "
            f"{cap // (1024 * 1024)} MB, the most it may be",
            path=path,
        )
    return atomic_write_text(path, text, backup=True)


@dataclass(frozen=True)
class InstancesSaved:
    """What a change of the user's instance list did: the file, the effective snapshot it leaves,
    and the rows of the changed providers before it (what an undo puts back)."""

    path: Path
    snapshot: InstanceCatalog
    providers: tuple[str, ...]
    before: tuple[InstanceType, ...]


def put_provider_rows(
    providers: Iterable[str],
    rows: Sequence[InstanceType],
    updated: str = "",
    paths: UserPaths | None = None,
) -> InstancesSaved:
    """Make ``rows`` the user's rows of ``providers`` (and of the providers ``rows`` name), keeping
    every other provider's rows as the file holds them now; no row left removes the file (back to
    the bundled snapshot). One read -> change -> write under the file's lock; a damaged file is
    set aside first (its warning is logged). Raises :class:`StorageError` when the file cannot be
    written or removed; it is then untouched. An import, its undo and its redo are all this."""
    chosen = tuple(dict.fromkeys([*providers, *(t.provider for t in rows)]))
    paths = paths or user_paths()
    ensure_dir(paths.data_dir, "user data folder")  # a first import on a fresh install
    path = instances_file(paths)
    with locked(path):
        user, warnings = _read(path)
        for warning in warnings:
            log.warning("%s", warning)
        current = user if user is not None else _empty()
        before = tuple(t for t in current.types if t.provider in chosen)
        new = _replaced(current, chosen, rows, updated)
        written = _write(path, new)
    return InstancesSaved(written, _effective(new), chosen, before)


def save_imported_instances(
    types: Sequence[InstanceType], updated: str, paths: UserPaths | None = None
) -> InstancesSaved:
    """Keep ``types`` as the user's rows of their providers (replacing earlier imports of the same
    providers, keeping the others) and say what was saved; :class:`StorageError` when it cannot be
    written."""
    return put_provider_rows((), types, updated, paths)
