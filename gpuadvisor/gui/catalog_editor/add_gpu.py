"""Adding a GPU in one pass: every field the estimates need on one form, in the user's words.

What a datasheet may leave out has a default: BF16 runs at the FP16 rate on every architecture
that has BF16 (Ampere and later, CDNA), FP8 is empty (not used), board power is optional (only
buying needs it), the low and high cloud prices default to the expected one and the prices are
dated today. OK lists every problem at once (a missing field, a value that is no number, a
price range out of order) and keeps the dialog open; the row is added only when it passes the
catalog's own checks (:func:`~gpuadvisor.core.formats.user_catalog.validate_row`).
"""

from __future__ import annotations

import datetime as _dt
import html
import re

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QVBoxLayout,
    QWidget,
)

from ...core.errors import CatalogError
from ...core.formats import user_catalog as uc
from ...core.specs.hardware import KNOWN_ARCHITECTURES
from .columns import clean_number_text, column_label

#: Architectures without BF16 tensor math: there the BF16 default stays empty.
NO_BF16 = frozenset({"pascal", "volta", "turing", "apple", "other"})

#: (column, label in the user's words, required, placeholder) of the form, in order.
FIELDS: tuple[tuple[str, str, bool, str], ...] = (
    ("name", "Name", True, "e.g. NVIDIA H100 SXM5 80 GB"),
    ("architecture", "Architecture", True, ""),
    ("vendor", "Made by", False, ""),
    ("memory_gib_usable", "Memory a program can use (GiB)", True, "what nvidia-smi shows, in GiB"),
    ("memory_bandwidth_gb_s", "Memory bandwidth (GB/s)", True, "datasheet peak"),
    ("fp16_dense_tflops", "FP16 tensor TFLOPS (dense)", True, "dense, not the sparse figure"),
    ("bf16_dense_tflops", "BF16 tensor TFLOPS (dense)", False, "same as FP16"),
    ("fp8_dense_tflops", "FP8 tensor TFLOPS (dense)", False, "empty: no FP8"),
    ("tdp_w", "Board power (W)", False, "optional: only buying needs it"),
    ("cloud_usd_per_hour_expected", "Cloud price ($ per GPU-hour)", False, "empty: no price"),
    ("cloud_usd_per_hour_low", "Lowest cloud price", False, "same as the price"),
    ("cloud_usd_per_hour_high", "Highest cloud price", False, "same as the price"),
    ("source", "Where the figures come from", True, "datasheet title or address"),
)
NUMERIC = frozenset(
    {
        "memory_gib_usable",
        "memory_bandwidth_gb_s",
        "fp16_dense_tflops",
        "bf16_dense_tflops",
        "fp8_dense_tflops",
        "tdp_w",
        "cloud_usd_per_hour_expected",
        "cloud_usd_per_hour_low",
        "cloud_usd_per_hour_high",
    }
)
LABELS = {column: label for column, label, _req, _ph in FIELDS}


def id_from_name(name: str, taken: set[str]) -> str:
    """A catalog id for ``name``: lower case, words joined by ``-``, unique among ``taken``."""
    base = re.sub(r"[^a-z0-9._+-]+", "-", name.lower().replace("nvidia ", "").replace("amd ", "")).strip("-.")
    base = base or "my-gpu"
    candidate, n = base, 2
    while candidate in taken:
        candidate, n = f"{base}-{n}", n + 1
    return candidate


def gpu_row(values: dict[str, str], taken: set[str], today: _dt.date) -> tuple[dict[str, str], list[str]]:
    """The catalog row for the form's ``values`` (column -> text as typed) and every problem with them,
    in the user's words (an empty list when the row can be added)."""
    problems = []
    row: dict[str, str] = {}
    for column, label, required, _placeholder in FIELDS:
        text = (values.get(column) or "").strip()
        if column in NUMERIC and text:
            cleaned = clean_number_text(text)
            try:
                number = float(cleaned)
            except ValueError:
                problems.append(f"{label}: '{text}' is not a number")
                continue
            if number <= 0:
                problems.append(f"{label}: must be above 0 (got {text})")
                continue
            text = cleaned
        if required and not text:
            problems.append(f"{label}: required")
        row[column] = text
    if not row.get("bf16_dense_tflops") and row.get("architecture") not in NO_BF16:
        row["bf16_dense_tflops"] = row.get("fp16_dense_tflops", "")
    prices = {
        c: row.get(c, "")
        for c in ("cloud_usd_per_hour_low", "cloud_usd_per_hour_expected", "cloud_usd_per_hour_high")
    }
    if prices["cloud_usd_per_hour_expected"]:
        for c in ("cloud_usd_per_hour_low", "cloud_usd_per_hour_high"):
            row[c] = row[c] or prices["cloud_usd_per_hour_expected"]
    given = [(c, float(row[c])) for c in prices if _is_number(row.get(c, ""))]
    for (a, va), (b, vb) in zip(given, given[1:]):
        if va > vb:
            problems.append(f"{LABELS[a]} ({va:g}) is above {LABELS[b].lower()} ({vb:g})")
    if any(row.get(c) for c in prices):
        row["price_as_of"] = today.isoformat()
    row["id"] = id_from_name(row.get("name", ""), taken)
    if not problems:
        try:
            uc.validate_row("gpus", row, origin="new GPU", today=today)
        except CatalogError as exc:
            bad_column = uc.error_column(exc)
            label = LABELS.get(bad_column or "", column_label(bad_column) if bad_column else "The row")
            shown = "" if exc.value is None else f" (got {exc.value!r})"
            problems.append(f"{label}: {exc.reason}{shown}")
    return row, problems


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


class AddGpuDialog(QDialog):
    """The form (see the module docstring); :attr:`row` holds the new row once accepted."""

    def __init__(self, taken: set[str], today: _dt.date | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Add a GPU")
        self.taken, self.today = set(taken), today or _dt.date.today()
        self.row: dict[str, str] | None = None
        self.fields: dict[str, QLineEdit | QComboBox] = {}
        form = QFormLayout()
        for column, label, required, placeholder in FIELDS:
            widget: QLineEdit | QComboBox
            if column == "architecture":
                widget = QComboBox()
                widget.addItem("choose…", "")
                for arch in sorted(KNOWN_ARCHITECTURES):
                    widget.addItem(arch, arch)
            elif column == "vendor":
                widget = QComboBox()
                for vendor in ("nvidia", "amd", "intel", "apple", "other"):
                    widget.addItem(vendor, vendor)
            else:
                widget = QLineEdit()
                widget.setPlaceholderText(placeholder)
                # Wide enough for its grey default: the defaults are part of what the form says.
                widget.setMinimumWidth(widget.fontMetrics().horizontalAdvance(placeholder) + 24)
            widget.setObjectName(column)
            self.fields[column] = widget
            form.addRow(f"{label}{' *' if required else ''}", widget)
        self.problems = QLabel()
        self.problems.setWordWrap(True)
        self.problems.setTextFormat(Qt.TextFormat.RichText)
        self.problems.setStyleSheet("color: #b00020")
        self.problems.hide()
        note = QLabel("* required. The other fields may stay empty: their defaults are shown in grey.")
        note.setWordWrap(True)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        self.buttons.accepted.connect(self._on_ok)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(note)
        layout.addWidget(self.problems)
        layout.addWidget(self.buttons)

    def values(self) -> dict[str, str]:
        out = {}
        for column, widget in self.fields.items():
            out[column] = widget.currentData() if isinstance(widget, QComboBox) else widget.text()
        return out

    def _on_ok(self) -> None:
        row, problems = gpu_row(self.values(), self.taken, self.today)
        if problems:
            items = "".join(f"<li>{html.escape(p)}</li>" for p in problems)
            self.problems.setText(f"<b>Not added yet: {len(problems)} to fix</b><ul>{items}</ul>")
            self.problems.show()
            return
        self.row = row
        self.accept()
