"""The calibration profile as a file (``calibration.json``): its JSON form, checked key by key.

A profile holds fitted factors per GPU and engine (:class:`~gpuadvisor.core.estimation.results.FactorFit`);
:mod:`gpuadvisor.core.estimation.calibration` fits them and applies them. Reading never trusts the
file: every key and value is checked, and a bad one is named in the error (``fits[2].value``).
"""

from __future__ import annotations

import json
import math
from datetime import date
from typing import Any

from ..errors import InputError, keys_phrase
from ..files import parse_json
from .results import CalibrationProfile, FactorFit

PROFILE_FORMAT = "gpuadvisor-calibration"
PROFILE_SCHEMA_VERSION = 1
EFFICIENCY_FACTORS = ("bandwidth_efficiency", "mfu", "prefill_mfu")
FACTOR_NAMES = EFFICIENCY_FACTORS + ("runtime_overhead_gib",)
#: Valid range of the runtime overhead in GiB (efficiencies lie in (0, 1]).
OVERHEAD_RANGE_GIB = (0.0, 200.0)


_FIT_KEYS = (
    "gpu_id",
    "engine",
    "factor_name",
    "value",
    "n_measurements",
    "error_before_pct",
    "error_after_pct",
    "measurement_ids",
)
_FIT_OPTIONAL = ("note",)
_PROFILE_KEYS = ("format", "schema_version", "created", "fits")
_PROFILE_OPTIONAL = ("note", "skipped")


def profile_to_dict(profile: CalibrationProfile) -> dict[str, Any]:
    """The JSON-ready, versioned form of a profile."""
    return {
        "format": PROFILE_FORMAT,
        "schema_version": PROFILE_SCHEMA_VERSION,
        "created": profile.created,
        "note": profile.note,
        "fits": [
            {
                "gpu_id": f.gpu_id,
                "engine": f.engine,
                "factor_name": f.factor_name,
                "value": f.value,
                "n_measurements": f.n_measurements,
                "error_before_pct": f.error_before_pct,
                "error_after_pct": f.error_after_pct,
                "measurement_ids": list(f.measurement_ids),
                "note": f.note,
            }
            for f in profile.fits
        ],
        "skipped": [{"measurement": mid, "reason": why} for mid, why in profile.skipped],
    }


def profile_to_json(profile: CalibrationProfile) -> str:
    return json.dumps(profile_to_dict(profile), indent=2, ensure_ascii=False) + "\n"


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _keys(data: dict[str, Any], where: str, required: tuple[str, ...], optional: tuple[str, ...]) -> None:
    missing = [k for k in required if k not in data]
    if missing:
        raise InputError(where, f"is missing key(s) {keys_phrase(missing)}")
    unknown = sorted(k for k in data if k not in required + optional)
    if unknown:
        raise InputError(where, f"has unknown key(s) {keys_phrase(unknown)}")


def _text(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(where, "must be non-empty text", value)
    return value


def _fit_from_dict(data: Any, where: str) -> FactorFit:
    if not isinstance(data, dict):
        raise InputError(where, "must be a JSON object", type(data).__name__)
    _keys(data, where, _FIT_KEYS, _FIT_OPTIONAL)
    name = data["factor_name"]
    if name not in FACTOR_NAMES:
        raise InputError(f"{where}.factor_name", f"must be one of {', '.join(FACTOR_NAMES)}", name)
    value = data["value"]
    if not _is_number(value):
        raise InputError(f"{where}.value", "must be a number", value)
    if name == "runtime_overhead_gib":
        lo, hi = OVERHEAD_RANGE_GIB
        if not lo <= value <= hi:
            raise InputError(
                f"{where}.value", f"must be in [{lo:g}, {hi:g}] GiB for runtime_overhead_gib", value
            )
    elif not 0 < value <= 1:
        raise InputError(f"{where}.value", f"must be in (0, 1] for {name}", value)
    n = data["n_measurements"]
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InputError(f"{where}.n_measurements", "must be a whole number >= 1", n)
    errors = []
    for key in ("error_before_pct", "error_after_pct"):
        err = data[key]
        if err is not None and (not _is_number(err) or err < 0):
            raise InputError(f"{where}.{key}", "must be a number >= 0 or null", err)
        errors.append(err)
    ids = data["measurement_ids"]
    if not isinstance(ids, list) or not all(isinstance(i, str) and i for i in ids):
        raise InputError(f"{where}.measurement_ids", "must be a list of measurement ids (text)", ids)
    note = data.get("note", "")
    if not isinstance(note, str):
        raise InputError(f"{where}.note", "must be text", note)
    return FactorFit(
        gpu_id=_text(data["gpu_id"], f"{where}.gpu_id"),
        engine=_text(data["engine"], f"{where}.engine"),
        factor_name=name,
        value=float(value),
        n_measurements=n,
        error_before_pct=errors[0],
        error_after_pct=errors[1],
        measurement_ids=tuple(ids),
        note=note,
    )


def profile_from_dict(data: Any, origin: str = "calibration profile") -> CalibrationProfile:
    """Validate parsed JSON as a profile; anything malformed raises :class:`InputError` whose field
    reads ``<origin>: fits[2].value``."""
    if not isinstance(data, dict):
        raise InputError(origin, "must be a JSON object at the top level", type(data).__name__)
    if data.get("format") != PROFILE_FORMAT:
        raise InputError(
            f"{origin}: format",
            f"is not a gpuadvisor calibration profile (expected '{PROFILE_FORMAT}')",
            data.get("format"),
        )
    version = data.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise InputError(f"{origin}: schema_version", "must be a whole number", version)
    if version != PROFILE_SCHEMA_VERSION:
        raise InputError(
            f"{origin}: schema_version",
            f"version {version} is not supported by this version of gpuadvisor "
            f"(supported: {PROFILE_SCHEMA_VERSION})",
            version,
        )
    _keys(data, origin, _PROFILE_KEYS, _PROFILE_OPTIONAL)
    created = data["created"]
    try:
        date.fromisoformat(created if isinstance(created, str) else "")
    except ValueError:
        raise InputError(f"{origin}: created", "must be an ISO date (YYYY-MM-DD)", created) from None
    note = data.get("note", "")
    if not isinstance(note, str):
        raise InputError(f"{origin}: note", "must be text", note)
    items = data["fits"]
    if not isinstance(items, list):
        raise InputError(f"{origin}: fits", "must be a list", type(items).__name__)
    fits: list[FactorFit] = []
    seen: dict[tuple[str, str, str], int] = {}
    for i, item in enumerate(items):
        fit = _fit_from_dict(item, f"{origin}: fits[{i}]")
        key = (fit.gpu_id, fit.engine, fit.factor_name)
        if key in seen:
            raise InputError(f"{origin}: fits[{i}]", f"duplicates fits[{seen[key]}] ({' / '.join(key)})")
        seen[key] = i
        fits.append(fit)
    skipped_raw = data.get("skipped", [])
    if not isinstance(skipped_raw, list):
        raise InputError(f"{origin}: skipped", "must be a list", type(skipped_raw).__name__)
    skipped = []
    for i, item in enumerate(skipped_raw):
        where = f"{origin}: skipped[{i}]"
        if not isinstance(item, dict):
            raise InputError(where, "must be a JSON object", type(item).__name__)
        _keys(item, where, ("measurement", "reason"), ())
        skipped.append(
            (_text(item["measurement"], f"{where}.measurement"), _text(item["reason"], f"{where}.reason"))
        )
    return CalibrationProfile(fits=tuple(fits), created=created, note=note, skipped=tuple(skipped))


def profile_from_json(text: str, origin: str = "calibration profile") -> CalibrationProfile:
    """Parse :func:`profile_to_json` output."""
    return profile_from_dict(parse_json(text, origin), origin)
