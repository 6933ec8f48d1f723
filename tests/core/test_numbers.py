"""One number parser everywhere: the window's fields and scenario files read "8k", "1.5M", "70B",
"$50", "2h", "24 GB" by the same rule, and a value out of range is refused with the range."""

import dataclasses

import pytest

from gpuadvisor.core.errors import InputError, ScenarioError
from gpuadvisor.core.formats.scenario import Budget, Efficiency, ModelSource, scenario_from_dict
from gpuadvisor.core.numbers import NumberRule, Quantity, parse_number
from gpuadvisor.core.specs.fields import FIELD_RULES, PERCENT_FIELDS
from gpuadvisor.core.specs.serving import ServingSpec
from gpuadvisor.core.specs.workload import Hardware, RuntimeOverhead, Workload


@pytest.mark.parametrize(
    "text, quantity, value",
    [
        ("8k", Quantity.TOKENS, 8000),
        ("8K", Quantity.TOKENS, 8000),
        ("8k tokens", Quantity.TOKENS, 8000),
        ("1.5M", Quantity.TOKENS, 1_500_000),
        ("2,000,000", Quantity.COUNT, 2_000_000),
        ("1e9", Quantity.COUNT, 1e9),
        ("70B", Quantity.PARAMETERS, 70e9),
        ("7e9", Quantity.PARAMETERS, 7e9),
        ("$50", Quantity.MONEY, 50),
        ("$1.5k", Quantity.MONEY, 1500),
        ("50 USD", Quantity.MONEY, 50),
        ("2h", Quantity.HOURS, 2),
        ("90 min", Quantity.HOURS, 1.5),
        ("3 days", Quantity.HOURS, 72),
        ("36", Quantity.HOURS, 36),
        ("3 years", Quantity.MONTHS, 36),
        ("24 GB", Quantity.MEMORY, 24),
        ("24GiB", Quantity.MEMORY, 24),
        ("512 MB", Quantity.MEMORY, 0.5),
        ("1 TB", Quantity.MEMORY, 1024),
        ("89.6 GB/s", Quantity.BANDWIDTH, 89.6),
        ("500 ms", Quantity.SECONDS, 0.5),
        ("0.2 s", Quantity.MILLISECONDS, 200),
        ("60%", Quantity.PERCENT, 60),
    ],
)
def test_numbers_read_as_people_type_them(text, quantity, value):
    assert parse_number(text, quantity) == pytest.approx(value)


@pytest.mark.parametrize(
    "text, quantity, message",
    [
        ("$50", Quantity.TOKENS, "'$50' is an amount in USD; this field takes a number of tokens"),
        ("24 GB", Quantity.HOURS, "'24 GB' is a memory size in GiB; this field takes a time in hours"),
        ("2h", Quantity.MONEY, "'2h' is a time in hours; this field takes an amount in USD"),
        ("eight", Quantity.COUNT, "'eight' is not a number (examples: 10000, 10k)"),
        ("8kk", Quantity.TOKENS, "'8kk' is not a number of tokens"),
        ("", Quantity.COUNT, "enter a number"),
        ("inf", Quantity.COUNT, "is not a number"),
    ],
)
def test_a_number_that_does_not_read_is_named_in_one_line(text, quantity, message):
    with pytest.raises(ValueError) as info:
        parse_number(text, quantity)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_value_out_of_range_is_refused_with_the_range_never_cut():
    rule = FIELD_RULES["workload.prompt_tokens"]
    assert rule.parse("8k") == 8000 and isinstance(rule.parse("8k"), int)
    with pytest.raises(ValueError, match=r"must be between 1 and 100,000,000 \(got 99,999,999,999\)"):
        rule.parse("99999999999")
    with pytest.raises(ValueError, match="must be a whole number between 1 and 100,000,000"):
        rule.parse("8.5")
    assert NumberRule(Quantity.MONEY, 0, None, above=True).range_text() == "above 0"


def _rule_keys():
    return sorted(k for k in FIELD_RULES if not k.startswith("model."))


_TYPES = {
    "workload": Workload,
    "hardware": Hardware,
    "budget": Budget,
    "overhead": RuntimeOverhead,
    "efficiency": Efficiency,
}


def _build(key: str, value: float):
    """The input type that holds ``key``, built with ``value`` there (and what it needs beside)."""
    *section, name = key.split(".")
    if section == ["workload", "serving"]:
        fields = {"requests_per_s": 1.0, "ttft_s": 1.0, "itl_ms": 50.0}
        if name == "concurrency":  # the load as clients instead of a rate: one of the two
            fields = {"ttft_s": 1.0, "itl_ms": 50.0}
        return ServingSpec(**{**fields, name: value})
    extra = (
        {"kind": "inference"}
        if name == "gpu_layers"
        else {"kind": "pretrain"}
        if name == "global_batch_size"
        else {}
    )
    if name in ("prompt_tokens_p90", "output_tokens_p90"):
        extra = {"prompt_tokens": 1, "output_tokens": 1}
    return _TYPES[section[0]](**{**extra, name: value})


@pytest.mark.parametrize("key", _rule_keys())
def test_every_input_type_accepts_exactly_its_keys_rule(key):
    """One rule: the types accept the range's ends and refuse just beyond them, as the window does."""
    rule = FIELD_RULES[key]
    step = 1 if rule.integer else 1e-9 * max(1.0, abs(rule.maximum or 1.0))
    if rule.minimum is not None:
        inside = rule.minimum + (step if rule.above else 0)
        _build(key, inside if not rule.integer else int(inside))
        below = rule.minimum if rule.above else rule.minimum - (1 if rule.integer else step)
        with pytest.raises(InputError):
            _build(key, int(below) if rule.integer else below)
    if rule.maximum is not None:
        _build(key, int(rule.maximum) if rule.integer else rule.maximum)
        with pytest.raises(InputError):
            _build(key, int(rule.maximum) + 1 if rule.integer else rule.maximum * (1 + 1e-6) + 1e-9)


def test_percent_fields_show_the_same_range_as_the_share_they_hold():
    for key, shown in PERCENT_FIELDS.items():
        held = FIELD_RULES[key]
        assert shown.maximum / 100 == pytest.approx(held.maximum) and shown.minimum == held.minimum * 100


def test_scenario_files_take_numbers_as_text():
    s = scenario_from_dict(
        {
            "model": {"parameters": "70B"},
            "workload": {"kind": "inference", "prompt_tokens": "8k", "requests": "1.5M"},
            "hardware": {"memory_gib": "24 GB", "host_memory_bandwidth_gb_s": "89.6 GB/s"},
            "budget": {"max_total_usd": "$50", "deadline_hours": "2h", "ownership_months": "3 years"},
        }
    )
    assert s.model.parameters == 70e9
    assert s.workload.prompt_tokens == 8000 and s.workload.requests == 1.5e6
    assert s.hardware.memory_gib == 24 and s.hardware.host_memory_bandwidth_gb_s == 89.6
    assert s.budget.max_total_usd == 50 and s.budget.deadline_hours == 2 and s.budget.ownership_months == 36
    assert dataclasses.replace(s.workload).prompt_tokens == 8000


@pytest.mark.parametrize(
    "section, key, value, message",
    [
        (
            "workload",
            "prompt_tokens",
            "99999999999",
            "workload.prompt_tokens: must be between 1 and 100,000,000",
        ),
        ("workload", "batch_size", "100k0", "workload.batch_size: '100k0' is not a number"),
        ("budget", "deadline_hours", "24 GB", "budget.deadline_hours: '24 GB' is a memory size in GiB"),
    ],
)
def test_text_a_scenario_file_cannot_use_is_refused_naming_the_key(section, key, value, message):
    with pytest.raises(ScenarioError) as info:
        scenario_from_dict({"model": {"preset": "llama-3.1-8b"}, section: {key: value}})
    assert str(info.value).startswith(message)


def test_a_parameter_count_as_text_reaches_the_model():
    assert ModelSource(parameters=7e9).parameters == 7e9
    with pytest.raises(ScenarioError, match="model.parameters: must be between 1,000,000 and"):
        scenario_from_dict({"model": {"parameters": "12k"}})
