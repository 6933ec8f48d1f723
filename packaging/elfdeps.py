# SPDX-License-Identifier: MIT
"""Read the dynamic dependencies of ELF files (Linux shared libraries and executables), in pure Python.

The PyInstaller spec uses it to drop libraries that nothing in the bundle loads any more once
unused Qt plugins are removed, and the packaging test uses it to check that every library the
bundle needs but does not ship is provided by a package in the ``.deb``'s ``Depends``.

Only 64-bit little-endian ELF (x86_64, aarch64) is read; for anything else :func:`read_elf`
returns ``None``. The section headers are used (``strip`` keeps them): ``SHT_DYNAMIC`` for
``DT_NEEDED`` / ``DT_SONAME`` and ``SHT_GNU_verneed`` for the symbol versions required from
each library (``GLIBC_2.34`` and so on).

:func:`drop_build_runpaths` removes ``DT_RUNPATH``/``DT_RPATH`` entries that point at the build
machine (a locally built Python's ``lib`` folder): the bundle never needs them, and on another
machine they would make the loader search a folder that a stranger could create. ``$ORIGIN``
entries (the Qt libraries finding each other) are kept. Like ``chrpath -d``: the entry is
taken out of the dynamic array and the array closed with ``DT_NULL``; when some ``$ORIGIN``
entries remain, the string is rewritten in place, shorter, padded with NULs.

References: the System V ABI (ELF-64 object file format) and the LSB "Symbol Versioning" chapter.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field

_SHDR = struct.Struct("<IIQQQQIIQQ")
_DYN = struct.Struct("<qQ")
_VERNEED = struct.Struct("<HHIII")
_VERNAUX = struct.Struct("<IHHII")
SHT_DYNAMIC = 6
SHT_GNU_VERNEED = 0x6FFFFFFE
DT_NEEDED = 1
DT_SONAME = 14
DT_RPATH = 15
DT_RUNPATH = 29


@dataclass(frozen=True)
class ElfInfo:
    """The dynamic section of one ELF file."""

    needed: tuple[str, ...]
    soname: str | None
    #: library soname -> symbol versions required from it, e.g. {"libc.so.6": ("GLIBC_2.34",)}
    version_needs: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: DT_RUNPATH and DT_RPATH strings, as stored ("$ORIGIN/../lib:/opt/x")
    runpaths: tuple[str, ...] = ()


def is_elf(path: str | os.PathLike[str]) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"\x7fELF"
    except OSError:
        return False


def _cstr(blob: bytes, offset: int) -> str:
    end = blob.find(b"\0", offset)
    return blob[offset : end if end >= 0 else len(blob)].decode("utf-8", "replace")


def read_elf(path: str | os.PathLike[str]) -> ElfInfo | None:
    """The needed libraries, soname and version needs of ``path``.

    ``None`` when it is not a readable 64-bit little-endian ELF file.
    """
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    # e_ident: magic, class 2 (64-bit), data 1 (little-endian)
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return None
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    if shoff == 0 or shnum == 0 or shentsize < _SHDR.size or shoff + shnum * shentsize > len(data):
        return None
    sections = [_SHDR.unpack_from(data, shoff + i * shentsize) for i in range(shnum)]

    def section_bytes(index: int) -> bytes:
        sh = sections[index]
        return data[sh[4] : sh[4] + sh[5]]

    needed: list[str] = []
    runpaths: list[str] = []
    soname = None
    version_needs: dict[str, tuple[str, ...]] = {}
    for sh in sections:
        sh_type, sh_offset, sh_size, sh_link, sh_info = sh[1], sh[4], sh[5], sh[6], sh[7]
        if sh_type == SHT_DYNAMIC and sh_link < len(sections):
            strtab = section_bytes(sh_link)
            for off in range(sh_offset, sh_offset + sh_size - _DYN.size + 1, _DYN.size):
                tag, val = _DYN.unpack_from(data, off)
                if tag == 0:
                    break
                if tag == DT_NEEDED:
                    needed.append(_cstr(strtab, val))
                elif tag == DT_SONAME:
                    soname = _cstr(strtab, val)
                elif tag in (DT_RPATH, DT_RUNPATH):
                    runpaths.append(_cstr(strtab, val))
        elif sh_type == SHT_GNU_VERNEED and sh_link < len(sections):
            strtab = section_bytes(sh_link)
            off = sh_offset
            for _ in range(sh_info):  # sh_info: number of Verneed entries
                _ver, cnt, file_off, aux, nxt = _VERNEED.unpack_from(data, off)
                names = []
                aoff = off + aux
                for _ in range(cnt):
                    _hash, _flags, _other, name_off, anext = _VERNAUX.unpack_from(data, aoff)
                    names.append(_cstr(strtab, name_off))
                    aoff += anext
                version_needs[_cstr(strtab, file_off)] = tuple(names)
                if nxt == 0:
                    break
                off += nxt
    return ElfInfo(tuple(needed), soname, version_needs, tuple(runpaths))


def _is_origin(entry: str) -> bool:
    return entry.startswith(("$ORIGIN", "${ORIGIN}"))


def drop_build_runpaths(path: str | os.PathLike[str]) -> tuple[str, ...]:
    """Remove the search-path entries of ``path`` that are not ``$ORIGIN``-relative; return the
    entries removed (empty when there was nothing to do or the file is not 64-bit LE ELF)."""
    with open(path, "rb") as fh:
        data = bytearray(fh.read())
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return ()
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    if shoff == 0 or shnum == 0 or shoff + shnum * shentsize > len(data):
        return ()
    sections = [_SHDR.unpack_from(data, shoff + i * shentsize) for i in range(shnum)]
    removed: list[str] = []
    for sh in sections:
        if sh[1] != SHT_DYNAMIC or sh[6] >= len(sections):
            continue
        str_off = sections[sh[6]][4]
        start, size = sh[4], sh[5]
        entries = [
            _DYN.unpack_from(data, off) for off in range(start, start + size - _DYN.size + 1, _DYN.size)
        ]
        kept = []
        for tag, val in entries:
            if tag in (DT_RPATH, DT_RUNPATH):
                text = _cstr(data, str_off + val)
                parts = text.split(":")
                keep = [p for p in parts if _is_origin(p)]
                removed += [p for p in parts if not _is_origin(p)]
                if not keep:
                    continue
                if len(keep) < len(parts):
                    new = ":".join(keep).encode()
                    pos = str_off + val
                    data[pos : pos + len(text.encode())] = new + b"\0" * (len(text.encode()) - len(new))
            kept.append((tag, val))
            if tag == 0:
                break
        kept += [(0, 0)] * (len(entries) - len(kept))
        for i, (tag, val) in enumerate(kept):
            _DYN.pack_into(data, start + i * _DYN.size, tag, val)
    if removed:
        with open(path, "r+b") as fh:
            fh.write(data)
    return tuple(removed)
