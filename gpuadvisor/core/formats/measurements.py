"""Measured runs: what the user saw, to compare with the estimate.

A :class:`Measurement` records one run: the GPU, engine, workload, and at least one of the
peak memory (GiB) and the throughput (tokens/s, or seconds per step with the tokens per step).
It carries a snapshot of the scenario it ran (the ``scenario_to_dict`` form), so the estimate
can be recomputed for it later and :mod:`gpuadvisor.core.estimation.calibration` can fit efficiency
factors. Throughput is the aggregate over all GPUs of the run, in the estimate's terms:
generated tokens/s for inference, trained tokens/s for training::

    tokens_per_s = tokens_per_step / seconds_per_step
    tokens_per_step (training, when not given) = batch_size x seq_len x num_gpus

Memory sources differ: ``torch.cuda.max_memory_allocated`` counts live tensors only (the
estimate's tensor total); ``nvidia-smi`` and a typed figure are what the card held (the
estimate's device total: tensors plus CUDA context and allocator fragmentation).

The ``nvidia-smi`` logs themselves are read by :mod:`gpuadvisor.core.formats.smi_log`.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from datetime import date
from typing import Any

from ..errors import InputError, keys_phrase
from ..files import MAX_NAME_CHARS, MAX_TEXT_CHARS, check_text, parse_json
from ..specs.workload import TRAINING_KINDS, WORKLOAD_KINDS

MEASUREMENTS_FORMAT = "gpuadvisor-measurements"
MEASUREMENTS_SCHEMA_VERSION = 1
MEMORY_SOURCES = ("typed", "torch.cuda.max_memory_allocated", "nvidia-smi log")
#: Sources whose memory figure is the whole card (context and fragmentation included).
DEVICE_MEMORY_SOURCES = ("typed", "nvidia-smi log")


#: Largest whole numbers a measurement may hold, and why (a larger one is a typing slip).
WHOLE_LIMITS: dict[str, tuple[int, str]] = {
    "num_gpus": (100_000, "the largest training clusters have about 100,000 GPUs"),
    "batch_size": (1_000_000, "as workload.batch_size"),
    "seq_len": (100_000_000, "as workload.seq_len"),
}


def _text(name: str, value: object, required: bool = True) -> None:
    if value is None and not required:
        return
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"measurement.{name}", "must be non-empty text", value)
    check_text(f"measurement.{name}", value, MAX_NAME_CHARS)


def _whole(name: str, value: object, optional: bool = False) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"measurement.{name}", "must be a whole number >= 1", value)
    limit, why = WHOLE_LIMITS[name]
    if value > limit:
        raise InputError(f"measurement.{name}", f"must be at most {limit:,} ({why})", value)


def _positive(name: str, value: object, maximum: float | None = None) -> None:
    if value is None:
        return
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise InputError(f"measurement.{name}", "must be a number > 0", value)
    if maximum is not None and value > maximum:
        raise InputError(f"measurement.{name}", f"must be at most {maximum:g}", value)


@dataclass(frozen=True)
class Measurement:
    """One measured run. Units are in the field names; see the module docstring."""

    id: str
    gpu_id: str
    kind: str  # workload kind: inference, lora, qlora, full_finetune, pretrain
    model: str  # preset id or the model's name
    engine: str | None = None
    num_gpus: int = 1
    batch_size: int = 1
    seq_len: int | None = None  # training sequence length, or the inference context
    peak_memory_gib: float | None = None  # per GPU
    tokens_per_s: float | None = None  # aggregate over all GPUs
    seconds_per_step: float | None = None
    tokens_per_step: float | None = None
    source: str = "typed"
    note: str = ""
    measured_on: str = ""  # ISO date
    scenario: dict[str, Any] | None = field(default=None, hash=False)  # scenario_to_dict snapshot

    def __post_init__(self) -> None:
        _text("id", self.id)
        _text("gpu_id", self.gpu_id)
        if self.kind not in WORKLOAD_KINDS:
            raise InputError("measurement.kind", f"must be one of {', '.join(WORKLOAD_KINDS)}", self.kind)
        _text("model", self.model)
        _text("engine", self.engine, required=False)
        _whole("num_gpus", self.num_gpus)
        _whole("batch_size", self.batch_size)
        _whole("seq_len", self.seq_len, optional=True)
        _positive("peak_memory_gib", self.peak_memory_gib, maximum=4096)
        _positive("tokens_per_s", self.tokens_per_s, maximum=1e12)
        _positive("seconds_per_step", self.seconds_per_step, maximum=1e7)
        _positive("tokens_per_step", self.tokens_per_step, maximum=1e12)
        if self.source not in MEMORY_SOURCES:
            raise InputError("measurement.source", f"must be one of {', '.join(MEMORY_SOURCES)}", self.source)
        if not isinstance(self.note, str):
            raise InputError("measurement.note", "must be text", self.note)
        check_text("measurement.note", self.note, MAX_TEXT_CHARS)
        if not isinstance(self.measured_on, str):
            raise InputError(
                "measurement.measured_on", "must be an ISO date (YYYY-MM-DD) or empty", self.measured_on
            )
        if self.measured_on:
            try:
                date.fromisoformat(self.measured_on)
            except ValueError:
                raise InputError(
                    "measurement.measured_on", "must be an ISO date (YYYY-MM-DD)", self.measured_on
                ) from None
        if self.peak_memory_gib is None and self.tokens_per_s is None and self.seconds_per_step is None:
            raise InputError(
                "measurement", "give at least one of peak_memory_gib, tokens_per_s or seconds_per_step"
            )
        if (
            self.seconds_per_step is not None
            and self.tokens_per_step is None
            and (self.kind not in TRAINING_KINDS or self.seq_len is None)
        ):
            raise InputError(
                "measurement.tokens_per_step",
                "is needed to turn seconds_per_step into tokens/s (for training, seq_len also does)",
            )
        if self.scenario is not None:
            if not isinstance(self.scenario, dict):
                raise InputError(
                    "measurement.scenario",
                    "must be a scenario object (scenario_to_dict form)",
                    type(self.scenario).__name__,
                )
            # A private deep copy: the caller's dict can change without changing the measurement.
            try:
                copy = json.loads(json.dumps(self.scenario, allow_nan=False))
            except (TypeError, ValueError) as exc:
                raise InputError("measurement.scenario", f"must hold JSON values only ({exc})") from None
            object.__setattr__(self, "scenario", copy)

    @property
    def throughput_tokens_per_s(self) -> float | None:
        """Measured tokens/s: as given, or tokens per step over seconds per step."""
        if self.tokens_per_s is not None:
            return self.tokens_per_s
        if self.seconds_per_step is None:
            return None
        per_step = self.tokens_per_step
        if per_step is None:
            assert self.seq_len is not None  # checked in __post_init__
            per_step = self.batch_size * self.seq_len * self.num_gpus
        return per_step / self.seconds_per_step

    @property
    def memory_is_device_total(self) -> bool:
        """Whether ``peak_memory_gib`` is what the card held (not only the tensors)."""
        return self.source in DEVICE_MEMORY_SOURCES

    @property
    def scenario_fingerprint(self) -> str | None:
        """16 hex digits identifying the scenario snapshot (its name and notes left out)."""
        if self.scenario is None:
            return None
        core = {k: v for k, v in self.scenario.items() if k not in ("name", "notes")}
        text = json.dumps(core, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form (see :func:`measurements_to_json`)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["scenario_fingerprint"] = self.scenario_fingerprint
        return out

    @classmethod
    def from_dict(cls, data: Any, where: str = "measurement") -> Measurement:
        """Build and validate a measurement; errors name ``where`` and the key."""
        if not isinstance(data, dict):
            raise InputError(where, "must be a JSON object", type(data).__name__)
        known = {f.name for f in fields(cls)}
        unknown = sorted(k for k in data if k not in known and k != "scenario_fingerprint")
        if unknown:
            raise InputError(
                where, f"has unknown key(s) {keys_phrase(unknown)}; known keys: {', '.join(sorted(known))}"
            )
        missing = [k for k in ("id", "gpu_id", "kind", "model") if k not in data]
        if missing:
            raise InputError(where, f"is missing {', '.join(missing)}")
        kwargs = {k: v for k, v in data.items() if k in known}
        try:
            return cls(**kwargs)
        except InputError as exc:
            name = exc.field.removeprefix("measurement").lstrip(".")
            raise InputError(f"{where}.{name}" if name else where, exc.reason, exc.value) from None


def next_measurement_id(measurements: Sequence[Measurement]) -> str:
    """``m<N>`` with N one above the highest ``m<number>`` id in use."""
    numbers = [int(m.id[1:]) for m in measurements if re.fullmatch(r"m\d+", m.id)]
    return f"m{max(numbers, default=0) + 1}"


def measurements_to_json(measurements: Sequence[Measurement]) -> str:
    """A versioned JSON document holding the measurements."""
    doc = {
        "format": MEASUREMENTS_FORMAT,
        "schema_version": MEASUREMENTS_SCHEMA_VERSION,
        "measurements": [m.to_dict() for m in measurements],
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def measurements_from_json(text: str, origin: str = "measurements file") -> list[Measurement]:
    """Parse :func:`measurements_to_json` output; anything malformed raises :class:`InputError`
    whose field reads ``<origin>: measurements[3].batch_size``."""
    doc = parse_json(text, origin)
    if not isinstance(doc, dict):
        raise InputError(origin, "must be a JSON object at the top level", type(doc).__name__)
    if doc.get("format") != MEASUREMENTS_FORMAT:
        raise InputError(
            f"{origin}: format",
            f"is not a gpuadvisor measurements file (expected '{MEASUREMENTS_FORMAT}')",
            doc.get("format"),
        )
    version = doc.get("schema_version")
    if version != MEASUREMENTS_SCHEMA_VERSION or isinstance(version, bool):
        raise InputError(
            f"{origin}: schema_version",
            f"is not supported by this version of gpuadvisor (supported: {MEASUREMENTS_SCHEMA_VERSION})",
            version,
        )
    unknown = sorted(k for k in doc if k not in ("format", "schema_version", "measurements"))
    if unknown:
        raise InputError(origin, f"has unknown key(s) {keys_phrase(unknown)}")
    items = doc.get("measurements")
    if not isinstance(items, list):
        raise InputError(f"{origin}: measurements", "must be a list", type(items).__name__)
    out: list[Measurement] = []
    seen: dict[str, int] = {}
    for i, item in enumerate(items):
        m = Measurement.from_dict(item, where=f"{origin}: measurements[{i}]")
        if m.id in seen:
            raise InputError(
                f"{origin}: measurements[{i}].id", f"duplicates measurements[{seen[m.id]}]", m.id
            )
        seen[m.id] = i
        out.append(m)
    return out
