"""The pure estimation core: no Qt, no plotting, no user directories, no I/O at import.

Everything the window, the CLI and the report show is computed here, from a :class:`Scenario`
and a catalog, by :func:`gpuadvisor.core.estimation.estimate.estimate`. Its rooms, each only
importing the ones after it: ``presentation`` (report, wording, text, JSON), ``estimation``
(memory, speed, cost, advice, calibration), ``formats`` (files in and out), ``specs`` (GPUs,
models, workload, engines), then the shared ``formatting``, ``units`` and ``errors``
(see docs/architecture.md).
"""
