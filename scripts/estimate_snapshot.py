#!/usr/bin/env python3
"""Every estimate the code gives, as one JSON file, to diff before and after a change that should
move none of them.

The snapshot holds:

- ``examples``: each scenario of ``docs/examples/*.json``, answered as the CLI answers it (the
  ``--json`` object, the text table and the PDF report's content, with a fixed date), plus every
  figure of every candidate at full precision;
- ``grid``: scenarios built here that reach every workload kind, engine (release lines included),
  weight precision and kernel family, every one-word parallelism and explicit layouts (TP, PP, CP,
  EP, ZeRO, offload, the layout search beyond a node), the machine you own (a laptop or desktop card,
  a Mac, a GGUF split over GPU and host RAM, a session) and services on every serving engine; a
  scenario the core refuses is kept with its one-line message;
- ``validation``: every validation row (prospective sources included) predicted in sample with the
  shipped constants: estimate, low, high and note.

Usage:
    .venv/bin/python scripts/estimate_snapshot.py OUT.json [--only examples,grid,validation]
    .venv/bin/python scripts/estimate_snapshot.py --diff BEFORE.json AFTER.json [--limit N]

``--diff`` prints each path whose value differs (exit 1 when any does).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import datetime as dt
import enum
import json
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpuadvisor.core.errors import InputError  # noqa: E402
from gpuadvisor.core.estimation.estimate import estimate  # noqa: E402
from gpuadvisor.core.formats.scenario import default_scenario, scenario_from_dict, scenario_to_dict  # noqa: E402
from gpuadvisor.core.presentation.report import build_report  # noqa: E402
from gpuadvisor.core.presentation.serialize import estimate_to_dict  # noqa: E402
from gpuadvisor.core.presentation.text import render_estimate  # noqa: E402
from gpuadvisor.core.specs.hardware import load_gpu_catalog  # noqa: E402
from gpuadvisor.core.specs.presets import load_model_catalog  # noqa: E402

#: The date the answers are given on (price staleness, dates in the JSON).
TODAY = dt.date(2026, 12, 7)
#: Fields of the result types that are inputs or whole catalogs, not figures.
SKIP = {"scenario", "memory_model", "instances", "calibration", "_memo", "model", "plan", "memory_at"}


def figures(obj: Any, depth: int = 0) -> Any:
    """A result as JSON: dataclasses and named tuples by field, floats exact, a GPU by its id."""
    if depth > 12:
        return "<deep>"
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj.value if isinstance(obj, enum.Enum) else obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else repr(obj)
    if isinstance(obj, enum.Enum):
        return obj.value
    kind = type(obj).__name__
    if kind == "GpuSpec":
        return {"gpu": obj.id, "memory_gib_usable": obj.memory_gib_usable}
    if kind == "ModelSpec":
        return obj.name
    if kind == "Layout":
        return obj.name
    if kind == "EngineProfile":
        return obj.id
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {
            f.name: figures(getattr(obj, f.name), depth + 1)
            for f in dataclasses.fields(obj)
            if f.name not in SKIP and not f.name.startswith("_")
        }
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return {k: figures(getattr(obj, k), depth + 1) for k in obj._fields if k not in SKIP}
    if isinstance(obj, (list, tuple)):
        return [figures(x, depth + 1) for x in obj]
    if isinstance(obj, dict):
        return {str(k): figures(v, depth + 1) for k, v in obj.items()}
    if callable(obj):
        return f"<{kind}>"
    return f"<{kind}>"


def answer(data: dict[str, Any], gpus: Any, models: Any, base_dir: str | None = None) -> dict[str, Any]:
    """One scenario answered: the CLI's JSON and text, every candidate's figures, or the refusal."""
    try:
        sc = scenario_from_dict(copy.deepcopy(data), base_dir=base_dir)
        est = estimate(sc, gpus, models)
    except InputError as exc:
        return {"refused": str(exc)}
    out: dict[str, Any] = {
        "json": estimate_to_dict(est, TODAY),
        "report": figures(build_report(est, gpus.meta, TODAY)),
        "text": render_estimate(est, show_all=True, warnings=True).splitlines(),
        "engine": est.engine,
        "warnings": list(est.warnings),
        "decision": figures(est.decision),
        "ranking": [c.key for c in est.ranking] if est.ranking else [],
        "advice": figures(est.advice),
        "candidates": [figures(c) for c in est.candidates],
    }
    if est.weights_table is not None:
        out["weights_table"] = figures(est.weights_table)
    return out


def examples(gpus: Any, models: Any) -> dict[str, Any]:
    out = {}
    for path in sorted((ROOT / "docs" / "examples").glob("*.json")):
        data = json.loads(path.read_text())
        out[path.name] = answer(data, gpus, models, base_dir=str(path.parent))
    return out


def _base(kind: str, preset: str = "llama-3.1-8b") -> dict[str, Any]:
    data = scenario_to_dict(default_scenario())
    data["model"] = {"preset": preset}
    data["workload"]["kind"] = kind
    if kind == "inference":
        data["workload"]["batch_size"] = 8
    return data


def _with(data: dict[str, Any], **parts: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(data)
    for part, values in parts.items():
        if part == "model":
            out["model"] = values
        else:
            out[part].update(values)
    return out


INFERENCE_ENGINES = (
    "vllm",
    "vllm-v0",
    "sglang",
    "tensorrt-llm",
    "llama.cpp",
    "mlc-llm",
    "transformers",
    "autoawq",
    "exllamav2",
)
TRAINING_ENGINES = ("megatron", "fsdp", "deepspeed", "hf-trainer", "torchtune")
WEIGHTS = ("bf16", "fp16", "fp8", "int8", "int4", "nf4", "q4_k_m", "q8_0", "mxfp4")
FAMILIES = ("awq", "gptq", "marlin", "exllama", "bnb", "gguf", "fp8", "w8a8", "torchao", "hqq")
PARALLELISMS = ("ddp", "zero1", "zero2", "zero3", "fsdp", "tensor", "pipeline")


def grid_scenarios() -> Iterator[tuple[str, dict[str, Any]]]:
    """(name, scenario dict) of the grid (see the module docstring)."""
    inf = _base("inference")
    for engine in INFERENCE_ENGINES:
        for weights in WEIGHTS:
            yield f"inference/{engine}/{weights}", _with(inf, workload={"engine": engine, "weights": weights})
    for family in FAMILIES:
        for weights in ("int4", "int8", "fp8"):
            yield (
                f"inference/family/{family}/{weights}",
                _with(inf, workload={"engine": "vllm", "weights": weights, "quantization": family}),
            )
    yield "inference/default-engine", inf
    yield "inference/kv-fp8", _with(inf, workload={"kv_cache": "fp8", "prompt_tokens": 30000})
    yield "inference/long-prompt", _with(inf, workload={"prompt_tokens": 32000, "output_tokens": 1000})
    yield "inference/no-cuda-graphs", _with(inf, workload={"engine": "vllm", "cuda_graphs": False})
    for preset in (
        "mixtral-8x7b",
        "qwen3-30b-a3b",
        "deepseek-v3",
        "gpt-oss-120b",
        "gemma-3-27b",
        "llama-3.1-70b",
    ):
        yield f"inference/model/{preset}", _with(inf, model={"preset": preset})
        yield (
            f"inference/model/{preset}/sglang-fp8",
            _with(inf, model={"preset": preset}, workload={"engine": "sglang", "weights": "fp8"}),
        )
    for par in ("tensor", "pipeline", "ddp"):
        yield (
            f"inference/parallel/{par}",
            _with(inf, model={"preset": "llama-3.1-70b"}, hardware={"gpu_count": 4, "parallelism": par}),
        )
    yield (
        "inference/layout/tp4",
        _with(
            inf,
            model={"preset": "llama-3.1-70b"},
            hardware={"gpu": "h100-sxm", "gpu_count": 4, "tensor_parallel": 4},
        ),
    )
    yield (
        "inference/requests",
        _with(inf, workload={"requests": 100000, "prompt_tokens": 2000, "output_tokens": 300}),
    )
    for engine in (
        "vllm",
        "vllm-v0",
        "sglang",
        "tensorrt-llm",
        "llama.cpp",
        "mlc-llm",
        "transformers",
        "exllamav2",
    ):
        yield (
            f"serving/{engine}",
            _with(
                inf,
                workload={
                    "engine": engine,
                    "weights": "q4_k_m" if engine == "llama.cpp" else "bf16",
                    "prompt_tokens": 1500,
                    "output_tokens": 300,
                    "prompt_tokens_p90": 4000,
                    "output_tokens_p90": 800,
                    "serving": {"requests_per_s": 5.0, "ttft_s": 2.0, "itl_ms": 60, "percentile": 90},
                },
            ),
        )
    yield (
        "serving/70b-tight",
        _with(
            inf,
            model={"preset": "llama-3.1-70b"},
            workload={
                "engine": "vllm",
                "weights": "fp8",
                "serving": {
                    "requests_per_s": 20.0,
                    "ttft_s": 0.5,
                    "itl_ms": 30,
                    "percentile": 99,
                    "prefix_cache_hit_rate": 0.5,
                    "hours_per_day": 10,
                    "request_overhead_ms": 20,
                },
            },
        ),
    )
    yield (
        "serving/moe",
        _with(
            inf,
            model={"preset": "qwen3-235b-a22b"},
            workload={
                "engine": "sglang",
                "weights": "fp8",
                "serving": {"requests_per_s": 2.0, "ttft_s": 5.0, "itl_ms": 80},
            },
        ),
    )
    yield (
        "serving/providers",
        _with(
            inf,
            workload={"serving": {"requests_per_s": 3.0, "ttft_s": 1.0, "itl_ms": 50}},
            budget={"providers": ["aws", "lambda"], "price": "expected"},
        ),
    )
    for kind in ("lora", "qlora", "full_finetune", "pretrain"):
        base = _base(kind)
        if kind == "qlora":
            base["workload"]["weights"] = "nf4"
        yield f"{kind}/default", base
        for engine in TRAINING_ENGINES:
            yield f"{kind}/engine/{engine}", _with(base, workload={"engine": engine})
        for par in PARALLELISMS:
            yield f"{kind}/parallel/{par}", _with(base, hardware={"gpu_count": 8, "parallelism": par})
        yield (
            f"{kind}/deadline",
            _with(base, workload={"train_tokens": 2e9}, budget={"deadline_hours": 12, "max_total_usd": 500}),
        )
        yield (
            f"{kind}/weights/fp16",
            _with(
                base, workload={"weights": "int4" if kind == "qlora" else "fp16", "optimizer": "adamw_8bit"}
            ),
        )
    yield "qlora/70b", _with(_base("qlora", "llama-3.1-70b"), workload={"weights": "nf4"})
    yield (
        "full_finetune/offload",
        _with(
            _base("full_finetune", "llama-3.1-70b"),
            workload={"engine": "deepspeed", "offload": {"optimizer": "cpu", "parameters": "cpu"}},
            hardware={"gpu_count": 8, "parallelism": "zero3", "host_memory_gib": 1024},
        ),
    )
    pre = _base("pretrain", "llama-3.1-70b")
    pre["workload"].update({"seq_len": 8192, "global_batch_size": 512, "train_tokens": 1e11})
    yield (
        "pretrain/layout/tp8-pp4-dp2",
        _with(
            pre,
            hardware={
                "gpu": "h100-sxm",
                "gpu_count": 64,
                "tensor_parallel": 8,
                "pipeline_parallel": 4,
                "sequence_parallel": True,
            },
            workload={"activation_recompute": "selective", "compute_precision": "fp8"},
        ),
    )
    yield (
        "pretrain/layout/cp2",
        _with(
            pre,
            hardware={"gpu": "h100-sxm", "gpu_count": 32, "tensor_parallel": 4, "context_parallel": 2},
            workload={"seq_len": 32768},
        ),
    )
    yield (
        "pretrain/layout/moe-ep",
        _with(
            _base("pretrain", "mixtral-8x7b"),
            hardware={"gpu": "h100-sxm", "gpu_count": 32, "tensor_parallel": 2, "expert_parallel": 8},
        ),
    )
    yield (
        "pretrain/search",
        _with(_base("pretrain", "llama-3.1-8b"), hardware={"gpu": "h100-sxm", "gpu_count_max": 32}),
    )
    yield (
        "pretrain/search-moe",
        _with(_base("pretrain", "mixtral-8x7b"), hardware={"gpu": "a100-80gb", "gpu_count_max": 64}),
    )
    own = _with(inf, hardware={"segment": "local"})
    yield "own/local-segment", own
    yield (
        "own/local-segment/70b-gguf",
        _with(own, model={"preset": "llama-3.1-70b"}, workload={"weights": "q4_k_m"}),
    )
    for gpu in ("rtx-4090", "rtx-4090-laptop", "apple-m3-max", "rtx-3060-12gb", "rx-7900-xtx"):
        yield (
            f"own/{gpu}/qwen3-32b-q4",
            _with(
                inf,
                model={"preset": "qwen3-32b"},
                workload={"weights": "q4_k_m"},
                hardware={"gpu": gpu, "segment": None},
            ),
        )
        yield (
            f"own/{gpu}/70b-q4-split",
            _with(
                inf,
                model={"preset": "llama-3.1-70b"},
                workload={"weights": "q4_k_m", "engine": "llama.cpp"},
                hardware={"gpu": gpu, "segment": None, "host_memory_gib": 96},
            ),
        )
    yield (
        "own/rtx-4090/gpu-layers",
        _with(
            inf,
            model={"preset": "llama-3.1-70b"},
            workload={"weights": "q4_k_m", "gpu_layers": 40},
            hardware={"gpu": "rtx-4090", "segment": None},
        ),
    )
    yield (
        "own/mac-memory",
        _with(
            inf,
            model={"preset": "llama-3.1-70b"},
            workload={"weights": "q4_k_m"},
            hardware={"gpu": "apple-m2-ultra", "segment": None, "memory_gib": 128},
        ),
    )
    yield (
        "own/lora-4090",
        _with(_base("lora"), hardware={"gpu": "rtx-4090", "segment": None}),
    )
    yield "budget/buy", _with(_base("lora"), budget={"purchase": "used", "ownership_months": 24})
    yield "budget/providers", _with(_base("lora"), budget={"providers": ["aws", "azure", "gcp"]})
    yield (
        "budget/nothing-fits",
        _with(_base("full_finetune", "llama-3.1-405b"), hardware={"gpu": "rtx-4090", "segment": None}),
    )


def grid(gpus: Any, models: Any) -> dict[str, Any]:
    return {name: answer(data, gpus, models) for name, data in grid_scenarios()}


def validation(gpus: Any, models: Any) -> dict[str, Any]:
    from gpuadvisor.validation import Predictor, load_measurements

    rows = load_measurements(include_prospective=True)
    predictor = Predictor(gpus, models)
    out = {}
    for r in rows:
        c = predictor.compare(r)
        out[r.id] = [c.measured, c.estimate, c.low, c.high, c.note]
    return out


def diff(a: Any, b: Any, path: str = "") -> Iterator[str]:
    if type(a) is not type(b) and not (isinstance(a, (int, float)) and isinstance(b, (int, float))):
        yield f"{path}: {short(a)} -> {short(b)}"
        return
    if isinstance(a, dict):
        for k in dict.fromkeys([*a, *b]):
            if k not in a:
                yield f"{path}/{k}: added {short(b[k])}"
            elif k not in b:
                yield f"{path}/{k}: removed {short(a[k])}"
            else:
                yield from diff(a[k], b[k], f"{path}/{k}")
    elif isinstance(a, list):
        if len(a) != len(b):
            yield f"{path}: {len(a)} items -> {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b)):
            yield from diff(x, y, f"{path}[{i}]")
    elif a != b:
        yield f"{path}: {short(a)} -> {short(b)}"


def short(x: Any) -> str:
    text = json.dumps(x, ensure_ascii=False)
    return text if len(text) <= 160 else text[:157] + "..."


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("out", nargs="?")
    parser.add_argument("--only", default="examples,grid,validation")
    parser.add_argument("--diff", nargs=2, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--limit", type=int, default=200)
    args = parser.parse_args()
    if args.diff:
        before, after = (json.loads(Path(p).read_text()) for p in args.diff)
        lines = list(diff(before, after))
        for line in lines[: args.limit]:
            print(line)
        if len(lines) > args.limit:
            print(f"... and {len(lines) - args.limit} more")
        print(f"{len(lines)} differences")
        return 1 if lines else 0
    if not args.out:
        parser.error("give OUT.json (or --diff BEFORE AFTER)")
    gpus, models = load_gpu_catalog(), load_model_catalog()
    parts = {"examples": examples, "grid": grid, "validation": validation}
    snapshot = {name: parts[name](gpus, models) for name in args.only.split(",")}
    Path(args.out).write_text(json.dumps(snapshot, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
