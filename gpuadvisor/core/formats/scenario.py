"""The scenario file: a versioned JSON document that the CLI, the window and the report share.

See ``docs/scenario.md`` for the format. Loading never trusts the file: every value is
checked and an error names its dotted path (``workload.batch_size``). Keys this version
does not know are kept out of the scenario and listed in ``Scenario.warnings``, so files
written by a newer version still open.

The optional ``measurements`` list holds the runs measured for this scenario
(:class:`~gpuadvisor.core.formats.measurements.Measurement`, each with a snapshot of the scenario it
ran, see ``docs/measurements.md``); each entry is checked as strictly as the measurements file,
and an error names it (``measurements[2].tokens_per_s``).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from ..errors import InputError, ScenarioError
from ..specs.workload import Hardware, RuntimeOverhead, Workload
from .measurements import Measurement

FORMAT_NAME = "gpuadvisor-scenario"
FORMAT_VERSION = 1
ARCHITECTURE_KEYS = (
    "num_layers",
    "hidden_size",
    "num_attention_heads",
    "num_key_value_heads",
    "intermediate_size",
    "vocab_size",
    "gated_mlp",
    "tied_embeddings",
    "num_experts",
    "experts_per_token",
    "head_dim",
    "moe_intermediate_size",
    "max_context",
    "sliding_window",
    "sliding_window_layer_fraction",
    "kind",
    "position_embedding",
    "norm",
    "norms_per_layer",
    "attention_bias",
    "attention_out_bias",
    "mlp_bias",
    "extra_params",
)
PRICE_CHOICES = ("low", "expected", "high")


@dataclass(frozen=True, slots=True)
class ModelSource:
    """Where the model comes from: exactly one of a preset id, an architecture, a Hugging Face
    config path, or a bare parameter count."""

    preset: str | None = None
    architecture: tuple[tuple[str, Any], ...] | None = None
    hf_config: str | None = None
    parameters: float | None = None
    name: str | None = None
    gguf: str | None = None  # a .gguf file (the first shard of a split set)

    def __post_init__(self) -> None:
        for key in ("preset", "hf_config", "name", "gguf"):
            value = getattr(self, key)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ScenarioError(f"model.{key}", "must be non-empty text", value)
        given = [
            k
            for k in ("preset", "architecture", "hf_config", "gguf", "parameters")
            if getattr(self, k) is not None
        ]
        if len(given) != 1:
            raise ScenarioError(
                "model",
                "give exactly one of preset, architecture, hf_config, gguf or parameters"
                + (f" (got {', '.join(given)})" if given else ""),
            )
        if self.parameters is not None and (
            isinstance(self.parameters, bool)
            or not isinstance(self.parameters, (int, float))
            or not math.isfinite(self.parameters)
            or self.parameters < 1e6
        ):
            raise ScenarioError(
                "model.parameters", "must be a parameter count >= 1e6 (e.g. 7e9)", self.parameters
            )

    def architecture_dict(self) -> dict[str, Any]:
        return dict(self.architecture or ())


@dataclass(frozen=True, slots=True)
class Budget:
    """Money and time limits, and the buy-versus-rent settings (see ``docs/scenario.md``)."""

    max_usd_per_hour: float | None = None
    max_total_usd: float | None = None
    deadline_hours: float | None = None
    price: str | float = "expected"
    purchase: str = "new"
    ownership_months: float = 36.0
    utilization: float = 0.6
    electricity_usd_per_kwh: float = 0.15
    pue: float = 1.3

    def __post_init__(self) -> None:
        for name in ("max_usd_per_hour", "max_total_usd", "deadline_hours"):
            value = getattr(self, name)
            if value is not None:
                _require_number(f"budget.{name}", value, positive=True)
        if isinstance(self.price, str):
            if self.price not in PRICE_CHOICES:
                raise ScenarioError(
                    "budget.price", "must be low, expected, high or a price in USD per GPU-hour", self.price
                )
        else:
            _require_number("budget.price", self.price, positive=True)
        if self.purchase not in ("new", "used"):
            raise ScenarioError("budget.purchase", "must be new or used", self.purchase)
        _require_number("budget.ownership_months", self.ownership_months, positive=True, maximum=240)
        _require_number("budget.utilization", self.utilization, positive=True, maximum=1.0)
        _require_number(
            "budget.electricity_usd_per_kwh", self.electricity_usd_per_kwh, positive=False, maximum=10
        )
        _require_number("budget.pue", self.pue, positive=True, maximum=5)
        if self.pue < 1.0:
            raise ScenarioError("budget.pue", "must be at least 1.0 (facility power / IT power)", self.pue)


@dataclass(frozen=True, slots=True)
class Efficiency:
    """User overrides of the calibrated efficiency factors (None keeps the engine profile's)."""

    bandwidth_efficiency: float | None = None
    mfu: float | None = None
    prefill_mfu: float | None = None

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None:
                _require_number(f"efficiency.{f.name}", value, positive=True, maximum=1.0)


@dataclass(frozen=True, slots=True)
class Scenario:
    """Everything the core needs to answer: the model, the workload, the GPUs, the budget."""

    model: ModelSource
    workload: Workload = field(default_factory=Workload)
    hardware: Hardware = field(default_factory=Hardware)
    budget: Budget = field(default_factory=Budget)
    overhead: RuntimeOverhead = field(default_factory=RuntimeOverhead)
    efficiency: Efficiency = field(default_factory=Efficiency)
    name: str = "Untitled scenario"
    notes: str = ""
    measurements: tuple[Measurement, ...] = ()  # runs measured for this scenario
    warnings: tuple[str, ...] = field(default=(), compare=False)
    base_dir: str | None = field(default=None, compare=False)


def _require_number(name: str, value: object, positive: bool = True, maximum: float | None = None) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value < 0
        or (positive and value == 0)
    ):
        raise ScenarioError(name, "must be a number " + ("> 0" if positive else ">= 0"), value)
    if maximum is not None and value > maximum:
        raise ScenarioError(name, f"must be at most {maximum:g}", value)


def _take(
    section: dict[str, Any],
    cls: type,
    prefix: str,
    unknown: list[str],
    rename: dict[str, str] | None = None,
    tuple_fields: tuple[str, ...] = (),
) -> Any:
    names = {f.name for f in fields(cls) if f.init and not f.name.startswith("_")}
    names.discard("ignored_keys")
    kwargs: dict[str, Any] = {}
    for key, value in section.items():
        target = (rename or {}).get(key, key)
        if target in names:
            if target in tuple_fields and isinstance(value, list):
                value = tuple(value)
            kwargs[target] = value
        else:
            unknown.append(f"{prefix}.{key}")
    try:
        return cls(**kwargs)
    except ScenarioError:
        raise
    except InputError as exc:
        raise ScenarioError(exc.field, exc.reason, exc.value) from None
    except TypeError as exc:  # a wrong type deep inside a comparison
        raise ScenarioError(prefix, f"has a value of the wrong type ({exc})") from None


def _section(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key, {})
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ScenarioError(key, "must be a JSON object", type(value).__name__)
    return value


def scenario_from_dict(data: Any, base_dir: str | None = None) -> Scenario:
    """Build a :class:`Scenario` from parsed JSON, validating every value."""
    if not isinstance(data, dict):
        raise ScenarioError("scenario", "must be a JSON object at the top level", type(data).__name__)
    unknown: list[str] = []
    version = data.get("version", FORMAT_VERSION)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ScenarioError("version", "must be a whole number >= 1", version)
    if version > FORMAT_VERSION:
        unknown.append(
            f"version {version} is newer than this gpuadvisor understands ({FORMAT_VERSION}); "
            "values it does not know are ignored"
        )
    fmt = data.get("format", FORMAT_NAME)
    if fmt != FORMAT_NAME:
        raise ScenarioError("format", f"is not a gpuadvisor scenario (expected '{FORMAT_NAME}')", fmt)
    for key in data:
        if key not in (
            "format",
            "version",
            "name",
            "notes",
            "model",
            "workload",
            "hardware",
            "budget",
            "overhead",
            "efficiency",
            "measurements",
        ):
            unknown.append(key)

    model_data = _section(data, "model")
    if "architecture" in model_data:
        arch = model_data["architecture"]
        if not isinstance(arch, dict):
            raise ScenarioError("model.architecture", "must be a JSON object", type(arch).__name__)
        for key in arch:
            if key not in ARCHITECTURE_KEYS:
                unknown.append(f"model.architecture.{key}")
        model_data = dict(model_data)
        model_data["architecture"] = tuple((k, v) for k, v in arch.items() if k in ARCHITECTURE_KEYS)
    model = _take(model_data, ModelSource, "model", unknown)
    workload = _take(
        _section(data, "workload"), Workload, "workload", unknown, tuple_fields=("lora_targets",)
    )
    hardware = _take(_section(data, "hardware"), Hardware, "hardware", unknown)
    budget = _take(_section(data, "budget"), Budget, "budget", unknown)
    overhead = _take(_section(data, "overhead"), RuntimeOverhead, "overhead", unknown)
    efficiency = _take(_section(data, "efficiency"), Efficiency, "efficiency", unknown)
    name = data.get("name", "Untitled scenario")
    if not isinstance(name, str):
        raise ScenarioError("name", "must be text", name)
    notes = data.get("notes", "")
    if not isinstance(notes, str):
        raise ScenarioError("notes", "must be text", notes)
    measurements = _measurements(data.get("measurements"))
    warnings = tuple(f"ignored unknown key: {k}" if " " not in k else k for k in unknown)
    return Scenario(
        model=model,
        workload=workload,
        hardware=hardware,
        budget=budget,
        overhead=overhead,
        efficiency=efficiency,
        name=name,
        notes=notes,
        measurements=measurements,
        warnings=warnings,
        base_dir=base_dir,
    )


def _measurements(items: Any) -> tuple[Measurement, ...]:
    """The ``measurements`` list, every entry validated; errors read ``measurements[2].tokens_per_s``."""
    if items is None:
        return ()
    if not isinstance(items, list):
        raise ScenarioError("measurements", "must be a list of measured runs", type(items).__name__)
    out: list[Measurement] = []
    seen: dict[str, int] = {}
    for i, item in enumerate(items):
        try:
            m = Measurement.from_dict(item, where=f"measurements[{i}]")
        except InputError as exc:
            raise ScenarioError(exc.field, exc.reason, exc.value) from None
        if m.id in seen:
            raise ScenarioError(f"measurements[{i}].id", f"duplicates measurements[{seen[m.id]}]", m.id)
        seen[m.id] = i
        out.append(m)
    return tuple(out)


def load_scenario(path: str | os.PathLike[str]) -> Scenario:
    """Read and validate a scenario file; errors name the file's field, never a traceback."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError(p.name, "file not found") from None
    except UnicodeDecodeError:
        raise ScenarioError(p.name, "is not UTF-8 text (is it a scenario file?)") from None
    except OSError as exc:
        raise ScenarioError(p.name, f"cannot be read ({exc.strerror})") from None
    return loads_scenario(text, origin=p.name, base_dir=str(p.resolve().parent))


def loads_scenario(text: str, origin: str = "scenario", base_dir: str | None = None) -> Scenario:
    """Parse scenario JSON text."""
    if not text.strip():
        raise ScenarioError(origin, "is empty")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ScenarioError(
            origin, f"is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        ) from None
    return scenario_from_dict(data, base_dir=base_dir)


def scenario_to_dict(scenario: Scenario) -> dict[str, Any]:
    """The JSON-ready form of a scenario (defaults included, so the file documents itself)."""
    model: dict[str, Any] = {}
    src = scenario.model
    if src.preset is not None:
        model["preset"] = src.preset
    elif src.architecture is not None:
        model["architecture"] = src.architecture_dict()
    elif src.hf_config is not None:
        model["hf_config"] = src.hf_config
    elif src.gguf is not None:
        model["gguf"] = src.gguf
    else:
        model["parameters"] = src.parameters
    if src.name:
        model["name"] = src.name
    workload = asdict(scenario.workload)
    workload.pop("ignored_keys", None)
    if scenario.workload.serving is not None:  # an unstated per-request time stays unstated
        workload["serving"] = scenario.workload.serving.to_dict()
    if scenario.workload.speculative is None:  # left out, so files without it stay as they were
        workload.pop("speculative", None)
    else:
        workload["speculative"] = scenario.workload.speculative.to_dict()
    if isinstance(workload.get("lora_targets"), tuple):
        workload["lora_targets"] = list(workload["lora_targets"])
    out = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "name": scenario.name,
        "notes": scenario.notes,
        "model": model,
        "workload": workload,
        "hardware": asdict(scenario.hardware),
        "budget": asdict(scenario.budget),
        "overhead": asdict(scenario.overhead),
        "efficiency": asdict(scenario.efficiency),
    }
    if scenario.measurements:  # left out when empty, so files without measurements stay as they were
        out["measurements"] = [m.to_dict() for m in scenario.measurements]
    return out


def scenario_snapshot(scenario: Scenario) -> dict[str, Any]:
    """The scenario as a measurement records it: :func:`scenario_to_dict` without the measurements."""
    if scenario.measurements:
        scenario = replace(scenario, measurements=())
    return scenario_to_dict(scenario)


def dumps_scenario(scenario: Scenario) -> str:
    return json.dumps(scenario_to_dict(scenario), indent=2, ensure_ascii=False) + "\n"


def save_scenario(scenario: Scenario, path: str | os.PathLike[str]) -> None:
    """Write atomically: a temporary file in the same folder, flushed, then renamed over the target."""
    p = Path(path)
    text = dumps_scenario(scenario)
    tmp = p.with_name(f".{p.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    except OSError as exc:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        raise ScenarioError(p.name, f"cannot be written ({exc.strerror})") from None


def default_scenario() -> Scenario:
    """The scenario the app opens with: LoRA fine-tuning of Llama 3.1 8B on the data-centre GPUs
    (the Workload page's GPU choice switches to laptops and desktops or the whole catalog)."""
    return Scenario(
        name="LoRA fine-tune of Llama 3.1 8B",
        model=ModelSource(preset="llama-3.1-8b"),
        workload=Workload(
            kind="lora",
            weights="bf16",
            batch_size=4,
            seq_len=2048,
            lora_rank=16,
            gradient_checkpointing=True,
            train_tokens=100e6,
        ),
        hardware=Hardware(segment="data_centre"),
    )
