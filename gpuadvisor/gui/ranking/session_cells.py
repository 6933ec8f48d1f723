"""The ranking's cells for a session on the machine the user owns (``Estimate.session``).

No job is timed or priced there, so the job's columns take the session's figures from the core
(``Estimate.session_of``, formatted by the same formatters as the CLI and the PDF), the generation
speed first: the cost column shows tokens/s, the range the wait for the prompt, the time the layers
on the GPU, the deadline the longest context, the budget the system RAM, the tokens/s column the
prompt speed and the $/1M column the memory left.
"""

from __future__ import annotations

from ...core.estimation.estimate import Candidate, Estimate
from ...core.formatting import NONE_MARK, fmt_gib, fmt_rate, fmt_seconds

#: (header, tooltip) of the columns that change meaning in a session, by the ranking's column names.
SESSION_COLUMNS = {
    "cost": ("Tokens/s", "Generation: tokens per second of one answer"),
    "range": ("Prompt", "Time to read the prompt: the wait for the first token"),
    "time": (
        "GPU layers",
        "Layers on the GPU of the model's layers (llama.cpp -ngl); the rest run on the CPU from system RAM",
    ),
    "deadline": ("Context", "The longest context (tokens) that fits this setup"),
    "budget": ("RAM", "System RAM the layers kept off the GPU use, GiB"),
    "tps": ("Prompt tok/s", "Prompt processing: tokens per second while reading the prompt"),
    "per_m": ("Left", "The card's memory left with the model and the context loaded, GiB"),
}


def session_text(est: Estimate, c: Candidate, name: str) -> str | None:
    """The cell text of column ``name`` in a session (None: the column keeps its usual text)."""
    if name not in SESSION_COLUMNS:
        return None
    s = est.session_of(c)
    if s is None:
        return NONE_MARK
    return {
        "cost": fmt_rate(s.tokens_per_s),
        "range": fmt_seconds(s.prompt_s),
        "time": "all" if s.gpu_layers == s.num_layers else f"{s.gpu_layers} of {s.num_layers}",
        "deadline": f"{s.max_context_tokens:,}",
        "budget": fmt_gib(s.host_memory_gib) if s.host_memory_gib > 0.05 else NONE_MARK,
        "tps": fmt_rate(s.prefill_tokens_per_s),
        "per_m": fmt_gib(s.memory_left_gib),
    }[name]


def session_sort_value(est: Estimate, c: Candidate, name: str) -> object:
    """What a click on a session's column header sorts by (None: the column's usual value)."""
    if name not in SESSION_COLUMNS:
        return None
    s = est.session_of(c)
    if s is None:
        return float("-inf") if name in ("cost", "tps", "deadline", "time") else float("inf")
    return {
        "cost": s.tokens_per_s,
        "range": s.prompt_s,
        "time": s.gpu_layers / max(s.num_layers, 1),
        "deadline": s.max_context_tokens,
        "budget": s.host_memory_gib,
        "tps": s.prefill_tokens_per_s,
        "per_m": s.memory_left_gib,
    }[name]
