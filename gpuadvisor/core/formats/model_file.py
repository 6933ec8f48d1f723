"""What a model file on disk sets in a scenario: a ``.gguf`` file's own weight type, and llama.cpp.

A GGUF file says which recipe quantized it (``general.file_type``: ``MOSTLY_Q4_K_M``, ``MOSTLY_F16``,
...). Chosen as the model, the file sets ``workload.weights`` to that type unless the scenario states
the weights itself (a scenario file with a ``model.gguf`` and no ``workload.weights``; the window's
"Models on this machine" and file choice fill the weights box), and the engine that reads it is
llama.cpp unless the scenario names another (:func:`~gpuadvisor.core.specs.engines.engine_of`).

A recipe the scenario format has no key for maps to the nearest one (``q4_k_s`` to ``q4_k_m``,
``q4_1`` to ``q4_0``, ...): the memory is the file's exact bytes either way, and the speed follows
the weights' bits per weight, which differ by a few percent between such neighbours.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import ModelConfigError
from ..files import expand_user
from ..specs.workload import WEIGHT_PRECISIONS

#: GGUF file types (lower case, without ``mostly_``) that the weights keys spell differently, or that
#: have no key of their own and take the nearest one.
_FILE_TYPE_WEIGHTS = {
    "f32": "fp32",
    "f16": "fp16",
    "bf16": "bf16",
    "q8_0": "q8_0",
    "q6_k": "q6_k",
    "q5_k_m": "q5_k_m",
    "q5_k_s": "q5_k_m",
    "q5_0": "q5_0",
    "q5_1": "q5_0",
    "q4_k_m": "q4_k_m",
    "q4_k_s": "q4_k_m",
    "q4_0": "q4_0",
    "q4_1": "q4_0",
    "iq4_xs": "iq4_xs",
    "iq4_nl": "iq4_xs",
    "q3_k_m": "q3_k_m",
    "q3_k_s": "q3_k_m",
    "q3_k_l": "q3_k_m",
    "q2_k": "q2_k",
    "q2_k_s": "q2_k",
    "mxfp4": "mxfp4",
    "nvfp4": "nvfp4",
}


def weights_of_file_type(file_type: str) -> str | None:
    """The ``workload.weights`` value for a GGUF file type (``f16`` -> ``fp16``, ``q4_k_s`` ->
    ``q4_k_m``); None for a type without a near key (the IQ1-IQ3 types, ternary types)."""
    weights = _FILE_TYPE_WEIGHTS.get(file_type.lower())
    return weights if weights in WEIGHT_PRECISIONS else None


def gguf_path(gguf: str, base_dir: str | None = None) -> Path:
    """A scenario's ``model.gguf`` as a path (relative to the scenario file's folder)."""
    path = expand_user(gguf, "model.gguf")
    if not path.is_absolute() and base_dir:
        path = Path(base_dir) / path
    return path


def file_weights(path: str | os.PathLike[str]) -> str | None:
    """The weights a ``.gguf`` file holds (:func:`weights_of_file_type` of its header's file type);
    None when the file does not say or holds a type without a key. Reads the header only; a file
    that cannot be read raises :class:`~gpuadvisor.core.errors.ModelConfigError`."""
    from .gguf_file import read_gguf  # reads the header only

    return weights_of_file_type(read_gguf(path).file_type)


def file_weights_or_none(path: str | os.PathLike[str]) -> str | None:
    """:func:`file_weights`, or None when the file cannot be read (the estimate then says why)."""
    try:
        return file_weights(path)
    except (ModelConfigError, OSError):
        return None
