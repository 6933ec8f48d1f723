"""The scenario's name, above the wizard pages: what the report is titled and the file says.

Left empty, the scenario is named after its model and workload (the core's
:func:`~gpuadvisor.core.presentation.titles.scenario_title`), which the field shows greyed as its
placeholder and which follows every change of model or workload; a typed name stays as typed.
"""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QWidget

from ..core.formats.scenario import Scenario
from ..core.presentation.titles import UNNAMED

#: The most characters a name may have (a report title, a window title).
MAX_NAME_CHARS = 200


class ScenarioNameField(QWidget):
    """A line edit for the scenario's name; ``apply`` writes it into a scenario."""

    edited = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.label = QLabel("&Name")
        self.line = QLineEdit()
        self.line.setMaxLength(MAX_NAME_CHARS)
        self.line.setClearButtonEnabled(True)
        self.line.setToolTip(
            "The scenario's name: the report's title and the file's. Leave it empty to name it after "
            "the model and the workload (the grey text), which follows them as you change them."
        )
        self.label.setBuddy(self.line)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.label)
        layout.addWidget(self.line, 1)
        self.line.textEdited.connect(lambda _text: self.edited.emit())

    def set_scenario(self, scenario: Scenario) -> None:
        """Show the scenario's own name (empty when it has none: the placeholder shows the default)."""
        name = "" if scenario.name.strip() in UNNAMED else scenario.name
        if self.line.text() != name:
            self.line.setText(name)

    def show_default(self, title: str) -> None:
        """The name the scenario takes while the field is empty (from the latest estimate)."""
        if self.line.placeholderText() != title:
            self.line.setPlaceholderText(title)

    def apply(self, scenario: Scenario) -> Scenario:
        return replace(scenario, name=self.line.text().strip())
