"""Provider GPU names -> catalog ids: how a price list's ``A100-80GB`` or ``H100 SXM5`` finds its row.

Lower-case, vendor words and separators dropped, memory and form-factor tokens taken out, then
an exact lookup (so ``L40`` never becomes ``l40s`` and ``A10`` never ``a100``), with the memory
and form factor choosing among the variants of A100, H100 and V100 (:func:`explain_match` says
which assumption was made). Used by :mod:`gpuadvisor.core.formats.pricelists`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import NamedTuple

from ..specs.hardware import GpuCatalog

#: Memory values above this are taken as MiB (no GPU holds 1 TiB; the smallest MiB value is ~4096).
MIB_THRESHOLD = 1024.0
#: A memory figure further than this (relative) from every variant of a family matches none of them.
MEMORY_TOLERANCE = 0.15
#: Below this share of the catalog memory an offer is a slice of the GPU (MIG, vGPU), not the GPU.
SLICE_FRACTION = 0.75

# Words that name the vendor or product line, never the chip.
_NOISE_WORDS = frozenset(
    {
        "nvidia",
        "tesla",
        "geforce",
        "amd",
        "instinct",
        "gpu",
        "accelerator",
        "generation",
        "edition",
        "workstation",
        "blackwell",
    }
)
_FORM_TOKENS = {
    "pcie": "pcie",
    "nvl": "nvl",
    "sxm": "sxm",
    "sxm2": "sxm",
    "sxm3": "sxm",
    "sxm4": "sxm",
    "sxm5": "sxm",
}
# Tokens that rule out the PCIe variant: H100 PCIe has HBM2e; "mega" is GCP's A3 Mega (SXM).
_NOT_PCIE_TOKENS = frozenset({"hbm3", "hbm3e", "mega"})
_MEMORY_RE = re.compile(r"(?<![a-z0-9.])(\d+(?:\.\d+)?)\s*(?:gib|gb|g)(?![a-z0-9])")
_GLUED_FORM_RE = re.compile(r"^(?P<stem>[a-z]+\d+)(?P<form>sxm\d?|pcie|nvl)$")

# Compact spelling (after the steps above) -> catalog id, or a family name in _FAMILIES.
_STEMS: dict[str, str] = {
    "rtx4090": "rtx-4090",
    "4090": "rtx-4090",
    "rtx3090": "rtx-3090",
    "3090": "rtx-3090",
    "rtx5090": "rtx-5090",
    "5090": "rtx-5090",
    "rtxa6000": "rtx-a6000",
    "a6000": "rtx-a6000",
    "rtx6000ada": "rtx-6000-ada",
    "6000ada": "rtx-6000-ada",
    "rtxa6000ada": "rtx-6000-ada",
    "a6000ada": "rtx-6000-ada",
    "rtxpro6000": "rtx-pro-6000",
    "pro6000": "rtx-pro-6000",
    "t4": "t4",
    "t4g": "t4",
    "a10": "a10",
    "a10g": "a10g",
    "a40": "a40",
    "l4": "l4",
    "l40": "l40",
    "l40s": "l40s",
    "v100": "family:v100",
    "a100": "family:a100",
    "h100": "family:h100",
    "h20": "h20",
    "h200": "h200",
    "gh200": "gh200",
    "b200": "b200",
    "b300": "b300",
    "mi300x": "mi300x",
    "mi325x": "mi325x",
    "mi355x": "mi355x",
}
# Family -> catalog ids in order of preference when memory and form factor leave a choice.
_FAMILIES: dict[str, tuple[str, ...]] = {
    # Plain "A100" is the 40 GB SXM4 part on AWS p4d, GCP a2-highgpu, Lambda and SkyPilot.
    "a100": ("a100-40gb", "a100-80gb", "a100-40gb-pcie", "a100-80gb-pcie"),
    # Plain "H100" is sold mostly in 8-GPU SXM5 servers (AWS p5, GCP a3, Azure ND H100 v5).
    "h100": ("h100-sxm", "h100-pcie", "h100-nvl"),
    # Plain "V100" is the 16 GB part on AWS p3, GCP and Azure NCv3.
    "v100": ("v100-16gb", "v100-32gb"),
}
_DEFAULT_REASONS = {
    "a100": "without a memory figure the 40 GB part is assumed, as plain 'A100' means on most clouds",
    "h100": "the SXM5 part is assumed: plain 'H100' is mostly sold as 8-GPU SXM5 servers",
    "v100": "without a memory figure the 16 GB part is assumed, as plain 'V100' means on most clouds",
}
# The name's own memory token is not the GPU memory for these (GH200 480GB counts the CPU's LPDDR5X).
_IGNORE_NAME_MEMORY = frozenset({"gh200"})


class GpuMatch(NamedTuple):
    """The result of matching one provider spelling: the catalog id (or None) and why."""

    gpu_id: str | None
    note: str = ""  # an assumption made (a default variant) or why nothing matched
    by_memory: bool = False  # True when the memory figure is what ruled the name out


def gib_from_gib_or_mib(value: float | None) -> float | None:
    """GiB from a figure in GiB or MiB (values above :data:`MIB_THRESHOLD` are MiB)."""
    if value is None or not math.isfinite(value) or value <= 0:
        return None
    return value / 1024.0 if value > MIB_THRESHOLD else float(value)


def _normalise(name: str) -> tuple[str, float | None, set[str], bool]:
    """(compact stem, memory in the name in GiB, form-factor flags, rules out PCIe) for a spelling."""
    text = name.strip().lower()
    name_memory = None
    found = _MEMORY_RE.search(text)
    if found:
        name_memory = gib_from_gib_or_mib(float(found.group(1)))
        text = _MEMORY_RE.sub(" ", text)
    tokens = [t for t in re.split(r"[^a-z0-9]+", text) if t and t not in _NOISE_WORDS]
    forms: set[str] = set()
    not_pcie = False
    kept = []
    for tok in tokens:
        if tok in _FORM_TOKENS:
            forms.add(_FORM_TOKENS[tok])
        elif tok in _NOT_PCIE_TOKENS or re.fullmatch(r"hbm\d?e?", tok):
            not_pcie = not_pcie or tok in _NOT_PCIE_TOKENS
        else:
            kept.append(tok)
    stem = "".join(kept)
    if stem not in _STEMS:
        glued = _GLUED_FORM_RE.match(stem)
        if glued and glued.group("stem") in _STEMS:
            stem = glued.group("stem")
            forms.add(_FORM_TOKENS.get(glued.group("form"), glued.group("form")))
    return stem, name_memory, forms, not_pcie


def _relative_gap(memory: float, catalog_memory: Iterable[float | None]) -> float:
    values = [m for m in catalog_memory if m]
    return min(abs(memory - m) / m for m in values) if values else math.inf


def explain_match(name: str, memory_gib: float | None, catalog: GpuCatalog) -> GpuMatch:
    """Match a provider GPU spelling to a catalog id, saying which assumption was made (if any).

    ``memory_gib`` is the memory of one GPU in GiB, or in MiB (values above 1024 are MiB);
    a memory figure written in the name (``A100-80GB``) takes precedence over it.
    """
    shown = name.strip()
    stem, name_memory, forms, not_pcie = _normalise(name)
    target = _STEMS.get(stem)
    if target is None:
        return GpuMatch(None, f"'{shown}' is not a GPU this catalog knows")
    memory = gib_from_gib_or_mib(memory_gib)
    if name_memory is not None and stem not in _IGNORE_NAME_MEMORY:
        memory = name_memory
    marked = "/".join(sorted(forms)).upper()
    if not target.startswith("family:"):
        gpu = catalog.gpus.get(target)
        if gpu is None:
            return GpuMatch(None, f"'{shown}' is {target}, which this catalog does not hold")
        if forms and gpu.form_factor and gpu.form_factor not in forms:
            return GpuMatch(
                None, f"'{shown}' is marked {marked}; the catalog's {target} is {gpu.form_factor.upper()}"
            )
        sliced = memory is not None and memory < SLICE_FRACTION * gpu.memory_gib_usable
        if sliced and stem not in _IGNORE_NAME_MEMORY:
            return GpuMatch(
                None,
                f"'{shown}' with {memory:g} GiB is a slice of {target} "
                f"({gpu.memory_gib_usable:g} GiB), not a whole GPU",
                by_memory=True,
            )
        return GpuMatch(target)
    family = target.split(":", 1)[1]
    candidates = [catalog.gpus[i] for i in _FAMILIES[family] if i in catalog.gpus]
    if not candidates:
        return GpuMatch(None, f"'{shown}' is an {family.upper()}, which this catalog does not hold")
    if forms:
        candidates = [g for g in candidates if g.form_factor in forms]
        if not candidates:
            return GpuMatch(
                None, f"'{shown}' is marked {marked}; the catalog has no such {family.upper()} row"
            )
    if not_pcie:
        candidates = [g for g in candidates if g.form_factor != "pcie"] or candidates
    if memory is not None:
        gaps = [(_relative_gap(memory, (g.memory_gb, g.memory_gib_usable)), g) for g in candidates]
        best = min(gap for gap, _ in gaps)
        if best > MEMORY_TOLERANCE:
            return GpuMatch(
                None,
                f"'{shown}' with {memory:g} GiB matches no {family.upper()} row of the catalog",
                by_memory=True,
            )
        candidates = [g for gap, g in gaps if gap <= best + 1e-9]
    note = ""
    if len(candidates) > 1:
        missing = [
            what for what, absent in (("memory", memory is None), ("form factor", not forms)) if absent
        ]
        reason = (
            _DEFAULT_REASONS[family] if memory is None else "the SXM part is assumed without a form factor"
        )
        note = f"'{shown}' gives no {' or '.join(missing)}: assumed {candidates[0].id} ({reason})"
    return GpuMatch(candidates[0].id, note)


def match_gpu(name: str, memory_gib: float | None, catalog: GpuCatalog) -> str | None:
    """The catalog id for a provider GPU spelling (``A100-SXM4-80GB``, ``RTX_A6000``), or None.

    ``memory_gib`` is the memory of one GPU in GiB or MiB (values above 1024 are MiB). See
    :func:`explain_match` for the assumption made when memory or form factor is missing.
    """
    return explain_match(name, memory_gib, catalog).gpu_id
