"""What every command shares: exit codes, warnings on stderr, the saved calibration profile."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from ..core.errors import InputError
from ..core.estimation.calibration import CalibrationProfile
from ..storage import load_calibration

EXIT_INPUT = 2
EXIT_REJECTED_ROWS = 1
EXIT_NOTHING_FITTED = 1
#: Anything unexpected: one ``error:`` line, the traceback in the log file (``--debug`` prints it).
EXIT_UNEXPECTED = 1


def _warn(warnings: Sequence[str]) -> None:
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)


def saved_profile() -> CalibrationProfile:
    """The saved calibration profile (``--calibrated``); InputError when there is none."""
    loaded = load_calibration()
    _warn(loaded.warnings)
    if loaded.value is None:
        raise InputError(
            "--calibrated",
            "no calibration profile is saved yet: record runs with "
            "'gpuadvisor-cli measure add', then fit one with 'gpuadvisor-cli "
            "calibrate' (or import one with 'gpuadvisor-cli calibrate --import FILE')",
        )
    return loaded.value
