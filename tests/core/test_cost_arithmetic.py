"""The cost arithmetic of a job (``core.estimation.cost``), number by number.

GPU-hours = job hours x GPU count; the low cost pairs the fastest time with the lowest price and
the high cost the slowest time with the highest price; dollars per million tokens divide the
expected cost by the job's tokens. Every expected figure here is worked out by hand from the
module docstring's formulas, so a change to the arithmetic fails a named assertion, not a
wording test by chance.
"""

from dataclasses import replace

import pytest

from gpuadvisor.core.estimation.cost import job_cost, job_tokens, price_range
from gpuadvisor.core.estimation.estimate import estimate
from gpuadvisor.core.estimation.performance import Range
from gpuadvisor.core.formats.scenario import Budget, ModelSource, default_scenario
from gpuadvisor.core.specs.hardware import PriceRange, load_gpu_catalog
from gpuadvisor.core.specs.presets import load_model_catalog
from gpuadvisor.core.specs.workload import Hardware, Workload


@pytest.fixture(scope="module")
def cats():
    return load_gpu_catalog(), load_model_catalog()


@pytest.fixture(scope="module")
def gpu(cats):
    """An H100 with round cloud prices: $2 low, $3 expected, $5 high per GPU-hour."""
    return replace(cats[0].get("h100-sxm"), cloud_usd_per_hour=PriceRange(2.0, 3.0, 5.0))


#: 360 million tokens at 10,000 / 20,000 / 25,000 tokens/s (slow / expected / fast, whole job).
TOKENS = 360e6
SPEED = Range(10_000.0, 20_000.0, 25_000.0)
#: The job's hours at the fast, expected and slow ends: 360e6 / 25,000 / 3600 = 4 h, then 5 h, 10 h.
HOURS = (4.0, 5.0, 10.0)


def _training(**extra):
    return Workload(kind="full_finetune", train_tokens=TOKENS, **extra)


def test_job_hours_are_the_tokens_over_the_speed(gpu):
    cost = job_cost(_training(), Budget(), gpu, 1, SPEED)
    assert cost.job_tokens == TOKENS
    assert tuple(cost.job_hours) == pytest.approx(HOURS, rel=1e-12)


@pytest.mark.parametrize("gpus", [1, 2, 8, 64])
def test_gpu_hours_are_the_job_hours_times_the_gpu_count(gpu, gpus):
    """The speed is the whole job's, over all its GPUs: 8 GPUs for 5 hours are 40 GPU-hours."""
    cost = job_cost(_training(), Budget(), gpu, gpus, SPEED)
    assert tuple(cost.job_hours) == pytest.approx(HOURS, rel=1e-12)
    assert tuple(cost.gpu_hours) == pytest.approx(tuple(h * gpus for h in HOURS), rel=1e-12)


def test_each_end_of_the_cost_range_pairs_time_and_price(gpu):
    """8 GPUs: 32 / 40 / 80 GPU-hours at $2 / $3 / $5 are $64, $120 and $400."""
    cost = job_cost(_training(), Budget(price="expected"), gpu, 8, SPEED)
    assert tuple(cost.cost_usd) == pytest.approx((64.0, 120.0, 400.0), rel=1e-12)
    assert cost.usd_per_hour == pytest.approx(8 * 3.0)


@pytest.mark.parametrize(
    "price, prices",
    [
        # The chosen catalog price is the expected figure; the range keeps the catalog's ends.
        ("low", (2.0, 2.0, 5.0)),
        ("high", (2.0, 5.0, 5.0)),
        # A price of the user's own is one figure: both ends move with the time alone.
        (4.0, (4.0, 4.0, 4.0)),
    ],
)
def test_the_price_chosen_sets_the_expected_cost(gpu, price, prices):
    budget = Budget(price=price)
    assert tuple(price_range(gpu, budget)) == prices
    cost = job_cost(_training(), budget, gpu, 8, SPEED)
    gpu_hours = (32.0, 40.0, 80.0)
    assert tuple(cost.cost_usd) == pytest.approx(tuple(h * p for h, p in zip(gpu_hours, prices)), rel=1e-12)
    assert cost.usd_per_hour == pytest.approx(8 * prices[1])


def test_dollars_per_million_tokens(gpu):
    """$120 expected for 360 million tokens: $0.3333 per million."""
    cost = job_cost(_training(), Budget(), gpu, 8, SPEED)
    assert cost.usd_per_million_tokens == pytest.approx(120.0 / 360.0, rel=1e-12)
    # Twice the GPUs at the same job speed: twice the GPU-hours, twice the cost per token.
    double = job_cost(_training(), Budget(), gpu, 16, SPEED)
    assert double.usd_per_million_tokens == pytest.approx(2 * cost.usd_per_million_tokens, rel=1e-12)


def test_an_inference_job_is_its_requests_output_tokens(gpu):
    """2,000 requests of 500 output tokens: a million tokens, so $ per million is the whole cost."""
    w = Workload(kind="inference", requests=2000, output_tokens=500)
    assert job_tokens(w) == 1e6
    cost = job_cost(w, Budget(), gpu, 2, Range(50.0, 100.0, 200.0))
    # 1e6 tokens at 200 / 100 / 50 tokens/s: 1.389 / 2.778 / 5.556 hours, twice that in GPU-hours.
    hours = (1e6 / 200 / 3600, 1e6 / 100 / 3600, 1e6 / 50 / 3600)
    assert tuple(cost.gpu_hours) == pytest.approx(tuple(2 * h for h in hours), rel=1e-12)
    assert cost.usd_per_million_tokens == pytest.approx(cost.cost_usd.expected, rel=1e-12)
    assert cost.cost_usd.expected == pytest.approx(2 * hours[1] * 3.0, rel=1e-12)


def test_training_tokens_default_to_the_dataset_times_the_epochs():
    assert job_tokens(Workload(kind="lora", dataset_tokens=5e6, epochs=3)) == 15e6
    assert job_tokens(Workload(kind="lora", dataset_tokens=5e6, epochs=3, train_tokens=7e6)) == 7e6


def test_a_gpu_without_a_price_has_no_cost_but_still_gpu_hours(gpu):
    unpriced = replace(gpu, cloud_usd_per_hour=None)
    cost = job_cost(_training(), Budget(max_total_usd=100.0), unpriced, 4, SPEED)
    assert cost.cost_usd is None and cost.usd_per_million_tokens is None and cost.usd_per_hour is None
    assert tuple(cost.gpu_hours) == pytest.approx(tuple(4 * h for h in HOURS), rel=1e-12)
    assert cost.unpriced_under_budget and not cost.workable


@pytest.mark.parametrize(
    "limit, status",
    [
        (400.0, "within"),  # even the high end ($400) is within it
        (399.0, "likely"),  # the expected $120 is, the high end is not
        (119.0, "over"),  # not even the expected cost
    ],
)
def test_the_budget_status_reads_both_ends_of_the_cost(gpu, limit, status):
    cost = job_cost(_training(), Budget(max_total_usd=limit), gpu, 8, SPEED)
    assert cost.budget_status == status and cost.within_budget == (status == "within")


@pytest.mark.parametrize("deadline, status", [(10.0, "meets"), (9.9, "likely"), (4.9, "at risk")])
def test_the_deadline_reads_the_job_hours_not_the_gpu_hours(gpu, deadline, status):
    """8 GPUs take 5 hours (expected) and 10 at the slow end, although they use 40 and 80 GPU-hours."""
    cost = job_cost(_training(), Budget(deadline_hours=deadline), gpu, 8, SPEED)
    assert cost.deadline_status == status


def test_every_candidate_of_an_estimate_follows_the_arithmetic(cats):
    """Through estimate(): each candidate's GPU-hours are its hours times its GPU count, its cost
    each end of GPU-hours x price, and its $ per million tokens the expected cost over the tokens."""
    s = default_scenario()
    s = replace(
        s,
        model=ModelSource(preset="llama-3.1-8b"),
        workload=replace(s.workload, kind="full_finetune", train_tokens=50e6),
        hardware=Hardware(gpu_count_max=8),
    )
    est = estimate(s, *cats, with_advice=False)
    priced = [c for c in est.candidates if c.cost is not None and c.cost.cost_usd is not None]
    assert {c.gpu_count for c in priced} >= {1, 2, 4, 8}
    for c in priced:
        cost, n = c.cost, c.gpu_count
        speed = c.performance.tokens_per_s
        assert cost.job_hours.expected == pytest.approx(50e6 / speed.expected / 3600, rel=1e-9)
        assert tuple(cost.gpu_hours) == pytest.approx(tuple(h * n for h in cost.job_hours), rel=1e-12)
        prices = price_range(c.gpu, s.budget)
        assert tuple(cost.cost_usd) == pytest.approx(
            tuple(h * p for h, p in zip(cost.gpu_hours, prices)), rel=1e-12
        )
        assert cost.usd_per_million_tokens == pytest.approx(cost.cost_usd.expected / 50e6 * 1e6, rel=1e-12)
        assert cost.usd_per_hour == pytest.approx(prices.expected * n, rel=1e-12)
