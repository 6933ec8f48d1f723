"""One process at a time changes a stored file: an exclusive lock beside it, and leftovers tidied.

Every load -> change -> save of a stored file (the user catalog, measurements, the calibration
profile, the settings) runs inside :func:`locked`: an exclusive operating-system lock on a hidden
file beside it (``.user-catalog.json.lock``), taken through ``filelock`` (``flock`` on POSIX,
``LockFileEx`` on Windows). The lock dies with its process, so a crash or ``kill -9`` never leaves
the file locked. Two windows, or a window and the CLI, therefore never interleave their read and
write; a window that keeps a file open for minutes re-reads it under the lock and merges before
it writes (see :mod:`gpuadvisor.storage.user_catalog_store`).

A save killed half-way leaves at most a temporary file ``.<name>.<pid>-<random>.tmp`` (the target
itself is replaced only by an atomic rename, :mod:`gpuadvisor.storage.atomic`). Such orphans are
removed by :func:`tidy`, which the loaders call: only while holding the lock, so a save in progress
elsewhere is never disturbed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from .errors import StorageError, os_reason

#: How long a save waits for another process's save of the same file.
LOCK_TIMEOUT_S = 30.0


def lock_path(path: Path) -> Path:
    """The lock file of a stored file: ``.<name>.lock`` beside it."""
    return path.with_name(f".{path.name}.lock")


def _lock(path: Path, timeout: float) -> FileLock:
    return FileLock(lock_path(path), timeout=timeout, mode=0o600, thread_local=False, preserve_lock_file=True)


@contextmanager
def locked(path: Path, timeout: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """Hold the exclusive lock of the stored file ``path`` (its folder must exist).

    Raises :class:`StorageError` when another process holds it for ``timeout`` seconds, or when the
    lock file cannot be created (a read-only folder).
    """
    lock = _lock(path, timeout)
    try:
        lock.acquire()
    except Timeout:
        raise StorageError(
            path.name,
            f"cannot save {path.name}: another gpuadvisor window or command has been saving it for "
            f"{timeout:.0f} s; try again",
            path=path,
        ) from None
    except OSError as exc:
        raise StorageError(
            path.name, f"cannot lock {path.name} for saving: {os_reason(exc)}", path=path
        ) from exc
    try:
        yield
    finally:
        lock.release()


def _orphan_pattern(name: str) -> re.Pattern[str]:
    # The temporary files of storage.atomic: ".<name>.<pid>-<hex>.tmp" and ".<name>.bak.<pid>-<hex>.tmp".
    return re.compile(rf"\.{re.escape(name)}(\.bak)?\.\d+-[0-9a-f]+\.tmp\Z")


def orphans(path: Path) -> list[Path]:
    """Temporary files a killed save of ``path`` left beside it."""
    pattern = _orphan_pattern(path.name)
    try:
        names = os.listdir(path.parent)
    except OSError:
        return []
    return [path.with_name(n) for n in names if pattern.match(n)]


def tidy(path: Path) -> int:
    """Remove the orphans of ``path`` if no other process is saving it; return how many went.

    Never blocks and never raises: when another process holds the lock, or nothing can be
    removed, nothing happens (the next load tries again).
    """
    found = orphans(path)
    if not found:
        return 0
    lock = _lock(path, 0)
    try:
        lock.acquire()
    except (Timeout, OSError):
        return 0
    removed = 0
    try:
        for orphan in orphans(path):
            try:
                orphan.unlink()
                removed += 1
            except OSError:
                pass
    finally:
        lock.release()
    return removed
