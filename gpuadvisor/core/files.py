"""Files nobody vetted: the one guarded way to read them, and the one check before writing one.

gpuadvisor reads files that come from anywhere (a ``.gguf`` from a download folder, a
``config.json`` from the Hub, a price list, a colleague's scenario, the user's own stored files,
which another program may have damaged). Every reader goes through this module, so that no file
can hang the program, exhaust its memory or end it with a traceback:

* **Regular files only.** A file is opened without blocking (``O_NONBLOCK``: a FIFO with no
  writer opens at once instead of waiting) and checked with ``fstat`` on the open descriptor
  (no race between the check and the read): a folder, a FIFO, a device or a socket is refused
  in one line.
* **A size cap per kind** (:data:`MAX_BYTES`, listed in ``docs/security.md``), checked before
  reading and again while reading (a file may grow, and ``/proc`` files claim size 0): at most
  ``cap + 1`` bytes are ever read.
* **JSON** (:func:`parse_json`) keeps whole numbers to :data:`MAX_INT_DIGITS` digits, refuses
  ``NaN``, ``Infinity`` and numbers that overflow a float, text that is not valid Unicode (lone
  surrogates) and nesting deeper than :data:`MAX_JSON_DEPTH`; the error names the file and the
  dotted path of the value (``s.json: workload.batch_size: ...``). ``RecursionError``,
  ``MemoryError`` and ``ValueError`` from the parser become the same one-line error.
* **CSV** errors (a cell over the ``csv`` module's 131,072-character limit, a NUL) name the
  file and the line (:func:`csv_problem`).
* **Text fields** are capped (:func:`check_text`; a name at :data:`MAX_NAME_CHARS` characters)
  and numbers bounded by physical limits that the message names (:func:`check_at_most`).
* ``~user`` paths whose user does not exist are an error naming the field (:func:`expand_user`),
  not a ``RuntimeError``.

Writing: :func:`output_target` is what a file the user names as output (``-o FILE``, Save As)
resolves to: a symbolic link is followed, so the write replaces its target and the link stays;
an existing folder, device or FIFO is refused (a write would replace a device node, or block
on a FIFO). The write itself is an atomic rename in the target's folder
(:mod:`gpuadvisor.storage.atomic`, and :func:`gpuadvisor.core.formats.scenario.save_scenario`).

Nothing read from any file is ever executed, imported or passed to a shell.

References: ``open(2)`` (``O_NONBLOCK`` on a FIFO), ``fstat(2)``; Python's ``json`` module
(``parse_int``, ``parse_float``, ``parse_constant`` hooks) and ``sys.set_int_max_str_digits``
(CVE-2020-10735, why unbounded integer text is a denial of service); the ``csv`` module's
``field_size_limit``.
"""

from __future__ import annotations

import csv
import json
import math
import os
import stat
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Any

from .errors import InputError

#: Makes the error a reader raises: ``error(field, message)`` (an :class:`InputError` subclass).
ErrorType = Callable[[str, str], InputError]


class FileKind(StrEnum):
    """The kinds of files gpuadvisor reads, each with its own size cap (:data:`MAX_BYTES`)."""

    SCENARIO = "scenario"
    MODEL_CONFIG = "model config"
    SAFETENSORS_INDEX = "safetensors index"
    CATALOG = "catalog"
    PRICE_LIST = "price list"
    SMI_LOG = "nvidia-smi log"
    MEASUREMENTS = "measurements"
    CALIBRATION = "calibration profile"
    SETTINGS = "settings"
    MODEL_MANIFEST = "model manifest"


MIB = 1024 * 1024

#: Largest file of each kind that is read. Real files are far smaller: a scenario or config.json
#: is a few kilobytes; the largest safetensors index (DeepSeek-V3, 91,991 tensors) is about 9 MB;
#: a gpuhunt or SkyPilot price list of one cloud is a few MB; an nvidia-smi log sampled every second
#: on 8 GPUs for a day is about 100 MB.
MAX_BYTES: dict[FileKind, int] = {
    FileKind.SCENARIO: 16 * MIB,
    FileKind.MODEL_CONFIG: 16 * MIB,
    FileKind.SAFETENSORS_INDEX: 64 * MIB,
    FileKind.CATALOG: 16 * MIB,
    FileKind.PRICE_LIST: 64 * MIB,
    FileKind.SMI_LOG: 128 * MIB,
    FileKind.MEASUREMENTS: 32 * MIB,
    FileKind.CALIBRATION: 4 * MIB,
    FileKind.SETTINGS: 1 * MIB,
    FileKind.MODEL_MANIFEST: 1 * MIB,
}

#: Deepest nesting of JSON objects and lists accepted (a scenario with measurements is 5 deep).
MAX_JSON_DEPTH = 64
#: Most digits of a whole number in JSON (2**64 has 20; no count gpuadvisor reads needs more).
MAX_INT_DIGITS = 24
#: Longest name (GPU, model, scenario, measurement note lines) a file may give.
MAX_NAME_CHARS = 200
#: Longest free text (notes, sources) a file may give.
MAX_TEXT_CHARS = 20_000

_TYPES = (
    (stat.S_ISDIR, "is a folder, not a file"),
    (stat.S_ISFIFO, "is a named pipe (FIFO), not a regular file"),
    (stat.S_ISCHR, "is a device, not a regular file"),
    (stat.S_ISBLK, "is a device, not a regular file"),
    (stat.S_ISSOCK, "is a socket, not a regular file"),
)


def _raise(error: ErrorType, name: str, field: str | None, text: str) -> InputError:
    """The error for file ``name``: ``name: text``, or ``field: name text`` when a field is given."""
    if field is None:
        return error(name, text)
    return error(field, f"{name} {text}")


def _mb(n: int) -> str:
    return f"{n / MIB:,.0f} MB" if n >= MIB else f"{n:,} bytes"


def expand_user(path: str | os.PathLike[str], field: str, error: ErrorType = InputError) -> Path:
    """``Path(path).expanduser()``; a ``~name`` whose user does not exist is an error naming ``field``."""
    p = Path(path)
    try:
        return p.expanduser()
    except RuntimeError:
        head = str(p).split("/", 1)[0].split("\\", 1)[0]
        raise error(field, f"{head} names no user of this computer (in '{p}')") from None


def not_regular(mode: int) -> str | None:
    """Why a file of ``mode`` (``st_mode``) is refused, or None for a regular file."""
    for test, reason in _TYPES:
        if test(mode):
            return reason
    return None if stat.S_ISREG(mode) else "is not a regular file"


class UntrustedFile:
    """An open regular file (see :func:`open_untrusted`); ``size`` is from ``fstat``."""

    def __init__(self, fd: int, size: int, name: str) -> None:
        self.file = os.fdopen(fd, "rb")
        self.size = size
        self.name = name

    def __enter__(self) -> UntrustedFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.file.close()

    def read(self, n: int) -> bytes:
        """Up to ``n`` bytes from the current position."""
        return self.file.read(n)


def open_untrusted(
    path: str | os.PathLike[str], field: str | None = None, error: ErrorType = InputError
) -> UntrustedFile:
    """Open ``path`` for reading if it is a regular file; otherwise raise one line.

    Never blocks on a FIFO and never follows a check with a separate open: the type is that of
    the open descriptor. Use as a context manager. Errors name the file by its base name.
    """
    p = Path(path)
    name = p.name or str(p)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    flags |= getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(p, flags)
    except FileNotFoundError:
        raise _raise(error, name, field, "file not found") from None
    except IsADirectoryError:
        raise _raise(error, name, field, "is a folder, not a file") from None
    except OSError as exc:
        raise _raise(error, name, field, f"cannot be read ({exc.strerror or exc})") from None
    except ValueError:  # a NUL in the path
        raise _raise(error, name, field, "is not a valid file name") from None
    try:
        info = os.fstat(fd)
        problem = not_regular(info.st_mode)
        if problem is None and hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
    except OSError as exc:
        os.close(fd)
        raise _raise(error, name, field, f"cannot be read ({exc.strerror or exc})") from None
    if problem is not None:
        os.close(fd)
        raise _raise(error, name, field, problem)
    return UntrustedFile(fd, info.st_size, name)


def read_untrusted(
    path: str | os.PathLike[str], kind: FileKind, field: str | None = None, error: ErrorType = InputError
) -> bytes:
    """The bytes of a regular file of ``kind``, refused in one line when it is larger than its cap."""
    cap = MAX_BYTES[kind]
    with open_untrusted(path, field, error) as f:
        too_big = _raise(
            error, f.name, field, f"is larger than {_mb(cap)}, the most a {kind} file may be; it is not one"
        )
        if f.size > cap:
            raise too_big
        try:
            data = f.read(cap + 1)
        except OSError as exc:
            raise _raise(error, f.name, field, f"cannot be read ({exc.strerror or exc})") from None
        except MemoryError:
            raise too_big from None
    if len(data) > cap:
        raise too_big
    return data


def decode_text(
    raw: bytes, name: str, field: str | None = None, error: ErrorType = InputError, what: str = ""
) -> str:
    """UTF-8 text (a leading byte-order mark dropped); binary content and bad bytes refused."""
    hint = f" (is it {what}?)" if what else ""
    if b"\x00" in raw:
        raise _raise(error, name, field, f"is not a text file (binary content){hint}")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _raise(
            error, name, field, f"is not UTF-8 text (undecodable byte at offset {exc.start:,}){hint}"
        ) from None


def read_text(
    path: str | os.PathLike[str],
    kind: FileKind,
    field: str | None = None,
    error: ErrorType = InputError,
    what: str = "",
) -> str:
    """:func:`read_untrusted` then :func:`decode_text`."""
    raw = read_untrusted(path, kind, field, error)
    return decode_text(raw, Path(path).name, field, error, what)


# --- JSON -------------------------------------------------------------------------------------------
class _Refused:
    """Put by the parser's hooks where a value was refused; the tree walk reports its path."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


def _parse_int(text: str) -> object:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        return _Refused(f"is a whole number of {digits:,} digits; at most {MAX_INT_DIGITS} are accepted")
    return int(text)


def _parse_float(text: str) -> object:
    value = float(text)
    if not math.isfinite(value):
        shown = text if len(text) <= 24 else text[:21] + "..."
        return _Refused(f"is a number too large to hold ({shown})")
    return value


def _parse_constant(text: str) -> object:
    return _Refused(f"is {text}, which is not a number")


def _path(parts: tuple[object, ...]) -> str:
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


def _valid_unicode(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_tree(data: Any, name: str, field: str | None, error: ErrorType) -> None:
    """Walk the parsed value without recursion: depth, refused numbers, invalid Unicode."""
    stack: list[tuple[Any, tuple[object, ...]]] = [(data, ())]
    while stack:
        value, where = stack.pop()
        if len(where) > MAX_JSON_DEPTH:
            raise _raise(error, name, field, f"nests deeper than {MAX_JSON_DEPTH} levels (at {_path(where)})")
        if isinstance(value, dict):
            for key, item in value.items():
                if not _valid_unicode(key):
                    raise _raise(
                        error, name, field, f"has a key that is not valid Unicode (in {_path(where)})"
                    )
                stack.append((item, (*where, key)))
        elif isinstance(value, list):
            stack.extend((item, (*where, i)) for i, item in enumerate(value))
        elif isinstance(value, _Refused):
            raise _raise(error, name, field, f"{_path(where)}: {value.reason}")
        elif isinstance(value, str) and not _valid_unicode(value):
            raise _raise(error, name, field, f"{_path(where)}: is text that is not valid Unicode")


def parse_json(text: str, name: str, field: str | None = None, error: ErrorType = InputError) -> Any:
    """``json.loads(text)`` with the limits of the module docstring; errors name ``name`` and the value."""
    try:
        data = json.loads(
            text, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant
        )
    except json.JSONDecodeError as exc:
        raise _raise(
            error, name, field, f"is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        ) from None
    except RecursionError:
        raise _raise(error, name, field, f"nests deeper than {MAX_JSON_DEPTH} levels") from None
    except MemoryError:
        raise _raise(error, name, field, "is too large to read") from None
    except (ValueError, TypeError) as exc:
        raise _raise(error, name, field, f"is not valid JSON ({exc})") from None
    _check_tree(data, name, field, error)
    return data


# --- CSV --------------------------------------------------------------------------------------------
def csv_problem(exc: csv.Error) -> str:
    """What a ``csv.Error`` means, in the user's words."""
    text = str(exc)
    if "field larger than field limit" in text:
        return f"has a cell longer than {csv.field_size_limit():,} characters"
    if "NUL" in text:
        return "holds binary content (a NUL byte)"
    return f"is not valid CSV ({text})"


# --- values -----------------------------------------------------------------------------------------
def check_text(field: str, value: object, limit: int = MAX_NAME_CHARS, error: ErrorType = InputError) -> None:
    """Refuse text longer than ``limit`` characters (the error shows its start, not all of it)."""
    if isinstance(value, str) and len(value) > limit:
        raise error(
            field,
            f"is {len(value):,} characters long; at most {limit:,} are accepted (starts {value[:40]!r})",
        )


def check_at_most(field: str, value: float, limit: float, why: str, error: ErrorType = InputError) -> None:
    """Refuse a number above a physical limit; ``why`` names it (``"the largest GPU has 288 GB"``)."""
    if value > limit:
        raise error(field, f"must be at most {limit:g} ({why}); got {value:g}")


# --- writing ----------------------------------------------------------------------------------------
def output_target(
    path: str | os.PathLike[str], field: str | None = None, error: ErrorType = InputError
) -> Path:
    """The file a write to ``path`` replaces: symbolic links followed; folders, devices and FIFOs refused.

    A missing file (or a link to one) is fine: the write creates it.
    """
    p = Path(path)
    target = Path(os.path.realpath(p)) if p.is_symlink() else p
    try:
        info = target.stat()
    except FileNotFoundError:
        return target
    except OSError as exc:
        raise _raise(error, p.name or str(p), field, f"cannot be written ({exc.strerror or exc})") from None
    problem = not_regular(info.st_mode)
    if problem is not None:
        shown = p.name or str(p)
        if target != p:
            shown = f"{shown} (a link to {target})"
        raise _raise(error, shown, field, problem)
    return target
