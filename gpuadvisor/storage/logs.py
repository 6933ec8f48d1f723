"""The application log: one rotating UTF-8 file in the user log folder, and a short message for users.

:func:`configure_logging` attaches one handler to the root logger: a
:class:`~logging.handlers.RotatingFileHandler` on ``<log_dir>/gpuadvisor.log`` (1 MiB, 3 old
files kept), or, when that folder or file cannot be written, a handler on ``stderr``. It returns
the log file's path, or ``None`` in that fallback, so the caller knows whether there is a file
to point the user at. Calling it again never adds a second handler.

:func:`log_exception` has the signature of :data:`sys.excepthook`: the GUI installs it (through
its error dialog) so that a traceback goes to the log and the user reads one plain paragraph.
"""

from __future__ import annotations

import logging
import logging.handlers
import platform
import sys
from pathlib import Path
from types import TracebackType

from .errors import StorageError, os_reason
from .paths import UserPaths, ensure_dir, user_paths

LOG_FILENAME = "gpuadvisor.log"
LOG_MAX_BYTES = 1024 * 1024
LOG_BACKUP_COUNT = 3
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_MARK = "_gpuadvisor_handler"
_MAX_MESSAGE_CHARS = 300

log = logging.getLogger("gpuadvisor")


def _our_handlers() -> list[logging.Handler]:
    return [h for h in logging.getLogger().handlers if getattr(h, _MARK, False)]


def current_log_file() -> Path | None:
    """The file the log is being written to, or ``None`` (not configured, or stderr only)."""
    for handler in _our_handlers():
        if isinstance(handler, logging.FileHandler):
            return Path(handler.baseFilename)
    return None


def shutdown_logging() -> None:
    """Detach and close the handler :func:`configure_logging` installed (at exit, and in tests)."""
    root = logging.getLogger()
    for handler in _our_handlers():
        root.removeHandler(handler)
        handler.close()


def _install(handler: logging.Handler, level: int) -> None:
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    setattr(handler, _MARK, True)
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(level)


def configure_logging(paths: UserPaths | None = None, level: int = logging.INFO) -> Path | None:
    """Send the root logger's records to ``<log_dir>/gpuadvisor.log``; return that path.

    Returns ``None`` when the log folder or file cannot be written: records then go to
    ``stderr`` (or nowhere, when a windowed app has no ``stderr``), and one warning says why.
    Idempotent: a second call with the same folder keeps the handler; with another folder (or
    after a fallback) it replaces it. The folder is created here, not at import.
    """
    log_file = (paths or user_paths()).log_dir / LOG_FILENAME
    if current_log_file() == log_file:
        logging.getLogger().setLevel(level)
        return log_file
    shutdown_logging()
    try:
        ensure_dir(log_file.parent, "log folder")
        handler: logging.Handler = logging.handlers.RotatingFileHandler(
            log_file, maxBytes=LOG_MAX_BYTES, backupCount=LOG_BACKUP_COUNT, encoding="utf-8"
        )
    except StorageError as exc:
        problem = str(exc)
    except OSError as exc:
        problem = f"cannot open the log file {log_file}: {os_reason(exc)}"
    else:
        _install(handler, level)
        from .. import __version__

        log.info("gpuadvisor %s, Python %s, %s", __version__, platform.python_version(), platform.platform())
        return log_file
    fallback = logging.StreamHandler(sys.stderr) if sys.stderr is not None else logging.NullHandler()
    _install(fallback, level)
    log.warning("%s; logging to the error output only", problem)
    return None


def _one_paragraph(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX_MESSAGE_CHARS else text[: _MAX_MESSAGE_CHARS - 3] + "..."


def log_exception(exc_type: type[BaseException], exc: BaseException | None, tb: TracebackType | None) -> str:
    """Log the traceback at ERROR and return a one-paragraph message for the user (no traceback).

    The message names the error and says where the details are: the log file, or the error
    output when there is no log file.
    """
    if exc is None:
        log.error("Unexpected error: %s (no details)", exc_type.__name__)
        what = exc_type.__name__
    else:
        log.error("Unexpected error", exc_info=(exc_type, exc, tb))
        detail = _one_paragraph(str(exc))
        what = f"{exc_type.__name__}: {detail}" if detail else exc_type.__name__
    log_file = current_log_file()
    where = (
        f"The details were written to the log file {log_file}; please include it if you report the problem."
        if log_file is not None
        else "The details were written to the error output."
    )
    return f"Something went wrong ({what}). {where}"
