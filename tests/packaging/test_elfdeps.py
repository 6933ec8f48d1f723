"""packaging/elfdeps.py on real files of this Python: reading and removing library search paths.

No build needed. Skips where this Python's extension modules carry no absolute RUNPATH (a
distribution's Python); a locally built one (pyenv) has them, which is what the bundle inherits.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "gpuadvisor_packaging_elfdeps_unit", ROOT / "packaging" / "elfdeps.py"
)
elfdeps = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = elfdeps  # dataclasses look their module up there
_spec.loader.exec_module(elfdeps)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ELF files are Linux's")


def _module_with_absolute_runpath() -> Path:
    import _bisect  # an extension module of the standard library, wherever this Python keeps them

    dynload = Path(_bisect.__file__).parent
    for path in sorted(dynload.glob("_bisect*.so")) + sorted(dynload.glob("*.so")):
        info = elfdeps.read_elf(path)
        if info and any(not e.startswith("$ORIGIN") for r in info.runpaths for e in r.split(":")):
            return path
    pytest.skip("this Python's extension modules carry no absolute RUNPATH")


def test_drop_build_runpaths_removes_the_entry_and_the_module_still_loads(tmp_path):
    source = _module_with_absolute_runpath()
    copy = tmp_path / source.name
    shutil.copy(source, copy)
    before = elfdeps.read_elf(copy)
    removed = elfdeps.drop_build_runpaths(copy)
    assert removed and set(removed) <= {e for r in before.runpaths for e in r.split(":")}
    after = elfdeps.read_elf(copy)
    assert after.runpaths == () and after.needed == before.needed and after.soname == before.soname
    assert elfdeps.drop_build_runpaths(copy) == ()  # nothing left to do
    name = source.name.split(".")[0]
    code = (
        f"import importlib.machinery, importlib.util; loader = importlib.machinery.ExtensionFileLoader("
        f"{name!r}, {str(copy)!r}); spec = importlib.util.spec_from_loader({name!r}, loader); "
        f"importlib.util.module_from_spec(spec); print('ok')"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.stdout.strip() == "ok", proc.stderr


def test_origin_relative_entries_are_kept(tmp_path):
    numpy_libs = [p for p in (Path(importlib.util.find_spec("numpy").origin).parent / "_core").glob("*.so")]
    with_origin = [p for p in numpy_libs if (i := elfdeps.read_elf(p)) and i.runpaths]
    if not with_origin:
        pytest.skip("numpy's extension modules carry no RUNPATH here")
    copy = tmp_path / with_origin[0].name
    shutil.copy(with_origin[0], copy)
    assert elfdeps.drop_build_runpaths(copy) == ()
    assert elfdeps.read_elf(copy).runpaths == elfdeps.read_elf(with_origin[0]).runpaths
