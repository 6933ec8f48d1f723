"""``report``: the PDF comparison report (the one command that needs Qt, imported when it runs)."""

from __future__ import annotations

import argparse
import datetime
import os
import sys

from ..core.errors import InputError
from ..core.estimation.estimate import estimate
from ..core.formats.scenario import load_scenario
from .common import EXIT_WARNINGS, _warn, load_inputs, saved_profile


def _use_offscreen_qt_when_headless() -> None:
    """Without an X11/Wayland display (and no platform chosen), render with Qt's offscreen platform."""
    if os.environ.get("QT_QPA_PLATFORM"):
        return
    if sys.platform.startswith(("win", "darwin")):
        return  # native platforms there need no display server
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        os.environ["QT_QPA_PLATFORM"] = "offscreen"


def _quiet_offscreen_warnings() -> None:
    """Drop the offscreen plugin's harmless "propagateSizeHints" warning; pass other Qt messages on."""
    from PySide6.QtCore import QMessageLogContext, QtMsgType, qInstallMessageHandler

    def handler(_mode: QtMsgType, _context: QMessageLogContext, message: str) -> None:
        if "propagateSizeHints" not in message:
            print(message, file=sys.stderr)

    qInstallMessageHandler(handler)


def cmd_report(args: argparse.Namespace) -> int:
    from ..core.presentation.report import build_report
    from ..core.presentation.text import text_warnings

    scenario = load_scenario(args.scenario)
    gpus, models, instances, months, loaded = load_inputs(args)
    profile = saved_profile() if args.calibrated else None
    est = estimate(scenario, gpus, models, gpu_ids=args.gpu or None, calibration=profile, instances=instances)
    today = datetime.date.today()
    report = build_report(est, gpus.meta, today, stale_after_months=months)
    warnings = text_warnings(est, today, months)
    _use_offscreen_qt_when_headless()
    try:
        from ..views.report_pdf import export_pdf  # Qt and pyqtgraph: only this command needs them
    except ImportError as exc:
        raise InputError("report", f"needs PySide6 and pyqtgraph, which cannot be imported ({exc})") from None
    _quiet_offscreen_warnings()
    stats = export_pdf(report, est, args.output, page_size=args.page_size)
    print(f"{args.output}: {stats.pages} pages in {stats.seconds:.1f} s")
    sys.stdout.flush()
    _warn(warnings)  # the report lists them too (section 6; a stale price at the pick in section 1)
    return EXIT_WARNINGS if args.strict and (warnings or loaded) else 0
