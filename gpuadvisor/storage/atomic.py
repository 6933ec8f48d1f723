"""Writing user files so that a crash, a full disk or a power cut never leaves a half-written one.

Every write goes to a temporary file in the same folder (``.<name>.<pid>-<random>.tmp``), which
is flushed and ``fsync``-ed, then renamed over the target with :func:`os.replace` (atomic on
POSIX and on Windows within one volume). A reader therefore sees either the old file or the new
one. With ``backup=True`` the previous content is first saved, the same way, as ``<name>.bak``.
A symbolic link is written through (its target is replaced, the link stays); a folder, device or
FIFO in the way is refused with a :class:`StorageError` rather than replaced.

Damaged files are never deleted: :func:`set_aside` renames them out of the way, with a date.

References: the rename-over pattern of ``git``'s lockfiles and of ``save_scenario`` in
``gpuadvisor.core.formats.scenario``; ``fsync`` of the folder after the rename, as in SQLite's journal.
"""

from __future__ import annotations

import os
import re
import secrets
import stat
from datetime import datetime
from pathlib import Path

from ..core.files import output_target
from .errors import StorageError, os_reason

_TAG = re.compile(r"[A-Za-z0-9_-]+\Z")


def _temp_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")


def _discard(tmp: Path) -> None:
    try:
        tmp.unlink(missing_ok=True)
    except OSError:
        pass


def _fsync_dir(folder: Path) -> None:
    """Make the rename itself durable (POSIX only; best effort, Windows cannot open folders)."""
    if os.name != "posix":
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _refused(field: str, message: str) -> StorageError:
    return StorageError(field, f"cannot write {field}: it {message}")


def write_target(path: str | os.PathLike[str]) -> Path:
    """The file a write to ``path`` replaces: a symbolic link's target; folders, devices and FIFOs
    raise :class:`StorageError` (:func:`gpuadvisor.core.files.output_target`)."""
    return output_target(path, error=_refused)


def _write_replace(path: Path, data: bytes, mode: int | None = None) -> None:
    """Temp file, flush, fsync, rename. Raises OSError; the temp file never outlives a failure.

    ``path`` is the resolved target (:func:`write_target`): the temporary file goes in its folder,
    so the rename never crosses file systems and a symbolic link to it stays a link.
    """
    if mode is None:
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
        except OSError:
            mode = None  # a new file: the umask decides, as for any other file the user creates
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
    tmp = _temp_path(path)
    fd = os.open(tmp, flags, 0o666)
    try:
        with os.fdopen(fd, "wb") as fh:
            fd = -1  # the file object owns it now
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None and os.name == "posix":
            try:
                os.chmod(tmp, mode)
            except OSError:
                pass  # some file systems (FAT, SMB) refuse modes; the content matters more
        os.replace(tmp, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        _discard(tmp)
        raise
    _fsync_dir(path.parent)


def backup_path(path: str | os.PathLike[str]) -> Path:
    """Where :func:`atomic_write_bytes` keeps the previous content: ``<name>.bak`` beside it."""
    p = Path(path)
    return p.with_name(p.name + ".bak")


def _backup(p: Path) -> None:
    try:
        old = p.read_bytes()
        mode = stat.S_IMODE(p.stat().st_mode)
    except FileNotFoundError:
        return  # first write: nothing to keep
    except OSError as exc:
        raise StorageError(p.name, f"cannot back up {p.name}: {os_reason(exc)}", path=p) from exc
    bak = backup_path(p)
    try:
        _write_replace(bak, old, mode)
    except OSError as exc:
        raise StorageError(
            p.name, f"cannot back up {p.name} to {bak.name}: {os_reason(exc)}", path=p
        ) from exc


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, backup: bool = False) -> Path:
    """Replace the file at ``path`` with ``data`` atomically and return its path.

    The folder must exist (see :func:`gpuadvisor.storage.paths.ensure_dir`). With ``backup``,
    an existing file is first copied to ``<name>.bak``; if that copy fails nothing is written.
    Raises :class:`StorageError` naming the file and the system's reason
    (``cannot write settings.json: No space left on device``); the target is then untouched
    and no temporary file is left behind.
    """
    p = write_target(path)
    if backup:
        _backup(p)
    try:
        _write_replace(p, bytes(data))
    except OSError as exc:
        raise StorageError(p.name, f"cannot write {p.name}: {os_reason(exc)}", path=p) from exc
    return p


def atomic_write_text(
    path: str | os.PathLike[str], text: str, backup: bool = False, encoding: str = "utf-8"
) -> Path:
    """:func:`atomic_write_bytes` for text (UTF-8 unless told; line endings are written as given)."""
    p = Path(path)
    try:
        data = text.encode(encoding)
    except UnicodeEncodeError as exc:
        raise StorageError(
            p.name, f"cannot write {p.name}: the text cannot be encoded as {encoding} ({exc.reason})", path=p
        ) from exc
    return atomic_write_bytes(p, data, backup=backup)


def set_aside(path: str | os.PathLike[str], reason_tag: str = "corrupt", now: datetime | None = None) -> Path:
    """Rename a damaged file to ``<name>.<reason_tag>-YYYYmmdd-HHMMSS`` and return the new path.

    The file is never deleted and no existing file is overwritten: when the name is taken
    (two in one second) ``-1``, ``-2``... is appended. ``reason_tag`` is letters, digits,
    ``-`` or ``_`` (``corrupt``, ``unreadable``). ``now`` (local time) is for tests.
    Raises :class:`StorageError` when the rename fails.
    """
    p = Path(path)
    if not _TAG.match(reason_tag):
        raise ValueError(f"reason_tag must be letters, digits, '-' or '_' (got {reason_tag!r})")
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    base = f"{p.name}.{reason_tag}-{stamp}"
    for i in range(1000):
        target = p.with_name(base if i == 0 else f"{base}-{i}")
        if target.exists() or target.is_symlink():
            continue
        try:
            os.rename(p, target)  # Windows refuses to overwrite; on POSIX the check above guards
        except FileExistsError:
            continue
        except OSError as exc:
            raise StorageError(p.name, f"cannot set {p.name} aside: {os_reason(exc)}", path=p) from exc
        return target
    raise StorageError(p.name, f"cannot set {p.name} aside: too many set-aside copies already", path=p)


def set_aside_and_say(path: str | os.PathLike[str], reason_tag: str = "corrupt") -> tuple[Path | None, str]:
    """:func:`set_aside` for a loader that must never fail: returns where the file went (``None``
    when it could not be moved) and a sentence for the user's warning saying so."""
    try:
        kept = set_aside(path, reason_tag)
    except StorageError as exc:
        return None, f" The file could not be moved aside ({exc}); it was left where it is."
    return kept, f" The file was kept as {kept}."
