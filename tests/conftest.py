"""Test configuration: headless Qt and user files kept away from the real home directory."""

import os
import tempfile

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
_runtime = os.path.join(tempfile.gettempdir(), f"gpuadvisor-test-runtime-{os.getuid()}")
os.makedirs(_runtime, mode=0o700, exist_ok=True)
os.environ.setdefault("XDG_RUNTIME_DIR", _runtime)

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path, monkeypatch):
    """Every test gets its own HOME and GPUADVISOR_HOME."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GPUADVISOR_HOME", str(tmp_path / "gpuadvisor-home"))
