"""Guard against Qt bindings that corrupt CPython's reference counts.

PySide6 6.12.0 (abi3 wheels) on CPython 3.11 returned None/True/False from every void or
bool method without taking a reference, so each call lowered their count by one; after a few
thousand calls (a minute of live chart updates) the interpreter aborted with "deallocating
None". pyproject.toml pins a release without the bug; this test fails if an upgrade brings it back.
"""

import sys

from PySide6.QtGui import QPainterPath
from PySide6.QtWidgets import QLabel


def _drift(obj, call, n=2000):
    call()
    before = sys.getrefcount(obj)
    for _ in range(n):
        call()
    return sys.getrefcount(obj) - before


def test_void_methods_keep_none_alive(qtbot):
    label = QLabel()
    qtbot.addWidget(label)
    path = QPainterPath()
    assert _drift(None, lambda: label.setText("x")) >= -5
    assert _drift(None, lambda: path.moveTo(0, 0)) >= -5
    assert _drift(None, lambda: label.parent()) >= -5


def test_bool_methods_keep_booleans_alive(qtbot):
    label = QLabel()
    qtbot.addWidget(label)
    assert _drift(False, label.isVisible) >= -5
    assert _drift(True, label.isEnabled) >= -5
