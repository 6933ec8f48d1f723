"""Paths of bundled resources (icons, style sheets), from source and from the PyInstaller build."""

from __future__ import annotations

import sys
from pathlib import Path


def resources_dir() -> Path:
    """The ``resources/`` folder: next to the package in a checkout; when frozen (PyInstaller),
    under ``sys._MEIPASS``, else next to the executable. Read-only: user files never go here."""
    if getattr(sys, "frozen", False):
        base = getattr(sys, "_MEIPASS", None) or Path(sys.executable).resolve().parent
        return Path(base) / "resources"
    return Path(__file__).resolve().parents[1] / "resources"


def resource_path(*parts: str) -> Path:
    """A file inside ``resources/`` (it may not exist; callers check)."""
    return resources_dir().joinpath(*parts)


def icon_path() -> Path:
    return resource_path("icons", "gpuadvisor.svg")
