"""Helpers that drive the real window as a user does (clicks and typing); see conftest.py."""

from __future__ import annotations

from PySide6.QtCore import Qt


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


def click(qtbot, widget) -> None:
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton)


def retype(qtbot, line_edit, text: str) -> None:
    """Select everything in a line edit (or a number field's) and type ``text`` over it, key by key."""
    line_edit = getattr(line_edit, "edit", line_edit)
    line_edit.setFocus()
    line_edit.selectAll()
    qtbot.keyClick(line_edit, Qt.Key.Key_Backspace)
    qtbot.keyClicks(line_edit, text)
