"""Measurements & calibration: record measured runs, compare them with the estimate, fit and apply factors.

A non-modal window (Tools > Measurements & calibration) with four parts:

- a form that records a run of the current scenario: the GPU, the GPU count, tokens/s or seconds
  per step, the peak memory typed in or read from an ``nvidia-smi`` CSV log (whose diagnosis is
  shown), the engine and a note. A recorded run goes to ``measurements.json`` in the user data
  folder and into the scenario, so saving the scenario keeps it;
- a table of every recorded run: measured, estimated and calibrated figures with the errors;
- a chart of estimated against measured tokens/s (the estimate, the calibrated estimate and the
  line y = x, where a perfect estimate lies);
- calibration: "Fit calibration" fits per GPU and engine factors (table: factor, value, number of
  measurements, median error before and after), export and import of profiles, and the
  "Use calibration in estimates" switch, which :class:`~gpuadvisor.gui.state.AppState` applies.

Every number comes from the core (:mod:`gpuadvisor.core.calibration`,
:mod:`gpuadvisor.core.measurements`); files go through :mod:`gpuadvisor.storage`. Problems are
shown in the window's message line, never in a blocking dialog.
"""

from __future__ import annotations

import datetime
import html
from dataclasses import replace
from pathlib import Path
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, QPersistentModelIndex, Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSplitter,
    QTableView,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from ..core.errors import InputError
from ..core.estimation.calibration import (
    CalibrationProfile,
    Comparison,
    EstimatePredictor,
    compare_measurements,
    fit_calibration,
)
from ..core.estimation.estimate import resolve_model
from ..core.formats.measurements import Measurement, next_measurement_id
from ..core.formats.scenario import Scenario, scenario_snapshot
from ..core.formats.smi_log import Finding, LogSummary, diagnose, read_nvidia_smi_log
from ..core.numbers import NumberRule, Quantity
from ..core.specs.constants import engine_for
from ..core.specs.engines import RECORDS
from ..storage import (
    StorageError,
    add_measurement,
    export_calibration,
    import_calibration,
    load_measurements,
    merge_measurements,
    save_calibration,
)
from ..views.charts.palette import (
    BACKGROUND_COLOR,
    FIT_COLOR,
    MUTED_TEXT_COLOR,
    OTHER_COLOR,
    PARETO_COLOR,
    TEXT_COLOR,
)
from .state import AppState
from .widgets import ERROR_STYLE, NumberField, hint

OK_STYLE = f"color: {FIT_COLOR};"
SEVERITY_COLORS = {"ok": FIT_COLOR, "info": MUTED_TEXT_COLOR, "warning": "#b00020"}


def _num(value: float | None, digits: int = 0) -> str:
    return "" if value is None else f"{value:,.{digits}f}"


def _pct(value: float | None) -> str:
    return "" if value is None else f"{value:+.1f}%"


class _TextTable(QAbstractTableModel):
    """A read-only table whose columns are ``HEADERS``."""

    HEADERS: tuple[str, ...] = ()

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.HEADERS)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return self.HEADERS[section]
        return None


class MeasurementsModel(_TextTable):
    """One row per recorded run: measured, estimated and calibrated figures with their errors."""

    COL_ID, COL_GPU, COL_ENGINE, COL_MODEL = range(4)
    COL_TPS, COL_EST_TPS, COL_ERR_TPS, COL_CAL_TPS, COL_CAL_ERR_TPS = range(4, 9)
    COL_MEM, COL_EST_MEM, COL_ERR_MEM, COL_NOTE = range(9, 13)
    HEADERS = (
        "Id",
        "GPU",
        "Engine",
        "Model",
        "Measured tok/s",
        "Estimated tok/s",
        "Error",
        "Calibrated tok/s",
        "Error (cal.)",
        "Measured GiB",
        "Estimated GiB",
        "Error",
        "Note",
    )

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.rows: list[Comparison] = []

    def set_rows(self, rows: list[Comparison]) -> None:
        self.beginResetModel()
        self.rows = list(rows)
        self.endResetModel()

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.rows)

    def text(self, row: int, col: int) -> str:
        c = self.rows[row]
        m = c.measurement
        values = {
            self.COL_ID: m.id,
            self.COL_GPU: f"{m.num_gpus}× {m.gpu_id}",
            self.COL_ENGINE: m.engine or "",
            self.COL_MODEL: f"{m.model}, {m.kind.replace('_', ' ')}, batch {m.batch_size}",
            self.COL_TPS: _num(c.measured_tokens_per_s),
            self.COL_EST_TPS: _num(c.estimated_tokens_per_s),
            self.COL_ERR_TPS: _pct(c.tokens_error_pct),
            self.COL_CAL_TPS: _num(c.calibrated_tokens_per_s),
            self.COL_CAL_ERR_TPS: _pct(c.calibrated_tokens_error_pct),
            self.COL_MEM: _num(c.measured_memory_gib, 1),
            self.COL_EST_MEM: _num(c.estimated_memory_gib, 1),
            self.COL_ERR_MEM: _pct(c.memory_error_pct),
            self.COL_NOTE: c.problem or m.note,
        }
        return values[col]

    def data(
        self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if not index.isValid():
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return self.text(index.row(), index.column())
        if role == Qt.ItemDataRole.TextAlignmentRole and self.COL_TPS <= index.column() < self.COL_NOTE:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ToolTipRole:
            c = self.rows[index.row()]
            m = c.measurement
            return (
                f"{m.id}: measured {m.measured_on or 'undated'}, memory from {m.source}"
                + (f"\n{c.problem}" if c.problem else "")
                + (f"\n{m.note}" if m.note else "")
            )
        return None


class FactorsModel(_TextTable):
    """The fitted factors of a calibration profile: one row per GPU, engine and factor."""

    HEADERS = ("GPU", "Engine", "Factor", "Value", "Measurements", "Error before → after", "Note")

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.profile: CalibrationProfile | None = None

    def set_profile(self, profile: CalibrationProfile | None) -> None:
        self.beginResetModel()
        self.profile = profile
        self.endResetModel()

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() or self.profile is None else len(self.profile.fits)

    def text(self, row: int, col: int) -> str:
        assert self.profile is not None
        f = self.profile.fits[row]
        before = "n/a" if f.error_before_pct is None else f"{f.error_before_pct:.1f}%"
        after = "n/a" if f.error_after_pct is None else f"{f.error_after_pct:.1f}%"
        value = f"{f.value:.2f} GiB" if f.factor_name == "runtime_overhead_gib" else f"{f.value:.3f}"
        return (
            f.gpu_id,
            f.engine,
            f.factor_name,
            value,
            str(f.n_measurements),
            f"{before} → {after}",
            f.note,
        )[col]

    def data(
        self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if not index.isValid() or self.profile is None:
            return None
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            return self.text(index.row(), index.column())
        return None


class MeasurementsDialog(QDialog):
    """The Measurements & calibration window (non-modal)."""

    def __init__(self, state: AppState, parent: QWidget | None = None):
        super().__init__(parent)
        self.state = state
        self.setWindowTitle("Measurements & calibration — gpuadvisor")
        self.setModal(False)
        self.resize(1180, 920)
        self.runs: list[Measurement] = []
        self.comparisons: list[Comparison] = []
        self.smi: LogSummary | None = None
        self.findings: list[Finding] = []
        self._scenario_runs: tuple[Measurement, ...] | None = None
        self._kind = ""

        # --- record a run ---------------------------------------------------------------------
        self.gpu_box = QComboBox()
        for gpu in state.gpus:
            self.gpu_box.addItem(gpu.name, gpu.id)
        self.count_field = NumberField("1", key="hardware.gpu_count")
        self.throughput = NumberField(
            "e.g. 1480", optional=True, rule=NumberRule(Quantity.PLAIN, 0, None, above=True)
        )
        self.throughput_unit = QComboBox()
        self.throughput_unit.addItem("tokens/s (all GPUs)", "tokens_per_s")
        self.throughput_unit.addItem("seconds per step", "seconds_per_step")
        self.tokens_per_step = NumberField(
            "default: batch × sequence × GPUs (training)",
            optional=True,
            rule=NumberRule(Quantity.TOKENS, 0, None, above=True),
        )
        self.memory = NumberField(
            "GiB per GPU, e.g. 71.2", optional=True, rule=NumberRule(Quantity.MEMORY, 0, 4096, above=True)
        )
        self.memory_source = QComboBox()
        self.memory_source.addItem("typed: what nvidia-smi showed", "typed")
        self.memory_source.addItem(
            "torch.cuda.max_memory_allocated (tensors only)", "torch.cuda.max_memory_allocated"
        )
        self.memory_source.addItem("nvidia-smi log (loaded)", "nvidia-smi log")
        self.load_log_button = QPushButton("Load nvidia-smi log…")
        self.load_log_button.clicked.connect(self.on_load_log)
        self.engine_box = QComboBox()
        self.note = QLineEdit()
        self.note.setPlaceholderText("e.g. vLLM 0.6, CUDA graphs on")
        self.record_button = QPushButton("Record measurement")
        self.record_button.setDefault(True)
        self.record_button.clicked.connect(self.on_record)
        self.findings_view = QTextBrowser()
        self.findings_view.setMaximumHeight(150)
        self.findings_view.setPlaceholderText("Load an nvidia-smi log to see its diagnosis.")

        form = QFormLayout()
        form.addRow("GPU", self.gpu_box)
        form.addRow("Number of GPUs", self.count_field)
        speed = QHBoxLayout()
        speed.addWidget(self.throughput, 1)
        speed.addWidget(self.throughput_unit)
        form.addRow("Throughput", speed)
        form.addRow("Tokens per step", self.tokens_per_step)
        mem = QHBoxLayout()
        mem.addWidget(self.memory, 1)
        mem.addWidget(self.load_log_button)
        form.addRow("Peak memory", mem)
        form.addRow("Memory reading", self.memory_source)
        form.addRow("Engine", self.engine_box)
        form.addRow("Note", self.note)
        record_box = QGroupBox("Record a run of the current scenario")
        rb = QVBoxLayout(record_box)
        rb.addLayout(form)
        rb.addWidget(self.record_button, 0, Qt.AlignmentFlag.AlignRight)
        rb.addWidget(QLabel("<b>nvidia-smi diagnosis</b>"))
        rb.addWidget(self.findings_view)
        rb.addWidget(
            hint(
                "Log with: nvidia-smi --query-gpu=timestamp,name,memory.used,memory.total,"
                "utilization.gpu,utilization.memory --format=csv -l 1 > gpu-log.csv"
            )
        )

        # --- estimate vs measured chart --------------------------------------------------------
        import pyqtgraph as pg  # deferred: the window opens on demand

        self.plot = pg.PlotWidget()
        self.plot.setBackground(BACKGROUND_COLOR)  # the same white, labelled look as the main charts
        for name in ("left", "bottom"):
            axis = self.plot.getAxis(name)
            axis.setPen(pg.mkPen(MUTED_TEXT_COLOR))
            axis.setTextPen(pg.mkPen(TEXT_COLOR))
        self.plot.setMinimumHeight(220)
        self.plot.setLabel("bottom", "Measured tokens/s")
        self.plot.setLabel("left", "Estimated tokens/s")
        self.plot.showGrid(x=True, y=True, alpha=0.2)
        self.plot.addLegend(offset=(10, 10), labelTextColor=TEXT_COLOR)
        self.identity_line = self.plot.plot(
            [], [], pen=pg.mkPen(OTHER_COLOR, width=1, style=Qt.PenStyle.DashLine), name="estimate = measured"
        )
        self.estimate_points = pg.ScatterPlotItem(
            size=9, symbol="o", pen=pg.mkPen(PARETO_COLOR), brush=pg.mkBrush(PARETO_COLOR), name="estimate"
        )
        self.calibrated_points = pg.ScatterPlotItem(
            size=10,
            symbol="t",
            pen=pg.mkPen(FIT_COLOR),
            brush=pg.mkBrush(FIT_COLOR),
            name="calibrated estimate",
        )
        self.plot.addItem(self.estimate_points)
        self.plot.addItem(self.calibrated_points)

        top = QSplitter(Qt.Orientation.Horizontal)
        top.addWidget(record_box)
        top.addWidget(self.plot)
        top.setStretchFactor(1, 1)

        # --- table of runs ------------------------------------------------------------------------
        self.model = MeasurementsModel(self)
        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        runs_box = QGroupBox("Recorded runs: estimate versus measurement (error = estimate / measured − 1)")
        QVBoxLayout(runs_box).addWidget(self.table)

        # --- calibration --------------------------------------------------------------------------
        self.fit_button = QPushButton("Fit calibration")
        self.fit_button.setToolTip(
            "Fit per GPU and engine: bandwidth efficiency (inference), MFU (training) and "
            "runtime memory overhead, from the recorded runs"
        )
        self.fit_button.clicked.connect(self.on_fit)
        self.export_button = QPushButton("Export profile…")
        self.export_button.clicked.connect(self.on_export)
        self.import_button = QPushButton("Import profile…")
        self.import_button.clicked.connect(self.on_import)
        self.use_calibration = QCheckBox("Use calibration in estimates")
        self.use_calibration.setToolTip(
            "Apply the fitted factors to the GPUs and engines they were fitted on. "
            "Efficiencies the scenario sets itself still win."
        )
        self.use_calibration.toggled.connect(self._on_use_calibration_toggled)
        self.factors = FactorsModel(self)
        self.factors_table = QTableView()
        self.factors_table.setModel(self.factors)
        self.factors_table.verticalHeader().hide()
        self.factors_table.horizontalHeader().setStretchLastSection(True)
        self.profile_label = QLabel()
        self.profile_label.setWordWrap(True)
        cal_box = QGroupBox("Calibration")
        cb = QVBoxLayout(cal_box)
        buttons = QHBoxLayout()
        for w in (self.fit_button, self.export_button, self.import_button):
            buttons.addWidget(w)
        buttons.addStretch(1)
        buttons.addWidget(self.use_calibration)
        cb.addLayout(buttons)
        cb.addWidget(self.profile_label)
        cb.addWidget(self.factors_table)

        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(top)
        split.addWidget(runs_box)
        split.addWidget(cal_box)
        split.setSizes([440, 260, 220])
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout = QVBoxLayout(self)
        layout.addWidget(split, 1)
        layout.addWidget(self.message)

        state.calibrationChanged.connect(self._on_calibration_changed)
        state.scenarioChanged.connect(self._on_scenario_changed)
        self.prefill()
        self._on_calibration_changed()
        self.reload()

    # --- the form ---------------------------------------------------------------------------------
    def prefill(self) -> None:
        """GPU, count and engine from the current scenario and the selected setup."""
        sc = self.state.scenario
        w = sc.workload
        est = self.state.estimate
        selected = est.candidate(self.state.selected) if est is not None else None
        gpu_id = sc.hardware.gpu or (selected.gpu.id if selected is not None else None)
        if gpu_id is not None and self.gpu_box.findData(gpu_id) >= 0:
            self.gpu_box.setCurrentIndex(self.gpu_box.findData(gpu_id))
        self.count_field.set_value(
            sc.hardware.gpu_count or (selected.gpu_count if selected is not None else 1)
        )
        wanted = "inference" if w.kind == "inference" else "training"
        self.engine_box.clear()
        try:
            default = engine_for(w.engine, w.kind).id
        except InputError:
            default = None
        self._kind = w.kind
        for e in RECORDS.values():
            if e.kind == wanted:
                self.engine_box.addItem(f"{e.name} ({e.id})", e.id)
        if default is not None:
            self.engine_box.setCurrentIndex(max(0, self.engine_box.findData(default)))

    def _show(self, text: str, error: bool = False) -> None:
        self.message.setText(text)
        self.message.setStyleSheet(ERROR_STYLE if error else OK_STYLE)

    def on_load_log(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Load an nvidia-smi log", str(Path.home()), "CSV logs (*.csv *.txt);;All files (*)"
        )
        if path:
            self.load_smi_log(path)

    def load_smi_log(self, path: str | Path) -> bool:
        """Read an nvidia-smi CSV log: its peak memory fills the form and its diagnosis is shown."""
        p = Path(path)
        try:
            summary = read_nvidia_smi_log(p).summary()
            if not summary.gpus:
                raise InputError(p.name, "holds no valid nvidia-smi samples")
        except InputError as exc:
            self._show(str(exc), error=True)
            return False
        self.smi = summary
        self.findings = diagnose(summary)
        top = max(summary.gpus, key=lambda g: g.peak_memory_mib)
        self.memory.set_value(round(top.peak_memory_gib, 3))
        self.memory_source.setCurrentIndex(self.memory_source.findData("nvidia-smi log"))
        if len(summary.gpus) > 1 and self.count_field.edit.text().strip() in ("", "1"):
            self.count_field.set_value(len(summary.gpus))
        self.findings_view.setHtml(self.findings_html())
        self._show(
            f"{p.name}: {len(summary.gpus)} GPU{'s' if len(summary.gpus) != 1 else ''}, peak "
            f"{top.peak_memory_gib:.1f} GiB per GPU over {top.samples} samples."
        )
        return True

    def findings_html(self) -> str:
        parts = []
        for f in self.findings:
            color = SEVERITY_COLORS.get(f.severity, MUTED_TEXT_COLOR)
            parts.append(
                f"<p style='margin:2px 0'><b style='color:{color}'>{html.escape(f.severity)}</b> "
                f"{html.escape(f.text().split('] ', 1)[-1])}</p>"
            )
            if f.advice:
                parts.append(
                    "<ul style='margin:0'>"
                    + "".join(f"<li>{html.escape(a)}</li>" for a in f.advice)
                    + "</ul>"
                )
        return "".join(parts)

    def build_measurement(self) -> Measurement:
        """The run the form describes (raises InputError naming the field)."""
        sc = self.state.scenario
        w = sc.workload
        fields = (
            ("number of GPUs", self.count_field),
            ("throughput", self.throughput),
            ("tokens per step", self.tokens_per_step),
            ("peak memory", self.memory),
        )
        values: dict[str, float | None] = {}
        for name, box in fields:
            try:
                values[name] = box.value()
            except ValueError as exc:
                raise InputError(name, str(exc)) from None
        speed = values["throughput"]
        unit = self.throughput_unit.currentData()
        source = self.memory_source.currentData()
        note = self.note.text().strip()
        if source == "nvidia-smi log" and self.smi is not None and values["peak memory"] is not None:
            where = f"peak of nvidia-smi log {self.smi.origin}"
            note = f"{note}; {where}" if note else where
        try:
            model = sc.model.preset or resolve_model(sc, self.state.models).name
        except InputError:
            model = sc.model.name or "custom model"
        stored = merge_measurements(load_measurements().value, sc.measurements)
        names = {
            "measurement.tokens_per_s": "throughput",
            "measurement.seconds_per_step": "throughput",
            "measurement.tokens_per_step": "tokens per step",
            "measurement.peak_memory_gib": "peak memory",
            "measurement": "measurement",
        }
        try:
            return Measurement(
                id=next_measurement_id(stored),
                gpu_id=self.gpu_box.currentData(),
                kind=w.kind,
                model=model,
                engine=self.engine_box.currentData(),
                num_gpus=int(values["number of GPUs"] or 1),
                batch_size=w.batch_size,
                seq_len=w.seq_len if w.is_training else w.context_tokens,
                peak_memory_gib=values["peak memory"],
                tokens_per_s=speed if unit == "tokens_per_s" else None,
                seconds_per_step=speed if unit == "seconds_per_step" else None,
                tokens_per_step=values["tokens per step"],
                source=source,
                note=note,
                measured_on=datetime.date.today().isoformat(),
                scenario=scenario_snapshot(sc),
            )
        except InputError as exc:
            if exc.field == "measurement":
                raise InputError("measurement", "give the throughput, the peak memory or both") from None
            raise InputError(names.get(exc.field, exc.field), exc.reason, exc.value) from None

    def on_record(self) -> Measurement | None:
        """Record button: save the run in the user data folder and in the scenario, then refresh."""
        try:
            m = self.build_measurement()
        except InputError as exc:
            self._show(f"Not recorded: {exc}", error=True)
            return None
        try:
            m, path = add_measurement(m)
        except StorageError as exc:
            self._show(f"Not recorded: {exc}", error=True)
            return None
        sc = self.state.scenario
        self.state.set_scenario(replace(sc, measurements=tuple(merge_measurements(sc.measurements, [m]))))
        if self._scenario_runs is not self.state.scenario.measurements:  # not reloaded by the signal
            self.reload()
        self._show(f"Recorded {m.id} in {path} and in the scenario (save the scenario to keep it there).")
        return m

    # --- runs, chart and calibration -------------------------------------------------------------
    def reload(self) -> None:
        """Re-read the recorded runs (user data folder plus the scenario's) and recompute the table."""
        loaded = load_measurements()
        self.runs = merge_measurements(loaded.value, self.state.scenario.measurements)
        self._scenario_runs = self.state.scenario.measurements
        self.refresh()
        if loaded.warnings:
            self._show(" ".join(loaded.warnings), error=True)

    def refresh(self) -> None:
        predictor = EstimatePredictor(self.state.gpus, self.state.models)
        self.comparisons = compare_measurements(self.runs, predictor, self.state.calibration)
        self.model.set_rows(self.comparisons)
        self.table.resizeColumnsToContents()
        self._update_chart()

    def _update_chart(self) -> None:
        pts = [
            (c.measured_tokens_per_s, c.estimated_tokens_per_s)
            for c in self.comparisons
            if c.measured_tokens_per_s and c.estimated_tokens_per_s
        ]
        cal = [
            (c.measured_tokens_per_s, c.calibrated_tokens_per_s)
            for c in self.comparisons
            if c.measured_tokens_per_s and c.calibrated_tokens_per_s
        ]
        self.estimate_points.setData([x for x, _ in pts], [y for _, y in pts])
        self.calibrated_points.setData([x for x, _ in cal], [y for _, y in cal])
        values = [v for p in pts + cal for v in p]
        # Zoom on the runs (a range from zero would squeeze a 10% error into a few pixels); the
        # dashed y = x line spans the view.
        low, high = (min(values), max(values)) if values else (0.0, 1.0)
        pad = max((high - low) * 0.25, high * 0.08, 1e-9)
        lo, hi = max(0.0, low - pad), high + pad
        self.identity_line.setData([lo, hi], [lo, hi])
        self.plot.setRange(xRange=(lo, hi), yRange=(lo, hi), padding=0)

    def chart_points(self) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
        """(estimate points, calibrated points) as drawn: (measured, estimated) tokens/s."""

        def pairs(item: Any) -> list[tuple[float, float]]:  # a pyqtgraph ScatterPlotItem
            x, y = item.getData()
            return [(float(a), float(b)) for a, b in zip(x, y)]

        return pairs(self.estimate_points), pairs(self.calibrated_points)

    def on_fit(self) -> CalibrationProfile | None:
        """Fit calibration button: fit, save as the user's profile and show the factors."""
        if not self.runs:
            self._show("Nothing to fit: record a few runs first.", error=True)
            return None
        profile = fit_calibration(self.runs, EstimatePredictor(self.state.gpus, self.state.models))
        if not profile.fits:
            why = "; ".join(f"{mid}: {reason}" for mid, reason in profile.skipped[:3])
            self._show(
                "No factor could be fitted; the previous profile is kept." + (f" {why}" if why else ""),
                error=True,
            )
            return None
        try:
            path = save_calibration(profile)
        except StorageError as exc:
            self._show(f"The profile was fitted but not saved: {exc}", error=True)
            path = None
        self.state.set_calibration(profile, self.state.calibration_enabled)
        self.refresh()
        skipped = len({m for m, _ in profile.skipped})
        self._show(
            f"Fitted {len(profile.fits)} factor{'s' if len(profile.fits) != 1 else ''}"
            + (f", saved as {path.name} in your data folder" if path else "")
            + (f"; {skipped} runs not used (see the tooltip of the factors table)" if skipped else "")
            + (
                ""
                if self.state.calibration_enabled
                else ". Tick “Use calibration in estimates” to apply them."
            )
        )
        return profile

    def on_export(self) -> None:
        if self.state.calibration is None:
            self._show("There is no calibration profile to export yet: fit or import one.", error=True)
            return
        path, _ = QFileDialog.getSaveFileName(
            self,
            "Export calibration profile",
            str(Path.home() / "gpuadvisor-calibration.json"),
            "JSON (*.json)",
        )
        if path:
            self.export_profile_to(path)

    def export_profile_to(self, path: str | Path) -> bool:
        if self.state.calibration is None:
            self._show("There is no calibration profile to export yet: fit or import one.", error=True)
            return False
        try:
            written = export_calibration(self.state.calibration, path)
        except InputError as exc:
            self._show(f"Not exported: {exc}", error=True)
            return False
        self._show(f"Exported the calibration profile to {written}.")
        return True

    def on_import(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Import calibration profile", str(Path.home()), "JSON (*.json);;All files (*)"
        )
        if path:
            self.import_profile_from(path)

    def import_profile_from(self, path: str | Path) -> bool:
        """Check a profile file and make it the user's profile; a malformed file changes nothing."""
        try:
            profile, saved = import_calibration(path)
        except InputError as exc:
            self._show(f"Not imported: {exc}", error=True)
            return False
        self.state.set_calibration(profile, self.state.calibration_enabled)
        self.refresh()
        self._show(
            f"Imported {Path(path).name}: {len(profile.fits)} factors, saved as {Path(saved).name} in your "
            "data folder."
        )
        return True

    def _on_use_calibration_toggled(self, on: bool) -> None:
        self.state.set_calibration(self.state.calibration, on)
        if on and self.state.calibration is None:
            self._show("Calibration is on, but there is no profile yet: fit or import one.", error=True)

    def _on_calibration_changed(self) -> None:
        profile = self.state.calibration
        self.use_calibration.blockSignals(True)
        self.use_calibration.setChecked(self.state.calibration_enabled)
        self.use_calibration.blockSignals(False)
        self.factors.set_profile(profile)
        self.factors_table.resizeColumnsToContents()
        self.export_button.setEnabled(profile is not None)
        if profile is None:
            self.profile_label.setText("No calibration profile yet: record runs and fit one, or import one.")
        else:
            state = "applied to estimates" if self.state.calibration_enabled else "not applied (off)"
            self.profile_label.setText(f"Profile of {profile.created}: {len(profile.fits)} factors, {state}.")
            self.factors_table.setToolTip(profile.summary())

    def _on_scenario_changed(self, scenario: Scenario) -> None:
        if scenario.measurements is not self._scenario_runs:
            self.reload()
        if scenario.workload.kind != self._kind:
            self.prefill()  # the engines to choose from depend on the kind


if __name__ == "__main__":  # preview with the default scenario and a few synthetic runs
    import sys

    from PySide6.QtWidgets import QApplication

    from ..core.formats.scenario import default_scenario
    from ..storage.user_catalog_store import load_catalogs

    app = QApplication(sys.argv)
    gpus, models = load_catalogs()
    state = AppState(default_scenario(), gpus, models)
    state.recompute()
    dialog = MeasurementsDialog(state)
    dialog.show()
    sys.exit(app.exec())
