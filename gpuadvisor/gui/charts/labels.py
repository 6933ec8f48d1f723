"""Text for chart labels and tooltips: short GPU names and number formats. Pure (no Qt).

Formatting only: every number comes from the core's results unchanged.
"""

from __future__ import annotations

import math
import re

_VENDOR_PREFIXES = ("NVIDIA ", "AMD Instinct ", "AMD ", "Intel ", "GeForce ", "Tesla ", "Radeon ")
_PARENTHESIS = re.compile(r"\s*\([^)]*\)\s*$")
MAX_NAME_CHARS = 24


def short_gpu_name(name: str, gpu_count: int = 1, max_chars: int = MAX_NAME_CHARS) -> str:
    """``"NVIDIA H100 SXM5 80 GB", 2`` -> ``"H100 SXM5 80 GB ×2"``.

    Drops vendor and brand prefixes; a name still longer than ``max_chars`` loses a trailing
    parenthesis, then is cut with an ellipsis. The full name belongs in the tooltip.
    """
    short = name.strip()
    changed = True
    while changed:
        changed = False
        for prefix in _VENDOR_PREFIXES:
            if short.startswith(prefix) and len(short) > len(prefix):
                short = short[len(prefix):]
                changed = True
    if len(short) > max_chars:
        short = _PARENTHESIS.sub("", short) or short
    if len(short) > max_chars:
        short = short[:max_chars - 1].rstrip() + "…"
    return f"{short} ×{gpu_count}" if gpu_count > 1 else short


def finite(*values: float | None) -> bool:
    """True when every value is a real, finite number (``None`` counts as not finite)."""
    try:
        return all(math.isfinite(v) for v in values)  # type: ignore[arg-type]
    except TypeError:  # None or a non-number
        return False


def fmt_gib(value: float, digits: int = 2) -> str:
    return f"{value:,.{digits}f} GiB"


def fmt_hours(hours: float) -> str:
    """Hours in the unit a person reads best: minutes, hours or days."""
    if hours < 1:
        return f"{hours * 60:.0f} min"
    if hours < 48:
        return f"{hours:.1f} h"
    return f"{hours:,.0f} h ({hours / 24:,.1f} days)"


def fmt_usd(value: float) -> str:
    if abs(value) < 10:
        return f"${value:,.2f}"
    return f"${value:,.0f}"


def fmt_tick(value: float) -> str:
    """A tick label for a value on a log axis: ``0.05``, ``2``, ``300``, ``12,000``."""
    if value == 0 or not math.isfinite(value):
        return "0"
    rounded = float(f"{value:.3g}")
    if abs(rounded) >= 1:
        return f"{rounded:,.0f}" if rounded.is_integer() else f"{rounded:,.3g}"
    return f"{rounded:.3g}"


def fmt_linear_tick(value: float, spacing: float) -> str:
    """A tick label on a linear axis with as many decimals as the tick spacing needs."""
    if not math.isfinite(value):
        return ""
    decimals = 0 if spacing >= 1 or spacing <= 0 else min(6, math.ceil(-math.log10(spacing) - 1e-9))
    if abs(value) < 0.5 * 10 ** -decimals:
        value = 0.0  # no "-0"
    return f"{value:,.{decimals}f}"
