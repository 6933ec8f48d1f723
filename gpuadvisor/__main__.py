"""``python -m gpuadvisor`` and the ``gpuadvisor`` launcher: the desktop window.

Without a display (a headless Linux machine), the comparison of the scenario (or the default
one) is printed in the terminal instead.
"""

from __future__ import annotations

import sys


def print_comparison(args: list[str]) -> int:
    """Print the comparison for a scenario file (or the default scenario) across the catalog."""
    from .cli import default_scenario, load_catalogs, render_estimate
    from .core.errors import InputError
    from .core.estimation.estimate import estimate
    from .core.formats.scenario import load_scenario

    try:
        scenario = load_scenario(args[0]) if args else default_scenario()
        gpus, models = load_catalogs()
        print(render_estimate(estimate(scenario, gpus, models)))
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def main(argv: list[str] | None = None) -> int:
    from .gui.app import main as gui_main
    return gui_main(argv)


if __name__ == "__main__":
    sys.exit(main())
