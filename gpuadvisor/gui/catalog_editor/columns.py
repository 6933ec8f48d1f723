"""Catalog columns as the editor shows them: labels with units, which editor each gets, tints."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor

from ...core.specs.hardware import KNOWN_ARCHITECTURES

KIND_TITLES = {"gpus": "GPUs", "models": "Model presets"}
ROLE_SORT = Qt.ItemDataRole.UserRole + 1
INVALID_BRUSH = QBrush(QColor("#f8c9cf"))
MODIFIED_BRUSH = QBrush(QColor("#fff3c4"))
ADDED_BRUSH = QBrush(QColor("#dff3e3"))
STALE_BRUSH = QBrush(QColor("#ffd9a8"))
#: Text on those light tints, whatever the palette: light text of a dark desktop on them was unreadable.
TINTED_TEXT_BRUSH = QBrush(QColor("#1a1a1a"))

#: Choices offered by the cell editors; an editable combo box still accepts other text.
CHOICES: dict[str, tuple[str, ...]] = {
    "architecture": tuple(sorted(KNOWN_ARCHITECTURES)),
    "vendor": ("nvidia", "amd", "intel", "other"),
    "form_factor": ("pcie", "sxm", "oam", "nvl", "superchip", "other"),
    "memory_type": ("GDDR6", "GDDR6X", "GDDR7", "HBM2", "HBM2e", "HBM3", "HBM3e", "LPDDR5X"),
    "kind": ("decoder", "encoder"),
    "position_embedding": ("rope", "learned", "alibi", "none"),
    "norm": ("rmsnorm", "layernorm"),
}
BOOLEAN_COLUMNS = frozenset(
    {"gated_mlp", "tied_embeddings", "attention_bias", "attention_out_bias", "mlp_bias"}
)
#: Only these choices are enforced (the others are suggestions): the core rejects anything else.
STRICT_CHOICES = frozenset({"architecture", "kind"})
DATE_COLUMNS = frozenset({"price_as_of"})
TEXT_COLUMNS = frozenset({"id", "name", "family", "hf_model_type", "source", "notes"})
_WORDS = {
    "gib": "GiB",
    "gb": "GB",
    "usd": "USD",
    "tflops": "TFLOPS",
    "tops": "TOPS",
    "fp32": "FP32",
    "tf32": "TF32",
    "fp16": "FP16",
    "bf16": "BF16",
    "fp8": "FP8",
    "int8": "INT8",
    "fp4": "FP4",
    "tdp": "TDP",
    "nvlink": "NVLink",
    "gpus": "GPUs",
    "pcie": "PCIe",
    "mig": "MIG",
    "id": "Id",
    "hf": "HF",
    "moe": "MoE",
    "mlp": "MLP",
    "kv": "KV",
    "mlp_bias": "MLP bias",
}


def column_unit(column: str) -> str:
    """The unit a numeric column is stored in (``""`` for plain counts and text)."""
    if column.startswith("cloud_usd_per_hour"):
        return "USD per GPU-hour"
    if column.startswith("purchase_") and "_usd" in column:
        return "USD"
    for suffix, unit in (
        ("_gb_s", "GB/s"),
        ("_gib_usable", "GiB"),
        ("_gib", "GiB"),
        ("_gb", "GB"),
        ("_tflops", "TFLOPS"),
        ("_tops", "TOPS"),
        ("_w", "W"),
    ):
        if column.endswith(suffix):
            return unit
    return ""


def column_label(column: str) -> str:
    """A readable header: ``memory_bandwidth_gb_s`` -> ``Memory bandwidth (GB/s)``."""
    unit = column_unit(column)
    name = column
    for suffix in ("_usd_per_hour", "_gb_s", "_tflops", "_tops", "_gib", "_gb", "_w", "_usd"):
        if suffix in name and unit:
            name = name.replace(suffix, "")
    name = (
        name.replace("cloud", "cloud price")
        .replace("purchase_new", "purchase new")
        .replace("purchase_used", "purchase used")
    )
    words = [_WORDS.get(w, w) for w in name.split("_") if w]
    text = " ".join(words)
    text = text[:1].upper() + text[1:]
    return f"{text} ({unit})" if unit else text


def is_numeric(column: str) -> bool:
    return (
        column not in TEXT_COLUMNS
        and column not in DATE_COLUMNS
        and column not in CHOICES
        and column not in BOOLEAN_COLUMNS
    )


_CURRENCY_PREFIXES = ("US$", "USD", "$")
_UNIT_SUFFIXES = ("USD/GPU-h", "/GPU-h", "$/h", "/hr", "/h", "USD", "$")


def clean_number_text(text: str) -> str:
    """A number as typed, in the catalog's spelling: ``$2.5`` -> ``2.5``, ``2.50 USD/h`` -> ``2.50``,
    ``1,200`` -> ``1200``. Text that is no number even then comes back as typed (the row check
    then says why it is refused)."""
    t = text.strip()
    for prefix in _CURRENCY_PREFIXES:
        if t.upper().startswith(prefix.upper()):
            t = t[len(prefix) :].strip()
            break
    for suffix in _UNIT_SUFFIXES:
        if t.upper().endswith(suffix.upper()):
            t = t[: -len(suffix)].strip()
            break
    t = t.replace(",", "").replace("_", "").replace(" ", "")
    try:
        float(t)
    except ValueError:
        return text.strip()
    return t


def number_or_none(text: str) -> float | None:
    try:
        return float(text.replace(",", "").replace("_", ""))
    except ValueError:
        return None
