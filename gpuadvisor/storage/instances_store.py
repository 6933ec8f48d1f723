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
from .paths import UserPaths, user_paths

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


def save_imported_instances(
    types: Sequence[InstanceType], updated: str, paths: UserPaths | None = None
) -> tuple[Path, InstanceCatalog]:
    """Keep ``types`` as the user's rows of their providers (replacing earlier imports of the same
    providers) and return the file and the new effective snapshot; StorageError when it cannot be
    written."""
    user, _warnings = load_user_instances(paths)
    empty = InstanceCatalog((), bundled_instances().meta)
    mine = merge_instances(user if user is not None else empty, types, updated)
    path = atomic_write_text(instances_file(paths), dumps_instances(mine))
    return path, merge_instances(bundled_instances(), mine.types, mine.meta.updated)
