"""GPUs: the typed catalog row and the catalog loader.

All tensor-core throughput figures are **dense** (no 2:4 structured sparsity); datasheets
often print the sparse figure, which is twice as high and never reached by training or by
dense inference kernels. ``memory_gib_usable`` is the capacity a program can allocate
against, as ``nvidia-smi`` reports it (slightly below the marketed GB on some parts).

References
----------
- NVIDIA A100, H100, H200, L40S, L4, A10, T4, V100 datasheets; NVIDIA Ada Lovelace and Hopper
  architecture whitepapers; NVIDIA DGX B200 / HGX B200 datasheets; AMD Instinct MI300X
  datasheet. Each catalog row cites its own source (see ``docs/catalog.md``).
"""

from __future__ import annotations

import datetime as _dt
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from ..errors import CatalogError, InputError
from .catalog_io import CatalogMeta, RowReader, parse_rows, read_catalog_file, read_catalog_text

GPU_SCHEMA_VERSIONS = (1,)
GPU_REQUIRED_COLUMNS = (
    "id",
    "name",
    "architecture",
    "memory_gib_usable",
    "memory_bandwidth_gb_s",
    "fp16_dense_tflops",
    "tdp_w",
    "source",
)

#: Architectures whose tensor cores run FP8 (Ada, Hopper, Blackwell; AMD CDNA3).
FP8_ARCHITECTURES = frozenset({"ada", "hopper", "blackwell", "cdna3", "cdna4"})
KNOWN_ARCHITECTURES = frozenset(
    {
        "pascal",
        "volta",
        "turing",
        "ampere",
        "ada",
        "hopper",
        "blackwell",
        "cdna2",
        "cdna3",
        "cdna4",
        "rdna3",
        "apple",
        "other",
    }
)

#: Where a part is used: servers in a data centre, or a laptop or desktop of one person.
SEGMENTS = ("data_centre", "local")


class MachineClass(StrEnum):
    """The kind of machine a GPU sits in, which sets the host defaults of :data:`HOST_DEFAULTS`."""

    DESKTOP = "desktop"
    LAPTOP = "laptop"
    MAC = "mac"
    SERVER = "server"


@dataclass(frozen=True, slots=True)
class HostDefaults:
    """What the answer assumes of the host of a machine class when the scenario does not say.

    ``ram_gib``: host RAM the job may use (installed RAM less ``RAM_RESERVED_GIB`` for the system),
    None: not checked; ``bandwidth_gb_s``: the memory's datasheet bandwidth (channels x bus bytes x
    transfer rate); ``cpu_tflops``: the cores' FP32 FMA peak (cores x clock x 32 FLOPs a cycle with
    two 256-bit FMA units), what layers computed on the CPU can reach at most.
    """

    machine: str  # in words: "a desktop with 32 GB of dual-channel DDR5-5600"
    ram_gib: float | None
    bandwidth_gb_s: float
    memory: str  # the memory the bandwidth is of: "dual-channel DDR5-5600"
    cpu_tflops: float


#: RAM kept for the operating system and the desktop when layers live in host RAM, GiB.
RAM_RESERVED_GIB = 4.0
#: Host defaults per machine class (docs/estimation.md, "Host memory"): JEDEC DDR5-5600 moves
#: 5,600 MT/s x 8 bytes = 44.8 GB/s per 64-bit channel, DDR5-4800 38.4 GB/s; a desktop or laptop has
#: two channels, a server socket eight. A Mac's defaults come from the chip (:attr:`GpuSpec.host_defaults`).
HOST_DEFAULTS: dict[MachineClass, HostDefaults] = {
    MachineClass.DESKTOP: HostDefaults(
        "a desktop with 32 GB of dual-channel DDR5-5600",
        32.0 - RAM_RESERVED_GIB,
        89.6,
        "dual-channel DDR5-5600",
        8 * 4.5 * 32 / 1000,
    ),
    MachineClass.LAPTOP: HostDefaults(
        "a laptop with 16 GB of dual-channel DDR5-5600",
        16.0 - RAM_RESERVED_GIB,
        89.6,
        "dual-channel DDR5-5600",
        8 * 3.0 * 32 / 1000,
    ),
    MachineClass.SERVER: HostDefaults(
        "a server node with eight-channel DDR5-4800 per socket",
        None,
        307.2,
        "eight-channel DDR5-4800",
        32 * 2.5 * 32 / 1000,
    ),
}
#: Host (CPU) memory bandwidth assumed when the scenario gives none, GB/s, by segment.
DEFAULT_HOST_BANDWIDTH_GB_S = {
    "local": HOST_DEFAULTS[MachineClass.DESKTOP].bandwidth_gb_s,
    "data_centre": HOST_DEFAULTS[MachineClass.SERVER].bandwidth_gb_s,
}
#: Name fragments of laptop, desktop and workstation parts.
_LOCAL_NAMES = ("GeForce", "Radeon RX", "RTX A", "RTX PRO", "RTX 6000 Ada", "Apple")
_MEMORY_OPTIONS = re.compile(r"Memory options \(GB\): ([0-9., ]+)")


def metal_working_set_share(ram_gib: float) -> float:
    """Share of a Mac's unified memory that Metal lets the GPU wire by default.

    macOS reports it as ``recommendedMaxWorkingSetSize`` (llama.cpp prints it at start-up):
    about two thirds of the RAM on Macs with 36 GB or less and three quarters above. Raise it
    with ``sudo sysctl iogpu.wired_limit_mb=<MiB>`` (macOS 14 and later; resets on reboot).
    """
    return 2.0 / 3.0 if ram_gib <= 36 else 0.75


#: Cards an NVLink bridge joins (NVIDIA's datasheets for the A100 PCIe, H100 PCIe and NVL, RTX A6000,
#: A40 and GeForce RTX 3090: a two-way bridge): beyond a pair the cards talk over PCIe.
BRIDGED_GPUS = 2

#: Unidirectional PCIe x16 bandwidth per generation, GB/s.
_PCIE_X16_GB_S = {3: 16.0, 4: 32.0, 5: 64.0, 6: 128.0}


@dataclass(frozen=True, slots=True)
class PriceRange:
    """A low / expected / high price."""

    low: float
    expected: float
    high: float


@dataclass(frozen=True, slots=True)
class GpuSpec:
    """One GPU model, with units in the field names."""

    id: str
    name: str
    vendor: str
    architecture: str
    memory_gib_usable: float
    memory_bandwidth_gb_s: float
    fp16_dense_tflops: float
    #: Board power, W; None when the catalog row leaves it empty (buying cannot be costed then).
    tdp_w: float | None
    memory_gb: float | None = None
    memory_type: str = ""
    form_factor: str = ""
    launch_year: int | None = None
    fp32_tflops: float | None = None
    tf32_dense_tflops: float | None = None
    bf16_dense_tflops: float | None = None
    fp8_dense_tflops: float | None = None
    int8_dense_tops: float | None = None
    fp4_dense_tflops: float | None = None
    #: FP16 tensor throughput with FP16 accumulation (cuBLAS ``cublasHgemm``), dense; None: the same
    #: as ``fp16_dense_tflops``. GeForce cards run FP32 accumulation at half their FP16-accumulate rate.
    fp16_acc16_dense_tflops: float | None = None
    nvlink_gb_s: float | None = None
    #: GPUs one NVLink switch fabric joins beyond a server (a GB200 NVL72 rack: 72); None: the GPUs
    #: of one server (``hardware.gpus_per_node``). Collectives inside it run at NVLink speed.
    nvlink_domain_gpus: int | None = None
    pcie_gen: int | None = None
    mig_instances: int = 0
    purchase_new_usd: tuple[float, float] | None = None
    purchase_used_usd: tuple[float, float] | None = None
    cloud_usd_per_hour: PriceRange | None = None
    price_as_of: str = ""
    source: str = ""
    notes: str = ""
    #: Host-memory bandwidth set by the scenario (``hardware.host_memory_bandwidth_gb_s``), GB/s.
    host_bandwidth_override_gb_s: float | None = None
    #: Whether an NVLink bridge joins pairs of these cards (``hardware.nvlink_bridge``): only for
    #: cards whose NVLink is a bridge (:attr:`nvlink_bridge`); False: they talk over PCIe.
    nvlink_bridged: bool = False

    @property
    def segment(self) -> str:
        """``local`` (laptops and desktops: Apple silicon, laptop parts, GeForce, Radeon RX and
        workstation cards) or ``data_centre`` (everything else)."""
        if self.form_factor in ("soc", "laptop") or any(part in self.name for part in _LOCAL_NAMES):
            return "local"
        return "data_centre"

    @property
    def unified_memory(self) -> bool:
        """Whether the GPU shares the system RAM (Apple silicon)."""
        return self.architecture == "apple"

    @property
    def memory_options_gib(self) -> tuple[float, ...]:
        """The memory sizes the part ships with, from the row's "Memory options (GB): 16, 24, 32."
        note (a Mac's RAM choices); empty when the row has none."""
        found = _MEMORY_OPTIONS.search(self.notes)
        if not found:
            return ()
        return tuple(float(v) for v in re.findall(r"\d+(?:\.\d+)?", found.group(1)))

    @property
    def machine_class(self) -> MachineClass:
        """The machine this part sits in: a Mac (Apple silicon), a laptop, a desktop (the other
        laptop and desktop parts) or a server (data-centre parts)."""
        if self.unified_memory:
            return MachineClass.MAC
        if self.form_factor == "laptop" or "Laptop" in self.name:
            return MachineClass.LAPTOP
        return MachineClass.DESKTOP if self.segment == "local" else MachineClass.SERVER

    @property
    def host_defaults(self) -> HostDefaults:
        """The host this part is assumed to sit in (:data:`HOST_DEFAULTS`). A Mac's host is its own
        unified memory: the CPU cores reach about half its bandwidth (AnandTech's M1 Max review
        measured about 200 of 400 GB/s) and share the RAM with the GPU, so no RAM is left over for
        layers kept off the GPU."""
        machine = self.machine_class
        if machine is MachineClass.MAC:
            ram = self.memory_gb or self.memory_gib_usable
            # What the CPU may hold beside the GPU's working set and the system.
            left = max(ram - self.memory_gib_usable - RAM_RESERVED_GIB, 0.0)
            return HostDefaults(
                f"a Mac with {ram:g} GB of unified memory",
                left,
                self.memory_bandwidth_gb_s / 2,
                "unified memory",
                self.fp32_tflops or self.fp16_dense_tflops,
            )
        return HOST_DEFAULTS[machine]

    @property
    def host_memory_bandwidth_gb_s(self) -> float:
        """Bandwidth of the memory that layers kept off the GPU are read from, GB/s (partial offload):
        the scenario's ``hardware.host_memory_bandwidth_gb_s``, else the machine class's default
        (:attr:`host_defaults`)."""
        if self.host_bandwidth_override_gb_s is not None:
            return self.host_bandwidth_override_gb_s
        return self.host_defaults.bandwidth_gb_s

    def capacity_gib(self, memory_gib: float) -> float:
        """GPU-usable GiB of this part fitted with ``memory_gib`` of memory: the Metal working-set
        share of it on unified-memory Macs, all of it otherwise (a MIG slice, a different board)."""
        return memory_gib * metal_working_set_share(memory_gib) if self.unified_memory else memory_gib

    def with_memory_gib(self, memory_gib: float) -> GpuSpec:
        """This part with ``memory_gib`` of memory (``hardware.memory_gib``)."""
        from dataclasses import replace

        return replace(self, memory_gib_usable=self.capacity_gib(memory_gib), memory_gb=memory_gib)

    @property
    def supports_fp8(self) -> bool:
        return self.fp8_dense_tflops is not None and self.architecture in FP8_ARCHITECTURES

    @property
    def supports_bf16(self) -> bool:
        return self.bf16_dense_tflops is not None

    @property
    def pcie_gb_s(self) -> float:
        """Unidirectional PCIe x16 bandwidth in GB/s (about 2 GB/s per lane per generation step from gen 3)."""
        return _PCIE_X16_GB_S.get(self.pcie_gen or 4, 32.0)

    @property
    def nvlink_bridge(self) -> bool:
        """Whether the card's NVLink is a bridge across the top of an add-in card (PCIe cards: the
        RTX 3090 and A6000, the A40, the A100 and H100 PCIe, the H100 NVL), which joins two cards
        and no more (NVIDIA's datasheets: "NVLink bridge for 2 GPUs"), not the NVSwitch fabric
        of an SXM or OAM server that joins every GPU of it."""
        return bool(self.nvlink_gb_s) and self.form_factor in ("pcie", "nvl")

    def nvlink_reaches(self, gpu_count: int) -> bool:
        """Whether ``gpu_count`` GPUs of this type inside one server reach each other over NVLink:
        every GPU of a switch fabric; cards with a bridge (:attr:`nvlink_bridge`) only as a pair,
        and only where the scenario says the bridge is fitted (:attr:`nvlink_bridged`): a bridge
        is an accessory, which rented servers and published benchmarks of these cards mostly
        run without."""
        if not self.nvlink_gb_s:
            return False
        if self.nvlink_bridge:
            return self.nvlink_bridged and gpu_count <= BRIDGED_GPUS
        return True

    @property
    def peer_gb_s(self) -> float:
        """Unidirectional GPU-to-GPU bandwidth inside a server: NVLink (half the quoted bidirectional
        figure) where the GPU has it, otherwise PCIe."""
        if self.nvlink_gb_s:
            return max(self.nvlink_gb_s / 2, self.pcie_gb_s)
        return self.pcie_gb_s

    def link_domain(self, gpus_per_node: int) -> int:
        """GPUs that reach each other over NVLink (or the server's PCIe): the catalog's NVLink
        domain where it is larger than a node (GB200 NVL72: 72), else the node's ``gpus_per_node``."""
        return max(gpus_per_node, self.nvlink_domain_gpus or 0)

    def price_age_days(self, today: _dt.date) -> int | None:
        """Days since the price as-of date (None if undated)."""
        try:
            return (today - _dt.date.fromisoformat(self.price_as_of)).days
        except ValueError:
            return None


@dataclass(frozen=True, slots=True)
class GpuCatalog:
    """The GPUs, in catalog order, with the file's metadata."""

    gpus: dict[str, GpuSpec]
    meta: CatalogMeta

    def get(self, gpu_id: str, field: str = "hardware.gpu") -> GpuSpec:
        try:
            return self.gpus[gpu_id]
        except KeyError:
            raise InputError(field, f"unknown GPU id; known ids: {', '.join(self.gpus)}", gpu_id) from None

    def __iter__(self) -> Iterator[GpuSpec]:
        return iter(self.gpus.values())

    def __len__(self) -> int:
        return len(self.gpus)


def _pair(r: RowReader, low: str, high: str) -> tuple[float, float] | None:
    lo, hi = r.number(low, required=False), r.number(high, required=False)
    if lo is None and hi is None:
        return None
    lo = lo if lo is not None else hi
    hi = hi if hi is not None else lo
    assert lo is not None and hi is not None
    if lo > hi:
        raise CatalogError(r.where(low), f"is above {high}", lo)
    return (lo, hi)


def parse_gpu_row(r: RowReader) -> GpuSpec:
    """One catalog row -> :class:`GpuSpec` (raises CatalogError naming line and column)."""
    gpu_id = r.text("id")
    if gpu_id != gpu_id.strip().lower() or " " in gpu_id:
        raise CatalogError(r.where("id"), "must be lowercase without spaces", gpu_id)
    arch = r.text("architecture").lower()
    if arch not in KNOWN_ARCHITECTURES:
        raise CatalogError(
            r.where("architecture"), f"must be one of {', '.join(sorted(KNOWN_ARCHITECTURES))}", arch
        )
    lo = r.number("cloud_usd_per_hour_low", required=False)
    ex = r.number("cloud_usd_per_hour_expected", required=False)
    hi = r.number("cloud_usd_per_hour_high", required=False)
    cloud = None
    if any(v is not None for v in (lo, ex, hi)):
        values = [v for v in (lo, ex, hi) if v is not None]
        ex = ex if ex is not None else sum(values) / len(values)
        lo = lo if lo is not None else min(values)
        hi = hi if hi is not None else max(values)
        if lo > hi:
            raise CatalogError(r.where("cloud_usd_per_hour_low"), "must not exceed the high price", lo)
        # An expected price outside low-high is a real quote (the user's own deal, say): the range
        # widens to include it rather than the GPU being dropped.
        cloud = PriceRange(min(lo, ex), ex, max(hi, ex))
    memory = r.number("memory_gib_usable")
    assert memory is not None
    if memory > 4096:
        raise CatalogError(r.where("memory_gib_usable"), "is implausibly large (over 4096 GiB)", memory)
    bandwidth = r.number("memory_bandwidth_gb_s")
    assert bandwidth is not None
    if bandwidth > 100_000:
        raise CatalogError(
            r.where("memory_bandwidth_gb_s"), "is implausibly large (over 100 TB/s)", bandwidth
        )
    fp16 = r.number("fp16_dense_tflops")
    tdp = r.number("tdp_w", required=False)  # a datasheet may not state it: only buying needs it
    assert fp16 is not None
    return GpuSpec(
        id=gpu_id,
        name=r.text("name"),
        vendor=r.text("vendor", required=False) or "",
        architecture=arch,
        memory_gib_usable=memory,
        memory_bandwidth_gb_s=bandwidth,
        fp16_dense_tflops=fp16,
        tdp_w=tdp,
        memory_gb=r.number("memory_gb", required=False),
        memory_type=r.text("memory_type", required=False),
        form_factor=r.text("form_factor", required=False),
        launch_year=r.integer("launch_year", required=False, minimum=1990),
        fp32_tflops=r.number("fp32_tflops", required=False),
        tf32_dense_tflops=r.number("tf32_dense_tflops", required=False),
        bf16_dense_tflops=r.number("bf16_dense_tflops", required=False),
        fp8_dense_tflops=r.number("fp8_dense_tflops", required=False),
        int8_dense_tops=r.number("int8_dense_tops", required=False),
        fp4_dense_tflops=r.number("fp4_dense_tflops", required=False),
        fp16_acc16_dense_tflops=r.number("fp16_acc16_dense_tflops", required=False),
        nvlink_gb_s=r.number("nvlink_gb_s", required=False),
        nvlink_domain_gpus=r.integer("nvlink_domain_gpus", required=False, minimum=1),
        pcie_gen=r.integer("pcie_gen", required=False, minimum=1),
        mig_instances=r.integer("mig_instances", required=False, minimum=0) or 0,
        purchase_new_usd=_pair(r, "purchase_new_usd_low", "purchase_new_usd_high"),
        purchase_used_usd=_pair(r, "purchase_used_usd_low", "purchase_used_usd_high"),
        cloud_usd_per_hour=cloud,
        price_as_of=r.text("price_as_of", required=False),
        source=r.text("source"),
        notes=r.text("notes", required=False),
    )


def bundled_catalog_dir() -> Path:
    """The read-only ``catalogs/`` folder shipped with the application.

    Frozen (PyInstaller), it is under ``sys._MEIPASS`` (else next to the executable); from a
    checkout, at the repository root.
    """
    here = Path(__file__).resolve()
    frozen: tuple[Path, ...] = ()
    if getattr(sys, "frozen", False):
        frozen = (Path(getattr(sys, "_MEIPASS", None) or Path(sys.executable).resolve().parent) / "catalogs",)
    for candidate in (*frozen, here.parents[3] / "catalogs", here.parents[2] / "catalogs"):
        if candidate.is_dir():
            return candidate
    raise CatalogError("catalogs", "the bundled catalog folder is missing from this installation")


def load_gpu_catalog(path: str | Path | None = None, text: str | None = None) -> GpuCatalog:
    """Load a GPU catalog from ``path`` (default: the bundled one) or from ``text``."""
    if text is not None:
        meta, rows = read_catalog_text(text, "gpus.csv", "gpus", GPU_SCHEMA_VERSIONS, GPU_REQUIRED_COLUMNS)
    else:
        meta, rows = read_catalog_file(
            path or bundled_catalog_dir() / "gpus.csv", "gpus", GPU_SCHEMA_VERSIONS, GPU_REQUIRED_COLUMNS
        )
    gpus = parse_rows(meta, rows, parse_gpu_row, lambda g: g.id)
    if not gpus:
        raise CatalogError(meta.origin, "holds no GPU rows")
    return GpuCatalog(gpus=gpus, meta=meta)
