"""Errors raised by the core for bad input.

Every error names the field (a dotted path such as ``workload.batch_size`` or a catalog
column with its line) and the offending value, so a user interface can print it on one
line and point at the field.
"""

from __future__ import annotations

from collections.abc import Iterable


class InputError(ValueError):
    """A value given to the core is invalid; ``field`` says which one."""

    def __init__(self, field: str, message: str, value: object = None) -> None:
        self.field = field
        self.value = value
        self.reason = message
        shown = "" if value is None else f" (got {_short(value)})"
        super().__init__(f"{field}: {message}{shown}")


#: Longest value an error message quotes: a hostile file's 100 MB cell is shown by its start.
MAX_SHOWN_CHARS = 120


def _short(value: object) -> str:
    """``repr(value)``, cut to :data:`MAX_SHOWN_CHARS` (a long string is cut before its repr is made)."""
    text = repr(value[: MAX_SHOWN_CHARS + 1] if isinstance(value, str) else value)
    return text if len(text) <= MAX_SHOWN_CHARS else text[:MAX_SHOWN_CHARS] + "..."


#: Most unknown keys an error or a warning names; the rest are counted.
MAX_NAMED_KEYS = 8
#: Longest key an error or a warning names (a hostile file's key may be megabytes long).
MAX_KEY_CHARS = 60


def short_key(key: str) -> str:
    """``key``, cut to :data:`MAX_KEY_CHARS` with an ellipsis."""
    return key if len(key) <= MAX_KEY_CHARS else key[:MAX_KEY_CHARS] + "..."


def keys_phrase(keys: Iterable[str]) -> str:
    """``a, b, c`` naming at most :data:`MAX_NAMED_KEYS` keys, each cut by :func:`short_key`, and
    "and N more" for the rest."""
    keys = list(keys)
    named = ", ".join(short_key(k) for k in keys[:MAX_NAMED_KEYS])
    rest = len(keys) - MAX_NAMED_KEYS
    return named + (f" and {rest:,} more" if rest > 0 else "")


class CatalogError(InputError):
    """A catalog file (GPUs, models, engine profiles) is unreadable or has an invalid row."""


class ScenarioError(InputError):
    """A scenario file is unreadable or holds an invalid value."""


class ModelConfigError(InputError):
    """A Hugging Face config.json or safetensors folder cannot be turned into a model."""


def error_line(exc: InputError, typed_paths: list[object] | tuple[object, ...] = ()) -> str:
    """The error's one line, naming a file as the user typed its path: the core names files by
    their base name, which is ambiguous when the path has folders in it."""
    text = str(exc)
    for path in typed_paths:
        if (
            isinstance(path, str)
            and path != exc.field
            and path.replace("\\", "/").rsplit("/", 1)[-1] == exc.field
            and text.startswith(exc.field + ":")
        ):
            return f"{path}{text[len(exc.field) :]}"
    return text
