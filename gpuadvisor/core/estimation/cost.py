"""Job time and cost: renting versus buying.

Job size: training trains ``train_tokens`` (or ``dataset_tokens x epochs``); inference serves
``requests`` requests of ``output_tokens`` each. Time = tokens / aggregate tokens/s, as a
low / expected / high range from the efficiency spread; GPU-hours = time x GPU count.

Renting: cost = GPU-hours x price per GPU-hour (the catalog's low / expected / high cloud price,
or the user's own); the low cost pairs the fastest time with the lowest price, the high cost
the slowest time with the highest price. Cost per million tokens divides by the job's tokens.

Buying (per GPU, over ``ownership_months`` at ``utilization``)::

    owned cost per used hour = purchase / (months x 730 h x utilization) + power
    power per hour           = TDP x load (0.7 of TDP on average under load) x PUE x electricity price

Break-even utilization = purchase / ((rent - power) x months x 730): above it, owning is cheaper
than renting the same hours. Resale value is ignored (conservative for buying).

Without a deadline a job is planned within ``budget.horizon_days`` (90 days by default), judged as a
deadline is (:func:`limit_status`): a setup "within" it finishes within the horizon even at the slow
end of its job-time range (the far end of the 80% range), one "likely" within it does at its expected
time only, and one "beyond" it does not even then, which is no plan a person would run: the decision
passes it over like a setup that misses a deadline.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..formats.scenario import Budget
from ..specs.hardware import GpuSpec
from ..specs.workload import Workload
from ..vocabulary import BudgetStatus, HorizonStatus, TargetStatus
from .performance import Range

HOURS_PER_MONTH = 730.0
LOAD_FACTOR = 0.7  # average board power under load as a share of TDP
DEFAULT_TRAIN_TOKENS = 100e6
DEFAULT_REQUESTS = 10_000


class BuyVsRent(NamedTuple):
    purchase_usd: float
    power_usd_per_hour: float
    owned_usd_per_hour: float  # per GPU, per hour of use, at the user's utilization
    rent_usd_per_hour: float
    break_even_utilization: float | None  # None: renting is cheaper than the power bill alone
    buy_is_cheaper: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "purchase_usd": round(self.purchase_usd, 2),
            "power_usd_per_hour": round(self.power_usd_per_hour, 4),
            "owned_usd_per_gpu_hour": round(self.owned_usd_per_hour, 4),
            "rent_usd_per_gpu_hour": round(self.rent_usd_per_hour, 4),
            "break_even_utilization": None
            if self.break_even_utilization is None
            else round(self.break_even_utilization, 4),
            "buy_is_cheaper": self.buy_is_cheaper,
        }


class CostEstimate(NamedTuple):
    job_tokens: float
    job_hours: Range
    gpu_hours: Range
    cost_usd: Range | None  # None when no price is known for this GPU
    usd_per_hour: float | None  # whole candidate (all its GPUs), at the chosen price
    usd_per_million_tokens: float | None
    meets_deadline: bool | None  # True only when even the slow end of the range meets it
    within_budget: bool | None  # True only when even the expensive end of the range stays within it
    buy: BuyVsRent | None
    deadline_status: str | None = None  # "meets", "likely" or "at risk" (None: no deadline)
    budget_status: str | None = None  # "within", "likely" or "over" (None: no budget or no price)
    unpriced_under_budget: bool = False  # a money limit is set but this GPU has no price to check it
    #: Without a deadline, as a deadline is judged: "within" when even the slow end of the job-time
    #: range is within the planning horizon, "likely" when only the expected time is, "beyond" when
    #: that is not either (None with a deadline, and for a service).
    horizon_status: str | None = None

    @property
    def workable(self) -> bool:
        """Not ruled out by the deadline, the horizon or the budget (a "likely" setup stays in, with
        a caveat)."""
        return (
            self.deadline_status != "at risk"
            and self.budget_status != "over"
            and not self.unpriced_under_budget
            and self.horizon_status != "beyond"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "job_tokens": self.job_tokens,
            "job_hours": self.job_hours.to_dict(),
            "gpu_hours": self.gpu_hours.to_dict(),
            "cost_usd": None if self.cost_usd is None else self.cost_usd.to_dict(2),
            "usd_per_hour": None if self.usd_per_hour is None else round(self.usd_per_hour, 4),
            "usd_per_million_tokens": None
            if self.usd_per_million_tokens is None
            else round(self.usd_per_million_tokens, 4),
            "meets_deadline": self.meets_deadline,
            "within_budget": self.within_budget,
            "deadline": self.deadline_status,
            "budget": self.budget_status,
            "horizon": self.horizon_status,
            "buy_vs_rent": None if self.buy is None else self.buy.to_dict(),
        }


#: The words of :func:`limit_status`, in its order (an enum iterated once, not per setup).
_TARGET_WORDS, _HORIZON_WORDS, _BUDGET_WORDS = tuple(TargetStatus), tuple(HorizonStatus), tuple(BudgetStatus)


def job_tokens(workload: Workload) -> float:
    """Tokens the job processes: trained tokens, or output tokens served."""
    if workload.is_training:
        if workload.train_tokens:
            return workload.train_tokens
        if workload.dataset_tokens:
            return workload.dataset_tokens * workload.epochs
        return DEFAULT_TRAIN_TOKENS
    return (workload.requests or DEFAULT_REQUESTS) * workload.output_tokens


def price_range(gpu: GpuSpec, budget: Budget) -> Range | None:
    """Price per GPU-hour (low, expected, high): the user's number, or the catalog's range."""
    if not isinstance(budget.price, str):
        return Range(budget.price, budget.price, budget.price)
    cloud = gpu.cloud_usd_per_hour
    if cloud is None:
        return None
    chosen = {"low": cloud.low, "expected": cloud.expected, "high": cloud.high}[budget.price]
    return Range(min(cloud.low, chosen), chosen, max(cloud.high, chosen))


def buy_vs_rent(gpu: GpuSpec, budget: Budget, rent_per_hour: float | None) -> BuyVsRent | None:
    """Owning one GPU against renting it, per hour of use (see the module docstring)."""
    pair = gpu.purchase_used_usd if budget.purchase == "used" else gpu.purchase_new_usd
    if pair is None or rent_per_hour is None or gpu.tdp_w is None:  # no power figure: no power bill
        return None
    purchase = (pair[0] + pair[1]) / 2
    power = gpu.tdp_w / 1000 * LOAD_FACTOR * budget.pue * budget.electricity_usd_per_kwh
    hours = budget.ownership_months * HOURS_PER_MONTH
    owned = purchase / (hours * budget.utilization) + power
    margin = rent_per_hour - power
    break_even = purchase / (margin * hours) if margin > 0 else None
    return BuyVsRent(
        purchase_usd=purchase,
        power_usd_per_hour=power,
        owned_usd_per_hour=owned,
        rent_usd_per_hour=rent_per_hour,
        break_even_utilization=break_even,
        buy_is_cheaper=owned < rent_per_hour,
    )


def job_cost(
    workload: Workload,
    budget: Budget,
    gpu: GpuSpec,
    gpu_count: int,
    tokens_per_s: Range,
    prices: Range | None | bool = False,
    buy: BuyVsRent | None | bool = False,
    tokens: float | None = None,
) -> CostEstimate:
    """Time, GPU-hours and cost of the job on one candidate.

    ``prices`` and ``buy`` depend only on the GPU and the budget: callers comparing many setups
    of the same GPU pass them in (from :func:`price_range` and :func:`buy_vs_rent`) to avoid
    recomputing them; the default ``False`` computes them here. ``tokens`` is
    :func:`job_tokens` of the workload, likewise.
    """
    if tokens is None:
        tokens = job_tokens(workload)
    hours = Range(
        tokens / tokens_per_s.high / 3600,
        tokens / tokens_per_s.expected / 3600,
        tokens / tokens_per_s.low / 3600,
    )
    gpu_hours = hours.scaled(gpu_count)
    if prices is False:
        prices = price_range(gpu, budget)
    assert prices is None or isinstance(prices, Range)
    cost = per_million = per_hour = None
    if prices is not None:
        cost = Range(
            gpu_hours.low * prices.low, gpu_hours.expected * prices.expected, gpu_hours.high * prices.high
        )
        per_million = cost.expected / tokens * 1e6
        per_hour = prices.expected * gpu_count
    deadline = limit_status(hours, budget.deadline_hours, _TARGET_WORDS)
    horizon = budget.horizon_hours if workload.serving is None else None  # a service runs on, not to an end
    beyond = limit_status(hours, horizon, _HORIZON_WORDS)
    within = budget_st = None
    if budget.max_total_usd is not None or budget.max_usd_per_hour is not None:
        if cost is not None and per_hour is not None:
            total = limit_status(cost, budget.max_total_usd, _BUDGET_WORDS)
            hourly = (
                None
                if budget.max_usd_per_hour is None
                else (BudgetStatus.WITHIN if per_hour <= budget.max_usd_per_hour else BudgetStatus.OVER)
            )
            statuses = [s for s in (total, hourly) if s is not None]
            budget_st = "over" if "over" in statuses else "likely" if "likely" in statuses else "within"
            within = budget_st == "within"
    unpriced = (budget.max_total_usd is not None or budget.max_usd_per_hour is not None) and cost is None
    if buy is False:
        buy = buy_vs_rent(gpu, budget, prices.expected if prices else None)
    assert buy is None or isinstance(buy, BuyVsRent)
    return CostEstimate(
        job_tokens=tokens,
        job_hours=hours,
        gpu_hours=gpu_hours,
        cost_usd=cost,
        usd_per_hour=per_hour,
        usd_per_million_tokens=per_million,
        meets_deadline=None if deadline is None else deadline == "meets",
        within_budget=within,
        buy=buy,
        deadline_status=deadline,
        budget_status=budget_st,
        unpriced_under_budget=unpriced,
        horizon_status=beyond,
    )


def limit_status(value: Range, limit: float | None, words: tuple[str, ...]) -> str | None:
    """Where a range stands against an upper limit: ``words[0]`` when even its high end is within it,
    ``words[1]`` ("likely") when only the expected value is, ``words[2]`` when the expected value is not."""
    if limit is None:
        return None
    if value.high <= limit:
        return words[0]
    return words[1] if value.expected <= limit else words[2]
