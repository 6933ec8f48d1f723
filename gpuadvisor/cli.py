"""``gpuadvisor-cli``: the command line over the estimation core.

    gpuadvisor-cli estimate SCENARIO.json [--gpu ID ...] [--all] [--json]
    gpuadvisor-cli gpus [--json]
    gpuadvisor-cli models [--json]
    gpuadvisor-cli default-scenario
    gpuadvisor-cli report SCENARIO.json -o REPORT.pdf [--page-size A4|Letter] [--gpu ID ...]
    gpuadvisor-cli catalog export gpus|models -o FILE [--format csv|json] [--json]
    gpuadvisor-cli catalog import gpus|models FILE [--format csv|json] [--dry-run] [--json]

The catalogs are the bundled ones plus the user's own edits (``user-catalog.json`` in the user
data folder, see ``docs/catalog.md``); ``--no-user-catalog``, before or after the command name,
uses the bundled catalogs alone. Problems with the user's edits are printed once, as
``warning:`` lines on stderr. ``catalog import`` applies the good rows of a CSV or JSON file to
the user's catalog (``--dry-run``: report only), prints what was added, updated and rejected, and
exits with 1 when some rows were rejected.

``report`` is the only command that needs Qt (imported when it runs); without a display it
renders offscreen. Bad input prints one line (``error: workload.batch_size: must be ...``) and exits with 2;
never a traceback.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from typing import Sequence

from . import __version__
from .core.errors import InputError
from .core.estimate import Candidate, Estimate, estimate
from .core.catalog_exchange import FORMATS, export_text, import_file
from .core.hardware import GpuCatalog
from .core.presets import ModelCatalog
from .core.scenario import Scenario, ModelSource, dumps_scenario, load_scenario
from .core.serialize import estimate_to_dict, gpu_to_dict, model_to_dict
from .core.units import format_count, format_hours, format_usd
from .core.user_catalog import KINDS, bundled_meta, bundled_rows, diff, merge
from .core.workload import Workload
from .storage import (atomic_write_text, backup_path, load_effective_catalogs, load_user_catalog,
                      save_user_catalog, user_catalog_file)

EXIT_INPUT = 2
EXIT_REJECTED_ROWS = 1


def default_scenario() -> Scenario:
    """The scenario the app opens with: LoRA fine-tuning of Llama 3.1 8B, whole catalog."""
    return Scenario(name="LoRA fine-tune of Llama 3.1 8B", model=ModelSource(preset="llama-3.1-8b"),
                    workload=Workload(kind="lora", weights="bf16", batch_size=4, seq_len=2048, lora_rank=16,
                                      gradient_checkpointing=True, train_tokens=100e6))


def _warn(warnings: Sequence[str]) -> None:
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)


def load_catalogs(use_user: bool = True) -> tuple[GpuCatalog, ModelCatalog]:
    """The effective catalogs (bundled + the user's edits unless ``use_user`` is False).

    Problems with the user's edits are printed to stderr as ``warning:`` lines.
    """
    gpus, models, warnings = load_effective_catalogs(use_user)
    _warn(warnings)
    return gpus, models


def _table(rows: list[list[str]], header: list[str], right: set[int]) -> str:
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]

    def fmt(row: list[str]) -> str:
        return "  ".join(str(c).rjust(w) if i in right else str(c).ljust(w)
                         for i, (c, w) in enumerate(zip(row, widths))).rstrip()
    return "\n".join([fmt(header), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows])


def _range(d: dict | None, fmt) -> str:
    if not d:
        return "-"
    return f"{fmt(d['low'])}-{fmt(d['high'])}"


def render_estimate(est: Estimate, show_all: bool = False) -> str:
    """The human-readable comparison."""
    m, w = est.model, est.scenario.workload
    lines = [f"{est.scenario.name}",
             f"Model: {m.name}, {format_count(m.parameters)} parameters"
             + (f" ({format_count(m.active_parameters)} active)" if m.is_moe else "")
             + f"; workload: {w.kind}, weights {w.weights}, batch {w.batch_size}, context {w.context_tokens:,} tokens",
             ""]
    chosen: list[Candidate] = list(est.candidates) if show_all else list(est.best_per_gpu().values())
    header = ["GPU", "setup", "verdict", "need/GPU", "capacity", "headroom", "weights", "grads", "optim", "activ",
              "kv", "adapt", "overhead", "max batch", "max ctx"]
    has_perf = any(c.performance is not None for c in chosen)
    if has_perf:
        header += ["tokens/s", "job time", "cost", "$/1M tok", "deadline/budget", "bound"]
    rows = []
    for c in chosen:
        g = c.memory.gib()
        row = [c.gpu.name, f"{c.gpu_count}x {c.parallelism}", c.verdict, f"{g['device_total']:.1f}",
               f"{c.capacity_gib:.1f}", f"{c.headroom_gib:+.1f}"] + [
            f"{g[k]:.1f}" for k in ("weights", "gradients", "optimizer", "activations", "kv_cache", "adapters",
                                    "overhead")]
        wi = est.what_if(c)
        row += [f"{wi.max_batch:,}", f"{wi.max_context:,}"]
        if has_perf:
            d = {}
            if c.performance is not None:
                d.update(c.performance.to_dict())  # type: ignore[attr-defined]
            if c.cost is not None:
                d.update(c.cost.to_dict())  # type: ignore[attr-defined]
            tps = d.get("tokens_per_s")
            per_m = d.get("usd_per_million_tokens")
            marks = {True: "ok", False: "NO", None: "-"}
            row += [f"{tps:,.0f}" if tps else "-", _range(d.get("job_hours"), format_hours),
                    _range(d.get("cost_usd"), format_usd), format_usd(per_m) if per_m is not None else "-",
                    f"{marks[d.get('meets_deadline')]}/{marks[d.get('within_budget')]}" if d else "-",
                    str(d.get("bound") or "-")]
        rows.append(row)
    lines.append(_table(rows, header, right=set(range(3, len(header))) - {len(header) - 1, len(header) - 2}
                        if has_perf else set(range(3, len(header)))))
    lines.append("")
    lines.append("Memory in GiB per GPU; need = device total (tensors + CUDA context + fragmentation). "
                 "max batch / max ctx: the largest batch and the longest context that fit that setup.")
    if not show_all:
        lines.append("One row per GPU: its smallest fitting setup (use --all for every count and parallelism).")
    if est.ranking:
        best = est.ranking[0]
        lines.append(f"Cheapest setup that fits: {best.key}"
                     + (f", {format_usd(best.cost.cost_usd.expected)} expected" if best.cost and best.cost.cost_usd
                        else "") + f" (engine profile: {est.engine}).")
    for advice in est.advice:
        lines.append(f"Change: {advice}")
    for warning in est.warnings:
        lines.append(f"Warning: {warning}")
    return "\n".join(lines)


def cmd_estimate(args: argparse.Namespace) -> int:
    scenario = load_scenario(args.scenario)
    gpus, models = load_catalogs(not args.no_user_catalog)
    est = estimate(scenario, gpus, models, gpu_ids=args.gpu or None)
    if args.json:
        print(json.dumps(estimate_to_dict(est), indent=2))
    else:
        print(render_estimate(est, show_all=args.all))
    return 0


def cmd_gpus(args: argparse.Namespace) -> int:
    gpus, _ = load_catalogs(not args.no_user_catalog)
    if args.json:
        print(json.dumps({"updated": gpus.meta.updated, "gpus": [gpu_to_dict(g) for g in gpus]}, indent=2))
        return 0
    rows = []
    for g in gpus:
        cloud = g.cloud_usd_per_hour
        rows.append([g.id, g.name, f"{g.memory_gib_usable:.1f}", f"{g.memory_bandwidth_gb_s:,.0f}",
                     f"{g.fp16_dense_tflops:,.1f}", f"{g.fp8_dense_tflops:,.1f}" if g.fp8_dense_tflops else "-",
                     f"{cloud.low:.2f}-{cloud.high:.2f}" if cloud else "-", g.price_as_of or "-"])
    print(_table(rows, ["id", "name", "GiB", "GB/s", "FP16 TFLOPS", "FP8 TFLOPS", "$/GPU-h", "prices as of"],
                 right={2, 3, 4, 5}))
    print("\nTFLOPS are dense tensor-core figures (no sparsity).")
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    _, models = load_catalogs(not args.no_user_catalog)
    if args.json:
        print(json.dumps({"updated": models.meta.updated, "models": [model_to_dict(m) for m in models]}, indent=2))
        return 0
    rows = [[m.id, m.name, format_count(m.parameters),
             format_count(m.active_parameters) if m.is_moe else "", str(m.num_layers), str(m.hidden_size),
             f"{m.num_attention_heads}/{m.num_key_value_heads}", f"{m.max_context:,}"] for m in models]
    print(_table(rows, ["id", "name", "params", "active", "layers", "hidden", "heads/kv", "context"],
                 right={2, 3, 4, 5, 7}))
    return 0


def cmd_default_scenario(args: argparse.Namespace) -> int:
    sys.stdout.write(dumps_scenario(default_scenario()))
    return 0


def _use_offscreen_qt_when_headless() -> None:
    """Without an X11/Wayland display (and no platform chosen), render with Qt's offscreen platform."""
    if os.environ.get("QT_QPA_PLATFORM"):
        return
    if sys.platform.startswith(("win", "darwin")):
        return  # native platforms there need no display server
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        os.environ["QT_QPA_PLATFORM"] = "offscreen"


def _quiet_offscreen_warnings() -> None:
    """Drop the offscreen plugin's harmless "propagateSizeHints" warning; pass other Qt messages on."""
    from PySide6.QtCore import qInstallMessageHandler

    def handler(_mode, _context, message: str) -> None:
        if "propagateSizeHints" not in message:
            print(message, file=sys.stderr)

    qInstallMessageHandler(handler)


def cmd_report(args: argparse.Namespace) -> int:
    from .core.report import build_report

    scenario = load_scenario(args.scenario)
    gpus, models = load_catalogs(not args.no_user_catalog)
    est = estimate(scenario, gpus, models, gpu_ids=args.gpu or None)
    report = build_report(est, gpus.meta, datetime.date.today())
    _use_offscreen_qt_when_headless()
    try:
        from .gui.report_pdf import export_pdf  # Qt and pyqtgraph: only this command needs them
    except ImportError as exc:
        raise InputError("report", f"needs PySide6 and pyqtgraph, which cannot be imported ({exc})") from None
    _quiet_offscreen_warnings()
    stats = export_pdf(report, est, args.output, page_size=args.page_size)
    print(f"{args.output}: {stats.pages} pages in {stats.seconds:.1f} s")
    return 0


def _effective_rows(kind: str, use_user: bool) -> tuple[list[dict[str, str]], bool]:
    """The table of ``kind`` as the catalog editor shows it, and whether it holds user edits."""
    if not use_user:
        return bundled_rows(kind), False
    loaded = load_user_catalog()
    edits = loaded.catalog.edits(kind)
    rows, warnings = merge(kind, edits)
    _warn(loaded.warnings + warnings)
    return [r.row for r in rows], not edits.is_empty


def _format_for(path: str, given: str | None) -> str:
    return given or ("json" if path.lower().endswith(".json") else "csv")


def cmd_catalog_export(args: argparse.Namespace) -> int:
    rows, edited = _effective_rows(args.kind, not args.no_user_catalog)
    fmt = _format_for(args.output, args.format)
    updated = datetime.date.today().isoformat() if edited else bundled_meta(args.kind).updated
    path = atomic_write_text(args.output, export_text(args.kind, rows, fmt, updated))
    if args.json:
        print(json.dumps({"kind": args.kind, "file": str(path), "format": fmt, "rows": len(rows),
                          "user_edits": edited}, indent=2))
    else:
        print(f"{path}: {len(rows)} {args.kind} rows ({fmt}{', with your edits' if edited else ''})")
    return 0


def cmd_catalog_import(args: argparse.Namespace) -> int:
    if args.no_user_catalog:
        raise InputError("--no-user-catalog",
                         "cannot be used with catalog import, which changes your user catalog")
    loaded = load_user_catalog()
    rows, warnings = merge(args.kind, loaded.catalog.edits(args.kind))
    _warn(loaded.warnings + warnings)
    report = import_file(args.kind, args.file, [r.row for r in rows], fmt=args.format)
    saved = None
    if report.changed and not args.dry_run:
        saved = save_user_catalog(loaded.catalog.with_edits(args.kind, diff(args.kind, report.rows)))
    if args.json:
        data = report.to_dict()
        data.update(dry_run=args.dry_run, saved=str(saved) if saved else None)
        print(json.dumps(data, indent=2))
    else:
        print(report.summary())
        if args.dry_run:
            print("Dry run: your catalog was not changed.")
        elif saved:
            kept = " (the previous version is kept as .bak)" if backup_path(saved).exists() else ""
            print(f"Saved to {saved}{kept}.")
        else:
            print(f"Nothing to change in {user_catalog_file()}.")
    return EXIT_REJECTED_ROWS if report.rejected else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpuadvisor-cli",
                                     description="Will it fit, how fast, and what will it cost: across a GPU catalog.")
    parser.add_argument("--version", action="version", version=f"gpuadvisor {__version__}")
    no_user_help = "use the bundled catalogs only, ignoring your own catalog edits"
    parser.add_argument("--no-user-catalog", action="store_true", help=no_user_help)

    def no_user_option(p: argparse.ArgumentParser) -> None:
        # Accepted after the command name too; SUPPRESS keeps a value given before it.
        p.add_argument("--no-user-catalog", action="store_true", default=argparse.SUPPRESS,
                       help=no_user_help)

    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("estimate", help="compare GPUs for a scenario file")
    no_user_option(p)
    p.add_argument("scenario", help="scenario JSON file (see docs/scenario.md)")
    p.add_argument("--gpu", action="append", metavar="ID", help="only these GPU ids (repeatable)")
    p.add_argument("--all", action="store_true", help="show every count and parallelism, not one row per GPU")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_estimate)
    p = sub.add_parser("gpus", help="list the GPU catalog")
    p.add_argument("--json", action="store_true")
    no_user_option(p)
    p.set_defaults(func=cmd_gpus)
    p = sub.add_parser("models", help="list the model presets")
    p.add_argument("--json", action="store_true")
    no_user_option(p)
    p.set_defaults(func=cmd_models)
    p = sub.add_parser("report", help="write a PDF comparison report (recommendation, table, charts, rent vs buy)")
    p.add_argument("scenario", help="scenario JSON file (see docs/scenario.md)")
    p.add_argument("-o", "--output", required=True, metavar="REPORT.pdf", help="the PDF to write")
    p.add_argument("--page-size", choices=("A4", "Letter"), default="A4", help="paper size (default A4)")
    p.add_argument("--gpu", action="append", metavar="ID", help="only these GPU ids (repeatable)")
    no_user_option(p)
    p.set_defaults(func=cmd_report)
    p = sub.add_parser("default-scenario", help="print the default scenario as JSON (a starting point)")
    p.set_defaults(func=cmd_default_scenario)
    catalog = sub.add_parser("catalog", help="export or import a catalog table (your own catalog)")
    catalog_sub = catalog.add_subparsers(dest="catalog_command", required=True)
    p = catalog_sub.add_parser("export",
                               help="write the effective catalog (bundled + your edits) as CSV or JSON")
    p.add_argument("kind", choices=KINDS)
    p.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="the file to write (replaced atomically)")
    p.add_argument("--format", choices=FORMATS, help="csv or json (default: from the file name, else csv)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    no_user_option(p)
    p.set_defaults(func=cmd_catalog_export)
    p = catalog_sub.add_parser("import", help="apply the rows of a CSV or JSON file to your own catalog")
    p.add_argument("kind", choices=KINDS)
    p.add_argument("file", help="CSV (with or without the metadata line) or JSON file")
    p.add_argument("--format", choices=FORMATS,
                   help="csv or json (default: from the file name or its content)")
    p.add_argument("--dry-run", action="store_true", help="report what would change; change nothing")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_catalog_import)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except OSError as exc:
        print(f"error: {exc.strerror or exc}: {getattr(exc, 'filename', '') or ''}".rstrip(": "), file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
