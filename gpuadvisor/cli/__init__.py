"""``gpuadvisor-cli``: the command line over the estimation core.

    gpuadvisor-cli estimate SCENARIO.json [--gpu ID ...] [--all] [--json]
    gpuadvisor-cli gpus [--json]
    gpuadvisor-cli models [--json]
    gpuadvisor-cli default-scenario
    gpuadvisor-cli report SCENARIO.json -o REPORT.pdf [--page-size A4|Letter] [--gpu ID ...]
    gpuadvisor-cli catalog export gpus|models -o FILE [--format csv|json] [--json]
    gpuadvisor-cli catalog import gpus|models FILE [--format csv|json] [--dry-run] [--json]
    gpuadvisor-cli prices import FILE [FILE...] [--provider NAME] [--dry-run] [--json]
    gpuadvisor-cli measure add SCENARIO.json --gpu ID [--count N] [--tokens-per-s X | --seconds-per-step X]
                               [--peak-memory-gib X | --smi-log FILE] [--engine E] [--note T] [--json]
    gpuadvisor-cli measure list [--json]
    gpuadvisor-cli measure diagnose SMI_LOG.csv [--json]
    gpuadvisor-cli calibrate [--show | --import FILE] [--export FILE] [--json]

The catalogs are the bundled ones plus the user's own edits (``user-catalog.json`` in the user
data folder, see ``docs/catalog.md``); ``--no-user-catalog``, before or after the command name,
uses the bundled catalogs alone. Problems with the user's edits are printed once, as
``warning:`` lines on stderr. ``catalog import`` applies the good rows of a CSV or JSON file to
the user's catalog (``--dry-run``: report only), prints what was added, updated and rejected, and
exits with 1 when some rows were rejected.

``prices import`` reads offline gpuhunt or SkyPilot price lists and writes the matched GPUs'
on-demand prices into the user's catalog. ``measure`` records measured runs in the user data
folder (``measurements.json``) and in the scenario file, and compares them with the estimate;
``calibrate`` fits per GPU and engine factors to them (``calibration.json``), which
``estimate --calibrated`` and ``report --calibrated`` apply (see ``docs/measurements.md``).

``report`` is the only command that needs Qt (imported when it runs); without a display it
renders offscreen. Bad input prints one line (``error: workload.batch_size: must be ...``) and exits with 2;
never a traceback. Anything unexpected prints one ``error: something went wrong (...)`` line naming
the log file that holds the traceback, and exits with 1; ``--debug`` (before the command name) also
prints the traceback.
"""

from .parser import build_parser, main

__all__ = ["build_parser", "main"]
