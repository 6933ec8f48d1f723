"""AppState: the current scenario and catalogs, a debounced recompute, and one broadcast.

Data flows one way: pages edit the scenario through :meth:`AppState.set_scenario`; after a
short debounce the core's ``estimate`` runs once and ``estimateChanged`` reaches every view.
Views never compute and never talk to each other; they meet here.

Calibration: :meth:`AppState.set_calibration` holds the user's profile and whether it is on;
when on, every estimate gets it (``estimate(..., calibration=profile)``) and
``calibrationChanged`` tells the views.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal

from ..core.errors import InputError
from ..core.estimation.calibration import CalibrationProfile
from ..core.estimation.estimate import Estimate, estimate, searches_layouts
from ..core.formats.scenario import Scenario, load_scenario, save_scenario
from ..core.specs.hardware import GpuCatalog
from ..core.specs.instances import InstanceCatalog, bundled_instances
from ..core.specs.presets import ModelCatalog
from .messages import user_message

log = logging.getLogger(__name__)

DEBOUNCE_MS = 40
#: An update whose previous estimate took longer than this (ms), or that searches layouts beyond
#: one node, runs off the GUI thread so the window keeps answering (typing, scrolling, menus).
BACKGROUND_MS = 300.0


class _Relay(QObject):
    """Carries a background estimate back to the GUI thread (a queued signal)."""

    done = Signal(int, object, float)  # generation, Estimate or the exception raised, ms


def _estimate(
    scenario: Scenario,
    gpus: GpuCatalog,
    models: ModelCatalog,
    calibration: CalibrationProfile | None,
    instances: InstanceCatalog | None,
) -> Estimate:
    """The estimate, with what its charts will ask for computed here (a service's latency against
    the load: a simulation per point), so that drawing them costs nothing on the GUI thread."""
    result = estimate(scenario, gpus, models, calibration=calibration, instances=instances)
    if scenario.workload.serving is not None:
        result.load_curves(result.chart_fleets(result.lead.key if result.lead is not None else None))
    return result


class AppState(QObject):
    """Holds the scenario being edited and the latest estimate."""

    scenarioChanged = Signal(object)  # Scenario
    estimateChanged = Signal(object)  # Estimate
    errorChanged = Signal(str)  # "" when the scenario is valid
    dirtyChanged = Signal(bool)
    pathChanged = Signal(str)  # "" for an unsaved scenario
    selectionChanged = Signal(str)  # candidate key, "" for none
    calibrationChanged = Signal()  # the profile or whether it is used changed
    catalogsChanged = Signal(object, object)  # GpuCatalog, ModelCatalog (an edit or an import)
    catalogWarningsChanged = Signal(object)  # tuple[str, ...]: rows left out of the comparison, and why
    staleMonthsChanged = Signal(int)  # prices older than this many months are flagged
    instancesChanged = Signal(object)  # InstanceCatalog: the cloud instance snapshot (an import)
    computingChanged = Signal(str)  # what runs in the background ("" when the results are current)

    def __init__(
        self,
        scenario: Scenario,
        gpus: GpuCatalog,
        models: ModelCatalog,
        parent: QObject | None = None,
        instances: InstanceCatalog | None = None,
    ):
        super().__init__(parent)
        self.gpus, self.models = gpus, models
        #: Where setups can be rented (the bundled snapshot and the user's imports).
        self.instances = instances if instances is not None else bundled_instances()
        self.scenario = scenario
        self.estimate: Estimate | None = None
        self.error = ""
        self._input_error = self._compute_error = ""
        self.path: Path | None = None
        self.dirty = False
        self.selected = ""
        self.last_compute_ms = 0.0
        self.calibration: CalibrationProfile | None = None  # the user's profile (used only when enabled)
        self.calibration_enabled = False
        self.catalog_warnings: tuple[str, ...] = ()
        self.stale_months = 6
        # The page whose edits are the latest not yet computed, and the scenario before its first
        # one: what discard_pending goes back to (another page's edits before it stay).
        self._edit_run: tuple[str, Scenario] | None = None
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(DEBOUNCE_MS)
        self._timer.timeout.connect(self.recompute)
        # One estimate runs in the background at a time; each update bumps the generation and a
        # result whose generation is not the latest is dropped (the inputs moved on meanwhile).
        self._generation = 0
        self.computing = ""
        self._pool: ThreadPoolExecutor | None = None
        self._relay = _Relay(self)
        self._relay.done.connect(self._background_done)

    # --- editing ------------------------------------------------------------------------
    def set_scenario(
        self, scenario: Scenario, dirty: bool = True, force: bool = False, origin: str = ""
    ) -> None:
        """Replace the scenario (from a page edit: ``origin`` names the page) and schedule a
        recompute.

        An unchanged scenario is not recomputed, unless ``force`` (a file chosen again may have new
        content behind the same path) or an input error is showing (the valid input that follows it
        must replace the stale results)."""
        if scenario == self.scenario and not force and not self.error:
            return
        changed = scenario != self.scenario
        if origin and (self._edit_run is None or self._edit_run[0] != origin):
            self._edit_run = (origin, self.scenario)
        self.scenario = scenario
        if changed:
            self.scenarioChanged.emit(scenario)
            if dirty:
                self._set_dirty(True)
        self._timer.start()

    def set_error(self, message: str) -> None:
        """A page reports an input it could not turn into a scenario (or clears it with "").

        While an error shows, the results on display are stale: they belong to the last valid input.
        A page's error outlives recomputes (of the last valid scenario); the core's error about the
        scenario itself is cleared by the next successful estimate."""
        self._input_error = message
        self._publish_error()

    def _set_compute_error(self, message: str) -> None:
        self._compute_error = message
        self._publish_error()

    def _publish_error(self) -> None:
        message = self._input_error or self._compute_error
        if message != self.error:
            self.error = message
            self.errorChanged.emit(message)

    def discard_pending(self, origin: str = "") -> None:
        """Drop the edits not yet computed of the page ``origin`` (a half-typed value on the way to
        an invalid one): the scenario goes back to where it was before that page's latest edits.
        Another page's edits made before them are kept and still computed; when none are, the
        scenario is the one on display and nothing is computed. Without ``origin``, every pending
        edit is dropped."""
        if not self._timer.isActive() or self.estimate is None:
            return
        if origin:
            if self._edit_run is None or self._edit_run[0] != origin:
                return  # the pending edits are another page's: they stay
            self.scenario = self._edit_run[1]
            self._edit_run = None
            if self.scenario != self.estimate.scenario:
                return  # the timer runs on: the other pages' edits are computed
        self._timer.stop()
        self.scenario = self.estimate.scenario
        self._edit_run = None

    @property
    def stale(self) -> bool:
        """Whether the results on display no longer match the inputs (an input is invalid)."""
        return bool(self.error)

    def select(self, key: str) -> None:
        if key != self.selected:
            self.selected = key
            self.selectionChanged.emit(key)

    def set_catalogs(
        self, gpus: GpuCatalog, models: ModelCatalog, warnings: tuple[str, ...] | list[str] = ()
    ) -> None:
        """New effective catalogs (catalog editor, import): every view that lists GPUs or models
        hears ``catalogsChanged``; rows left out (invalid) are said in ``catalogWarningsChanged``."""
        self.gpus, self.models = gpus, models
        self.catalogsChanged.emit(gpus, models)
        warnings = tuple(warnings)
        if warnings != self.catalog_warnings:
            self.catalog_warnings = warnings
            self.catalogWarningsChanged.emit(warnings)
        self._timer.start()

    def set_instances(self, instances: InstanceCatalog) -> None:
        """A newer cloud instance snapshot (a price-list import): every estimate uses it from now on."""
        self.instances = instances
        self.instancesChanged.emit(instances)
        self._timer.start()

    def set_stale_months(self, months: int) -> None:
        """Prices older than ``months`` are flagged (the one place this setting lives while the app runs)."""
        months = int(months)
        if months != self.stale_months:
            self.stale_months = months
            self.staleMonthsChanged.emit(months)

    def set_calibration(self, profile: CalibrationProfile | None, enabled: bool) -> None:
        """Hold the user's calibration profile and whether estimates use it; recompute if that changes."""
        if profile == self.calibration and enabled == self.calibration_enabled:
            return
        was = self.active_calibration
        self.calibration, self.calibration_enabled = profile, bool(enabled)
        self.calibrationChanged.emit()
        if self.active_calibration != was:
            self._timer.start()

    @property
    def active_calibration(self) -> CalibrationProfile | None:
        """The profile estimates use: the user's when calibration is on, else None."""
        return self.calibration if self.calibration_enabled else None

    # --- computing ------------------------------------------------------------------------
    def recompute(self) -> None:
        """Run the core (the debounce timer calls this): on the GUI thread when it is quick, in
        the background when the last estimate was slow, the scenario searches layouts over many
        nodes (see :data:`BACKGROUND_MS`) or plans a service (simulated request by request)."""
        self._timer.stop()
        self._edit_run = None
        self._generation += 1
        if self.estimate is not None and (
            self.last_compute_ms > BACKGROUND_MS
            or searches_layouts(self.scenario)
            or self.scenario.workload.serving is not None  # a service is simulated at its load
        ):
            self._start_background()
            return
        self._compute_now()

    def _compute_now(self) -> None:
        t0 = time.perf_counter()
        try:
            result = _estimate(self.scenario, self.gpus, self.models, self.active_calibration, self.instances)
        except InputError as exc:
            self._set_computing("")
            self._set_compute_error(user_message(exc))
            return
        self._set_computing("")
        self._apply(result, (time.perf_counter() - t0) * 1000)

    def _start_background(self) -> None:
        generation, scenario = self._generation, self.scenario
        gpus, models, calibration, instances = self.gpus, self.models, self.active_calibration, self.instances
        relay = self._relay

        def work() -> None:
            t0 = time.perf_counter()
            try:
                outcome: object = _estimate(scenario, gpus, models, calibration, instances)
            except Exception as exc:  # noqa: BLE001 -- an InputError, or a bug: both go to the GUI thread
                outcome = exc
            try:
                relay.done.emit(generation, outcome, (time.perf_counter() - t0) * 1000)
            except RuntimeError:  # the window closed meanwhile and took the relay with it
                log.debug("background estimate finished after the window closed")

        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gpuadvisor-estimate")
        w, hw = scenario.workload, scenario.hardware
        top = hw.gpu_count if hw.gpu_count is not None else hw.gpu_count_max
        if searches_layouts(scenario) and top is not None:
            what = f"searching {w.kind.replace('_', ' ')} layouts on up to {top:,} GPUs"
        elif w.serving is not None:
            what = "simulating the service at its load"
        else:
            what = f"the last update took {self.last_compute_ms / 1000:.1f} s"
        self._set_computing(f"Updating: {what}")
        self._pool.submit(work)

    def _background_done(self, generation: int, outcome: object, ms: float) -> None:
        if generation != self._generation:
            return  # the inputs changed meanwhile: a newer estimate is on its way
        if isinstance(outcome, InputError):
            self._set_computing("")
            self._set_compute_error(user_message(outcome))
            return
        if isinstance(outcome, BaseException):
            self._set_computing("")
            raise outcome  # the application's error hook shows it and writes it to the log
        assert isinstance(outcome, Estimate)
        self._set_computing("")
        self._apply(outcome, ms)

    def _set_computing(self, message: str) -> None:
        if message != self.computing:
            self.computing = message
            self.computingChanged.emit(message)

    def _apply(self, result: Estimate, ms: float) -> None:
        self.last_compute_ms = ms
        previous = self.estimate
        self.estimate = result
        self._set_compute_error("")
        # The selection follows the answer unless the user picked another setup: a selection that
        # was the previous answer moves to the new one (else the chart and the detail panel would
        # show a setup that is no longer the ranking's row for its GPU type).
        lead = previous.lead if previous is not None else None
        followed = lead is not None and self.selected == lead.key
        if followed or result.candidate(self.selected) is None:
            new_lead = result.lead
            self.select(new_lead.key if new_lead is not None else "")
        self.estimateChanged.emit(result)

    def flush(self) -> None:
        """Compute immediately if an update is pending or running in the background (tests,
        saving, exporting): the results on display are then the inputs'."""
        if self._timer.isActive() or self.estimate is None or self.computing:
            self._timer.stop()
            self._edit_run = None
            self._generation += 1  # a background result still on its way is dropped
            self._compute_now()

    def wait_background(self, timeout_s: float = 30.0) -> None:
        """Block until a background estimate has been delivered (tests; closing the window)."""
        if self._pool is None:
            return
        self._pool.submit(lambda: None).result(timeout=timeout_s)

    def shutdown(self) -> None:
        """Stop taking background work (the window closes); a running estimate finishes unseen."""
        if self._pool is not None:
            self._generation += 1
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    # --- files -----------------------------------------------------------------------------
    def _set_dirty(self, dirty: bool) -> None:
        if dirty != self.dirty:
            self.dirty = dirty
            self.dirtyChanged.emit(dirty)

    def _set_path(self, path: Path | None) -> None:
        self.path = path
        self.pathChanged.emit(str(path) if path else "")

    def new(self, scenario: Scenario) -> None:
        self.set_scenario(scenario, dirty=False)
        self._set_path(None)
        self._set_dirty(False)
        self.recompute()

    def open(self, path: str | Path) -> None:
        """Load a scenario file; raises InputError (ScenarioError) with a readable message."""
        scenario = load_scenario(path)
        self.scenario = scenario
        self.scenarioChanged.emit(scenario)
        self._set_path(Path(path).resolve())
        self._set_dirty(False)
        self.recompute()

    def save(self, path: str | Path | None = None) -> Path:
        """Save to ``path`` (or the current file); raises InputError when it cannot be written."""
        target = Path(path) if path else self.path
        if target is None:
            raise InputError("scenario", "has no file name yet; use Save As")
        save_scenario(self.scenario, target)
        self._set_path(target.resolve())
        self._set_dirty(False)
        return target
