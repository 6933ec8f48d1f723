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
import os
import secrets
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from ..errors import MAX_NAMED_KEYS, InputError, ScenarioError, short_key
from ..files import (
    MAX_NAME_CHARS,
    MAX_TEXT_CHARS,
    FileKind,
    check_text,
    expand_user,
    output_target,
    parse_json,
    read_text,
)
from ..specs.fields import FIELD_RULES, read_number
from ..specs.workload import Hardware, RuntimeOverhead, Workload
from .measurements import Measurement
from .model_file import file_weights_or_none, gguf_path

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
#: The horizon a job without a deadline is planned within, days (a plan a person would run).
DEFAULT_HORIZON_DAYS = 90.0
#: ``budget.providers``: price every setup at the cheapest instance of any provider in the snapshot.
ANY_PROVIDER = "any"
#: Largest parameter count a scenario may give (``model.parameters``).
MAX_PARAMETERS = 1e14
#: Longest file path a scenario may give (Linux's PATH_MAX).
MAX_PATH_CHARS = 4096


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
        if self.parameters is not None:
            problem = FIELD_RULES["model.parameters"].problem(self.parameters)
            if problem is not None:
                raise ScenarioError("model.parameters", f"{problem} (e.g. 7e9 or 70B)", self.parameters)
        for key in ("preset", "name"):
            check_text(f"model.{key}", getattr(self, key), MAX_NAME_CHARS, ScenarioError)
        for key in ("hf_config", "gguf"):
            check_text(f"model.{key}", getattr(self, key), MAX_PATH_CHARS, ScenarioError)

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
    #: Without a deadline, the job is planned to finish within this many days.
    horizon_days: float = DEFAULT_HORIZON_DAYS
    #: Where to rent: None prices every GPU at the catalog's range; ``"any"`` at the cheapest cloud
    #: instance of any provider in the instance snapshot; a tuple of provider names at the cheapest
    #: instance of those providers.
    providers: str | tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        for name in ("max_usd_per_hour", "max_total_usd", "deadline_hours"):
            _require_field(f"budget.{name}", getattr(self, name))
        if isinstance(self.price, str):
            if self.price not in PRICE_CHOICES:
                raise ScenarioError(
                    "budget.price", "must be low, expected, high or a price in USD per GPU-hour", self.price
                )
        elif self.price is None:  # a null in the file: the price has no "not set"
            raise ScenarioError(
                "budget.price", "must be low, expected, high or a price in USD per GPU-hour", None
            )
        else:
            _require_field("budget.price", self.price)
        if self.purchase not in ("new", "used"):
            raise ScenarioError("budget.purchase", "must be new or used", self.purchase)
        for name in ("ownership_months", "utilization", "electricity_usd_per_kwh", "pue"):
            _require_field(f"budget.{name}", getattr(self, name))
        _require_field("budget.horizon_days", self.horizon_days)
        _check_providers(self.providers)

    @property
    def horizon_hours(self) -> float | None:
        """The planning horizon in hours when no deadline is set (None when there is a deadline)."""
        return None if self.deadline_hours is not None else self.horizon_days * 24.0


def _check_providers(value: object) -> None:
    """``budget.providers``: null, "any" or a non-empty list of provider names."""
    if value is None or value == ANY_PROVIDER:
        return
    if (
        not isinstance(value, tuple)
        or not value
        or not all(isinstance(v, str) and v.strip() and len(v) <= 64 for v in value)
    ):
        raise ScenarioError(
            "budget.providers",
            'must be null (the catalog\'s prices), "any" or a list of provider names such as ["lambda"]',
            value if not isinstance(value, tuple) else list(value),
        )


@dataclass(frozen=True, slots=True)
class Efficiency:
    """User overrides of the calibrated efficiency factors (None keeps the engine profile's)."""

    bandwidth_efficiency: float | None = None
    mfu: float | None = None
    prefill_mfu: float | None = None

    def __post_init__(self) -> None:
        for f in fields(self):
            _require_field(f"efficiency.{f.name}", getattr(self, f.name))


@dataclass(frozen=True, slots=True)
class Scenario:
    """Everything the core needs to answer: the model, the workload, the GPUs, the budget."""

    model: ModelSource
    workload: Workload = field(default_factory=Workload)
    hardware: Hardware = field(default_factory=Hardware)
    budget: Budget = field(default_factory=Budget)
    overhead: RuntimeOverhead = field(default_factory=RuntimeOverhead)
    efficiency: Efficiency = field(default_factory=Efficiency)
    #: The user's name for the scenario; "" (or the old default "Untitled scenario") takes a name
    #: built from the model and the workload (``presentation.wording.scenario_title``).
    name: str = ""
    notes: str = ""
    measurements: tuple[Measurement, ...] = ()  # runs measured for this scenario
    warnings: tuple[str, ...] = field(default=(), compare=False)
    base_dir: str | None = field(default=None, compare=False)


def _require_field(key: str, value: object) -> None:
    """Check a budget or efficiency value against its key's one rule (None: not set)."""
    if value is None:
        return
    problem = FIELD_RULES[key].problem(value)
    if problem is not None:
        raise ScenarioError(key, problem, value)


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
            try:  # numbers may be written as people type them: "8k", "$50", "2h", "24 GB"
                if not (f"{prefix}.{target}" == "budget.price" and value in PRICE_CHOICES):
                    value = read_number(f"{prefix}.{target}", value)
            except ValueError as exc:
                raise ScenarioError(f"{prefix}.{target}", str(exc)) from None
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
    unknown = _header(data)
    model = _take(_model_section(data, unknown), ModelSource, "model", unknown)
    workload_data = _section(data, "workload")
    if model.gguf is not None and "weights" not in workload_data:
        # A .gguf file holds its own weights: they are the workload's unless it states others.
        weights = file_weights_or_none(gguf_path(model.gguf, base_dir))
        if weights is not None:
            workload_data = {**workload_data, "weights": weights}
    workload = _take(workload_data, Workload, "workload", unknown, tuple_fields=("lora_targets",))
    hardware = _take(_section(data, "hardware"), Hardware, "hardware", unknown)
    budget = _take(_section(data, "budget"), Budget, "budget", unknown, tuple_fields=("providers",))
    overhead = _take(_section(data, "overhead"), RuntimeOverhead, "overhead", unknown)
    efficiency = _take(_section(data, "efficiency"), Efficiency, "efficiency", unknown)
    name = _text(data, "name", MAX_NAME_CHARS)
    notes = _text(data, "notes", MAX_TEXT_CHARS)
    measurements = _measurements(data.get("measurements"))
    warnings = tuple(
        f"ignored unknown key: {short_key(k)}" if " " not in k else k for k in unknown[:MAX_NAMED_KEYS]
    )
    if len(unknown) > MAX_NAMED_KEYS:
        warnings += (f"ignored {len(unknown) - MAX_NAMED_KEYS:,} more unknown keys",)
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


#: The top-level keys of a scenario file.
TOP_LEVEL_KEYS = frozenset(
    ("format", "version", "name", "notes", "model", "workload", "hardware", "budget", "overhead")
    + ("efficiency", "measurements")
)


def _header(data: dict[str, Any]) -> list[str]:
    """Check the file's format and version; return the unknown top-level keys (and a word for a
    file written by a newer version), the start of the list of what is ignored."""
    unknown: list[str] = []
    version = data.get("version", FORMAT_VERSION)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ScenarioError("version", "must be a whole number >= 1", version)
    if version > FORMAT_VERSION:
        unknown.append(
            f"This scenario was written by a newer gpuadvisor (format version {version}; this one reads "
            f"version {FORMAT_VERSION}): settings it does not know are ignored, so the answer may differ "
            "from the one it was saved with."
        )
    fmt = data.get("format", FORMAT_NAME)
    if fmt != FORMAT_NAME:
        raise ScenarioError("format", f"is not a gpuadvisor scenario (expected '{FORMAT_NAME}')", fmt)
    unknown.extend(key for key in data if key not in TOP_LEVEL_KEYS)
    return unknown


def _model_section(data: dict[str, Any], unknown: list[str]) -> dict[str, Any]:
    """The ``model`` section with its ``architecture`` object as (key, value) pairs of the keys a
    model knows (the others added to ``unknown``)."""
    model_data = _section(data, "model")
    if "architecture" not in model_data:
        return model_data
    arch = model_data["architecture"]
    if not isinstance(arch, dict):
        raise ScenarioError("model.architecture", "must be a JSON object", type(arch).__name__)
    unknown.extend(f"model.architecture.{key}" for key in arch if key not in ARCHITECTURE_KEYS)
    return {**model_data, "architecture": tuple((k, v) for k, v in arch.items() if k in ARCHITECTURE_KEYS)}


def _text(data: dict[str, Any], key: str, most_chars: int) -> str:
    """A top-level text field (``name``, ``notes``), empty when absent."""
    value = data.get(key, "")
    if not isinstance(value, str):
        raise ScenarioError(key, "must be text", value)
    check_text(key, value, most_chars, ScenarioError)
    return value


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
    """Read and validate a scenario file; errors name the file's field, never a traceback.

    The file is read through :mod:`gpuadvisor.core.files`: a regular file of at most 16 MB,
    UTF-8 JSON within the nesting and number limits.
    """
    p = expand_user(path, "scenario", ScenarioError)
    text = read_text(p, FileKind.SCENARIO, error=ScenarioError, what="a scenario file")
    try:
        base_dir = str(p.resolve().parent)
    except (OSError, RuntimeError):
        base_dir = str(p.absolute().parent)
    return loads_scenario(text, origin=p.name, base_dir=base_dir)


def loads_scenario(text: str, origin: str = "scenario", base_dir: str | None = None) -> Scenario:
    """Parse scenario JSON text."""
    if not text.strip():
        raise ScenarioError(origin, "is empty")
    data = parse_json(text, origin, error=ScenarioError)
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
    for habit in ("kbit_preparation", "prompt_logits"):  # the engine's habit: left out likewise
        if workload.get(habit) is None:
            workload.pop(habit, None)
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
        "budget": _budget_dict(scenario.budget),
        "overhead": asdict(scenario.overhead),
        "efficiency": asdict(scenario.efficiency),
    }
    if scenario.measurements:  # left out when empty, so files without measurements stay as they were
        out["measurements"] = [m.to_dict() for m in scenario.measurements]
    return out


def _budget_dict(budget: Budget) -> dict[str, Any]:
    out = asdict(budget)
    if isinstance(budget.providers, tuple):
        out["providers"] = list(budget.providers)
    return out


def scenario_snapshot(scenario: Scenario) -> dict[str, Any]:
    """The scenario as a measurement records it: :func:`scenario_to_dict` without the measurements."""
    if scenario.measurements:
        scenario = replace(scenario, measurements=())
    return scenario_to_dict(scenario)


def dumps_scenario(scenario: Scenario) -> str:
    return json.dumps(scenario_to_dict(scenario), indent=2, ensure_ascii=False) + "\n"


def save_scenario(scenario: Scenario, path: str | os.PathLike[str]) -> None:
    """Write atomically: a temporary file in the target's folder, flushed, then renamed over it.

    A symbolic link is written through (its target is replaced, the link stays); a folder, device
    or FIFO at ``path`` is refused (:func:`gpuadvisor.core.files.output_target`).
    """
    p = Path(path)
    text = dumps_scenario(scenario)
    target = output_target(p, error=ScenarioError)
    tmp = target.with_name(f".{target.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "x", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
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
        name="",  # named after its model and workload, which the user may change
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
