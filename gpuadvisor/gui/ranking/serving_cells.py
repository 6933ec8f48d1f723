"""The ranking's cells for a service (``workload.serving``): the fleet in the core's words.

A service reuses the ranking's columns with the fleet's meaning (the core's ``ServingEstimate``,
formatted by the same formatters as the CLI and the PDF): the setup becomes replicas x GPUs, the
cost the monthly cost, the range buy versus rent, the time the latencies, the deadline the
targets and the budget what limits a replica.
"""

from __future__ import annotations

from ...core.estimation.estimate import Candidate
from ...core.estimation.serving import ServingEstimate
from ...core.formatting import NONE_MARK, TIMES, fmt_rate, fmt_usd, fmt_usd_per_mtok
from ...core.presentation.serving_text import percentiles_cell, status_word

#: (header, tooltip) of the columns that change meaning for a service, by the ranking's column names.
SERVING_COLUMNS = {
    "setup": (
        "Fleet",
        "Replicas x GPUs per replica (and how a replica splits the model); disaggregated: prefill (P) "
        "and decode (D) instances",
    ),
    "cost": ("Per month", "Monthly cost of the fleet: replicas x GPUs x price x 730 h x hours a day / 24"),
    "range": (
        "Buy vs rent",
        "Owning the fleet (purchase over the ownership months + power) against renting it",
    ),
    "time": (
        "TTFT · ITL p50/p90",
        "Time to first token (queueing included) and between tokens, p50 / p90, over the requests of a "
        "simulated replica at its share of the load; a setup that misses shows one request alone",
    ),
    "deadline": (
        "Targets",
        "meets: even the slow end of the 80% range is within both targets at the percentile asked for; "
        "likely: the expected value is; at risk: it is not; misses ITL/TTFT: not even one request meets "
        "it; —: not simulated (another setup leads its GPU type)",
    ),
    "budget": (
        "Limited by",
        "What stops a replica taking more requests: the KV cache, a latency target or compute",
    ),
    "tps": ("Tokens/s/replica", "Output tokens per second one replica serves at its concurrency"),
    "per_m": ("$ / 1M tokens", "Fleet cost per million output tokens served at the requested rate"),
}
_LIMITED = {"kv_cache": "KV cache", "latency": "latency", "compute": "compute", "clients": "the clients"}


def serving_text(c: Candidate, name: str, fleet: ServingEstimate | None = None) -> str | None:
    """The cell text of column ``name`` for a service (None: the column keeps its usual text);
    ``fleet`` the candidate's fleet with its figures at the load, where simulated."""
    s = fleet if fleet is not None else c.serving
    if name not in SERVING_COLUMNS:
        return None
    if s is None:
        return NONE_MARK
    if name == "setup":
        per = "1 GPU" if c.gpu_count == 1 else f"{c.gpu_count} GPUs, {c.parallelism}"
        d = s.disaggregated
        if d is not None:  # a prefill pool and a decode pool of the layout
            return f"{d.prefill_instances}P + {d.decode_instances}D {TIMES} {per}"
        return f"{s.replicas} {TIMES} {per}"
    if name == "cost":
        return fmt_usd(s.usd_per_month) if s.usd_per_month is not None else NONE_MARK
    if name == "range":
        b = s.buy
        if b is None:
            return NONE_MARK
        return f"buy: {fmt_usd(b.owned_usd_per_month)}/mo" if b.buy_is_cheaper else "rent"
    if name == "time":
        a = s.at_load
        if a is not None and (s.meets_slo or s.missed_at_load):
            return f"{percentiles_cell(a.ttft_s, 's', 2)} · {percentiles_cell(a.itl_ms, 'ms', 0)}"
        # A setup that misses shows one request on an idle replica (ServingEstimate.ttft_shown_s).
        return f"{s.ttft_shown_s:.2f} s · {s.itl_shown_ms:.0f} ms" + ("" if s.meets_slo else " alone")
    if name == "deadline":
        if s.at_load is None and s.meets_slo:
            return NONE_MARK
        return status_word(s)
    if name == "budget":
        return _LIMITED.get(s.limited_by, s.limited_by)
    if name == "tps":
        return fmt_rate(s.tokens_per_s_per_replica)
    return fmt_usd_per_mtok(s.usd_per_million_tokens) if s.usd_per_million_tokens is not None else NONE_MARK


def serving_sort_value(c: Candidate, name: str) -> object:
    """What a click on a service's column header sorts by (None: the column's usual value)."""
    s = c.serving
    if name not in SERVING_COLUMNS:
        return None
    inf = float("inf")
    if s is None:
        return inf
    return {
        "setup": (s.gpus_total, s.replicas),
        "cost": s.usd_per_month if s.usd_per_month is not None else inf,
        "range": s.buy.owned_usd_per_month if s.buy is not None else inf,
        "time": (s.ttft_shown_s, s.itl_shown_ms),
        "deadline": {"meets": 0, "likely": 1}.get(s.status or "", 2 if s.meets_slo else 3),
        "budget": s.limited_by,
        "tps": -s.tokens_per_s_per_replica,
        "per_m": s.usd_per_million_tokens if s.usd_per_million_tokens is not None else inf,
    }[name]
