"""``python -m gpuadvisor`` and the ``gpuadvisor`` launcher: the desktop window.

Without a display (a headless Linux machine), the comparison of the scenario (or the default
one) is printed in the terminal instead (:mod:`gpuadvisor.views.terminal`).
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from .gui.app import main as gui_main
    return gui_main(argv)


if __name__ == "__main__":
    sys.exit(main())
