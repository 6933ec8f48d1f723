"""Reading one of the user's stored files as untrusted input (another program may have damaged it).

:func:`read_stored` is what every loader of a stored file uses: it tidies the orphans a killed save
left (:func:`gpuadvisor.storage.locking.tidy`), returns None for a missing file (a first start),
and otherwise reads through :func:`gpuadvisor.core.files.read_untrusted`: a FIFO, device or folder
in the file's place, or a file over its kind's size cap, is an :class:`InputError` the loader turns
into "set aside with a warning", never a hang or a crash.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..core.errors import InputError
from ..core.files import ErrorType, FileKind, read_untrusted
from .locking import tidy


def read_stored(path: Path, kind: FileKind, error: ErrorType = InputError) -> bytes | None:
    """The file's bytes, or None when there is no file; :class:`InputError` (from ``error``) when
    it is not a regular file, is too large or cannot be read."""
    tidy(path)
    if not os.path.lexists(path):
        return None
    try:
        return read_untrusted(path, kind, error=error)
    except InputError:
        if not os.path.lexists(path):  # removed while we looked: a missing file after all
            return None
        raise
