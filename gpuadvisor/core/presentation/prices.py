"""The price behind each figure: its date, whether it is stale, and where the setup can be rented.

A setup's price is the catalog's range for its GPU (dated by the row's ``price_as_of``), the cheapest
cloud instances of the providers the budget rents from (dated by the instance snapshot), or the
user's own price (no date to check). A price is stale when its date is more than ``stale_months``
calendar months before today (:func:`~gpuadvisor.core.formats.user_catalog.months_before`), the
rule of the catalog editor and the report.

The recommendation's own price is what a reviewer checks first: :func:`pick_price_warnings` says
when it is stale or undated, and :func:`rent_as` names the instance to rent. The window's summary,
the CLI, ``estimate --json`` and the PDF's recommendation use these same sentences.
"""

from __future__ import annotations

import datetime as _dt

from ..estimation.results import Candidate, Estimate
from ..formats.user_catalog import months_before
from ..formatting import TIMES, fmt_usd_per_hour, plain_gpu_name
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


def offer_phrase(offer: InstanceOffer) -> str:
    """``1 × gpu_8x_h100_sxm5 (lambda, 8 GPUs each): $31.92/h on demand, no spot offer; prices of 2026-05-20``."""
    each = f"{offer.gpus_per_instance} GPU{'s' if offer.gpus_per_instance != 1 else ''} each"
    on_demand = (
        f"{fmt_usd_per_hour(offer.usd_per_hour)}/h on demand"
        if offer.usd_per_hour is not None
        else "no on-demand offer"
    )
    spot = (
        f"{fmt_usd_per_hour(offer.spot_usd_per_hour)}/h spot"
        if offer.spot_usd_per_hour is not None
        else "no spot offer"
    )
    return (
        f"{offer.instances} {TIMES} {offer.instance_type} ({offer.provider}, {each}): {on_demand}, {spot}; "
        f"prices of {offer.price_date or 'no date'}"
    )


def rent_as(est: Estimate, c: Candidate | None = None) -> str:
    """Where to rent ``c`` (default: the recommendation), in one sentence ("" without a candidate)."""
    c = c if c is not None else est.recommended
    if c is None:
        return ""
    offers = est.instances_for(c)
    where = (
        "the providers chosen on the Budget page offer"
        if est.scenario.budget.providers not in (None, "any")
        else "the cloud instance snapshot lists"
    )
    replica = " per replica" if c.serving is not None else ""
    if not offers:
        return f"Where to rent it: {where} no {plain_gpu_name(c.gpu.name)} instance."
    text = f"Rent it as {offer_phrase(offers[0])}{replica}."
    if len(offers) > 1:
        text += f" Next: {offer_phrase(offers[1])}."
    return text
