"""The user's settings: window layout, recent files, report, catalog and calibration preferences.

Stored as ``settings.json`` (UTF-8, a JSON object with a ``version``) in the user config folder.
Loading never fails and never loses the user's data:

* a missing file gives the defaults, silently (first start);
* a file that is not a JSON object (truncated, binary, empty, a list) gives the defaults and a
  warning, and the file is set aside as ``settings.json.corrupt-<date>``, never deleted;
* a key of the wrong type or out of range is dropped with a warning naming it; the others are
  kept, and the original file is set aside all the same, so the dropped value is not lost;
* keys this version does not know are kept in :attr:`Settings.extra` and written back, so the
  settings of a newer gpuadvisor survive a run of an older one.

Saving is atomic, keeps the previous file as ``settings.json.bak``, holds the file's lock and merges
what another window saved meanwhile (see :func:`save_settings`).
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeGuard

from ..core.errors import InputError
from ..core.files import FileKind, parse_json
from .atomic import atomic_write_text, set_aside
from .errors import StorageError
from .locking import locked
from .paths import UserPaths, ensure_dir, user_paths
from .stored_file import read_stored

SETTINGS_FILENAME = "settings.json"
SETTINGS_VERSION = 1
MAX_RECENT_FILES = 10
PAGE_SIZES = ("A4", "Letter")
STALE_PRICE_MONTHS_RANGE = (1, 240)
#: What this process last read or wrote per settings file: the base of the merge in save_settings.
_BASES: dict[Path, Settings] = {}


@dataclass
class Settings:
    """Plain, JSON-serialisable user preferences (mutable: the window updates them as it goes)."""

    window_geometry: str = ""  # base64 of QWidget.saveGeometry(); see encode_blob / decode_blob
    window_state: str = ""  # base64 of QMainWindow.saveState()
    splitter_sizes: dict[str, list[int]] = field(default_factory=dict)  # splitter name -> sizes in pixels
    recent_files: list[str] = field(default_factory=list)  # absolute paths, most recent first
    last_scenario: str | None = None
    page_size: str = "A4"  # report paper: "A4" or "Letter"
    stale_price_months: int = 6  # catalog prices older than this are flagged as stale
    calibration_enabled: bool = False  # apply the saved calibration profile to estimates
    extra: dict[str, Any] = field(default_factory=dict)  # keys from newer versions, written back as found


def settings_file(paths: UserPaths | None = None) -> Path:
    """Where the settings live: ``<config_dir>/settings.json``."""
    return (paths or user_paths()).config_dir / SETTINGS_FILENAME


def encode_blob(data: bytes) -> str:
    """Bytes (``bytes(widget.saveGeometry())``) as the ASCII text the settings store."""
    return base64.b64encode(bytes(data)).decode("ascii")


def decode_blob(text: str) -> bytes:
    """The bytes back from :func:`encode_blob`; ``b""`` when the text is empty or not base64."""
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, binascii.Error, UnicodeEncodeError, AttributeError):
        return b""


def normalise_path(path: str | os.PathLike[str]) -> str:
    """Absolute, normalised, ``~`` expanded; symlinks are kept as the user chose them."""
    return os.path.normpath(os.path.abspath(os.path.expanduser(os.fspath(path))))


# --- checking values (shared by load and save) ---------------------------------------------------
class _Bad(ValueError):
    """A setting's value cannot be used; the message says what it must be."""


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_blob(value: object) -> str:
    if not isinstance(value, str):
        raise _Bad("must be text")
    if value and not decode_blob(value):
        raise _Bad("must be base64 text")
    return value


def _check_splitters(value: object) -> dict[str, list[int]]:
    if not isinstance(value, dict):
        raise _Bad("must be an object of splitter name -> list of sizes")
    clean: dict[str, list[int]] = {}
    for name, sizes in value.items():
        if not (isinstance(sizes, list) and all(_is_int(s) and s >= 0 for s in sizes)):
            raise _Bad(f"entry {name!r} must be a list of whole numbers >= 0")
        clean[str(name)] = list(sizes)
    return clean


def _check_recent(value: object) -> list[str]:
    if not isinstance(value, list):
        raise _Bad("must be a list of file paths")
    bad = [v for v in value if not isinstance(v, str) or not v.strip()]
    if bad:
        raise _Bad(f"must hold only file paths (found {bad[0]!r})")
    return _dedupe([normalise_path(v) for v in value])


def _check_last(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise _Bad("must be a file path or null")
    return value


def _check_page(value: object) -> str:
    if value not in PAGE_SIZES:
        raise _Bad(f"must be {' or '.join(PAGE_SIZES)}")
    return str(value)


def _check_stale(value: object) -> int:
    low, high = STALE_PRICE_MONTHS_RANGE
    if not _is_int(value) or not low <= value <= high:
        raise _Bad(f"must be a whole number of months from {low} to {high}")
    return int(value)


def _check_bool(value: object) -> bool:
    if not isinstance(value, bool):
        raise _Bad("must be true or false")
    return value


_CHECKS: dict[str, Callable[[object], Any]] = {
    "window_geometry": _check_blob,
    "window_state": _check_blob,
    "splitter_sizes": _check_splitters,
    "recent_files": _check_recent,
    "last_scenario": _check_last,
    "page_size": _check_page,
    "stale_price_months": _check_stale,
    "calibration_enabled": _check_bool,
}
_RESERVED = ("version",)


def _dedupe(paths: list[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for p in paths:
        key = os.path.normcase(p)
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out[:MAX_RECENT_FILES]


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# --- load and save ------------------------------------------------------------------------------
def settings_from_dict(data: dict[str, Any]) -> tuple[Settings, list[str]]:
    """Settings from a parsed JSON object, and one problem line per dropped key."""
    kwargs: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    problems: list[str] = []
    for key, value in data.items():
        check = _CHECKS.get(key)
        if check is None:
            if key not in _RESERVED:
                extra[key] = value
            continue
        try:
            kwargs[key] = check(value)
        except _Bad as exc:
            problems.append(f"ignored {key}: {exc} (got {_shown(value)})")
    return Settings(**kwargs, extra=extra), problems


def settings_to_dict(settings: Settings) -> dict[str, Any]:
    """The JSON-ready form: ``version``, the known settings, then the unknown keys kept from the file.

    Raises :class:`StorageError` (``field`` = the setting's name) for a value that could not be
    read back, so a bad value is caught when it is saved, not at the next start.
    """
    out: dict[str, Any] = {"version": SETTINGS_VERSION}
    for key, check in _CHECKS.items():
        value = getattr(settings, key)
        try:
            out[key] = check(value)
        except _Bad as exc:
            raise StorageError(
                key, f"cannot save the setting {key}: it {exc} (got {_shown(value)})", value
            ) from None
    if not isinstance(settings.extra, dict):
        raise StorageError("extra", "cannot save the settings: extra must be a dict")
    for key, value in settings.extra.items():
        if isinstance(key, str) and key not in out:
            out[key] = value
    return out


def _read(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """(object, None) when the file parses, (None, problem) when it is damaged.

    Raises FileNotFoundError for a missing file and :class:`InputError` when it cannot be read at
    all (a folder, a FIFO or device in its place, more than 1 MB, no permission).
    """
    raw = read_stored(path, FileKind.SETTINGS)
    if raw is None:
        raise FileNotFoundError(path)
    try:
        text = raw.decode("utf-8-sig")  # tolerate the BOM that some Windows editors add
    except UnicodeDecodeError:
        return None, "is not UTF-8 text"
    if not text.strip():
        return None, "is empty"
    if "\x00" in text:
        return None, "contains binary data"
    try:
        data = parse_json(text, path.name)
    except InputError as exc:
        return None, str(exc).removeprefix(f"{path.name}: ")
    if not isinstance(data, dict):
        kinds = {list: "a list", str: "text", type(None): "null", bool: "true/false"}
        kind = kinds.get(type(data), "a number")
        return None, f"must hold a JSON object, not {kind}"
    return data, None


def _keep_aside(path: Path, warnings: list[str]) -> None:
    try:
        kept = set_aside(path, "corrupt")
    except StorageError as exc:
        warnings.append(f"{exc}; it will be replaced when the settings are next saved.")
    else:
        warnings.append(f"The original settings file was kept as {kept}.")


def load_settings(paths: UserPaths | None = None) -> tuple[Settings, list[str]]:
    """Read the settings; never raises for a bad file.

    Returns the settings and warnings to show the user (empty when all is well, including on a
    first start with no file). See the module docstring for what happens to a damaged file.
    """
    path = settings_file(paths)
    settings, warnings = _load(path)
    _BASES[path] = copy.deepcopy(settings)  # what a later save merges against (defaults included)
    return settings, warnings


def _load(path: Path) -> tuple[Settings, list[str]]:
    try:
        data, problem = _read(path)
    except FileNotFoundError:
        return Settings(), []
    except InputError as exc:  # unreadable (permissions, a folder of that name): leave it where it is
        return Settings(), [f"Settings file {path} {exc.reason}; using the default settings."]
    if data is None:
        warnings = [f"Settings file {path} {problem}; using the default settings."]
        _keep_aside(path, warnings)
        return Settings(), warnings
    settings, problems = settings_from_dict(data)
    warnings = [f"Settings file {path}: {p}; using the default." for p in problems]
    if problems:
        _keep_aside(path, warnings)
    return settings, warnings


def _merge(base: Settings, ours: Settings, theirs: Settings) -> Settings:
    """``theirs`` with every setting ``ours`` changed since ``base`` (and every changed extra key)."""
    merged = copy.deepcopy(theirs)
    for f in fields(Settings):
        if f.name == "extra":
            continue
        if getattr(ours, f.name) != getattr(base, f.name):
            setattr(merged, f.name, copy.deepcopy(getattr(ours, f.name)))
    for key in {*base.extra, *ours.extra}:
        if ours.extra.get(key) != base.extra.get(key):
            if key in ours.extra:
                merged.extra[key] = copy.deepcopy(ours.extra[key])
            else:
                merged.extra.pop(key, None)
    return merged


def save_settings(settings: Settings, paths: UserPaths | None = None) -> Path:
    """Write ``settings.json`` atomically (the previous one kept as ``.bak``) and return its path.

    Holds the file's lock and re-reads it: when another window saved it since this process last
    read it, only the settings this one changed are written over it (a three-way merge with what
    was read), and ``settings`` is updated in place to what was saved. Creates the config folder
    on first use. Raises :class:`StorageError` when a value cannot be saved or the file cannot be
    written; the old file is then untouched.
    """
    paths = paths or user_paths()
    settings_to_dict(settings)  # a bad value is refused before anything is touched
    ensure_dir(paths.config_dir)
    path = paths.config_dir / SETTINGS_FILENAME
    with locked(path):
        merged = settings
        base = _BASES.get(path)
        if base is not None:
            try:
                data, _problem = _read(path)
            except (FileNotFoundError, InputError):
                data = None
            if data is not None:
                theirs, _dropped = settings_from_dict(data)
                if theirs != base:
                    merged = _merge(base, settings, theirs)
        data = settings_to_dict(merged)
        try:
            text = json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
        except (TypeError, ValueError) as exc:
            raise StorageError("extra", f"cannot save the settings: a value is not JSON ({exc})") from None
        written = atomic_write_text(path, text, backup=True)
        if merged is not settings:
            for f in fields(Settings):
                setattr(settings, f.name, getattr(merged, f.name))
        _BASES[path] = copy.deepcopy(settings)
    return written


# --- recent files ------------------------------------------------------------------------------
def add_recent_file(settings: Settings, path: str | os.PathLike[str]) -> Settings:
    """A copy of ``settings`` with ``path`` first in the recent files.

    Paths are stored absolute and normalised, without duplicates, at most ``MAX_RECENT_FILES``.
    """
    new = copy.deepcopy(settings)
    p = normalise_path(path)
    key = os.path.normcase(p)
    rest = [r for r in settings.recent_files if os.path.normcase(normalise_path(r)) != key]
    new.recent_files = _dedupe([p, *rest])
    return new


def remove_recent_file(settings: Settings, path: str | os.PathLike[str]) -> Settings:
    """A copy of ``settings`` without ``path`` in the recent files."""
    new = copy.deepcopy(settings)
    key = os.path.normcase(normalise_path(path))
    new.recent_files = [r for r in settings.recent_files if os.path.normcase(normalise_path(r)) != key]
    return new


def existing_recent_files(settings: Settings) -> list[str]:
    """The recent files that still exist, most recent first (the settings are not changed)."""
    return [p for p in settings.recent_files if os.path.isfile(p)]
