# SPDX-License-Identifier: MIT
"""The application: QApplication, error dialog and log, settings, the main window.

On Linux, Qt picks its platform plugin from ``QT_QPA_PLATFORM``, else X11 (xcb). A Wayland
session without XWayland has no X display, so :func:`choose_platform` switches to the ``wayland``
plugin when it and its system libraries are present, and otherwise says what to install
instead of letting Qt abort with a message about xcb.
"""

from __future__ import annotations

import gc
import logging
import os
import sys
import time
from collections.abc import Callable, MutableMapping
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # Qt is imported once the platform is chosen
    from PySide6.QtWidgets import QWidget

    from .main_window import MainWindow

log = logging.getLogger("gpuadvisor")


def has_display() -> bool:
    """Whether a window can be shown (an X/Wayland display, a non-Linux desktop, or an explicit Qt platform)."""
    if os.environ.get("QT_QPA_PLATFORM"):
        return True
    if not sys.platform.startswith("linux"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def install_excepthook(parent_getter: Callable[[], QWidget | None]) -> None:
    """Unexpected errors go to the log and to a readable dialog, never a silent crash."""
    from PySide6.QtWidgets import QMessageBox

    from ..storage.logs import log_exception

    def hook(exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        if issubclass(exc_type, KeyboardInterrupt):
            sys.__excepthook__(exc_type, exc, tb)
            return
        message = log_exception(exc_type, exc, tb)
        try:
            QMessageBox.critical(parent_getter(), "Something went wrong", message)
        except Exception:  # noqa: BLE001 - the dialog itself must never raise from the hook
            print(message, file=sys.stderr)

    sys.excepthook = hook


def build_window(scenario_path: str | None = None, deferred_charts: bool = True) -> MainWindow:
    """Create the state and the main window (a QApplication must exist)."""
    from ..core.errors import CatalogError, InputError
    from ..core.formats.scenario import default_scenario
    from ..core.formats.user_catalog import build_catalogs
    from ..core.specs.hardware import load_gpu_catalog
    from ..core.specs.presets import load_model_catalog
    from ..storage.settings import load_settings
    from ..storage.user_catalog_store import load_user_catalog
    from .main_window import MainWindow
    from .state import AppState

    settings, warnings = load_settings()
    for w in warnings:
        log.warning(w)
    # The bundled catalogs plus the user's edits; a damaged user file is set aside (never lost)
    # and explained, and the bundled catalogs are used.
    loaded = load_user_catalog()
    catalog_warnings = list(loaded.warnings)
    try:
        gpus, models, merge_warnings = build_catalogs(loaded.catalog)
        catalog_warnings += merge_warnings
    except CatalogError as exc:
        gpus, models = load_gpu_catalog(), load_model_catalog()
        catalog_warnings.append(f"Your catalog edits are not used: {exc}.")
    from ..storage.instances_store import load_instances

    instances, instance_warnings = load_instances()  # where to rent: bundled + the user's imports
    catalog_warnings += instance_warnings
    for w in catalog_warnings:
        log.warning(w)
    state = AppState(default_scenario(), gpus, models, instances=instances)
    window = MainWindow(
        state,
        settings=settings,
        default_scenario=default_scenario(),
        deferred_charts=deferred_charts,
        user_catalog=loaded.catalog,
        catalog_warnings=catalog_warnings,
        catalog_set_aside=loaded.set_aside is not None,
    )
    target = scenario_path or (
        settings.last_scenario if settings.last_scenario and os.path.exists(settings.last_scenario) else None
    )
    if target:
        try:
            state.open(target)
        except InputError as exc:
            from ..core.errors import error_line

            log.warning("could not reopen %s: %s", target, exc)
            what = "the scenario" if scenario_path else "the last scenario"
            window.statusBar().showMessage(f"Could not open {what}: {error_line(exc, [target])}", 10000)
    for w in warnings:
        window.statusBar().showMessage(w, 10000)
    # The start-up objects (Qt wrappers, catalogs, numpy, pyqtgraph) live for the whole session;
    # freezing them keeps the cyclic garbage collector from re-scanning them during every update.
    gc.collect()
    gc.freeze()
    return window


def seconds_since_process_start() -> float | None:
    """Wall time since this process started (Linux /proc), for the start-up benchmark."""
    try:
        with open("/proc/self/stat", encoding="ascii") as fh:
            start_ticks = float(fh.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime", encoding="ascii") as fh:
            uptime = float(fh.read().split()[0])
        return uptime - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


WAYLAND_LIBS = ("wayland-client", "wayland-cursor", "wayland-egl")


def wayland_plugin_present() -> bool:
    """Whether Qt's ``wayland`` platform plugin is installed next to this Qt."""
    from PySide6.QtCore import QLibraryInfo

    platforms = os.path.join(QLibraryInfo.path(QLibraryInfo.LibraryPath.PluginsPath), "platforms")
    try:
        return any(name.startswith("libqwayland") for name in os.listdir(platforms))
    except OSError:
        return False


def choose_platform(
    environ: MutableMapping[str, str] = os.environ,
    plugin_present: Callable[[], bool] = wayland_plugin_present,
    find_library: Callable[[str], str | None] | None = None,
) -> str | None:
    """Set ``QT_QPA_PLATFORM=wayland`` for a Wayland session without X display; return an error
    message (what to install) when that cannot work, else ``None``."""
    if (
        environ.get("QT_QPA_PLATFORM")
        or not sys.platform.startswith("linux")
        or environ.get("DISPLAY")
        or not environ.get("WAYLAND_DISPLAY")
    ):
        return None
    if find_library is None:
        from ctypes.util import find_library as found_by_ctypes

        find_library = found_by_ctypes
    if not plugin_present():
        return (
            "gpuadvisor: this is a Wayland session without XWayland (WAYLAND_DISPLAY is set, DISPLAY is "
            "not), and this Qt has no wayland platform plugin. Install XWayland (Debian/Ubuntu: "
            "sudo apt install xwayland; Fedora: sudo dnf install xorg-x11-server-Xwayland) and log in "
            "again, or use gpuadvisor-cli."
        )
    missing = [name for name in WAYLAND_LIBS if not find_library(name)]
    if missing:
        packages = " ".join(f"lib{name}{'1' if name == 'wayland-egl' else '0'}" for name in missing)
        return (
            f"gpuadvisor: this is a Wayland session without XWayland, and Qt's wayland plugin needs "
            f"{', '.join('lib' + m for m in missing)}. Install them (Debian/Ubuntu: sudo apt install "
            f"{packages}) or XWayland (sudo apt install xwayland)."
        )
    environ["QT_QPA_PLATFORM"] = "wayland"
    return None


def main(scenario_path: str | None = None) -> int:
    """Open the window on ``scenario_path`` (``python -m gpuadvisor`` parses the command line)."""
    if not has_display():
        print(
            "gpuadvisor: no display found (DISPLAY/WAYLAND_DISPLAY unset), so the window cannot open.\n"
            "Showing the comparison in the terminal instead; set QT_QPA_PLATFORM=offscreen or run it on a "
            "desktop for the window. gpuadvisor-cli has the full command line.\n",
            file=sys.stderr,
        )
        from ..views.terminal import print_comparison

        return print_comparison([scenario_path] if scenario_path else [])
    problem = choose_platform()
    if problem:
        print(problem, file=sys.stderr)
        return 1
    t0 = time.perf_counter()
    from PySide6.QtGui import QIcon
    from PySide6.QtWidgets import QApplication

    from ..resources import icon_path
    from ..storage.logs import configure_logging

    configure_logging()
    existing = QApplication.instance()
    app = existing if isinstance(existing, QApplication) else QApplication([sys.argv[0]])
    app.setApplicationName("gpuadvisor")
    app.setOrganizationName("gpuadvisor")
    icon = icon_path()
    if icon.exists():
        app.setWindowIcon(QIcon(str(icon)))
    window: MainWindow | None = None  # the dialog's parent once there is a window
    install_excepthook(lambda: window)
    window = main_window = build_window(scenario_path)
    main_window.show()
    if os.environ.get("GPUADVISOR_STARTUP_TIMING"):
        from PySide6.QtCore import QEventLoop, QTimer

        app.processEvents(QEventLoop.ProcessEventsFlag.ExcludeUserInputEvents)
        shown = time.perf_counter() - t0
        since_start = seconds_since_process_start()

        def report() -> None:
            if not main_window.charts_ready:
                QTimer.singleShot(20, report)
                return
            print(
                f"window shown after {shown:.3f} s in-process; charts ready after "
                f"{time.perf_counter() - t0:.3f} s; window shown {since_start or 0:.2f} s after process start",
                flush=True,
            )
            if os.environ.get("GPUADVISOR_STARTUP_TIMING") == "exit":
                main_window.state.dirty = False
                main_window.close()
                app.quit()

        QTimer.singleShot(0, report)
    return app.exec()
