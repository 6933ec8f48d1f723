"""Units and conversions.

Memory is reported in GiB (2**30 bytes), as ``torch.cuda.max_memory_allocated`` and
``nvidia-smi`` (MiB) count it. Vendors market capacity and bandwidth in decimal units
(GB = 1e9 bytes, GB/s = 1e9 bytes/s, TFLOPS = 1e12 FLOP/s); the catalog keeps each
figure in the unit its column name states. How figures are written: :mod:`gpuadvisor.core.formatting`.
"""

from __future__ import annotations

import math

from .formatting import fmt_count, fmt_hours, fmt_usd

GIB = 2**30
GB = 10**9
TFLOPS = 1e12


#: The window's names for the shared rules of :mod:`gpuadvisor.core.formatting` (same text everywhere).
format_count = fmt_count
format_usd = fmt_usd
format_hours = fmt_hours


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
