"""The user's cloud instance snapshot: ``instances.csv`` in the user data folder.

Importing price lists (``gpuadvisor-cli prices import``, the catalog editor's "Import price
list…") saves the instance types they hold here, per provider; the effective snapshot is the
bundled one with the rows of every provider the user imported replaced by the user's
(:func:`~gpuadvisor.core.specs.instances.merge_instances`). Loading never fails: a damaged file is
set aside with a warning and the bundled snapshot is used. Writing is atomic.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..core.errors import CatalogError
from ..core.specs.instances import (
    InstanceCatalog,
    InstanceType,
    bundled_instances,
    dumps_instances,
    load_instance_catalog,
    merge_instances,
)
from .atomic import atomic_write_text, set_aside_and_say
from .errors import StorageError, os_reason
from .paths import UserPaths, ensure_dir, user_paths

INSTANCES_FILENAME = "instances.csv"


def instances_file(paths: UserPaths | None = None) -> Path:
    """Where the user's imported instance types live: ``<data_dir>/instances.csv``."""
    return (paths or user_paths()).data_dir / INSTANCES_FILENAME


def load_user_instances(paths: UserPaths | None = None) -> tuple[InstanceCatalog | None, list[str]]:
    """The user's imported instance types (None when there are none) and warnings to show once."""
    path = instances_file(paths)
    if not path.exists():
        return None, []
    try:
        return load_instance_catalog(path), []
    except CatalogError as exc:
        _kept, where = set_aside_and_say(path)
        return None, [
            f"Your imported cloud instance list could not be read ({exc}); the bundled one is used.{where}"
        ]


def load_instances(paths: UserPaths | None = None) -> tuple[InstanceCatalog, list[str]]:
    """The effective instance snapshot (bundled + the user's imports) and warnings to show once."""
    user, warnings = load_user_instances(paths)
    base = bundled_instances()
    if user is None or not len(user):
        return base, warnings
    return merge_instances(base, user.types, user.meta.updated), warnings


def instances_text_after_import(
    types: Sequence[InstanceType], updated: str, paths: UserPaths | None = None
) -> str:
    """What the user's ``instances.csv`` holds once ``types`` are kept as the rows of their
    providers (replacing earlier imports of the same providers, keeping the others)."""
    user, _warnings = load_user_instances(paths)
    empty = InstanceCatalog((), bundled_instances().meta)
    return dumps_instances(merge_instances(user if user is not None else empty, types, updated))


def save_imported_instances(
    types: Sequence[InstanceType], updated: str, paths: UserPaths | None = None
) -> tuple[Path, InstanceCatalog]:
    """Keep ``types`` as the user's rows of their providers (replacing earlier imports of the same
    providers) and return the file and the new effective snapshot; StorageError when it cannot be
    written."""
    return put_user_instances(instances_text_after_import(types, updated, paths), paths)


def user_instances_text(paths: UserPaths | None = None) -> str | None:
    """The user's ``instances.csv`` as it stands (None when there is none), to put back on undo."""
    try:
        return instances_file(paths).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError):
        return None  # unreadable: loading sets it aside and uses the bundled snapshot anyway


def put_user_instances(text: str | None, paths: UserPaths | None = None) -> tuple[Path, InstanceCatalog]:
    """Make the user's ``instances.csv`` hold ``text`` (None: remove it, back to the bundled
    snapshot) and return the file and the effective snapshot; StorageError when it cannot be
    written or removed. An import and its undo are both this."""
    path = instances_file(paths)
    if text is None:
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            raise StorageError(path.name, f"cannot remove {path.name}: {os_reason(exc)}", path=path) from exc
    else:
        ensure_dir(path.parent, "user data folder")  # a first import on a fresh install
        path = atomic_write_text(path, text)
    snapshot, _warnings = load_instances(paths)
    return path, snapshot
