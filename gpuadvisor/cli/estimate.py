"""``estimate``, ``gpus``, ``models`` and ``default-scenario``: the comparison and the catalogs as text or JSON."""

from __future__ import annotations

import argparse
import datetime
import json
import sys

from ..core.estimation.estimate import estimate
from ..core.formats.scenario import default_scenario, dumps_scenario, load_scenario
from ..core.formatting import fmt_count
from ..core.presentation.serialize import estimate_to_dict, gpu_to_dict, model_to_dict
from ..core.presentation.text import render_estimate, text_table, text_warnings
from ..storage.user_catalog_store import load_catalogs
from .common import EXIT_WARNINGS, _warn, load_inputs, saved_profile


def cmd_estimate(args: argparse.Namespace) -> int:
    """The comparison on stdout (text or JSON), every warning on stderr; ``--strict``: exit 3 when
    there was any warning."""
    scenario = load_scenario(args.scenario)
    gpus, models, instances, months, loaded = load_inputs(args)
    profile = saved_profile() if args.calibrated else None
    est = estimate(scenario, gpus, models, gpu_ids=args.gpu or None, calibration=profile, instances=instances)
    today = datetime.date.today()
    if args.json:
        print(json.dumps(estimate_to_dict(est, today, months), indent=2))
    else:
        print(render_estimate(est, show_all=args.all, warnings=False))
    sys.stdout.flush()  # the answer before the warnings when both go to one terminal
    warnings = text_warnings(est, today, months)
    _warn(warnings)
    return EXIT_WARNINGS if args.strict and (warnings or loaded) else 0


def cmd_gpus(args: argparse.Namespace) -> int:
    gpus, _ = load_catalogs(not args.no_user_catalog)
    if args.json:
        print(json.dumps({"updated": gpus.meta.updated, "gpus": [gpu_to_dict(g) for g in gpus]}, indent=2))
        return 0
    rows = []
    for g in gpus:
        cloud = g.cloud_usd_per_hour
        rows.append(
            [
                g.id,
                g.name,
                f"{g.memory_gib_usable:.1f}",
                f"{g.memory_bandwidth_gb_s:,.0f}",
                f"{g.fp16_dense_tflops:,.1f}",
                f"{g.fp8_dense_tflops:,.1f}" if g.fp8_dense_tflops else "-",
                f"{cloud.low:.2f}-{cloud.high:.2f}" if cloud else "-",
                g.price_as_of or "-",
            ]
        )
    print(
        text_table(
            rows,
            ["id", "name", "GiB", "GB/s", "FP16 TFLOPS", "FP8 TFLOPS", "$/GPU-h", "prices as of"],
            right={2, 3, 4, 5},
        )
    )
    print("\nTFLOPS are dense tensor-core figures (no sparsity).")
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    _, models = load_catalogs(not args.no_user_catalog)
    if args.json:
        print(
            json.dumps(
                {"updated": models.meta.updated, "models": [model_to_dict(m) for m in models]}, indent=2
            )
        )
        return 0
    rows = [
        [
            m.id,
            m.name,
            fmt_count(m.parameters),
            fmt_count(m.active_parameters) if m.is_moe else "",
            str(m.num_layers),
            str(m.hidden_size),
            f"{m.num_attention_heads}/{m.num_key_value_heads}",
            f"{m.max_context:,}",
        ]
        for m in models
    ]
    print(
        text_table(
            rows,
            ["id", "name", "params", "active", "layers", "hidden", "heads/kv", "context"],
            right={2, 3, 4, 5, 7},
        )
    )
    return 0


def cmd_default_scenario(args: argparse.Namespace) -> int:
    sys.stdout.write(dumps_scenario(default_scenario()))
    return 0
