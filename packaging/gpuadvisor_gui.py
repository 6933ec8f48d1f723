"""Frozen entry point of ``gpuadvisor`` (the window; ``--version`` works without a display)."""

import sys

from gpuadvisor.__main__ import main

sys.exit(main())
