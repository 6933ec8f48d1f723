"""``measure add|list|diagnose`` and ``calibrate``: measured runs, nvidia-smi logs and the calibration profile."""

from __future__ import annotations

import argparse
import datetime
import json
from dataclasses import replace

from ..core.errors import InputError
from ..core.estimation.calibration import (
    CalibrationProfile,
    Comparison,
    EstimatePredictor,
    compare_measurements,
    fit_calibration,
    profile_to_dict,
)
from ..core.estimation.estimate import resolve_model
from ..core.formats.measurements import Measurement, next_measurement_id
from ..core.formats.scenario import Scenario, dumps_scenario, load_scenario, scenario_snapshot
from ..core.formats.smi_log import Finding, LogSummary, diagnose, read_nvidia_smi_log
from ..core.presentation.text import text_table
from ..core.specs.constants import engine_for
from ..core.specs.presets import ModelCatalog
from ..core.specs.workload import Workload
from ..storage import (
    add_measurement,
    atomic_write_text,
    calibration_file,
    export_calibration,
    import_calibration,
    load_calibration,
    load_measurements,
    merge_measurements,
    save_calibration,
)
from ..storage.user_catalog_store import load_catalogs
from .common import EXIT_NOTHING_FITTED, _warn

_MEASURE_OPTIONS = {
    "measurement.tokens_per_s": "--tokens-per-s",
    "measurement.seconds_per_step": "--seconds-per-step",
    "measurement.tokens_per_step": "--tokens-per-step",
    "measurement.peak_memory_gib": "--peak-memory-gib",
    "measurement.num_gpus": "--count",
    "measurement.engine": "--engine",
    "measurement.note": "--note",
}


def _read_smi_log(path: str, columns: str | None) -> LogSummary:
    cols = [c.strip() for c in columns.split(",")] if columns else None
    summary = read_nvidia_smi_log(path, cols).summary()
    if not summary.gpus:
        raise InputError(
            path,
            "holds no valid nvidia-smi samples"
            + (
                f" (first bad line {summary.bad_lines[0][0]}: {summary.bad_lines[0][1]})"
                if summary.bad_lines
                else ""
            ),
        )
    return summary


def _finding_dict(f: Finding) -> dict[str, object]:
    return {
        "severity": f.severity,
        "title": f.title,
        "gpu": f.gpu or None,
        "numbers": {k: round(v, 4) for k, v in f.numbers},
        "advice": list(f.advice),
    }


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


def _round(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


def _comparison_dict(c: Comparison) -> dict[str, object]:
    r = _round
    return {
        "measurement": c.measurement.id,
        "tokens_per_s": {
            "measured": r(c.measured_tokens_per_s, 2),
            "estimated": r(c.estimated_tokens_per_s, 2),
            "error_pct": r(c.tokens_error_pct, 2),
            "calibrated": r(c.calibrated_tokens_per_s, 2),
            "calibrated_error_pct": r(c.calibrated_tokens_error_pct, 2),
        },
        "peak_memory_gib": {
            "measured": r(c.measured_memory_gib),
            "estimated": r(c.estimated_memory_gib),
            "error_pct": r(c.memory_error_pct, 2),
            "calibrated": r(c.calibrated_memory_gib),
            "calibrated_error_pct": r(c.calibrated_memory_error_pct, 2),
        },
        "problem": c.problem or None,
    }


def _render_comparison(c: Comparison) -> list[str]:
    if c.problem:
        return [f"No estimate to compare with: {c.problem}"]
    m = c.measurement
    calibrated = c.calibrated_tokens_per_s is not None or c.calibrated_memory_gib is not None
    header = ["", "measured", "estimate", "error"] + (["calibrated", "error"] if calibrated else [])
    rows = []
    if c.measured_tokens_per_s is not None:
        row = [
            "tokens/s",
            _num(c.measured_tokens_per_s),
            _num(c.estimated_tokens_per_s),
            _pct(c.tokens_error_pct),
        ]
        if calibrated:
            row += [_num(c.calibrated_tokens_per_s), _pct(c.calibrated_tokens_error_pct)]
        rows.append(row)
    if c.measured_memory_gib is not None:
        label = "peak GiB/GPU" + (" (tensors)" if not m.memory_is_device_total else "")
        row = [
            label,
            _num(c.measured_memory_gib, 1),
            _num(c.estimated_memory_gib, 1),
            _pct(c.memory_error_pct),
        ]
        if calibrated:
            row += [_num(c.calibrated_memory_gib, 1), _pct(c.calibrated_memory_error_pct)]
        rows.append(row)
    return [
        text_table(rows, header, right=set(range(1, len(header)))),
        "error = estimate / measured - 1 (positive: the estimate is higher).",
    ]


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
            f", GPU {top.gpu} of {len(smi.gpus)}" if len(smi.gpus) > 1 else ""
        )
        note = f"{note}; {where}" if note else where
    try:
        m = Measurement(
            id=next_measurement_id(merge_measurements(stored.value, scenario.measurements)),
            gpu_id=args.gpu,
            kind=w.kind,
            model=_model_label(scenario, models),
            engine=args.engine or w.engine,
            num_gpus=count,
            batch_size=w.batch_size,
            seq_len=w.seq_len if w.is_training else w.context_tokens,
            peak_memory_gib=peak,
            tokens_per_s=args.tokens_per_s,
            seconds_per_step=args.seconds_per_step,
            tokens_per_step=args.tokens_per_step,
            source=source,
            note=note,
            measured_on=datetime.date.today().isoformat(),
            scenario=scenario_snapshot(scenario),
        )
    except InputError as exc:
        option = _MEASURE_OPTIONS.get(exc.field, exc.field)
        if exc.field == "measurement":
            raise InputError(
                "measurement",
                "give at least one of --tokens-per-s, --seconds-per-step, --peak-memory-gib or --smi-log",
            ) from None
        raise InputError(option, exc.reason, exc.value) from None
    m, saved = add_measurement(m)
    scenario_note = ""
    if args.no_scenario_update:
        scenario_note = "not added to the scenario file (--no-scenario-update)"
    elif scenario.warnings:
        scenario_note = (
            f"not added to {args.scenario}: it holds keys this version does not know, "
            "which rewriting the file would drop"
        )
    else:
        updated = replace(scenario, measurements=tuple(merge_measurements(scenario.measurements, [m])))
        atomic_write_text(args.scenario, dumps_scenario(updated))
        scenario_note = f"added to {args.scenario}"
    profile = load_calibration()
    _warn(profile.warnings)
    (comparison,) = compare_measurements([m], EstimatePredictor(gpus, models), profile.value)
    if args.json:
        print(
            json.dumps(
                {
                    "measurement": {k: v for k, v in m.to_dict().items() if k != "scenario"},
                    "saved": str(saved),
                    "scenario_updated": scenario_note.startswith("added"),
                    "comparison": _comparison_dict(comparison),
                    "findings": [_finding_dict(f) for f in findings],
                },
                indent=2,
            )
        )
        return 0
    engine = m.engine or _engine_id(w)
    print(
        f"Recorded {m.id}: {m.num_gpus}x {m.gpu_id}, {engine}, {m.kind} of {m.model} (batch {m.batch_size}); "
        f"saved in {saved}; {scenario_note}."
    )
    print("")
    print("\n".join(_render_comparison(comparison)))
    if smi is not None and findings:
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
        print(
            json.dumps(
                {
                    "file": str(loaded.path),
                    "measurements": [
                        {**m.to_dict(), "comparison": _comparison_dict(c)} for m, c in zip(runs, comparisons)
                    ],
                },
                indent=2,
            )
        )
        return 0
    if not runs:
        print(f"No measurements recorded yet ({loaded.path}); add one with 'gpuadvisor-cli measure add'.")
        return 0
    rows = []
    for m, c in zip(runs, comparisons):
        rows.append(
            [
                m.id,
                m.measured_on or "-",
                f"{m.num_gpus}x {m.gpu_id}",
                m.engine or "-",
                m.kind,
                m.model,
                _num(c.measured_tokens_per_s),
                _num(c.estimated_tokens_per_s),
                _pct(c.tokens_error_pct),
                _num(c.measured_memory_gib, 1),
                _num(c.estimated_memory_gib, 1),
                _pct(c.memory_error_pct),
                m.note[:40],
            ]
        )
    print(
        text_table(
            rows,
            [
                "id",
                "date",
                "GPU",
                "engine",
                "kind",
                "model",
                "tok/s",
                "est.",
                "error",
                "peak GiB",
                "est.",
                "error",
                "note",
            ],
            right={6, 7, 8, 9, 10, 11},
        )
    )
    print(f"\n{len(runs)} measurements in {loaded.path}. error = estimate / measured - 1.")
    problems = [f"  {c.measurement.id}: {c.problem}" for c in comparisons if c.problem]
    if problems:
        print("No estimate for:\n" + "\n".join(problems))
    return 0


def cmd_measure_diagnose(args: argparse.Namespace) -> int:
    summary = _read_smi_log(args.log, args.smi_columns)
    findings = diagnose(summary)
    if args.json:
        print(
            json.dumps(
                {
                    "file": summary.origin,
                    "gpus": [
                        {
                            "gpu": g.gpu,
                            "name": g.name,
                            "samples": g.samples,
                            "duration_s": g.duration_s,
                            "peak_memory_gib": round(g.peak_memory_gib, 3),
                            "memory_total_mib": g.memory_total_mib,
                            "peak_memory_fraction": None
                            if g.peak_memory_fraction is None
                            else round(g.peak_memory_fraction, 4),
                            "median_gpu_util_pct": g.median_gpu_util_pct,
                            "p95_gpu_util_pct": g.p95_gpu_util_pct,
                            "mean_memory_util_pct": g.mean_memory_util_pct,
                        }
                        for g in summary.gpus
                    ],
                    "bad_lines": [{"line": n, "reason": why} for n, why in summary.bad_lines],
                    "findings": [_finding_dict(f) for f in findings],
                },
                indent=2,
            )
        )
        return 0
    for g in summary.gpus:
        share = f" ({g.peak_memory_fraction:.0%} of VRAM)" if g.peak_memory_fraction is not None else ""
        util = f"{g.median_gpu_util_pct:.0f}%" if g.median_gpu_util_pct is not None else "n/a"
        print(
            f"GPU {g.gpu} {g.name}: {g.samples} samples, peak {g.peak_memory_gib:.1f} GiB{share}, "
            f"median utilization {util}"
        )
    print("")
    print("\n".join(_render_findings(findings)))
    return 0


# --- calibration ---------------------------------------------------------------------------------


def _render_profile(profile: CalibrationProfile) -> str:
    lines = [
        f"Calibration profile of {profile.created}"
        + (f" ({profile.note})" if profile.note else "")
        + f": {len(profile.fits)} factors."
    ]
    if profile.fits:
        rows = [
            [
                f.gpu_id,
                f.engine,
                f.factor_name,
                f"{f.value:.4g}",
                str(f.n_measurements),
                "-" if f.error_before_pct is None else f"{f.error_before_pct:.1f}%",
                "-" if f.error_after_pct is None else f"{f.error_after_pct:.1f}%",
                f.note,
            ]
            for f in profile.fits
        ]
        lines.append(
            text_table(
                rows,
                ["GPU", "engine", "factor", "value", "n", "error before", "after", "note"],
                right={3, 4, 5, 6},
            )
        )
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
        measured = load_measurements()
        _warn(measured.warnings)
        gpus, models = load_catalogs(not args.no_user_catalog)
        profile = fit_calibration(measured.value, EstimatePredictor(gpus, models))
        if profile.fits:
            saved = save_calibration(profile)
        else:
            status = EXIT_NOTHING_FITTED
    exported = export_calibration(profile, args.export) if args.export else None
    if args.json:
        print(
            json.dumps(
                {
                    **profile_to_dict(profile),
                    "saved": str(saved) if saved else None,
                    "exported": str(exported) if exported else None,
                },
                indent=2,
            )
        )
        return status
    print(_render_profile(profile))
    if args.import_file:
        print(f"Imported {args.import_file} as {saved}.")
    elif saved:
        print(
            f"Saved to {saved}; apply it with 'gpuadvisor-cli estimate --calibrated' or the window's "
            "Tools > Measurements & calibration."
        )
    elif status:
        print("No factor could be fitted (see above); the saved profile was left as it was.")
    if exported:
        print(f"Exported to {exported}.")
    return status
