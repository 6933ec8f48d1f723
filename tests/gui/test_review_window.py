"""A procurement review in the window, driven as a user drives it: the scenario's name and the PDF's
title, the planning horizon and the providers on the Budget page, a stale price at the pick in the
summary, and a scenario from a newer format version."""

from __future__ import annotations

import datetime
import json
import subprocess

import pytest
from gui_helpers import click, retype, settle
from PySide6.QtCore import QPoint, Qt

from gpuadvisor.core.formats.scenario import default_scenario, scenario_to_dict
from gpuadvisor.core.presentation.prices import pick_price_warnings, rent_as
from gpuadvisor.core.presentation.report import build_report
from gpuadvisor.core.presentation.titles import default_title

needs_poppler = pytest.mark.skipif(
    subprocess.run(["which", "pdftotext"], capture_output=True).returncode != 0,
    reason="poppler-utils (pdftotext) is not installed",
)


def click_at(qtbot, widget, pos) -> None:
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton, pos=pos)


def _select(qtbot, combo, data) -> None:
    """Choose an item of a combo box with the keyboard, as a user does."""
    combo.setFocus()
    target = combo.findData(data)
    while combo.currentIndex() != target:
        key = Qt.Key.Key_Down if combo.currentIndex() < target else Qt.Key.Key_Up
        qtbot.keyClick(combo, key)


def test_the_name_follows_the_model_and_workload_until_one_is_typed(window, qtbot):
    w = window
    assert w.name_field.line.text() == ""
    assert w.name_field.line.placeholderText() == "LoRA fine-tune of Llama 3.1 8B"
    # Switch to inference with a 70B model: the name, the report's title and the JSON follow.
    w.show_page(0)
    _select(qtbot, w.workload_page.kind, "inference")
    settle(w)
    w.show_page(1)
    lst = w.model_page.preset_list
    row = next(i for i in range(lst.count()) if lst.item(i).data(Qt.ItemDataRole.UserRole) == "llama-3.1-70b")
    lst.scrollToItem(lst.item(row))
    click_at(qtbot, lst.viewport(), lst.visualItemRect(lst.item(row)).center())
    settle(w)
    assert w.state.scenario.model.preset == "llama-3.1-70b"
    est = w.state.estimate
    title = default_title(est)
    assert title.startswith("Inference with ") and w.name_field.line.placeholderText() == title
    report = build_report(est, w.state.gpus.meta, datetime.date(2026, 12, 6))
    assert report.title == title and "LoRA" not in report.title
    # A typed name stays, whatever the workload.
    retype(qtbot, w.name_field.line, "Q3 capacity review")
    settle(w)
    assert w.state.scenario.name == "Q3 capacity review"
    assert build_report(w.state.estimate, w.state.gpus.meta, datetime.date(2026, 12, 6)).title == (
        "Q3 capacity review"
    )


def test_the_horizon_is_set_on_the_budget_page_and_the_answer_says_so(window, qtbot):
    w = window
    assert "no deadline given: the cheapest setup that finishes within 90 days" in w.summary.text()
    w.show_page(2)
    retype(qtbot, w.budget_page.horizon.edit, "30")
    settle(w)
    assert w.state.scenario.budget.horizon_days == 30
    assert "finishes within 30 days" in w.summary.text()
    retype(qtbot, w.budget_page.horizon.edit, "0")
    settle(w)
    assert w.state.error and "Horizon (days)" in w.state.error  # refused where typed, in the page's words


def test_providers_set_the_price_used(window, qtbot):
    w = window
    w.show_page(2)
    page = w.budget_page
    assert not page.providers.isVisibleTo(page)
    _select(qtbot, page.rent_from, "chosen")
    assert page.providers.isVisibleTo(page)
    settle(w)
    assert w.state.error and "Providers" in w.state.error  # none ticked yet
    names = [page.providers.item(i).text() for i in range(page.providers.count())]
    assert {"lambda", "azure"} <= set(names)
    item = page.providers.item(names.index("lambda"))
    rect = page.providers.visualItemRect(item)
    # A click on the item's check box ticks it.
    click_at(qtbot, page.providers.viewport(), QPoint(rect.left() + 9, rect.center().y()))
    settle(w)
    assert item.checkState() == Qt.CheckState.Checked
    assert not w.state.error and w.state.scenario.budget.providers == ("lambda",)
    rec = w.state.estimate.recommended
    offers = w.state.estimate.instances_for(rec)
    assert offers and all(o.provider == "lambda" for o in offers)
    assert rec.cost.usd_per_hour == pytest.approx(offers[0].usd_per_hour)
    detail = w.detail.toPlainText()
    assert f"Rent it as {offers[0].instances} \u00d7 {offers[0].instance_type} (lambda" in detail


def test_a_stale_price_at_the_pick_is_flagged_in_the_summary(window, qtbot):
    w = window
    w.show_page(0)
    gpu = w.workload_page.gpu
    _select(qtbot, gpu, "gh200")
    settle(w)
    est = w.state.estimate
    assert est.recommended.gpu.id == "gh200"
    flag = pick_price_warnings(est, datetime.date.today(), w.state.stale_months)
    assert flag and "GH200" in flag[0]
    assert w.results.warnings(est)[0] == flag[0]  # first of the warnings the summary shows
    tooltip = w.summary.toolTip()
    assert "Stale price at the recommendation" in tooltip
    # ... and at the pick itself, in the answer's line, whatever the window's width.
    assert "⚠ price of 2026-05-20: stale" in w.summary.text()


def test_a_newer_format_version_says_so_in_the_window(window, tmp_path):
    w = window
    data = scenario_to_dict(default_scenario())
    data["version"] = 7
    path = tmp_path / "newer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert w.open_path(str(path))
    settle(w)
    said = "written by a newer gpuadvisor (format version 7"
    assert said in w.statusBar().currentMessage()
    assert any(said in warning for warning in w.results.warnings(w.state.estimate))
    assert said in w.summary.toolTip()


@needs_poppler
def test_the_pdf_is_titled_after_the_scenario(window, qtbot, tmp_path):
    w = window
    retype(qtbot, w.name_field.line, "Fine-tune for the support bot")
    settle(w)
    target = tmp_path / "review.pdf"
    job = w.export_report_to(str(target))
    job.wait(60_000)
    qtbot.waitUntil(lambda: target.exists(), timeout=60_000)
    text = subprocess.run(["pdftotext", str(target), "-"], capture_output=True, text=True, check=True).stdout
    assert text.lstrip().startswith("Fine-tune for the support bot")
    # The recommendation box names the instance and what the job costs there, as the core says it.
    sentence = rent_as(w.state.estimate)
    assert sentence.startswith("Rent it as ") and " job about $" in sentence
    assert " ".join(sentence.split()) in " ".join(text.split())
    click(qtbot, w.name_field.line)  # the window stays usable
