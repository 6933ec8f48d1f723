"""The user's measured runs and calibration profile on disk, in the user data folder.

* ``measurements.json``: every run the user recorded (:func:`gpuadvisor.core.formats.measurements.measurements_to_json`),
  from the window or ``gpuadvisor-cli measure add``, whatever scenario it belongs to;
* ``calibration.json``: the profile last fitted or imported
  (:func:`gpuadvisor.core.estimation.calibration.profile_to_json`).

Loading never fails and never loses the user's data, as for the user catalog
(:mod:`gpuadvisor.storage.user_catalog_store`):

* a missing file is an empty list (no profile), silently;
* a file that cannot be used (not UTF-8, invalid JSON, a wrong format or schema version, a bad
  entry) is set aside as ``<name>.<tag>-<date>`` (never deleted), and a warning says what is
  wrong, where the file went and whether the ``.bak`` copy can be restored.

Saving is atomic, keeps the previous file as ``<name>.bak`` and holds the file's lock
(:mod:`gpuadvisor.storage.locking`); :func:`add_measurement` reads, adds and writes under one lock,
so runs recorded by two programs at once are both kept. Whether the profile is applied
to estimates is the ``calibration_enabled`` setting (:mod:`gpuadvisor.storage.settings`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Generic, TypeVar

from ..core.errors import InputError
from ..core.estimation.calibration import profile_from_json, profile_to_json
from ..core.estimation.results import CalibrationProfile
from ..core.files import FileKind, read_untrusted
from ..core.formats.measurements import (
    Measurement,
    measurements_from_json,
    measurements_to_json,
    next_measurement_id,
)
from .atomic import atomic_write_text, backup_path, set_aside_and_say
from .locking import locked
from .paths import UserPaths, ensure_dir, user_paths
from .stored_file import read_stored

MEASUREMENTS_FILENAME = "measurements.json"
CALIBRATION_FILENAME = "calibration.json"

T = TypeVar("T")


def measurements_file(paths: UserPaths | None = None) -> Path:
    """Where the user's measured runs live: ``<data_dir>/measurements.json``."""
    return (paths or user_paths()).data_dir / MEASUREMENTS_FILENAME


def calibration_file(paths: UserPaths | None = None) -> Path:
    """Where the user's calibration profile lives: ``<data_dir>/calibration.json``."""
    return (paths or user_paths()).data_dir / CALIBRATION_FILENAME


@dataclass
class Loaded(Generic[T]):
    """What a load found: the value, warnings to show once, the set-aside copy of a damaged file
    (None when nothing was set aside) and the file's path."""

    value: T
    warnings: list[str] = field(default_factory=list)
    set_aside: Path | None = None
    path: Path = field(default_factory=Path)


def _decode(raw: bytes, name: str) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(name, "is not UTF-8 text") from None


def _backup_note(path: Path, parse: Callable[[str, str], object], kind: FileKind) -> str:
    bak = backup_path(path)
    if not bak.exists():
        return ""
    try:
        parse(_decode(read_untrusted(bak, kind), bak.name), bak.name)
    except InputError:
        return f" The backup {bak} is damaged too."
    try:
        stamp = datetime.fromtimestamp(bak.stat().st_mtime).strftime("%Y-%m-%d %H:%M")
    except OSError:
        stamp = "earlier"
    return f" The previous version (saved {stamp}) is in {bak} and can be restored by renaming it."


def _load(path: Path, what: str, empty: T, parse: Callable[[str, str], T], kind: FileKind) -> Loaded[T]:
    try:
        raw = read_stored(path, kind)
    except InputError as exc:
        problem, tag = exc.reason, "unreadable"
    else:
        if raw is None:
            return Loaded(empty, [], None, path)
        try:
            return Loaded(parse(_decode(raw, path.name), path.name), [], None, path)
        except InputError as exc:
            problem = str(exc).removeprefix(f"{path.name}: ")
            tag = "unsupported" if exc.field.endswith("schema_version") else "corrupt"
    warning = f"Your {what} in {path} could not be loaded: {problem}."
    kept, note = set_aside_and_say(path, tag)
    warning += note
    warning += _backup_note(path, parse, kind)
    return Loaded(empty, [warning], kept, path)


# --- measurements ---------------------------------------------------------------------------------


def load_measurements(paths: UserPaths | None = None) -> Loaded[list[Measurement]]:
    """The user's measured runs; never raises (a damaged file is set aside with a warning)."""
    return _load(
        measurements_file(paths),
        "measurements",
        [],
        lambda text, origin: measurements_from_json(text, origin),
        FileKind.MEASUREMENTS,
    )


def save_measurements(measurements: Sequence[Measurement], paths: UserPaths | None = None) -> Path:
    """Write all measured runs atomically (previous file kept as ``.bak``); return the path.

    Raises :class:`StorageError` with a readable message when the file cannot be written.
    """
    paths = paths or user_paths()
    ensure_dir(paths.data_dir, "user data folder")
    path = measurements_file(paths)
    with locked(path):
        return atomic_write_text(path, measurements_to_json(list(measurements)), backup=True)


def merge_measurements(stored: Sequence[Measurement], more: Sequence[Measurement]) -> list[Measurement]:
    """``stored`` plus the runs of ``more`` it does not hold yet; a new run whose id is taken gets a new id."""
    out = list(stored)
    for m in more:
        if m in out:
            continue
        if any(o.id == m.id for o in out):
            m = replace(m, id=next_measurement_id(out))
        out.append(m)
    return out


def add_measurement(measurement: Measurement, paths: UserPaths | None = None) -> tuple[Measurement, Path]:
    """Append a run to ``measurements.json`` (a new id when its id is taken); return it and the path.

    A damaged file is set aside first (as :func:`load_measurements` does); raises
    :class:`StorageError` when the file cannot be written.
    """
    paths = paths or user_paths()
    ensure_dir(paths.data_dir, "user data folder")
    path = measurements_file(paths)
    with locked(path):  # read, add and write as one step: a run added elsewhere meanwhile is kept
        loaded = load_measurements(paths)
        merged = merge_measurements(loaded.value, [measurement])
        path = atomic_write_text(path, measurements_to_json(merged), backup=True)
    return merged[-1] if merged and measurement not in loaded.value else measurement, path


# --- calibration profile --------------------------------------------------------------------------


def load_calibration(paths: UserPaths | None = None) -> Loaded[CalibrationProfile | None]:
    """The saved calibration profile, or None; never raises (a damaged file is set aside)."""
    return _load(
        calibration_file(paths),
        "calibration profile",
        None,
        lambda text, origin: profile_from_json(text, origin),
        FileKind.CALIBRATION,
    )


def save_calibration(profile: CalibrationProfile, paths: UserPaths | None = None) -> Path:
    """Make ``profile`` the saved one, atomically (previous file kept as ``.bak``); return the path."""
    paths = paths or user_paths()
    ensure_dir(paths.data_dir, "user data folder")
    path = calibration_file(paths)
    with locked(path):
        return atomic_write_text(path, profile_to_json(profile), backup=True)


def read_profile(path: str | os.PathLike[str]) -> CalibrationProfile:
    """Read a profile file for import. Raises :class:`InputError` naming the file and the field
    (``cal.json: fits[0].value: must be in (0, 1] ...``); nothing is saved."""
    p = Path(path)
    return profile_from_json(_decode(read_untrusted(p, FileKind.CALIBRATION), p.name), p.name)


def import_calibration(
    path: str | os.PathLike[str], paths: UserPaths | None = None
) -> tuple[CalibrationProfile, Path]:
    """Check a profile file and make it the saved profile; return it and where it was saved."""
    profile = read_profile(path)
    return profile, save_calibration(profile, paths)


def export_calibration(profile: CalibrationProfile, path: str | os.PathLike[str]) -> Path:
    """Write a profile to ``path`` atomically (the folder must exist); return the path."""
    return atomic_write_text(Path(path), profile_to_json(profile))
