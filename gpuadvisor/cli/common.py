"""What every command shares: exit codes, warnings on stderr, the saved calibration profile."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..core.errors import InputError
from ..core.estimation.calibration import CalibrationProfile
from ..core.specs.hardware import GpuCatalog
from ..core.specs.instances import InstanceCatalog
from ..core.specs.presets import ModelCatalog
from ..storage import load_calibration

EXIT_INPUT = 2
EXIT_REJECTED_ROWS = 1
EXIT_NOTHING_FITTED = 1
#: ``--strict``: the answer was given, with warnings.
EXIT_WARNINGS = 3
#: Anything unexpected: one ``error:`` line, the traceback in the log file (``--debug`` prints it).
EXIT_UNEXPECTED = 1


def _warn(warnings: Sequence[str]) -> None:
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)


def load_inputs(args: argparse.Namespace) -> tuple[GpuCatalog, ModelCatalog, InstanceCatalog, int, list[str]]:
    """(GPU catalog, model catalog, instance snapshot, stale-price months, warnings) for a command
    that estimates: the user's edits and imports unless ``--no-user-catalog``; the warnings are
    printed on stderr here and returned, so ``--strict`` can count them."""
    from ..storage import load_settings
    from ..storage.instances_store import load_instances
    from ..storage.user_catalog_store import load_effective_catalogs

    use_user = not getattr(args, "no_user_catalog", False)
    gpus, models, warnings = load_effective_catalogs(use_user)
    if use_user:
        instances, more = load_instances()
    else:
        from ..core.specs.instances import bundled_instances

        instances, more = bundled_instances(), []
    settings, settings_warnings = load_settings()  # the stale-price age the user chose in the window
    warnings = list(warnings) + more + list(settings_warnings)
    _warn(warnings)
    return gpus, models, instances, int(settings.stale_price_months), warnings


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
