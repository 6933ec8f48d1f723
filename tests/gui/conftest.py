"""The GUI tests' shared parts: the real main window, built as the app builds it, and helpers
that drive it as a user does (clicks and typing)."""

from __future__ import annotations

import pytest
from gui_helpers import close_window

from gpuadvisor.gui.app import build_window


@pytest.fixture
def window(qtbot):
    """The main window with the default scenario, shown and settled (charts created at once)."""
    w = build_window(deferred_charts=False)
    w.show()
    qtbot.waitExposed(w)
    w.state.flush()
    yield w
    close_window(w)
