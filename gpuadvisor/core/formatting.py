"""One rule per quantity for every figure a person reads: window, charts, command line and report.

Each function takes the core's number unchanged (``None``, NaN and infinities read as
:data:`NONE_MARK`, never "nan") and returns its text. It first rounds the number to the
precision the JSON output carries for it (cents, 1e-4 h, 1e-3 GiB), so a view that reads the
raw value and the report, which reads the JSON, cannot differ by a rounding step. The rules:

- durations (given in hours): seconds below a minute, whole minutes below an hour, hours with
  one decimal below 72 h, days with one decimal from there (``40 s``, ``25 min``, ``1.5 h``,
  ``50.0 h``, ``3.8 days``); a range takes the unit of its upper end. A deadline the user set is
  written as typed, in hours (``100 h (4.2 days)``).
- money: whole dollars from $10 up, cents below, millions with two decimals (``$0.58``, ``$43``,
  ``$1,234``, ``$2.50M``), halves rounded up; prices per hour and per million tokens always with cents.
- memory: GiB (2**30 bytes) with one decimal and thousands separators (``32.7``, ``1,234.6``);
  headroom with its sign; two decimals only in a chart tooltip's breakdown, where a component of
  a few hundred MiB would otherwise read ``0.1``.
- counts (parameters, tokens, requests): three significant digits with k, M, B or T (``6.74B``).
- shares: whole percent from 10%, one decimal below (``23%``, ``4.5%``).
- GPU names: the NVIDIA, GeForce and Tesla prefixes dropped (AMD and Intel keep their brand), long
  names cut after a word (``RTX 4090``, ``AMD Instinct MI300X``, ``GH200 Grace Hopper…``).
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

DASH = "\u2013"  # en dash: ranges
NONE_MARK = "\u2014"  # em dash: no value (no deadline, no budget, no price)
TIMES = "\u00d7"


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def fmt_gib(gib: float | None) -> str:
    """GiB with one decimal: ``32.7``, ``1,024.0``."""
    return f"{round(gib, 3):,.1f}" if gib is not None and _finite(gib) else NONE_MARK


def fmt_signed_gib(gib: float | None) -> str:
    """Headroom with a sign: ``+7.3``, ``-12.0`` (never ``-0.0``)."""
    if not _finite(gib):
        return NONE_MARK
    assert gib is not None
    text = f"{round(gib, 3):+,.1f}"
    return "+0.0" if text == "-0.0" else text


def fmt_rate(tokens_per_s: float | None) -> str:
    """Tokens per second: no decimals from 100 up (``6,152``), 1 from 10 (``42.5``), 2 below (``3.14``)."""
    if not _finite(tokens_per_s):
        return NONE_MARK
    assert tokens_per_s is not None
    tokens_per_s = round(tokens_per_s, 2)
    if tokens_per_s >= 100:
        return f"{tokens_per_s:,.0f}"
    if tokens_per_s >= 10:
        return f"{tokens_per_s:.1f}"
    return f"{tokens_per_s:.2f}"


def fmt_seconds(seconds: float | None) -> str:
    """A short wait: whole milliseconds below one second (``40 ms``; ``under 1 ms``), else seconds
    with one decimal (``7.0 s``) and none from 100 s up (``312 s``)."""
    if not _finite(seconds):
        return NONE_MARK
    assert seconds is not None
    if seconds < 0.0005:
        return "under 1 ms"
    if seconds < 0.9995:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 99.95:
        return f"{seconds:.1f} s"
    return f"{seconds:,.0f} s"


def _hours_unit(hours: float) -> tuple[float, str]:
    """(divisor, unit) for a duration: seconds below 1 min, minutes below 1 h, hours below 72 h, else days."""
    if hours < 1 / 60:
        return 1 / 3600, "s"
    if hours < 1:
        return 1 / 60, "min"
    if hours < 72:
        return 1.0, "h"
    return 24.0, "days"


def _hours_value(hours: float, divisor: float, unit: str) -> str:
    value = hours / divisor
    return f"{value:,.0f}" if unit in ("s", "min") or value >= 1000 else f"{value:,.1f}"


def fmt_hours(hours: float | None) -> str:
    """A duration given in hours: ``40 s``, ``25 min``, ``1.5 h``, ``50.0 h``, ``3.8 days``."""
    if not _finite(hours):
        return NONE_MARK
    assert hours is not None
    hours = round(hours, 4)
    div, unit = _hours_unit(hours)
    return f"{_hours_value(hours, div, unit)} {unit}"


def fmt_hours_range(low: float | None, high: float | None) -> str:
    """``19.6–32.3 h``: one unit for both ends, chosen by the upper end."""
    if not (_finite(low) and _finite(high)):
        return NONE_MARK
    assert low is not None and high is not None
    low, high = round(low, 4), round(high, 4)
    div, unit = _hours_unit(high)
    return f"{_hours_value(low, div, unit)}{DASH}{_hours_value(high, div, unit)} {unit}"


def fmt_deadline(hours: float) -> str:
    """A deadline as the user set it, in hours: ``24 h``, ``100 h (4.2 days)``, ``30 min``."""
    if hours < 1:
        return fmt_hours(hours)
    text = f"{hours:,.4g} h"
    return text + f" ({hours / 24:,.1f} days)" if hours >= 72 else text


def fmt_days(days: float) -> str:
    """A planning horizon: ``90 days``, ``1 day``, ``2.5 days``."""
    return f"{days:,.4g} day{'' if days == 1 else 's'}"


def fmt_speedup(factor: float) -> str:
    """How many times faster: ``8x``, ``1.3x``, ``12x``."""
    if not _finite(factor):
        return NONE_MARK
    text = f"{factor:.0f}" if factor >= 9.95 else f"{factor:.1f}".removesuffix(".0")
    return f"{text}x"


def _usd_digits(usd: float) -> int:
    return 0 if abs(round(usd, 2)) >= 10 else 2


def _dollars(usd: float, digits: int, stored: int = 2) -> str:
    """``usd`` with ``digits`` decimals and thousands separators, halves rounded up ($42.50 -> $43),
    as a person rounds money (Python's own format rounds halves to even: $42). The amount is first
    rounded to the ``stored`` decimals the JSON output carries for it."""
    exact = Decimal(repr(round(usd, stored))).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
    return f"${exact:,.{digits}f}" if exact >= 0 else f"-${-exact:,.{digits}f}"


def fmt_usd(usd: float | None, digits: int | None = None) -> str:
    """Dollars: whole dollars from $10 up (``$41``, ``$1,234``), cents below (``$0.58``), ``$1.23M`` from a million."""
    if not _finite(usd):
        return NONE_MARK
    assert usd is not None
    if abs(round(usd, 2)) >= 1e6:
        return f"${round(usd, 2) / 1e6:,.2f}M"
    return _dollars(usd, _usd_digits(usd) if digits is None else digits)


def fmt_usd_range(low: float | None, high: float | None) -> str:
    """``$27–$176``, ``$0.45–$3.20``, ``$0.30–$12``: each end as :func:`fmt_usd` writes it (none from
    $10 up, cents below), so a low end of 30 cents never reads ``$0``."""
    if not (_finite(low) and _finite(high)):
        return "no price"
    assert low is not None and high is not None
    return f"{fmt_usd(low)}{DASH}{fmt_usd(high)}"


def fmt_usd_per_mtok(usd: float | None) -> str:
    """Dollars per million tokens: 2 decimals (``$0.13``), 4 below one cent (``$0.0042``)."""
    if not _finite(usd):
        return NONE_MARK
    assert usd is not None
    return _dollars(usd, 2, 4) if round(usd, 4) >= 0.01 else _dollars(usd, 4, 4)


def fmt_usd_per_hour(usd: float | None) -> str:
    """A price per hour: ``$2.49``."""
    return _dollars(usd, 2, 4) if usd is not None and _finite(usd) else NONE_MARK


def fmt_share(fraction: float | None) -> str:
    """A fraction as a percentage: ``23%``; one decimal below 10% (``4.5%``); a share that is not
    zero but rounds to it reads ``under 0.1%``, never ``0.0%``."""
    if not _finite(fraction):
        return NONE_MARK
    assert fraction is not None
    pct = round(fraction, 4) * 100
    if 0 < fraction < 0.0005:
        return "under 0.1%"
    return f"{pct:.1f}%" if abs(pct) < 10 else f"{pct:,.0f}%"


def fmt_flag(value: bool | None) -> str:
    """``yes``, ``no``, or ``—`` when there is nothing to check against (no deadline, no budget or no price)."""
    return NONE_MARK if value is None else ("yes" if value else "no")


#: How a deadline or budget status reads in a table cell.
STATUS_WORDS = {"meets": "yes", "within": "yes", "likely": "likely", "at risk": "no", "over": "no"}


def fmt_status(status: str | None) -> str:
    """``yes`` (even the range's far end is within the limit), ``likely`` (only the expected value is),
    ``no``, or ``—`` when there is nothing to check against."""
    return NONE_MARK if status is None else STATUS_WORDS.get(status, status)


def fmt_setup(gpu_count: int, parallelism: str) -> str:
    """``1 GPU`` or ``2 × tensor``."""
    return "1 GPU" if gpu_count == 1 else f"{gpu_count} {TIMES} {parallelism}"


def fmt_count(n: float | None) -> str:
    """A parameter, token or request count: ``6.74B``, ``336M``, ``4.2M``, ``100k``, ``512``."""
    if not _finite(n):
        return NONE_MARK
    assert n is not None
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= scale:
            value = n / scale
            return f"{value:.3g}{suffix}" if value < 100 else f"{value:.0f}{suffix}"
    return f"{n:.0f}"


def fmt_gib_unit(gib: float | None, digits: int = 1) -> str:
    """GiB with its unit, for running text and tooltips: ``32.7 GiB`` (``digits=2``: ``32.71 GiB``)."""
    return f"{gib:,.{digits}f} GiB" if _finite(gib) else NONE_MARK


#: Prefixes dropped from GPU names where space is short (in this order; AMD and Intel keep their brand).
NAME_PREFIXES = ("NVIDIA ", "GeForce ", "Tesla ")
MAX_NAME_CHARS = 24


def plain_gpu_name(name: str) -> str:
    """A GPU name without the NVIDIA, GeForce and Tesla prefixes: ``NVIDIA GeForce RTX 4090`` -> ``RTX 4090``."""
    short = name.strip()
    for prefix in NAME_PREFIXES:
        if short.startswith(prefix) and len(short) > len(prefix):
            short = short[len(prefix) :]
    return short


def display_gpu_name(name: str, max_chars: int = MAX_NAME_CHARS) -> str:
    """A GPU name for a narrow column or a chart axis: ``NVIDIA GeForce RTX 4090`` -> ``RTX 4090``.

    Drops the NVIDIA, GeForce and Tesla prefixes (:func:`plain_gpu_name`), then a trailing parenthesis
    when the name is still longer than ``max_chars`` (``B200 (HGX, 180 GB)`` stays; the GH200's
    ``(96 GB HBM3)`` goes), then cuts what is still too long after a whole word, with an
    ellipsis (``GH200 Grace Hopper…``). The full name belongs in a tooltip or a sources list.
    """
    short = plain_gpu_name(name)
    if len(short) > max_chars and short.endswith(")") and " (" in short:
        short = short[: short.rindex(" (")]
    if len(short) > max_chars:
        cut = short[:max_chars]
        cut = cut[: cut.rindex(" ")] if " " in cut else cut
        short = cut.rstrip(" ,;-(") + "\u2026"
    return short


def short_gpu_name(name: str, gpu_count: int = 1, max_chars: int = MAX_NAME_CHARS) -> str:
    """A setup's label: ``"NVIDIA H100 SXM5 80 GB", 2`` -> ``"H100 SXM5 80 GB ×2"`` (the name as in
    :func:`display_gpu_name`, then the count when there is more than one GPU)."""
    short = display_gpu_name(name, max_chars)
    return f"{short} {TIMES}{gpu_count}" if gpu_count > 1 else short
