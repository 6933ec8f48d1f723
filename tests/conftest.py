"""Test configuration: headless Qt, user files kept away from the real home directory, and the
order of the long tests when the suite runs in parallel (pytest-xdist).

``make test`` runs ``pytest -n auto --dist loadfile -m "not validation"``: every test runs in one
of a few worker processes, each with its own offscreen QApplication (pytest-qt makes one per
process) and, through ``tmp_path``, its own HOME and GPUADVISOR_HOME. ``loadfile`` keeps the
tests of one file on one worker, so a session or module fixture that one file's tests share is
computed once: the standalone build (``dist``, tests/packaging/test_dist.py) and the
leave-one-source-out run (``oos``, tests/core/test_validation.py). (``--dist loadgroup`` and
``xdist_group`` would be finer, but pytest-xdist 3.8 renames the node ids it groups by, which
pytest 9.2 no longer lets it do: the groups were ignored and the build ran on both workers.)
Their tests run first, so that no worker is left with them at the end, and every test that uses
``oos`` is marked ``validation``: ``make validate`` runs those (``.ci/run`` runs both targets).

Property tests (hypothesis) draw the same examples every run (profile ``fixed``), so that a run
passes or fails for the code, not for the draw; ``HYPOTHESIS_PROFILE=explore`` draws fresh ones
to look for new failures, which are then kept as explicit cases.
"""

import os
import tempfile

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
_runtime = os.path.join(tempfile.gettempdir(), f"gpuadvisor-test-runtime-{os.getuid()}")
os.makedirs(_runtime, mode=0o700, exist_ok=True)
os.environ.setdefault("XDG_RUNTIME_DIR", _runtime)

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

settings.register_profile("fixed", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False, database=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fixed"))

#: Fixtures whose value is one long computation shared by the tests (of one file) that use it.
SHARED_FIXTURES = ("dist", "oos")


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path, monkeypatch):
    """Every test gets its own HOME and GPUADVISOR_HOME."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GPUADVISOR_HOME", str(tmp_path / "gpuadvisor-home"))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Mark the tests of the leave-one-source-out run ``validation`` (before ``-m`` selects), and
    run the tests of a shared long fixture first (the longest work starts at once)."""
    first, rest = [], []
    for item in items:
        names = getattr(item, "fixturenames", ())
        if "oos" in names:
            item.add_marker(pytest.mark.validation)
        (first if any(f in names for f in SHARED_FIXTURES) else rest).append(item)
    items[:] = first + rest
