#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Build the standalone gpuadvisor: one folder with both commands, and on Linux a .tar.gz and a .deb.

    python packaging/build.py [--dist DIR] [--work DIR] [--no-tar] [--no-deb] [--deb-compression zstd|xz|gzip]

``make dist`` runs it with the defaults; tests/packaging/test_dist.py runs it into a temporary
folder. Outputs (version from gpuadvisor/__init__.py, machine from the build host):

    DIST/gpuadvisor/                              the one-folder app: gpuadvisor, gpuadvisor-cli, _internal/,
                                                  LICENSE, THIRD-PARTY-NOTICES, README.md, share/ (menu entry, icons)
    DIST/gpuadvisor-<version>-linux-<machine>.tar.gz   that folder as gpuadvisor-<version>/
    DIST/gpuadvisor_<debian version>_<arch>.deb   /usr/lib/gpuadvisor, /usr/bin launchers, menu entry, icons,
                                                  manual pages, AppStream metainfo, copyright and changelog

Prices in catalogs/gpus.csv older than six months are listed as a warning (never an error).

The .deb needs ``dpkg-deb`` (Debian and derivatives); elsewhere it is skipped with a message.
docs/packaging.md explains the spec, what is left out of the bundle and why.
"""

from __future__ import annotations

import argparse
import ast
import csv
import datetime
import gzip
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
/usr/lib/gpuadvisor; only the desktop's display, font and GL libraries and the
base system's compression libraries come from the system."""
# The project publishes no mailing address; the reserved .invalid domain (RFC 2606) says so
# rather than inventing one. Whoever distributes a build sets GPUADVISOR_DEB_MAINTAINER.
MAINTAINER = os.environ.get("GPUADVISOR_DEB_MAINTAINER", "gpuadvisor developers <dev@gpuadvisor.invalid>")
#: Debian revision: the package is built from the upstream release as is (not a native package)
DEB_REVISION = "1"
INSTALL_DIR = f"usr/lib/{APP}"
APPSTREAM_ID = "org.gpuadvisor.gpuadvisor"
#: how old a bundled price may be before ``make dist`` warns (six months)
STALE_PRICE_DAYS = 183

# The .deb's Depends: the packages of the libraries the bundle needs and does not ship (the spec
# leaves them to the system; see SYSTEM_LIBS there), with their minimum versions, as
# dpkg-shlibdeps computes them from the staged files (libc6's from the symbol versions used), then
# what no ELF file names: a font, without which Qt draws empty boxes and writes text-less PDFs.
EXTRA_DEPENDS = ("fonts-dejavu-core | fonts-liberation2 | fonts-freefont-ttf",)
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
Categories=Science;Engineering;
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


def deb_version(version: str) -> str:
    """The .deb's Version: the upstream version in Debian order, then the Debian revision."""
    return f"{debian_version(version)}-{DEB_REVISION}"


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
        raise SystemExit(
            "error: PyInstaller is not installed in this Python; run `make dist`, or "
            f"`{sys.executable} -m pip install -e '.[packaging]'`"
        ) from None


def make_icons(out: Path) -> None:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    subprocess.run([sys.executable, str(HERE / "make_icons.py"), str(out)], check=True, env=env)


def run_pyinstaller(dist: Path, work: Path, icons: Path) -> Path:
    env = dict(os.environ, GPUADVISOR_ICON_DIR=str(icons))
    cmd = [
        sys.executable,
        "-m",
        "PyInstaller",
        "--noconfirm",
        "--log-level",
        "WARN",
        "--distpath",
        str(dist),
        "--workpath",
        str(work / "pyinstaller"),
        str(HERE / "gpuadvisor.spec"),
    ]
    subprocess.run(cmd, check=True, env=env, cwd=ROOT)
    folder = dist / APP
    cli = folder / "gpuadvisor-cli"
    if sys.platform.startswith("linux") and not cli.exists():
        cli.symlink_to("gpuadvisor")  # the spec's single executable runs the CLI under this name
    for name in EXECUTABLES:
        exe = folder / (name + (".exe" if sys.platform.startswith("win") else ""))
        if not exe.exists():
            raise SystemExit(f"error: PyInstaller did not produce {exe}")
    return folder


def _load_sibling(name: str):
    sys.path.insert(0, str(HERE))
    return __import__(name)


def drop_build_runpaths(folder: Path) -> int:
    """Remove library search paths that point at the build machine (patchelf); return the files changed."""
    sharedlibs = _load_sibling("sharedlibs")
    return sum(1 for path in sharedlibs.elf_files(folder) if sharedlibs.drop_build_runpaths(path))


def install_share(share: Path, icons: Path) -> None:
    """The menu entry, the icons (hicolor theme) and the AppStream metainfo under ``share``."""
    apps = share / "applications"
    apps.mkdir(parents=True, exist_ok=True)
    (apps / f"{APP}.desktop").write_text(DESKTOP_ENTRY, encoding="utf-8")
    hicolor = share / "icons" / "hicolor"
    (hicolor / "scalable" / "apps").mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "resources" / "icons" / "gpuadvisor.svg", hicolor / "scalable" / "apps" / f"{APP}.svg")
    for size in HICOLOR_SIZES:
        target = hicolor / f"{size}x{size}" / "apps"
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy(icons / f"gpuadvisor-{size}.png", target / f"{APP}.png")
    metainfo = share / "metainfo"
    metainfo.mkdir(parents=True, exist_ok=True)
    shutil.copy(HERE / "gpuadvisor.metainfo.xml", metainfo / f"{APPSTREAM_ID}.metainfo.xml")


def strip_python_and_icu(folder: Path) -> int:
    """``strip --strip-unneeded`` Python's own binaries and ICU (some of them PyInstaller writes from its
    bootstrap archive, past the spec's strip step). Never numpy's: see the spec's _strip_python_binaries."""
    strip = shutil.which("strip")
    if not strip:
        log("no strip (binutils): Python's binaries stay unstripped")
        return 0
    internal = folder / "_internal"
    targets = [p for p in internal.glob("python3*/lib-dynload/*.so") if not p.is_symlink()]
    targets += [p for p in internal.glob("libpython3*.so*") if not p.is_symlink()]
    targets += [p for p in internal.glob("PySide6/Qt/lib/libicu*.so*") if not p.is_symlink()]
    for path in targets:
        subprocess.run([strip, "--strip-unneeded", str(path)], check=True)
    return len(targets)


def finish_folder(folder: Path, icons: Path) -> None:
    """What the folder holds besides the program: license, notices, user README, menu entry, icons."""
    shutil.copy(ROOT / "LICENSE", folder / "LICENSE")
    shutil.copy(HERE / "README.user.md", folder / "README.md")
    if sys.platform.startswith("linux"):
        changed = drop_build_runpaths(folder)
        log(f"removed build-machine library search paths from {changed} files")
        strip_python_and_icu(folder)
        install_share(folder / "share", icons)
        _normalise_modes(folder)
    notices = _load_sibling("notices")
    (folder / "THIRD-PARTY-NOTICES").write_text(
        notices.notices_text(folder, read_version()), encoding="utf-8"
    )


def stale_prices(today: datetime.date, catalog: Path = ROOT / "catalogs" / "gpus.csv") -> list[str]:
    """GPUs whose bundled price is older than six months on ``today`` ("id (price_as_of)")."""
    lines = [line for line in catalog.read_text(encoding="utf-8").splitlines() if not line.startswith("#")]
    stale = []
    for row in csv.DictReader(lines):
        try:
            as_of = datetime.date.fromisoformat(row.get("price_as_of") or "")
        except ValueError:
            stale.append(f"{row.get('id')} (no valid price_as_of)")
            continue
        if (today - as_of).days > STALE_PRICE_DAYS:
            stale.append(f"{row['id']} ({as_of.isoformat()})")
    return stale


def _gzip(data: bytes, target: Path) -> None:
    """Reproducible gzip -9n: no name, no time stamp."""
    with (
        open(target, "wb") as raw,
        gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0, filename="") as gz,
    ):
        gz.write(data)


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
            tar.add(
                path,
                arcname=f"{top}/{path.relative_to(folder).as_posix()}",
                recursive=False,
                filter=_tar_filter,
            )
    tmp.replace(out)
    return out


def deb_depends(stage: Path) -> str:
    """The staged package's ``Depends``: dpkg-shlibdeps over its ELF files, then
    :data:`EXTRA_DEPENDS`."""
    sharedlibs = _load_sibling("sharedlibs")
    try:
        found = sharedlibs.shlibs_depends(stage, APP, sharedlibs.elf_files(stage / INSTALL_DIR))
    except sharedlibs.ToolMissing as exc:
        raise SystemExit(f"error: {exc}") from None
    return ", ".join([*found, *EXTRA_DEPENDS])


SHARED_LIBRARY = re.compile(r"\.so(\.[0-9.]+)?$|\.so\.")


def _normalise_modes(root: Path) -> None:
    """Directories and executables 0755, other files (shared libraries too: they are mapped, not run)
    0644, whatever the umask was."""
    for path in [root, *root.rglob("*")]:
        if path.is_symlink():
            continue
        if path.is_dir() or (path.stat().st_mode & stat.S_IXUSR and not SHARED_LIBRARY.search(path.name)):
            path.chmod(0o755)
        else:
            path.chmod(0o644)


def _changelog(version: str) -> str:
    text = (HERE / "debian-changelog").read_text(encoding="utf-8")
    m = re.match(rf"{APP} \(([^)]+)\)", text)
    if not m or m[1] != version:
        raise SystemExit(
            f"error: packaging/debian-changelog starts with version {m[1] if m else '?'}, the package "
            f"is {version}: add an entry for this release at its top"
        )
    return text


def make_deb(folder: Path, out_dir: Path, version: str, icons: Path, work: Path, compression: str) -> Path:
    """A .deb with the app under /usr/lib/gpuadvisor, launchers in /usr/bin, a menu entry, icons, manual
    pages, AppStream metainfo, the copyright file and the changelog."""
    arch = DEB_ARCH.get(platform.machine())
    if arch is None:
        raise SystemExit(f"error: no Debian architecture known for {platform.machine()}")
    dversion = deb_version(version)
    stage = work / "deb" / "root"
    if stage.exists():
        shutil.rmtree(stage)
    lib = stage / INSTALL_DIR
    # share/ and the README go to /usr/share; LICENSE and the notices stay next to the executables,
    # where Help > About reads them
    shutil.copytree(
        folder,
        lib,
        symlinks=True,
        ignore=lambda d, names: ["share", "README.md"] if Path(d) == folder else [],
    )
    (stage / "usr" / "bin").mkdir(parents=True)
    for name in EXECUTABLES:  # the bootloader resolves its own path, so a symlink is enough
        (stage / "usr" / "bin" / name).symlink_to(f"../lib/{APP}/{name}")
    share = stage / "usr" / "share"
    install_share(share, icons)
    doc = share / "doc" / APP
    doc.mkdir(parents=True)
    shutil.copy(HERE / "README.user.md", doc / "README.md")
    notices = _load_sibling("notices")
    (doc / "copyright").write_text(
        notices.dep5_copyright_text(folder, version, INSTALL_DIR), encoding="utf-8"
    )
    _gzip(_changelog(dversion).encode("utf-8"), doc / "changelog.Debian.gz")
    _gzip((folder / "THIRD-PARTY-NOTICES").read_bytes(), doc / "THIRD-PARTY-NOTICES.gz")
    man = share / "man" / "man1"
    pages = _load_sibling("manpages").write_pages(work / "man")
    man.mkdir(parents=True)
    for page in pages:
        _gzip(page.read_bytes(), man / (page.name + ".gz"))
    overrides = share / "lintian" / "overrides"
    overrides.mkdir(parents=True)
    shutil.copy(HERE / "lintian-overrides", overrides / APP)
    _normalise_modes(stage)

    installed_kib = int(sum(p.lstat().st_size for p in stage.rglob("*") if not p.is_dir()) / 1024) + 1
    control = stage / "DEBIAN" / "control"
    control.parent.mkdir()
    depends = deb_depends(stage)  # dpkg-shlibdeps tells the package's own files by DEBIAN/
    description = "\n".join(" " + (line if line.strip() else ".") for line in DESCRIPTION.splitlines())
    control.write_text(
        f"Package: {APP}\n"
        f"Version: {dversion}\n"
        f"Architecture: {arch}\n"
        f"Maintainer: {MAINTAINER}\n"
        f"Installed-Size: {installed_kib}\n"
        f"Depends: {depends}\n"
        "Section: science\n"
        "Priority: optional\n"
        f"Description: {SUMMARY}\n{description}\n",
        encoding="utf-8",
    )
    control.parent.chmod(0o755)
    control.chmod(0o644)
    out = out_dir / f"{APP}_{dversion}_{arch}.deb"
    level = {"zstd": "9", "xz": "6", "gzip": "6"}[compression]
    subprocess.run(
        ["dpkg-deb", f"-Z{compression}", f"-z{level}", "--root-owner-group", "--build", str(stage), str(out)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    shutil.rmtree(stage)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dist", type=Path, default=ROOT / "dist", help="output folder (default dist/)")
    parser.add_argument("--work", type=Path, default=ROOT / "build", help="work folder (default build/)")
    parser.add_argument("--no-tar", action="store_true", help="do not make the .tar.gz")
    parser.add_argument("--no-deb", action="store_true", help="do not make the .deb")
    parser.add_argument(
        "--deb-compression",
        choices=("zstd", "xz", "gzip"),
        default="xz",
        help="xz (default; the only choice lintian on Debian 12 accepts besides gzip); "
        "zstd: faster and larger, unpacks on Debian 12+ and Ubuntu 22.04+",
    )
    args = parser.parse_args(argv)
    ensure_pyinstaller()
    dist, work = args.dist.resolve(), args.work.resolve()
    version = read_version()
    t0 = time.perf_counter()
    icons = work / "icons"
    make_icons(icons)
    folder = run_pyinstaller(dist, work, icons)
    finish_folder(folder, icons)
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
    stale = stale_prices(datetime.date.today())
    if stale:
        log(
            f"warning: {len(stale)} GPU prices in catalogs/gpus.csv are older than six months: "
            f"{', '.join(stale)}; refresh them (docs/catalog.md, 'Prices')"
        )
    log(f"done in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
