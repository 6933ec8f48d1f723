"""Frozen entry point of ``gpuadvisor-cli`` (the command line)."""

import sys

from gpuadvisor.cli import main

sys.exit(main())
