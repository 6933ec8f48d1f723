"""``python -m gpuadvisor`` and the ``gpuadvisor`` launcher.

Prints the comparison of the default scenario across the bundled catalog (a scenario file
may be given as the first argument).
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from .cli import default_scenario, load_catalogs, render_estimate
    from .core.errors import InputError
    from .core.estimate import estimate
    from .core.scenario import load_scenario

    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in ("--version", "-V"):
        from . import __version__
        print(f"gpuadvisor {__version__}")
        return 0
    try:
        scenario = load_scenario(args[0]) if args else default_scenario()
        gpus, models = load_catalogs()
        print(render_estimate(estimate(scenario, gpus, models)))
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
