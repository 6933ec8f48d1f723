# SPDX-License-Identifier: MIT
"""``python -m gpuadvisor`` and the ``gpuadvisor`` launcher: the desktop window.

``--help`` and ``--version`` answer without a display. Without a display (a headless Linux
machine), the comparison of the scenario (or the default one) is printed in the terminal instead
(:mod:`gpuadvisor.views.terminal`).
"""

from __future__ import annotations

import argparse
import sys


def build_parser() -> argparse.ArgumentParser:
    """The window's command line (also the source of its manual page)."""
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="gpuadvisor",
        description="Open the gpuadvisor window: will a model fit on a GPU, how fast will it run and what "
        "will it cost, across a whole GPU catalog, offline. Without a display, the comparison "
        "is printed in the terminal instead.",
        epilog="The command line, for scripts and reports: gpuadvisor-cli --help. User files live in the "
        "platform's user folders; set GPUADVISOR_HOME to keep them all in one folder.",
    )
    parser.add_argument(
        "scenario",
        nargs="?",
        metavar="SCENARIO.json",
        help="a scenario file to open (default: the last one opened, else the default scenario)",
    )
    parser.add_argument("-V", "--version", action="version", version=f"gpuadvisor {__version__}")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    from .gui.app import main as gui_main

    return gui_main(args.scenario)


if __name__ == "__main__":
    sys.exit(main())
