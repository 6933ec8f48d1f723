"""Helpers that drive the real window as a user does (clicks and typing); see conftest.py."""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QAbstractItemView, QCheckBox, QComboBox, QGroupBox, QStyle, QStyleOptionGroupBox


def close_window(w) -> None:
    """Close the window and the tool windows it opened, never prompting about unsaved changes."""
    w.state.dirty = False  # a modal "save changes?" dialog would wait forever
    for name in ("catalog_editor", "measurements_dialog", "help_dialog"):
        child = getattr(w, name, None)
        if child is not None:
            child.close()
    w.close()
    w.deleteLater()


def settle(w) -> None:
    """Let the debounced recompute run now."""
    w.state.flush()


def usable(widget) -> None:
    """Fail unless a user could reach ``widget``: shown and enabled."""
    assert widget.isVisible() and widget.isEnabled(), f"{widget!r} is hidden or disabled"


def click(qtbot, widget, pos: QPoint | None = None) -> None:
    """A left click on ``widget`` (at ``pos``)."""
    if pos is None:
        qtbot.mouseClick(widget, Qt.MouseButton.LeftButton)
    else:
        qtbot.mouseClick(widget, Qt.MouseButton.LeftButton, pos=pos)


def retype(qtbot, line_edit, text: str) -> None:
    """Select everything in a line edit (or a number field's) and type ``text`` over it, key by key."""
    line_edit = getattr(line_edit, "edit", line_edit)
    line_edit.setFocus()
    line_edit.selectAll()
    qtbot.keyClick(line_edit, Qt.Key.Key_Backspace)
    qtbot.keyClicks(line_edit, text)


def type_over(qtbot, widget, text: str) -> None:
    """:func:`retype` into a line edit or spin box a user can reach (shown and enabled)."""
    usable(widget)
    retype(qtbot, widget, text)


def enter(qtbot, field, text: str) -> None:
    """Type ``text`` over a :class:`~gpuadvisor.gui.widgets.NumberField` (or a line edit) and press
    Return, as a user finishes an entry."""
    edit = getattr(field, "edit", field)
    type_over(qtbot, edit, text)
    qtbot.keyClick(edit, Qt.Key.Key_Return)


def choose(qtbot, combo: QComboBox, data) -> None:
    """Open ``combo``'s list with a click and click the entry whose data is ``data``."""
    index = combo.findData(data)
    assert index >= 0, f"{data!r} is not offered"
    usable(combo)
    click(qtbot, combo)
    view = combo.view()
    qtbot.waitUntil(view.isVisible, timeout=2000)
    item = view.model().index(index, combo.modelColumn())
    view.scrollTo(item)
    centre = view.visualRect(item).center()
    # The list ignores a release that comes at once after it opened (the click that opened it)
    # unless the pointer moved over it first, as a hand does.
    qtbot.mouseMove(view.viewport(), centre + QPoint(0, 1))
    qtbot.mouseMove(view.viewport(), centre)
    click(qtbot, view.viewport(), centre)
    qtbot.waitUntil(lambda: not view.isVisible(), timeout=2000)
    assert combo.currentIndex() == index, (combo.currentText(), data)


def show_tab(qtbot, tabs, index: int) -> None:
    """Click the tab ``index`` of a QTabWidget."""
    bar = tabs.tabBar()
    usable(bar)
    click(qtbot, bar, bar.tabRect(index).center())
    assert tabs.currentIndex() == index


def tick(qtbot, box: QGroupBox | QCheckBox, checked: bool) -> None:
    """Click a check box, or a checkable group box's title check box, until it is ``checked``."""
    usable(box)
    if box.isChecked() == checked:
        return
    if isinstance(box, QGroupBox):
        opt = QStyleOptionGroupBox()
        box.initStyleOption(opt)
        rect = box.style().subControlRect(
            QStyle.ComplexControl.CC_GroupBox, opt, QStyle.SubControl.SC_GroupBoxCheckBox, box
        )
        click(qtbot, box, rect.center())
    else:
        click(qtbot, box)
    assert box.isChecked() == checked


def click_item(qtbot, view: QAbstractItemView, index) -> None:
    """Scroll a list or table to the model ``index`` and click it."""
    usable(view)
    view.scrollTo(index)
    click(qtbot, view.viewport(), view.visualRect(index).center())
