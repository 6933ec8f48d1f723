"""Partial offload: how many of a model's layers go on a GPU that cannot hold them all.

llama.cpp's ``-ngl g`` keeps the last ``g`` of the ``L`` layers on the GPU (with their KV cache) and
runs the first ``L - g`` layers and, below ``L + 1``, the output head on the CPU from host RAM; the
speed of such a split is :func:`~gpuadvisor.core.estimation.performance.split_decode`'s.

When a model does not fit a card whole on an engine that splits layers (llama.cpp), the advisor
offers the largest ``g`` that fits: the GPU's memory need is affine in ``g`` (each layer brings its
weights and its share of the KV cache; the CUDA context, the prefill's activations and the compute
buffers stay), so two breakdowns give the line, and a breakdown at the answer checks it. The answer
keeps the card below :data:`~gpuadvisor.core.estimation.results.TIGHT_UTILIZATION` of its capacity,
the room a longer prompt or an allocator spike needs, as the verdict "tight" would warn. At least one
layer must fit; with none on the GPU the card would only read prompts.

The rest must fit in host RAM: ``hardware.host_memory_gib`` or, on a laptop or desktop, the machine
class's default (:data:`~gpuadvisor.core.specs.hardware.HOST_DEFAULTS`), which the answer states. A
Mac is never split: its GPU and CPU share one memory pool, so layers "kept in host RAM" would sit in
the same memory, outside the share Metal lets the GPU wire (raise that with
``sudo sysctl iogpu.wired_limit_mb``). A data-centre card is not offered a split either: a server
that rents or buys cards for a model gives it cards that hold it, and its host RAM is not known
(``workload.gpu_layers`` still splits any card on request).
"""

from __future__ import annotations

import copy
from dataclasses import replace

from ..specs.engines import record_of
from ..specs.hardware import GpuSpec
from ..specs.workload import Hardware, Workload
from ..units import GIB
from ..vocabulary import WorkloadKind
from .layout import Layout
from .memory import MemoryBreakdown, MemoryModel

#: Share of a card's capacity an offered split fills at most (the verdict's "tight" threshold).
SPLIT_FILL = 0.95


def splits_layers(engine_id: str, workload: Workload) -> bool:
    """Whether the advisor may offer a split for this workload: inference without traffic targets on
    an engine that splits layers (llama.cpp), with ``workload.gpu_layers`` left to the advisor."""
    return (
        workload.kind == WorkloadKind.INFERENCE
        and workload.serving is None
        and workload.gpu_layers is None
        and record_of(engine_id, workload.kind).splits_layers
    )


def offers_split(gpu: GpuSpec) -> bool:
    """Whether the advisor offers a split on this GPU: a laptop or desktop card (not a Mac)."""
    return gpu.segment == "local" and not gpu.unified_memory


def with_gpu_layers(mm: MemoryModel, gpu_layers: int) -> MemoryModel:
    """``mm`` with ``gpu_layers`` layers on the GPU; every precomputed figure shared."""
    other = copy.copy(mm)
    other.workload = replace(mm.workload, gpu_layers=gpu_layers)
    other._cache = {}
    return other


class LayerSplitter:
    """The memory models of one workload at each GPU layer count, built once and shared by GPUs."""

    def __init__(self, mm: MemoryModel) -> None:
        self.base = mm
        self.layers = mm.layers
        self._models: dict[int, MemoryModel] = {}

    def model(self, gpu_layers: int) -> MemoryModel:
        """The memory model with ``gpu_layers`` on the GPU (cached)."""
        found = self._models.get(gpu_layers)
        if found is None:
            found = self._models[gpu_layers] = with_gpu_layers(self.base, gpu_layers)
        return found

    def _need(self, g: int, n: int, par: str, layout: Layout | None) -> MemoryBreakdown:
        return self.model(g).breakdown(n, par, layout=layout)

    def largest(
        self, n: int, par: str, layout: Layout | None, capacity_bytes: float
    ) -> tuple[int, MemoryBreakdown] | None:
        """(the most layers below all that fit ``capacity_bytes`` x :data:`SPLIT_FILL`, their
        breakdown), or None when not even one layer fits."""
        limit = capacity_bytes * SPLIT_FILL
        top = self.layers - 1
        if top < 1:
            return None
        one = self._need(1, n, par, layout)
        if one.device_total > limit:
            return None
        g = 1
        if top > 1:
            many = self._need(top, n, par, layout)
            slope = (many.device_total - one.device_total) / (top - 1)
            g = top if slope <= 0 else min(top, 1 + int((limit - one.device_total) // slope))
        bd = self._need(g, n, par, layout)
        while g > 1 and bd.device_total > limit:  # rounding of the line: step down until it fits
            g -= 1
            bd = self._need(g, n, par, layout)
        while g < top:
            more = self._need(g + 1, n, par, layout)
            if more.device_total > limit:
                break
            g, bd = g + 1, more
        return g, bd


def host_ram(gpu: GpuSpec, hardware: Hardware) -> tuple[float | None, bool]:
    """(host RAM the layers kept off the GPU may use, bytes, or None when not checked; whether it is
    the machine class's default rather than the scenario's ``hardware.host_memory_gib``)."""
    if hardware.host_memory_gib is not None:
        return hardware.host_memory_gib * GIB, False
    ram = gpu.host_defaults.ram_gib
    return (None, False) if ram is None else (ram * GIB, True)
