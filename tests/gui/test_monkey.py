"""A seeded monkey drives the window through 1,000 random edits across the three pages, the GPU
choices and the catalog editor, typing good and bad values. After each settle: no exception
(pytest-qt fails the test on one raised in a slot), no NaN or inf in any view, results greyed
whenever an input is invalid, and the summary, the ranking's top row and a fresh estimate of the
scenario on display name the same setup, as do its `estimate --json` and its PDF report."""

from __future__ import annotations

import datetime
import math
import random
import re

import pytest
from gui_helpers import retype, settle

from gpuadvisor.core.errors import InputError
from gpuadvisor.core.estimation.estimate import estimate
from gpuadvisor.core.presentation.report import build_report
from gpuadvisor.core.presentation.serialize import estimate_to_dict

EDITS = int(__import__("os").environ.get("GPUADVISOR_MONKEY_EDITS", "1000"))
NUMBERS = [
    "1",
    "2",
    "8",
    "64",
    "500",
    "2048",
    "1e8",
    "5e8",
    "2B",
    "100k",
    "0",
    "-3",
    "abc",
    "1e30",
    "",
    "7.5",
    "1e3",
    "4096",
    "12.5",
]
TODAY = datetime.date(2026, 11, 30)
BAD = re.compile(r"\bnan\b|\binf\b", re.IGNORECASE)


def _pick_combo(rng, box):
    if box.count():
        box.setCurrentIndex(rng.randrange(box.count()))


def _edit(rng, w, qtbot):
    """One random edit, as a user would make it."""
    wp, mp, bp = w.workload_page, w.model_page, w.budget_page
    roll = rng.random()
    if roll < 0.12:
        w.show_page(0)
        _pick_combo(rng, wp.kind)
    elif roll < 0.22:
        w.show_page(0)
        retype(qtbot, wp.batch, str(rng.choice([1, 2, 4, 8, 16, 64, 256])))
    elif roll < 0.30:
        w.show_page(0)
        field = rng.choice([wp.train_tokens, wp.requests, wp.dataset_tokens, wp.epochs])
        retype(qtbot, field.edit, rng.choice(NUMBERS))
    elif roll < 0.38:
        w.show_page(0)
        _pick_combo(rng, rng.choice([wp.gpu, wp.count, wp.parallelism, wp.optimizer, wp.engine]))
    elif roll < 0.44:
        w.show_page(0)
        retype(
            qtbot,
            rng.choice([wp.seq_len, wp.prompt, wp.output]),
            str(rng.choice([128, 512, 2048, 8192, 32768])),
        )
    elif roll < 0.48:
        w.show_page(0)
        rng.choice([wp.checkpointing, wp.flash]).click()
    elif roll < 0.60:
        w.show_page(1)
        lst = mp.preset_list
        lst.setCurrentRow(rng.randrange(lst.count()))
    elif roll < 0.68:
        w.show_page(1)
        _pick_combo(rng, rng.choice([mp.weights, mp.kv]))
    elif roll < 0.72:
        w.show_page(1)
        mp.source_params.click()
        retype(qtbot, mp.params.edit, rng.choice(["7B", "70B", "1e9", "xyz", "", "3.2B"]))
        if rng.random() < 0.7:
            mp.source_preset.click()
    elif roll < 0.86:
        w.show_page(2)
        field = rng.choice([bp.deadline, bp.max_total, bp.max_per_hour, bp.utilization, bp.months])
        retype(qtbot, field.edit, rng.choice(NUMBERS))
    elif roll < 0.90:
        w.show_page(2)
        _pick_combo(rng, rng.choice([bp.price, bp.purchase]))
    elif roll < 0.96:
        editor = w.open_catalog_editor()
        model = editor.models["gpus"]
        row = rng.randrange(len(model.rows))
        column = rng.choice(["cloud_usd_per_hour_expected", "cloud_usd_per_hour_low", "memory_gib_usable"])
        model.setData(
            model.index(row, model.columns.index(column)), rng.choice(["0.5", "2", "9", "-1", "x", "80"])
        )
        editor.flush()
    else:
        editor = w.open_catalog_editor()
        if editor.undo.canUndo():
            editor.undo.undo()
            editor.flush()


def _repair(w, qtbot) -> None:
    """Fix every invalid field as a user would after seeing the message: clear or retype it."""
    from gpuadvisor.gui.widgets import NumberField

    for i, page in enumerate(w.pages):
        for field in page.findChildren(NumberField):
            try:
                field.value()
            except ValueError:
                w.show_page(i)
                retype(qtbot, field.edit, "" if field.optional else ("60" if field.maximum == 100 else "1"))
    if w.state.error and w.model_page.sources.checkedId() != 0:
        w.show_page(1)
        w.model_page.source_preset.click()


def _check(w):
    settle(w)
    est = w.state.estimate
    assert est is not None
    texts = [w.summary.text(), w.results.detail.toPlainText()]
    model = w.results.table.model()
    for r in range(min(model.rowCount(), 30)):
        for c in range(model.columnCount()):
            value = model.index(r, c).data()
            if value is not None:
                texts.append(str(value))
    for text in texts:
        assert not BAD.search(text), text[:300]
    for c in est.candidates:
        if c.cost is not None:
            assert all(math.isfinite(x) for x in c.cost.job_hours)
    if w.state.error:
        assert not w.results.table.isEnabled() and "Stale" in w.summary.text()
        return
    assert w.results.table.isEnabled()
    # The estimate on display is the scenario on display, and everything names the same setup.
    assert est.scenario == w.state.scenario
    try:
        fresh = estimate(w.state.scenario, w.state.gpus, w.state.models)
    except InputError:  # pragma: no cover - the window would have shown the error
        raise AssertionError("the window shows results for a scenario the core rejects") from None
    key = fresh.decision.recommended_key
    assert est.decision.recommended_key == key
    assert estimate_to_dict(fresh)["recommendation"]["recommended"] == key  # what `estimate --json` prints
    assert build_report(fresh, w.state.gpus.meta, TODAY).recommended_key == key  # what the PDF recommends
    if key is not None:
        assert fresh.candidate(key).gpu.name in w.summary.text()
        assert w.results.key_of_row(0) == key
    else:
        assert "Recommended" not in w.summary.text()


@pytest.mark.slow
def test_a_thousand_random_edits(window, qtbot):
    rng = random.Random(20261130)
    for i in range(EDITS):
        if window.state.error and rng.random() < 0.6:
            _repair(window, qtbot)
        else:
            _edit(rng, window, qtbot)
        if i % 5 == 4 or i == EDITS - 1:
            _check(window)
