"""Units and conversions.

Memory is reported in GiB (2**30 bytes), as ``torch.cuda.max_memory_allocated`` and
``nvidia-smi`` (MiB) count it. Vendors market capacity and bandwidth in decimal units
(GB = 1e9 bytes, GB/s = 1e9 bytes/s, TFLOPS = 1e12 FLOP/s); the catalog keeps each
figure in the unit its column name states. How figures are written: :mod:`gpuadvisor.core.formatting`.
"""

from __future__ import annotations

from .formatting import fmt_count, fmt_hours, fmt_usd
from .numbers import Quantity, parse_number

GIB = 2**30
GB = 10**9
TFLOPS = 1e12


#: The window's names for the shared rules of :mod:`gpuadvisor.core.formatting` (same text everywhere).
format_count = fmt_count
format_usd = fmt_usd
format_hours = fmt_hours


def parse_quantity(text: str) -> float:
    """A count as people type it (``7e9``, ``7B``, ``1.5M``, ``100k``, ``2,000,000``): the one number
    parser of :mod:`gpuadvisor.core.numbers` for counts. ``ValueError`` with a readable message."""
    return parse_number(text, Quantity.COUNT)
