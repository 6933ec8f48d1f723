"""The standalone build: built once per session with packaging/build.py (what ``make dist`` runs), then run.

Checks that the built executables behave like the source: the version, ``estimate --json``, the
PDF report's text, the window (offscreen, and on the xcb platform under Xvfb when available) and
where it writes; that the bundle stays unchanged; the .tar.gz; the .deb's metadata, that its
Depends (dpkg-shlibdeps') cover every library the bundle needs and does not ship, and (as root, with dpkg) that it
installs and purges cleanly. Sizes are bounded generously to catch regressions; the measured
figures are in the README ("Standalone build").

Takes about 1.5 minutes on 2 cores, the build included.
"""

from __future__ import annotations

import datetime
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import pytest

from gpuadvisor import __version__

pytestmark = [
    pytest.mark.packaging,
    pytest.mark.skipif(
        not sys.platform.startswith("linux"), reason="the packaging test builds and runs the Linux bundle"
    ),
]

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "docs" / "examples" / "lora-llama-3.1-8b.json"
BUILD_TIMEOUT_S = 1200
RUN_TIMEOUT_S = 120
# Generous bounds that catch a regression (an unpruned Qt, a second Python); the aims (200 MB,
# 90 MB, 2 s) and the measured figures are in the README.
MAX_FOLDER_MB = 250
#: the release aim for the unpacked folder (issue: "Bundle <= 185 MB unpacked"); measured in docs/packaging.md
AIM_FOLDER_MB = 185
MAX_TARBALL_MB = 120
MAX_DEB_MB = 120
# glibc's own libraries: provided by libc6, whose minimum version the control file states
GLIBC_SONAMES = re.compile(
    r"^(libc|libm|libdl|libpthread|librt|libutil|libresolv|libanl)\.so\.\d+$"
    r"|^ld-linux"
)


def _load(name: str, path: Path):
    """A module from packaging/ (not a package: ``packaging`` is also a PyPI project's name)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


dist_build = _load("gpuadvisor_packaging_build", ROOT / "packaging" / "build.py")
sharedlibs = _load("gpuadvisor_packaging_sharedlibs", ROOT / "packaging" / "sharedlibs.py")


@dataclass(frozen=True)
class Dist:
    folder: Path
    tarball: Path
    deb: Path | None
    seconds: float


def _mb(path: Path) -> float:
    return dist_build.size_mb(path)


@pytest.fixture(scope="session")
def dist(tmp_path_factory) -> Dist:
    out = tmp_path_factory.mktemp("dist")
    work = tmp_path_factory.mktemp("work")
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(ROOT / "packaging" / "build.py"), "--dist", str(out), "--work", str(work)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        check=False,
    )
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        pytest.fail(
            f"packaging/build.py failed ({proc.returncode}):\n{proc.stdout[-6000:]}\n{proc.stderr[-6000:]}"
        )
    debs = sorted(out.glob("*.deb"))
    tarball = out / f"gpuadvisor-{__version__}-linux-{os.uname().machine}.tar.gz"
    result = Dist(folder=out / "gpuadvisor", tarball=tarball, deb=debs[0] if debs else None, seconds=seconds)
    print(
        f"\nbuild {seconds:.0f} s; folder {_mb(result.folder):.0f} MB; tar.gz {_mb(result.tarball):.1f} MB"
        + (f"; deb {_mb(result.deb):.1f} MB" if result.deb else "")
    )
    return result


def _env(tmp_path: Path, portable: bool = True, **extra: str) -> dict[str, str]:
    """A clean environment: no display, user folders under tmp_path, nothing of the test's Python."""
    dropped = ("DISPLAY", "WAYLAND_DISPLAY", "GPUADVISOR_HOME", "GPUADVISOR_STARTUP_TIMING")
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in dropped and not k.startswith(("PYTHON", "XDG_", "QT_"))
    }
    env["HOME"] = str(tmp_path / "home")
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    env["XDG_RUNTIME_DIR"] = str(runtime)
    if portable:
        env["GPUADVISOR_HOME"] = str(tmp_path / "gpuadvisor-home")
    env.update(extra)
    return env


def _run(cmd: list[str], env: dict[str, str], **kwargs) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        cmd, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False, **kwargs
    )
    assert proc.returncode == 0, (
        f"{cmd} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )
    return proc


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.lstat().st_size, p.lstat().st_mtime_ns) for p in folder.rglob("*")}


def _drop_volatile(value):
    """Estimate JSON without fields that change between runs (none today; kept for dates and timings)."""
    volatile = {"generated", "generated_at", "date", "seconds", "elapsed_s"}
    if isinstance(value, dict):
        return {k: _drop_volatile(v) for k, v in value.items() if k not in volatile}
    if isinstance(value, list):
        return [_drop_volatile(v) for v in value]
    return value


def _pdf_text(path: Path) -> str:
    text = subprocess.run(
        ["pdftotext", "-layout", str(path), "-"], capture_output=True, text=True, check=True
    ).stdout
    text = unicodedata.normalize("NFKC", text)
    for day in (datetime.date.today(), datetime.date.today() - datetime.timedelta(days=1)):
        text = text.replace(day.isoformat(), "<today>")  # a run across midnight
    return text


# --- the folder and the archive ------------------------------------------------------------------


def test_folder_has_both_executables_the_data_and_no_dropped_parts(dist):
    folder = dist.folder
    for name in ("gpuadvisor", "gpuadvisor-cli"):
        assert os.access(folder / name, os.X_OK), name
    internal = folder / "_internal"
    for rel in (
        "catalogs/gpus.csv",
        "catalogs/models.csv",
        "resources/icons/gpuadvisor.svg",
        "PySide6/Qt/plugins/platforms/libqxcb.so",
        "PySide6/Qt/plugins/platforms/libqoffscreen.so",
        "PySide6/Qt/plugins/platforms/libqminimal.so",
        "PySide6/Qt/plugins/imageformats/libqsvg.so",
        "PySide6/QtOpenGL.abi3.so",
        "PySide6/QtOpenGLWidgets.abi3.so",
    ):
        assert (internal / rel).exists(), rel
    names = {p.name for p in internal.rglob("*")}
    assert not (internal / "PySide6" / "Qt" / "translations").exists()
    for dropped in (
        "libqwayland.so",
        "libqgtk3.so",
        "libqjpeg.so",
        "libQt6Network.so.6",
        "QtNetwork.abi3.so",
        "libQt6WaylandClient.so.6",
        "libX11.so.6",
        "libstdc++.so.6",
    ):
        assert dropped not in names, dropped
    assert (internal / "pandas").is_dir()  # the catalog editor's and the CLI's import/export need it
    assert not [p for p in internal.rglob("*") if p.name in ("tests", "tkinter", "pytest")]
    # no database module: pandas imports sqlite3 only in read_sql/to_sql, which the app never calls
    assert not [p for p in internal.rglob("*") if "sqlite" in p.name]
    size = _mb(folder)
    print(f"folder {size:.1f} MB (aim {AIM_FOLDER_MB} MB)")
    assert size < MAX_FOLDER_MB


def test_one_executable_so_every_module_is_stored_once(dist):
    """gpuadvisor-cli is a link to gpuadvisor: pandas and the standard library are in one archive."""
    cli = dist.folder / "gpuadvisor-cli"
    assert cli.is_symlink() and os.readlink(cli) == "gpuadvisor"
    assert not list((dist.folder / "_internal" / "pandas").rglob("*.pyc"))


def test_license_notices_readme_and_desktop_files_are_in_the_folder(dist):
    folder = dist.folder
    assert (folder / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")
    notices = (folder / "THIRD-PARTY-NOTICES").read_text(encoding="utf-8")
    for needle in (
        "GNU LESSER GENERAL PUBLIC LICENSE",
        "Version 3, 29 June 2007",
        "How to replace the Qt libraries",
        "Python Software Foundation",
        "numpy (Python package)",
        "OpenBLAS",
        "libgfortran",
        "pandas (Python package)",
        "pyqtgraph (Python package)",
        "ICU",
        "platformdirs (Python package)",
        "python-dateutil (Python package)",
        "colorama (Python package)",
        "CC-BY license - applies to CET color map data",
    ):
        assert needle in notices, needle
    readme = (folder / "README.md").read_text(encoding="utf-8")
    assert "gpuadvisor-cli" in readme and ".venv" not in readme and "make " not in readme
    assert (folder / "share" / "applications" / "gpuadvisor.desktop").exists()
    assert (folder / "share" / "icons" / "hicolor" / "scalable" / "apps" / "gpuadvisor.svg").exists()
    found = subprocess.run(
        ["find", str(folder), "-iname", "*licen*", "-o", "-iname", "*notice*"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert {str(folder / "LICENSE"), str(folder / "THIRD-PARTY-NOTICES")} <= set(found)


def test_no_library_searches_a_folder_of_the_build_machine(dist):
    """RUNPATH/RPATH entries other than $ORIGIN-relative ones are removed from every file, and the
    $ORIGIN ones by which Qt, PySide6 and numpy find their own libraries stay."""
    bad, kept = {}, 0
    for path in sharedlibs.elf_files(dist.folder):
        entries = sharedlibs.runpaths(path)
        kept += bool(entries)
        if any(not sharedlibs.is_origin_relative(e) for e in entries):
            bad[str(path.relative_to(dist.folder))] = entries
    assert not bad
    assert kept >= 10


def test_every_library_the_bundle_needs_is_bundled_or_left_to_the_system_on_purpose(dist):
    """Nothing pruned that is still needed: each DT_NEEDED is in the bundle or a system library."""
    bundled = {p.name for p in dist.folder.rglob("*")}
    missing = {}
    for path in sharedlibs.elf_files(dist.folder):
        for needed in sharedlibs.needed(path):
            if (
                needed not in bundled
                and not GLIBC_SONAMES.match(needed)
                and not re.match(r"lib(E?GL|OpenGL|GLX)\.so", needed)
            ):
                missing.setdefault(needed, path.name)
    system = {name for name in missing if _system_library_allowed(name)}
    assert set(missing) == system, {k: v for k, v in missing.items() if k not in system}


def _system_library_allowed(soname: str) -> bool:
    return bool(
        re.match(
            r"^(libX11(-xcb)?|libxcb(-[a-z-]+)?|libxkbcommon(-x11)?|libfontconfig|libfreetype"
            r"|lib(glib|gobject|gio|gmodule|gthread)-2\.0|libdbus-1|libstdc\+\+|libgcc_s"
            r"|libz|libbz2|liblzma|libzstd|libffi|libuuid)\.so",
            soname,
        )
    )


def test_tarball_holds_the_folder_under_a_versioned_name(dist):
    size = _mb(dist.tarball)
    print(f"tar.gz {size:.1f} MB (aim 90 MB)")
    assert size < MAX_TARBALL_MB
    top = f"gpuadvisor-{__version__}"
    with tarfile.open(dist.tarball) as tar:
        members = {m.name: m for m in tar.getmembers()}
    expected = {
        f"{top}/gpuadvisor",
        f"{top}/gpuadvisor-cli",
        f"{top}/_internal/catalogs/gpus.csv",
        f"{top}/LICENSE",
        f"{top}/THIRD-PARTY-NOTICES",
        f"{top}/README.md",
        f"{top}/share/applications/gpuadvisor.desktop",
        f"{top}/share/icons/hicolor/scalable/apps/gpuadvisor.svg",
    }
    assert expected <= set(members)
    assert all(m.name == top or m.name.startswith(top + "/") for m in members.values())
    assert members[f"{top}/gpuadvisor-cli"].mode & 0o111
    assert len(members) == len(list(dist.folder.rglob("*"))) + 1


# --- the executables against the source --------------------------------------------------------------


def test_version_prints_without_a_display(dist, tmp_path):
    for name in ("gpuadvisor", "gpuadvisor-cli"):
        proc = _run([str(dist.folder / name), "--version"], _env(tmp_path))
        assert proc.stdout.strip() == f"gpuadvisor {__version__}", name


def test_cli_estimate_json_equals_the_source_run(dist, tmp_path):
    env = _env(tmp_path)
    frozen = _run([str(dist.folder / "gpuadvisor-cli"), "estimate", str(SCENARIO), "--json"], env)
    source = _run(
        [sys.executable, "-m", "gpuadvisor.cli", "estimate", str(SCENARIO), "--json"], env, cwd=ROOT
    )
    assert _drop_volatile(json.loads(frozen.stdout)) == _drop_volatile(json.loads(source.stdout))


def test_catalog_export_and_import_work_frozen_and_match_the_source(dist, tmp_path):
    """Catalog import reads files with pandas: the build must ship it (a missing module would
    only show when a user imports a file)."""
    env = _env(tmp_path)
    cli = str(dist.folder / "gpuadvisor-cli")
    for fmt in ("csv", "json"):
        frozen_file, source_file = tmp_path / f"frozen.{fmt}", tmp_path / f"source.{fmt}"
        _run([cli, "catalog", "export", "gpus", "-o", str(frozen_file), "--format", fmt], env)
        _run(
            [
                sys.executable,
                "-m",
                "gpuadvisor.cli",
                "catalog",
                "export",
                "gpus",
                "-o",
                str(source_file),
                "--format",
                fmt,
            ],
            env,
            cwd=ROOT,
        )
        assert frozen_file.read_bytes() == source_file.read_bytes()
        frozen = _run([cli, "catalog", "import", "gpus", str(frozen_file), "--dry-run", "--json"], env)
        source = _run(
            [
                sys.executable,
                "-m",
                "gpuadvisor.cli",
                "catalog",
                "import",
                "gpus",
                str(frozen_file),
                "--dry-run",
                "--json",
            ],
            env,
            cwd=ROOT,
        )
        assert json.loads(frozen.stdout) == json.loads(source.stdout)
        assert (
            "0 rejected"
            in _run([cli, "catalog", "import", "gpus", str(frozen_file), "--dry-run"], env).stdout
        )


def test_pdf_report_text_equals_the_source_run(dist, tmp_path):
    if not shutil.which("pdftotext"):
        pytest.skip("pdftotext (poppler-utils) is not installed; `make system-deps` installs it")
    env = _env(tmp_path)
    frozen_pdf, source_pdf = tmp_path / "frozen.pdf", tmp_path / "source.pdf"
    _run([str(dist.folder / "gpuadvisor-cli"), "report", str(SCENARIO), "-o", str(frozen_pdf)], env)
    _run(
        [sys.executable, "-m", "gpuadvisor.cli", "report", str(SCENARIO), "-o", str(source_pdf)],
        env,
        cwd=ROOT,
    )
    data = frozen_pdf.read_bytes()
    assert data.startswith(b"%PDF-") and b"%%EOF" in data[-64:]
    frozen_text = _pdf_text(frozen_pdf)
    assert "gpuadvisor" in frozen_text and "Llama 3.1 8B" in frozen_text  # fonts were found (no empty boxes)
    assert frozen_text == _pdf_text(source_pdf)


# --- the window -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("portable", [True, False], ids=["GPUADVISOR_HOME", "platformdirs"])
def test_window_starts_and_writes_only_user_folders(dist, tmp_path, portable):
    before = _snapshot(dist.folder)
    xdg = {
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
        "XDG_STATE_HOME": str(tmp_path / "xdg-state"),
        "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
        "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"),
    }
    env = _env(
        tmp_path,
        portable=portable,
        QT_QPA_PLATFORM="offscreen",
        GPUADVISOR_STARTUP_TIMING="exit",
        **({} if portable else xdg),
    )
    proc = _run([str(dist.folder / "gpuadvisor")], env)
    assert "window shown" in proc.stdout, proc.stdout + proc.stderr
    if portable:
        home = tmp_path / "gpuadvisor-home"
        settings, log = home / "config" / "settings.json", home / "logs" / "gpuadvisor.log"
    else:
        settings = tmp_path / "xdg-config" / "gpuadvisor" / "settings.json"
        log = tmp_path / "xdg-state" / "gpuadvisor" / "log" / "gpuadvisor.log"
    assert settings.is_file() and log.is_file()
    assert f"gpuadvisor {__version__}" in log.read_text(encoding="utf-8")
    assert _snapshot(dist.folder) == before, "the app wrote inside its own folder"


def test_window_stays_up_after_the_charts_are_drawn(dist, tmp_path):
    out = tmp_path / "stdout.txt"
    env = _env(tmp_path, QT_QPA_PLATFORM="offscreen", GPUADVISOR_STARTUP_TIMING="1")
    with open(out, "w", encoding="utf-8") as fh:
        proc = subprocess.Popen(
            [str(dist.folder / "gpuadvisor")], env=env, stdout=fh, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while "window shown" not in out.read_text(encoding="utf-8"):
            assert proc.poll() is None, f"exited {proc.returncode}: {out.read_text(encoding='utf-8')}"
            assert time.monotonic() < deadline, "no window within the time limit"
            time.sleep(0.1)
        time.sleep(2)
        assert proc.poll() is None, f"the window closed by itself: {out.read_text(encoding='utf-8')}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_window_on_x11_with_the_system_xcb_libraries(dist, tmp_path):
    """The xcb plugin is bundled, its X11/xcb libraries are not: run it on a real X server (Xvfb)."""
    if not shutil.which("xvfb-run"):
        pytest.skip("xvfb-run is not installed; `make system-deps` installs xvfb")
    env = _env(tmp_path, QT_QPA_PLATFORM="xcb", GPUADVISOR_STARTUP_TIMING="exit")
    proc = _run(["xvfb-run", "-a", "-s", "-screen 0 1280x800x24", str(dist.folder / "gpuadvisor")], env)
    assert "window shown" in proc.stdout, proc.stdout + proc.stderr
    assert "Could not load the Qt platform plugin" not in proc.stderr


# --- the .deb -----------------------------------------------------------------------------------------


def _deb(dist: Dist) -> Path:
    if dist.deb is None:
        pytest.skip("no .deb was built (dpkg-deb is missing: not a Debian system)")
    return dist.deb


def _control(deb: Path) -> dict[str, str]:
    text = subprocess.run(
        ["dpkg-deb", "--field", str(deb)], capture_output=True, text=True, check=True
    ).stdout
    fields, key = {}, None
    for line in text.splitlines():
        if line.startswith(" ") and key:
            fields[key] += "\n" + line
        elif ":" in line:
            key, value = line.split(":", 1)
            fields[key] = value.strip()
    return fields


def test_deb_metadata_and_contents(dist):
    deb = _deb(dist)
    size = _mb(deb)
    print(f"deb {size:.1f} MB")
    assert size < MAX_DEB_MB
    subprocess.run(["dpkg-deb", "--info", str(deb)], check=True, capture_output=True)
    fields = _control(deb)
    assert fields["Package"] == "gpuadvisor"
    assert fields["Version"] == dist_build.deb_version(__version__)
    assert fields["Maintainer"] == dist_build.MAINTAINER
    assert fields["Architecture"] == dist_build.DEB_ARCH[os.uname().machine]
    assert fields["Maintainer"] and fields["Description"]
    assert int(fields["Installed-Size"]) > 50_000
    # dpkg-shlibdeps' list (libc6's minimum from the symbol versions used), then the font.
    depends = [d.strip() for d in fields["Depends"].split(",")]
    assert re.fullmatch(r"libc6 \(>= 2\.\d+\)", next(d for d in depends if d.startswith("libc6 ")))
    assert depends[-1] == dist_build.EXTRA_DEPENDS[-1]
    for name in ("libstdc++6", "libglib2.0-0", "libfontconfig1", "libxcb1", "libxkbcommon0", "zlib1g"):
        assert any(d.split()[0] == name for d in depends), name
    contents = subprocess.run(
        ["dpkg-deb", "--contents", str(deb)], capture_output=True, text=True, check=True
    ).stdout
    paths = {line.split()[5].removeprefix(".") for line in contents.splitlines()}
    for expected in (
        "/usr/lib/gpuadvisor/gpuadvisor",
        "/usr/lib/gpuadvisor/gpuadvisor-cli",
        "/usr/lib/gpuadvisor/_internal/catalogs/gpus.csv",
        "/usr/lib/gpuadvisor/LICENSE",
        "/usr/lib/gpuadvisor/THIRD-PARTY-NOTICES",
        "/usr/bin/gpuadvisor",
        "/usr/bin/gpuadvisor-cli",
        "/usr/share/applications/gpuadvisor.desktop",
        "/usr/share/icons/hicolor/scalable/apps/gpuadvisor.svg",
        "/usr/share/icons/hicolor/256x256/apps/gpuadvisor.png",
        "/usr/share/metainfo/org.gpuadvisor.gpuadvisor.metainfo.xml",
        "/usr/share/doc/gpuadvisor/copyright",
        "/usr/share/doc/gpuadvisor/changelog.Debian.gz",
        "/usr/share/doc/gpuadvisor/README.md",
        "/usr/share/doc/gpuadvisor/THIRD-PARTY-NOTICES.gz",
        "/usr/share/man/man1/gpuadvisor.1.gz",
        "/usr/share/man/man1/gpuadvisor-cli.1.gz",
    ):
        assert expected in paths, expected
    assert "-> ../lib/gpuadvisor/gpuadvisor-cli" in contents
    assert not any(p.startswith("/opt") for p in paths)
    owners = {line.split()[1] for line in contents.splitlines()}
    assert owners == {"root/root"}
    assert not any(p.startswith("/DEBIAN") or "postinst" in p for p in paths)


def test_deb_depends_cover_every_library_left_to_the_system(dist):
    deb = _deb(dist)
    if not shutil.which("dpkg") or not shutil.which("ldconfig"):
        pytest.skip("dpkg or ldconfig missing")
    depends = _control(deb)["Depends"]
    allowed = {alt.split("(")[0].strip() for dep in depends.split(",") for alt in dep.split("|")}
    bundled = {p.name for p in dist.folder.rglob("*")}
    needed = set()
    for path in sharedlibs.elf_files(dist.folder):
        needed.update(n for n in sharedlibs.needed(path) if n not in bundled)
    cache = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, check=True).stdout
    located = {}
    for line in cache.splitlines():
        m = re.match(r"\s*(\S+) \((?:libc6,)?x86-64[^)]*\) => (\S+)", line)
        if m:
            located.setdefault(m[1], m[2])
    unowned = {}
    for soname in sorted(needed):
        path = located.get(soname)
        assert path, f"{soname} is needed by the bundle and not installed here"
        candidates = {
            path,
            path.replace("/lib/", "/usr/lib/", 1)
            if not path.startswith("/usr/")
            else path.removeprefix("/usr"),
        }
        owner = None
        for candidate in candidates:
            q = subprocess.run(["dpkg", "-S", candidate], capture_output=True, text=True, check=False)
            if q.returncode == 0:
                owner = q.stdout.split(":")[0].strip()
                break
        assert owner, f"no Debian package owns {soname} ({path})"
        if owner not in allowed:
            unowned[soname] = owner
    assert not unowned, f"libraries whose packages are missing from Depends: {unowned}"


def test_desktop_entry_is_valid(dist, tmp_path):
    deb = _deb(dist)
    if not shutil.which("desktop-file-validate"):
        pytest.skip("desktop-file-validate (desktop-file-utils) is not installed")
    subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp_path / "x")], check=True)
    entry = tmp_path / "x" / "usr" / "share" / "applications" / "gpuadvisor.desktop"
    proc = _run(["desktop-file-validate", str(entry)], dict(os.environ))
    assert proc.stdout.strip() == ""  # not even a hint (two main categories were one)


def test_appstream_metainfo_is_valid(dist, tmp_path):
    deb = _deb(dist)
    if not shutil.which("appstreamcli"):
        pytest.skip("appstreamcli (appstream) is not installed")
    subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp_path / "x")], check=True)
    metainfo = tmp_path / "x" / "usr" / "share" / "metainfo" / "org.gpuadvisor.gpuadvisor.metainfo.xml"
    _run(["appstreamcli", "validate", "--no-net", str(metainfo)], dict(os.environ))


def test_deb_copyright_is_machine_readable_and_names_every_bundled_work(dist, tmp_path):
    deb = _deb(dist)
    subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp_path / "x")], check=True)
    doc = tmp_path / "x" / "usr" / "share" / "doc" / "gpuadvisor"
    text = (doc / "copyright").read_text(encoding="utf-8")
    assert text.startswith("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/")
    for needle in (
        "Files: *\nCopyright: 2026 The gpuadvisor developers\nLicense: Expat",
        "License: LGPL-3",
        "License: PSF-2.0",
        "usr/lib/gpuadvisor/_internal/numpy/*",
        "usr/lib/gpuadvisor/_internal/PySide6/*",
    ):
        assert needle in text, needle
    assert "Version 3, 29 June 2007" not in text  # full GPL texts are referenced, not copied (lintian)
    import gzip

    changelog = gzip.decompress((doc / "changelog.Debian.gz").read_bytes()).decode("utf-8")
    assert changelog.startswith(f"gpuadvisor ({dist_build.deb_version(__version__)})")
    man = tmp_path / "x" / "usr" / "share" / "man" / "man1"
    page = gzip.decompress((man / "gpuadvisor-cli.1.gz").read_bytes()).decode("utf-8")
    assert ".SH SYNOPSIS" in page and "catalog import" in page


def test_lintian_reports_no_errors(dist):
    deb = _deb(dist)
    if not shutil.which("lintian"):
        pytest.skip("lintian is not installed (scripts/install-system-deps.sh installs it)")
    proc = subprocess.run(
        ["lintian", "--allow-root", "--no-tag-display-limit", str(deb)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    errors = [line for line in proc.stdout.splitlines() if line.startswith("E:")]
    print(proc.stdout)
    assert not errors and proc.returncode == 0, proc.stdout + proc.stderr


def _package_status(name: str) -> str:
    """dpkg's state of a package: "installed", "config-files", ... or "" when dpkg does not know it."""
    q = subprocess.run(
        ["dpkg-query", "-W", "-f=${Status}", name], capture_output=True, text=True, check=False
    )
    words = q.stdout.split()
    return "" if q.returncode != 0 or not words or words[-1] == "not-installed" else words[-1]


def test_deb_installs_runs_and_purges_cleanly(dist, tmp_path):
    deb = _deb(dist)
    if os.environ.get("GPUADVISOR_TEST_DEB_INSTALL") != "1":
        pytest.skip(
            "installs the .deb on this machine: opt in with GPUADVISOR_TEST_DEB_INSTALL=1 (.ci/run does)"
        )
    if os.geteuid() != 0 or not shutil.which("dpkg"):
        pytest.skip("installing the .deb needs root and dpkg")
    if _package_status("gpuadvisor"):
        pytest.skip("a gpuadvisor package is already installed on this machine; not touching it")
    if Path("/usr/lib/gpuadvisor").exists():
        pytest.skip("/usr/lib/gpuadvisor exists and belongs to no package; not touching it")
    fields = _control(deb)
    missing = []
    for dep in fields["Depends"].split(","):
        alternatives = [a.split("(")[0].strip() for a in dep.split("|")]
        if not any(_package_status(a) == "installed" for a in alternatives):
            missing.append(dep.strip())
    if missing:
        pytest.skip(f"Depends not installed here ({', '.join(missing)}); `make system-deps` installs them")
    installed = subprocess.run(["dpkg", "-i", str(deb)], capture_output=True, text=True, check=False)
    try:
        if installed.returncode != 0 and "lock" in installed.stderr:
            pytest.skip(f"dpkg is busy: {installed.stderr.strip()}")
        assert installed.returncode == 0, installed.stdout + installed.stderr
        env = _env(tmp_path)
        for name in ("gpuadvisor", "gpuadvisor-cli"):
            proc = _run([f"/usr/bin/{name}", "--version"], env)
            assert proc.stdout.strip() == f"gpuadvisor {__version__}"
        proc = _run(["/usr/bin/gpuadvisor-cli", "estimate", str(SCENARIO), "--json"], env)
        assert json.loads(proc.stdout)["candidates"]
        listed = subprocess.run(
            ["dpkg", "-L", "gpuadvisor"], capture_output=True, text=True, check=True
        ).stdout
        assert "/usr/share/applications/gpuadvisor.desktop" in listed
    finally:
        purged = subprocess.run(
            ["dpkg", "--purge", "gpuadvisor"], capture_output=True, text=True, check=False
        )
    assert purged.returncode == 0, purged.stdout + purged.stderr
    left = [
        p
        for p in (
            "/usr/lib/gpuadvisor",
            "/usr/bin/gpuadvisor",
            "/usr/bin/gpuadvisor-cli",
            "/usr/share/applications/gpuadvisor.desktop",
            "/usr/share/icons/hicolor/scalable/apps/gpuadvisor.svg",
            "/usr/share/doc/gpuadvisor",
        )
        if os.path.lexists(p)
    ]
    assert not left, f"left behind after purge: {left}"
    assert _package_status("gpuadvisor") == "", "dpkg still knows the package after --purge"
