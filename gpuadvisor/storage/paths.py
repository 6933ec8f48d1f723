"""Where gpuadvisor keeps the user's files: settings, user catalogs, logs and caches.

One function, :func:`user_paths`, answers for the whole application. With the environment
variable ``GPUADVISOR_HOME`` set (tests, a portable install on a USB stick), everything lives
in four subfolders of it: ``config/``, ``data/``, ``logs/`` and ``cache/``. Otherwise the
platform's conventions apply, through platformdirs (app name ``gpuadvisor``, no author folder):
on Linux ``~/.config/gpuadvisor``, ``~/.local/share/gpuadvisor``, ``~/.local/state/gpuadvisor/log``
and ``~/.cache/gpuadvisor`` (each honouring its ``XDG_*`` variable).

Nothing is created by asking: folders are made on first write, by :func:`ensure_dir`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from .errors import StorageError, os_reason

APP_NAME = "gpuadvisor"
HOME_ENV = "GPUADVISOR_HOME"


@dataclass(frozen=True, slots=True)
class UserPaths:
    """The four user folders. They may not exist yet; see :func:`ensure_dir`."""

    config_dir: Path
    data_dir: Path
    log_dir: Path
    cache_dir: Path

    @property
    def portable(self) -> bool:
        """True when the folders come from ``GPUADVISOR_HOME`` (read at the time of asking)."""
        return _home_from_env() is not None


def _home_from_env() -> Path | None:
    value = os.environ.get(HOME_ENV, "").strip()
    if not value:
        return None
    return Path(os.path.abspath(os.path.expanduser(value)))


def user_paths() -> UserPaths:
    """The user folders, from ``GPUADVISOR_HOME`` when it is set (and not empty), else platformdirs.

    The environment is read on every call, so a test or a launcher may change it at any time.
    Nothing is created.
    """
    home = _home_from_env()
    if home is not None:
        return UserPaths(
            config_dir=home / "config",
            data_dir=home / "data",
            log_dir=home / "logs",
            cache_dir=home / "cache",
        )
    return UserPaths(
        config_dir=platformdirs.user_config_path(APP_NAME, False),
        data_dir=platformdirs.user_data_path(APP_NAME, False),
        log_dir=platformdirs.user_log_path(APP_NAME, False),
        cache_dir=platformdirs.user_cache_path(APP_NAME, False),
    )


def _blocking_file(path: Path) -> Path | None:
    """The nearest existing ancestor (or the path itself) that is not a folder."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return None if candidate.is_dir() else candidate
    return None


def ensure_dir(path: str | os.PathLike[str], what: str | None = None) -> Path:
    """Create ``path`` (and its parents) if missing and return it; the new folder gets mode 0o700.

    Raises :class:`StorageError` (``field`` = ``what`` or the folder's name) when the folder
    cannot be made: a file is in the way, permission is denied, the disk is full or read-only.
    """
    p = Path(path)
    try:
        p.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        blocker = _blocking_file(p)
        if blocker is not None:
            reason = (
                "a file with that name is in the way"
                if blocker == p
                else f"{blocker} is a file, not a folder"
            )
        else:
            reason = os_reason(exc)
        raise StorageError(what or p.name, f"cannot create the folder {p}: {reason}", path=p) from exc
    if not p.is_dir():  # e.g. a dangling symlink that mkdir accepted on some platforms
        raise StorageError(what or p.name, f"cannot create the folder {p}: it is not a folder", path=p)
    return p
