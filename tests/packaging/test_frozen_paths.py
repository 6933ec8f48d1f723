"""Frozen-mode paths without building: bundled data is found in the bundle, user files never go there.

The PyInstaller bootloader sets ``sys.frozen`` and ``sys._MEIPASS`` (the ``_internal/`` folder of
the one-folder build); these tests simulate that. tests/packaging/test_dist.py checks the real build.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gpuadvisor.core.specs.hardware import bundled_catalog_dir, load_gpu_catalog
from gpuadvisor.resources import icon_path, resources_dir
from gpuadvisor.storage.paths import user_paths

pytestmark = pytest.mark.packaging

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def bundle(tmp_path, monkeypatch):
    """A fake one-folder app: app/gpuadvisor and app/_internal/{catalogs,resources}."""
    app = tmp_path / "app"
    internal = app / "_internal"
    (internal / "catalogs").mkdir(parents=True)
    (internal / "resources" / "icons").mkdir(parents=True)
    for name in ("gpus.csv", "models.csv"):
        (internal / "catalogs" / name).write_bytes((ROOT / "catalogs" / name).read_bytes())
    (internal / "resources" / "icons" / "gpuadvisor.svg").write_text("<svg/>", encoding="utf-8")
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "_MEIPASS", str(internal), raising=False)
    monkeypatch.setattr(sys, "executable", str(app / "gpuadvisor"))
    return app


def test_source_checkout_uses_the_repository_folders():
    assert not getattr(sys, "frozen", False)
    assert bundled_catalog_dir() == ROOT / "catalogs"
    assert resources_dir() == ROOT / "resources"
    assert icon_path().is_file()


def test_frozen_app_reads_catalogs_and_resources_from_the_bundle(bundle):
    assert bundled_catalog_dir() == bundle / "_internal" / "catalogs"
    assert resources_dir() == bundle / "_internal" / "resources"
    assert icon_path() == bundle / "_internal" / "resources" / "icons" / "gpuadvisor.svg"
    assert len(load_gpu_catalog()) > 0


def test_frozen_without_meipass_looks_next_to_the_executable(bundle, monkeypatch):
    """Other freezers (and PyInstaller's old layout) put the data next to the executable."""
    monkeypatch.delattr(sys, "_MEIPASS")
    (bundle / "catalogs").mkdir()
    assert bundled_catalog_dir() == bundle / "catalogs"
    assert resources_dir() == bundle / "resources"


@pytest.mark.parametrize("portable", [True, False], ids=["GPUADVISOR_HOME", "platformdirs"])
def test_frozen_app_keeps_user_files_out_of_the_bundle(bundle, tmp_path, monkeypatch, portable):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    if portable:
        monkeypatch.setenv("GPUADVISOR_HOME", str(tmp_path / "portable"))
    else:
        monkeypatch.delenv("GPUADVISOR_HOME", raising=False)
    paths = user_paths()
    expected_root = tmp_path / "portable" if portable else home
    for folder in (paths.config_dir, paths.data_dir, paths.log_dir, paths.cache_dir):
        assert not folder.is_relative_to(bundle), folder
        if sys.platform.startswith("linux"):
            assert folder.is_relative_to(expected_root), folder
