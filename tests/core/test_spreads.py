"""The 80% ranges' calibration (``validation.spreads``): split-conformal order statistics of the
held-out ratios measured / estimate, kept to two decimals without losing the ratios that set them."""

import math
import random

import pytest

from gpuadvisor.validation.spreads import spread_from_ratios


def test_the_order_statistics_set_the_bounds():
    # Nine ratios: the floor(10 x 0.1) = 1st and the ceil(10 x 0.9) = 9th smallest.
    ratios = [0.5, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.6]
    assert spread_from_ratios(ratios, 0.1, 0.9) == (0.5, pytest.approx(0.6))


def test_rounding_keeps_the_ratios_that_set_the_bounds_inside():
    # 1 - 0.5555 = 0.4445 rounds to 0.44 at the nearest hundredth, which would leave 0.5555 out.
    ratios = [0.5555, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.6666]
    low, high = spread_from_ratios(ratios, 0.1, 0.9)
    assert (low, high) == (0.45, 0.67)
    assert 1.0 - low <= min(ratios) and max(ratios) <= 1.0 + high


def test_a_new_ratio_drawn_like_the_held_out_ones_lands_inside_at_least_eight_times_in_ten():
    rng = random.Random(7)
    inside = 0
    trials = 2000
    for _ in range(trials):
        draw = [math.exp(rng.gauss(0.0, 0.3)) for _ in range(40)]
        low, high = spread_from_ratios(draw[:-1], 0.1, 0.9)
        inside += 1.0 - low <= draw[-1] <= 1.0 + high
    assert inside / trials >= 0.79  # 0.8 by construction; a binomial draw of 2,000 wanders about 0.9%


def test_exact_hundredths_are_not_pushed_up_by_float_error():
    # 1 - 0.7 is 0.30000000000000004 in binary floating point: still 0.3, not 0.31.
    assert spread_from_ratios([0.7] + [1.0] * 8 + [1.25], 0.1, 0.9) == (0.3, 0.25)
