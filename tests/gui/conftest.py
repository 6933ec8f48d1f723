"""The GUI tests' shared parts: the real main window, built as the app builds it, and helpers
that drive it as a user does (clicks and typing)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from gui_helpers import close_window

from gpuadvisor.core.estimation.estimate import estimate
from gpuadvisor.core.formats.scenario import ModelSource, default_scenario
from gpuadvisor.core.specs.workload import Hardware
from gpuadvisor.gui.app import build_window
from gpuadvisor.storage.user_catalog_store import load_catalogs


@pytest.fixture
def window(qtbot):
    """The main window with the default scenario, shown and settled (charts created at once)."""
    w = build_window(deferred_charts=False)
    w.show()
    qtbot.waitExposed(w)
    w.state.flush()
    yield w
    close_window(w)


@pytest.fixture(scope="module")
def catalogs():
    """The effective catalogs (bundled plus the user's edits, none in tests)."""
    return load_catalogs()


@pytest.fixture(scope="module")
def est_limits(catalogs):
    """The default scenario with a 2 h deadline and a $30 budget."""
    s = default_scenario()
    return estimate(replace(s, budget=replace(s.budget, deadline_hours=2.0, max_total_usd=30.0)), *catalogs)


@pytest.fixture(scope="module")
def est_nothing_fits(catalogs):
    """A 405B full fine-tune on one GPU: nothing fits anywhere."""
    s = default_scenario()
    s = replace(
        s,
        model=ModelSource(preset="llama-3.1-405b"),
        workload=replace(s.workload, kind="full_finetune"),
        hardware=Hardware(gpu_count=1),
    )
    return estimate(s, *catalogs, with_advice=False)
