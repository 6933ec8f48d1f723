"""Text for chart labels and tooltips. Pure (no Qt).

Figures and GPU names are written by :mod:`gpuadvisor.core.formatting`, the one set of rules the
window, the command line and the report share; only axis tick labels are the charts' own.
Every number comes from the core's results unchanged.
"""

from __future__ import annotations

import math

from ...core.formatting import MAX_NAME_CHARS, fmt_gib_unit, fmt_hours, fmt_usd, short_gpu_name

__all__ = [
    "MAX_NAME_CHARS",
    "finite",
    "fmt_gib",
    "fmt_hours",
    "fmt_linear_tick",
    "fmt_tick",
    "fmt_usd",
    "short_gpu_name",
]


def finite(*values: float | None) -> bool:
    """True when every value is a real, finite number (``None`` counts as not finite)."""
    try:
        return all(math.isfinite(v) for v in values)  # type: ignore[arg-type]
    except TypeError:  # None or a non-number
        return False


def fmt_gib(value: float, digits: int = 2) -> str:
    """A memory component in a tooltip's breakdown: ``7.48 GiB`` (two decimals, see the formatting rules)."""
    return fmt_gib_unit(value, digits)


#: Tick values from here on are written short (``250k``, ``1.5M``): a seven-digit label does not fit
#: beside the plot, and an axis without numbers cannot be read.
COMPACT_FROM = 100_000


def _compact(value: float) -> str:
    """``250k``, ``1.5M``, ``12M``, ``3B`` for a large tick value."""
    for size, unit in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:,.3g}{unit}"
    return f"{value:,.0f}"


def fmt_tick(value: float) -> str:
    """A tick label for a value on a log axis: ``0.05``, ``2``, ``300``, ``12,000``, ``1.5M``."""
    if value == 0 or not math.isfinite(value):
        return "0"
    if abs(value) >= COMPACT_FROM:
        return _compact(float(f"{value:.3g}"))
    rounded = float(f"{value:.3g}")
    if abs(rounded) >= 1:
        return f"{rounded:,.0f}" if rounded.is_integer() else f"{rounded:,.3g}"
    return f"{rounded:.3g}"


def fmt_linear_tick(value: float, spacing: float) -> str:
    """A tick label on a linear axis with as many decimals as the tick spacing needs."""
    if not math.isfinite(value):
        return ""
    decimals = 0 if spacing >= 1 or spacing <= 0 else min(6, math.ceil(-math.log10(spacing) - 1e-9))
    if abs(value) < 0.5 * 10**-decimals:
        value = 0.0  # no "-0"
    if abs(value) >= COMPACT_FROM and spacing >= 1:
        return _compact(value)
    return f"{value:,.{decimals}f}"
