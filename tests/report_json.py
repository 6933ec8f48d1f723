"""The report's table cells rebuilt from ``gpuadvisor-cli estimate --json`` with the report's rules.

The report reads the typed results; these read the JSON's figures instead, so a test that sets the
two side by side pins that the PDF and the JSON say the same (see
``gpuadvisor.core.presentation.report``'s table of columns and keys).
"""

from __future__ import annotations

from typing import Any

from gpuadvisor.core.formatting import (
    NONE_MARK,
    TIMES,
    fmt_gib,
    fmt_hours_range,
    fmt_rate,
    fmt_setup,
    fmt_signed_gib,
    fmt_status,
    fmt_usd_per_mtok,
    fmt_usd_range,
    plain_gpu_name,
)


def json_setup(d: dict[str, Any]) -> str:
    """The setup cell from a candidate's JSON (``layout_short_name``, ``layout_name``, ``setup_label``)."""
    name = d.get("layout_short_name") or d.get("layout_name") or ""
    par = d["parallelism"]
    if d["gpu_count"] == 1:
        full = d.get("layout_name") or ""
        if d.get("setup_label", par) == par or full in ("", "1 GPU"):
            return "1 GPU"
        return f"1 GPU ({full.removeprefix('1 GPU · ')})"
    if d.get("setup_label", par) == par and name:
        return f"{fmt_setup(d['gpu_count'], par)} ({name})"
    return f"{d['gpu_count']} {TIMES} {name}" if name else fmt_setup(d["gpu_count"], par)


def json_row_cells(d: dict[str, Any]) -> tuple[str, ...]:
    """The table cells of one candidate from its JSON (``candidate_to_dict``), in ``TABLE_HEADER`` order."""
    hours = d.get("job_hours") or {}
    cost = d.get("cost_usd") or {}
    has_cost = "job_hours" in d
    return (
        plain_gpu_name(d["gpu_name"]),
        json_setup(d),
        d["verdict"],
        fmt_gib(d["memory_per_gpu_gib"]["device_total"]),
        fmt_gib(d["capacity_gib"]),
        fmt_signed_gib(d["headroom_gib"]),
        fmt_rate(d.get("tokens_per_s")),
        fmt_hours_range(hours.get("low"), hours.get("high")) if has_cost else NONE_MARK,
        fmt_usd_range(cost.get("low"), cost.get("high")) if has_cost else NONE_MARK,
        fmt_usd_per_mtok(d.get("usd_per_million_tokens")),
        fmt_status(d.get("deadline")) if has_cost else NONE_MARK,
        fmt_status(d.get("budget")) if has_cost else NONE_MARK,
    )
