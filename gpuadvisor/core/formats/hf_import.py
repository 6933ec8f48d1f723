"""Import a model architecture from a Hugging Face ``config.json`` and safetensors headers.

:func:`model_from_hf_config` turns the ``config.json`` of a Hugging Face checkpoint (or a model
folder holding one) into a :class:`~gpuadvisor.core.specs.models.ModelSpec`. Each supported
``model_type`` has its own mapping, because the families name their sizes differently
(``n_embd``/``hidden_size``/``d_model``) and differ in the parts the parameter formula needs:
gated or plain MLP, biases, norms per block, tied head, learned or rotary positions.

When the folder also holds ``*.safetensors`` files, their headers are read (never the tensor data)
and the exact stored parameter count goes to ``published_params``, so the user can compare it
with the count the architecture gives.

Only the standard library is used. Nothing is read at import time. Every problem with the input
(missing file, malformed JSON, a missing or mistyped key, a corrupt safetensors header) raises
:class:`~gpuadvisor.core.errors.ModelConfigError` with a message that names the file and the key;
no other exception type escapes for bad input. Messages and returned values name files by their
base name only, never by an absolute path.

Safetensors layout (https://github.com/huggingface/safetensors): 8 bytes little-endian unsigned
length ``N``, then ``N`` bytes of UTF-8 JSON mapping each tensor name to ``dtype``, ``shape`` and
``data_offsets`` (relative to the end of the header), plus an optional ``__metadata__`` entry,
then the tensor data.
"""

from __future__ import annotations

import math
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard, cast

from ..errors import InputError, ModelConfigError
from ..files import FileKind, open_untrusted, parse_json, read_text
from ..specs.models import ModelSpec

__all__ = [
    "SafetensorsSummary",
    "SUPPORTED_MODEL_TYPES",
    "model_from_hf_config",
    "read_safetensors_header",
    "summarize_safetensors",
]

CONFIG_FIELD = "model.hf_config"
SAFETENSORS_FIELD = "model.safetensors"

#: Largest safetensors header accepted (the format's own reference reader uses the same bound).
MAX_HEADER_BYTES = 100_000_000

#: Bits per element of the safetensors dtypes.
_DTYPE_BITS: dict[str, int] = {
    "BOOL": 8,
    "U8": 8,
    "I8": 8,
    "F8_E5M2": 8,
    "F8_E4M3": 8,
    "F8_E8M0": 8,
    "E8M0": 8,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "I64": 64,
    "U64": 64,
    "F64": 64,
    "C64": 64,
    "F4": 4,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
}
#: Integer storage: either real buffers (position ids) or packed low-bit weights (GPTQ, AWQ, bitsandbytes).
_INTEGER_DTYPES = frozenset({"BOOL", "U8", "I8", "I16", "U16", "I32", "U32", "I64", "U64"})

_REQUIRED = object()


# ----------------------------------------------------------------------------------------------
# safetensors
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SafetensorsSummary:
    """What the headers of one or more safetensors files say about the stored tensors.

    ``parameters`` is the number of stored elements (product of each tensor's shape), summed over
    the files, and ``dtypes`` splits it by stored dtype. Non-parameter buffers that some
    checkpoints store (GPT-2's causal-mask ``attn.bias``, ``rotary_emb.inv_freq``,
    ``position_ids``) are left out of both and counted in ``buffers``. For quantized checkpoints
    with packed integer weights (GPTQ/AWQ ``I32``, bitsandbytes 4-bit ``U8``) the count is what is
    stored, not the number of model parameters. ``bytes_on_disk`` sums the tensor data sizes given
    by the headers (buffers included).
    """

    parameters: int
    dtypes: dict[str, int]
    files: int
    bytes_on_disk: int
    buffers: int = 0
    tensors: int = 0
    tensor_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict, repr=False, compare=False)


def read_safetensors_header(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The JSON header of a safetensors file, read without touching the tensor data."""
    header, _data_bytes = _read_header(Path(_fspath(path, SAFETENSORS_FIELD)))
    return header


def summarize_safetensors(path: str | os.PathLike[str]) -> SafetensorsSummary:
    """Element counts by dtype of a ``.safetensors`` file, or of all shards in a folder.

    In a folder, ``model.safetensors.index.json`` (or another ``*.safetensors.index.json``)
    names the shards through its ``weight_map``; without an index every ``*.safetensors`` file
    of the folder is read.
    """
    target = Path(_fspath(path, SAFETENSORS_FIELD))
    if target.is_dir():
        files = _shard_files(target)
    elif target.is_file():
        files = [target]
    else:
        raise ModelConfigError(SAFETENSORS_FIELD, f"no such file or folder: '{target.name}'")
    dtypes: dict[str, int] = {}
    shapes: dict[str, tuple[int, ...]] = {}
    parameters = buffers = data_bytes = tensors = 0
    for file in files:
        header, available = _read_header(file)
        for name, entry in header.items():
            if name == "__metadata__":
                continue
            dtype, shape, size = _tensor_entry(file.name, name, entry, available)
            count = math.prod(shape)
            data_bytes += size
            tensors += 1
            if _is_buffer(name, shape):
                buffers += count
                continue
            parameters += count
            dtypes[dtype] = dtypes.get(dtype, 0) + count
            shapes[name] = shape
    return SafetensorsSummary(
        parameters=parameters,
        dtypes=dict(sorted(dtypes.items())),
        files=len(files),
        bytes_on_disk=data_bytes,
        buffers=buffers,
        tensors=tensors,
        tensor_shapes=shapes,
    )


def _read_header(path: Path) -> tuple[dict[str, Any], int]:
    """(header, bytes of tensor data that follow it)."""
    name = path.name
    with open_untrusted(path, SAFETENSORS_FIELD, ModelConfigError) as stream:
        size = stream.size
        try:
            prefix = stream.read(8)
            if len(prefix) < 8:
                raise ModelConfigError(
                    SAFETENSORS_FIELD,
                    f"{name} is too short to be a safetensors file "
                    f"({size} bytes; the header length alone takes 8)",
                )
            (length,) = struct.unpack("<Q", prefix)
            if length == 0:
                raise ModelConfigError(
                    SAFETENSORS_FIELD, f"{name} declares an empty header; it is not a valid safetensors file"
                )
            if length > MAX_HEADER_BYTES:
                raise ModelConfigError(
                    SAFETENSORS_FIELD,
                    f"{name} declares a {length:,}-byte header, "
                    f"more than the {MAX_HEADER_BYTES:,}-byte limit; the file is "
                    "corrupt or not a safetensors file",
                )
            if 8 + length > size:
                raise ModelConfigError(
                    SAFETENSORS_FIELD,
                    f"{name} declares a {length:,}-byte header but "
                    f"only {size - 8:,} bytes follow the length field; the file is "
                    "truncated or not a safetensors file",
                )
            raw = stream.read(length)
        except OSError as exc:
            raise ModelConfigError(SAFETENSORS_FIELD, f"cannot read {name}: {exc.strerror or exc}") from None
    if len(raw) < length:
        raise ModelConfigError(
            SAFETENSORS_FIELD, f"{name} ended inside its {length:,}-byte header; the file is truncated"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ModelConfigError(
            SAFETENSORS_FIELD,
            f"the header of {name} is not UTF-8 text; the file is corrupt or not a safetensors file",
        ) from None
    header = parse_json(text, f"the header of {name}", SAFETENSORS_FIELD, ModelConfigError)
    if not isinstance(header, dict):
        raise ModelConfigError(
            SAFETENSORS_FIELD, f"the header of {name} must be a JSON object, not {_json_kind(header)}"
        )
    return header, size - 8 - length


def _tensor_entry(file: str, name: str, entry: object, available: int) -> tuple[str, tuple[int, ...], int]:
    """Validated (dtype, shape, data size in bytes) of one header entry."""
    where = f"{file}: tensor '{name}'"
    if not isinstance(entry, dict):
        raise ModelConfigError(SAFETENSORS_FIELD, f"{where} must be a JSON object, not {_json_kind(entry)}")
    dtype = entry.get("dtype")
    if not isinstance(dtype, str) or not dtype:
        raise ModelConfigError(SAFETENSORS_FIELD, f"{where} has no dtype", dtype)
    shape = entry.get("shape")
    if not isinstance(shape, list) or not all(_is_int(d) and d >= 0 for d in shape):
        raise ModelConfigError(SAFETENSORS_FIELD, f"{where} needs a shape made of whole numbers >= 0", shape)
    offsets = entry.get("data_offsets")
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(_is_int(o) for o in offsets)
        or not 0 <= offsets[0] <= offsets[1]
    ):
        raise ModelConfigError(
            SAFETENSORS_FIELD, f"{where} needs data_offsets [begin, end] with 0 <= begin <= end", offsets
        )
    begin, end = offsets
    if end > available:
        raise ModelConfigError(
            SAFETENSORS_FIELD,
            f"{where} ends at byte {end:,} of the data but the file "
            f"holds only {available:,} data bytes; the file is truncated",
        )
    bits = _DTYPE_BITS.get(dtype)
    count = math.prod(shape)
    if bits is not None and bits % 8 == 0:  # sub-byte dtypes: packing not checked
        expected = count * bits // 8
        if expected != end - begin:
            raise ModelConfigError(
                SAFETENSORS_FIELD,
                f"{where} has shape {shape} of {dtype} "
                f"({expected:,} bytes) but data_offsets span {end - begin:,} bytes",
            )
    return dtype, tuple(shape), end - begin


def _is_buffer(name: str, shape: tuple[int, ...]) -> bool:
    """Stored tensors that are not parameters: causal masks, rotary frequencies, position ids."""
    leaf = name.rsplit(".", 1)[-1]
    if leaf in ("inv_freq", "position_ids", "masked_bias", "token_type_ids"):
        return True
    # GPT-2 style causal mask buffer "h.0.attn.bias" of shape [1, 1, n, n]; real biases are 1-D.
    return leaf == "bias" and len(shape) >= 3


def _shard_files(folder: Path) -> list[Path]:
    try:
        indexes = sorted(p for p in folder.glob("*.safetensors.index.json") if p.is_file())
        if not indexes:
            files = sorted(p for p in folder.glob("*.safetensors") if p.is_file())
            if not files:
                raise ModelConfigError(
                    SAFETENSORS_FIELD, f"folder '{folder.name}' holds no .safetensors files"
                )
            return files
    except OSError as exc:
        raise ModelConfigError(
            SAFETENSORS_FIELD, f"cannot list folder '{folder.name}': {exc.strerror or exc}"
        ) from None
    preferred = [p for p in indexes if p.name == "model.safetensors.index.json"]
    names: set[str] = set()
    for index in preferred or indexes:
        names.update(_index_shards(index))
    files = []
    for shard in sorted(names):
        path = folder / shard
        if not path.is_file():
            raise ModelConfigError(
                SAFETENSORS_FIELD,
                f"the index lists shard '{shard}' but folder "
                f"'{folder.name}' has no such file (incomplete download?)",
            )
        files.append(path)
    if not files:
        raise ModelConfigError(SAFETENSORS_FIELD, f"the safetensors index in '{folder.name}' lists no shards")
    return files


def _index_shards(index: Path) -> set[str]:
    data = _load_json_object(index, SAFETENSORS_FIELD)
    weight_map = data.get("weight_map")
    if not isinstance(weight_map, dict):
        raise ModelConfigError(SAFETENSORS_FIELD, f"{index.name} has no weight_map object")
    shards: set[str] = set()
    for tensor, shard in weight_map.items():
        if not isinstance(shard, str) or not shard:
            raise ModelConfigError(
                SAFETENSORS_FIELD, f"{index.name}: weight_map entry '{tensor}' must name a shard file", shard
            )
        parts = Path(shard).parts
        if Path(shard).is_absolute() or ".." in parts or len(parts) != 1:
            raise ModelConfigError(
                SAFETENSORS_FIELD,
                f"{index.name}: shard '{shard}' must be a file name inside the model folder",
            )
        shards.add(shard)
    return shards


# ----------------------------------------------------------------------------------------------
# config.json
# ----------------------------------------------------------------------------------------------
class _Reader:
    """Typed access to a config dict; collects the names of missing required keys."""

    def __init__(self, data: dict[str, Any], where: str) -> None:
        self.data = data
        self.where = where
        self.missing: list[str] = []
        self.defaulted: list[str] = []

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def integer(self, *keys: str, default: Any = _REQUIRED, minimum: int = 1) -> int:
        for key in keys:
            value = self.data.get(key)
            if value is not None:
                return self._int(key, value, minimum)
        if default is _REQUIRED:
            if keys[0] not in self.missing:
                self.missing.append(keys[0])
            return 1  # placeholder; the caller raises once every key has been looked at
        return cast(int, default)

    def opt_int(self, *keys: str, minimum: int = 1) -> int | None:
        for key in keys:
            value = self.data.get(key)
            if value is not None:
                return self._int(key, value, minimum)
        return None

    def number(self, key: str, default: float) -> float:
        value = self.data.get(key)
        if value is None:
            return default
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
            or value <= 0
        ):
            raise self.error(f"key '{key}' must be a number > 0", value)
        return float(value)

    def flag(self, key: str, default: bool) -> bool:
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.error(f"key '{key}' must be true or false", value)
        return value

    def obj(self, key: str) -> dict[str, Any]:
        value = self.data.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.error(f"key '{key}' must be a JSON object", value)
        return value

    def text(self, key: str, default: str) -> str:
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.error(f"key '{key}' must be a string", value)
        return value

    def default(self, key: str, value: int) -> int:
        """A required size this config may omit (nested configs drop class defaults)."""
        found = self.opt_int(key)
        if found is not None:
            return found
        self.defaulted.append(f"{key}={value}")
        return value

    def error(self, message: str, value: object = None) -> ModelConfigError:
        return ModelConfigError(CONFIG_FIELD, f"{self.where}: {message}", value)

    def _int(self, key: str, value: object, minimum: int) -> int:
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        if not _is_int(value):
            raise self.error(f"key '{key}' must be a whole number", value)
        assert isinstance(value, int)
        if value < minimum:
            raise self.error(f"key '{key}' must be >= {minimum}", value)
        return value


@dataclass
class _Arch:
    """ModelSpec keyword arguments being assembled, plus notes for the user."""

    kwargs: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def model_from_hf_config(path: str | os.PathLike[str]) -> ModelSpec:
    """A :class:`ModelSpec` from a Hugging Face ``config.json`` or a model folder.

    ``path`` is a ``config.json`` file or a folder holding one. For a folder that also holds
    ``*.safetensors`` files, ``published_params`` is set from their headers (the exact stored
    count) and the stored dtypes are summarized in ``notes``.
    """
    target = Path(_fspath(path, CONFIG_FIELD))
    folder: Path | None = None
    if target.is_dir():
        folder = target
        config_path = target / "config.json"
        if not config_path.is_file():
            raise ModelConfigError(CONFIG_FIELD, f"folder '{target.name}' has no config.json")
    elif target.is_file():
        config_path = target
    else:
        raise ModelConfigError(CONFIG_FIELD, f"no such file or folder: '{target.name}'")
    data = _load_json_object(config_path, CONFIG_FIELD)

    top = _Reader(data, config_path.name)
    model_type = top.text("model_type", "")
    arch = _build(data, config_path.name, model_type)

    name = _display_name(data, folder if folder is not None else config_path.parent)
    kwargs = arch.kwargs
    notes = arch.notes
    quant = top.obj("quantization_config")
    quant_method, quant_bits = _quantization(quant)
    if quant:
        desc = quant_method or "unknown method"
        notes.append(
            f"Quantized checkpoint ({desc}{f', {quant_bits}-bit' if quant_bits else ''}); "
            "the parameter count is the unquantized architecture's."
        )

    published: int | None = None
    if folder is not None and _has_safetensors(folder):
        try:
            summary = summarize_safetensors(folder)
        except ModelConfigError as exc:
            raise ModelConfigError(
                exc.field, f"{exc.reason} (import config.json alone to skip the weights)", exc.value
            ) from None
        published, note = _published_from_headers(summary, kwargs, bool(quant), quant_method, quant_bits)
        notes.append(note)

    kwargs.update(
        name=name,
        family=model_type or "unknown",
        source=f"Hugging Face config.json ({model_type or 'no model_type'})",
        published_params=published,
        notes=" ".join(notes),
    )
    try:
        return ModelSpec(**kwargs)
    except InputError as exc:
        raise ModelConfigError(
            CONFIG_FIELD, f"{config_path.name} describes an architecture gpuadvisor cannot use: {exc}"
        ) from None


#: model_type values with a dedicated mapping (lower case).
SUPPORTED_MODEL_TYPES = (
    "llama",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen2_moe",
    "qwen3",
    "qwen3_moe",
    "gemma",
    "gemma2",
    "gemma3_text",
    "phi3",
    "phi",
    "gpt2",
    "gptj",
    "gpt_neox",
    "falcon",
    "refinedwebmodel",
    "refinedweb",
    "bert",
    "roberta",
    "xlm-roberta",
    "gpt_bigcode",
    "mpt",
    "starcoder2",
    "deepseek_v2",
    "deepseek_v3",
    "kimi_k2",
    "gpt_oss",
    "llama4_text",
)


def _build(data: dict[str, Any], where: str, model_type: str) -> _Arch:
    kind = model_type.lower()
    notes: list[str] = []
    # Multimodal wrappers (gemma3, llava, mistral3, ...) nest the language model under text_config.
    text_config = data.get("text_config")
    nested = isinstance(text_config, dict) and "num_hidden_layers" not in data
    vision: dict[str, Any] = {}
    unwrapped = kind not in SUPPORTED_MODEL_TYPES and nested
    if unwrapped:
        assert isinstance(text_config, dict)
        inner = text_config.get("model_type")
        if isinstance(inner, str) and inner:
            inner_type = inner
        else:
            inner_type = {"gemma3": "gemma3_text", "llama4": "llama4_text"}.get(kind, "")
        vision = _Reader(data, where).obj("vision_config")
        notes.append(f"Read the language model from text_config ({inner_type or 'no model_type'}).")
        data, where, kind = text_config, f"{where} text_config", inner_type.lower()
    r = _Reader(data, where)
    label = f"model_type '{model_type}'" if model_type else "no model_type"
    builder = _BUILDERS.get(kind)
    if builder is None:
        arch = _generic(r)
        if r.missing:
            what = f"unsupported model_type '{model_type}'" if model_type else "no model_type given"
            raise ModelConfigError(
                CONFIG_FIELD,
                f"{where}: {what}; missing {', '.join(r.missing)} — enter the architecture by hand",
            )
        arch.notes.insert(
            0,
            f"{label} has no dedicated mapping; read as a Llama-style decoder "
            "(gated MLP, RMSNorm, RoPE); check the result.",
        )
    else:
        arch = builder(r)
        if r.missing:
            raise ModelConfigError(CONFIG_FIELD, f"{where} ({label}) is missing {', '.join(r.missing)}")
    if r.defaulted:
        arch.notes.append(f"Not in the config, assumed the {kind} defaults: {', '.join(r.defaulted)}.")
    if unwrapped:
        notes.append(
            _count_vision(vision, arch.kwargs, f"{where.removesuffix(' text_config')} vision_config")
        )
    arch.notes[:0] = notes
    return arch


# --- vision encoders of multimodal checkpoints ------------------------------------------------------
def _count_vision(vision: dict[str, Any], kw: dict[str, Any], where: str) -> str:
    """Add the vision encoder and projector a multimodal checkpoint stores to ``extra_params``
    (they sit in memory next to the language model) and say what was counted.

    Known encoders: SigLIP (``siglip_vision_model``, Gemma 3) and Llama 4's
    (``llama4_vision_model``); any other, or a vision_config without its shapes, is named and left
    out, so the count is then the language model's alone."""
    r = _Reader(vision, where)
    vtype = r.text("model_type", "")
    keys = ("hidden_size", "intermediate_size", "num_hidden_layers", "patch_size", "image_size")
    if (
        not vision
        or vtype not in ("siglip_vision_model", "llama4_vision_model")
        or not all(r.has(k) for k in keys)
    ):
        what = f"'{vtype}'" if vtype else "vision/audio"
        return (
            f"The {what} encoder is not counted (no mapping for it, or its vision_config lacks the "
            "shapes): the count is the language model's only, below the checkpoint's total."
        )
    h, i, n = r.integer("hidden_size"), r.integer("intermediate_size"), r.integer("num_hidden_layers")
    patch, image = r.integer("patch_size"), r.integer("image_size")
    channels = r.integer("num_channels", default=3)
    text_h = kw["hidden_size"]
    # Pre-norm ViT block: q/k/v/o and the two MLP matrices with biases, two LayerNorms.
    layer = 4 * (h * h + h) + (h * i + i) + (i * h + h) + 2 * 2 * h
    patches = (image // patch) ** 2
    if vtype == "siglip_vision_model":
        # Conv2d patch embedding with bias, learned positions, final LayerNorm (no pooling head in
        # Gemma 3); projector: mm_input_projection (h x text hidden) and mm_soft_emb_norm (h).
        encoder = channels * patch * patch * h + h + patches * h + n * layer + 2 * h
        projector = h * text_h + h
    else:
        # Llama 4: class token, positions for the patches and the class token, bias-free patch
        # projection, LayerNorms before and after; the pixel-shuffle adapter (fc1: intermediate ->
        # projector_input_dim, fc2: projector_output_dim squared) and the projector to the text width.
        p_in = r.integer("projector_input_dim", default=i)
        p_out = r.integer("projector_output_dim", default=p_in)
        encoder = h + (patches + 1) * h + channels * patch * patch * h + 2 * 2 * h + n * layer
        encoder += i * p_in + p_out * p_out
        projector = r.integer("vision_output_dim", default=p_out) * text_h
    kw["extra_params"] = kw.get("extra_params", 0) + encoder + projector
    return (
        f"The checkpoint's vision encoder ({vtype}, {n} layers: {encoder:,} parameters) and multimodal "
        f"projector ({projector:,}) are counted in extra_params: they are loaded with the weights. "
        "A text-only run reads them once at load and never per token, so speeds treat them as weights "
        "(a small overestimate of the bytes read per token)."
    )


# --- family mappings ----------------------------------------------------------------------------
def _decoder(r: _Reader, *, tied: bool, max_default: int = 4096) -> dict[str, Any]:
    """Shapes common to Llama-style configs (num_hidden_layers, hidden_size, ...)."""
    layers = r.integer("num_hidden_layers")
    hidden = r.integer("hidden_size")
    heads = r.integer("num_attention_heads")
    return dict(
        num_layers=layers,
        hidden_size=hidden,
        num_attention_heads=heads,
        num_key_value_heads=r.integer("num_key_value_heads", default=heads),
        head_dim=r.opt_int("head_dim"),
        intermediate_size=r.integer("intermediate_size"),
        vocab_size=r.integer("vocab_size"),
        tied_embeddings=r.flag("tie_word_embeddings", tied),
        max_context=r.integer("max_position_embeddings", default=max_default),
        gated_mlp=True,
        norm="rmsnorm",
        position_embedding="rope",
    )


def _sliding(r: _Reader, kw: dict[str, Any], *, enabled_default: bool = True, fraction: float = 1.0) -> None:
    """Set sliding_window (and the share of layers using it) when the config enables one."""
    window = r.opt_int("sliding_window", minimum=0)
    if not window or not r.flag("use_sliding_window", enabled_default):
        return
    layers = kw["num_layers"]
    layer_types = r.data.get("layer_types")
    if isinstance(layer_types, list) and layer_types and all(isinstance(t, str) for t in layer_types):
        fraction = sum(t == "sliding_attention" for t in layer_types) / len(layer_types)
    elif r.has("max_window_layers") and r.flag("use_sliding_window", False):
        # Qwen2/Qwen3: layers from max_window_layers on use the window.
        fraction = max(0, layers - r.integer("max_window_layers", minimum=0)) / layers
    if fraction <= 0 or window >= kw["max_context"]:
        return
    kw["sliding_window"] = window
    kw["sliding_window_layer_fraction"] = min(1.0, fraction)


def _experts(r: _Reader, kw: dict[str, Any], *keys: str) -> None:
    experts = r.opt_int(*keys, minimum=0) or 1
    if experts > 1:
        kw["num_experts"] = experts
        kw["experts_per_token"] = r.integer("num_experts_per_tok", default=min(2, experts))


def _llama(r: _Reader) -> _Arch:
    kw = _decoder(r, tied=False)
    bias = r.flag("attention_bias", False)
    kw.update(attention_bias=bias, attention_out_bias=bias, mlp_bias=r.flag("mlp_bias", False))
    _sliding(r, kw)
    _experts(r, kw, "num_local_experts", "num_experts", "n_routed_experts")
    return _Arch(kw)


def _qwen2(r: _Reader) -> _Arch:
    kw = _decoder(r, tied=False)
    kw.update(attention_bias=True)  # Qwen2 q/k/v projections carry biases; o_proj does not
    _sliding(r, kw, enabled_default=False)
    return _Arch(kw)


def _qwen2_moe(r: _Reader) -> _Arch:
    arch = _qwen2(r)
    kw = arch.kwargs
    _experts(r, kw, "num_experts")
    if kw.get("num_experts", 1) > 1:
        kw["moe_intermediate_size"] = r.opt_int("moe_intermediate_size")
        shared = r.opt_int("shared_expert_intermediate_size", minimum=0) or 0
        if shared:
            h = kw["hidden_size"]
            # Shared expert (gated MLP) and its sigmoid gate (h -> 1) run for every token.
            kw["extra_params"] = kw["num_layers"] * (3 * h * shared + h)
            arch.notes.append(
                f"extra_params = the always-active shared expert (width {shared}) and its "
                "gate in every layer."
            )
        arch.notes.extend(_mixed_moe_note(r, kw))
    return arch


def _mixed_moe_note(r: _Reader, kw: dict[str, Any]) -> list[str]:
    only = r.data.get("mlp_only_layers")
    step = r.opt_int("decoder_sparse_step") or 1
    first_dense = r.opt_int("first_k_dense_replace", minimum=0) or 0
    if (isinstance(only, list) and only) or step > 1 or first_dense:
        return [
            "Some layers use a dense MLP instead of experts (mlp_only_layers, decoder_sparse_step or "
            "first_k_dense_replace); they are counted as MoE layers, so the totals are approximate."
        ]
    return []


def _qwen3(r: _Reader) -> _Arch:
    kw = _decoder(r, tied=False)
    bias = r.flag("attention_bias", False)
    kw.update(attention_bias=bias, attention_out_bias=bias)
    _sliding(r, kw, enabled_default=False)
    _experts(r, kw, "num_experts")
    notes = []
    if kw.get("num_experts", 1) > 1:
        kw["moe_intermediate_size"] = r.opt_int("moe_intermediate_size")
        notes.extend(_mixed_moe_note(r, kw))
    head_dim = kw["head_dim"] or kw["hidden_size"] // kw["num_attention_heads"]
    kw["extra_params"] = kw["num_layers"] * 2 * head_dim
    notes.append("extra_params = per-layer q_norm and k_norm weights (2 x head_dim).")
    return _Arch(kw, notes)


def _gemma(r: _Reader) -> _Arch:
    kw = _decoder(r, tied=True, max_default=8192)
    bias = r.flag("attention_bias", False)
    kw.update(attention_bias=bias, attention_out_bias=bias)
    return _Arch(kw)


def _gemma2(r: _Reader) -> _Arch:
    arch = _gemma(r)
    kw = arch.kwargs
    kw["norms_per_layer"] = 4  # pre- and post-norms around attention and MLP
    _sliding(r, kw, fraction=0.5)  # alternating local and global layers
    return arch


def _gemma3_text(r: _Reader) -> _Arch:
    # Nested text_config blocks omit the Gemma3TextConfig defaults, so fill those in.
    for key, value in (
        ("num_attention_heads", 8),
        ("num_key_value_heads", 4),
        ("head_dim", 256),
        ("vocab_size", 262_208),
        ("max_position_embeddings", 131_072),
    ):
        if not r.has(key):
            r.data = {**r.data, key: r.default(key, value)}
    arch = _gemma(r)
    kw = arch.kwargs
    kw["norms_per_layer"] = 4
    pattern = r.opt_int("sliding_window_pattern", "_sliding_window_pattern") or 6
    _sliding(r, kw, fraction=(pattern - 1) / pattern)  # pattern-1 local layers, then one global
    head_dim = kw["head_dim"] or kw["hidden_size"] // kw["num_attention_heads"]
    kw["extra_params"] = kw["num_layers"] * 2 * head_dim
    arch.notes.append("extra_params = per-layer q_norm and k_norm weights (2 x head_dim).")
    return arch


def _phi3(r: _Reader) -> _Arch:
    kw = _decoder(r, tied=False)
    bias = r.flag("attention_bias", False)
    kw.update(attention_bias=bias, attention_out_bias=bias)
    notes = []
    window = r.opt_int("sliding_window", minimum=0)
    if window and window < kw["max_context"]:
        notes.append(
            f"config.json sets sliding_window {window}; not applied, so the KV cache is sized for "
            "the full context (engines often ignore Phi-3's window; conservative)."
        )
    return _Arch(kw, notes)


def _phi(r: _Reader) -> _Arch:
    kw = _decoder(r, tied=False, max_default=2048)
    h = kw["hidden_size"]
    head_dim = h // kw["num_attention_heads"]
    extra = 0 if kw["tied_embeddings"] else kw["vocab_size"]  # lm_head bias
    if r.flag("qk_layernorm", False):
        extra += kw["num_layers"] * 2 * 2 * head_dim
    kw.update(
        gated_mlp=False,
        norm="layernorm",
        norms_per_layer=1,
        attention_bias=True,
        attention_out_bias=True,
        mlp_bias=True,
        extra_params=extra,
    )
    return _Arch(
        kw,
        [
            "Parallel attention and MLP with one LayerNorm per block; extra_params = lm_head bias"
            + (" and q/k LayerNorms." if r.flag("qk_layernorm", False) else ".")
        ],
    )


def _gpt2(r: _Reader) -> _Arch:
    h = r.integer("n_embd", "hidden_size")
    kw = dict(
        num_layers=r.integer("n_layer", "num_hidden_layers"),
        hidden_size=h,
        num_attention_heads=r.integer("n_head", "num_attention_heads"),
        intermediate_size=r.integer("n_inner", default=4 * h),
        vocab_size=r.integer("vocab_size"),
        max_context=r.integer("n_positions", "n_ctx", "max_position_embeddings", default=1024),
        tied_embeddings=r.flag("tie_word_embeddings", True),
        gated_mlp=False,
        norm="layernorm",
        position_embedding="learned",
        attention_bias=True,
        attention_out_bias=True,
        mlp_bias=True,
    )
    kw["num_key_value_heads"] = kw["num_attention_heads"]
    return _Arch(kw)


def _gpt_bigcode(r: _Reader) -> _Arch:
    arch = _gpt2(r)
    kw = arch.kwargs
    kw["max_context"] = r.integer("n_positions", "max_position_embeddings", default=2048)
    if r.flag("multi_query", True):
        kw["num_key_value_heads"] = 1
    return arch


def _gptj(r: _Reader) -> _Arch:
    h = r.integer("n_embd", "hidden_size")
    vocab = r.integer("vocab_size")
    heads = r.integer("n_head", "num_attention_heads")
    tied = r.flag("tie_word_embeddings", False)
    kw = dict(
        num_layers=r.integer("n_layer", "num_hidden_layers"),
        hidden_size=h,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        intermediate_size=r.integer("n_inner", default=4 * h),
        vocab_size=vocab,
        max_context=r.integer("n_positions", "max_position_embeddings", default=2048),
        tied_embeddings=tied,
        gated_mlp=False,
        norm="layernorm",
        norms_per_layer=1,
        position_embedding="rope",
        attention_bias=False,
        attention_out_bias=False,
        mlp_bias=True,
        extra_params=0 if tied else vocab,
    )
    return _Arch(
        kw, ["Parallel attention and MLP with one LayerNorm per block; extra_params = lm_head bias."]
    )


def _gpt_neox(r: _Reader) -> _Arch:
    kw = _decoder(r, tied=False, max_default=2048)
    bias = r.flag("attention_bias", True)
    kw.update(gated_mlp=False, norm="layernorm", attention_bias=bias, attention_out_bias=bias, mlp_bias=True)
    return _Arch(kw)


def _falcon(r: _Reader, model_type: str) -> _Arch:
    h = r.integer("hidden_size", "n_embd")
    heads = r.integer("num_attention_heads", "n_head")
    new_arch = r.flag("new_decoder_architecture", model_type == "refinedweb")
    parallel = r.flag("parallel_attn", True)
    if new_arch or not r.flag("multi_query", True):
        kv = r.integer("num_kv_heads", "n_head_kv", default=heads)
    else:
        kv = 1  # multi-query attention
    if not parallel:
        norms = 2
    else:
        norms = r.integer("num_ln_in_parallel_attn", default=2 if new_arch else 1)
    bias = r.flag("bias", False)
    kw = dict(
        num_layers=r.integer("num_hidden_layers", "n_layer"),
        hidden_size=h,
        num_attention_heads=heads,
        num_key_value_heads=kv,
        intermediate_size=r.integer("ffn_hidden_size", default=4 * h),
        vocab_size=r.integer("vocab_size"),
        max_context=r.integer("max_position_embeddings", default=2048),
        tied_embeddings=r.flag("tie_word_embeddings", True),
        gated_mlp=False,
        norm="layernorm",
        norms_per_layer=norms,
        position_embedding="alibi" if r.flag("alibi", False) else "rope",
        attention_bias=bias,
        attention_out_bias=bias,
        mlp_bias=bias,
    )
    return _Arch(kw)


def _bert(r: _Reader) -> _Arch:
    h = r.integer("hidden_size")
    heads = r.integer("num_attention_heads")
    type_vocab = r.integer("type_vocab_size", default=2, minimum=0)
    kw = dict(
        kind="encoder",
        num_layers=r.integer("num_hidden_layers"),
        hidden_size=h,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        intermediate_size=r.integer("intermediate_size", default=4 * h),
        vocab_size=r.integer("vocab_size"),
        max_context=r.integer("max_position_embeddings", default=512),
        tied_embeddings=True,
        gated_mlp=False,
        norm="layernorm",
        position_embedding="learned",
        attention_bias=True,
        attention_out_bias=True,
        mlp_bias=True,
        # Token-type embeddings and the pooler dense layer; the formula's final norm stands for the
        # embedding LayerNorm (BERT is post-LN and has no final norm).
        extra_params=type_vocab * h + h * h + h,
    )
    return _Arch(
        kw,
        [
            "Counts the encoder with its pooler (BertModel); extra_params = token-type "
            "embeddings + pooler. A masked-LM head would add about h*h + vocab more."
        ],
    )


def _mpt(r: _Reader) -> _Arch:
    attn = _Reader(r.obj("attn_config"), f"{r.where} attn_config")
    ffn = _Reader(r.obj("ffn_config"), f"{r.where} ffn_config")
    h = r.integer("d_model", "hidden_size")
    heads = r.integer("n_heads", "num_attention_heads")
    attn_type = attn.text("attn_type", "multihead_attention")
    if attn_type == "multiquery_attention":
        kv = 1
    elif attn_type == "grouped_query_attention":
        kv = attn.integer("kv_n_heads", default=heads)
    else:
        kv = heads
    width = ffn.opt_int("ffn_hidden_size") or int(round(r.number("expansion_ratio", 4.0) * h))
    no_bias = r.flag("no_bias", True)
    alibi = attn.flag("alibi", True)
    learned = r.flag("learned_pos_emb", True)
    kw = dict(
        num_layers=r.integer("n_layers", "num_hidden_layers"),
        hidden_size=h,
        num_attention_heads=heads,
        num_key_value_heads=kv,
        intermediate_size=width,
        vocab_size=r.integer("vocab_size"),
        max_context=r.integer("max_seq_len", "max_position_embeddings", default=2048),
        tied_embeddings=r.flag("tie_word_embeddings", True),
        gated_mlp=ffn.text("ffn_type", "mptmlp") == "mptglu",
        # Bias-free LayerNorms hold h weights, which is what the formula counts for "rmsnorm".
        norm="rmsnorm" if no_bias else "layernorm",
        position_embedding="alibi" if alibi else ("learned" if learned else "none"),
        attention_bias=not no_bias,
        attention_out_bias=not no_bias,
        mlp_bias=not no_bias,
    )
    notes = []
    if no_bias:
        notes.append("MPT's LayerNorms have no bias (no_bias); norm=rmsnorm only counts their h weights.")
    return _Arch(kw, notes)


def _starcoder2(r: _Reader) -> _Arch:
    kw = _decoder(r, tied=True)
    bias = r.flag("use_bias", True)
    kw.update(gated_mlp=False, norm="layernorm", attention_bias=bias, attention_out_bias=bias, mlp_bias=bias)
    _sliding(r, kw)
    return _Arch(kw)


def _generic(r: _Reader) -> _Arch:
    arch = _llama(r)
    kw = arch.kwargs
    if r.has("moe_intermediate_size") and kw.get("num_experts", 1) > 1:
        kw["moe_intermediate_size"] = r.opt_int("moe_intermediate_size")
    shared = r.opt_int("n_shared_experts", minimum=0) or 0
    if shared and kw.get("num_experts", 1) > 1:
        h, width = kw["hidden_size"], kw.get("moe_intermediate_size") or kw["intermediate_size"]
        kw["extra_params"] = kw["num_layers"] * shared * 3 * h * width
        arch.notes.append(f"extra_params = {shared} shared expert(s) per layer.")
    if kw.get("num_experts", 1) > 1:
        arch.notes.extend(_mixed_moe_note(r, kw))
    if r.has("kv_lora_rank"):
        arch.notes.append(
            "Multi-head latent attention (kv_lora_rank) is not modelled; attention size and "
            "KV cache are approximate."
        )
    if not r.has("tie_word_embeddings"):
        arch.notes.append("tie_word_embeddings not set; assumed an untied output head.")
    return arch


def _deepseek(r: _Reader) -> _Arch:
    """DeepSeek-V2/V3 (and Kimi K2, which reuses deepseek_v3): latent attention, shared experts,
    dense first layers; the multi-token-prediction module is reported, not counted."""
    kw = _decoder(r, tied=False)
    heads = kw["num_attention_heads"]
    kw.update(
        num_key_value_heads=heads,
        head_dim=None,
        kv_lora_rank=r.integer("kv_lora_rank"),
        q_lora_rank=r.opt_int("q_lora_rank"),
        qk_rope_head_dim=r.integer("qk_rope_head_dim"),
        qk_nope_head_dim=r.integer("qk_nope_head_dim"),
        v_head_dim=r.integer("v_head_dim"),
    )
    notes = [
        f"Multi-head latent attention: the KV cache holds kv_lora_rank + qk_rope_head_dim = "
        f"{kw['kv_lora_rank']} + {kw['qk_rope_head_dim']} values per token and layer."
    ]
    experts = r.opt_int("n_routed_experts", minimum=0) or 1
    if experts > 1:
        layers = kw["num_layers"]
        dense = min(layers, r.opt_int("first_k_dense_replace", minimum=0) or 0)
        kw.update(
            num_experts=experts,
            experts_per_token=r.integer("num_experts_per_tok", default=min(2, experts)),
            moe_intermediate_size=r.integer("moe_intermediate_size"),
            shared_experts=r.opt_int("n_shared_experts", minimum=0) or 0,
            dense_layers=dense,
        )
        if (r.opt_int("moe_layer_freq") or 1) > 1:
            notes.append(
                "moe_layer_freq > 1 is not modelled: every layer after the dense ones is counted as MoE."
            )
        if r.text("topk_method", "") == "noaux_tc":
            kw["extra_params"] = (layers - dense) * experts  # e_score_correction_bias of each router
            notes.append("extra_params = the routers' expert-bias vectors (noaux_tc routing).")
        notes.append(
            f"{dense} dense layer(s) first (first_k_dense_replace), then {kw['shared_experts']} shared "
            f"and {experts} routed experts per layer."
        )
    mtp = r.opt_int("num_nextn_predict_layers", minimum=0) or 0
    if mtp:
        h = kw["hidden_size"]
        i = kw.get("moe_intermediate_size") or kw["intermediate_size"]
        per = _deepseek_layer_params(kw) + 2 * h * h + 3 * h  # a full layer, eh_proj and its norms
        notes.append(
            f"The checkpoint also stores {mtp} multi-token-prediction layer(s) (about {per * mtp / 1e9:.1f}B "
            f"parameters with width {i}, plus copies of the embedding and head); they are not counted, as "
            "inference without speculative decoding never runs them."
        )
    return _Arch(kw, notes)


def _deepseek_layer_params(kw: dict[str, Any]) -> int:
    spec = ModelSpec(
        name="layer",
        **{
            **kw,
            "num_layers": 1,
            "dense_layers": 0,
            "extra_params": 0,
            "vocab_size": 1,
            "tied_embeddings": True,
        },
    )
    return int(spec.counts.attention + spec.counts.mlp + 2 * kw["hidden_size"])


def _gpt_oss(r: _Reader) -> _Arch:
    """gpt-oss: biased attention with learned sinks, alternating sliding-window layers, biased experts."""
    kw = _decoder(r, tied=False)
    kw.update(attention_bias=True, attention_out_bias=True, mlp_bias=True)
    _sliding(r, kw)
    _experts(r, kw, "num_local_experts", "num_experts")
    layers, heads = kw["num_layers"], kw["num_attention_heads"]
    # Learned attention sinks (one per head) and the router bias (one per expert), in every layer.
    kw["extra_params"] = layers * (heads + kw.get("num_experts", 1))
    return _Arch(
        kw,
        [
            "extra_params = attention sinks (one per head) and router biases per layer.",
            "The experts are stored in MXFP4 (workload weights mxfp4); attention, router, embedding "
            "and head stay in 16 bit.",
        ],
    )


def _llama4_text(r: _Reader) -> _Arch:
    """Llama 4: MoE layers every ``interleave_moe_layer_step`` layers (or those listed in
    ``moe_layers``), each with ``num_local_experts`` routed experts and one always-active shared
    expert of width ``intermediate_size``; the other layers are dense with width
    ``intermediate_size_mlp``. RoPE layers attend within chunks of ``attention_chunk_size``
    tokens; every ``no_rope_layer_interval``-th layer (NoPE) attends globally."""
    kw = _decoder(r, tied=False)
    bias = r.flag("attention_bias", False)
    kw.update(attention_bias=bias, attention_out_bias=bias)
    layers = kw["num_layers"]
    experts = r.opt_int("num_local_experts", minimum=0) or 1
    notes = []
    if experts > 1:
        listed = r.data.get("moe_layers")
        if isinstance(listed, list) and listed and all(_is_int(x) for x in listed):
            moe = len({int(x) for x in listed if 0 <= int(x) < layers})
        else:
            step = r.integer("interleave_moe_layer_step", default=1)
            moe = len(range(step - 1, layers, step))
        kw.update(
            num_experts=experts,
            experts_per_token=r.integer("num_experts_per_tok", default=1),
            moe_intermediate_size=kw["intermediate_size"],
            intermediate_size=r.integer("intermediate_size_mlp", default=kw["intermediate_size"]),
            shared_experts=1,
            dense_layers=layers - moe,
        )
        notes.append(
            f"{moe} of {layers} layers are MoE ({experts} routed experts, {kw['experts_per_token']} per "
            f"token, and one shared expert of width {kw['moe_intermediate_size']}); the other "
            f"{layers - moe} are dense with width {kw['intermediate_size']} (intermediate_size_mlp)."
        )
    chunk = r.opt_int("attention_chunk_size", minimum=0)
    if chunk and chunk < kw["max_context"]:
        flags = r.data.get("no_rope_layers")
        if isinstance(flags, list) and len(flags) == layers and all(_is_int(x) for x in flags):
            chunked = sum(1 for x in flags if int(x)) / layers  # 1 = RoPE layer = chunked attention
        else:
            interval = r.integer("no_rope_layer_interval", default=4)
            chunked = (interval - 1) / interval
        if chunked > 0:
            kw.update(sliding_window=chunk, sliding_window_layer_fraction=min(1.0, chunked))
            notes.append(
                f"Chunked attention ({chunk} tokens) on {chunked:.0%} of the layers (RoPE layers); the "
                "NoPE layers attend to the whole context. The KV cache of a chunked layer is sized as a "
                f"{chunk}-token window."
            )
    return _Arch(kw, notes)


_BUILDERS: dict[str, Any] = {
    "llama": _llama,
    "mistral": _llama,
    "mixtral": _llama,
    "qwen2": _qwen2,
    "qwen2_moe": _qwen2_moe,
    "qwen3": _qwen3,
    "qwen3_moe": _qwen3,
    "gemma": _gemma,
    "gemma2": _gemma2,
    "gemma3_text": _gemma3_text,
    "phi3": _phi3,
    "phi": _phi,
    "gpt2": _gpt2,
    "gptj": _gptj,
    "gpt_neox": _gpt_neox,
    "gpt_bigcode": _gpt_bigcode,
    "falcon": lambda r: _falcon(r, "falcon"),
    "refinedwebmodel": lambda r: _falcon(r, "refinedwebmodel"),
    "refinedweb": lambda r: _falcon(r, "refinedweb"),
    "bert": _bert,
    "roberta": _bert,
    "xlm-roberta": _bert,
    "mpt": _mpt,
    "starcoder2": _starcoder2,
    "deepseek_v2": _deepseek,
    "deepseek_v3": _deepseek,
    "kimi_k2": _deepseek,
    "gpt_oss": _gpt_oss,
    "llama4_text": _llama4_text,
}


# --- safetensors cross-check ----------------------------------------------------------------------
def _has_safetensors(folder: Path) -> bool:
    try:
        return any(p.is_file() for p in folder.glob("*.safetensors")) or any(
            p.is_file() for p in folder.glob("*.safetensors.index.json")
        )
    except OSError:
        return False


def _quantization(quant: dict[str, Any]) -> tuple[str, int | None]:
    if not quant:
        return "", None
    method = quant.get("quant_method")
    method = method if isinstance(method, str) else ""
    bits = quant.get("bits", quant.get("w_bit"))
    if not _is_int(bits) or not 1 <= bits <= 16:
        bits = 4 if quant.get("load_in_4bit") is True else 8 if quant.get("load_in_8bit") is True else None
    if bits is None and method == "fp8":
        bits = 8
    return method, bits


def _published_from_headers(
    summary: SafetensorsSummary, kw: dict[str, Any], quantized: bool, method: str, bits: int | None
) -> tuple[int | None, str]:
    dtypes = ", ".join(f"{d} {n:,}" if len(summary.dtypes) > 1 else d for d, n in summary.dtypes.items())
    files = f"{summary.files} file{'s' if summary.files != 1 else ''}"
    packed = sum(n for d, n in summary.dtypes.items() if d in _INTEGER_DTYPES)
    if packed and (quantized or packed > summary.parameters // 100):
        note = (
            f"safetensors: {summary.parameters:,} stored elements ({dtypes}) in {files}; the weights are "
            f"stored as quantized integers{f' ({method})' if method else ''}, so the stored count is not "
            "taken as the parameter count and published_params is left empty."
        )
        if bits and bits < 8:  # several weights packed into each stored integer
            per = {d: _DTYPE_BITS.get(d, 8) for d in summary.dtypes if d in _INTEGER_DTYPES}
            estimate = (
                summary.parameters
                - packed
                + sum(n * per[d] // bits for d, n in summary.dtypes.items() if d in per)
            )
            note += (
                f" Unpacked at {bits} bits that is about {estimate:,} values "
                "(scales and zero points included)."
            )
        return None, note
    count = summary.parameters
    extra = ""
    # A tied head saved as its own tensor (Falcon, small Qwen3) is one matrix in memory.
    if kw.get("tied_embeddings") and kw.get("kind", "decoder") == "decoder":
        vocab, h = kw["vocab_size"], kw["hidden_size"]
        same = [n for n, s in summary.tensor_shapes.items() if math.prod(s) == vocab * h]
        heads = [n for n in same if n.rsplit(".", 2)[-2:] == ["lm_head", "weight"]]
        if heads and len(same) > len(heads):
            count -= vocab * h
            extra = f" (the tied lm_head stored separately is counted once: {summary.parameters:,} stored)"
    buffers = ""
    if summary.buffers:
        buffers = f"; {summary.buffers:,} buffer elements (masks, position ids) left out"
    note = f"safetensors: {count:,} parameters, {dtypes}, in {files}{extra}{buffers}."
    return count, note


# --- helpers --------------------------------------------------------------------------------------
def _fspath(path: object, field_name: str) -> str:
    try:
        text = os.fspath(path)  # type: ignore[call-overload]
    except TypeError:
        raise ModelConfigError(
            field_name, "path must be a string or path-like object", type(path).__name__
        ) from None
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if not text or "\x00" in text:
        raise ModelConfigError(field_name, "path is empty or invalid")
    return cast(str, text)


def _load_json_object(path: Path, field_name: str) -> dict[str, Any]:
    name = path.name
    kind = FileKind.SAFETENSORS_INDEX if name.endswith(".index.json") else FileKind.MODEL_CONFIG
    text = read_text(path, kind, field_name, ModelConfigError)
    data = parse_json(text, name, field_name, ModelConfigError)
    if not isinstance(data, dict):
        raise ModelConfigError(field_name, f"{name} must hold a JSON object, not {_json_kind(data)}")
    return data


def _display_name(data: dict[str, Any], folder: Path) -> str:
    source = data.get("_name_or_path")
    if isinstance(source, str):
        last = source.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1].strip()
        if last:
            return last
    try:
        folder_name = folder.resolve().name if not folder.name else folder.name
    except OSError:
        folder_name = folder.name
    return folder_name or "imported model"


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _json_kind(value: object) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if value is None:
        return "null"
    return "an object"
