"""The one fitter: every fitted constant of the speed model from the validation rows, written as
data (``gpuadvisor/core/specs/fitted_constants.json``) with what each value rests on, and the check
that the file still matches the data (``make fit``, ``make fit-check``).

The fit reads the rows of the sources the ledger lets fits read (the baseline's and those admitted
since, :func:`.ledger.load_measurements`) and runs, in order:

1. each serving stack's per-request time under the priors (:func:`.harness.fit_request_overheads`);
2. the engine factors and the global constants with those per-request times
   (:func:`.harness.fit_all`: engines under the prior globals, globals under those engines, engines
   again);
3. the per-request times again, under the fitted engines and globals;
4. llama.cpp's host stream on the partial-offload rows (:func:`.harness.fit_host_stream`, a grid),
   under the fitted constants, and the range of a split step from that fit held out by source;
5. each engine's and each serving figure's 80% range from the leave-one-source-out residuals
   (:func:`.harness.out_of_sample` under the constants of steps 1-4, :func:`.harness.spreads_from`).

This is the order a held-out fold of :func:`.harness.out_of_sample` fits in, with no source held
out. Each value is written rounded to its own number of significant digits (``digits``, 3 for a new
value); the file also keeps what the fitter gave before rounding (``fitted``), the priors it started
from, the rows each group of values rests on and a hash of the data it read (the rows and the
catalog entries that shape a prediction: no price, source or note column). A value may be ``kept``
at what it was rather than the fitter's rounded figure, with the reason: the file then says so,
and ``make fit`` without ``--keep`` replaces it.

The check (:func:`check`) needs no fit: it recomputes the data hash, the rows each group rests on,
the priors and each value from its recorded fit, and the hash of the values. It fails when the data
or a prior changed since the fit (run ``make fit``) or a value no longer is what the fit wrote (an
edit by hand).
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..core.specs import constants as core_constants
from ..core.specs.constants import (
    EVERY_STACK,
    FITTED_FILE,
    FITTED_FORMAT,
    FITTED_LLAMA_CPP,
    FITTED_VERSION,
    PRIORS,
    SERVING_FIGURES,
    SpeedConstants,
    constants_from_values,
    fitted_fields,
)
from ..core.specs.engines import PROFILES
from ..core.specs.hardware import bundled_catalog_dir
from . import harness
from .data import Row, scenario_engine
from .harness import Predictor, fit_host_stream, host_stream_rows

#: Where the fit writes (the package's copy, which the core reads).
FITTED_PATH = Path(core_constants.__file__).with_name(FITTED_FILE)
#: The catalogs whose specs shape a prediction.
CATALOGS = bundled_catalog_dir()
#: Catalog columns that no prediction of a validation row reads (prices, sources, notes).
UNREAD_COLUMNS = ("purchase_", "cloud_", "price_as_of", "source", "notes")
#: The fewest significant digits a refitted value is written with: one digit can be a quarter off
#: the fit (vLLM's prefill efficiency, fitted 0.44, was written 0.4 from the hand-pasted days).
MIN_DIGITS = 2
#: Significant digits of a value the file did not hold before.
DEFAULT_DIGITS = 3


class FitFileError(ValueError):
    """The fitted file does not match the data or the fit (one line per problem in ``problems``)."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = tuple(problems)


# --- values as flat names -------------------------------------------------------------------------
def flatten(values: Mapping[str, Any]) -> dict[str, float]:
    """Every number of a ``values`` object by its name: ``engines[vllm].prefill_mfu``,
    ``engines[llama.cpp].layer_overhead_by_arch.apple``, ``globals.bandwidth_ceiling.ada``,
    ``request_overhead_s[*]``, ``serving_spreads.ttft.high``, ``llama_cpp.host_stream_efficiency``
    (ids in brackets: an engine id may hold a dot). The words an engine rests on are not numbers."""
    out: dict[str, float] = {}
    for eid, fields_ in values["engines"].items():
        for name, value in fields_.items():
            if isinstance(value, Mapping):
                for arch, factor in value.items():
                    out[f"engines[{eid}].{name}.{arch}"] = float(factor)
            elif not isinstance(value, str):
                out[f"engines[{eid}].{name}"] = float(value)
    for name, value in values["globals"].items():
        if isinstance(value, Mapping):
            for key, v in value.items():
                out[f"globals.{name}.{key}"] = float(v)
        else:
            out[f"globals.{name}"] = float(value)
    for fid, fields_ in values["families"].items():
        for name, value in fields_.items():
            out[f"families[{fid}].{name}"] = float(value)
    for stack, value in values["request_overhead_s"].items():
        out[f"request_overhead_s[{stack}]"] = float(value)
    for figure, (low, high) in values["serving_spreads"].items():
        out[f"serving_spreads.{figure}.low"] = float(low)
        out[f"serving_spreads.{figure}.high"] = float(high)
    for name, value in values["llama_cpp"].items():
        out[f"llama_cpp.{name}"] = float(value)
    return out


def values_of(constants: SpeedConstants) -> dict[str, Any]:
    """The ``values`` object of ``constants``: what a fit sets, in the file's layout."""
    engines: dict[str, dict[str, Any]] = {}
    for p in PROFILES:
        profile = constants.engines[p.id]
        out: dict[str, Any] = {}
        for name in fitted_fields(p):
            value = getattr(profile, name)
            out[name] = dict(value) if name.endswith("_by_arch") else value
        engines[p.id] = out
    glob: dict[str, Any] = {}
    for name in core_constants.FITTED_GLOBALS:
        value = getattr(constants, name)
        prior = getattr(PRIORS, name)
        if isinstance(value, Mapping):
            # The entries a fit sets: those of the fit's search (harness.FIT_GLOBALS).
            keys = [k.split(":", 1)[1] for k in harness.FIT_GLOBALS if k.startswith(name + ":")]
            glob[name] = {k: value.get(k, prior.get(k, 1.0)) for k in keys}
        else:
            glob[name] = value
    return {
        "engines": engines,
        "globals": glob,
        "families": {},
        "request_overhead_s": dict(constants.request_overhead_s),
        "serving_spreads": {f: list(constants.serving_spreads[f]) for f in SERVING_FIGURES},
        "llama_cpp": {name: getattr(constants.llama_cpp, name) for name in FITTED_LLAMA_CPP},
    }


def with_flat(values: Mapping[str, Any], flat: Mapping[str, float]) -> dict[str, Any]:
    """``values`` with the numbers of ``flat`` (names of :func:`flatten`) in place."""
    out: dict[str, Any] = json.loads(json.dumps(values))
    for name, number in flat.items():
        _set_flat(out, name, number)
    return out


def _set_flat(values: dict[str, Any], name: str, number: float) -> None:
    if name.startswith("engines["):
        eid, rest = name[len("engines[") :].split("].", 1)
        field, _, arch = rest.partition(".")
        target = values["engines"][eid]
        if arch:
            target[field][arch] = number
        else:
            target[field] = number
    elif name.startswith("families["):
        fid, field = name[len("families[") :].split("].", 1)
        values["families"].setdefault(fid, {})[field] = number
    elif name.startswith("request_overhead_s["):
        values["request_overhead_s"][name[len("request_overhead_s[") : -1]] = number
    elif name.startswith("serving_spreads."):
        _, figure, end = name.split(".")
        values["serving_spreads"][figure][0 if end == "low" else 1] = number
    else:
        group, field, *key = name.split(".")
        if key:
            values[group][field][key[0]] = number
        else:
            values[group][field] = number


def round_sig(value: float, digits: int) -> float:
    """``value`` to ``digits`` significant digits."""
    return float(f"{value:.{digits}g}") if value else 0.0


def digits_for(value: float, fitted: float, most: int = 6) -> int | None:
    """The fewest significant digits that round ``fitted`` to ``value`` (None: none up to ``most``)."""
    for d in range(1, most + 1):
        if round_sig(fitted, d) == value:
            return d
    return None


def sha256_json(data: Any) -> str:
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --- what the fit reads ---------------------------------------------------------------------------
def data_sha256(rows: Sequence[Row], catalogs: Path = CATALOGS) -> str:
    """A hash of the data a fit reads: every row of the fitted sources as it is scored (all but the
    quote, locator and date read) and the specs of the catalogs' GPUs and models those rows name (no
    price, source or note). A GPU or model that no row names is not in it: adding one to a catalog
    needs no refit."""
    named = {v for r in rows for _k, v in r.facts if v}
    data: dict[str, Any] = {
        "rows": [
            [
                r.id,
                r.source_id,
                r.group,
                r.quantity,
                r.unit,
                r.value,
                r.bound,
                r.basis,
                r.scored,
                sorted([k, v] for k, v in r.facts if v),
            ]
            for r in sorted(rows, key=lambda r: r.id)
        ]  # fmt: skip
    }
    for name in ("gpus.csv", "models.csv"):
        lines = (catalogs / name).read_text(encoding="utf-8").splitlines()
        table = list(csv.DictReader(line for line in lines if not line.startswith("#")))
        data[name] = [
            {k: v for k, v in row.items() if k and not k.startswith(UNREAD_COLUMNS)}
            for row in table
            if row.get("id") in named
        ]
    return sha256_json(data)


def rests_on(rows: Sequence[Row]) -> dict[str, list[str]]:
    """The rows each group of fitted values rests on, by group: each engine's factors
    (``engine:<id>``), the global constants, the per-request times (the common one and each stack
    with its own), llama.cpp's host stream and the 80% ranges (every scored row of a speed group)."""
    scored = [r for r in rows if r.scored]
    out: dict[str, list[str]] = {}
    for r in harness.speed_rows(scored):
        out.setdefault(f"engine:{scenario_engine(r)}", []).append(r.id)
    out["globals"] = [r.id for r in harness.global_rows(scored)]
    serving = [r for r in scored if harness._carries_request_overhead(r)]
    out[f"request_overhead_s:{EVERY_STACK}"] = [r.id for r in serving]
    for r in serving:
        out.setdefault(f"request_overhead_s:{harness.stack_of(r)}", []).append(r.id)
    out["llama_cpp"] = [r.id for r in host_stream_rows(scored)]
    out["spreads"] = [r.id for r in scored if r.group in harness.SPEED_GROUPS]
    return dict(sorted(out.items()))


def priors_flat() -> dict[str, float]:
    """The documented priors of every fitted value (names of :func:`flatten`)."""
    return flatten(values_of(PRIORS))


# --- the fit --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Fit:
    """What the fitter gave (names of :func:`flatten`) and the constants they make, unrounded."""

    fitted: dict[str, float]
    constants: SpeedConstants


def run_fit(
    rows: Sequence[Row],
    predictor: Predictor,
    written: Callable[[SpeedConstants], SpeedConstants] = lambda c: c,
    say: Callable[[str], None] = lambda _: None,
) -> Fit:
    """The fit of the module docstring over ``rows`` (the fitted sources' rows, scored and not).
    ``written`` turns fitted constants into the ones the file will hold (rounded, or kept): the
    leave-one-source-out run of the 80% ranges answers with those, as the program will."""
    scored = [r for r in rows if r.scored]
    shipped = predictor.shipped
    say("per-request times under the priors")
    first = harness.fit_request_overheads(scored, predictor, constants=predictor.in_force(PRIORS))
    say("engine factors and global constants")
    globals_, profiles = harness.fit_all(scored, predictor, overheads=first)
    fitted = predictor.in_force(globals_, profiles)
    say("per-request times under the fitted constants")
    overheads = harness.fit_request_overheads(scored, predictor, constants=fitted)
    fitted = replace(fitted, request_overhead_s=overheads)
    say("llama.cpp's host stream")
    host, low, high = fit_host_stream(scored, predictor, fitted)
    fitted = replace(
        fitted,
        llama_cpp=replace(
            fitted.llama_cpp, host_stream_efficiency=host, split_spread_low=low, split_spread_high=high
        ),
    )
    say("80% ranges from the leave-one-source-out residuals")
    held = harness.out_of_sample(rows, Predictor(predictor.gpus, predictor.models, written(fitted)))
    ranges = harness.spreads_from(held)
    engines = dict(fitted.engines)
    for eid, profile in engines.items():
        lo, hi = ranges.get(eid, (profile.spread_low, profile.spread_high))
        engines[eid] = replace(
            profile, spread_low=lo, spread_high=hi, calibrated_on=shipped.engines[eid].calibrated_on
        )
    serving = {f: ranges.get(f"serving:{f}", shipped.serving_spreads[f]) for f in SERVING_FIGURES}
    fitted = replace(fitted, engines=engines, serving_spreads=serving)
    return Fit(flatten(values_of(fitted)), fitted)


# --- the file -------------------------------------------------------------------------------------
def read(path: Path = FITTED_PATH) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def settle(
    fitted: Mapping[str, float],
    before: Mapping[str, Any] | None,
    keep: str | None = None,
    refit: Sequence[str] = (),
) -> tuple[dict[str, float], dict[str, int], dict[str, str]]:
    """(values, digits, kept) by name: each fitted value rounded to its digits (those of ``before``,
    else :data:`DEFAULT_DIGITS`); with ``keep`` (the reason, in words), the values of ``before`` stay
    and those the fit rounded to their digits does not give are kept, with that reason, except the
    values whose names start with one of ``refit`` (``llama_cpp.``, ``engines[llama.cpp].``), which
    take the fit: a refit of the values one change concerns, the others as shipped."""
    old_flat = {
        name: value
        for name, value in (flatten(before["values"]) if before is not None else {}).items()
        if not name.startswith(tuple(refit))
    }
    old_digits: Mapping[str, int] = before.get("fit", {}).get("digits", {}) if before is not None else {}
    values: dict[str, float] = {}
    digits: dict[str, int] = {}
    kept: dict[str, str] = {}
    for name, raw in fitted.items():
        if keep is not None and name in old_flat:
            value = old_flat[name]
            # A value keeps the digits it was written with; one written before the file recorded
            # digits takes the fewest that round the fit to it.
            found = int(old_digits[name]) if name in old_digits else digits_for(value, raw)
            if found is not None and round_sig(raw, found) != value:
                found = None
            if found is None:
                kept[name] = keep
                found = len(f"{value:.15e}".split("e")[0].rstrip("0").replace(".", "").lstrip("-"))
            digits[name], values[name] = found, value
        else:
            digits[name] = max(MIN_DIGITS, int(old_digits.get(name, DEFAULT_DIGITS)))
            values[name] = round_sig(raw, digits[name])
    return values, digits, kept


def written_constants(
    fitted: SpeedConstants,
    before: Mapping[str, Any] | None,
    keep: str | None = None,
    refit: Sequence[str] = (),
) -> SpeedConstants:
    """The constants the file will hold for ``fitted`` (:func:`settle`)."""
    values = with_flat(values_of(fitted), settle(flatten(values_of(fitted)), before, keep, refit)[0])
    return constants_from_values(values)


def file_for(
    fit: Fit,
    rows: Sequence[Row],
    before: Mapping[str, Any] | None,
    keep: str | None = None,
    today: dt.date | None = None,
    provenance: str = "",
    refit: Sequence[str] = (),
) -> dict[str, Any]:
    """The file's object for ``fit`` (values as :func:`settle` gives them)."""
    flat, digits, kept = settle(fit.fitted, before, keep, refit)
    values = with_flat(values_of(fit.constants), flat)
    if before is not None:  # the words of what each engine rests on are written by hand
        for eid, fields_ in values["engines"].items():
            fields_["calibrated_on"] = before["values"]["engines"][eid]["calibrated_on"]
    constants_from_values(values)  # refused here, not in the program, when incomplete
    return {
        "format": FITTED_FORMAT,
        "version": FITTED_VERSION,
        "written": (today or dt.date.today()).isoformat(),
        "provenance": provenance,
        "values": values,
        "values_sha256": sha256_json(values),
        "fit": {"fitted": dict(fit.fitted), "digits": digits, "kept": kept},
        "priors": priors_flat(),
        "rests_on": rests_on(rows),
        "data": {
            "sha256": data_sha256(rows),
            "rows": len(rows),
            "sources": sorted({r.source_id for r in rows}),
        },
    }


def write(data: Mapping[str, Any], path: Path = FITTED_PATH) -> None:
    """Write the file (whole, then renamed into place)."""
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)


def _words_behind_rows(values: Mapping[str, Any], rested: Mapping[str, Sequence[str]]) -> list[str]:
    """Engines whose words (``calibrated_on``, shown in the report) count other rows than their
    fitted factors rest on: "296 rows: ..." for an engine whose factors rest on 498."""
    problems = []
    for eid, fields_ in values.get("engines", {}).items():
        said = re.match(r"(\d[\d,]*) rows\b", str(fields_.get("calibrated_on", "")))
        n = len(rested.get(f"engine:{eid}", ()))
        if said is not None and int(said.group(1).replace(",", "")) != n:
            problems.append(
                f"engine {eid}: its words say {said.group(1)} rows, its factors rest on {n}: "
                "say which (calibrated_on in the fitted file, then make fit)"
            )
    return problems


def check(data: Mapping[str, Any], rows: Sequence[Row], catalogs: Path = CATALOGS) -> list[str]:
    """What is wrong with the fitted file ``data`` for ``rows`` (the fitted sources' rows): nothing
    when it is what the fit wrote for this data. No fit is run."""
    problems: list[str] = []
    values = data.get("values")
    if not isinstance(values, Mapping):
        return ["the file has no values"]
    if sha256_json(values) != data.get("values_sha256"):
        problems.append(
            "the values were edited by hand (their hash is not the one the fit wrote): run make fit"
        )
    fit = data.get("fit", {})
    fitted, digits, kept = fit.get("fitted", {}), fit.get("digits", {}), fit.get("kept", {})
    flat = flatten(values)
    if sorted(flat) != sorted(fitted):
        problems.append("the values are not the ones the fit wrote (names differ): run make fit")
    for name in sorted(set(flat) & set(fitted)):
        if name in kept:
            if not str(kept[name]).strip():
                problems.append(f"{name} is kept without a reason")
            continue
        if name not in digits or round_sig(fitted[name], int(digits[name])) != flat[name]:
            problems.append(
                f"{name} = {flat[name]:g} is not the fit's {fitted[name]:.6g} at its "
                f"{digits.get(name, '?')} digits (edited by hand?): run make fit"
            )
    if data.get("priors") != priors_flat():
        changed = sorted(
            k for k in set(priors_flat()) | set(data.get("priors", {}))
            if priors_flat().get(k) != data.get("priors", {}).get(k)
        )  # fmt: skip
        problems.append(f"a prior changed since the fit ({', '.join(changed[:5])}): run make fit")
    if data.get("data", {}).get("sha256") != data_sha256(rows, catalogs):
        problems.append("the validation rows or the catalogs' specs changed since the fit: run make fit")
    elif data.get("rests_on") != rests_on(rows):
        problems.append("the rows each value rests on are not the ones recorded: run make fit")
    problems += _words_behind_rows(values, data.get("rests_on", {}))
    try:
        constants_from_values(values)
    except (core_constants.FittedFileError, KeyError, TypeError, ValueError) as exc:
        problems.append(f"the program refuses the values: {exc}")
    return problems
