"""Numbers as people type them, one rule for every field: the window's fields and scenario files.

A field has a :class:`Quantity` (what it counts) and a :class:`NumberRule` (its quantity, range and
whether it is whole). :meth:`NumberRule.parse` reads text in the ways people write that quantity::

    counts, tokens, parameters   7e9, 7B, 1.5M, 100k, 8k, 2,000,000       (k 1e3, M 1e6, B/G 1e9, T 1e12)
    money (USD)                  $50, 50 USD, $1.5k, 2.10
    hours                        2h, 90 min, 3 days, 1 week, 36            (a bare number is hours)
    seconds, milliseconds        1 s, 500 ms, 0.2 s                        (a bare number is the field's unit)
    months                       36, 3 years, 36 months
    memory (GiB)                 24 GB, 24 GiB, 512 MB, 1 TB, 24           (a bare number is GiB)
    bandwidth (GB/s)             89.6 GB/s, 1.2 TB/s, 89.6
    percent                      60%, 60
    plain numbers                0.15, 1.3

Memory sizes follow the JEDEC convention RAM and VRAM are sold in (JESD100B.01: a "GB" of memory is
2^30 bytes), so "24 GB" in a memory field is 24 GiB, the unit the field holds; bandwidths are decimal
(GB/s = 1e9 bytes/s) as datasheets state them. A value outside the field's range is refused with the
range, never cut to it; a unit of another quantity ("$50" where tokens are asked) is refused by name.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from enum import StrEnum


class Quantity(StrEnum):
    """What a number field counts (the units it accepts and how its range reads)."""

    COUNT = "count"
    TOKENS = "tokens"
    PARAMETERS = "parameters"
    MONEY = "money"
    SECONDS = "seconds"
    MILLISECONDS = "milliseconds"
    HOURS = "hours"
    MONTHS = "months"
    MEMORY = "memory"
    BANDWIDTH = "bandwidth"
    PERCENT = "percent"
    PLAIN = "number"


_COUNT_SUFFIX = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}
#: Units by quantity: the spelling (lower case, spaces removed) -> factor to the field's unit.
_UNITS: dict[Quantity, dict[str, float]] = {
    Quantity.MONEY: {"$": 1.0, "usd": 1.0, "dollars": 1.0, "dollar": 1.0},
    Quantity.HOURS: {
        "h": 1.0,
        "hr": 1.0,
        "hrs": 1.0,
        "hour": 1.0,
        "hours": 1.0,
        "min": 1 / 60,
        "mins": 1 / 60,
        "minute": 1 / 60,
        "minutes": 1 / 60,
        "d": 24.0,
        "day": 24.0,
        "days": 24.0,
        "w": 168.0,
        "week": 168.0,
        "weeks": 168.0,
    },
    Quantity.SECONDS: {"s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0, "ms": 1e-3},
    Quantity.MILLISECONDS: {"ms": 1.0, "s": 1000.0, "sec": 1000.0, "second": 1000.0, "seconds": 1000.0},
    Quantity.MONTHS: {
        "mo": 1.0,
        "month": 1.0,
        "months": 1.0,
        "y": 12.0,
        "yr": 12.0,
        "yrs": 12.0,
        "year": 12.0,
        "years": 12.0,
    },
    Quantity.MEMORY: {
        "gb": 1.0,
        "gib": 1.0,
        "g": 1.0,
        "mb": 1 / 1024,
        "mib": 1 / 1024,
        "tb": 1024.0,
        "tib": 1024.0,
    },
    Quantity.BANDWIDTH: {"gb/s": 1.0, "gbps": 1.0, "gb/sec": 1.0, "tb/s": 1000.0, "mb/s": 1e-3},
    Quantity.PERCENT: {"%": 1.0, "percent": 1.0},
    Quantity.TOKENS: {"tokens": 1.0, "token": 1.0, "tok": 1.0},
}
#: How each quantity is named in a message about a unit that does not belong to it.
_NAMES = {
    Quantity.COUNT: "a number",
    Quantity.TOKENS: "a number of tokens",
    Quantity.PARAMETERS: "a parameter count",
    Quantity.MONEY: "an amount in USD",
    Quantity.SECONDS: "a time in seconds",
    Quantity.MILLISECONDS: "a time in milliseconds",
    Quantity.HOURS: "a time in hours",
    Quantity.MONTHS: "a number of months",
    Quantity.MEMORY: "a memory size in GiB",
    Quantity.BANDWIDTH: "a bandwidth in GB/s",
    Quantity.PERCENT: "a percentage",
    Quantity.PLAIN: "a number",
}
_EXAMPLES = {
    Quantity.COUNT: "10000, 10k",
    Quantity.TOKENS: "8192, 8k, 1.5M",
    Quantity.PARAMETERS: "7e9, 70B",
    Quantity.MONEY: "50, $50, $1.5k",
    Quantity.SECONDS: "1, 1 s, 500 ms",
    Quantity.MILLISECONDS: "50, 50 ms, 0.2 s",
    Quantity.HOURS: "36, 2h, 90 min, 3 days",
    Quantity.MONTHS: "36, 3 years",
    Quantity.MEMORY: "24, 24 GB, 512 MB",
    Quantity.BANDWIDTH: "89.6, 89.6 GB/s",
    Quantity.PERCENT: "60, 60%",
    Quantity.PLAIN: "0.15, 1.3",
}
_NUMBER = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?)(.*)$")
#: Quantities that take the k/M/B/T multipliers of counts (money too: "$1.5k").
_SCALED = (Quantity.COUNT, Quantity.TOKENS, Quantity.PARAMETERS, Quantity.MONEY, Quantity.PLAIN)


def _unit_of(unit: str) -> Quantity | None:
    """The quantity a unit spelling belongs to (for the message when it is in the wrong field)."""
    for quantity, units in _UNITS.items():
        if unit in units:
            return quantity
    return None


def parse_number(text: str, quantity: Quantity = Quantity.COUNT) -> float:
    """``text`` as a number of ``quantity``'s unit; ``ValueError`` with a one-line message otherwise.

    Spaces, commas (thousands) and underscores are ignored; a count suffix (k, M, B, T) multiplies;
    a unit converts to the field's (see the module docstring)."""
    raw = text.strip()
    if not raw:
        raise ValueError("enter a number")
    compact = raw.replace(",", "").replace("_", "").replace(" ", "").lower()
    if compact.startswith("$"):  # "$50" is written before the number; read it as a unit after
        compact = compact[1:] + "$"
    match = _NUMBER.match(compact)
    if match is None:
        raise ValueError(f"'{raw}' is not a number (examples: {_EXAMPLES[quantity]})")
    number, rest = float(match.group(1)), match.group(2)
    factor = 1.0
    units = _UNITS.get(quantity, {})
    if rest and quantity in _SCALED and rest[0] in _COUNT_SUFFIX and (not rest[1:] or rest[1:] in units):
        factor, rest = _COUNT_SUFFIX[rest[0]], rest[1:]
    if rest:
        if rest in units:
            factor *= units[rest]
        else:
            other = _unit_of(rest)
            if other is not None and other is not quantity:
                raise ValueError(f"'{raw}' is {_NAMES[other]}; this field takes {_NAMES[quantity]}")
            raise ValueError(f"'{raw}' is not {_NAMES[quantity]} (examples: {_EXAMPLES[quantity]})")
    value = number * factor
    if not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


def _show(value: float) -> str:
    """A range end as people read it: 10,000,000 or 0.0001."""
    if float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:,.4g}" if abs(value) >= 1e15 else f"{value:g}"


@dataclass(frozen=True, slots=True)
class NumberRule:
    """One field's rule: its quantity, the smallest and largest value it takes (inclusive unless
    ``above``: then strictly above ``minimum``) and whether the value is whole."""

    quantity: Quantity = Quantity.COUNT
    minimum: float | None = None
    maximum: float | None = None
    integer: bool = False
    above: bool = False  # the minimum itself is not allowed (a price > 0)
    #: Why the range ends where it does, said with a value out of range ("a hundred years").
    why: str = ""

    def range_text(self) -> str:
        """``between 1 and 10,000,000``, ``above 0``, ``at least 1`` or ``at most 240``."""
        lo, hi = self.minimum, self.maximum
        if lo is not None and hi is not None and not self.above:
            return f"between {_show(lo)} and {_show(hi)}"
        parts = []
        if lo is not None:
            parts.append(f"{'above' if self.above else 'at least'} {_show(lo)}")
        if hi is not None:
            parts.append(f"at most {_show(hi)}")
        return " and ".join(parts) or "any number"

    def problem(self, value: object) -> str | None:
        """What is wrong with ``value`` ("must be between 1 and 10,000,000"), or None when it is a
        number in range (a whole one where the rule asks)."""
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return f"must be a number {self.range_text()}"
        if self.integer and value != int(value):
            return f"must be a whole number {self.range_text()}"
        lo, hi = self.minimum, self.maximum
        if (lo is not None and (value < lo or (self.above and value == lo))) or (
            hi is not None and value > hi
        ):
            return f"must be {self.range_text()}" + (f" ({self.why})" if self.why else "")
        return None

    def check(self, value: object) -> float:
        """``value`` if it is a number in range (a whole one where the rule asks); ``ValueError``
        naming the range and the value otherwise."""
        problem = self.problem(value)
        if problem is not None:
            got = (
                _show(value)
                if isinstance(value, (int, float)) and not isinstance(value, bool)
                else repr(value)
            )
            raise ValueError(f"{problem} (got {got})")
        assert isinstance(value, (int, float))
        return int(value) if self.integer else float(value)

    def parse(self, value: str | float) -> float:
        """Text or a number, read with :func:`parse_number` and checked with :meth:`check`."""
        number = parse_number(value, self.quantity) if isinstance(value, str) else value
        return self.check(number)


def quantity_name(quantity: Quantity) -> str:
    """How a field of this quantity is described: ``a number of tokens``."""
    return _NAMES[quantity]


def quantity_examples(quantity: Quantity) -> str:
    """What people may type in such a field: ``8192, 8k, 1.5M``."""
    return _EXAMPLES[quantity]
