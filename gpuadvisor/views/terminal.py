"""The comparison in a terminal: what ``python -m gpuadvisor`` prints when no display is found."""

from __future__ import annotations

import sys

from ..core.errors import InputError, error_line
from ..core.estimation.estimate import estimate
from ..core.formats.scenario import default_scenario, load_scenario
from ..core.presentation.text import render_estimate, text_warnings
from ..storage.user_catalog_store import load_catalogs


def print_comparison(args: list[str]) -> int:
    """Print the comparison for a scenario file (or the default scenario) across the catalog."""
    try:
        scenario = load_scenario(args[0]) if args else default_scenario()
        gpus, models = load_catalogs()
        est = estimate(scenario, gpus, models)
        print(render_estimate(est, warnings=False))  # the answer on stdout, as the CLI prints it
        sys.stdout.flush()
        for warning in text_warnings(est):
            print(f"warning: {warning}", file=sys.stderr)
    except InputError as exc:
        print(f"error: {error_line(exc, tuple(args))}", file=sys.stderr)
        return 2
    return 0
