# SPDX-License-Identifier: MIT
"""The bundle's shared libraries, through Debian's tools: ``patchelf`` reads and trims their
dynamic sections, ``dpkg-shlibdeps`` turns what they need into the .deb's ``Depends``.

- :func:`needed` and :func:`runpaths`: a file's ``DT_NEEDED`` entries and its
  ``DT_RUNPATH``/``DT_RPATH`` (``patchelf --print-needed``, ``--print-rpath``). The PyInstaller
  spec follows ``DT_NEEDED`` to drop libraries that nothing kept loads; the packaging test checks
  that the bundle needs nothing it neither ships nor declares.
- :func:`drop_build_runpaths`: removes the search-path entries that point at the build machine
  (a locally built Python's ``lib`` folder) and keeps the ``$ORIGIN``-relative ones by which Qt,
  PySide6 and numpy find their own libraries (``patchelf --set-rpath`` with the kept entries, a
  shorter string written in place, or ``--remove-rpath`` when none is left).
- :func:`shlibs_depends`: ``dpkg-shlibdeps`` over the staged package's ELF files. It finds each
  needed library as the loader would (the files' ``$ORIGIN`` search paths, then the system's),
  skips those the package ships (private, outside the public library folders), and for each
  system library names its Debian package with the minimum version the symbols used require
  (from the packages' ``symbols`` and ``shlibs`` files): ``libc6 (>= 2.35)`` and the rest.

patchelf is Debian's ``patchelf`` package, dpkg-shlibdeps ``dpkg-dev``;
``scripts/install-system-deps.sh --test`` installs both. References: patchelf(1),
dpkg-shlibdeps(1), Debian Policy 8.6 "Dependencies between the library and other packages".
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path

#: ``dpkg-shlibdeps --warnings`` mask: none. Its warnings here are expected and not actionable:
#: Python extension modules leave libpython's symbols to the process that loads them ("probably
#: a plugin"), and wheels link a few libraries they use no symbol of ("useless dependency").
SHLIBDEPS_WARNINGS = "0"


class ToolMissing(RuntimeError):
    """A Debian tool the build needs is not installed; the message says which package has it."""


def _tool(name: str, package: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise ToolMissing(
            f"{name} is not installed: install the Debian package {package} "
            f"(scripts/install-system-deps.sh --test does, as root)"
        )
    return found


def is_elf(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a regular file starting with the ELF magic number."""
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"\x7fELF"
    except OSError:
        return False


def elf_files(folder: Path) -> list[Path]:
    """The ELF files under ``folder`` (symbolic links left out), sorted."""
    return sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink() and is_elf(p))


def _patchelf(*args: str) -> str:
    proc = subprocess.run([_tool("patchelf", "patchelf"), *args], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"patchelf {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc.stdout


def _read(option: str, path: str | os.PathLike[str]) -> str:
    """``patchelf <option> <path>``'s output; empty for a file that is not ELF or has no dynamic
    section (a static binary, an object file), which have nothing to print."""
    if not is_elf(path):
        return ""
    proc = subprocess.run(
        [_tool("patchelf", "patchelf"), option, str(path)], capture_output=True, text=True, check=False
    )
    return proc.stdout if proc.returncode == 0 else ""


def needed(path: str | os.PathLike[str]) -> tuple[str, ...]:
    """The ``DT_NEEDED`` sonames of an ELF file, in order (empty for one without a dynamic section)."""
    return tuple(line for line in _read("--print-needed", path).splitlines() if line)


def runpaths(path: str | os.PathLike[str]) -> tuple[str, ...]:
    """The entries of the file's ``DT_RUNPATH`` (or ``DT_RPATH``), as stored (``$ORIGIN/../lib``)."""
    return tuple(e for e in _read("--print-rpath", path).strip().split(":") if e)


def is_origin_relative(entry: str) -> bool:
    return entry.startswith(("$ORIGIN", "${ORIGIN}"))


def drop_build_runpaths(path: str | os.PathLike[str]) -> tuple[str, ...]:
    """Remove the search-path entries of ``path`` that are not ``$ORIGIN``-relative; return the
    entries removed (empty when there was nothing to do, or the file has no dynamic section)."""
    entries = runpaths(path)
    removed = tuple(e for e in entries if not is_origin_relative(e))
    if not removed:
        return ()
    kept = [e for e in entries if is_origin_relative(e)]
    if kept:
        _patchelf("--set-rpath", ":".join(kept), str(path))
    else:
        _patchelf("--remove-rpath", str(path))
    return removed


_SHLIBS_LINE = re.compile(r"^shlibs:Depends=(.*)$", re.MULTILINE)


def shlibs_depends(package_root: Path, package: str, files: Iterable[Path] | None = None) -> list[str]:
    """The ``Depends`` entries ``dpkg-shlibdeps`` computes for the ELF files of a staged package.

    ``package_root`` is the folder that becomes the package (it holds ``DEBIAN/``, which is how
    dpkg-shlibdeps tells the package's own, private libraries from the system's); ``files``
    default to every ELF file under it. dpkg-shlibdeps reads a source package's
    ``debian/control``, so it runs in a temporary folder holding a minimal one."""
    shlibdeps = _tool("dpkg-shlibdeps", "dpkg-dev")
    if not (package_root / "DEBIAN").is_dir():
        raise ValueError(f"{package_root} has no DEBIAN folder: stage the package first")
    targets = [str(p.resolve()) for p in (files if files is not None else elf_files(package_root))]
    if not targets:
        return []
    with tempfile.TemporaryDirectory(prefix="gpuadvisor-shlibdeps-") as tmp:
        control = Path(tmp) / "debian" / "control"
        control.parent.mkdir()
        control.write_text(f"Source: {package}\n\nPackage: {package}\nArchitecture: any\n", encoding="utf-8")
        proc = subprocess.run(
            [shlibdeps, f"--warnings={SHLIBDEPS_WARNINGS}", "-O", *targets],
            cwd=tmp,
            capture_output=True,
            text=True,
            check=False,
        )
    if proc.returncode != 0:
        raise RuntimeError(f"dpkg-shlibdeps failed ({proc.returncode}): {proc.stderr.strip()[-4000:]}")
    found = _SHLIBS_LINE.search(proc.stdout)
    if found is None:
        return []
    return [dep.strip() for dep in found.group(1).split(",") if dep.strip()]
