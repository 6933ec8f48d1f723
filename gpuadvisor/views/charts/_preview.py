"""Preview a chart on its own.

``python -m gpuadvisor.views.charts.vram_chart [--png out.png] [--nothing-fits] [--deadline H] [--budget USD]
[--width PX] [--height PX] [--dark]``
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import replace

from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication, QWidget

from gpuadvisor.core.estimation.results import Estimate


def sample_estimate(
    nothing_fits: bool = False, deadline_hours: float | None = None, max_total_usd: float | None = None
) -> Estimate:
    """The app's default scenario (or Llama 3.1 405B full fine-tuning on one GPU, where nothing fits),
    optionally with a deadline and a total budget."""
    from gpuadvisor.core.estimation.estimate import estimate
    from gpuadvisor.core.formats.scenario import ModelSource, default_scenario
    from gpuadvisor.core.specs.workload import Hardware
    from gpuadvisor.storage.user_catalog_store import load_catalogs

    gpus, models = load_catalogs()
    scenario = default_scenario()
    if nothing_fits:
        scenario = replace(
            scenario,
            model=ModelSource(preset="llama-3.1-405b"),
            workload=replace(scenario.workload, kind="full_finetune"),
            hardware=Hardware(gpu_count=1),
        )
    if deadline_hours or max_total_usd:
        scenario = replace(
            scenario,
            budget=replace(scenario.budget, deadline_hours=deadline_hours, max_total_usd=max_total_usd),
        )
    return estimate(scenario, gpus, models)


def preview(make_widget: Callable[[Estimate], QWidget], argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--png", help="save a screenshot here and exit")
    parser.add_argument("--nothing-fits", action="store_true", help="a scenario where no GPU fits")
    parser.add_argument("--deadline", type=float, help="deadline in hours")
    parser.add_argument("--budget", type=float, help="total budget in USD")
    parser.add_argument("--width", type=int, default=0)
    parser.add_argument("--height", type=int, default=0)
    parser.add_argument("--dark", action="store_true", help="a dark application palette")
    args = parser.parse_args(argv)
    existing = QApplication.instance()
    app = existing if isinstance(existing, QApplication) else QApplication(sys.argv)
    if args.dark:
        app.setPalette(_dark_palette(app.palette()))
    widget = make_widget(sample_estimate(args.nothing_fits, args.deadline, args.budget))
    hint = widget.sizeHint()
    widget.resize(args.width or max(hint.width(), 800), args.height or max(hint.height(), 500))
    widget.setWindowTitle(type(widget).__name__)
    widget.show()
    if args.png:
        for _ in range(3):  # let the axes size themselves to their labels
            app.processEvents()
            widget.grab()
        widget.grab().save(args.png)
        return
    sys.exit(app.exec())


def _dark_palette(base: QPalette) -> QPalette:
    """A dark variant of ``base`` (what a dark desktop theme hands the application)."""
    from PySide6.QtGui import QColor

    palette = QPalette(base)
    for role, colour in (
        (QPalette.ColorRole.Window, "#2B2D31"),
        (QPalette.ColorRole.WindowText, "#E6E6E6"),
        (QPalette.ColorRole.Base, "#1E1F22"),
        (QPalette.ColorRole.Text, "#E6E6E6"),
        (QPalette.ColorRole.Button, "#2B2D31"),
        (QPalette.ColorRole.ButtonText, "#E6E6E6"),
    ):
        palette.setColor(role, QColor(colour))
    return palette
