"""``python -m gpuadvisor.cli``: the same as ``gpuadvisor-cli``."""

import sys

from .parser import main

sys.exit(main())
