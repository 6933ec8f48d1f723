"""The argument parser (every command and option) and :func:`main`, which turns errors into one line."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from .. import __version__
from ..core.errors import InputError, error_line
from ..core.formats.catalog_exchange import FORMATS
from ..core.formats.user_catalog import KINDS
from .catalog import cmd_catalog_export, cmd_catalog_import, cmd_prices_import
from .common import EXIT_INPUT, EXIT_UNEXPECTED
from .estimate import cmd_default_scenario, cmd_estimate, cmd_gpus, cmd_models
from .measure import cmd_calibrate, cmd_measure_add, cmd_measure_diagnose, cmd_measure_list
from .report import cmd_report

STRICT_HELP = "exit with status 3 when there is any warning (printed on stderr; the answer is still given)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gpuadvisor-cli",
        description="Will it fit, how fast, and what will it cost: across a GPU catalog.",
    )
    parser.add_argument("--version", action="version", version=f"gpuadvisor {__version__}")
    no_user_help = "use the bundled catalogs only, ignoring your own catalog edits"
    parser.add_argument("--no-user-catalog", action="store_true", help=no_user_help)
    parser.add_argument(
        "--debug",
        action="store_true",
        help="on an unexpected error, also print its traceback (it always goes to the log file)",
    )

    def no_user_option(p: argparse.ArgumentParser) -> None:
        # Accepted after the command name too; SUPPRESS keeps a value given before it.
        p.add_argument("--no-user-catalog", action="store_true", default=argparse.SUPPRESS, help=no_user_help)

    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("estimate", help="compare GPUs for a scenario file")
    no_user_option(p)
    p.add_argument("scenario", help="scenario JSON file (see docs/scenario.md)")
    p.add_argument("--gpu", action="append", metavar="ID", help="only these GPU ids (repeatable)")
    p.add_argument(
        "--all",
        action="store_true",
        help="show every count, parallelism and runner-up layout, not one row per GPU",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument(
        "--calibrated",
        action="store_true",
        help="apply the saved calibration profile (see 'gpuadvisor-cli calibrate')",
    )
    p.add_argument("--strict", action="store_true", help=STRICT_HELP)
    p.set_defaults(func=cmd_estimate)
    p = sub.add_parser("gpus", help="list the GPU catalog")
    p.add_argument("--json", action="store_true")
    no_user_option(p)
    p.set_defaults(func=cmd_gpus)
    p = sub.add_parser("models", help="list the model presets")
    p.add_argument("--json", action="store_true")
    no_user_option(p)
    p.set_defaults(func=cmd_models)
    p = sub.add_parser(
        "report", help="write a PDF comparison report (recommendation, table, charts, rent vs buy)"
    )
    p.add_argument("scenario", help="scenario JSON file (see docs/scenario.md)")
    p.add_argument("-o", "--output", required=True, metavar="REPORT.pdf", help="the PDF to write")
    p.add_argument("--page-size", choices=("A4", "Letter"), default="A4", help="paper size (default A4)")
    p.add_argument("--gpu", action="append", metavar="ID", help="only these GPU ids (repeatable)")
    p.add_argument(
        "--calibrated", action="store_true", help="apply the saved calibration profile (the report says so)"
    )
    p.add_argument("--strict", action="store_true", help=STRICT_HELP)
    no_user_option(p)
    p.set_defaults(func=cmd_report)
    p = sub.add_parser("default-scenario", help="print the default scenario as JSON (a starting point)")
    p.set_defaults(func=cmd_default_scenario)
    catalog = sub.add_parser("catalog", help="export or import a catalog table (your own catalog)")
    catalog_sub = catalog.add_subparsers(dest="catalog_command", required=True)
    p = catalog_sub.add_parser(
        "export", help="write the effective catalog (bundled + your edits) as CSV or JSON"
    )
    p.add_argument("kind", choices=KINDS)
    p.add_argument(
        "-o", "--output", required=True, metavar="FILE", help="the file to write (replaced atomically)"
    )
    p.add_argument("--format", choices=FORMATS, help="csv or json (default: from the file name, else csv)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    no_user_option(p)
    p.set_defaults(func=cmd_catalog_export)
    p = catalog_sub.add_parser("import", help="apply the rows of a CSV or JSON file to your own catalog")
    p.add_argument("kind", choices=KINDS)
    p.add_argument("file", help="CSV (with or without the metadata line) or JSON file")
    p.add_argument(
        "--format", choices=FORMATS, help="csv or json (default: from the file name or its content)"
    )
    p.add_argument("--dry-run", action="store_true", help="report what would change; change nothing")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_catalog_import)

    prices = sub.add_parser("prices", help="import cloud price lists (gpuhunt, SkyPilot) into your catalog")
    prices_sub = prices.add_subparsers(dest="prices_command", required=True)
    p = prices_sub.add_parser(
        "import", help="put the on-demand prices of offline price lists into your GPU catalog"
    )
    p.add_argument(
        "files", nargs="+", metavar="FILE", help="gpuhunt <provider>.csv or SkyPilot vms.csv files"
    )
    p.add_argument("--provider", metavar="NAME", help="provider name (default: from each file's name)")
    p.add_argument("--dry-run", action="store_true", help="report what would change; change nothing")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_prices_import)

    measure = sub.add_parser("measure", help="record measured runs and compare them with the estimate")
    measure_sub = measure.add_subparsers(dest="measure_command", required=True)
    p = measure_sub.add_parser("add", help="record a measured run of a scenario")
    p.add_argument(
        "scenario", help="the scenario that ran (the run is added to it unless --no-scenario-update)"
    )
    p.add_argument("--gpu", required=True, metavar="ID", help="catalog id of the GPU it ran on")
    p.add_argument("--count", type=int, metavar="N", help="number of GPUs (default: the scenario's, else 1)")
    speed = p.add_mutually_exclusive_group()
    speed.add_argument(
        "--tokens-per-s",
        type=float,
        metavar="X",
        help="aggregate tokens/s (generated for inference, trained for training)",
    )
    speed.add_argument("--seconds-per-step", type=float, metavar="X", help="seconds per training step")
    p.add_argument(
        "--tokens-per-step",
        type=float,
        metavar="X",
        help="tokens per step (training default: batch x sequence length x GPUs)",
    )
    memory = p.add_mutually_exclusive_group()
    memory.add_argument("--peak-memory-gib", type=float, metavar="X", help="peak memory per GPU in GiB")
    memory.add_argument(
        "--smi-log", metavar="FILE", help="an nvidia-smi --query-gpu CSV log: its peak memory.used"
    )
    p.add_argument(
        "--memory-source",
        choices=("typed", "torch"),
        default="typed",
        help="typed: what nvidia-smi showed (default); torch: torch.cuda.max_memory_allocated",
    )
    p.add_argument(
        "--smi-columns", metavar="LIST", help="the --query-gpu fields of a log written with noheader"
    )
    p.add_argument("--engine", metavar="E", help="engine profile id (default: the scenario's)")
    p.add_argument("--note", metavar="T", help="free text")
    p.add_argument(
        "--no-scenario-update", action="store_true", help="do not add the run to the scenario file"
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    no_user_option(p)
    p.set_defaults(func=cmd_measure_add)
    p = measure_sub.add_parser("list", help="list the recorded runs with their estimates and errors")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    no_user_option(p)
    p.set_defaults(func=cmd_measure_list)
    p = measure_sub.add_parser(
        "diagnose", help="diagnose an nvidia-smi log (utilization, memory, bottlenecks)"
    )
    p.add_argument("log", metavar="SMI_LOG.csv", help="nvidia-smi --query-gpu=... --format=csv -l 1 output")
    p.add_argument(
        "--smi-columns", metavar="LIST", help="the --query-gpu fields of a log written with noheader"
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_measure_diagnose)

    p = sub.add_parser(
        "calibrate", help="fit efficiency factors to your measured runs (or import/export a profile)"
    )
    source = p.add_mutually_exclusive_group()
    source.add_argument(
        "--import",
        dest="import_file",
        metavar="FILE",
        help="check a profile file and make it the saved profile (no fit)",
    )
    source.add_argument("--show", action="store_true", help="show the saved profile (no fit)")
    p.add_argument("--export", metavar="FILE", help="also write the profile to FILE (JSON)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    no_user_option(p)
    p.set_defaults(func=cmd_calibrate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except InputError as exc:
        typed = [v for value in vars(args).values() for v in (value if isinstance(value, list) else [value])]
        print(f"error: {error_line(exc, typed)}", file=sys.stderr)
        return EXIT_INPUT
    except BrokenPipeError:
        # The reader went away (``gpuadvisor-cli ... | head``): stop quietly, as other Unix tools
        # do, and keep the interpreter from reporting the pipe again when it flushes stdout.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except OSError as exc:
        print(
            f"error: {exc.strerror or exc}: {getattr(exc, 'filename', '') or ''}".rstrip(": "),
            file=sys.stderr,
        )
        return EXIT_INPUT
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one line, never a traceback
        return _unexpected(exc, bool(getattr(args, "debug", False)))


def _unexpected(exc: Exception, debug: bool) -> int:
    """Log the traceback to the log file, print one ``error:`` line (and the traceback with ``--debug``)."""
    import traceback

    from ..storage.logs import LOG_FILENAME, configure_logging, log_exception, shutdown_logging
    from ..storage.paths import ensure_dir, user_paths

    log_file = None
    try:
        # Only a log file that can be opened: configure_logging's stderr fallback would print the
        # traceback this line is meant to replace.
        folder = ensure_dir(user_paths().log_dir, "log folder")
        with open(folder / LOG_FILENAME, "a", encoding="utf-8"):
            pass
        log_file = configure_logging()
        if log_file is not None:
            log_exception(type(exc), exc, exc.__traceback__)
        shutdown_logging()
    except Exception:  # noqa: BLE001 - a log that cannot be written must not hide the error itself
        log_file = None
    detail = " ".join(str(exc).split())[:200]
    what = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
    where = f"; the details are in {log_file}" if log_file else ""
    hint = "" if debug else " (--debug shows them here)" if log_file else " (--debug shows the details)"
    if debug:
        traceback.print_exception(exc, file=sys.stderr)
    print(f"error: something went wrong ({what}){where}{hint}", file=sys.stderr)
    return EXIT_UNEXPECTED
