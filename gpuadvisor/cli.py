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
never a traceback.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Sequence

from . import __version__
from .core.errors import InputError
from .core.engines import engine_for
from .core.estimate import Candidate, Estimate, estimate, resolve_model
from .core.calibration import (CalibrationProfile, Comparison, EstimatePredictor, compare_measurements,
                               fit_calibration, profile_to_dict)
from .core.catalog_exchange import FORMATS, export_text, import_file
from .core.hardware import GpuCatalog
from .core.presets import ModelCatalog
from .core.measurements import (Finding, LogSummary, Measurement, diagnose, next_measurement_id,
                                parse_nvidia_smi_log)
from .core.pricelists import (PriceImport, format_price, merge_price_imports, price_update_rows,
                              read_price_list)
from .core.scenario import Scenario, ModelSource, dumps_scenario, load_scenario, scenario_snapshot
from .core.serialize import estimate_to_dict, gpu_to_dict, model_to_dict
from .core.units import format_count, format_hours, format_usd
from .core.user_catalog import KINDS, build_catalogs, bundled_meta, bundled_rows, diff, merge
from .core.workload import Workload
from .storage import (add_measurement, atomic_write_text, backup_path, calibration_file, export_calibration,
                      import_calibration, load_calibration, load_effective_catalogs, load_measurements,
                      load_user_catalog, merge_measurements, save_calibration, save_user_catalog,
                      user_catalog_file)

EXIT_INPUT = 2
EXIT_REJECTED_ROWS = 1
EXIT_NOTHING_FITTED = 1


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
    calibrated = set(est.calibrated_gpus)
    for c in chosen:
        g = c.memory.gib()
        row = [c.gpu.name + (" *" if c.gpu.id in calibrated else ""), "single GPU" if c.gpu_count == 1 else f"{c.gpu_count}x {c.parallelism}", c.verdict, f"{g['device_total']:.1f}",
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
    lines += calibration_lines(est)
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


def calibration_lines(est: Estimate) -> list[str]:
    """What the calibration did to this estimate, for the text output ([] when it was off)."""
    profile = est.calibration
    if profile is None:
        return []
    if not est.calibration_fits:
        return [f"Calibration: on (profile of {profile.created}), but it holds no values for the engine "
                f"{est.engine} that this scenario leaves to it: no figure changed."]
    lines = [f"* Calibrated to your measurements (profile of {profile.created}); other GPUs use the engine "
             f"profile {est.engine}:"]
    for f in est.calibration_fits:
        before = "-" if f.error_before_pct is None else f"{f.error_before_pct:.1f}%"
        after = "-" if f.error_after_pct is None else f"{f.error_after_pct:.1f}%"
        lines.append(f"  {f.gpu_id}: {f.factor_name} = {f.value:.4g} from {f.n_measurements} measurements "
                     f"(median error {before} -> {after})")
    return lines


def saved_profile() -> CalibrationProfile:
    """The saved calibration profile (``--calibrated``); InputError when there is none."""
    loaded = load_calibration()
    _warn(loaded.warnings)
    if loaded.value is None:
        raise InputError("--calibrated", "no calibration profile is saved yet: record runs with "
                                         "'gpuadvisor-cli measure add', then fit one with 'gpuadvisor-cli "
                                         "calibrate' (or import one with 'gpuadvisor-cli calibrate --import FILE')")
    return loaded.value


def cmd_estimate(args: argparse.Namespace) -> int:
    scenario = load_scenario(args.scenario)
    gpus, models = load_catalogs(not args.no_user_catalog)
    profile = saved_profile() if args.calibrated else None
    est = estimate(scenario, gpus, models, gpu_ids=args.gpu or None, calibration=profile)
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
    profile = saved_profile() if args.calibrated else None
    est = estimate(scenario, gpus, models, gpu_ids=args.gpu or None, calibration=profile)
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
    before = [r.row for r in rows]
    report = import_file(args.kind, args.file, before, fmt=args.format)
    saved = _save_rows(loaded, args.kind, report.rows, report.changed, args.dry_run)
    if args.json:
        data = report.to_dict()
        data.update(dry_run=args.dry_run, saved=str(saved) if saved else None)
        print(json.dumps(data, indent=2))
    else:
        print(report.details(before))
        _say_saved(saved, args.dry_run)
    return EXIT_REJECTED_ROWS if report.rejected else 0


def _save_rows(loaded, kind: str, rows, changed: bool, dry_run: bool) -> Path | None:
    """Save ``rows`` as the user's edits of ``kind`` (unless nothing changed or it is a dry run)."""
    if not changed or dry_run:
        return None
    return save_user_catalog(loaded.catalog.with_edits(kind, diff(kind, rows)))


def _say_saved(saved: Path | None, dry_run: bool) -> None:
    if dry_run:
        print("Dry run: your catalog was not changed.")
    elif saved:
        kept = " (the previous version is kept as .bak)" if backup_path(saved).exists() else ""
        print(f"Saved to {saved}{kept}.")
    else:
        print(f"Nothing to change in {user_catalog_file()}.")


# --- prices import ------------------------------------------------------------------------------

def _stats_dict(stats) -> dict | None:
    if stats is None:
        return None
    return {"low": round(stats.low, 4), "median": round(stats.median, 4), "high": round(stats.high, 4),
            "count": stats.count}


def _prices_to_dict(merged: PriceImport, files: list[str], updates: list[tuple[str, dict[str, str]]],
                    dry_run: bool, saved) -> dict:
    return {
        "files": files, "provider": merged.provider, "format": merged.format, "as_of": merged.as_of,
        "rows_read": merged.rows_read, "skipped_no_gpu": merged.skipped_no_gpu,
        "matched": [{"gpu": s.gpu_id, "on_demand": _stats_dict(s.on_demand), "spot": _stats_dict(s.spot),
                     "offers": s.offers, "providers": list(s.providers), "regions": s.regions,
                     "names": list(s.names)} for s in merged.prices.values()],
        "unmatched": [{"name": name, "rows": count, "reason": merged.unmatched_reasons.get(name, "")}
                      for name, count in sorted(merged.unmatched.items())],
        "assumptions": [{"name": name, "assumption": note} for name, note in merged.assumptions.items()],
        "rejected": [{"line": line, "reason": why} for line, why in merged.rejected],
        "updated": [{"gpu": gpu_id, "columns": cells} for gpu_id, cells in updates],
        "dry_run": dry_run, "saved": str(saved) if saved else None,
    }


def _render_prices(merged: PriceImport, updates: list[tuple[str, dict[str, str]]]) -> str:
    lines = [f"{merged.origin}: {merged.format} price list{'s' if ',' in merged.origin else ''} from "
             f"{merged.provider}, as of {merged.as_of}: {merged.rows_read} rows read, {len(merged.offers)} offers, "
             f"{merged.skipped_no_gpu} rows without GPUs skipped.", ""]
    if merged.prices:
        rows = []
        for s in merged.prices.values():
            od = s.on_demand
            spot = s.spot
            rows.append([s.gpu_id, format_price(od.low) if od else "-", format_price(od.median) if od else "-",
                         format_price(od.high) if od else "-",
                         f"{format_price(spot.low)}-{format_price(spot.high)}" if spot else "-",
                         str(s.offers), ", ".join(s.providers), str(s.regions)])
        lines.append(f"Matched {len(rows)} catalog GPUs (USD per GPU-hour; the catalog takes on-demand prices):")
        lines.append(_table(rows, ["GPU", "low", "median", "high", "spot", "offers", "providers", "regions"],
                            right={1, 2, 3, 4, 5, 7}))
    else:
        lines.append("No GPU of the price list matched a catalog GPU.")
    for note in merged.assumptions.values():
        lines.append(f"Assumed: {note}")
    if merged.unmatched:
        lines.append("")
        lines.append(f"Unmatched GPU names ({len(merged.unmatched)}):")
        for name, count in sorted(merged.unmatched.items(), key=lambda kv: (-kv[1], kv[0])):
            why = merged.unmatched_reasons.get(name, "")
            lines.append(f"  {name}: {count} row{'s' if count != 1 else ''}" + (f" ({why})" if why else ""))
    if merged.rejected:
        lines.append("")
        lines.append(f"Rejected lines ({len(merged.rejected)}):")
        for line, why in merged.rejected:
            lines.append(f"  line {line}: {why}")
    lines.append("")
    if updates:
        lines.append(f"Catalog rows updated: {len(updates)} ({', '.join(gpu_id for gpu_id, _ in updates)}).")
    else:
        lines.append("No catalog row to update (no on-demand price for a catalog GPU).")
    return "\n".join(lines)


def cmd_prices_import(args: argparse.Namespace) -> int:
    if args.no_user_catalog:
        raise InputError("--no-user-catalog",
                         "cannot be used with prices import, which changes your user catalog")
    loaded = load_user_catalog()
    merged_rows, warnings = merge("gpus", loaded.catalog.edits("gpus"))
    try:
        gpus, _models, build_warnings = build_catalogs(loaded.catalog)
    except InputError as exc:
        raise InputError("user catalog", f"cannot be used to match GPU names ({exc})") from None
    _warn(list(dict.fromkeys(loaded.warnings + warnings + build_warnings)))
    table = [dict(r.row) for r in merged_rows]
    # Every file is read before anything is saved: one unusable file changes nothing.
    imports = [read_price_list(f, gpus, provider=args.provider) for f in args.files]
    merged = merge_price_imports(imports)
    updates = price_update_rows(merged, table)
    by_id = dict(updates)
    new_rows = [{**row, **by_id.get(row.get("id", ""), {})} for row in table]
    changed = new_rows != table
    saved = _save_rows(loaded, "gpus", new_rows, changed, args.dry_run)
    if args.json:
        print(json.dumps(_prices_to_dict(merged, list(args.files), updates, args.dry_run, saved), indent=2))
    else:
        print(_render_prices(merged, updates))
        _say_saved(saved, args.dry_run)
    return EXIT_REJECTED_ROWS if merged.rejected else 0


# --- measured runs ---------------------------------------------------------------------------------

#: Measurement fields as the ``measure add`` options that set them (for error messages).
_MEASURE_OPTIONS = {"measurement.tokens_per_s": "--tokens-per-s",
                    "measurement.seconds_per_step": "--seconds-per-step",
                    "measurement.tokens_per_step": "--tokens-per-step",
                    "measurement.peak_memory_gib": "--peak-memory-gib", "measurement.num_gpus": "--count",
                    "measurement.engine": "--engine", "measurement.note": "--note"}


def _read_smi_log(path: str, columns: str | None) -> LogSummary:
    p = Path(path)
    try:
        text = p.read_bytes().decode("utf-8-sig")
    except FileNotFoundError:
        raise InputError(path, "file not found") from None
    except UnicodeDecodeError:
        raise InputError(path, "is not UTF-8 text (is it an nvidia-smi CSV log?)") from None
    cols = [c.strip() for c in columns.split(",")] if columns else None
    summary = parse_nvidia_smi_log(text, cols, origin=path).summary()
    if not summary.gpus:
        raise InputError(path, "holds no valid nvidia-smi samples"
                         + (f" (first bad line {summary.bad_lines[0][0]}: {summary.bad_lines[0][1]})"
                            if summary.bad_lines else ""))
    return summary


def _finding_dict(f: Finding) -> dict:
    return {"severity": f.severity, "title": f.title, "gpu": f.gpu or None,
            "numbers": {k: round(v, 4) for k, v in f.numbers}, "advice": list(f.advice)}


def _render_findings(findings: list[Finding]) -> list[str]:
    lines = []
    for f in findings:
        lines.append(f.text())
        lines += [f"    - {a}" for a in f.advice]
    return lines


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1f}%"


def _num(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _comparison_dict(c: Comparison) -> dict:
    r = lambda v, d=3: None if v is None else round(v, d)  # noqa: E731
    return {"measurement": c.measurement.id, "tokens_per_s": {
                "measured": r(c.measured_tokens_per_s, 2), "estimated": r(c.estimated_tokens_per_s, 2),
                "error_pct": r(c.tokens_error_pct, 2), "calibrated": r(c.calibrated_tokens_per_s, 2),
                "calibrated_error_pct": r(c.calibrated_tokens_error_pct, 2)},
            "peak_memory_gib": {
                "measured": r(c.measured_memory_gib), "estimated": r(c.estimated_memory_gib),
                "error_pct": r(c.memory_error_pct, 2), "calibrated": r(c.calibrated_memory_gib),
                "calibrated_error_pct": r(c.calibrated_memory_error_pct, 2)},
            "problem": c.problem or None}


def _render_comparison(c: Comparison) -> list[str]:
    if c.problem:
        return [f"No estimate to compare with: {c.problem}"]
    m = c.measurement
    calibrated = c.calibrated_tokens_per_s is not None or c.calibrated_memory_gib is not None
    header = ["", "measured", "estimate", "error"] + (["calibrated", "error"] if calibrated else [])
    rows = []
    if c.measured_tokens_per_s is not None:
        row = ["tokens/s", _num(c.measured_tokens_per_s), _num(c.estimated_tokens_per_s), _pct(c.tokens_error_pct)]
        if calibrated:
            row += [_num(c.calibrated_tokens_per_s), _pct(c.calibrated_tokens_error_pct)]
        rows.append(row)
    if c.measured_memory_gib is not None:
        label = "peak GiB/GPU" + (" (tensors)" if not m.memory_is_device_total else "")
        row = [label, _num(c.measured_memory_gib, 1), _num(c.estimated_memory_gib, 1), _pct(c.memory_error_pct)]
        if calibrated:
            row += [_num(c.calibrated_memory_gib, 1), _pct(c.calibrated_memory_error_pct)]
        rows.append(row)
    return [_table(rows, header, right=set(range(1, len(header)))),
            "error = estimate / measured - 1 (positive: the estimate is higher)."]


def _model_label(scenario: Scenario, models: ModelCatalog) -> str:
    if scenario.model.preset:
        return scenario.model.preset
    return resolve_model(scenario, models).name


def cmd_measure_add(args: argparse.Namespace) -> int:
    scenario = load_scenario(args.scenario)
    gpus, models = load_catalogs(not args.no_user_catalog)
    gpus.get(args.gpu, "--gpu")
    w = scenario.workload
    if args.engine is not None:
        try:
            engine_for(args.engine, w.kind)
        except InputError as exc:
            raise InputError("--engine", exc.reason, args.engine) from None
    count = args.count or scenario.hardware.gpu_count or 1
    stored = load_measurements()
    _warn(stored.warnings)
    smi = _read_smi_log(args.smi_log, args.smi_columns) if args.smi_log else None
    findings = diagnose(smi) if smi else []
    peak, source, note = args.peak_memory_gib, "typed", args.note or ""
    if args.memory_source == "torch":
        source = "torch.cuda.max_memory_allocated"
    if smi is not None:
        top = max(smi.gpus, key=lambda g: g.peak_memory_mib)
        peak, source = top.peak_memory_gib, "nvidia-smi log"
        where = f"peak of {top.samples} nvidia-smi samples in {smi.origin}" + (
            f", GPU {top.gpu} of {len(smi.gpus)}" if len(smi.gpus) > 1 else "")
        note = f"{note}; {where}" if note else where
    try:
        m = Measurement(
            id=next_measurement_id(merge_measurements(stored.value, scenario.measurements)), gpu_id=args.gpu,
            kind=w.kind, model=_model_label(scenario, models), engine=args.engine or w.engine, num_gpus=count,
            batch_size=w.batch_size, seq_len=w.seq_len if w.is_training else w.context_tokens,
            peak_memory_gib=peak, tokens_per_s=args.tokens_per_s, seconds_per_step=args.seconds_per_step,
            tokens_per_step=args.tokens_per_step, source=source, note=note,
            measured_on=datetime.date.today().isoformat(), scenario=scenario_snapshot(scenario))
    except InputError as exc:
        option = _MEASURE_OPTIONS.get(exc.field, exc.field)
        if exc.field == "measurement":
            raise InputError("measurement", "give at least one of --tokens-per-s, --seconds-per-step, "
                                            "--peak-memory-gib or --smi-log") from None
        raise InputError(option, exc.reason, exc.value) from None
    m, saved = add_measurement(m)
    scenario_note = ""
    if args.no_scenario_update:
        scenario_note = "not added to the scenario file (--no-scenario-update)"
    elif scenario.warnings:
        scenario_note = (f"not added to {args.scenario}: it holds keys this version does not know, "
                         "which rewriting the file would drop")
    else:
        updated = replace(scenario, measurements=tuple(merge_measurements(scenario.measurements, [m])))
        atomic_write_text(args.scenario, dumps_scenario(updated))
        scenario_note = f"added to {args.scenario}"
    profile = load_calibration()
    _warn(profile.warnings)
    (comparison,) = compare_measurements([m], EstimatePredictor(gpus, models), profile.value)
    if args.json:
        print(json.dumps({"measurement": {k: v for k, v in m.to_dict().items() if k != "scenario"},
                          "saved": str(saved), "scenario_updated": scenario_note.startswith("added"),
                          "comparison": _comparison_dict(comparison),
                          "findings": [_finding_dict(f) for f in findings]}, indent=2))
        return 0
    engine = m.engine or _engine_id(w)
    print(f"Recorded {m.id}: {m.num_gpus}x {m.gpu_id}, {engine}, {m.kind} of {m.model} (batch {m.batch_size}); "
          f"saved in {saved}; {scenario_note}.")
    print("")
    print("\n".join(_render_comparison(comparison)))
    if findings:
        print("")
        print(f"Diagnosis of {smi.origin}:")
        print("\n".join(_render_findings(findings)))
    return 0


def _engine_id(w: Workload) -> str:
    """The engine profile id the workload runs on (its own or the default for its kind)."""
    return engine_for(w.engine, w.kind).id


def cmd_measure_list(args: argparse.Namespace) -> int:
    loaded = load_measurements()
    _warn(loaded.warnings)
    runs = loaded.value
    gpus, models = load_catalogs(not args.no_user_catalog)
    profile = load_calibration()
    _warn(profile.warnings)
    comparisons = compare_measurements(runs, EstimatePredictor(gpus, models), profile.value)
    if args.json:
        print(json.dumps({"file": str(loaded.path), "measurements": [
            {**m.to_dict(), "comparison": _comparison_dict(c)} for m, c in zip(runs, comparisons)]}, indent=2))
        return 0
    if not runs:
        print(f"No measurements recorded yet ({loaded.path}); add one with 'gpuadvisor-cli measure add'.")
        return 0
    rows = []
    for m, c in zip(runs, comparisons):
        rows.append([m.id, m.measured_on or "-", f"{m.num_gpus}x {m.gpu_id}", m.engine or "-", m.kind, m.model,
                     _num(c.measured_tokens_per_s), _num(c.estimated_tokens_per_s), _pct(c.tokens_error_pct),
                     _num(c.measured_memory_gib, 1), _num(c.estimated_memory_gib, 1), _pct(c.memory_error_pct),
                     m.note[:40]])
    print(_table(rows, ["id", "date", "GPU", "engine", "kind", "model", "tok/s", "est.", "error",
                        "peak GiB", "est.", "error", "note"], right={6, 7, 8, 9, 10, 11}))
    print(f"\n{len(runs)} measurements in {loaded.path}. error = estimate / measured - 1.")
    problems = [f"  {c.measurement.id}: {c.problem}" for c in comparisons if c.problem]
    if problems:
        print("No estimate for:\n" + "\n".join(problems))
    return 0


def cmd_measure_diagnose(args: argparse.Namespace) -> int:
    summary = _read_smi_log(args.log, args.smi_columns)
    findings = diagnose(summary)
    if args.json:
        print(json.dumps({"file": summary.origin, "gpus": [
            {"gpu": g.gpu, "name": g.name, "samples": g.samples, "duration_s": g.duration_s,
             "peak_memory_gib": round(g.peak_memory_gib, 3), "memory_total_mib": g.memory_total_mib,
             "peak_memory_fraction": None if g.peak_memory_fraction is None else round(g.peak_memory_fraction, 4),
             "median_gpu_util_pct": g.median_gpu_util_pct, "p95_gpu_util_pct": g.p95_gpu_util_pct,
             "mean_memory_util_pct": g.mean_memory_util_pct} for g in summary.gpus],
            "bad_lines": [{"line": n, "reason": why} for n, why in summary.bad_lines],
            "findings": [_finding_dict(f) for f in findings]}, indent=2))
        return 0
    for g in summary.gpus:
        share = f" ({g.peak_memory_fraction:.0%} of VRAM)" if g.peak_memory_fraction is not None else ""
        util = f"{g.median_gpu_util_pct:.0f}%" if g.median_gpu_util_pct is not None else "n/a"
        print(f"GPU {g.gpu} {g.name}: {g.samples} samples, peak {g.peak_memory_gib:.1f} GiB{share}, "
              f"median utilization {util}")
    print("")
    print("\n".join(_render_findings(findings)))
    return 0


# --- calibration ---------------------------------------------------------------------------------

def _render_profile(profile: CalibrationProfile) -> str:
    lines = [f"Calibration profile of {profile.created}"
             + (f" ({profile.note})" if profile.note else "") + f": {len(profile.fits)} factors."]
    if profile.fits:
        rows = [[f.gpu_id, f.engine, f.factor_name, f"{f.value:.4g}", str(f.n_measurements),
                 "-" if f.error_before_pct is None else f"{f.error_before_pct:.1f}%",
                 "-" if f.error_after_pct is None else f"{f.error_after_pct:.1f}%", f.note]
                for f in profile.fits]
        lines.append(_table(rows, ["GPU", "engine", "factor", "value", "n", "error before", "after", "note"],
                            right={3, 4, 5, 6}))
        lines.append("error: median |estimate / measured - 1| over the measurements the factor rests on.")
    if profile.skipped:
        lines.append("Measurements not used:")
        lines += [f"  {mid}: {why}" for mid, why in profile.skipped]
    return "\n".join(lines)


def cmd_calibrate(args: argparse.Namespace) -> int:
    saved = None
    status = 0
    if args.import_file:
        profile, saved = import_calibration(args.import_file)
    elif args.show:
        loaded = load_calibration()
        _warn(loaded.warnings)
        if loaded.value is None:
            raise InputError("--show", f"no calibration profile is saved yet ({calibration_file()})")
        profile = loaded.value
    else:
        loaded = load_measurements()
        _warn(loaded.warnings)
        gpus, models = load_catalogs(not args.no_user_catalog)
        profile = fit_calibration(loaded.value, EstimatePredictor(gpus, models))
        if profile.fits:
            saved = save_calibration(profile)
        else:
            status = EXIT_NOTHING_FITTED
    exported = export_calibration(profile, args.export) if args.export else None
    if args.json:
        print(json.dumps({**profile_to_dict(profile), "saved": str(saved) if saved else None,
                          "exported": str(exported) if exported else None}, indent=2))
        return status
    print(_render_profile(profile))
    if args.import_file:
        print(f"Imported {args.import_file} as {saved}.")
    elif saved:
        print(f"Saved to {saved}; apply it with 'gpuadvisor-cli estimate --calibrated' or the window's "
              "Tools > Measurements & calibration.")
    elif status:
        print("No factor could be fitted (see above); the saved profile was left as it was.")
    if exported:
        print(f"Exported to {exported}.")
    return status


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
    p.add_argument("--calibrated", action="store_true",
                   help="apply the saved calibration profile (see 'gpuadvisor-cli calibrate')")
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
    p.add_argument("--calibrated", action="store_true",
                   help="apply the saved calibration profile (the report says so)")
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

    prices = sub.add_parser("prices", help="import cloud price lists (gpuhunt, SkyPilot) into your catalog")
    prices_sub = prices.add_subparsers(dest="prices_command", required=True)
    p = prices_sub.add_parser("import", help="put the on-demand prices of offline price lists into your GPU catalog")
    p.add_argument("files", nargs="+", metavar="FILE", help="gpuhunt <provider>.csv or SkyPilot vms.csv files")
    p.add_argument("--provider", metavar="NAME", help="provider name (default: from each file's name)")
    p.add_argument("--dry-run", action="store_true", help="report what would change; change nothing")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_prices_import)

    measure = sub.add_parser("measure", help="record measured runs and compare them with the estimate")
    measure_sub = measure.add_subparsers(dest="measure_command", required=True)
    p = measure_sub.add_parser("add", help="record a measured run of a scenario")
    p.add_argument("scenario", help="the scenario that ran (the run is added to it unless --no-scenario-update)")
    p.add_argument("--gpu", required=True, metavar="ID", help="catalog id of the GPU it ran on")
    p.add_argument("--count", type=int, metavar="N", help="number of GPUs (default: the scenario's, else 1)")
    speed = p.add_mutually_exclusive_group()
    speed.add_argument("--tokens-per-s", type=float, metavar="X",
                       help="aggregate tokens/s (generated for inference, trained for training)")
    speed.add_argument("--seconds-per-step", type=float, metavar="X", help="seconds per training step")
    p.add_argument("--tokens-per-step", type=float, metavar="X",
                   help="tokens per step (training default: batch x sequence length x GPUs)")
    memory = p.add_mutually_exclusive_group()
    memory.add_argument("--peak-memory-gib", type=float, metavar="X", help="peak memory per GPU in GiB")
    memory.add_argument("--smi-log", metavar="FILE", help="an nvidia-smi --query-gpu CSV log: its peak memory.used")
    p.add_argument("--memory-source", choices=("typed", "torch"), default="typed",
                   help="typed: what nvidia-smi showed (default); torch: torch.cuda.max_memory_allocated")
    p.add_argument("--smi-columns", metavar="LIST", help="the --query-gpu fields of a log written with noheader")
    p.add_argument("--engine", metavar="E", help="engine profile id (default: the scenario's)")
    p.add_argument("--note", metavar="T", help="free text")
    p.add_argument("--no-scenario-update", action="store_true", help="do not add the run to the scenario file")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    no_user_option(p)
    p.set_defaults(func=cmd_measure_add)
    p = measure_sub.add_parser("list", help="list the recorded runs with their estimates and errors")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    no_user_option(p)
    p.set_defaults(func=cmd_measure_list)
    p = measure_sub.add_parser("diagnose", help="diagnose an nvidia-smi log (utilization, memory, bottlenecks)")
    p.add_argument("log", metavar="SMI_LOG.csv", help="nvidia-smi --query-gpu=... --format=csv -l 1 output")
    p.add_argument("--smi-columns", metavar="LIST", help="the --query-gpu fields of a log written with noheader")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_measure_diagnose)

    p = sub.add_parser("calibrate", help="fit efficiency factors to your measured runs (or import/export a profile)")
    source = p.add_mutually_exclusive_group()
    source.add_argument("--import", dest="import_file", metavar="FILE",
                        help="check a profile file and make it the saved profile (no fit)")
    source.add_argument("--show", action="store_true", help="show the saved profile (no fit)")
    p.add_argument("--export", metavar="FILE", help="also write the profile to FILE (JSON)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    no_user_option(p)
    p.set_defaults(func=cmd_calibrate)
    return parser


def error_line(exc: InputError, typed_paths: Sequence[str]) -> str:
    """The error's one line, naming a file as the user typed its path: the core names files by
    their base name, which is ambiguous when the path has folders in it."""
    text = str(exc)
    for path in typed_paths:
        if (isinstance(path, str) and path != exc.field and Path(path).name == exc.field
                and text.startswith(exc.field + ":")):
            return f"{path}{text[len(exc.field):]}"
    return text


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except InputError as exc:
        typed = [v for value in vars(args).values() for v in (value if isinstance(value, list) else [value])]
        print(f"error: {error_line(exc, typed)}", file=sys.stderr)
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
