"""The window's words for scenario fields: an error from the core names a field by its scenario
path (``workload.train_tokens``); the window says it with the label the user sees next to the
field ("Tokens to train") on the page where it is.
"""

from __future__ import annotations

from ..core.errors import InputError

#: Scenario path -> (page, label on that page).
FIELD_LABELS: dict[str, tuple[str, str]] = {
    "workload.kind": ("Workload", "Workload"),
    "workload.engine": ("Workload", "Engine"),
    "workload.batch_size": ("Workload", "Batch"),
    "workload.seq_len": ("Workload", "Sequence length"),
    "workload.prompt_tokens": ("Workload", "Prompt tokens"),
    "workload.output_tokens": ("Workload", "Output tokens"),
    "workload.requests": ("Workload", "Requests to serve"),
    "workload.train_tokens": ("Workload", "Tokens to train"),
    "workload.dataset_tokens": ("Workload", "Dataset tokens"),
    "workload.epochs": ("Workload", "Epochs"),
    "workload.optimizer": ("Workload", "Optimizer"),
    "workload.lora_rank": ("Workload", "LoRA rank"),
    "workload.lora_targets": ("Workload", "LoRA targets"),
    "workload.serving.requests_per_s": ("Workload", "Requests per second"),
    "workload.serving.concurrency": ("Workload", "Clients"),
    "workload.serving.arrival": ("Workload", "Arrivals"),
    "workload.serving.ttft_s": ("Workload", "First token within"),
    "workload.serving.itl_ms": ("Workload", "Between tokens"),
    "workload.serving.percentile": ("Workload", "Percentile"),
    "workload.serving.prefix_cache_hit_rate": ("Workload", "Prefix cache hits"),
    "workload.serving.hours_per_day": ("Workload", "Hours a day"),
    "workload.serving.request_overhead_ms": ("Workload", "Per-request time"),
    "workload.serving.disaggregated": ("Workload", "Prefill and decode on separate GPUs"),
    "workload.speculative": ("Workload", "Speculative decoding"),
    "workload.speculative.draft_model": ("Workload", "Draft model"),
    "workload.speculative.acceptance_rate": ("Workload", "Accepted share"),
    "workload.weights": ("Model", "Weights"),
    "workload.kv_cache": ("Model", "KV cache"),
    "hardware.gpu": ("Workload", "GPU"),
    "hardware.gpu_count": ("Workload", "GPU count"),
    "hardware.parallelism": ("Workload", "Parallelism"),
    "hardware.gpus_per_node": ("Workload", "GPUs per node"),
    "model": ("Model", "Model"),
    "model.preset": ("Model", "Preset"),
    "model.hf_config": ("Model", "config.json"),
    "model.parameters": ("Model", "Parameters"),
    "model.architecture": ("Model", "Architecture"),
    "budget.max_usd_per_hour": ("Budget", "Max $ per hour"),
    "budget.max_total_usd": ("Budget", "Max $ per job"),
    "budget.deadline_hours": ("Budget", "Deadline (hours)"),
    "budget.price": ("Budget", "Your price ($/GPU-h)"),
    "budget.ownership_months": ("Budget", "Ownership (months)"),
    "budget.utilization": ("Budget", "Utilization (%)"),
    "budget.electricity_usd_per_kwh": ("Budget", "Electricity ($/kWh)"),
    "budget.pue": ("Budget", "PUE"),
    "budget.horizon_days": ("Budget", "Horizon (days)"),
    "budget.providers": ("Budget", "Providers"),
}


def label_for(field: str) -> tuple[str, str] | None:
    """(page, label) for a scenario path, also for sub-paths such as ``model.architecture.hidden_size``."""
    while field:
        if field in FIELD_LABELS:
            return FIELD_LABELS[field]
        field = field.rpartition(".")[0]
    return None


def user_message(exc: Exception) -> str:
    """An error in the user's words: ``Tokens to train (Workload page): must be at most 1e+18``.

    Errors that already start with a field label (raised by the pages) pass through unchanged."""
    if isinstance(exc, InputError):
        where = label_for(exc.field)
        if where is not None:
            page, label = where
            value = exc.value
            shown = (
                f" (you entered {value:g})"
                if isinstance(value, float)
                else f" (you entered {value})"
                if isinstance(value, (int, str)) and value != ""
                else ""
            )
            return f"{label} ({page} page): {exc.reason}{shown}"
        if exc.field.startswith(("model.hf_config", "model")):
            return f"Model (Model page): {exc.reason}"
    return str(exc)
