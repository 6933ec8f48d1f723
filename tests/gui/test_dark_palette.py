"""On a dark desktop every text the user reads keeps its contrast: the pages' explanations, a
field's error, and the catalog editor's tinted rows and counts (they used fixed dark reds and
greys, or the desktop's light text on light tints, and could not be read)."""

from __future__ import annotations

import pytest
from gui_helpers import retype, settle
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication

from gpuadvisor.gui.theme import DARK, LIGHT, colors, is_dark
from gpuadvisor.gui.widgets import ToneLabel

#: WCAG 2.1's minimum contrast for normal text.
MIN_CONTRAST = 4.5


def contrast(a: QColor, b: QColor) -> float:
    """WCAG 2.1 contrast ratio of two colours (1 to 21)."""

    def luminance(c: QColor) -> float:
        def channel(v: float) -> float:
            return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

        return 0.2126 * channel(c.redF()) + 0.7152 * channel(c.greenF()) + 0.0722 * channel(c.blueF())

    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


@pytest.fixture
def dark_window(window):
    app = QApplication.instance()
    old_palette, old_style = app.palette(), app.style().name()
    window.set_appearance("dark")
    QApplication.processEvents()
    assert is_dark(app.palette())
    yield window
    app.setPalette(old_palette)
    app.setStyle(old_style)
    QApplication.processEvents()


def _text_on_window(label) -> float:
    palette = label.palette()
    return contrast(palette.color(QPalette.ColorRole.WindowText), palette.color(QPalette.ColorRole.Window))


def test_the_pages_explanations_are_readable_on_a_dark_desktop(dark_window):
    hints = [
        label
        for page in dark_window.pages
        for label in page.findChildren(ToneLabel)
        if label.text() and label.wordWrap()
    ]
    assert hints, "the pages explain themselves in hint lines"
    for label in hints:
        assert _text_on_window(label) >= MIN_CONTRAST, label.text()


def test_a_fields_error_is_readable_on_a_dark_desktop(dark_window, qtbot):
    field = dark_window.workload_page.findChildren(type(dark_window.budget_page.months))[0]
    retype(qtbot, field.edit, "lots")
    assert field.message.isVisibleTo(field) and field.message.text()
    assert field.message.palette().color(QPalette.ColorRole.WindowText) == QColor(DARK.problem)
    assert _text_on_window(field.message) >= MIN_CONTRAST
    retype(qtbot, field.edit, "1")
    settle(dark_window)


def test_a_tone_follows_the_appearance_back_to_light(dark_window):
    label = ToneLabel("Every change updates the results at once.", "muted")
    assert label.palette().color(QPalette.ColorRole.WindowText) == QColor(DARK.muted)
    QApplication.instance().setPalette(QApplication.style().standardPalette())
    QApplication.processEvents()
    assert colors(label.palette()) is LIGHT
    assert label.palette().color(QPalette.ColorRole.WindowText) == QColor(LIGHT.muted)


def test_the_catalog_editors_tinted_rows_and_counts_are_readable_on_a_dark_desktop(dark_window):
    editor = dark_window.open_catalog_editor()
    model = editor.models["gpus"]
    tab = editor.tabs_by_kind["gpus"]
    row = next(i for i, r in enumerate(model.rows) if r["id"] == "h100-sxm")
    tab.select_source_row(row)
    editor.duplicate_rows()
    copy = len(model.rows) - 1
    editor.add_row()  # an empty row: incomplete, so its first missing cell is marked invalid
    empty = len(model.rows) - 1
    editor.flush()
    missing = next(c for c in model.columns if model.cell_error(empty, c))
    for row, column in ((copy, "name"), (empty, missing)):  # an added row's tint, and an invalid cell's
        index = model.index(row, model.columns.index(column))
        background = model.data(index, Qt.ItemDataRole.BackgroundRole)
        foreground = model.data(index, Qt.ItemDataRole.ForegroundRole)
        assert background is not None and foreground is not None
        assert contrast(foreground.color(), background.color()) >= MIN_CONTRAST, column
    assert DARK.problem in tab.counts.text()  # "1 invalid" in the dark palette's problem colour
    assert (
        contrast(QColor(DARK.problem), dark_window.palette().color(QPalette.ColorRole.Window)) >= MIN_CONTRAST
    )
