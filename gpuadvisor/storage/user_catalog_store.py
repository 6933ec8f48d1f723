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

Saving is atomic and keeps the previous file as ``user-catalog.json.bak``;
:func:`user_catalog_backups` lists that and the set-aside copies, and
:func:`restore_user_catalog` brings one back after checking it.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from ..core.errors import CatalogError
from ..core.formats.user_catalog import UserCatalog, build_catalogs, dumps, loads
from ..core.specs.hardware import GpuCatalog, load_gpu_catalog
from ..core.specs.presets import ModelCatalog, load_model_catalog
from .atomic import atomic_write_bytes, atomic_write_text, backup_path, set_aside_and_say
from .errors import StorageError, os_reason
from .paths import UserPaths, ensure_dir, user_paths

USER_CATALOG_FILENAME = "user-catalog.json"


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


def _valid_backup(path: Path) -> UserCatalog | None:
    try:
        return loads(path.read_bytes(), path.name)
    except (OSError, CatalogError):
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


def load_user_catalog(paths: UserPaths | None = None) -> UserCatalogLoad:
    """Read the user's catalog edits; never raises (see the module docstring).

    Returns an empty catalog when the file is missing or damaged; a damaged file is moved aside
    and ``warnings`` say why.
    """
    path = user_catalog_file(paths)
    empty = UserCatalog.empty()
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return UserCatalogLoad(empty, [], None, path)
    except OSError as exc:
        problem, tag = f"cannot be read ({os_reason(exc)})", "unreadable"
    else:
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


def save_user_catalog(user: UserCatalog, paths: UserPaths | None = None) -> Path:
    """Write the edits, stamped with the time, atomically (previous file kept as ``.bak``); return the path.

    Creates the data folder on first use. Raises :class:`StorageError` with a readable message
    when the file cannot be written; the old file is then untouched.
    """
    paths = paths or user_paths()
    stamped = dataclasses.replace(user, saved=datetime.now().astimezone().isoformat(timespec="seconds"))
    ensure_dir(paths.data_dir, "user data folder")
    return atomic_write_text(user_catalog_file(paths), dumps(stamped), backup=True)


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

    The file is checked first: :class:`StorageError` when it cannot be read,
    :class:`CatalogError` (naming the problem and where) when it is not a valid user catalog;
    nothing changes then. Otherwise the current file is kept as ``.bak`` and replaced atomically
    by ``source``'s exact bytes.
    """
    src = Path(source)
    try:
        raw = src.read_bytes()
    except OSError as exc:
        raise StorageError(src.name, f"cannot read {src.name}: {os_reason(exc)}", path=src) from exc
    catalog = loads(raw, src.name)
    paths = paths or user_paths()
    ensure_dir(paths.data_dir, "user data folder")
    target = atomic_write_bytes(user_catalog_file(paths), raw, backup=True)
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
