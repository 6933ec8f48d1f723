"""Tools > Measurements & calibration, driven as a user would: record runs, read an nvidia-smi log,
fit a calibration from runs made with a known factor and apply it to the main window's estimate."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from PySide6.QtCore import Qt

from gpuadvisor.core.estimation.estimate import estimate
from gpuadvisor.core.formats.measurements import Measurement
from gpuadvisor.core.formats.scenario import Efficiency, scenario_snapshot
from gpuadvisor.core.specs.workload import Hardware
from gpuadvisor.gui.app import build_window
from gpuadvisor.gui.measurements_dialog import MeasurementsModel
from gpuadvisor.storage import load_calibration, load_measurements, load_settings, save_measurements

TRUE_MFU = 0.30
GPU = "a100-80gb"


@pytest.fixture
def dialog(window, qtbot):
    d = window.open_measurements()
    qtbot.waitExposed(d)
    return d


def click(qtbot, widget):
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton)


def choose(combo, data):
    index = combo.findData(data)
    assert index >= 0, data
    combo.setCurrentIndex(index)


def test_the_menu_opens_a_non_modal_window(window, dialog):
    assert window.measurements_action in window.tools_menu.actions()
    assert dialog.isVisible() and not dialog.isModal()
    assert window.open_measurements() is dialog  # one window, raised again
    assert not dialog.use_calibration.isChecked() and not window.calibration_label.isVisible()
    assert dialog.model.rowCount() == 0


def test_record_a_typed_measurement(window, dialog, qtbot):
    choose(dialog.gpu_box, GPU)
    dialog.count_field.enter("1")
    qtbot.keyClicks(dialog.throughput.edit, "2500")
    qtbot.keyClicks(dialog.memory.edit, "31.5")
    qtbot.keyClicks(dialog.note, "first run")
    click(qtbot, dialog.record_button)

    assert dialog.model.rowCount() == 1
    row = {MeasurementsModel.HEADERS[c]: dialog.model.text(0, c) for c in range(dialog.model.columnCount())}
    assert row["Id"] == "m1" and row["GPU"] == f"1× {GPU}" and row["Measured tok/s"] == "2,500"
    err = dialog.model.text(0, MeasurementsModel.COL_ERR_TPS)
    assert err.endswith("%") and err[0] in "+-"
    assert dialog.model.text(0, MeasurementsModel.COL_ERR_MEM).endswith("%")
    (stored,) = load_measurements().value  # in the user data folder ...
    assert stored.tokens_per_s == 2500 and stored.peak_memory_gib == 31.5 and stored.note == "first run"
    assert stored.scenario["model"]["preset"] == "llama-3.1-8b" and stored.source == "typed"
    assert window.state.scenario.measurements == (stored,) and window.state.dirty  # ... and in the scenario
    assert "Recorded m1" in dialog.message.text()
    points, calibrated = dialog.chart_points()
    assert len(points) == 1 and points[0][0] == 2500 and calibrated == []


def test_saving_the_scenario_keeps_the_measurements(window, dialog, qtbot, tmp_path):
    choose(dialog.gpu_box, GPU)
    qtbot.keyClicks(dialog.throughput.edit, "2500")
    click(qtbot, dialog.record_button)
    path = tmp_path / "with-runs.json"
    assert window._save_to(path)
    assert [m["id"] for m in json.loads(path.read_text(encoding="utf-8"))["measurements"]] == ["m1"]


def test_bad_input_is_named_and_nothing_is_recorded(dialog, qtbot):
    click(qtbot, dialog.record_button)
    assert "give the throughput, the peak memory or both" in dialog.message.text()
    qtbot.keyClicks(dialog.throughput.edit, "-3")
    click(qtbot, dialog.record_button)
    assert dialog.message.text() == "Not recorded: throughput: must be above 0 (got -3)"
    assert load_measurements().value == [] and dialog.model.rowCount() == 0


def test_load_an_nvidia_smi_log_shows_the_diagnosis(dialog, tmp_path):
    lines = [
        "timestamp, name, memory.used [MiB], memory.total [MiB], utilization.gpu [%], utilization.memory [%]"
    ]
    lines += [
        f"2026/11/20 10:00:{s:02d}.000, NVIDIA A100-SXM4-80GB, 30000 MiB, 81920 MiB, 35 %, 20 %"
        for s in range(15)
    ]
    log = tmp_path / "gpu-log.csv"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert dialog.load_smi_log(log)
    text = dialog.findings_view.toPlainText()
    assert "CPU or data-pipeline bottleneck" in text and "num_workers" in text
    assert dialog.memory.value() == pytest.approx(30000 / 1024, abs=1e-3)
    assert dialog.memory_source.currentData() == "nvidia-smi log"
    bad = tmp_path / "not-a-log.csv"
    bad.write_text("hello\n", encoding="utf-8")
    assert not dialog.load_smi_log(bad)
    assert "not-a-log.csv: line 1: is not an nvidia-smi --query-gpu CSV header" in dialog.message.text()


def synthetic_runs(state):
    """Runs of the current scenario on one A100 at a known MFU (what the hardware 'really' reached)."""
    runs = []
    for i, batch in enumerate((2, 4, 8), start=1):
        sc = replace(
            state.scenario,
            workload=replace(state.scenario.workload, batch_size=batch),
            hardware=Hardware(gpu=GPU, gpu_count=1),
        )
        truth = estimate(
            replace(sc, efficiency=Efficiency(mfu=TRUE_MFU)), state.gpus, state.models, with_advice=False
        ).candidates[0]
        runs.append(
            Measurement(
                id=f"m{i}",
                gpu_id=GPU,
                kind=sc.workload.kind,
                model="llama-3.1-8b",
                batch_size=batch,
                seq_len=sc.workload.seq_len,
                tokens_per_s=truth.performance.tokens_per_s.expected,
                scenario=scenario_snapshot(sc),
            )
        )
    return runs


def test_fit_calibration_and_apply_it_to_the_window(window, dialog, qtbot, tmp_path):
    state = window.state
    runs = synthetic_runs(state)
    save_measurements(runs)
    dialog.reload()
    assert dialog.model.rowCount() == 3
    key = f"1x {GPU} (none)"
    measured = next(m.tokens_per_s for m in runs if m.batch_size == state.scenario.workload.batch_size)
    before = state.estimate.candidate(key).performance.tokens_per_s.expected

    click(qtbot, dialog.fit_button)
    profile = state.calibration
    (fit,) = profile.fits
    assert (fit.gpu_id, fit.factor_name, fit.n_measurements) == (GPU, "mfu", 3)
    assert fit.value == pytest.approx(TRUE_MFU, rel=0.01)
    assert load_calibration().value == profile  # saved in the user data folder
    assert dialog.factors.rowCount() == 1
    assert dialog.factors.text(0, 2) == "mfu" and float(dialog.factors.text(0, 3)) == pytest.approx(
        TRUE_MFU, abs=2e-3
    )
    assert "→" in dialog.factors.text(0, 5)
    points, calibrated = dialog.chart_points()  # measured points and the calibrated estimate on y = x
    assert len(points) == 3 and len(calibrated) == 3
    assert all(y == pytest.approx(x, rel=0.01) for x, y in calibrated)
    assert not all(y == pytest.approx(x, rel=0.01) for x, y in points)
    assert dialog.model.text(0, MeasurementsModel.COL_CAL_ERR_TPS) in ("+0.0%", "-0.0%")
    assert state.active_calibration is None  # off until the user turns it on
    assert "Calibrated" not in window.summary.text()

    click(qtbot, dialog.use_calibration)
    state.flush()
    assert dialog.use_calibration.isChecked() and state.active_calibration is profile
    after = state.estimate.candidate(key).performance.tokens_per_s.expected
    assert abs(after - measured) < abs(before - measured)
    assert after == pytest.approx(measured, rel=0.01)
    assert state.estimate.calibrated_gpus == (GPU,)
    rm = window.ranking_model  # the ranking table marks the calibrated GPU's rows
    names = {rm.texts(i)[0] for i, c in enumerate(rm.rows) if c.gpu.id == GPU}
    assert names and all(n.endswith("(calibrated)") for n in names)
    assert not any(rm.texts(i)[0].endswith("(calibrated)") for i, c in enumerate(rm.rows) if c.gpu.id != GPU)
    assert "Calibrated to your measurements on 1 GPU type" in window.summary.text()
    assert window.calibration_label.isVisible()
    assert window.calibration_label.text() == "Calibration on: 1 GPU type calibrated"
    assert load_settings()[0].calibration_enabled is True  # remembered

    click(qtbot, dialog.use_calibration)
    state.flush()
    assert state.estimate.candidate(key).performance.tokens_per_s.expected == pytest.approx(before)
    assert not window.calibration_label.isVisible() and "Calibrated" not in window.summary.text()

    # Export, then a malformed profile is refused with a message and changes nothing.
    out = tmp_path / "profile.json"
    assert dialog.export_profile_to(out)
    bad = tmp_path / "bad.json"
    bad.write_text(
        out.read_text(encoding="utf-8").replace('"n_measurements": 3', '"n_measurements": 0'),
        encoding="utf-8",
    )
    assert not dialog.import_profile_from(bad)
    assert (
        dialog.message.text()
        == "Not imported: bad.json: fits[0].n_measurements: must be a whole number >= 1 (got 0)"
    )
    assert state.calibration == profile
    assert dialog.import_profile_from(out) and state.calibration == profile


def test_calibration_setting_is_restored_at_start(qtbot):
    from gpuadvisor.core.estimation.calibration import CalibrationProfile, FactorFit
    from gpuadvisor.storage import save_calibration, save_settings
    from gpuadvisor.storage.settings import Settings

    save_calibration(
        CalibrationProfile((FactorFit(GPU, "hf-trainer", "mfu", 0.2, 3, 30.0, 1.0, ("m1",)),), "2026-11-30")
    )
    save_settings(Settings(calibration_enabled=True))
    w = build_window(deferred_charts=False)
    qtbot.addWidget(w)
    w.state.flush()
    assert w.state.active_calibration is not None
    assert w.state.estimate.calibration is not None
    assert "Calibrat" in w.summary.text() and w.calibration_label.text().startswith("Calibration on")
    w.state.dirty = False
