"""packaging/sharedlibs.py on real files of this Python: patchelf reads and trims library search
paths, dpkg-shlibdeps turns a staged package's libraries into Depends.

No build needed. The search-path tests skip where this Python's extension modules carry no
absolute RUNPATH (a distribution's Python); a locally built one (pyenv) has them, which is what
the bundle inherits. Each test skips where its Debian tool is missing
(scripts/install-system-deps.sh --test installs patchelf and dpkg-dev).
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
    "gpuadvisor_packaging_sharedlibs_unit", ROOT / "packaging" / "sharedlibs.py"
)
sharedlibs = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = sharedlibs
_spec.loader.exec_module(sharedlibs)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ELF files are Linux's")
needs_patchelf = pytest.mark.skipif(shutil.which("patchelf") is None, reason="patchelf is not installed")
needs_shlibdeps = pytest.mark.skipif(
    shutil.which("dpkg-shlibdeps") is None, reason="dpkg-shlibdeps (dpkg-dev) is not installed"
)


def _module_with_absolute_runpath() -> Path:
    import _bisect  # an extension module of the standard library, wherever this Python keeps them

    dynload = Path(_bisect.__file__).parent
    for path in sorted(dynload.glob("_bisect*.so")) + sorted(dynload.glob("*.so")):
        if any(not sharedlibs.is_origin_relative(e) for e in sharedlibs.runpaths(path)):
            return path
    pytest.skip("this Python's extension modules carry no absolute RUNPATH")


def _loads(path: Path) -> str:
    """Load the extension module ``path`` in a fresh Python; 'ok' when it loads."""
    name = path.name.split(".")[0]
    code = (
        f"import importlib.machinery, importlib.util; loader = importlib.machinery.ExtensionFileLoader("
        f"{name!r}, {str(path)!r}); spec = importlib.util.spec_from_loader({name!r}, loader); "
        f"importlib.util.module_from_spec(spec); print('ok')"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    return proc.stdout.strip() or proc.stderr


@needs_patchelf
def test_drop_build_runpaths_removes_the_entry_and_the_module_still_loads(tmp_path):
    source = _module_with_absolute_runpath()
    copy = tmp_path / source.name
    shutil.copy(source, copy)
    before = sharedlibs.runpaths(copy)
    removed = sharedlibs.drop_build_runpaths(copy)
    assert removed and set(removed) <= set(before)
    assert sharedlibs.runpaths(copy) == ()
    assert sharedlibs.needed(copy) == sharedlibs.needed(source)
    assert copy.stat().st_size == source.stat().st_size  # trimmed in place, nothing moved
    assert sharedlibs.drop_build_runpaths(copy) == ()  # nothing left to do
    assert _loads(copy) == "ok"


@needs_patchelf
def test_origin_relative_entries_are_kept_and_the_others_dropped(tmp_path):
    source = _module_with_absolute_runpath()
    copy = tmp_path / source.name
    shutil.copy(source, copy)
    # An entry of the bundle's own kind next to the build machine's: only the latter goes.
    mixed = ("$ORIGIN/../lib", *sharedlibs.runpaths(source))
    subprocess.run(["patchelf", "--set-rpath", ":".join(mixed), str(copy)], check=True)
    assert sharedlibs.drop_build_runpaths(copy) == mixed[1:]
    assert sharedlibs.runpaths(copy) == ("$ORIGIN/../lib",)
    assert sharedlibs.drop_build_runpaths(copy) == ()
    assert _loads(copy) == "ok"


@needs_patchelf
def test_files_without_a_dynamic_section_read_as_empty(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("not a library", encoding="utf-8")
    fake = tmp_path / "fake.so"
    fake.write_bytes(b"\x7fELF" + b"\0" * 60)  # the magic number and nothing behind it
    for path in (text, fake):
        assert sharedlibs.needed(path) == () and sharedlibs.runpaths(path) == ()
        assert sharedlibs.drop_build_runpaths(path) == ()
    assert not sharedlibs.is_elf(text) and sharedlibs.is_elf(fake)


def _stage_ctypes(tmp_path: Path) -> tuple[Path, Path]:
    """A staged package (``root/DEBIAN``) holding a copy of this Python's ``_ctypes`` (it links
    libffi) under ``usr/lib/demo``, trimmed as the build trims it."""
    import _ctypes

    stage = tmp_path / "root"
    (stage / "DEBIAN").mkdir(parents=True)
    lib = stage / "usr" / "lib" / "demo"
    lib.mkdir(parents=True)
    copy = lib / Path(_ctypes.__file__).name
    shutil.copy(_ctypes.__file__, copy)
    sharedlibs.drop_build_runpaths(copy)
    return stage, copy


@needs_patchelf
@needs_shlibdeps
def test_shlibs_depends_names_the_system_packages_with_their_minimum_versions(tmp_path):
    """libc6 at the minimum the symbol versions used need, and the package of libffi."""
    stage, copy = _stage_ctypes(tmp_path)
    libffi = next(n for n in sharedlibs.needed(copy) if n.startswith("libffi.so"))
    depends = sharedlibs.shlibs_depends(stage, "demo")
    names = [d.split()[0] for d in depends]
    owner = subprocess.run(["dpkg", "-S", libffi], capture_output=True, text=True, check=False).stdout.split(
        ":"
    )[0]
    assert "libc6" in names and owner in names, depends
    libc = depends[names.index("libc6")]
    assert libc.startswith("libc6 (>= 2.") and libc.endswith(")")
    with pytest.raises(ValueError, match="no DEBIAN folder"):
        sharedlibs.shlibs_depends(copy.parent, "demo")


@needs_patchelf
@needs_shlibdeps
def test_shlibs_depends_skips_a_library_the_package_ships(tmp_path):
    """The same module finding libffi next to itself ($ORIGIN), as the bundle's Qt and numpy find
    theirs: the package ships it, so no package of the system is needed for it."""
    import ctypes.util

    stage, copy = _stage_ctypes(tmp_path)
    libffi = next(n for n in sharedlibs.needed(copy) if n.startswith("libffi.so"))
    cache = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, check=True).stdout
    system = next(
        (
            line.split(" => ")[1].strip()
            for line in cache.splitlines()
            if line.strip().startswith(libffi + " ")
        ),
        None,
    )
    if system is None:
        pytest.skip(f"{libffi} is not in the loader's cache ({ctypes.util.find_library('ffi')})")
    shutil.copy(system, copy.parent / libffi)
    subprocess.run(["patchelf", "--set-rpath", "$ORIGIN", str(copy)], check=True)
    shipped = sharedlibs.shlibs_depends(stage, "demo")
    alone = sharedlibs.shlibs_depends(stage, "demo", [copy])
    owner = subprocess.run(["dpkg", "-S", system], capture_output=True, text=True, check=False).stdout
    owner = owner.split(":")[0] or "libffi8"
    assert owner not in {d.split()[0] for d in shipped} | {d.split()[0] for d in alone}, shipped
    assert any(d.startswith("libc6 ") for d in shipped)
