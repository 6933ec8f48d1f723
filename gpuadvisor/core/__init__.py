"""The pure estimation core: no Qt, no plotting, no user directories, no I/O at import.

Everything the window, the CLI and the report show is computed here, from a :class:`Scenario`
and a catalog, by :func:`gpuadvisor.core.estimation.estimate.estimate`.
"""
