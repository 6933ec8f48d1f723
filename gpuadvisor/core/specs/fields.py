"""The numeric keys of a scenario, each with its one rule (:class:`~gpuadvisor.core.numbers.NumberRule`).

The window's number fields and the scenario reader take their quantity and range from here, and the
input types (:class:`~.workload.Workload`, :class:`~.workload.Hardware`, the budget, the service, the
overheads and efficiencies) accept exactly these ranges (``tests/core/test_numbers.py`` checks each
boundary), so a value typed in the window, written as text in a scenario file ("8k", "$50", "2h",
"24 GB") or as a JSON number meets the same rule and the same message.
"""

from __future__ import annotations

from types import MappingProxyType

from ..errors import InputError
from ..numbers import NumberRule, Quantity

_MAX_TOKENS = 100_000_000
_LAYOUT = NumberRule(Quantity.COUNT, 1, 16_384, integer=True)
_TOKENS = NumberRule(Quantity.TOKENS, 1, _MAX_TOKENS, integer=True)
_SHARE = NumberRule(Quantity.PLAIN, 0, 1, above=True)

#: Dotted scenario key -> its rule.
FIELD_RULES: MappingProxyType[str, NumberRule] = MappingProxyType(
    {
        "model.parameters": NumberRule(
            Quantity.PARAMETERS,
            1e6,
            1e14,
            why="a hundred trillion; the largest published models have about two trillion",
        ),
        "workload.batch_size": NumberRule(Quantity.COUNT, 1, 1_000_000, integer=True),
        "workload.seq_len": _TOKENS,
        "workload.prompt_tokens": _TOKENS,
        "workload.output_tokens": _TOKENS,
        "workload.prompt_tokens_p90": _TOKENS,
        "workload.output_tokens_p90": _TOKENS,
        "workload.lora_rank": NumberRule(Quantity.COUNT, 1, 65_536, integer=True),
        "workload.train_tokens": NumberRule(Quantity.TOKENS, 0, 1e18, above=True),
        "workload.dataset_tokens": NumberRule(Quantity.TOKENS, 0, 1e18, above=True),
        "workload.requests": NumberRule(Quantity.COUNT, 0, 1e18, above=True),
        "workload.epochs": NumberRule(Quantity.PLAIN, 0, 1e6, above=True),
        "workload.gpu_layers": NumberRule(Quantity.COUNT, 0, 10_000, integer=True),
        "workload.global_batch_size": NumberRule(Quantity.COUNT, 1, _MAX_TOKENS, integer=True),
        "workload.serving.requests_per_s": NumberRule(Quantity.PLAIN, 0, 1e7, above=True),
        "workload.serving.concurrency": NumberRule(Quantity.COUNT, 1, 10_000_000, integer=True),
        "workload.serving.ttft_s": NumberRule(Quantity.SECONDS, 0, 3600, above=True),
        "workload.serving.itl_ms": NumberRule(Quantity.MILLISECONDS, 0, 60_000, above=True),
        "workload.serving.prefix_cache_hit_rate": NumberRule(Quantity.PLAIN, 0, 0.99),
        "workload.serving.hours_per_day": NumberRule(Quantity.HOURS, 1, 24),
        "workload.serving.request_overhead_ms": NumberRule(Quantity.MILLISECONDS, 0, 10_000),
        "hardware.gpu_count": NumberRule(Quantity.COUNT, 1, 100_000, integer=True),
        "hardware.gpu_count_max": _LAYOUT,
        "hardware.gpus_per_node": NumberRule(Quantity.COUNT, 1, 1024, integer=True),
        "hardware.tensor_parallel": _LAYOUT,
        "hardware.pipeline_parallel": _LAYOUT,
        "hardware.context_parallel": _LAYOUT,
        "hardware.expert_parallel": _LAYOUT,
        "hardware.expert_tensor_parallel": _LAYOUT,
        "hardware.virtual_pipeline_stages": _LAYOUT,
        "hardware.data_parallel_shard": _LAYOUT,
        "hardware.memory_gib": NumberRule(Quantity.MEMORY, 0, 4096, above=True),
        "hardware.host_memory_gib": NumberRule(Quantity.MEMORY, 0, 1_048_576, above=True),
        "hardware.host_memory_bandwidth_gb_s": NumberRule(Quantity.BANDWIDTH, 0, 100_000, above=True),
        # Physical and economic limits, so that an absurd value is refused with its reason instead of
        # giving absurd figures (and a tiny one cannot underflow what is divided by it).
        "budget.max_usd_per_hour": NumberRule(
            Quantity.MONEY, 1e-4, 1e8, why="a hundred million dollars an hour"
        ),
        "budget.max_total_usd": NumberRule(Quantity.MONEY, 1e-2, 1e12, why="a trillion dollars"),
        "budget.deadline_hours": NumberRule(Quantity.HOURS, 1e-3, 876_000, why="a hundred years"),
        "budget.price": NumberRule(
            Quantity.MONEY, 1e-4, 1000, why="USD per GPU-hour; cloud GPUs rent for tens of dollars an hour"
        ),
        "budget.horizon_days": NumberRule(Quantity.PLAIN, 0, 3650, above=True, why="ten years"),
        "budget.ownership_months": NumberRule(Quantity.MONTHS, 0, 240, above=True),
        "budget.utilization": _SHARE,
        "budget.electricity_usd_per_kwh": NumberRule(Quantity.MONEY, 0, 10),
        "budget.pue": NumberRule(Quantity.PLAIN, 1, 5),
        "overhead.cuda_context_gib": NumberRule(Quantity.MEMORY, 0, 64),
        "overhead.fragmentation": NumberRule(Quantity.PLAIN, 0, 1),
        "efficiency.bandwidth_efficiency": _SHARE,
        "efficiency.mfu": _SHARE,
        "efficiency.prefill_mfu": _SHARE,
        # An architecture typed in (the window's fields; scenario files take the same ranges).
        "model.architecture.num_layers": NumberRule(Quantity.COUNT, 1, 1000, integer=True),
        "model.architecture.hidden_size": NumberRule(Quantity.COUNT, 1, 1_000_000, integer=True),
        "model.architecture.num_attention_heads": NumberRule(Quantity.COUNT, 1, 10_000, integer=True),
        "model.architecture.num_key_value_heads": NumberRule(Quantity.COUNT, 1, 10_000, integer=True),
        "model.architecture.intermediate_size": NumberRule(Quantity.COUNT, 1, 10_000_000, integer=True),
        "model.architecture.vocab_size": NumberRule(Quantity.COUNT, 1, 10_000_000, integer=True),
    }
)
#: Window fields that show a share as a percentage (the scenario keeps the share 0-1).
PERCENT_FIELDS: MappingProxyType[str, NumberRule] = MappingProxyType(
    {
        "budget.utilization": NumberRule(Quantity.PERCENT, 0, 100, above=True),
        "workload.serving.prefix_cache_hit_rate": NumberRule(Quantity.PERCENT, 0, 99),
    }
)


def rule(key: str) -> NumberRule:
    """The rule of a dotted scenario key (``KeyError`` for a key that is not numeric)."""
    return FIELD_RULES[key]


def read_number(key: str, value: object) -> object:
    """A scenario value as the reader takes it: text read by the key's rule ("8k", "$50", "24 GB"),
    anything else unchanged (the input types check it). ``ValueError`` for text that does not read."""
    found = FIELD_RULES.get(key)
    if found is None or not isinstance(value, str):
        return value
    return found.parse(value)


def checked(key: str, value: object) -> None:
    """Raise :class:`~gpuadvisor.core.errors.InputError` naming ``key`` when ``value`` breaks its rule."""
    problem = FIELD_RULES[key].problem(value)
    if problem is not None:
        raise InputError(key, problem, value)
