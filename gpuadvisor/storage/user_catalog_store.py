"""The user's catalog edits on disk: ``user-catalog.json`` in the user data folder.

The file holds :class:`~gpuadvisor.core.formats.user_catalog.UserCatalog` as the versioned JSON of
:func:`~gpuadvisor.core.formats.user_catalog.dumps` (overrides of bundled rows, added rows, hidden ids).
Loading never fails and never loses the user's data:

* a missing file is an empty catalog (no edits), silently;
* a file that cannot be used (empty, binary, not UTF-8, truncated or invalid JSON, an unknown
  ``schema_version``, a value of the wrong type, unreadable) is set aside as
  ``user-catalog.json.<tag>-<date>`` (never deleted, never overwritten), a warning says what is
  wrong, where, where the file went and whether a backup can be restored, and the bundled
  catalogs are used.

Every save holds the file's lock (:mod:`gpuadvisor.storage.locking`) and re-reads the file first:
:func:`editing_user_catalog` keeps the lock for a whole load -> change -> save (the CLI's imports),
and :func:`save_user_catalog` merges a window's edits into whatever another program saved since the
window read the file (:func:`save_and_merge_user_catalog` also returns the merged edits, for the
catalog editor to show). Saving is atomic and keeps the previous file as ``user-catalog.json.bak``;
:func:`user_catalog_backups` lists that and the set-aside copies, and
:func:`restore_user_catalog` brings one back after checking it.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from ..core.errors import CatalogError
from ..core.files import FileKind, read_untrusted
from ..core.formats.user_catalog import UserCatalog, build_catalogs, dumps, loads
from ..core.formats.user_catalog_merge import merge_user_catalogs, same_edits
from ..core.specs.hardware import GpuCatalog, load_gpu_catalog
from ..core.specs.presets import ModelCatalog, load_model_catalog
from .atomic import atomic_write_bytes, atomic_write_text, backup_path, set_aside_and_say
from .errors import read_error
from .locking import locked
from .paths import UserPaths, ensure_dir, user_paths
from .stored_file import read_stored

USER_CATALOG_FILENAME = "user-catalog.json"

log = logging.getLogger(__name__)


def user_catalog_file(paths: UserPaths | None = None) -> Path:
    """Where the user's catalog edits live: ``<data_dir>/user-catalog.json``."""
    return (paths or user_paths()).data_dir / USER_CATALOG_FILENAME


@dataclass
class UserCatalogLoad:
    """The result of :func:`load_user_catalog`: the edits, warnings to show once, the set-aside copy
    of a damaged file (None when nothing was set aside) and the file's path."""

    catalog: UserCatalog
    warnings: list[str] = field(default_factory=list)
    set_aside: Path | None = None
    path: Path = field(default_factory=Path)


#: What this process last read from or wrote to each user-catalog file: the base of the three-way
#: merge when a window saves edits it made while another program saved the same file.
_BASES: dict[Path, UserCatalog] = {}


def _valid_backup(path: Path) -> UserCatalog | None:
    try:
        raw = read_untrusted(path, FileKind.CATALOG, error=CatalogError)
        return loads(raw, path.name)
    except CatalogError:
        return None


def _backup_note(path: Path) -> str:
    """A sentence about ``<name>.bak``: whether it exists and can be restored ("" when there is none)."""
    bak = backup_path(path)
    if not bak.exists():
        return ""
    if _valid_backup(bak) is None:
        return f" The backup {bak} is damaged too."
    try:
        stamp = datetime.fromtimestamp(bak.stat().st_mtime).strftime("%Y-%m-%d %H:%M")
    except OSError:
        stamp = "earlier"
    return (
        f" The previous version (saved {stamp}) is in {bak} and can be restored "
        "(catalog editor: Restore backup)."
    )


def _load(path: Path) -> UserCatalogLoad:
    """Read the file at ``path``; never raises (see :func:`load_user_catalog`)."""
    empty = UserCatalog.empty()
    try:
        raw = read_stored(path, FileKind.CATALOG, CatalogError)
    except CatalogError as exc:
        problem, tag = exc.reason, "unreadable"
    else:
        if raw is None:
            return UserCatalogLoad(empty, [], None, path)
        try:
            return UserCatalogLoad(loads(raw, path.name), [], None, path)
        except CatalogError as exc:
            problem = str(exc).removeprefix(f"{path.name}: ")
            tag = "unsupported" if exc.field.endswith("schema_version") else "corrupt"
    warning = (
        f"Your catalog edits in {path} could not be loaded: {problem}. The bundled catalogs are used instead."
    )
    kept, note = set_aside_and_say(path, tag)
    warning += note
    warning += _backup_note(path)
    return UserCatalogLoad(empty, [warning], kept, path)


def load_user_catalog(paths: UserPaths | None = None) -> UserCatalogLoad:
    """Read the user's catalog edits; never raises (see the module docstring).

    Returns an empty catalog when the file is missing or damaged; a damaged file is moved aside
    and ``warnings`` say why. Temporary files a killed save left are removed first.
    """
    path = user_catalog_file(paths)
    loaded = _load(path)
    _BASES[path] = loaded.catalog
    return loaded


def _write(user: UserCatalog, path: Path) -> Path:
    """Write ``user`` stamped with the time (the lock is held; previous file kept as ``.bak``)."""
    stamped = dataclasses.replace(user, saved=datetime.now().astimezone().isoformat(timespec="seconds"))
    written = atomic_write_text(path, dumps(stamped), backup=True)
    _BASES[path] = stamped
    return written


def save_user_catalog(user: UserCatalog, paths: UserPaths | None = None) -> Path:
    """Write the edits, stamped with the time, atomically (previous file kept as ``.bak``); return the path.

    Holds the file's lock, re-reads it, and when another program saved it since this process
    last read it, writes ``user``'s changes merged into that file
    (:func:`~gpuadvisor.core.formats.user_catalog_merge.merge_user_catalogs`), so no edit is lost.
    Creates the data folder on first use. Raises :class:`StorageError` with a readable message
    when the file cannot be written; the old file is then untouched. The caller goes on with its
    own view (``user``); :func:`save_and_merge_user_catalog` is for a caller that keeps its own
    base and shows what was saved.
    """
    paths = paths or user_paths()
    path = user_catalog_file(paths)
    saved = _save(user, _BASES.get(path), paths)
    # The caller goes on editing its own view (``user``, without the other program's changes): that
    # view is the base of its next save, so what it did not touch is never taken back.
    _BASES[path] = user
    return saved.path


@dataclass(frozen=True)
class SavedUserCatalog:
    """What :func:`save_and_merge_user_catalog` wrote: the file, the edits it now holds, and whether
    they hold changes another program saved meanwhile (then they differ from the caller's)."""

    path: Path
    catalog: UserCatalog
    merged: bool


def save_and_merge_user_catalog(
    user: UserCatalog, base: UserCatalog | None, paths: UserPaths | None = None
) -> SavedUserCatalog:
    """:func:`save_user_catalog` for a caller that keeps its own base (the catalog editor): ``base``
    is what it last loaded or saved (None: ``user`` is written as it is). When the file differs from
    ``base``, another program saved meanwhile and ``user``'s changes since ``base`` are merged into
    the file; the result says what was written, for the caller to show and to keep as its next base.
    A load of the file elsewhere in the process (a dialog reading the catalogs) never changes what
    this caller merges against."""
    return _save(user, base, paths or user_paths())


def _save(user: UserCatalog, base: UserCatalog | None, paths: UserPaths | None) -> SavedUserCatalog:
    paths = paths or user_paths()
    ensure_dir(paths.data_dir, "user data folder")
    path = user_catalog_file(paths)
    with locked(path):
        current = _load(path)
        _log_warnings(current.warnings)
        merged = user
        if base is not None and not same_edits(current.catalog, base):
            merged = merge_user_catalogs(base, user, current.catalog)
        written = _write(merged, path)
        return SavedUserCatalog(written, merged, not same_edits(merged, user))


class UserCatalogEdit:
    """The user catalog read under its lock, for one load -> change -> save (:func:`editing_user_catalog`)."""

    def __init__(self, loaded: UserCatalogLoad) -> None:
        self.loaded = loaded
        self.saved: Path | None = None

    def save(self, user: UserCatalog) -> Path:
        """Write ``user`` (the lock is held: nothing can have changed the file since it was read)."""
        self.saved = _write(user, self.loaded.path)
        return self.saved


@contextmanager
def editing_user_catalog(paths: UserPaths | None = None) -> Iterator[UserCatalogEdit]:
    """Hold the user catalog's lock while it is read, changed and saved::

        with editing_user_catalog() as edit:
            new = change(edit.loaded.catalog)
            edit.save(new)

    A second process doing the same waits for the first to finish, then reads its result.
    """
    paths = paths or user_paths()
    ensure_dir(paths.data_dir, "user data folder")
    path = user_catalog_file(paths)
    with locked(path):
        loaded = _load(path)
        _BASES[path] = loaded.catalog
        yield UserCatalogEdit(loaded)


def _log_warnings(warnings: list[str]) -> None:
    for warning in warnings:
        log.warning("%s", warning)


def user_catalog_backups(paths: UserPaths | None = None) -> list[Path]:
    """The ``.bak`` copy and the set-aside copies of the user catalog, newest first."""
    path = user_catalog_file(paths)
    try:
        candidates = [p for p in path.parent.iterdir() if p.name.startswith(path.name + ".") and p.is_file()]
    except OSError:
        return []

    def mtime(p: Path) -> float:
        try:
            return p.stat().st_mtime
        except OSError:
            return 0.0

    return sorted(candidates, key=lambda p: (mtime(p), p.name), reverse=True)


def restore_user_catalog(source: str | os.PathLike[str], paths: UserPaths | None = None) -> UserCatalogLoad:
    """Make ``source`` (a backup or any saved user catalog) the current user catalog.

    The file is checked first: :class:`StorageError` when it cannot be read (or is not a regular
    file), :class:`CatalogError` (naming the problem and where) when it is not a valid user
    catalog; nothing changes then. Otherwise the current
    file is kept as ``.bak`` and replaced atomically by ``source``'s exact bytes, under the lock.
    """
    src = Path(source)
    raw = read_untrusted(src, FileKind.CATALOG, error=read_error)
    catalog = loads(raw, src.name)
    paths = paths or user_paths()
    ensure_dir(paths.data_dir, "user data folder")
    path = user_catalog_file(paths)
    with locked(path):
        target = atomic_write_bytes(path, raw, backup=True)
        _BASES[path] = catalog
    return UserCatalogLoad(catalog, [], None, target)


def load_effective_catalogs(
    use_user: bool = True, paths: UserPaths | None = None
) -> tuple[GpuCatalog, ModelCatalog, list[str]]:
    """The catalogs to estimate with: bundled plus the user's edits, and warnings to show once.

    With ``use_user=False`` the bundled catalogs alone, without warnings. Never fails because of
    the user's file: when the edits would leave no valid GPU, the bundled catalogs are used and a
    warning says so.
    """
    if not use_user:
        return load_gpu_catalog(), load_model_catalog(), []
    loaded = load_user_catalog(paths)
    try:
        gpus, models, warnings = build_catalogs(loaded.catalog)
    except CatalogError as exc:
        return (
            load_gpu_catalog(),
            load_model_catalog(),
            loaded.warnings + [f"Your catalog edits are not used: {exc}."],
        )
    return gpus, models, loaded.warnings + warnings


def load_catalogs(use_user: bool = True, paths: UserPaths | None = None) -> tuple[GpuCatalog, ModelCatalog]:
    """The effective catalogs (bundled + the user's edits unless ``use_user`` is False).

    For the command line and scripts: problems with the user's edits are printed to stderr as
    ``warning:`` lines (the window shows :func:`load_effective_catalogs`' warnings itself).
    """
    gpus, models, warnings = load_effective_catalogs(use_user, paths)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return gpus, models
