"""The validation set: published measurements and their sources (``tests/data/validation``).

``sources.csv`` names each source once (title, citation, kind, date read); ``measurements.csv``
holds one row per published figure: where it is in the source, the figure quoted verbatim,
what it measures, and every setup fact the source gives (engine, kernel family, batch,
layout ...). ``docs/validation.md`` describes the columns. Loading checks every row and an
error names the file, the row id and the column.

:func:`scenario_dict` restates a row as a scenario in the same keys ``gpuadvisor-cli estimate
--json`` reads. Facts the scenario format has no key for (yet) are left out and listed, so
each comparison says what the estimate could not be told.
"""

from __future__ import annotations

import csv
import json
import math
import re
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from ..core.errors import InputError
from ..core.formats.scenario import ARCHITECTURE_KEYS
from ..core.specs.speculative import SpeculativeSpec
from ..core.specs.workload import Hardware, RuntimeOverhead, Workload
from ..core.vocabulary import OPTIMIZER_SHARDINGS

#: Default location of the data files in a source checkout.
DATA_DIR = Path(__file__).resolve().parents[2] / "tests" / "data" / "validation"
SCHEMA_VERSION = 1

GROUPS = ("memory", "bounds", "inference_speed", "training_speed", "serving")
#: quantity -> (group(s) it may belong to, accepted units)
QUANTITIES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "peak_memory": (("memory", "bounds"), ("GB", "GiB", "MiB", "MB")),
    "model_states": (("memory",), ("GB", "GiB")),
    "weights_memory": (("memory",), ("GB", "GiB", "MiB")),
    "decode_tokens_per_s_per_user": (("inference_speed",), ("tokens/s",)),
    "output_tokens_per_s": (("inference_speed",), ("tokens/s",)),
    "decode_tokens_per_s": (("inference_speed",), ("tokens/s",)),
    "prefill_tokens_per_s": (("inference_speed",), ("tokens/s",)),
    "time_to_first_token_ms": (("inference_speed",), ("ms",)),
    "request_latency_s": (("inference_speed",), ("s",)),
    "decode_ms_per_token": (("inference_speed",), ("ms",)),
    "train_tokens_per_s_per_gpu": (("training_speed",), ("tokens/s",)),
    "train_tokens_per_s": (("training_speed",), ("tokens/s",)),
    "train_tflops_per_gpu": (("training_speed",), ("TFLOP/s",)),
    "train_mfu": (("training_speed",), ("%",)),
    # Hardware FLOPs utilization: the recomputed FLOPs counted (Korthikanti et al. 2022, section 6).
    "train_hfu": (("training_speed",), ("%",)),
    "train_gpu_hours": (("training_speed",), ("GPU-hours",)),
    "train_step_time_s": (("training_speed",), ("s",)),
    # Serving benchmarks at a stated concurrency (closed loop: each client sends its next request
    # when one ends); ``micro_batch`` holds the concurrency.
    "serving_output_tokens_per_s": (("serving",), ("tokens/s",)),
    "serving_ttft_ms": (("serving",), ("ms",)),
    "serving_itl_ms": (("serving",), ("ms",)),
}
BOUNDS = ("point", "lower", "upper")
BASES = ("tensors", "device", "model_states", "weights")
#: Where a serving row's figures were taken: empty for a client of the engine's API server (the
#: default: HTTP, tokenization and streaming included), ``engine`` for a client in the engine's own
#: process (``LLM.generate``, an in-process async engine), which the API server's per-request time
#: does not reach (see docs/estimation.md, "Serving", Validation).
SERVING_BASES = ("", "engine")
UNIT_BYTES = {"GB": 1e9, "MB": 1e6, "GiB": 2.0**30, "MiB": 2.0**20}
SOURCE_KINDS = (
    "paper",
    "model card",
    "framework table",
    "framework docs",
    "benchmark repository",
    "blog",
    "discussion",
    "own measurement",
)

SOURCE_COLUMNS = ("source_id", "title", "citation", "kind", "date_read", "notes")
#: ``rescored.csv``: later decisions to score a row or not, kept apart so that ``measurements.csv``
#: only grows (a row's own ``scored``/``why`` cells stay as first written; the last decision wins).
RESCORED_COLUMNS = ("id", "scored", "why", "date_decided")
#: ``serving_load.csv``: whether a serving run's load and its engine's admission are stated, and why,
#: kept apart so that ``measurements.csv`` only grows. ``stated``: a closed loop of stated clients (or
#: a rate the setup sustains) on an engine whose sequence and chunk limits are known, scored on output
#: tokens/s, TTFT and ITL; ``unstated``: every request at once, a rate past saturation, or limits the
#: source leaves out, scored on output tokens/s, its TTFT and ITL counting for range coverage only.
#: Read into each row's facts as ``load`` and ``load_why``.
SERVING_LOAD_COLUMNS = ("id", "load", "why")
#: The values of ``load``.
LOADS = ("stated", "unstated")
#: The columns that describe the measurement itself; every other column is a setup fact.
RECORD_COLUMNS = (
    "id",
    "source_id",
    "locator",
    "quote",
    "date_read",
    "group",
    "quantity",
    "unit",
    "value",
    "bound",
    "basis",
    "scored",
    "why",
)
MEASUREMENT_COLUMNS = (
    "id",
    "source_id",
    "locator",
    "quote",
    "date_read",
    "group",
    "quantity",
    "unit",
    "value",
    "bound",
    "basis",
    "model",
    "model_name",
    "architecture",
    "params_b",
    "kind",
    "engine",
    "weights",
    "quantization",
    "quant_group_size",
    "kv_cache",
    "optimizer",
    "optimizer_state_dtype",
    "master_weights",
    "micro_batch",
    "global_batch",
    "seq_len",
    "prompt_tokens",
    "output_tokens",
    "grad_ckpt",
    "flash_attention",
    "lora_rank",
    "lora_targets",
    "lora_dropout",
    "double_quant",
    "gpu",
    "gpu_count",
    "parallelism",
    "tp",
    "pp",
    "dp",
    "cp",
    "offload",
    "cuda_graphs",
    "gemm_precision",
    "cuda_context_gib",
    "tokens_trained",
    "scale_to_params",
    "scored",
    "why",
    "assumptions",
    # Added later at the end: older rows may stop before them (read as empty).
    "vp",
    "recompute",
    # Serving rows: how the benchmark sent its requests. ``closed_loop``: a stated number of clients,
    # each sending its next request when one ends (``--max-concurrency``, genai-perf's concurrency
    # mode); ``burst``: every request sent at once (request rate inf, trtllm-bench), the engine
    # running as many as it admits while the rest wait and the run draining at its end.
    "arrival",
    # A burst whose answers stop at their end token: the longest answer a request may give (its
    # max_tokens, or the longest of a dataset replayed with its own lengths), output_tokens being
    # their mean. Empty: every answer is output_tokens long. Also a closed loop's (with requests).
    "output_tokens_max",
    # A closed loop of a stated number of requests in all (sglang.bench_serving --num-prompts, vllm
    # bench serve --num-prompts with --max-concurrency): its clients start together and the run
    # ends as the last answers drain. Empty: a steady loop (a long or time-bound run).
    "requests",
    # Training rows: the expert-parallel degree of a mixture-of-experts layout (Megatron's EP), passed
    # on as ``hardware.expert_parallel`` with the row's layout.
    "ep",
    # Serving rows with speculative decoding: the scenario's ``workload.speculative`` as JSON
    # (``{"method": "eagle", "num_tokens": 4}``; an acceptance rate only where the source states one).
    "speculative",
    # Serving rows of disaggregated prefill and decode: ``<P>p<D>d``, P prefill and D decode instances
    # of the row's layout (``gpu_count`` GPUs each), behind one router.
    "disaggregated",
    # Training rows: whether tensor parallelism also split the sequence between blocks (Megatron's
    # --sequence-parallel; yes/no), passed on as ``hardware.sequence_parallel``; empty: the stack's
    # default (:data:`SEQUENCE_PARALLEL_STACKS`).
    "sp",
    # QLoRA rows: whether PEFT's prepare_model_for_kbit_training cast the base's 16-bit weights to
    # fp32 (yes/no), passed on as ``workload.kbit_preparation``; empty: the engine's habit.
    "kbit_preparation",
    # Inference rows: where the prefill computed logits, ``all`` (every prompt position: Hugging Face
    # Transformers before v4.45, an eager loop calling the whole forward) or ``last``, passed on as
    # ``workload.prompt_logits``; empty: the engine's habit.
    "prompt_logits",
    # Training rows of a mixture-of-experts layout: the expert layers' own tensor-parallel degree
    # (Megatron's --expert-tensor-parallel-size), passed on as ``hardware.expert_tensor_parallel``
    # with the row's layout; empty: the scenario's default, the dense layers' TP. Megatron's MoE
    # recipes often run ETP 1 beside TP 2 or more (parallel folding), which only this cell states.
    "etp",
    # Rows of TFLOPS as Megatron-LM logs them: how its count took the attention core, ``full`` (every
    # key of the sequence, Megatron-LM before 2025-03-06 and the papers and stacks that used its
    # formula) or ``causal`` (the keys before each position, since commit 8873b55 of 2025-03-06);
    # empty: full (:func:`.harness.published_tflops_ratio`).
    "tflops_attention",
    # Training rows of ZeRO or FSDP sharded in groups (hybrid sharding: PyTorch FSDP's HYBRID_SHARD,
    # torchtitan's data_parallel_shard_degree, fms-fsdp's "hsdp"): the data-parallel ranks of one
    # group, passed on as ``hardware.data_parallel_shard``; empty: the state sharded over every
    # data-parallel rank.
    "dp_shard",
    # Serving rows: the share of each prompt the engine found in its prefix cache (0 to below 1),
    # passed on as the serving spec's ``prefix_cache_hit_rate``: the prompts are prefilled less that
    # share, their KV cache held whole. Stated where the source shows why (a benchmark that sends
    # the same prompts again to a server whose cache holds them from an earlier run); empty: none.
    "prefix_cache_hit_rate",
)

#: Weight types the scenario may not know yet, and the nearest type it knows (used only as a fallback).
WEIGHT_FALLBACK = {
    "q8_0": "int8",
    "q6_k": "int8",
    "q5_k_m": "int4",
    "q5_0": "int4",
    "q4_k_m": "int4",
    "q4_0": "int4",
    "q4_1": "int4",
    "q3_k_m": "int4",
    "q2_k": "int4",
    "iq4_xs": "int4",
    "mxfp4": "int4",
    "nvfp4": "int4",
}

#: Engines the core has no profile for, and the profiles whose physics is nearest (fallback only):
#: (for inference, for training).
ENGINE_FALLBACK = {
    "exllama": ("exllamav2", None),  # ExLlama (v1): the same author's kernels and runtime lineage
    "autoawq": ("transformers", None),
    "autogptq": ("transformers", None),
    "litgpt": ("transformers", "fsdp"),
    "sglang": ("vllm", None),
    "torchtitan": (None, "fsdp"),
    "nemo": (None, "megatron"),
    "deepspeed": (None, "megatron"),
    "torchtune": (None, "fsdp"),
    "unsloth": (None, "hf-trainer"),
    "axolotl": (None, "hf-trainer"),
    "metaseq": (None, "megatron"),
    "mosaic-composer": (None, "fsdp"),
}


#: A training stack's words for recomputation where they mean another policy than the scenario's
#: (Megatron's) words: torchtitan's ``selective`` mode runs its per-operator policy, ``op``, the option
#: its Llama configurations set (``selective_ac_option = "op"``; pytorch/torchtitan
#: ``torchtitan/parallelisms/parallelize_llama.py``, ``_apply_ac_to_transformer_block``, commit 004b314).
STACK_RECOMPUTE = {"torchtitan": {"selective": "op"}}
#: Training stacks whose tensor parallelism always splits the sequence between blocks: torchtitan's
#: plan shards each block's norms over the sequence (``SequenceParallel``) and reduce-scatters the
#: row-parallel outputs (``output_layouts=Shard(1)``; ``apply_tp`` of the same file). Megatron's
#: default comes from the core (``layout.default_sequence_parallel``).
SEQUENCE_PARALLEL_STACKS = ("torchtitan",)


def stack_recompute(engine: str, recompute: str) -> str:
    """The scenario's recomputation policy for a row's ``recompute`` under its ``engine``'s words."""
    return STACK_RECOMPUTE.get(engine, {}).get(recompute, recompute)


def fallback_engine(engine: str, kind: str) -> str | None:
    """The core profile that stands in for ``engine`` for this workload kind (None: no stand-in)."""
    pair = ENGINE_FALLBACK.get(engine)
    if pair is None:
        return None
    return pair[0] if kind == "inference" else pair[1]


class ValidationDataError(ValueError):
    """A data file breaks the format: the message names the file, the row and the column."""


@dataclass(frozen=True, slots=True)
class Source:
    source_id: str
    title: str
    citation: str
    kind: str
    date_read: str
    notes: str = ""


@dataclass(frozen=True, slots=True)
class Row:
    """One published figure with its setup. Empty cells are ``""``; numbers are parsed on use."""

    id: str
    source_id: str
    locator: str
    quote: str
    date_read: str
    group: str
    quantity: str
    unit: str
    value: float
    bound: str
    basis: str
    scored: bool
    why: str
    facts: tuple[tuple[str, str], ...]  # every other column, as written

    def fact(self, name: str) -> str:
        return dict(self.facts).get(name, "")

    @property
    def engine(self) -> str:
        return self.fact("engine")

    def describe(self) -> str:
        """A short 'what was run' label for tables."""
        f = dict(self.facts)
        model = f.get("model_name") or f.get("model") or "?"
        quant = f.get("weights", "")
        if f.get("quantization"):
            quant += f"/{f['quantization']}"
        gpus = f"{f.get('gpu_count') or 1}x {f.get('gpu') or '?'}"
        return f"{model}, {f.get('kind', '')}, {quant}, {f.get('engine', '')}, {gpus}"


#: Columns added at the end of the measurements header after rows were written: a row may end
#: before them (its cells are read as empty), so older rows stay as they were.
TRAILING_OPTIONAL = MEASUREMENT_COLUMNS[MEASUREMENT_COLUMNS.index("vp") :]
#: How a serving row's requests were sent, besides ``paced:<s>`` (and empty for an unscored row):
#: ``closed_loop`` (clients each sending their next request when one ends), ``lockstep`` (such a
#: loop of fixed-length requests whose clients started together, so its rounds stay in step) and
#: ``burst`` (every request at once). See docs/estimation.md, "Serving", Validation.
ARRIVALS = ("", "closed_loop", "lockstep", "burst")


def _read(path: Path, columns: tuple[str, ...]) -> list[dict[str, str]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValidationDataError(f"{path.name}: cannot be read ({exc.strerror})") from None
    lines = text.splitlines()
    if not lines or not lines[0].startswith("#") or f"schema_version={SCHEMA_VERSION}" not in lines[0]:
        raise ValidationDataError(f"{path.name}: first line must be '# ...; schema_version={SCHEMA_VERSION}'")
    reader = csv.DictReader(lines[1:])
    if tuple(reader.fieldnames or ()) != columns:
        raise ValidationDataError(f"{path.name}: columns must be {', '.join(columns)}")
    rows = []
    for n, raw in enumerate(reader, start=3):
        missing = [k for k, v in raw.items() if v is None]
        if None in raw or any(k not in TRAILING_OPTIONAL for k in missing):
            raise ValidationDataError(f"{path.name} line {n}: wrong number of cells")
        for k in missing:
            raw[k] = ""
        rows.append({k: v.strip() for k, v in raw.items()})
    return rows


def load_sources(data_dir: str | Path = DATA_DIR) -> dict[str, Source]:
    """The sources by id, checked."""
    path = Path(data_dir) / "sources.csv"
    out: dict[str, Source] = {}
    for raw in _read(path, SOURCE_COLUMNS):
        sid = raw["source_id"]
        where = f"{path.name} source {sid or '?'}"
        if not sid or sid in out:
            raise ValidationDataError(f"{where}: source_id must be present and unique")
        for col in ("title", "citation", "date_read"):
            if not raw[col]:
                raise ValidationDataError(f"{where}: {col} is empty")
        if raw["kind"] not in SOURCE_KINDS:
            raise ValidationDataError(f"{where}: kind must be one of {', '.join(SOURCE_KINDS)}")
        _check_date(raw["date_read"], f"{where}: date_read")
        out[sid] = Source(**raw)
    return out


def _check_date(text: str, where: str) -> None:
    import datetime as dt

    try:
        dt.date.fromisoformat(text)
    except ValueError:
        raise ValidationDataError(f"{where} must be a date (YYYY-MM-DD), got {text!r}") from None


def _number(raw: dict[str, str], col: str, where: str, positive: bool = True) -> float | None:
    text = raw[col]
    if text == "":
        return None
    try:
        value = float(text)
    except ValueError:
        raise ValidationDataError(f"{where}: {col} must be a number, got {text!r}") from None
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        raise ValidationDataError(f"{where}: {col} must be a number > 0, got {text!r}")
    return value


def load_measurements(data_dir: str | Path = DATA_DIR, sources: dict[str, Source] | None = None) -> list[Row]:
    """Every measurement row, checked against the format and the sources. (The package's
    :func:`gpuadvisor.validation.load_measurements`, which fits and leave-one-source-out read,
    leaves out the prospective sources of the ledger: :func:`.ledger.load_measurements`.)"""
    sources = load_sources(data_dir) if sources is None else sources
    path = Path(data_dir) / "measurements.csv"
    rows: list[Row] = []
    seen: set[str] = set()
    for raw in _read(path, MEASUREMENT_COLUMNS):
        rid = raw["id"]
        where = f"{path.name} row {rid or '?'}"
        if not rid or rid in seen:
            raise ValidationDataError(f"{where}: id must be present and unique")
        seen.add(rid)
        if raw["source_id"] not in sources:
            raise ValidationDataError(f"{where}: source_id {raw['source_id']!r} is not in sources.csv")
        groups, units = QUANTITIES.get(raw["quantity"], ((), ()))
        if not groups:
            raise ValidationDataError(f"{where}: quantity must be one of {', '.join(QUANTITIES)}")
        if raw["group"] not in groups:
            raise ValidationDataError(f"{where}: group must be {' or '.join(groups)} for {raw['quantity']}")
        if raw["unit"] not in units:
            raise ValidationDataError(
                f"{where}: unit must be one of {', '.join(units)} for {raw['quantity']}"
            )
        if raw["bound"] not in BOUNDS:
            raise ValidationDataError(f"{where}: bound must be one of {', '.join(BOUNDS)}")
        if (raw["group"] == "bounds") != (raw["bound"] != "point"):
            raise ValidationDataError(
                f"{where}: group 'bounds' goes with bound lower/upper and only with them"
            )
        if raw["group"] in ("memory", "bounds") and raw["basis"] not in BASES:
            raise ValidationDataError(f"{where}: basis must be one of {', '.join(BASES)} for memory rows")
        if raw["group"] == "serving" and raw["basis"] not in SERVING_BASES:
            raise ValidationDataError(f"{where}: basis must be empty or 'engine' for serving rows")
        if raw["group"] not in ("memory", "bounds", "serving") and raw["basis"]:
            raise ValidationDataError(f"{where}: basis is only for memory and serving rows")
        value = _number(raw, "value", where)
        if value is None:
            raise ValidationDataError(f"{where}: value is empty")
        if raw["scored"] not in ("yes", "no"):
            raise ValidationDataError(f"{where}: scored must be yes or no")
        scored = raw["scored"] == "yes"
        if not scored and not raw["why"]:
            raise ValidationDataError(f"{where}: an unscored row must say why")
        for col in ("locator", "quote", "date_read"):
            if not raw[col]:
                raise ValidationDataError(f"{where}: {col} is empty (every row cites its figure)")
        _check_date(raw["date_read"], f"{where}: date_read")
        for col in (
            "params_b",
            "quant_group_size",
            "micro_batch",
            "global_batch",
            "seq_len",
            "prompt_tokens",
            "output_tokens",
            "lora_rank",
            "gpu_count",
            "tp",
            "pp",
            "dp",
            "cp",
            "vp",
            "tokens_trained",
            "scale_to_params",
            "output_tokens_max",
            "requests",
            "ep",
            "etp",
            "dp_shard",
        ):
            _number(raw, col, where)
        _number(raw, "cuda_context_gib", where, positive=False)
        for col in (
            "master_weights",
            "grad_ckpt",
            "flash_attention",
            "lora_dropout",
            "double_quant",
            "cuda_graphs",
            "sp",
            "kbit_preparation",
        ):
            if raw[col] not in ("", "yes", "no"):
                raise ValidationDataError(f"{where}: {col} must be yes, no or empty")
        if raw["prompt_logits"] not in ("", "all", "last"):
            raise ValidationDataError(f"{where}: prompt_logits must be all, last or empty")
        if raw["tflops_attention"] not in ("", "full", "causal"):
            raise ValidationDataError(f"{where}: tflops_attention must be full, causal or empty")
        if raw["tflops_attention"] and raw["quantity"] not in (
            "train_tflops_per_gpu",
            "train_mfu",
            "train_hfu",
        ):
            raise ValidationDataError(f"{where}: tflops_attention is for TFLOPS and MFU rows")
        if raw["dp_shard"] and raw["parallelism"] not in OPTIMIZER_SHARDINGS:
            raise ValidationDataError(f"{where}: dp_shard is for training rows of ZeRO or FSDP")
        if raw["recompute"] not in ("", "none", "selective", "op", "full"):
            raise ValidationDataError(f"{where}: recompute must be none, selective, op, full or empty")
        if raw["arrival"] not in ARRIVALS and paced_interval(raw["arrival"]) is None:
            raise ValidationDataError(
                f"{where}: arrival must be closed_loop, lockstep, burst, paced:<seconds between requests> "
                "or empty"
            )
        if raw["group"] == "serving" and scored and not raw["arrival"]:
            raise ValidationDataError(
                f"{where}: a scored serving row needs arrival (closed_loop, lockstep, burst or paced:<s>)"
            )
        if raw["requests"]:
            if raw["arrival"] != "closed_loop":
                raise ValidationDataError(
                    f"{where}: requests is for a closed loop of a stated number of requests"
                )
            if not raw["micro_batch"] or float(raw["requests"]) < float(raw["micro_batch"]):
                raise ValidationDataError(f"{where}: requests must be at least the clients (micro_batch)")
        if raw["speculative"] or raw["disaggregated"]:
            if raw["group"] != "serving":
                raise ValidationDataError(f"{where}: speculative and disaggregated are for serving rows")
            if raw["speculative"]:
                try:
                    SpeculativeSpec.from_value(json.loads(raw["speculative"]))
                except (ValueError, InputError) as exc:
                    raise ValidationDataError(f"{where}: speculative: {exc}") from None
            if raw["disaggregated"] and disaggregated_instances(raw["disaggregated"]) is None:
                raise ValidationDataError(
                    f"{where}: disaggregated must be <P>p<D>d (prefill and decode instances, e.g. 1p3d)"
                )
        if raw["prefix_cache_hit_rate"]:
            if raw["group"] != "serving":
                raise ValidationDataError(f"{where}: prefix_cache_hit_rate is for serving rows")
            try:
                hit = float(raw["prefix_cache_hit_rate"])
            except ValueError:
                hit = math.nan
            if not 0.0 <= hit < 1.0:
                raise ValidationDataError(f"{where}: prefix_cache_hit_rate must be a share from 0 to below 1")
        if raw["output_tokens_max"]:
            if arrival_kind(raw["arrival"]) != "burst" and not raw["requests"]:
                raise ValidationDataError(
                    f"{where}: output_tokens_max is for the varying answers of a burst or of a closed loop "
                    "of stated requests only"
                )
            if not raw["output_tokens"] or float(raw["output_tokens_max"]) < float(raw["output_tokens"]):
                raise ValidationDataError(
                    f"{where}: output_tokens_max must be at least output_tokens (their mean)"
                )
        if raw["architecture"]:
            try:
                arch = json.loads(raw["architecture"])
            except json.JSONDecodeError:
                raise ValidationDataError(f"{where}: architecture must be a JSON object") from None
            if not isinstance(arch, dict):
                raise ValidationDataError(f"{where}: architecture must be a JSON object")
        if scored:
            if not raw["gpu"]:
                raise ValidationDataError(f"{where}: a scored row needs the gpu (catalog id)")
            if not (raw["model"] or raw["architecture"] or raw["params_b"]):
                raise ValidationDataError(f"{where}: a scored row needs model, architecture or params_b")
            if raw["quantity"] == "train_gpu_hours" and not raw["tokens_trained"]:
                raise ValidationDataError(f"{where}: train_gpu_hours needs tokens_trained")
        core = set(RECORD_COLUMNS)
        facts = tuple((k, v) for k, v in raw.items() if k not in core)
        rows.append(
            Row(
                rid,
                raw["source_id"],
                raw["locator"],
                raw["quote"],
                raw["date_read"],
                raw["group"],
                raw["quantity"],
                raw["unit"],
                value,
                raw["bound"],
                raw["basis"],
                scored,
                raw["why"],
                facts,
            )
        )
    rows = _apply_rescored(Path(data_dir) / "rescored.csv", rows)
    return _apply_serving_load(Path(data_dir) / "serving_load.csv", rows)


def _apply_serving_load(path: Path, rows: list[Row]) -> list[Row]:
    """``rows`` with the loads of ``serving_load.csv`` (if present) among their facts, checked."""
    if not path.exists():
        return rows
    by_id = {r.id: n for n, r in enumerate(rows)}
    for raw in _read(path, SERVING_LOAD_COLUMNS):
        where = f"{path.name} row {raw['id'] or '?'}"
        n = by_id.get(raw["id"])
        if n is None:
            raise ValidationDataError(f"{where}: id is not in measurements.csv")
        if rows[n].group != "serving":
            raise ValidationDataError(f"{where}: load is for serving rows")
        if raw["load"] not in LOADS:
            raise ValidationDataError(f"{where}: load must be stated or unstated")
        if not raw["why"]:
            raise ValidationDataError(f"{where}: why is empty (every decision says why)")
        facts = tuple(kv for kv in rows[n].facts if kv[0] not in ("load", "load_why"))
        rows[n] = replace(rows[n], facts=facts + (("load", raw["load"]), ("load_why", raw["why"])))
    return rows


def _apply_rescored(path: Path, rows: list[Row]) -> list[Row]:
    """``rows`` with the decisions of ``rescored.csv`` (if present) applied, checked."""
    if not path.exists():
        return rows
    by_id = {r.id: n for n, r in enumerate(rows)}
    for raw in _read(path, RESCORED_COLUMNS):
        where = f"{path.name} row {raw['id'] or '?'}"
        if raw["id"] not in by_id:
            raise ValidationDataError(f"{where}: id is not in measurements.csv")
        if raw["scored"] not in ("yes", "no"):
            raise ValidationDataError(f"{where}: scored must be yes or no")
        if not raw["why"]:
            raise ValidationDataError(f"{where}: why is empty (every decision says why)")
        _check_date(raw["date_decided"], f"{where}: date_decided")
        n = by_id[raw["id"]]
        rows[n] = replace(rows[n], scored=raw["scored"] == "yes", why=raw["why"])
    return rows


# --- rows as scenarios -------------------------------------------------------------------------------
def arrival_kind(arrival: str) -> str:
    """``closed_loop``, ``lockstep``, ``burst`` or ``paced`` (a row's ``arrival`` without a paced
    client's interval)."""
    return arrival.split(":", 1)[0]


def disaggregated_instances(text: str) -> tuple[int, int] | None:
    """(prefill, decode) instances of a row's ``disaggregated`` cell (``1p3d``), or None."""
    m = re.fullmatch(r"([1-9][0-9]*)p([1-9][0-9]*)d", text)
    return None if m is None else (int(m.group(1)), int(m.group(2)))


def paced_interval(arrival: str) -> float | None:
    """The seconds between a paced client's requests (``paced:0.5``), or None for any other arrival."""
    kind, _, value = arrival.partition(":")
    if kind != "paced":
        return None
    try:
        interval = float(value)
    except ValueError:
        return None
    return interval if math.isfinite(interval) and interval > 0 else None


def _known(cls: type) -> set[str]:
    return {f.name for f in fields(cls) if f.init and f.name != "ignored_keys"}


def _yes(text: str) -> bool:
    return text == "yes"


def scenario_dict(
    row: Row, weight_choices: tuple[str, ...] | None = None
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """(scenario in the JSON keys of ``docs/scenario.md``, setup facts the scenario could not carry).

    ``weight_choices`` are the weight types the scenario accepts (default: the core's list); a
    type it does not know (a GGUF type, say) falls back to the nearest known one, and says so.
    """
    from ..core.specs.quant_types import KV_CACHE_DTYPES
    from ..core.specs.workload import KV_PRECISIONS, WEIGHT_PRECISIONS

    f = dict(row.facts)
    choices = weight_choices or WEIGHT_PRECISIONS
    omitted: list[str] = []
    model: dict[str, Any] = {}
    if f["model"]:
        model["preset"] = f["model"]
    elif f["architecture"]:
        arch = json.loads(f["architecture"])
        dropped = [k for k in arch if k not in ARCHITECTURE_KEYS]
        omitted += [f"model.architecture.{k}" for k in dropped]
        model["architecture"] = {k: v for k, v in arch.items() if k in ARCHITECTURE_KEYS}
    elif f["params_b"]:
        model["parameters"] = float(f["params_b"]) * 1e9
    if f["model_name"]:
        model["name"] = f["model_name"]

    workload: dict[str, Any] = {}
    if f["kind"]:
        workload["kind"] = f["kind"]
    if f["engine"]:
        engine = f["engine"]
        stand_in = (
            fallback_engine(engine, f["kind"] or "inference") if engine not in engine_choices() else None
        )
        if stand_in:
            omitted.append(f"workload.engine={engine} (estimated as {stand_in})")
            engine = stand_in
        workload["engine"] = engine
    weights = f["weights"]
    if weights:
        if weights not in choices and weights in WEIGHT_FALLBACK:
            omitted.append(f"workload.weights={weights} (estimated as {WEIGHT_FALLBACK[weights]})")
            weights = WEIGHT_FALLBACK[weights]
        workload["weights"] = weights
    text_keys = {
        "quantization": "quantization",
        "kv_cache": "kv_cache",
        "optimizer": "optimizer",
        "optimizer_state_dtype": "optimizer_state_dtype",
    }
    for col, key in text_keys.items():
        if f[col]:
            workload[key] = f[col]
    int_keys = {
        "micro_batch": "batch_size",
        "seq_len": "seq_len",
        "prompt_tokens": "prompt_tokens",
        "output_tokens": "output_tokens",
        "lora_rank": "lora_rank",
    }
    for col, key in int_keys.items():
        if f[col]:
            workload[key] = int(float(f[col]))
    bool_keys = {
        "master_weights": "master_weights",
        "grad_ckpt": "gradient_checkpointing",
        "flash_attention": "flash_attention",
        "lora_dropout": "lora_dropout",
        "double_quant": "double_quant",
        "cuda_graphs": "cuda_graphs",
        "kbit_preparation": "kbit_preparation",
    }
    for col, key in bool_keys.items():
        if f[col]:
            workload[key] = _yes(f[col])
    if f["prompt_logits"]:
        workload["prompt_logits"] = f["prompt_logits"]
    if f["lora_targets"]:
        targets = f["lora_targets"]
        workload["lora_targets"] = targets if targets == "all_linear" else targets.split(";")
    if f["tokens_trained"] and f["kind"] in ("pretrain", "full_finetune", "lora", "qlora"):
        workload["train_tokens"] = float(f["tokens_trained"])
    training = f["kind"] in ("pretrain", "full_finetune", "lora", "qlora")
    layout = _layout_facts(f) if training else {}
    if layout and f["global_batch"]:
        workload["global_batch_size"] = int(float(f["global_batch"]))
    if training and f["gemm_precision"] in ("fp8", "mxfp8") and f["weights"] != f["gemm_precision"]:
        workload["compute_precision"] = f["gemm_precision"]
    offload = _offload_facts(f["offload"]) if training else {}
    if offload:
        workload["offload"] = offload
    split = _split_facts(f["offload"]) if f["kind"] == "inference" else {}
    if "gpu_layers" in split:
        workload["gpu_layers"] = int(split["gpu_layers"])
    if f["kv_cache"] in KV_CACHE_DTYPES and f["kv_cache"] not in KV_PRECISIONS:
        workload["kv_cache_dtype"] = workload.pop("kv_cache")  # a llama.cpp cache type (-ctk/-ctv)
    if training and f["recompute"]:
        workload["activation_recompute"] = stack_recompute(f["engine"], f["recompute"])
    if f["speculative"]:
        workload["speculative"] = json.loads(f["speculative"])
    known = _known(Workload)
    for key in list(workload):
        if key not in known:
            omitted.append(f"workload.{key}={_show(workload.pop(key))}")

    hardware: dict[str, Any] = {}
    if f["gpu"]:
        hardware["gpu"] = f["gpu"]
    hardware["gpu_count"] = int(float(f["gpu_count"])) if f["gpu_count"] else 1
    if f["parallelism"]:
        hardware["parallelism"] = f["parallelism"]
    elif hardware["gpu_count"] > 1:
        omitted.append("hardware.parallelism (not stated; the estimate tries each applicable one)")
    known_hw = _known(Hardware)
    for key in list(hardware):
        if key not in known_hw:
            omitted.append(f"hardware.{key}")
            hardware.pop(key)
    for key, value in layout.items():
        if key in known_hw:
            hardware[key] = value
    sp = _sequence_parallel(f) if training else None
    if sp is not None:
        hardware["sequence_parallel"] = sp
    if f.get("dp_shard"):
        hardware["data_parallel_shard"] = int(float(f["dp_shard"]))
    if "host_memory_bandwidth_gb_s" in split:
        hardware["host_memory_bandwidth_gb_s"] = split["host_memory_bandwidth_gb_s"]
    if not layout:
        for col in ("tp", "pp", "dp", "cp"):
            if f[col] and not (col == "tp" and f["parallelism"] == "tensor" and f[col] == f["gpu_count"]):
                if not (f[col] == "1" or (col == "dp" and f[col] == f["gpu_count"])):
                    omitted.append(f"layout {col}={f[col]}")
    if f["offload"] and not offload and not split:
        omitted.append(f"offload={f['offload']}")
    if f["gemm_precision"] and "compute_precision" not in workload:
        omitted.append(f"gemm_precision={f['gemm_precision']}")
    if f["quant_group_size"]:
        omitted.append(f"quant_group_size={f['quant_group_size']}")
    if f["vp"] and "virtual_pipeline_stages" not in hardware and f["vp"] != "1":
        omitted.append(f"layout vp={f['vp']}")
    if f.get("ep") and "expert_parallel" not in hardware and f["ep"] != "1":
        omitted.append(f"layout ep={f['ep']}")
    if f.get("etp") and "expert_tensor_parallel" not in hardware:
        omitted.append(f"layout etp={f['etp']}")
    if f["recompute"] and "activation_recompute" not in workload:
        omitted.append(f"recompute={f['recompute']}")
    if f["global_batch"] and "global_batch_size" not in workload:
        omitted.append(f"global_batch={f['global_batch']}")

    scenario: dict[str, Any] = {
        "format": "gpuadvisor-scenario",
        "version": 1,
        "name": row.id,
        "model": model,
        "workload": workload,
        "hardware": hardware,
    }
    if f["cuda_context_gib"]:
        if "cuda_context_gib" in _known(RuntimeOverhead):
            scenario["overhead"] = {"cuda_context_gib": float(f["cuda_context_gib"])}
    return scenario, tuple(omitted)


def engine_choices() -> tuple[str, ...]:
    from ..core.specs.engines import RECORDS

    return tuple(RECORDS)


def scenario_engine(row: Row) -> str:
    """The engine profile the row's scenario runs with (after any fallback; default by kind)."""
    from ..core.specs.engines import default_engine

    engine = row.engine
    kind = row.fact("kind") or "inference"
    if engine and engine not in engine_choices():
        engine = fallback_engine(engine, kind) or engine
    if engine:
        return engine
    return default_engine(kind)


def _layout_facts(f: dict[str, str]) -> dict[str, int]:
    """The row's layout as hardware keys, when it is more than the one-word parallelism says and
    accounts for every GPU of the row (TP x PP x CP x DP = gpu_count); else {}."""
    n = int(float(f["gpu_count"])) if f["gpu_count"] else 1
    axes = {k: int(float(f[k])) if f[k] else 1 for k in ("tp", "pp", "cp", "dp")}
    if not any(f.get(k) for k in ("tp", "pp", "cp", "ep")) or n <= 1:
        return {}
    if axes["tp"] * axes["pp"] * axes["cp"] * axes["dp"] != n:
        return {}  # the row models a part of the job (one tensor-parallel group, say)
    par = f["parallelism"]
    if (par == "tensor" and axes["tp"] == n) or (par == "pipeline" and axes["pp"] == n):
        return {}
    out = {}
    for key, name in (("tp", "tensor_parallel"), ("pp", "pipeline_parallel"), ("cp", "context_parallel")):
        if axes[key] > 1:
            out[name] = axes[key]
    if f["vp"] and int(float(f["vp"])) > 1 and axes["pp"] > 1:
        out["virtual_pipeline_stages"] = int(float(f["vp"]))
    if f.get("ep") and int(float(f["ep"])) > 1:
        out["expert_parallel"] = int(float(f["ep"]))
        if f.get("etp"):  # ETP 1 beside TP 2 says something too: the default is the dense layers' TP
            out["expert_tensor_parallel"] = int(float(f["etp"]))
    return out


def _sequence_parallel(f: dict[str, str]) -> bool | None:
    """A training row's sequence parallelism: its ``sp`` cell, else yes for a stack whose tensor
    parallelism always splits the sequence (:data:`SEQUENCE_PARALLEL_STACKS`) when the row runs TP;
    None leaves it to the core's default."""
    if f.get("sp"):
        return f["sp"] == "yes"
    tp = int(float(f["tp"])) if f["tp"] else 1
    if f["engine"] in SEQUENCE_PARALLEL_STACKS and (tp > 1 or f["parallelism"] == "tensor"):
        return True
    return None


def _split_facts(text: str) -> dict[str, float]:
    """An inference row's split between GPU and host from its offload fact:
    ``gpu_layers=44;host_memory_bandwidth_gb_s=102`` (llama.cpp ``-ngl`` and the host memory's
    bandwidth where the source states it); {} when it says neither."""
    out: dict[str, float] = {}
    for part in text.split(";"):
        key, sep, value = part.partition("=")
        if sep and key.strip() in ("gpu_layers", "host_memory_bandwidth_gb_s"):
            out[key.strip()] = float(value)
    return out


def _offload_facts(text: str) -> dict[str, str]:
    """``workload.offload`` from the row's offload fact: ``optimizer=cpu;parameters=nvme``, or the
    prose of older rows ("parameters and optimizer to CPU"); {} when nothing of the kind moves."""
    t = text.strip().lower()
    if not t:
        return {}
    if "=" in t:
        pairs = dict(part.split("=", 1) for part in t.split(";") if "=" in part)
        return {k.strip(): v.strip() for k, v in pairs.items() if k.strip() in ("optimizer", "parameters")}
    where = "nvme" if "nvme" in t else "cpu" if "to cpu" in t else ""
    if not where:
        return {}
    out = {}
    if "optimizer" in t:
        out["optimizer"] = where
    if "parameters" in t:
        out["parameters"] = where
    return out


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
