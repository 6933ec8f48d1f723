"""Small shared widgets: a validated number field and form helpers."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QVBoxLayout, QWidget

from ..core.units import parse_quantity

ERROR_STYLE = "color: #b00020;"


class NumberField(QWidget):
    """A line edit for a number (``7e9``, ``7B``, ``100k``) with its validation message under it.

    ``value()`` returns the number, ``None`` when empty and optional, or raises ``ValueError``.
    ``edited`` fires on every change; an invalid entry also shows the message under the field.
    """

    edited = Signal()

    def __init__(
        self,
        placeholder: str = "",
        optional: bool = False,
        minimum: float | None = None,
        maximum: float | None = None,
        integer: bool = False,
        parent: QWidget | None = None,
    ):
        super().__init__(parent)
        self.optional, self.minimum, self.maximum, self.integer = optional, minimum, maximum, integer
        self.edit = QLineEdit(self)
        self.edit.setPlaceholderText(placeholder)
        self.edit.setClearButtonEnabled(optional)
        self.message = QLabel(self)
        self.message.setStyleSheet(ERROR_STYLE)
        self.message.setWordWrap(True)
        self.message.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        row = QHBoxLayout()
        row.addWidget(self.edit)
        layout.addLayout(row)
        layout.addWidget(self.message)
        self.edit.textEdited.connect(self._on_text_edited)

    def setToolTip(self, text: str) -> None:  # noqa: N802 - Qt override
        self.edit.setToolTip(text)
        super().setToolTip(text)

    def value(self) -> float | None:
        text = self.edit.text()
        if not text.strip():
            if self.optional:
                return None
            raise ValueError("is required")
        value = parse_quantity(text)
        if self.integer and value != int(value):
            raise ValueError("must be a whole number")
        if self.minimum is not None and value < self.minimum:
            raise ValueError(f"must be at least {self.minimum:g}")
        if self.maximum is not None and value > self.maximum:
            raise ValueError(f"must be at most {self.maximum:g}")
        return int(value) if self.integer else value

    def set_value(self, value: float | None) -> None:
        """Show a value without emitting ``edited``."""
        if value is None:
            text = ""
        elif abs(value) >= 1e6:
            scale, suffix = next(
                (sc, sf) for sc, sf in ((1e12, "T"), (1e9, "B"), (1e6, "M")) if abs(value) >= sc
            )
            text = f"{value / scale:.6g}{suffix}"
        elif self.integer or float(value).is_integer():
            text = f"{int(value):d}"
        else:
            text = f"{value:g}"
        self.edit.setText(text)
        self.show_error("")

    def show_error(self, message: str) -> None:
        self.message.setText(message)
        self.message.setVisible(bool(message))
        self.edit.setProperty("invalid", bool(message))
        self.edit.setStyleSheet("border: 1px solid #b00020;" if message else "")

    def _on_text_edited(self, _text: str) -> None:
        # Every edit is reported, valid or not: while the text is invalid the page raises on
        # ``value()`` and the window marks the results stale instead of keeping a half-typed value.
        try:
            self.value()
        except ValueError as exc:
            self.show_error(str(exc))
        else:
            self.show_error("")
        self.edited.emit()


def hint(text: str) -> QLabel:
    """A grey explanatory line under a group."""
    label = QLabel(text)
    label.setWordWrap(True)
    label.setStyleSheet("color: #555;")
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label
