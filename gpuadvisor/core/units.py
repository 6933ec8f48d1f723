"""Units and conversions.

Memory is reported in GiB (2**30 bytes), as ``torch.cuda.max_memory_allocated`` and
``nvidia-smi`` (MiB) count it. Vendors market capacity and bandwidth in decimal units
(GB = 1e9 bytes, GB/s = 1e9 bytes/s, TFLOPS = 1e12 FLOP/s); the catalog keeps each
figure in the unit its column name states.
"""

from __future__ import annotations

import math

GIB = 2**30
GB = 10**9
TFLOPS = 1e12


def bytes_to_gib(n_bytes: float) -> float:
    """Bytes -> GiB."""
    return n_bytes / GIB


def gib_to_bytes(gib: float) -> float:
    """GiB -> bytes."""
    return gib * GIB


def gb_to_gib(gb: float) -> float:
    """Decimal GB -> GiB."""
    return gb * GB / GIB


def format_gib(gib: float, digits: int = 1) -> str:
    """A memory figure for display, e.g. ``'13.5 GiB'``; never prints NaN."""
    if not math.isfinite(gib):
        return "n/a"
    return f"{gib:,.{digits}f} GiB"


def format_count(n: float) -> str:
    """A parameter count for display: 6.74B, 336M, 4.2M."""
    if not math.isfinite(n):
        return "n/a"
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= scale:
            value = n / scale
            return f"{value:.3g}{suffix}" if value < 100 else f"{value:.0f}{suffix}"
    return f"{n:.0f}"


def format_usd(usd: float) -> str:
    """Dollars for display: $0.42, $1,234, $1.2M."""
    if not math.isfinite(usd):
        return "n/a"
    if abs(usd) >= 1e6:
        return f"${usd / 1e6:,.2f}M"
    if abs(usd) >= 100:
        return f"${usd:,.0f}"
    return f"${usd:,.2f}"


def format_hours(hours: float) -> str:
    """A duration given in hours, in the unit a person would use."""
    if not math.isfinite(hours):
        return "n/a"
    seconds = hours * 3600
    if seconds < 120:
        return f"{seconds:.0f} s"
    if hours < 2:
        return f"{hours * 60:.0f} min"
    if hours < 72:
        return f"{hours:.1f} h"
    return f"{hours / 24:.1f} days"


_SUFFIXES = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}


def parse_quantity(text: str) -> float:
    """Parse a count as people type it: ``7e9``, ``7B``, ``1.5M``, ``100k``, ``2,000,000``.

    Raises ``ValueError`` with a readable message for anything else (including NaN/inf).
    """
    raw = text.strip().replace(",", "").replace("_", "").replace(" ", "")
    if not raw:
        raise ValueError("enter a number")
    factor = 1.0
    if raw[-1].lower() in _SUFFIXES and not raw[-1].isdigit():
        factor = _SUFFIXES[raw[-1].lower()]
        raw = raw[:-1]
    try:
        value = float(raw) * factor
    except ValueError:
        raise ValueError(f"'{text.strip()}' is not a number (examples: 7e9, 7B, 1.5M, 100k)") from None
    if not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value
