"""Read a GGUF model file's header: architecture, shapes and every tensor's type, never the weights.

A GGUF file (llama.cpp's format, ``docs/gguf.md`` of github.com/ggml-org/ggml) opens with the
magic ``GGUF``, a version, the tensor and key counts, then key/value metadata (``general.architecture``,
``<arch>.block_count``, ``<arch>.embedding_length``, ...) and one record per tensor: name, shape,
GGML type and data offset. The data follows, aligned. The ``gguf`` package (the llama.cpp project's
own reader, on PyPI) parses the header and maps the file without reading the data.

From the tensor records::

    parameters   = sum over tensors of the product of the shape
    weight bytes = sum over tensors of elements / block_elements x block_bytes   (quant_types.py)

A shape key may be an array with one value per layer (llama.cpp reads ``head_count``,
``head_count_kv`` and ``feed_forward_length`` so, ``llama_model_loader::get_key_or_arr``): models
whose layers differ (OpenELM) or whose recurrent layers have no KV heads (hybrids such as Jamba
and LFM2 write 0 there). The model takes the largest value for every layer, an upper bound: for
``head_count_kv`` the KV cache is then ``layers x max / sum over layers`` times the file's own,
and the model's notes say by how much.

Split files (``name-00001-of-00003.gguf``) are read together: all shards must sit in the same
folder. Every problem (missing, truncated or foreign file, a missing shard or metadata key) raises
:class:`~gpuadvisor.core.errors.ModelConfigError` naming the file by its base name.

References
----------
- GGUF specification, github.com/ggml-org/ggml ``docs/gguf.md``.
- ``gguf`` Python package (``gguf-py`` in github.com/ggml-org/llama.cpp): ``GGUFReader``,
  ``GGML_QUANT_SIZES``, ``LlamaFileType``.
"""

from __future__ import annotations

import mmap
import os
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError, ModelConfigError
from ..files import MAX_NAME_CHARS, expand_user, open_untrusted
from ..specs.models import ModelSpec
from .gguf_header import MAX_ARRAY_VALUES, MAX_KEPT_VALUES, GgufArray, parse_gguf_header

GGUF_FIELD = "model.gguf"
_SPLIT = re.compile(r"^(?P<stem>.*)-(?P<index>\d{5})-of-(?P<count>\d{5})\.gguf$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class GgufSummary:
    """What the headers of one GGUF model (all its shards) say."""

    name: str
    architecture: str
    file_type: str  # llama.cpp recipe, lower case ("q4_k_m"), or "" when the file does not say
    metadata: dict[str, Any]
    parameters: int
    weight_bytes: int
    tensors: int
    files: int
    by_type: tuple[tuple[str, int, int], ...]  # (GGML type, parameters, bytes), largest first
    tensor_shapes: dict[str, tuple[int, ...]]


def shard_paths(path: Path) -> list[Path]:
    """The files of a model: ``path`` alone, or every shard of a ``-00001-of-0000N.gguf`` set."""
    match = _SPLIT.match(path.name)
    if not match:
        return [path]
    count = int(match.group("count"))
    stem = match.group("stem")
    files = [path.with_name(f"{stem}-{i:05d}-of-{count:05d}.gguf") for i in range(1, count + 1)]
    missing = [f.name for f in files if not f.is_file()]
    if missing:
        raise ModelConfigError(
            GGUF_FIELD,
            f"{path.name} is shard {int(match.group('index'))} of {count}; "
            f"missing {', '.join(missing)} (all shards must be in the same folder)",
        )
    return files


def read_gguf(path: str | os.PathLike[str]) -> GgufSummary:
    """Summarize a ``.gguf`` file (or split set) from its headers."""
    target = expand_user(path, GGUF_FIELD, ModelConfigError)
    if not target.is_file():
        raise ModelConfigError(GGUF_FIELD, f"no such file: '{target.name}'")
    metadata: dict[str, Any] = {}
    by_type: dict[str, list[int]] = {}
    shapes: dict[str, tuple[int, ...]] = {}
    parameters = weight_bytes = tensors = 0
    files = shard_paths(target)
    for file in files:
        fields, records = _read_one(file)
        for key, value in fields.items():
            metadata.setdefault(key, value)
        for name, type_name, shape, elements, size in records:
            parameters += elements
            weight_bytes += size
            tensors += 1
            entry = by_type.setdefault(type_name, [0, 0])
            entry[0] += elements
            entry[1] += size
            shapes[name] = shape
    arch = metadata.get("general.architecture")
    if not isinstance(arch, str) or not arch:
        raise ModelConfigError(
            GGUF_FIELD, f"{target.name} has no general.architecture; it is not a model file"
        )
    return GgufSummary(
        name=str(metadata.get("general.name") or _SPLIT.sub(r"\g<stem>", target.name).removesuffix(".gguf"))[
            :MAX_NAME_CHARS
        ],
        architecture=arch,
        file_type=_file_type(metadata.get("general.file_type")),
        metadata=metadata,
        parameters=parameters,
        weight_bytes=weight_bytes,
        tensors=tensors,
        files=len(files),
        by_type=tuple(sorted(((t, p, b) for t, (p, b) in by_type.items()), key=lambda e: -e[2])),
        tensor_shapes=shapes,
    )


def _read_one(file: Path) -> tuple[dict[str, Any], list[tuple[str, str, tuple[int, ...], int, int]]]:
    """(metadata, [(tensor, GGML type, shape, elements, bytes)]) of one file, checked against its size.

    The header is parsed by :func:`~gpuadvisor.core.formats.gguf_header.parse_gguf_header`, which
    checks every count and length against the bytes left before using it (metadata arrays become
    their length); the file is memory-mapped, never read whole.
    """
    name = file.name
    with open_untrusted(file, GGUF_FIELD, ModelConfigError) as f:
        if f.read(4) != b"GGUF":
            raise ModelConfigError(GGUF_FIELD, f"{name} is not a GGUF file (it does not start with 'GGUF')")
        size = f.size
        try:
            view = mmap.mmap(f.file.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as exc:
            raise ModelConfigError(GGUF_FIELD, f"cannot read {name}: {exc}") from None
        with view:
            try:
                header = parse_gguf_header(view, name)
            except ModelConfigError:
                raise
            except (ValueError, OverflowError, MemoryError, struct.error) as exc:
                raise ModelConfigError(
                    GGUF_FIELD,
                    f"{name} is truncated or damaged; its header cannot be read ({type(exc).__name__})",
                ) from None
    fields = {key: value for key, value in header.metadata.items() if not key.startswith("GGUF.")}
    records = [(t[0], t[1], t[2], t[3], t[4]) for t in header.tensors]
    if header.data_end > size:
        raise ModelConfigError(
            GGUF_FIELD,
            f"{name} is truncated: its tensors end at byte {header.data_end:,} but the file has {size:,} bytes",
        )
    return fields, records


def _file_type(value: Any) -> str:
    if not isinstance(value, int):
        return ""
    from gguf import LlamaFileType

    try:
        name = LlamaFileType(value).name.lower()
    except ValueError:
        return ""
    name = name.removeprefix("mostly_").removeprefix("all_")
    return {"mxfp4_moe": "mxfp4"}.get(name, name)


def model_from_gguf(path: str | os.PathLike[str]) -> ModelSpec:
    """A :class:`ModelSpec` from a GGUF file's metadata, with the exact parameter count and weight bytes."""
    s = read_gguf(path)
    md, arch = s.metadata, s.architecture
    per_layer: list[str] = []  # notes on keys whose value differs between layers

    def key(name: str, default: Any = None, required: bool = True) -> Any:
        value = md.get(f"{arch}.{name}")
        minimum = 1 if required and default is None else 0
        if isinstance(value, GgufArray):  # one value per layer: the largest (see the module docstring)
            value = _per_layer(path, f"{arch}.{name}", value, minimum, per_layer)
        if value is None:
            if required and default is None:
                raise ModelConfigError(GGUF_FIELD, f"{Path(path).name} has no {arch}.{name} in its metadata")
            return default
        return _whole(path, f"{arch}.{name}", value, minimum=minimum)

    hidden = key("embedding_length")
    heads = key("attention.head_count")
    tokens = md.get("tokenizer.ggml.tokens")
    vocab = (
        md.get(f"{arch}.vocab_size")
        or (tokens.length if isinstance(tokens, GgufArray) else tokens)
        or _vocab_from(s, hidden)
    )
    vocab = _whole(path, "vocabulary size", vocab, minimum=1)
    experts = key("expert_count", 1, required=False) or 1
    kwargs: dict[str, Any] = dict(
        name=s.name,
        num_layers=key("block_count"),
        hidden_size=hidden,
        num_attention_heads=heads,
        num_key_value_heads=key("attention.head_count_kv", heads, required=False) or heads,
        head_dim=key("attention.key_length", None, required=False),
        intermediate_size=key("feed_forward_length", None, required=False)
        or key("expert_feed_forward_length", 4 * hidden, required=False),
        vocab_size=int(vocab),
        max_context=key("context_length", 4096, required=False),
        tied_embeddings="output.weight" not in s.tensor_shapes,
        num_experts=experts,
        experts_per_token=key("expert_used_count", 1, required=False) or 1,
        family=arch,
        published_params=s.parameters,
        source=f"GGUF file {Path(path).name} ({s.files} file{'s' if s.files > 1 else ''}, {s.tensors} tensors)",
        notes=" ".join(
            [
                f"Counted from the GGUF tensor records: {s.parameters:,} parameters in {s.weight_bytes:,} "
                f"bytes ({', '.join(f'{t} {b / 2**30:.2f} GiB' for t, _, b in s.by_type[:4])}).",
                *per_layer,
            ]
        ),
        file_weight_bytes=s.weight_bytes,
        file_type=s.file_type,
    )
    if experts > 1:
        kwargs["moe_intermediate_size"] = key("expert_feed_forward_length", None, required=False)
    window = key("attention.sliding_window", None, required=False)
    if window and window < kwargs["max_context"]:
        kwargs["sliding_window"] = window
    if kwargs["head_dim"] is None and hidden % heads:
        kwargs["head_dim"] = hidden // heads
    if kwargs["num_attention_heads"] % kwargs["num_key_value_heads"]:
        kwargs["num_key_value_heads"] = heads
    try:
        return ModelSpec(**kwargs)
    except InputError as exc:
        raise ModelConfigError(
            GGUF_FIELD, f"{Path(path).name} describes an architecture gpuadvisor cannot use: {exc}"
        ) from None


def _per_layer(
    path: str | os.PathLike[str], key: str, array: GgufArray, minimum: int, notes: list[str]
) -> int | None:
    """The largest of a per-layer array's whole numbers (None for an empty array); a note in
    ``notes`` when the layers differ. An array of anything else, or too long to keep, is refused."""
    name = Path(path).name
    if array.values is None:
        what = (
            f"{array.length:,} numbers, more than are kept (at most {MAX_ARRAY_VALUES:,} in one array, "
            f"{MAX_KEPT_VALUES:,} in all)"
            if array.numbers
            else f"{array.length:,} elements that are not numbers one per layer"
        )
        raise ModelConfigError(GGUF_FIELD, f"{name}: {key} is an array of {what}; gpuadvisor cannot read it")
    if not array.values:
        return None
    values = [_whole(path, f"{key}[{i}]", v, minimum=0) for i, v in enumerate(array.values)]
    top, low = max(values), min(values)
    if top < minimum:
        raise ModelConfigError(GGUF_FIELD, f"{name}: {key} must be at least {minimum} in some layer", top)
    if low != top:
        note = (
            f"{key} differs between layers ({low} to {top}, {len(values)} values): the largest is used "
            "for every layer"
        )
        if key.endswith("head_count_kv"):
            with_kv = sum(1 for v in values if v)
            ratio = len(values) * top / sum(values)
            note += (
                f", so the KV cache is an upper bound, {ratio:.2g}x the file's per-layer sum "
                f"({with_kv} of {len(values)} layers hold a KV cache)"
            )
        notes.append(note + ".")
    return top


def _whole(path: str | os.PathLike[str], key: str, value: Any, minimum: int) -> int:
    """A metadata value that must be a whole number of at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ModelConfigError(
            GGUF_FIELD,
            f"{Path(path).name}: {key} must be a whole number",
            value if not isinstance(value, str) else value[:40],
        )
    if value < minimum:
        raise ModelConfigError(GGUF_FIELD, f"{Path(path).name}: {key} must be at least {minimum}", value)
    return value


def _vocab_from(s: GgufSummary, hidden: int) -> int:
    shape = s.tensor_shapes.get("token_embd.weight")
    if shape and len(shape) == 2:
        return shape[1] if shape[0] == hidden else shape[0]
    raise ModelConfigError(
        GGUF_FIELD, f"{s.name}: no vocabulary size (tokenizer.ggml.tokens or token_embd.weight)"
    )
