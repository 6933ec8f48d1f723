"""Help > About's license and notices, and the platform choice on a Wayland-only session."""

from __future__ import annotations

import pytest

from gpuadvisor.gui.about_dialog import AboutDialog, license_text, notices_text
from gpuadvisor.gui.app import choose_platform


def test_license_is_the_project_license():
    text = license_text()
    assert text.startswith("MIT License") and "The gpuadvisor developers" in text


def test_notices_come_from_the_file_when_there_is_one(tmp_path):
    (tmp_path / "THIRD-PARTY-NOTICES").write_text("Qt 6.11.3: LGPL-3.0-only\n", encoding="utf-8")
    assert notices_text(tmp_path) == "Qt 6.11.3: LGPL-3.0-only\n"


def test_notices_from_a_checkout_list_the_installed_packages(tmp_path):
    from importlib import metadata

    text = notices_text(tmp_path)
    pyside = metadata.distribution("PySide6-Essentials")
    assert f"{pyside.metadata['Name']} {pyside.version}: LGPL-3.0-only" in text
    assert f"numpy {metadata.version('numpy')}" in text and "Lesser General Public License" in text


def test_about_dialog_tabs(qtbot):
    dialog = AboutDialog(["GPU catalog: 3 GPUs."])
    qtbot.addWidget(dialog)
    assert "GPU catalog: 3 GPUs." in dialog.tabs.widget(0).text()
    assert dialog.license_view.isReadOnly() and dialog.license_view.toPlainText() == license_text()


def _present():
    return True


def _absent():
    return False


@pytest.mark.parametrize(
    "env",
    [
        {"DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0"},
        {"DISPLAY": ":0"},
        {"QT_QPA_PLATFORM": "offscreen", "WAYLAND_DISPLAY": "wayland-0"},
    ],
)
def test_x11_or_an_explicit_platform_is_left_alone(env):
    before = dict(env)
    assert choose_platform(env, _absent, lambda name: None) is None
    assert env == before


def test_wayland_only_session_uses_the_wayland_plugin_when_it_can_load():
    env = {"WAYLAND_DISPLAY": "wayland-0"}
    assert choose_platform(env, _present, lambda name: f"lib{name}.so.0") is None
    assert env["QT_QPA_PLATFORM"] == "wayland"


def test_wayland_only_session_without_the_plugin_says_what_to_install():
    env = {"WAYLAND_DISPLAY": "wayland-0"}
    message = choose_platform(env, _absent, lambda name: f"lib{name}.so.0")
    assert "QT_QPA_PLATFORM" not in env
    assert "sudo apt install xwayland" in message and "\n" not in message


def test_wayland_only_session_without_its_libraries_names_the_packages():
    env = {"WAYLAND_DISPLAY": "wayland-0"}
    message = choose_platform(env, _present, lambda name: None if name == "wayland-cursor" else "x")
    assert "QT_QPA_PLATFORM" not in env
    assert "sudo apt install libwayland-cursor0" in message


def test_the_about_dialog_preview_runs(tmp_path):
    # ``python -m gpuadvisor.gui.about_dialog`` imported catalog modules that had moved and
    # stopped with ModuleNotFoundError; run it with the event loop returning at once.
    import os
    import subprocess
    import sys

    code = (
        "import runpy, sys\n"
        "from PySide6.QtWidgets import QApplication\n"
        "QApplication.exec = lambda self: 0\n"
        "runpy.run_module('gpuadvisor.gui.about_dialog', run_name='__main__')\n"
    )
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
