#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Third-party notices for the standalone build: what it redistributes, under which license.

    python packaging/notices.py FOLDER [--dep5 FILE]

Reads the built one-folder app FOLDER (``dist/gpuadvisor``) and the Python that built it, and
writes ``FOLDER/THIRD-PARTY-NOTICES`` (plain text) and, with ``--dep5``, a Debian
machine-readable copyright file (``/usr/share/doc/gpuadvisor/copyright`` in the .deb).
``packaging/build.py`` runs it after PyInstaller. Sources, in this order:

1. the project's own ``LICENSE`` (MIT);
2. Qt and PySide6: the GNU LGPL version 3 notice, the LGPL-3 and GPL-3 texts (Debian's
   ``/usr/share/common-licenses``) and how to replace the Qt libraries;
3. the Python runtime (PSF license, from the Python installation that built the app);
4. every Python distribution the app depends on (``importlib.metadata``: the ``Requires-Dist``
   closure of gpuadvisor), with its ``License-Expression`` and every license file its wheel
   ships (numpy's includes OpenBLAS, libgfortran and libquadmath);
5. every other shared library in the bundle: the Debian package it was copied from
   (``dpkg -S``) and that package's ``/usr/share/doc/<package>/copyright``.

A library whose origin cannot be found makes the script fail: a notice must never be missing.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
APP = "gpuadvisor"
COMMON_LICENSES = Path("/usr/share/common-licenses")
LICENSE_FILE_NAME = re.compile(r"(LICEN[CS]E|COPYING|NOTICE|AUTHORS)", re.IGNORECASE)
#: the bundle's own files: PyInstaller's bootloader and our executables
OWN = re.compile(r"^(gpuadvisor|gpuadvisor-cli)$")
#: Debian names of the SPDX identifiers that appear in the metadata (DEP-5 short names)
DEBIAN_NAMES = {
    "MIT": "Expat",
    "BSD-3-Clause": "BSD-3-clause",
    "BSD-2-Clause": "BSD-2-clause",
    "Apache-2.0": "Apache-2.0",
    "PSF-2.0": "PSF-2.0",
    "LGPL-3.0-only": "LGPL-3",
    "GPL-3.0-only": "GPL-3",
    "BSD License": "BSD-3-clause",
}
COMMON = {"Apache-2.0": "Apache-2.0", "LGPL-3": "LGPL-3", "GPL-3": "GPL-3"}
RULE = "=" * 100

QT_NOTICE = """\
Qt and Qt for Python (PySide6, shiboken6) are licensed under the GNU Lesser General Public
License version 3 (LGPL-3.0-only; the packages also offer GPL-2.0 and GPL-3.0, and The Qt
Company sells commercial licenses). Copyright (C) The Qt Company Ltd. and other contributors.
The full texts of the LGPL version 3 and of the GNU GPL version 3, which it extends, follow.

This application uses Qt {qt} and PySide6 {pyside} as unmodified shared libraries. Their
source code: https://download.qt.io/official_releases/qt/ (Qt) and
https://code.qt.io/cgit/pyside/pyside-setup.git (tag v{pyside}; PyPI: PySide6-Essentials and
shiboken6 {pyside}). Qt contains third-party code under its own licenses, listed at
https://doc.qt.io/qt-6/licenses-used-in-qt.html; the ICU libraries it loads are listed below.

How to replace the Qt libraries with your own (LGPL-3, section 4):
  - The Qt libraries are ordinary shared libraries in {lib_dir}/ (libQt6Core.so.6,
    libQt6Gui.so.6, libQt6Widgets.so.6, ...) and the Qt for Python bindings are in
    {bind_dir}/. Build or obtain Qt {qt_series}.x libraries (the same minor version, which
    keeps the binary interface) and copy them over the bundled files, keeping their names;
    the application loads whatever it finds there. The same holds for the platform plugins
    in {plugin_dir}/.
  - Or rebuild the whole application from its source (MIT licensed, build instructions in its
    README: `make dist`) against your own PySide6 and Qt: install them into the build's Python
    environment in place of PySide6-Essentials and run packaging/build.py.
  - Reverse engineering of this application for debugging such modifications is permitted."""


@dataclass
class Component:
    """One redistributed work: what it is, where in the bundle, its license and the texts."""

    title: str
    version: str
    license: str  # SPDX expression or the upstream's own words
    origin: str
    files: list[str]  # glob patterns relative to the bundle folder
    texts: list[tuple[str, str]] = field(default_factory=list)  # (label, text)
    copyright: list[str] = field(default_factory=list)


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace").replace("\r\n", "\n").rstrip() + "\n"


def common_license(name: str) -> str:
    path = COMMON_LICENSES / name
    if not path.exists():
        raise SystemExit(
            f"error: {path} is missing (Debian's base-files provides it); cannot write the notices"
        )
    return _read(path)


def _copyright_lines(texts: list[tuple[str, str]]) -> list[str]:
    found = []
    for _label, text in texts:
        for line in text.splitlines():
            line = line.strip()
            if (
                re.match(r"^(Copyright|\(c\)|©)", line, re.IGNORECASE)
                and len(line) < 160
                and line not in found
            ):
                found.append(line)
    return found[:12]


# --- Python distributions -----------------------------------------------------------------------


def runtime_closure(root: str = APP) -> list[metadata.Distribution]:
    """``root``'s installed runtime dependencies, recursively (no extras), sorted by name."""
    seen: dict[str, metadata.Distribution] = {}
    stack = [root]
    while stack:
        name = stack.pop()
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        key = re.sub(r"[-_.]+", "-", dist.metadata["Name"]).lower()
        if key in seen:
            continue
        seen[key] = dist
        for req in dist.requires or ():
            if "extra ==" in req:
                continue
            marker = req.split(";", 1)[1] if ";" in req else ""
            if marker and not _marker_holds(marker):
                continue
            stack.append(re.split(r"[ ;<>=!~\[(]", req.strip(), maxsplit=1)[0])
    seen.pop(root, None)
    return sorted(seen.values(), key=lambda d: d.metadata["Name"].lower())


def _marker_holds(marker: str) -> bool:
    try:
        from packaging.markers import Marker
    except ImportError:  # no 'packaging' installed: count it in, a notice too many is harmless
        return True
    return Marker(marker.strip()).evaluate({"extra": ""})


def distribution_license(dist: metadata.Distribution) -> str:
    meta = dist.metadata
    if meta.get("License-Expression"):
        return meta["License-Expression"]
    classifiers = [
        c.split(" :: ")[-1] for c in meta.get_all("Classifier") or () if c.startswith("License ::")
    ]
    if classifiers:
        return " AND ".join(classifiers)
    return (meta.get("License") or "see the license text").strip().splitlines()[0]


def distribution_texts(dist: metadata.Distribution) -> list[tuple[str, str]]:
    texts = []
    for f in dist.files or ():
        parts = Path(str(f)).parts
        if parts and parts[0].endswith(".dist-info") and LICENSE_FILE_NAME.search(Path(str(f)).name):
            path = Path(str(dist.locate_file(f)))
            if path.is_file():
                texts.append(("/".join(parts[1:]), _read(path)))
    return texts


def top_levels(dist: metadata.Distribution) -> list[str]:
    names = set()
    for f in dist.files or ():
        first = Path(str(f)).parts[0]
        if first.endswith((".dist-info", ".data")) or first in ("..", "__pycache__", "bin"):
            continue
        names.add(first[:-3] if first.endswith(".py") else first)
    return sorted(names)


def python_components(folder: Path) -> list[Component]:
    internal = folder / "_internal"
    out = []
    for dist in runtime_closure():
        name = dist.metadata["Name"]
        globs = []
        for top in top_levels(dist):
            if (internal / top).is_dir():
                globs.append(f"_internal/{top}/*")
            elif (internal / f"{top}.pyc").exists():
                globs.append(f"_internal/{top}.pyc")
        texts = distribution_texts(dist)
        if name.lower().replace("_", "-").startswith(("pyside6", "shiboken6")):
            continue  # the Qt section covers them
        if not globs and not _in_archive(folder, top_levels(dist)):
            continue  # a dependency the app never imports, so PyInstaller left it out
        out.append(
            Component(
                f"{name} (Python package)",
                dist.version,
                distribution_license(dist),
                "PyPI wheel",
                globs,
                texts,
                _copyright_lines(texts),
            )
        )
    return out


def _archive_names(folder: Path) -> set[str]:
    """Top-level module names in the executable's archive (PYZ), from PyInstaller's table of contents."""
    from PyInstaller.archive.readers import CArchiveReader

    exe = folder / APP
    if not exe.is_file():  # Windows (gpuadvisor.exe): its packages are loose .pyc files, found on disk
        return set()
    carchive = CArchiveReader(str(exe))
    names: set[str] = set()
    for entry in carchive.toc:
        if entry.endswith(".pyz"):
            names |= {name.split(".")[0] for name in carchive.open_embedded_archive(entry).toc}
    return names


_ARCHIVE_CACHE: dict[Path, set[str]] = {}


def _in_archive(folder: Path, tops: list[str]) -> bool:
    if folder not in _ARCHIVE_CACHE:
        _ARCHIVE_CACHE[folder] = _archive_names(folder)
    return any(t in _ARCHIVE_CACHE[folder] for t in tops)


def python_runtime(folder: Path) -> Component:
    version = sys.version.split()[0]
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    candidates = [stdlib / "LICENSE.txt", Path(sys.base_prefix) / "LICENSE.txt"]
    text = next((_read(p) for p in candidates if p.exists()), None)
    if text is None:  # Debian's own Python keeps it in the package's copyright file
        pkg = f"python{sys.version_info.major}.{sys.version_info.minor}"
        doc = Path("/usr/share/doc") / pkg / "copyright"
        if not doc.exists():
            raise SystemExit(f"error: cannot find the Python license (LICENSE.txt or {doc})")
        text = _read(doc)
    texts = [("LICENSE.txt", text)]
    return Component(
        "Python",
        version,
        "PSF-2.0",
        f"CPython {version}, the build's Python",
        ["_internal/libpython*", "_internal/base_library.zip", "_internal/python3*/lib-dynload/*"],
        texts,
        ["Copyright (c) 2001 Python Software Foundation; All Rights Reserved"],
    )


# --- shared libraries copied from the system ----------------------------------------------------


def _ldconfig() -> dict[str, str]:
    try:
        out = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return {}
    found = {}
    for line in out.splitlines()[1:]:
        m = re.match(r"\s*(\S+) \(([^)]*)\) => (\S+)", line)
        if m and "x86-64" in m[2] or (m and "64" in m[2]):
            found.setdefault(m[1], m[3])
    return found


def debian_package(path: str) -> str | None:
    for candidate in (path, str(Path(path).resolve())):
        for variant in (
            candidate,
            candidate.replace("/usr/lib/", "/lib/", 1),
            candidate.replace("/lib/", "/usr/lib/", 1),
        ):
            try:
                out = subprocess.run(
                    ["dpkg", "-S", variant], capture_output=True, text=True, check=True
                ).stdout
            except (OSError, subprocess.CalledProcessError):
                continue
            return out.split(":", 1)[0].strip()
    return None


def package_version(pkg: str) -> str:
    try:
        return subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def library_components(folder: Path, covered: list[str]) -> list[Component]:
    """The bundle's shared libraries that no Python distribution or Python itself provides."""
    internal = folder / "_internal"
    libs = sorted(
        p
        for p in internal.iterdir()
        if re.search(r"\.so(\.\d+)*$", p.name) and not p.is_symlink() and not p.name.startswith("libpython")
    )
    covered_names = {Path(g).parts[1] for g in covered if len(Path(g).parts) > 1}
    index = _ldconfig()
    by_pkg: dict[str, Component] = {}
    missing = []
    for lib in libs:
        if lib.name.split(".so")[0] in covered_names:
            continue
        source = index.get(lib.name)
        pkg = debian_package(source) if source else None
        if pkg is None:
            missing.append(lib.name)
            continue
        if pkg not in by_pkg:
            doc = Path("/usr/share/doc") / pkg / "copyright"
            texts = [(f"/usr/share/doc/{pkg}/copyright", _read(doc))] if doc.exists() else []
            if not texts:
                raise SystemExit(f"error: {doc} is missing; cannot state the license of {lib.name}")
            by_pkg[pkg] = Component(
                f"{pkg} (Debian package)",
                package_version(pkg),
                dep5_license(texts[0][1]),
                f"Debian package {pkg}",
                [],
                texts,
                dep5_copyright(texts[0][1]),
            )
        by_pkg[pkg].files.append(f"_internal/{lib.name}*")
    if missing:
        raise SystemExit(f"error: no Debian package found for bundled libraries: {', '.join(missing)}")
    return list(by_pkg.values())


def _dep5_paragraphs(text: str) -> list[dict[str, str]]:
    paragraphs, current, key = [], {}, None
    for line in text.splitlines():
        if not line.strip():
            if current:
                paragraphs.append(current)
            current, key = {}, None
        elif line[0] in " \t" and key:
            current[key] += "\n" + line.strip()
        elif ":" in line:
            key, value = line.split(":", 1)
            current[key.strip()] = value.strip()
    if current:
        paragraphs.append(current)
    return paragraphs


def _main_files_paragraph(text: str) -> dict[str, str] | None:
    if not text.startswith("Format:"):
        return None
    for para in _dep5_paragraphs(text):
        if "*" in para.get("Files", "").split():
            return para
    return None


def dep5_license(text: str) -> str:
    para = _main_files_paragraph(text)
    return para["License"].splitlines()[0] if para and para.get("License") else "see the copyright file"


def dep5_copyright(text: str) -> list[str]:
    para = _main_files_paragraph(text)
    if para and para.get("Copyright"):
        return [line for line in para["Copyright"].splitlines() if line.strip() and line.strip() != "."][:12]
    return _copyright_lines([("", text)])


def icu_component(folder: Path) -> Component | None:
    libs = sorted((folder / "_internal").rglob("libicuuc.so.*"))
    if not libs:
        return None
    version = libs[0].name.split(".so.")[-1]
    texts = []
    for doc in sorted(Path("/usr/share/doc").glob("libicu[0-9]*/copyright")):
        texts.append(
            (
                f"the ICU license as Debian's {doc.parent.name} states it (same license for ICU {version})",
                _read(doc),
            )
        )
        break
    if not texts:
        texts.append(
            (
                "ICU license",
                "ICU is licensed under the Unicode License (Unicode-DFS-2016 and ICU "
                "license); the text: https://github.com/unicode-org/icu/blob/release-"
                f"{version}-1/LICENSE\n",
            )
        )
    return Component(
        "ICU (International Components for Unicode), loaded by Qt",
        version,
        "Unicode-DFS-2016 AND ICU",
        "bundled in the PySide6-Essentials wheel",
        ["_internal/PySide6/Qt/lib/libicu*"],
        texts,
        ["Copyright (C) 2016 and later: Unicode, Inc. and others."],
    )


# --- Qt ------------------------------------------------------------------------------------------


def qt_component(folder: Path) -> Component:
    pyside = metadata.version("PySide6-Essentials")
    qt = pyside  # PySide6 x.y.z wraps Qt x.y.z
    qt_series = ".".join(qt.split(".")[:2])
    lib_dir = "_internal/PySide6/Qt/lib"
    notice = QT_NOTICE.format(
        qt=qt,
        pyside=pyside,
        qt_series=qt_series,
        lib_dir=lib_dir,
        bind_dir="_internal/PySide6 and _internal/shiboken6",
        plugin_dir="_internal/PySide6/Qt/plugins",
    )
    return Component(
        "Qt and Qt for Python (PySide6, shiboken6)",
        pyside,
        "LGPL-3.0-only",
        "PyPI wheels PySide6-Essentials and shiboken6",
        [
            "_internal/PySide6/*",
            "_internal/shiboken6/*",
            "_internal/libQt6*",
            "_internal/libpyside6*",
            "_internal/libshiboken6*",
        ],
        [
            ("notice", notice + "\n"),
            ("GNU Lesser General Public License version 3", common_license("LGPL-3")),
            ("GNU General Public License version 3", common_license("GPL-3")),
        ],
        ["Copyright (C) The Qt Company Ltd. and other contributors."],
    )


# --- output --------------------------------------------------------------------------------------


def components(folder: Path) -> list[Component]:
    found = [qt_component(folder)]
    icu = icu_component(folder)
    if icu:
        found.append(icu)
    found.append(python_runtime(folder))
    py = python_components(folder)
    found += py
    found += library_components(folder, [g for c in py for g in c.files])
    return found


def notices_text(folder: Path, version: str) -> str:
    comps = components(folder)
    out = [
        f"gpuadvisor {version}: third-party notices",
        "",
        "gpuadvisor itself is distributed under the MIT License (the file LICENSE next to this one).",
        "This standalone build also contains the following works, each under its own license. The",
        "list was generated from the build's Python packages (their metadata and license files) and",
        "the Debian packages its shared libraries were copied from.",
        "",
        "Contents:",
    ]
    out += [f"  - {c.title} {c.version}: {c.license}" for c in comps]
    for c in comps:
        out += [
            "",
            RULE,
            f"{c.title} {c.version}",
            f"License: {c.license}",
            f"Origin: {c.origin}",
            f"In this bundle: {', '.join(c.files)}",
        ]
        for label, text in c.texts:
            out += ["", f"--- {label} ---", "", text.rstrip()]
    shipped = sorted(
        p
        for p in (folder / "_internal").rglob("*")
        if p.is_file() and LICENSE_FILE_NAME.search(p.name) and p.suffix in ("", ".txt", ".md")
    )
    if shipped:
        out += [
            "",
            RULE,
            "License files shipped inside the bundle's packages (also in place, next to what they cover)",
        ]
        for path in shipped:
            out += ["", f"--- {path.relative_to(folder).as_posix()} ---", "", _read(path).rstrip()]
    return "\n".join(out) + "\n"


def _dep5_text(text: str) -> str:
    lines = []
    for line in text.rstrip().splitlines():
        line = line.rstrip()
        lines.append(" " + line if line.strip() else " .")
    return "\n".join(lines)


GPL3_START = re.compile(r"^\s*GNU GENERAL PUBLIC LICENSE\s*\n\s*Version 3, 29 June 2007", re.MULTILINE)
GPL3_END = "<https://www.gnu.org/licenses/why-not-lgpl.html>."


def _without_gpl3_text(text: str) -> str:
    """A license file with an embedded full GPL-3 text replaced by a pointer to Debian's copy."""
    m = GPL3_START.search(text)
    end = text.find(GPL3_END, m.start()) if m else -1
    if not m or end < 0:
        return text
    return (
        text[: m.start()] + "The GNU General Public License version 3: on Debian systems, its complete "
        "text is in /usr/share/common-licenses/GPL-3.\n" + text[end + len(GPL3_END) :]
    )


APACHE_START = re.compile(r"^\s*Apache License\s*\n\s*Version 2\.0, January 2004", re.MULTILINE)


def _without_apache_text(text: str) -> str:
    """A license file with an embedded full Apache-2.0 text replaced by a pointer to Debian's copy."""
    m = APACHE_START.search(text)
    if not m:
        return text
    end_terms = text.find("END OF TERMS AND CONDITIONS", m.start())
    if end_terms < 0:
        return text
    tail = text.find("limitations under the License.", end_terms)
    end = (
        tail + len("limitations under the License.")
        if tail >= 0
        else end_terms + len("END OF TERMS AND CONDITIONS")
    )
    return (
        text[: m.start()] + "The Apache License, Version 2.0: on Debian systems, its complete text is in "
        "/usr/share/common-licenses/Apache-2.0.\n" + text[end:]
    )


def _license_name(c: Component) -> str:
    short = DEBIAN_NAMES.get(c.license.strip())
    if short:
        return short
    return re.sub(r"[^a-z0-9]+", "-", c.title.split(" (")[0].lower()).strip("-") + "-license"


def _license_body(c: Component, name: str) -> str:
    if name in COMMON:
        body = (
            f"On Debian systems, the complete text of this license can be found in "
            f"/usr/share/common-licenses/{COMMON[name]}."
        )
        if name == "LGPL-3":
            body = (
                c.texts[0][1].rstrip()
                + "\n\n"
                + body.replace("this license", "the LGPL version 3")
                + "\nThe GNU General Public License version 3, which it extends: /usr/share/common-licenses/GPL-3."
            )
        return body
    texts = [_without_apache_text(_without_gpl3_text(t)) for _label, t in c.texts] or [c.license]
    prefix = "" if name in DEBIAN_NAMES.values() else f"SPDX: {c.license}\n\n"
    return prefix + "\n\n".join(t.rstrip() for t in texts)


def dep5_copyright_text(folder: Path, version: str, prefix: str) -> str:
    """A Debian machine-readable copyright file; file patterns are prefixed with ``prefix``.

    One Files paragraph per bundled work (with a License synopsis) and one stand-alone License
    paragraph per license name. Python packages whose code sits only inside the executable's
    archive are named in the paragraph of the executable itself.
    """
    license_text = _read(ROOT / "LICENSE")
    ours = license_text.split("\n", 2)[2] if license_text.startswith("MIT License") else license_text
    comps = components(folder)
    bodies: dict[str, str] = {"Expat": ours.strip()}
    files_paras = []
    archive_only = []
    for c in comps:
        name = _license_name(c)
        bodies.setdefault(name, _license_body(c, name))
        copyright_lines = c.copyright or [f"The {c.title.split(' (')[0]} authors"]
        if c.files:
            files_paras.append(
                f"Files: {' '.join(f'{prefix}/{g}' for g in c.files)}\n"
                "Copyright: " + "\n ".join(copyright_lines) + f"\nLicense: {name}"
            )
        if c.origin == "PyPI wheel" or c.title == "Python":
            archive_only.append((c, name, copyright_lines))
    exe_names = ["Expat"] + sorted({n for _c, n, _l in archive_only} - {"Expat"})
    exe_copyright = ["2026 The gpuadvisor developers"] + [line for _c, _n, ls in archive_only for line in ls]
    exe_para = (
        f"Files: {prefix}/{APP} {prefix}/{APP}-cli\n"
        "Copyright: " + "\n ".join(dict.fromkeys(exe_copyright)) + "\n"
        f"License: {' and '.join(exe_names)}\n"
        "Comment: The executable holds, in its archive, the compiled Python modules of gpuadvisor, of\n"
        " the Python standard library and of the Python packages listed in this file."
    )
    paras = [
        "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n"
        f"Upstream-Name: {APP}\n"
        "Comment: A self-contained build: Python, Qt, numpy, pandas and pyqtgraph are bundled under\n"
        f" /{prefix}. The complete notices, with every license file of every bundled package, are in\n"
        f" /usr/share/doc/{APP}/THIRD-PARTY-NOTICES.gz (also /{prefix}/THIRD-PARTY-NOTICES).",
        "Files: *\nCopyright: 2026 The gpuadvisor developers\nLicense: Expat",
        *files_paras,
        exe_para,
    ]
    paras += [f"License: {name}\n{_dep5_text(body)}" for name, body in bodies.items()]
    return "\n\n".join(paras) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="the built one-folder app (dist/gpuadvisor)")
    parser.add_argument("--dep5", type=Path, metavar="FILE", help="also write a Debian copyright file here")
    parser.add_argument("--prefix", default=f"opt/{APP}", help="install path of the folder, for --dep5")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from gpuadvisor import __version__

    (args.folder / "THIRD-PARTY-NOTICES").write_text(notices_text(args.folder, __version__), encoding="utf-8")
    if args.dep5:
        args.dep5.write_text(dep5_copyright_text(args.folder, __version__, args.prefix), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
