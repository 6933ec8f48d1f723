"""The speed model's constants: the global ones, each engine's fitted factors, the kernel
families, the serving stacks' per-request times and the 80% ranges, as one immutable value
(:class:`SpeedConstants`) that an estimate is computed with.

The engines' facts that no fit moves live in their records (:mod:`.engines`), the kernel families'
priors in :mod:`.kernels`. The constants come in three groups:

1. **Per engine** (:class:`~.engines.EngineProfile`, fitted): ``prefill_mfu``, ``layer_overhead_s``,
   ``mfu``, llama.cpp's ``bandwidth_efficiency`` and per-architecture multipliers, each engine's
   80% range; and each serving stack's per-request time.
2. **Per kernel family** (:class:`~.kernels.KernelFamily`): how well the family's GEMV streams the
   quantized weights at batch 1, the extra kernels it launches per linear layer, the bytes a
   dequantized 16-bit copy costs once a batch is too large for the GEMV kernel, and the share of
   16-bit tensor throughput its GEMM reaches.
3. **Global** (:class:`SpeedConstants`): launch times per kernel (CPU side for Python and C++
   runtimes, GPU side), the GEMM-shape half-saturation sizes, the attention-kernel efficiency,
   the FP8 GEMM factor, the GEMM ceiling and the streaming ceiling per GPU generation, the
   mixture-of-experts kernels; the serving figures' 80% ranges; llama.cpp's host stream.

:data:`PRIORS` holds the documented priors (datasheet-level facts, kernel counts read from the
engines' code, published kernel benchmarks; ``docs/estimation.md`` lists each with its source).
:func:`shipped_constants` holds the values in use: the priors with the fitted values of
``fitted_constants.json`` (this folder) in place. That file is data the fit writes (``make fit``,
:mod:`gpuadvisor.validation.fit`) with the rows each value rests on, the priors it started from
and a hash of the data it read; ``make fit-check`` refuses it when the data changed since or a
value was edited by hand. Nothing changes the constants in force: an estimate takes them as an
argument (the shipped ones when none is given), and a fit or a held-out fold builds its own.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from importlib import resources
from types import MappingProxyType
from typing import Any

from ..errors import InputError
from .engines import (
    PROFILES,
    RECORDS,
    RELEASE_LINES,
    EngineKind,
    EngineProfile,
    default_engine,
    engine_lineage,
    with_release_lines,
)
from .kernels import KERNEL_FAMILIES, KernelFamily

#: What the low and high figures of every speed, time and cost range mean.
RANGE_LABEL = "80% range"
RANGE_COVERAGE = 0.8
#: The key of the per-request time of a stack without a fit of its own.
EVERY_STACK = "*"
#: The serving figures with a range of their own.
SERVING_FIGURES = ("tokens_per_s", "ttft", "itl")


@dataclass(frozen=True, slots=True)
class LlamaCppModel:
    """llama.cpp's own speed model: prompt processing (pp) and token generation (tg) apart.

    Generation streams every weight once per token at the llama.cpp profile's
    ``bandwidth_efficiency`` of the memory bandwidth (GGUF blocks included: the MMVQ kernels read
    them at the same rate as 16-bit weights) plus a fixed cost per layer and token
    (``layer_overhead_s``: kernel launches and small ops, cut by CUDA graphs, llama.cpp's default
    for single-sequence decode on CUDA since mid-2024); prompt processing reaches
    ``prefill_mfu`` of the FP16 peak, or of the INT8 tensor peak when quantized weights run on
    llama.cpp's MMQ kernels (NVIDIA). Metal and CUDA kernels differ, so the profile carries a
    multiplier per architecture (``layer_overhead_by_arch``, ``prefill_mfu_by_arch``; ``cuda_graphs``
    for decode replayed from CUDA graphs, ``int8`` for prefill on the INT8 peak). Those six factors
    are fitted by the validation harness (``make fit``; refitted with each source held out by
    ``scripts/validate.py --out-of-sample``) to the published llama-bench rows of
    tests/data/validation. This class holds the rest: the host stream of a split (fitted too) and
    what is not fitted; see docs/estimation.md, "llama.cpp".
    """

    decode_mfu: float = 0.3
    prefill_chunk_tokens: int = 512  # llama.cpp's default batch (-b / -ub 512)
    #: Share of the host memory's datasheet bandwidth that the CPU's dot products stream the layers
    #: kept off the GPU at (partial offload, ``-ngl`` below the layer count). Fitted (``make fit``)
    #: to the scored partial-offload rows of tests/data/validation (held out one source at a time
    #: it misses by a median 32%: machines differ, see docs/estimation.md, "Partial offload"). The
    #: prior is the GPU's stream, 0.93.
    host_stream_efficiency: float = 0.93
    #: The 80% range of a step with layers on the CPU (measured / estimate over the same rows, held
    #: out by source): wider than the engine's own, since the host's memory and cores vary. Fitted;
    #: the prior is the engines' common one.
    split_spread_low: float = 0.2
    split_spread_high: float = 0.2


@dataclass(frozen=True)
class SpeedConstants:
    """The speed model's constants and the engine profiles, fitted together: one immutable value an
    estimate is computed with (see the module docstring). Every mapping is read-only. The defaults
    are the documented priors; ``provenance`` says where the values come from."""

    engines: Mapping[str, EngineProfile]
    families: Mapping[str, KernelFamily] = field(default_factory=lambda: KERNEL_FAMILIES)
    #: CPU time to launch one kernel of an eager step (framework dispatch included), seconds.
    cpu_kernel_s: Mapping[str, float] = field(default_factory=lambda: {"python": 12e-6, "cpp": 4e-6})
    #: GPU-side cost of one small kernel (launch latency and tail) even inside a CUDA graph, seconds.
    gpu_kernel_s: float = 2.5e-6
    #: Host time of one decode step of an engine that replays CUDA graphs, by runtime: scheduling
    #: the batch, preparing its inputs, sampling and handing the tokens out, which a graph does not
    #: remove (the eager engines' per-layer launch time holds it). Priors: about a millisecond for
    #: a Python scheduler (vLLM's v0.6.0 post, Sept. 2024: before multi-step scheduling the GPU was
    #: busy only 38% of a Llama 3 8B step on an H100), a few tenths for a C++ runtime; fitted.
    graph_step_host_s: Mapping[str, float] = field(default_factory=lambda: {"python": 1.0e-3, "cpp": 0.3e-3})
    #: Host time of each prompt inside the engine, by runtime, which the GPU waits for: the
    #: scheduler admits it (allocates its KV blocks, builds its sequence group and the per-sequence
    #: part of the pass's inputs and attention metadata) before the prefill's kernels, and after them
    #: samples its first token, starts its incremental detokenizer on the prompt's last tokens and
    #: hands the token to its output stream. It is the prompt's counterpart of a decode step's host
    #: work (``graph_step_host_s``, ``EngineProfile.seq_host_s``), outside the prefill's kernel
    #: launches (``layer_overhead_s``, which the GPU's work hides), and in series with the GPU, which
    #: no CUDA graph spares for a prompt. Priors: a few milliseconds from Python, under one from
    #: C++ (an assumption: no public profile splits it out); fitted (docs/estimation.md, "Inference").
    prompt_host_s: Mapping[str, float] = field(default_factory=lambda: {"python": 3.0e-3, "cpp": 0.5e-3})
    #: Kernels a mixture-of-experts layer adds to a decode step (counted from vLLM's fused-MoE path:
    #: router GEMM, top-k softmax, token alignment, two grouped expert GEMMs, activation, weighted
    #: sum), each paying ``gpu_kernel_s`` (and a launch without CUDA graphs).
    moe_kernels_per_layer: float = 7.0
    #: Share of the dense kernels' throughput (weight streaming and FLOPs alike) that a
    #: mixture-of-experts layer's expert kernels reach in serving: grouped GEMMs over many small
    #: per-expert shapes, with the tokens permuted to their experts and the outputs gathered back.
    #: The TensorRT-LLM team describes the routed experts of a tensor-parallel MoE at tens to a few
    #: hundred tokens as memory-bound yet paying for small per-expert shapes, expert scheduling,
    #: input permutation and output accumulation ("MoE as Dense GEMM", TensorRT-LLM tech blog 24).
    #: Prior 0.7 (an assumption: no published share of the dense stream); fitted on the MoE rows.
    #: Applies to the MLP share of an MoE model's blocks (``core.estimation.performance.moe_mlp_bytes``).
    moe_expert_efficiency: float = 0.7
    #: Tokens per GEMM at which a GEMM reaches half its ceiling: e = T / (T + this).
    gemm_tokens_half: float = 8.0
    #: Hidden size (per tensor-parallel rank) at which training GEMMs reach half their ceiling.
    gemm_width_half: float = 320.0
    #: Share of dense peak that the attention kernel (FlashAttention forward + backward) reaches, on Ampere.
    attention_efficiency: float = 0.5
    #: The same on other generations where a published figure exists (else scaled by the GEMM ceiling):
    #: FlashAttention-2 on H100 SXM reaches about a third of the BF16 peak in forward + backward
    #: (Shah et al. 2024, FlashAttention-3, figures 5-6, the FlashAttention-2 baseline).
    attention_efficiency_by_arch: Mapping[str, float] = field(default_factory=lambda: {"hopper": 0.33})
    #: Share of the BF16 GEMM efficiency that a large FP8 GEMM itself reaches, before its casts
    #: (``core.estimation.performance.fp8_gemm_share`` adds them by GEMM width and GPU): 1, the
    #: same share of its peak as a BF16 GEMM (an assumption; docs/estimation.md, "FP8 GEMMs").
    fp8_gemm_factor: float = 1.0
    #: Bytes moved per element of a training GEMM's input and output gradient to cast it to FP8:
    #: the 16-bit tensor read (2), its FP8 copy and the transposed FP8 copy the other pass needs
    #: written (1 + 1). See :func:`~gpuadvisor.core.estimation.performance.fp8_gemm_share`.
    fp8_cast_bytes: float = 4.0
    #: Share of the memory bandwidth that non-GEMM training kernels reach.
    elementwise_bandwidth_efficiency: float = 0.7
    #: Ceiling of dense GEMM throughput per GPU generation as a share of the datasheet peak.
    gemm_ceiling: Mapping[str, float] = field(default_factory=lambda: dict(GEMM_CEILING))
    #: Share of the datasheet memory bandwidth that streaming kernels reach, per GPU generation.
    bandwidth_ceiling: Mapping[str, float] = field(default_factory=lambda: dict(BANDWIDTH_CEILING))
    #: Bandwidth efficiency of decode attention (KV-cache reads) relative to weight streaming.
    kv_bandwidth_factor: float = 0.7
    #: Share of the shorter of an eager decode step's two streams (GPU work, host launches) that the
    #: other does not hide: 0 when the host always runs ahead (step = the longer stream), 1 when
    #: they alternate (step = their sum). Synchronising ops and kernels shorter than their own
    #: launch leave the GPU waiting part of the time; fitted (prior 0.5: no reason for either end).
    host_exposed_share: float = 0.5
    #: Time a serving stack adds to every request outside the model's steps (s): the HTTP request,
    #: chat template and tokenization, admission by the scheduler, detokenizing and streaming the
    #: first token. By engine (its lineage's), with :data:`EVERY_STACK` for a stack without a fit of
    #: its own. Fitted (``make fit``, see docs/estimation.md, "Per-request time"): over every scored
    #: serving row measured through an API server for the common value, over a stack's own rows
    #: for a stack with at least three first-token rows. Prior: about 50 ms, what single-client
    #: runs of vLLM measure (17-52 ms by host, GPUStack's about 47 ms); no fit reads it, each searches
    #: 0 to 200 ms.
    request_overhead_s: Mapping[str, float] = field(default_factory=lambda: {EVERY_STACK: 0.05})
    #: The 80% range of a service's figures, per figure (``tokens_per_s``, ``ttft``, ``itl``), as
    #: ``(spread_low, spread_high)`` of the ratio of measured to estimated speed (a time is
    #: inverted, so a ratio above 1 is always a faster service than estimated): the range is
    #: ``x (1 - low) .. x (1 + high)`` of a rate and ``t / (1 + high) .. t / (1 - low)`` of a time.
    #: Fitted from the leave-one-source-out residuals of the serving rows; the prior is the
    #: engines' common 20%.
    serving_spreads: Mapping[str, tuple[float, float]] = field(
        default_factory=lambda: {f: (0.2, 0.2) for f in SERVING_FIGURES}
    )
    #: llama.cpp's own speed model's constants (its host stream is fitted).
    llama_cpp: LlamaCppModel = field(default_factory=LlamaCppModel)
    provenance: str = ""

    def __post_init__(self) -> None:
        # An engine is one record (:mod:`.engines`): constants hold a (fitted) version of each
        # record, under its own id, and no engine without one.
        for eid, profile in self.engines.items():
            record = RECORDS.get(eid)
            if record is None or profile.id != eid or profile.kind != record.kind:
                raise ValueError(f"engine {eid!r} of the speed constants has no record of that id and kind")
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Mapping) and not isinstance(value, MappingProxyType):
                object.__setattr__(self, f.name, MappingProxyType(dict(value)))

    def with_engines(self, **profiles: EngineProfile) -> SpeedConstants:
        """These constants with ``profiles`` in place of (or beside) their engines'."""
        engines = dict(self.engines)
        engines.update({p.id: p for p in profiles.values()})
        return replace(self, engines=engines)

    def request_overhead_for(self, engine_id: str) -> float:
        """The fitted per-request time of the serving stack ``engine_id`` (s): its own, else the
        common one."""
        return self.request_overhead_s.get(engine_lineage(engine_id), self.request_overhead_s[EVERY_STACK])

    def has_own_request_overhead(self, engine_id: str) -> bool:
        """Whether the stack ``engine_id`` has a per-request time fitted to its own rows."""
        return engine_lineage(engine_id) in self.request_overhead_s

    def rate_range(self, value: float, figure: str) -> tuple[float, float]:
        """The 80% range of a service's rate (``figure`` a key of :attr:`serving_spreads`)."""
        low, high = self.serving_spreads[figure]
        return value * (1.0 - low), value * (1.0 + high)

    def time_range(self, value: float, figure: str) -> tuple[float, float]:
        """The 80% range of a service's time (``figure`` a key of :attr:`serving_spreads`): the
        shorter end first."""
        low, high = self.serving_spreads[figure]
        return value / (1.0 + high), value / (1.0 - low)

    def engine(self, engine_id: str | None, kind: str) -> EngineProfile:
        """The profile named ``engine_id`` (the kind's default engine when None), refused when it is
        unknown or of the other kind."""
        return engine_for(engine_id, kind, self)


#: Dense BF16/FP16 GEMM throughput reached by large cuBLAS/hipBLASLt GEMMs as a share of the
#: datasheet peak (boost clock). A100 about 290 of 312 TFLOPS; H100 SXM about 750-800 of 989
#: (the datasheet clock is not held under load); MI300X well below its 1,307 TFLOPS. The values
#: for other generations are assumptions. See docs/estimation.md.
GEMM_CEILING: Mapping[str, float] = MappingProxyType(
    {
        "ampere": 0.90,
        "hopper": 0.78,
        "blackwell": 0.75,
        "ada": 0.85,
        "volta": 0.85,
        "turing": 0.80,
        "cdna2": 0.60,
        "cdna3": 0.50,
        "cdna4": 0.50,
        "pascal": 0.80,
        "other": 0.75,
    }
)

#: Streaming bandwidth reached as a share of the datasheet figure, relative to NVIDIA HBM parts
#: (whose engines' bandwidth efficiencies are fitted). AMD CDNA parts reach a smaller share of their
#: larger datasheet bandwidth in LLM decode kernels (assumption, see docs/estimation.md).
BANDWIDTH_CEILING: Mapping[str, float] = MappingProxyType({"cdna2": 0.75, "cdna3": 0.75, "cdna4": 0.75})


#: The documented priors: every engine's record as written, the defaults above. Every fit starts
#: here (never from values fitted to the same rows).
PRIORS = SpeedConstants(
    engines=with_release_lines({p.id: p for p in PROFILES}),
    cpu_kernel_s={"python": 12e-6, "cpp": 4e-6},
    provenance="priors (docs/estimation.md): no row fitted",
)


def engine_for(engine_id: str | None, kind: str, constants: SpeedConstants | None = None) -> EngineProfile:
    """The profile named ``engine_id``, or the default one for the workload kind, in ``constants``
    (the shipped ones when None)."""
    if engine_id is None:
        engine_id = default_engine(kind)
    engines = (constants or shipped_constants()).engines
    profile = engines.get(engine_id)
    if profile is None:
        raise InputError("workload.engine", f"unknown engine; known engines: {', '.join(engines)}", engine_id)
    wanted = EngineKind.INFERENCE if kind == "inference" else EngineKind.TRAINING
    if profile.kind != wanted:
        names = ", ".join(p.id for p in engines.values() if p.kind == wanted)
        raise InputError(
            "workload.engine", f"is a {profile.kind} engine; for {kind} use one of {names}", engine_id
        )
    return profile


def kernel_family(family: str | None, weights: str, constants: SpeedConstants) -> KernelFamily | None:
    """The :class:`~.kernels.KernelFamily` that runs ``weights`` in ``constants`` (None for 16/32-bit
    weights)."""
    if family is None:
        return None
    if family == "bnb" and weights == "int8":
        family = "bnb-int8"
    return constants.families[family]


# --- the fitted values, as data -------------------------------------------------------------------
#: The file the fit writes, in this package.
FITTED_FILE = "fitted_constants.json"
FITTED_FORMAT = "gpuadvisor-fitted-constants"
FITTED_VERSION = 1


def fitted_fields(profile: EngineProfile) -> tuple[str, ...]:
    """The fields of ``profile`` a fit sets (the rest of a record is never fitted): a training
    engine's GEMM efficiency; an inference engine's prefill efficiency and host time per layer (and
    of a prompt's pass, where the record sets that apart: vLLM), and
    where the record has per-architecture multipliers (llama.cpp's own speed model) its bandwidth
    efficiency and those multipliers (the other engines' bandwidth follows the fitted ceiling of
    each GPU generation); every engine's 80% range and the words saying what it rests on."""
    if profile.kind == EngineKind.TRAINING:
        speed: tuple[str, ...] = ("mfu",)
    else:
        speed = ("prefill_mfu", "layer_overhead_s")
        if profile.prefill_layer_overhead_s is not None:
            speed += ("prefill_layer_overhead_s",)
        if profile.layer_overhead_by_arch:
            speed += ("bandwidth_efficiency", "layer_overhead_by_arch", "prefill_mfu_by_arch")
    return (*speed, "spread_low", "spread_high", "calibrated_on")


#: The global constants a fit sets (a mapping's entries are set one by one).
FITTED_GLOBALS = (
    "bandwidth_ceiling",
    "host_exposed_share",
    "gpu_kernel_s",
    "kv_bandwidth_factor",
    "gemm_tokens_half",
    "gemm_width_half",
    "graph_step_host_s",
    "prompt_host_s",
    "moe_kernels_per_layer",
    "moe_expert_efficiency",
)
#: llama.cpp's constants a fit sets.
FITTED_LLAMA_CPP = ("host_stream_efficiency", "split_spread_low", "split_spread_high")


class FittedFileError(ValueError):
    """``fitted_constants.json`` is not what the fit writes (a bug of the installation or of a hand edit)."""


def _fitted_engine(prior: EngineProfile, values: Mapping[str, Any]) -> EngineProfile:
    wanted = fitted_fields(prior)
    if sorted(values) != sorted(wanted):
        raise FittedFileError(f"{FITTED_FILE}: engine {prior.id} must set exactly {', '.join(wanted)}")
    change: dict[str, Any] = {}
    for name, value in values.items():
        if name.endswith("_by_arch"):
            arches = dict(getattr(prior, name))
            if set(value) != set(arches):
                raise FittedFileError(
                    f"{FITTED_FILE}: engine {prior.id}: {name} must set {', '.join(arches)}"
                )
            change[name] = tuple((arch, float(value[arch])) for arch in arches)
        elif name == "calibrated_on":
            change[name] = str(value)
        else:
            change[name] = float(value)
    return replace(prior, **change)


def constants_from_values(values: Mapping[str, Any], provenance: str = "") -> SpeedConstants:
    """:data:`PRIORS` with the fitted ``values`` (the ``values`` object of ``fitted_constants.json``)
    in place. Every engine of the records (release lines are derived) must be in it and nothing
    else: a file that misses one is refused, never filled with a default."""
    engines = values["engines"]
    bases = [p.id for p in PROFILES]
    if sorted(engines) != sorted(bases):
        raise FittedFileError(
            f"{FITTED_FILE}: engines must be exactly {', '.join(bases)}; got {', '.join(engines)}"
        )
    profiles = {p.id: _fitted_engine(p, engines[p.id]) for p in PROFILES}
    g = values["globals"]
    if sorted(g) != sorted(FITTED_GLOBALS):
        raise FittedFileError(f"{FITTED_FILE}: globals must be exactly {', '.join(FITTED_GLOBALS)}")
    change: dict[str, Any] = {}
    for name in FITTED_GLOBALS:
        prior = getattr(PRIORS, name)
        change[name] = {**prior, **g[name]} if isinstance(prior, Mapping) else float(g[name])
    families = {k: replace(f, **values["families"].get(k, {})) for k, f in KERNEL_FAMILIES.items()}
    spreads = {f: (float(lo), float(hi)) for f, (lo, hi) in values["serving_spreads"].items()}
    if sorted(spreads) != sorted(SERVING_FIGURES):
        raise FittedFileError(f"{FITTED_FILE}: serving_spreads must be exactly {', '.join(SERVING_FIGURES)}")
    overheads = {k: float(v) for k, v in values["request_overhead_s"].items()}
    if EVERY_STACK not in overheads or not set(overheads) <= {EVERY_STACK, *bases} - set(RELEASE_LINES):
        raise FittedFileError(f"{FITTED_FILE}: request_overhead_s needs {EVERY_STACK!r} and engine ids only")
    llama = values["llama_cpp"]
    if sorted(llama) != sorted(FITTED_LLAMA_CPP):
        raise FittedFileError(f"{FITTED_FILE}: llama_cpp must be exactly {', '.join(FITTED_LLAMA_CPP)}")
    return replace(
        PRIORS,
        engines=with_release_lines(profiles),
        families=families,
        request_overhead_s=overheads,
        serving_spreads=spreads,
        llama_cpp=replace(
            PRIORS.llama_cpp,
            host_stream_efficiency=float(llama["host_stream_efficiency"]),
            split_spread_low=float(llama["split_spread_low"]),
            split_spread_high=float(llama["split_spread_high"]),
        ),
        provenance=provenance,
        **change,
    )


def read_fitted_file() -> dict[str, Any]:
    """The fitted file as shipped in this package (its whole JSON object)."""
    text = resources.files(__package__).joinpath(FITTED_FILE).read_text(encoding="utf-8")
    data = json.loads(text)
    if not isinstance(data, dict) or data.get("format") != FITTED_FORMAT:
        raise FittedFileError(f"{FITTED_FILE}: not a {FITTED_FORMAT} file")
    if data.get("version") != FITTED_VERSION:
        raise FittedFileError(
            f"{FITTED_FILE}: version {data.get('version')!r}, this program reads {FITTED_VERSION}"
        )
    return data


@functools.cache
def shipped_constants() -> SpeedConstants:
    """The constants in use: :data:`PRIORS` with the values of ``fitted_constants.json`` (read once,
    on first use)."""
    data = read_fitted_file()
    return constants_from_values(data["values"], str(data.get("provenance", "")))
