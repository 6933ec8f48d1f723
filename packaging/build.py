#!/usr/bin/env python3
"""Build the standalone gpuadvisor: one folder with two executables, and on Linux a .tar.gz and a .deb.

    python packaging/build.py [--dist DIR] [--work DIR] [--no-tar] [--no-deb] [--deb-compression zstd|xz|gzip]

``make dist`` runs it with the defaults; tests/packaging/test_dist.py runs it into a temporary
folder. Outputs (version from gpuadvisor/__init__.py, machine from the build host):

    DIST/gpuadvisor/                              the one-folder app: gpuadvisor, gpuadvisor-cli, _internal/
    DIST/gpuadvisor-<version>-linux-<machine>.tar.gz   that folder as gpuadvisor-<version>/
    DIST/gpuadvisor_<debian version>_<arch>.deb   /opt/gpuadvisor, /usr/bin launchers, menu entry, icons

The .deb needs ``dpkg-deb`` (Debian and derivatives); elsewhere it is skipped with a message.
docs/packaging.md explains the spec, what is left out of the bundle and why.
"""

from __future__ import annotations

import argparse
import ast
import os
import platform
import re
import shutil
import stat
import subprocess
import sys
import tarfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
APP = "gpuadvisor"
EXECUTABLES = ("gpuadvisor", "gpuadvisor-cli")
SUMMARY = "offline GPU sizing for AI workloads: will it fit, how fast, what will it cost"
DESCRIPTION = """\
Will my model fit, how fast will it run, and what will it cost? gpuadvisor
answers for every GPU of a catalog at once, offline: per-GPU memory broken
down, a fit verdict with headroom, tokens per second, job time and cost as
ranges, rent versus buy, and the cheapest change when nothing fits. A desktop
window (gpuadvisor), a command line (gpuadvisor-cli) and PDF reports.

This package is self-contained: Python, Qt and numpy are bundled under
/opt/gpuadvisor; only the desktop's display, font and GL libraries come from
the system."""
MAINTAINER = os.environ.get("GPUADVISOR_DEB_MAINTAINER",
                            "gpuadvisor maintainers <gpuadvisor@example.invalid>")

# Libraries the bundle needs but does not ship (the spec leaves them to the system; see SYSTEM_LIBS
# there), by Debian package. tests/packaging/test_dist.py checks, with dpkg -S, that every library
# the bundled files need and the bundle lacks belongs to one of these. libc6's floor is computed
# from the symbol versions the bundle needs.
DEB_DEPENDS = (
    "libstdc++6", "libgcc-s1", "libglib2.0-0", "libdbus-1-3", "libfontconfig1", "libfreetype6",
    "libegl1", "libgl1", "libx11-6", "libx11-xcb1", "libxcb1", "libxcb-cursor0", "libxcb-glx0",
    "libxcb-icccm4", "libxcb-image0", "libxcb-keysyms1", "libxcb-randr0", "libxcb-render0",
    "libxcb-render-util0", "libxcb-shape0", "libxcb-shm0", "libxcb-sync1", "libxcb-util1",
    "libxcb-xfixes0", "libxcb-xkb1", "libxkbcommon0", "libxkbcommon-x11-0",
    # without any font Qt draws empty boxes and writes text-less PDFs, silently
    "fonts-dejavu-core | fonts-liberation2 | fonts-freefont-ttf",
)
DEB_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}
DESKTOP_ENTRY = """\
[Desktop Entry]
Type=Application
Name=gpuadvisor
GenericName=GPU sizing for AI workloads
Comment=Will the model fit, how fast will it run, and what will it cost, across a GPU catalog
Exec=gpuadvisor %f
Icon=gpuadvisor
Terminal=false
Categories=Development;Science;
Keywords=GPU;VRAM;LLM;training;inference;cost;
StartupWMClass=gpuadvisor
"""
HICOLOR_SIZES = (16, 32, 48, 64, 128, 256, 512)


def read_version() -> str:
    """``__version__`` from gpuadvisor/__init__.py (the single source), read without importing the package."""
    tree = ast.parse((ROOT / "gpuadvisor" / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else ()
        if any(getattr(t, "id", None) == "__version__" for t in targets):
            return str(ast.literal_eval(node.value))
    raise SystemExit("error: no __version__ in gpuadvisor/__init__.py")


def debian_version(version: str) -> str:
    """PEP 440 to Debian ordering: pre-releases and dev releases sort before the release (``~``)."""
    return re.sub(r"[.-]?(a|b|rc|dev)(\d*)", r"~\1\2", version).replace("+", "+local.")


def log(message: str) -> None:
    print(f"build: {message}", flush=True)


def size_mb(path: Path) -> float:
    if path.is_file():
        return path.stat().st_size / 1e6
    return sum(p.lstat().st_size for p in path.rglob("*") if not p.is_dir()) / 1e6


def ensure_pyinstaller() -> None:
    try:
        import PyInstaller  # noqa: F401
    except ImportError:
        raise SystemExit("error: PyInstaller is not installed in this Python; run `make dist`, or "
                         f"`{sys.executable} -m pip install -e '.[packaging]'`") from None


def make_icons(out: Path) -> None:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    subprocess.run([sys.executable, str(HERE / "make_icons.py"), str(out)], check=True, env=env)


def run_pyinstaller(dist: Path, work: Path, icons: Path) -> Path:
    env = dict(os.environ, GPUADVISOR_ICON_DIR=str(icons))
    cmd = [sys.executable, "-m", "PyInstaller", "--noconfirm", "--log-level", "WARN",
           "--distpath", str(dist), "--workpath", str(work / "pyinstaller"), str(HERE / "gpuadvisor.spec")]
    subprocess.run(cmd, check=True, env=env, cwd=ROOT)
    folder = dist / APP
    for name in EXECUTABLES:
        exe = folder / (name + (".exe" if sys.platform.startswith("win") else ""))
        if not exe.exists():
            raise SystemExit(f"error: PyInstaller did not produce {exe}")
    return folder


def _tar_filter(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    if info.isdir() or info.mode & stat.S_IXUSR:
        info.mode = 0o755
    elif not info.issym():
        info.mode = 0o644
    return info


def make_tarball(folder: Path, out: Path, top: str) -> Path:
    """``folder`` as ``top/`` in a .tar.gz (sorted entries, root-owned, symlinks kept)."""
    tmp = out.with_suffix(".part")
    with tarfile.open(tmp, "w:gz", compresslevel=6) as tar:
        tar.add(folder, arcname=top, recursive=False, filter=_tar_filter)
        for path in sorted(folder.rglob("*")):
            tar.add(path, arcname=f"{top}/{path.relative_to(folder).as_posix()}", recursive=False,
                    filter=_tar_filter)
    tmp.replace(out)
    return out


def glibc_floor(folder: Path) -> str:
    """The highest GLIBC_x.y symbol version any bundled ELF file needs (the libc6 minimum)."""
    sys.path.insert(0, str(HERE))
    import elfdeps

    best = (2, 17)
    for path in folder.rglob("*"):
        if path.is_symlink() or not path.is_file() or not elfdeps.is_elf(path):
            continue
        info = elfdeps.read_elf(path)
        for versions in (info.version_needs.values() if info else ()):
            for v in versions:
                m = re.fullmatch(r"GLIBC_(\d+)\.(\d+)(?:\.\d+)?", v)
                if m:
                    best = max(best, (int(m[1]), int(m[2])))
    return f"{best[0]}.{best[1]}"


def _normalise_modes(root: Path) -> None:
    """Directories and executables 0755, other files 0644, whatever the umask was."""
    for path in [root, *root.rglob("*")]:
        if path.is_symlink():
            continue
        if path.is_dir() or path.stat().st_mode & stat.S_IXUSR:
            path.chmod(0o755)
        else:
            path.chmod(0o644)


def make_deb(folder: Path, out_dir: Path, version: str, icons: Path, work: Path, compression: str) -> Path:
    """A .deb with the app under /opt/gpuadvisor, launchers in /usr/bin, a menu entry and icons."""
    arch = DEB_ARCH.get(platform.machine())
    if arch is None:
        raise SystemExit(f"error: no Debian architecture known for {platform.machine()}")
    stage = work / "deb" / "root"
    if stage.exists():
        shutil.rmtree(stage)
    opt = stage / "opt" / APP
    shutil.copytree(folder, opt, symlinks=True)
    (stage / "usr" / "bin").mkdir(parents=True)
    for name in EXECUTABLES:  # the bootloader resolves its own path, so a symlink is enough
        (stage / "usr" / "bin" / name).symlink_to(f"/opt/{APP}/{name}")
    apps = stage / "usr" / "share" / "applications"
    apps.mkdir(parents=True)
    (apps / f"{APP}.desktop").write_text(DESKTOP_ENTRY, encoding="utf-8")
    hicolor = stage / "usr" / "share" / "icons" / "hicolor"
    (hicolor / "scalable" / "apps").mkdir(parents=True)
    shutil.copy(ROOT / "resources" / "icons" / "gpuadvisor.svg", hicolor / "scalable" / "apps" / f"{APP}.svg")
    for size in HICOLOR_SIZES:
        target = hicolor / f"{size}x{size}" / "apps"
        target.mkdir(parents=True)
        shutil.copy(icons / f"gpuadvisor-{size}.png", target / f"{APP}.png")
    doc = stage / "usr" / "share" / "doc" / APP
    doc.mkdir(parents=True)
    shutil.copy(ROOT / "README.md", doc / "README.md")
    _normalise_modes(stage)

    installed_kib = int(sum(p.lstat().st_size for p in stage.rglob("*") if not p.is_dir()) / 1024) + 1
    depends = ", ".join((f"libc6 (>= {glibc_floor(folder)})",) + DEB_DEPENDS)
    control = stage / "DEBIAN" / "control"
    control.parent.mkdir()
    description = "\n".join(" " + (line if line.strip() else ".") for line in DESCRIPTION.splitlines())
    control.write_text(
        f"Package: {APP}\n"
        f"Version: {debian_version(version)}\n"
        f"Architecture: {arch}\n"
        f"Maintainer: {MAINTAINER}\n"
        f"Installed-Size: {installed_kib}\n"
        f"Depends: {depends}\n"
        "Section: science\n"
        "Priority: optional\n"
        f"Description: {SUMMARY}\n{description}\n", encoding="utf-8")
    control.parent.chmod(0o755)
    control.chmod(0o644)
    out = out_dir / f"{APP}_{debian_version(version)}_{arch}.deb"
    level = {"zstd": "9", "xz": "6", "gzip": "6"}[compression]
    subprocess.run(["dpkg-deb", f"-Z{compression}", f"-z{level}", "--root-owner-group", "--build", str(stage),
                    str(out)], check=True, stdout=subprocess.DEVNULL)
    shutil.rmtree(stage)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dist", type=Path, default=ROOT / "dist", help="output folder (default dist/)")
    parser.add_argument("--work", type=Path, default=ROOT / "build", help="work folder (default build/)")
    parser.add_argument("--no-tar", action="store_true", help="do not make the .tar.gz")
    parser.add_argument("--no-deb", action="store_true", help="do not make the .deb")
    parser.add_argument("--deb-compression", choices=("zstd", "xz", "gzip"), default="zstd",
                        help="zstd (default): 50 MB in about 5 s; xz: 41 MB in about 70 s on 2 cores. "
                             "Both unpack on Debian 12+ and Ubuntu 22.04+, which the bundle's glibc floor "
                             "needs anyway")
    args = parser.parse_args(argv)
    ensure_pyinstaller()
    dist, work = args.dist.resolve(), args.work.resolve()
    version = read_version()
    t0 = time.perf_counter()
    icons = work / "icons"
    make_icons(icons)
    folder = run_pyinstaller(dist, work, icons)
    t_folder = time.perf_counter() - t0
    log(f"{folder} ({size_mb(folder):.0f} MB) in {t_folder:.0f} s")
    if sys.platform.startswith("linux"):
        machine = platform.machine()
        if not args.no_tar:
            t = time.perf_counter()
            tgz = make_tarball(folder, dist / f"{APP}-{version}-linux-{machine}.tar.gz", f"{APP}-{version}")
            log(f"{tgz} ({size_mb(tgz):.1f} MB) in {time.perf_counter() - t:.0f} s")
        if not args.no_deb:
            if shutil.which("dpkg-deb"):
                t = time.perf_counter()
                deb = make_deb(folder, dist, version, icons, work, args.deb_compression)
                log(f"{deb} ({size_mb(deb):.1f} MB) in {time.perf_counter() - t:.0f} s")
            else:
                log("dpkg-deb not found (not a Debian system): no .deb")
    else:
        log("the .tar.gz and .deb are Linux-only; see docs/packaging.md for Windows and macOS installers")
    log(f"done in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
