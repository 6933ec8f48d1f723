# SPDX-License-Identifier: MIT
"""Frozen entry point of ``gpuadvisor`` (the window; ``--help``/``--version`` work without a display).

On Linux the same executable is also ``gpuadvisor-cli`` (a symbolic link to it): started under
that name, it runs the command line. See docs/packaging.md ("Two commands").
"""

import os
import sys

if os.path.basename(sys.argv[0]).startswith("gpuadvisor-cli"):
    from gpuadvisor.cli import main
else:
    from gpuadvisor.__main__ import main

sys.exit(main())
