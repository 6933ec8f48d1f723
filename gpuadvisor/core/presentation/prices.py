"""The price behind each figure: its date, whether it is stale, and where the setup can be rented.

A setup's price is the catalog's range for its GPU (dated by the row's ``price_as_of``), the cheapest
cloud instances of the providers the budget rents from (dated by the instance snapshot), or the
user's own price (no date to check). A price is stale when its date is more than ``stale_months``
calendar months before today (:func:`~gpuadvisor.core.formats.user_catalog.months_before`), the
rule of the catalog editor and the report.

The recommendation's own price is what a reviewer checks first: :func:`pick_price_warnings` says
when it is stale or undated, and :func:`rent_as` names the instance to rent. The window's summary,
the CLI, ``estimate --json`` and the PDF's recommendation use these same sentences.

Renting a setup as ``k`` whole instances of an offer (:func:`rented_costs`) costs, at the offer's
price ``p`` per hour for the ``k`` instances (on demand, and spot where offered)::

    a job:      cost = job hours x p                (low / expected / high over the job-time range)
    a service:  cost per month = replicas x p x 730 h   (each replica rented as the offer)

which is what a reviewer compares with the setup's own cost. That cost is at the catalog's price
per GPU-hour unless the budget rents from providers (``budget.providers``); an offer whose price is
the one the cost was worked out at says so ("as costed above") instead of giving the same figure
twice, and when no offer named is, one sentence says what price the cost above is at.
"""

from __future__ import annotations

import datetime as _dt
import math
from typing import Any, NamedTuple

from ..estimation.cost import HOURS_PER_MONTH
from ..estimation.performance import Range
from ..estimation.results import Candidate, Estimate
from ..formats.user_catalog import months_before
from ..formatting import TIMES, fmt_hours, fmt_usd, fmt_usd_per_hour, plain_gpu_name
from ..specs.instances import InstanceOffer

DEFAULT_STALE_MONTHS = 6


def priced(c: Candidate) -> bool:
    """Whether the candidate's cost has a price (a service's fleet or a job)."""
    if c.serving is not None:
        return c.serving.usd_per_hour is not None
    return c.cost is not None and c.cost.cost_usd is not None


def price_date(est: Estimate, c: Candidate) -> str | None:
    """The date of the price ``c`` is costed at ("" when undated; None for the user's own price or
    no price at all)."""
    b = est.scenario.budget
    if not isinstance(b.price, str) or not priced(c):
        return None
    if b.providers is not None:
        offers = est.instances_for(c)
        return offers[0].price_date if offers else None
    return c.gpu.price_as_of or ""


def price_stale(
    est: Estimate, c: Candidate, today: _dt.date, stale_months: int = DEFAULT_STALE_MONTHS
) -> bool | None:
    """Whether ``c``'s price is older than ``stale_months`` (undated counts as stale); None when it
    has no dated price (the user's own, or none)."""
    day = price_date(est, c)
    if day is None:
        return None
    try:
        return _dt.date.fromisoformat(day) < months_before(today, stale_months)
    except ValueError:
        return True


def pick_price_warnings(
    est: Estimate, today: _dt.date, stale_months: int = DEFAULT_STALE_MONTHS
) -> list[str]:
    """The warning about the recommended setup's own price, when it is stale or undated ([] else)."""
    rec = est.recommended
    if rec is None or not price_stale(est, rec, today, stale_months):
        return []
    day = price_date(est, rec)
    name = plain_gpu_name(rec.gpu.name)
    what = "cloud instance price" if est.scenario.budget.providers is not None else "price"
    when = f"dated {day}, older than {stale_months} months" if day else "undated"
    return [
        f"Stale price at the recommendation: the {name}'s {what} is {when}; get a current quote "
        "before ordering (or import a newer price list)."
    ]


class RentedCost(NamedTuple):
    """What a setup costs rented as one instance offer (see the module docstring): the whole job, or
    for a service the whole fleet for a month, at the offer's on-demand and spot prices."""

    offer: InstanceOffer
    #: The job's time, its 80% range (None for a service, and for a setup without a job time).
    job_hours: Range | None
    #: A service's replicas, each rented as the offer (None for a job).
    replicas: int | None
    #: At the on-demand price: the job, or a month of the fleet (None: no on-demand offer or no time).
    usd: Range | None
    #: The same at the spot price (None: no spot offer or no time).
    spot_usd: Range | None
    #: Which of the offer's prices the setup's own cost was worked out at: "on demand", "spot" or "".
    costed_at: str = ""

    @property
    def per_month(self) -> bool:
        return self.replicas is not None

    def to_dict(self) -> dict[str, Any]:
        """The offer's fields and its cost: ``job_cost_usd`` / ``spot_job_cost_usd`` for a job,
        ``fleet_usd_per_month`` / ``spot_fleet_usd_per_month`` for a service ({low, expected, high}
        or null), and ``costed_at``."""
        key = "fleet_usd_per_month" if self.per_month else "job_cost_usd"
        return {
            **self.offer.to_dict(),
            key: None if self.usd is None else self.usd.to_dict(2),
            f"spot_{key}": None if self.spot_usd is None else self.spot_usd.to_dict(2),
            "costed_at": self.costed_at or None,
        }


def _same_price(a: float | None, b: float | None) -> bool:
    return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-6)


def _own_usd_per_hour(c: Candidate) -> float | None:
    """What the setup's own cost pays per hour for one replica (a job: the whole setup)."""
    if c.serving is not None:
        s = c.serving
        return None if s.usd_per_hour is None or not s.replicas else s.usd_per_hour / s.replicas
    return c.cost.usd_per_hour if c.cost is not None and c.cost.cost_usd is not None else None


def rented_costs(est: Estimate, c: Candidate) -> tuple[RentedCost, ...]:
    """Every offer that rents ``c`` (:meth:`Estimate.instances_for`, cheapest first) with what the
    job, or a month of the service, costs at its prices (see the module docstring)."""
    own = _own_usd_per_hour(c)
    hours: Range | None = None
    replicas: int | None = None
    scale: Range | None = None  # hours the price is paid for: the job's time, or a month of the fleet
    if c.serving is not None:
        s = c.serving
        replicas = s.replicas
        lo, hi = s.replicas_range or (s.replicas, s.replicas)
        scale = Range(lo * HOURS_PER_MONTH, s.replicas * HOURS_PER_MONTH, hi * HOURS_PER_MONTH)
    elif c.cost is not None:
        hours = scale = c.cost.job_hours
    out = []
    for o in est.instances_for(c):
        costed = (
            "on demand"
            if _same_price(own, o.usd_per_hour)
            else "spot"
            if _same_price(own, o.spot_usd_per_hour)
            else ""
        )
        out.append(
            RentedCost(
                o,
                hours,
                replicas,
                None if scale is None or o.usd_per_hour is None else scale.scaled(o.usd_per_hour),
                None if scale is None or o.spot_usd_per_hour is None else scale.scaled(o.spot_usd_per_hour),
                costed,
            )
        )
    return tuple(out)


def _price_and_cost(price: float | None, kind: str, cost: Range | None, r: RentedCost, first: bool) -> str:
    """``$48.00/h on demand (this 2.2 h job about $106)``; ``(as costed above)`` when the setup's
    own cost is at this price; ``no spot offer``."""
    if price is None:
        return f"no {kind} offer"
    text = f"{fmt_usd_per_hour(price)}/h {kind}"
    if r.costed_at == kind:
        return text + " (as costed above)"
    if cost is None:
        return text
    month = " a month" if r.per_month else ""
    if not first:
        return text + f" (about {fmt_usd(cost.expected)}{month})"
    if r.per_month:
        n = r.replicas or 0
        fleet = f"{n} replica{'s' if n != 1 else ''} about " if n > 1 else "about "
        return text + f" ({fleet}{fmt_usd(cost.expected)}{month})"
    assert r.job_hours is not None
    return text + f" (this {fmt_hours(r.job_hours.expected)} job about {fmt_usd(cost.expected)})"


def rented_phrase(r: RentedCost, lead: bool = True) -> str:
    """``1 × Standard_ND96isr_MI300X_v5 (azure, 8 GPUs each): $48.00/h on demand (this 2.2 h job
    about $106), $8.87/h spot (about $20); prices of 2026-05-20``: the offer with what the setup
    costs at each of its prices. In the ``lead`` offer the first figure says what it is for (the
    job and its time, or the replicas), every later one just "about"."""
    o = r.offer
    each = f"{o.gpus_per_instance} GPU{'s' if o.gpus_per_instance != 1 else ''} each"
    on_demand = _price_and_cost(o.usd_per_hour, "on demand", r.usd, r, lead)
    said = o.usd_per_hour is not None and r.usd is not None and r.costed_at != "on demand"
    spot = _price_and_cost(o.spot_usd_per_hour, "spot", r.spot_usd, r, lead and not said)
    return (
        f"{o.instances} {TIMES} {o.instance_type} ({o.provider}, {each}): {on_demand}, {spot}; "
        f"prices of {o.price_date or 'no date'}"
    )


def _cost_basis(est: Estimate, c: Candidate) -> str:
    """``The cost above is at the catalog's expected price, $2.00 per GPU-hour.`` ("" without a
    priced cost)."""
    own = _own_usd_per_hour(c)
    if own is None:
        return ""
    gpus = c.gpu_count
    b = est.scenario.budget
    if not isinstance(b.price, str):
        what = "your own price"
    elif b.providers is not None:
        what = f"the {b.price} instance price of the providers chosen"
    else:
        what = f"the catalog's {b.price} price"
    return f" The cost above is at {what}, {fmt_usd_per_hour(own / gpus)} per GPU-hour."


def rent_as(est: Estimate, c: Candidate | None = None) -> str:
    """Where to rent ``c`` (default: the recommendation) and what it costs there, in one or two
    sentences ("" without a candidate, and in a session on the machine the user owns: nothing is to
    be rented there); see the module docstring."""
    c = c if c is not None else est.recommended
    if c is None or est.session:
        return ""
    rented = rented_costs(est, c)
    where = (
        "the providers chosen on the Budget page offer"
        if est.scenario.budget.providers not in (None, "any")
        else "the cloud instance snapshot lists"
    )
    if not rented:
        return f"Where to rent it: {where} no {plain_gpu_name(c.gpu.name)} instance."
    verb = "Rent each replica as" if c.serving is not None else "Rent it as"
    text = f"{verb} {rented_phrase(rented[0])}."
    if len(rented) > 1:
        text += f" Next: {rented_phrase(rented[1], lead=False)}."
    if not any(r.costed_at for r in rented[:2]):
        text += _cost_basis(est, c)
    return text
