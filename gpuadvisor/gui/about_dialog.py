# SPDX-License-Identifier: MIT
"""Help > About: the version, the catalogs, the project's license and the third-party notices.

The license (``LICENSE``) and the notices (``THIRD-PARTY-NOTICES``, written by
``packaging/notices.py`` when the standalone app is built) sit next to the executables in the
built app and at the top of a checkout. Run from a checkout, where no notices file has been
generated, the notices tab lists the installed packages the window uses, with their versions
and licenses as their metadata states them.
"""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPlainTextEdit,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from .. import __version__
from ..core.specs.hardware import GpuCatalog, load_gpu_catalog
from ..core.specs.presets import ModelCatalog, load_model_catalog

LICENSE_FILE = "LICENSE"
NOTICES_FILE = "THIRD-PARTY-NOTICES"
#: The distributions the window runs on, for the summary shown from a checkout.
RUNTIME_DISTRIBUTIONS = (
    "PySide6-Essentials",
    "shiboken6",
    "pyqtgraph",
    "numpy",
    "pandas",
    "python-dateutil",
    "six",
    "tzdata",
    "platformdirs",
    "colorama",
)


def legal_dir() -> Path:
    """The folder holding ``LICENSE`` and ``THIRD-PARTY-NOTICES``: the built app's folder (next to
    the executables), or the top of the checkout."""
    if getattr(sys, "frozen", False):
        return Path(sys.executable).resolve().parent
    return Path(__file__).resolve().parents[2]


def license_text(folder: Path | None = None) -> str:
    """The project's license text (a sentence saying where it is when the file is missing)."""
    path = (folder or legal_dir()) / LICENSE_FILE
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return f"gpuadvisor is distributed under the MIT License ({LICENSE_FILE} was not found in {path.parent})."


def _distribution_license(dist: metadata.Distribution) -> str:
    meta = dist.metadata
    fields = meta.json  # the header fields by lower-case name ("license_expression")
    expression = fields.get("license_expression")
    if isinstance(expression, str) and expression:
        return expression
    classifiers = [
        c.split(" :: ")[-1] for c in meta.get_all("Classifier") or () if c.startswith("License ::")
    ]
    if classifiers:
        return ", ".join(classifiers)
    license_field = fields.get("license")
    text = license_field.strip() if isinstance(license_field, str) else ""
    return text.splitlines()[0] if text else "not stated in its metadata"


def installed_summary() -> str:
    """Name, version and license of each runtime package installed in this Python."""
    lines = [f"Python {sys.version.split()[0]}: Python Software Foundation License (PSF-2.0)"]
    for name in RUNTIME_DISTRIBUTIONS:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        lines.append(f"{dist.metadata['Name']} {dist.version}: {_distribution_license(dist)}")
    return "\n".join(lines)


def notices_text(folder: Path | None = None) -> str:
    """The bundled third-party notices, or (from a checkout) a summary of the installed packages."""
    path = (folder or legal_dir()) / NOTICES_FILE
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return (
            "This copy runs from source, so no THIRD-PARTY-NOTICES file was generated "
            "(packaging/notices.py writes it into every standalone build). The packages it uses:\n\n"
            + installed_summary()
            + "\n\nQt and PySide6 are licensed under the GNU Lesser General Public License version 3."
        )


class AboutDialog(QDialog):
    """Three tabs: About (version, catalogs), License, Third-party notices."""

    def __init__(self, catalog_lines: list[str], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("About gpuadvisor")
        self.resize(720, 560)
        self.tabs = QTabWidget(self)
        about = QLabel(
            f"<h3>gpuadvisor {__version__}</h3><p>Will it fit, how fast, and what will it cost: "
            "GPU sizing for AI workloads, offline.</p>"
            f"<p>{'<br>'.join(catalog_lines)}</p><p>Formulas and sources: docs/estimation.md.</p>"
            "<p>Copyright (c) 2026 The gpuadvisor developers. Distributed under the MIT License. "
            "The standalone app bundles Qt and PySide6 under the GNU LGPL version 3, and other "
            "packages under their own licenses: see the tabs.</p>"
        )
        about.setWordWrap(True)
        about.setAlignment(Qt.AlignmentFlag.AlignTop)
        about.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.tabs.addTab(about, "About")
        self.license_view = self._text_tab(license_text(), "License")
        self.notices_view = self._text_tab(notices_text(), "Third-party notices")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.tabs)
        layout.addWidget(buttons)

    def _text_tab(self, text: str, title: str) -> QPlainTextEdit:
        view = QPlainTextEdit(self)
        view.setReadOnly(True)
        view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        view.setPlainText(text)
        self.tabs.addTab(view, title)
        return view


def catalog_lines(gpus: GpuCatalog, models: ModelCatalog) -> list[str]:
    """The About tab's lines on the catalogs in use."""
    gm, mm = gpus.meta, models.meta
    return [
        f"GPU catalog: schema {gm.schema_version}, updated {gm.updated}, {len(gpus)} GPUs.",
        f"Model presets: schema {mm.schema_version}, updated {mm.updated}, {len(models)} models.",
    ]


def show_about(parent: QWidget, gpus: GpuCatalog, models: ModelCatalog) -> AboutDialog:
    """Open the About dialog (window-modal, returns at once) for the catalogs in use."""
    dialog = AboutDialog(catalog_lines(gpus, models), parent)
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.open()
    return dialog


if __name__ == "__main__":
    from PySide6.QtWidgets import QApplication

    app = QApplication(sys.argv)
    dialog = AboutDialog(catalog_lines(load_gpu_catalog(), load_model_catalog()))
    dialog.show()
    sys.exit(app.exec())
