"""One rule per quantity (gpuadvisor.core.formatting): the figures the window, charts, CLI and report print."""

import math

import pytest

from gpuadvisor.core import units
from gpuadvisor.core.estimation.results import Change
from gpuadvisor.core.formatting import (
    NONE_MARK,
    display_gpu_name,
    fmt_count,
    fmt_gib,
    fmt_gib_unit,
    fmt_hours,
    fmt_hours_range,
    fmt_share,
    fmt_usd,
    fmt_usd_per_hour,
    fmt_usd_per_mtok,
    fmt_usd_range,
    short_gpu_name,
)


@pytest.mark.parametrize(
    "hours, text",
    [
        (10 / 3600, "10 s"),
        (0.5, "30 min"),
        (1.5, "1.5 h"),
        (50, "50.0 h"),
        (71.9, "71.9 h"),
        (91.2, "3.8 days"),
        (24 * 5000, "5,000 days"),
    ],
)
def test_durations(hours, text):
    assert fmt_hours(hours) == text


@pytest.mark.parametrize(
    "usd, text",
    [
        (0.583, "$0.58"),
        (9.994, "$9.99"),
        (9.999, "$10"),
        (42.5, "$43"),
        (41.0, "$41"),
        (1234.4, "$1,234"),
        (2.5e6, "$2.50M"),
        (-3.456, "-$3.46"),
    ],
)
def test_money_rounds_halves_up(usd, text):
    assert fmt_usd(usd) == text


def test_raw_and_stored_figures_print_alike():
    """The report formats the JSON (money to the cent, hours to 1e-4); the window formats raw values."""
    for raw in (42.4967, 9.9951, 0.00499, 1234.495, 999_999.996):
        assert fmt_usd(raw) == fmt_usd(round(raw, 2))
        assert fmt_usd_range(raw / 3, raw) == fmt_usd_range(round(raw / 3, 2), round(raw, 2))
    for raw in (20.44996, 0.99999, 71.99996):
        assert fmt_hours(raw) == fmt_hours(round(raw, 4))
    assert fmt_gib(32.74996) == fmt_gib(round(32.74996, 3))


def test_money_variants_keep_cents():
    assert fmt_usd_per_hour(2.495) == "$2.50"
    assert fmt_usd_per_mtok(0.1284) == "$0.13" and fmt_usd_per_mtok(0.0042) == "$0.0042"
    assert fmt_usd_range(26.74, 176.5) == "$27\u2013$177"
    # A low end under $10 keeps its cents even when the high end has none: never "$0-$12".
    assert fmt_usd_range(0.3, 12.36) == "$0.30\u2013$12"
    assert fmt_usd_range(4.3, 1_250_000) == "$4.30\u2013$1.25M"


@pytest.mark.parametrize("bad", [None, math.nan, math.inf, -math.inf])
def test_missing_or_non_finite_values_never_print_nan(bad):
    for fmt in (
        fmt_hours,
        fmt_usd,
        fmt_gib,
        fmt_gib_unit,
        fmt_count,
        fmt_share,
        fmt_usd_per_hour,
        fmt_usd_per_mtok,
    ):
        assert fmt(bad) == NONE_MARK
    assert fmt_hours_range(bad, 2.0) == NONE_MARK
    assert fmt_usd_range(1.0, bad) == "no price"


def test_counts_and_memory():
    assert [fmt_count(n) for n in (6.74e9, 336e6, 100e3, 512, 1.2e12)] == [
        "6.74B",
        "336M",
        "100k",
        "512",
        "1.2T",
    ]
    assert (
        fmt_gib(1234.56) == "1,234.6"
        and fmt_gib_unit(32.71) == "32.7 GiB"
        and fmt_gib_unit(7.481, 2) == "7.48 GiB"
    )


def test_gpu_names_one_rule_for_table_and_charts():
    assert display_gpu_name("NVIDIA GeForce RTX 4090") == "RTX 4090"
    assert short_gpu_name("NVIDIA H100 SXM5 80 GB", 2) == "H100 SXM5 80 GB \u00d72"
    assert short_gpu_name("AMD Instinct MI300X", 8) == "AMD Instinct MI300X \u00d78"
    assert short_gpu_name("NVIDIA GH200 Grace Hopper Superchip (96 GB HBM3)") == "GH200 Grace Hopper\u2026"


def test_the_windows_names_are_the_same_rules():
    """The window formats with units.format_*: the very same functions, so the same text."""
    for value in (0.5, 1.5, 50, 91.2):
        assert units.format_hours(value) == fmt_hours(value)
    for value in (0.583, 42.5, 1234.4):
        assert units.format_usd(value) == fmt_usd(value)
    assert units.format_count(6.74e9) == fmt_count(6.74e9)


def test_advice_lines_use_the_rules():
    change = Change(
        change="QLoRA",
        why="4-bit base",
        candidate="1x h100-sxm (none)",
        memory_per_gpu_gib=12.345,
        job_hours=1.5,
        cost_usd=42.5,
        fits=True,
    )
    assert str(change) == "QLoRA -> 1x h100-sxm (none), 12.3 GiB per GPU, 1.5 h, $43 (4-bit base)"


def test_a_tiny_share_is_not_written_as_zero():
    """A 22-minute job is a sliver of a GPU's 36 months: "under 0.1%", not "0.0%"."""
    from gpuadvisor.core.formatting import fmt_share

    assert fmt_share(0.0) == "0.0%"
    assert fmt_share(1e-5) == "under 0.1%"
    assert fmt_share(0.0005) == "0.1%"
    assert fmt_share(0.045) == "4.5%"
    assert fmt_share(0.23) == "23%"
