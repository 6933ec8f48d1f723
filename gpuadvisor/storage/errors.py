"""The one error the storage layer raises for problems with the user's files and folders."""

from __future__ import annotations

from pathlib import Path

from ..core.errors import InputError


class StorageError(InputError):
    """A user file or folder cannot be read, written or created.

    ``field`` is the file's or folder's name (``settings.json``) or a setting's name
    (``page_size``); ``path`` is the full path when there is one. Unlike other
    :class:`InputError` subclasses, ``str(error)`` is the message alone, because every storage
    message already names its file: ``cannot write settings.json: No space left on device``.
    """

    def __init__(self, field: str, message: str, value: object = None, path: Path | None = None) -> None:
        super().__init__(field, message, value)
        self.path = path
        self.args = (message,)

    def __str__(self) -> str:
        return self.reason


def os_reason(exc: OSError) -> str:
    """The operating system's short reason (``Permission denied``), without the errno noise."""
    return exc.strerror or str(exc) or type(exc).__name__


def read_error(field: str, message: str) -> StorageError:
    """A :class:`StorageError` for a file that cannot be read: ``cannot read old.json: file not found``."""
    return StorageError(field, f"cannot read {field}: {message}")
