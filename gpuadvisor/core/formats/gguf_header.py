"""A bounded parser of a GGUF file's header: metadata and tensor records, checked before anything is allocated.

Layout (GGUF versions 2 and 3, github.com/ggml-org/ggml ``docs/gguf.md``)::

    magic "GGUF" | version u32 | tensor_count u64 | kv_count u64
    kv_count x   key (string) | value_type u32 | value
    tensor_count x   name (string) | n_dims u32 | n_dims x u64 | ggml_type u32 | offset u64
    padding to general.alignment (32), then the tensor data

    string = length u64 | UTF-8 bytes;  array = element_type u32 | count u64 | count x element

Every count and length is checked against the bytes left in the file before it is used, so a
header that claims 2**63 array elements or a 2**60-byte string is refused at once, whatever its
size: each element takes at least one byte (a string at least eight), so a count larger than the
bytes left is a lie. Arrays are also capped at :data:`MAX_ARRAY_ELEMENTS` and all arrays together at
:data:`MAX_TOTAL_ELEMENTS` (a 256k-token vocabulary with its scores, types and merges is about 1.5
million), tensors at :data:`MAX_TENSORS`, dimensions at 4 (``GGML_MAX_DIMS``), nesting of arrays at
:data:`MAX_ARRAY_NESTING`. An array is a :class:`GgufArray`: its length (the vocabulary's size,
for ``tokenizer.ggml.tokens``) and, for an array of numbers of at most :data:`MAX_ARRAY_VALUES`
elements, its values (one per layer: ``head_count_kv`` in models whose layers have different
numbers of KV heads), at most :data:`MAX_KEPT_VALUES` values in all; longer arrays, arrays of
strings and nested arrays keep their length only. Big-endian files (version field byte-swapped)
are read too.

Every problem raises :class:`~gpuadvisor.core.errors.ModelConfigError` naming the file, the
byte offset and the key or tensor. The llama.cpp project's ``gguf`` package supplies the tables
(GGML types, block sizes); its reader, which keeps a view of every array element, is not used.

References: GGUF specification, github.com/ggml-org/ggml ``docs/gguf.md``; ``gguf-py``
(``GGML_QUANT_SIZES``, ``GGMLQuantizationType``) and ``ggml/src/gguf.cpp`` in
github.com/ggml-org/llama.cpp (the same bounds: ``GGML_MAX_DIMS``, overflow checks).
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..errors import ModelConfigError

GGUF_MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)
DEFAULT_ALIGNMENT = 32
#: Most elements in one metadata array (a vocabulary holds at most about a million tokens).
MAX_ARRAY_ELEMENTS = 1 << 24
#: Most elements in all metadata arrays together.
MAX_TOTAL_ELEMENTS = 1 << 25
#: Most tensors in one file (the largest models have about 100,000).
MAX_TENSORS = 1 << 22
#: Longest key, tensor name or string value, in bytes (a chat template is a few kilobytes).
MAX_STRING_BYTES = 1 << 24
#: Most values kept of one array of numbers: one per layer of the deepest model gpuadvisor accepts.
MAX_ARRAY_VALUES = 100_000
#: Most array values kept in all (a 32k-token vocabulary's scores and types are 65,536 of them).
MAX_KEPT_VALUES = 1_000_000
#: ``GGML_MAX_DIMS``.
MAX_DIMS = 4
MAX_ARRAY_NESTING = 4
#: Most elements in one tensor (2**62: products stay exact and below any file size).
MAX_TENSOR_ELEMENTS = 1 << 62

# GGUF value types (gguf.GGUFValueType): struct format and size of the scalars.
_STRING, _ARRAY = 8, 9
_SCALARS: dict[int, tuple[str, int]] = {
    0: ("B", 1),
    1: ("b", 1),
    2: ("H", 2),
    3: ("h", 2),
    4: ("I", 4),
    5: ("i", 4),
    6: ("f", 4),
    7: ("?", 1),
    10: ("Q", 8),
    11: ("q", 8),
    12: ("d", 8),
}

#: (tensor name, GGML type name in lower case, shape as stored, elements, bytes, data offset)
TensorRecord = tuple[str, str, tuple[int, ...], int, int, int]


class GgufArray(NamedTuple):
    """A metadata array: its length, and its values when it holds numbers and few enough to keep
    (None otherwise: strings, nested arrays, or more than :data:`MAX_ARRAY_VALUES` elements)."""

    length: int
    values: tuple[int | float | bool, ...] | None = None
    numbers: bool = False  # an array of numbers (kept or not)

    def __repr__(self) -> str:  # never a million values in an error message
        return f"an array of {self.length:,} elements"


@dataclass(frozen=True, slots=True)
class GgufHeader:
    """What one file's header holds; ``data_end`` is where its last tensor's data ends."""

    version: int
    metadata: dict[str, Any]
    tensors: tuple[TensorRecord, ...]
    data_start: int
    data_end: int


class _Cursor:
    """Reads from ``data`` with every length checked against the bytes left."""

    def __init__(self, data: bytes | memoryview | mmap.mmap, name: str, order: str) -> None:
        self.data, self.name, self.order, self.pos = data, name, order, 0
        self.size = len(data)
        self.elements = 0
        self.kept = 0  # array values kept so far (MAX_KEPT_VALUES)

    def fail(self, message: str) -> ModelConfigError:
        return ModelConfigError("model.gguf", f"{self.name}: {message}")

    @property
    def left(self) -> int:
        return self.size - self.pos

    def need(self, n: int, what: str) -> None:
        if n > self.left:
            raise self.fail(
                f"{what} at byte {self.pos:,} needs {n:,} bytes but only {self.left:,} are left; "
                "the file is truncated or damaged"
            )

    def unpack(self, fmt: str, size: int, what: str) -> Any:
        self.need(size, what)
        (value,) = struct.unpack_from(self.order + fmt, self.data, self.pos)
        self.pos += size
        return value

    def u32(self, what: str) -> int:
        return int(self.unpack("I", 4, what))

    def u64(self, what: str) -> int:
        return int(self.unpack("Q", 8, what))

    def string_bytes(self, what: str) -> bytes:
        length = self.u64(f"the length of {what}")
        if length > MAX_STRING_BYTES:
            raise self.fail(
                f"{what} at byte {self.pos - 8:,} claims {length:,} bytes; at most {MAX_STRING_BYTES:,} are read"
            )
        self.need(length, what)
        raw = bytes(self.data[self.pos : self.pos + length])
        self.pos += length
        return raw

    def text(self, what: str) -> str:
        start = self.pos
        raw = self.string_bytes(what)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail(f"{what} at byte {start:,} is not UTF-8 text") from None

    def skip_string(self, what: str) -> None:
        length = self.u64(f"the length of {what}")
        if length > MAX_STRING_BYTES:
            raise self.fail(
                f"{what} at byte {self.pos - 8:,} claims {length:,} bytes; at most {MAX_STRING_BYTES:,} are read"
            )
        self.need(length, what)
        self.pos += length

    def value(self, value_type: int, key: str, depth: int = 0) -> Any:
        """A metadata value: scalars and strings as Python values, arrays as :class:`GgufArray`."""
        if value_type == _STRING:
            return self.text(f"the value of {key}")
        scalar = _SCALARS.get(value_type)
        if scalar is not None:
            value = self.unpack(scalar[0], scalar[1], f"the value of {key}")
            return bool(value) if value_type == 7 else value
        if value_type != _ARRAY:
            raise self.fail(f"{key} has value type {value_type}, which GGUF does not define")
        if depth >= MAX_ARRAY_NESTING:
            raise self.fail(f"{key} nests arrays more than {MAX_ARRAY_NESTING} deep")
        item_type = self.u32(f"the element type of {key}")
        count = self.u64(f"the length of {key}")
        self.check_count(count, item_type, key)
        if item_type in _SCALARS:
            fmt, size = _SCALARS[item_type]
            self.need(count * size, f"the {count:,} elements of {key}")
            values = None
            if depth == 0 and count <= MAX_ARRAY_VALUES and self.kept + count <= MAX_KEPT_VALUES:
                raw = struct.unpack_from(f"{self.order}{count}{fmt}", self.data, self.pos)
                values = tuple(bool(v) for v in raw) if item_type == 7 else raw
                self.kept += count
            self.pos += count * size
            return GgufArray(count, values, numbers=True)
        if item_type == _STRING:
            for _ in range(count):
                self.skip_string(f"an element of {key}")
        elif item_type == _ARRAY:
            for _ in range(count):
                self.value(_ARRAY, key, depth + 1)
        else:
            raise self.fail(f"{key} is an array of type {item_type}, which GGUF does not define")
        return GgufArray(count)

    def check_count(self, count: int, item_type: int, key: str) -> None:
        smallest = (
            8 if item_type == _STRING else 12 if item_type == _ARRAY else _SCALARS.get(item_type, ("", 1))[1]
        )
        if count * smallest > self.left:
            raise self.fail(
                f"{key} claims {count:,} elements at byte {self.pos - 8:,}, more than the {self.left:,} "
                "bytes left in the file can hold; the file is truncated or damaged"
            )
        if count > MAX_ARRAY_ELEMENTS:
            raise self.fail(f"{key} has {count:,} elements; at most {MAX_ARRAY_ELEMENTS:,} are read")
        self.elements += count
        if self.elements > MAX_TOTAL_ELEMENTS:
            raise self.fail(f"its metadata arrays hold more than {MAX_TOTAL_ELEMENTS:,} elements in all")


def _counts(cur: _Cursor) -> tuple[int, int, int]:
    """The version (switching the cursor's byte order for a file written on a big-endian machine),
    the tensor count and the metadata count, each checked against the bytes left."""
    version = cur.u32("the version")
    if version & 0xFFFF == 0 and version:  # written on a machine of the other byte order
        cur.order = ">"
        version = struct.unpack(">I", struct.pack("<I", version))[0]
    if version not in SUPPORTED_VERSIONS:
        raise cur.fail(
            f"GGUF version {version} is not supported (only {' and '.join(map(str, SUPPORTED_VERSIONS))})"
        )
    tensor_count = cur.u64("the tensor count")
    kv_count = cur.u64("the metadata count")
    if kv_count * 13 > cur.left:  # key length 8, type 4, at least one byte of value
        raise cur.fail(
            f"claims {kv_count:,} metadata entries, more than the {cur.left:,} bytes left can hold; "
            "the file is truncated or damaged"
        )
    if tensor_count * 24 > cur.left:  # name length 8, dimensions 4, type 4, offset 8
        raise cur.fail(
            f"claims {tensor_count:,} tensors, more than the {cur.left:,} bytes left can hold; "
            "the file is truncated or damaged"
        )
    if tensor_count > MAX_TENSORS:
        raise cur.fail(f"claims {tensor_count:,} tensors; at most {MAX_TENSORS:,} are read")
    return version, tensor_count, kv_count


def _tensor_infos(cur: _Cursor, tensor_count: int) -> list[tuple[str, tuple[int, ...], int, int]]:
    """The tensor directory: (name, dimensions, GGML type number, data offset) per tensor."""
    raw_tensors: list[tuple[str, tuple[int, ...], int, int]] = []
    names: set[str] = set()
    for index in range(tensor_count):
        tname = cur.text(f"the name of tensor {index + 1}")
        if tname in names:
            raise cur.fail(f"has two tensors named {tname!r}")
        names.add(tname)
        n_dims = cur.u32(f"the dimension count of {tname}")
        if n_dims > MAX_DIMS:
            raise cur.fail(
                f"tensor {tname!r} has {n_dims:,} dimensions; GGML tensors have at most {MAX_DIMS}"
            )
        dims = tuple(cur.u64(f"a dimension of {tname}") for _ in range(n_dims))
        raw_type = cur.u32(f"the type of {tname}")
        offset = cur.u64(f"the data offset of {tname}")
        raw_tensors.append((tname, dims, raw_type, offset))
    return raw_tensors


def _data_start(cur: _Cursor, metadata: dict[str, Any]) -> int:
    """Where the tensor data starts: the end of the directory rounded up to ``general.alignment``."""
    alignment = metadata.get("general.alignment", DEFAULT_ALIGNMENT)
    if (
        not isinstance(alignment, int)
        or isinstance(alignment, bool)
        or alignment <= 0
        or alignment & (alignment - 1)
    ):
        raise cur.fail(f"general.alignment must be a power of two (got {alignment!r})")
    return -(-cur.pos // alignment) * alignment


def parse_gguf_header(data: bytes | memoryview | mmap.mmap, name: str) -> GgufHeader:
    """Parse the header at the start of ``data`` (the whole file, or a memory map of it)."""
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType  # tables only; imported when needed

    if bytes(data[:4]) != GGUF_MAGIC:
        raise ModelConfigError("model.gguf", f"{name} is not a GGUF file (it does not start with 'GGUF')")
    cur = _Cursor(data, name, "<")
    cur.pos = 4
    version, tensor_count, kv_count = _counts(cur)
    metadata: dict[str, Any] = {}
    for index in range(kv_count):
        key = cur.text(f"metadata key {index + 1}")
        if key in metadata:
            raise cur.fail(f"has the metadata key {key!r} twice")
        value_type = cur.u32(f"the type of {key}")
        metadata[key] = cur.value(value_type, key)
    raw_tensors = _tensor_infos(cur, tensor_count)
    data_start = _data_start(cur, metadata)
    records: list[TensorRecord] = []
    end = 0  # no tensors (a vocabulary-only file): nothing to check against the size
    for tname, dims, raw_type, offset in raw_tensors:
        try:
            ggml_type = GGMLQuantizationType(raw_type)
            block, type_bytes = GGML_QUANT_SIZES[ggml_type]
        except (ValueError, KeyError):
            raise cur.fail(
                f"tensor {tname!r} has GGML type {raw_type}, which this version does not know"
            ) from None
        elements = 1
        for d in dims:
            elements *= d
            if elements > MAX_TENSOR_ELEMENTS:
                raise cur.fail(f"tensor {tname!r} has shape {list(dims)}, more elements than any file holds")
        n_bytes = elements * type_bytes // block
        records.append((tname, ggml_type.name.lower(), dims, elements, n_bytes, data_start + offset))
        end = max(end, data_start + offset + n_bytes)
    return GgufHeader(version, metadata, tuple(records), data_start, end)
