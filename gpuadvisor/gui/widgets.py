"""Small shared widgets: a validated number field, a label in a theme tone and form helpers."""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QColor, QHelpEvent, QPaintEvent, QPalette
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QStyle,
    QStyleOptionComboBox,
    QStylePainter,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from ..core.numbers import NumberRule, Quantity, quantity_examples, quantity_name
from ..core.specs.fields import FIELD_RULES, PERCENT_FIELDS
from .theme import colors

ERROR_STYLE = "color: #b00020;"


class ElidedComboBox(QComboBox):
    """A combo box that shows its choice elided ("Serving (traffic and late…") when the page is
    narrow, with the whole choice first in its tooltip; a plain combo box cut it off mid-letter.
    The list that drops down always shows every choice in full."""

    def shown_text(self) -> str:
        """The choice as drawn in the box (elided to the room it has)."""
        option = QStyleOptionComboBox()
        self.initStyleOption(option)
        room = self.style().subControlRect(
            QStyle.ComplexControl.CC_ComboBox, option, QStyle.SubControl.SC_ComboBoxEditField, self
        )
        return self.fontMetrics().elidedText(option.currentText, Qt.TextElideMode.ElideRight, room.width())

    def paintEvent(self, _event: QPaintEvent) -> None:  # Qt override
        painter = QStylePainter(self)
        option = QStyleOptionComboBox()
        self.initStyleOption(option)
        painter.drawComplexControl(QStyle.ComplexControl.CC_ComboBox, option)
        option.currentText = self.shown_text()
        painter.drawControl(QStyle.ControlElement.CE_ComboBoxLabel, option)

    def tooltip_text(self) -> str:
        """The tooltip: the whole choice first when the box shows it elided, then the explanation."""
        text, tip = self.currentText(), self.toolTip()
        if self.shown_text() == text:
            return tip
        return f"{text}\n\n{tip}" if tip else text

    def event(self, event: QEvent) -> bool:  # Qt override
        if event.type() == QEvent.Type.ToolTip and isinstance(event, QHelpEvent):
            text = self.tooltip_text()
            if text:
                QToolTip.showText(event.globalPos(), text, self)
            else:
                QToolTip.hideText()
            return True
        return super().event(event)


class ToneLabel(QLabel):
    """A label in one of the theme's tones (``"muted"``, ``"problem"``, ``"ok"``, ``"caution"``),
    readable on a light and on a dark palette: a fixed dark red or grey was nearly invisible on a
    dark desktop. The tone is taken again whenever the palette changes (View > Appearance)."""

    def __init__(self, text: str = "", tone: str = "muted", parent: QWidget | None = None):
        super().__init__(text, parent)
        self._tone = tone
        self._apply_tone()

    def set_tone(self, tone: str) -> None:
        self._tone = tone
        self._apply_tone()

    def _apply_tone(self) -> None:
        color = QColor(getattr(colors(self.palette()), self._tone))
        if self.palette().color(QPalette.ColorRole.WindowText) != color:
            palette = QPalette(self.palette())
            palette.setColor(QPalette.ColorRole.WindowText, color)
            self.setPalette(palette)

    def changeEvent(self, event: QEvent) -> None:  # Qt override
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self._apply_tone()


class NumberField(QWidget):
    """A line edit for a number as people type it (``7e9``, ``70B``, ``8k``, ``$50``, ``2h``, ``24 GB``)
    with its validation message under it.

    The field's rule is the core's (:class:`~gpuadvisor.core.numbers.NumberRule`): the scenario key's
    (``key``, from :data:`~gpuadvisor.core.specs.fields.FIELD_RULES`; ``percent`` for a share shown
    as a percentage) or one given. A value outside the range is refused with the range, never cut.
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
        *,
        key: str | None = None,
        percent: bool = False,
        rule: NumberRule | None = None,
        quantity: Quantity = Quantity.PLAIN,
    ):
        super().__init__(parent)
        if rule is None and key is not None:
            rule = PERCENT_FIELDS[key] if percent else FIELD_RULES[key]
        if rule is None:
            rule = NumberRule(quantity, minimum, maximum, integer)
        self.rule, self.optional, self.key = rule, optional, key
        self.edit = QLineEdit(self)
        self.edit.setPlaceholderText(placeholder)
        self.edit.setClearButtonEnabled(optional)
        self.message = ToneLabel("", "problem", self)
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

    @property
    def integer(self) -> bool:
        return self.rule.integer

    @property
    def minimum(self) -> float | None:
        return self.rule.minimum

    @property
    def maximum(self) -> float | None:
        return self.rule.maximum

    def setToolTip(self, text: str) -> None:  # noqa: N802 - Qt override
        tip = f"{text}\n\n{self.rule_hint()}" if text else self.rule_hint()
        self.edit.setToolTip(tip)
        super().setToolTip(tip)

    def rule_hint(self) -> str:
        """What the field takes, for its tooltip: ``A number of tokens, between 1 and 100,000,000.``"""
        what = quantity_name(self.rule.quantity)
        return f"{what[0].upper()}{what[1:]}, {self.rule.range_text()} (e.g. {quantity_examples(self.rule.quantity)})."

    def value(self) -> float | None:
        text = self.edit.text()
        if not text.strip():
            if self.optional:
                return None
            raise ValueError("is required")
        return self.rule.parse(text)

    def set_value(self, value: float | None) -> None:
        """Show a value without emitting ``edited``."""
        if value is None:
            text = ""
        elif abs(value) >= 1e6 and float(value).is_integer() and abs(value) % 1e5 == 0:
            scale, suffix = next(
                (sc, sf) for sc, sf in ((1e12, "T"), (1e9, "B"), (1e6, "M")) if abs(value) >= sc
            )
            text = f"{value / scale:.6g}{suffix}"
        elif self.integer or float(value).is_integer():
            text = f"{int(value):,}"
        else:
            text = f"{value:g}"
        self.edit.setText(text)
        self.show_error("")

    def enter(self, text: str) -> None:
        """Put ``text`` in the field as typing it would (validated, ``edited`` emitted)."""
        self.edit.setText(text)
        self._on_text_edited(text)

    def show_error(self, message: str) -> None:
        self.message.setText(message)
        self.message.setVisible(bool(message))
        self.edit.setProperty("invalid", bool(message))
        problem = colors(self.palette()).problem
        self.edit.setStyleSheet(f"border: 1px solid {problem};" if message else "")

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
    label = ToneLabel(text, "muted")
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label
