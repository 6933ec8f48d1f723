"""The result types: what :func:`~gpuadvisor.core.estimation.estimate.estimate` returns and what it takes in.

:class:`Estimate` holds every :class:`Candidate` (one GPU type x count x parallelism) of one scenario,
the ranking and the :class:`Change` remedies of :mod:`~gpuadvisor.core.estimation.advice`, and the
:class:`FactorFit` values of a :class:`CalibrationProfile` (:mod:`~gpuadvisor.core.estimation.calibration`)
that were applied. Apart in their own module so that the estimate, the advice and the calibration
all use them without importing each other in a circle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..formats.scenario import Scenario
from ..formatting import fmt_gib_unit, fmt_hours, fmt_usd
from ..specs.constants import SpeedConstants, shipped_constants
from ..specs.hardware import GpuSpec
from ..specs.instances import InstanceCatalog, InstanceOffer, offers_for
from ..specs.models import ModelSpec
from ..specs.workload import RuntimeOverhead
from ..units import GIB
from .cost import CostEstimate
from .layout import Layout, plain_layout
from .memory import MemoryBreakdown, MemoryModel
from .performance import PerformanceEstimate, Range
from .serving import ServingEstimate

#: Memory utilization above this is too tight for a long job (allocator spikes, longer samples).
TIGHT_UTILIZATION = 0.95


@dataclass(frozen=True, slots=True)
class Change:
    """One remedy and what it buys."""

    change: str
    why: str
    candidate: str | None
    memory_per_gpu_gib: float | None
    job_hours: float | None
    cost_usd: float | None
    fits: bool
    #: The GPU of ``candidate`` (id and name): "any GPU of the catalog" may land on one not compared.
    gpu_id: str | None = None
    gpu_name: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "change": self.change,
            "why": self.why,
            "candidate": self.candidate,
            "memory_per_gpu_gib": None
            if self.memory_per_gpu_gib is None
            else round(self.memory_per_gpu_gib, 2),
            "job_hours": None if self.job_hours is None else round(self.job_hours, 3),
            "cost_usd": None if self.cost_usd is None else round(self.cost_usd, 2),
            "fits": self.fits,
        }

    def __str__(self) -> str:
        if not self.fits or self.candidate is None:
            return f"{self.change}: still does not fit any GPU considered."
        parts = [f"{self.change} -> {self.candidate}", f"{fmt_gib_unit(self.memory_per_gpu_gib)} per GPU"]
        if self.job_hours is not None:
            parts.append(fmt_hours(self.job_hours))
        if self.cost_usd is not None:
            parts.append(fmt_usd(self.cost_usd))
        return ", ".join(parts) + f" ({self.why})"


@dataclass(frozen=True, slots=True)
class FactorFit:
    """One fitted factor for one GPU and engine, with the errors it leaves."""

    gpu_id: str
    engine: str
    factor_name: str
    value: float
    n_measurements: int
    error_before_pct: float | None  # median |predicted / measured - 1| with the engine profile
    error_after_pct: float | None  # the same with the fitted value
    measurement_ids: tuple[str, ...]
    note: str = ""


@dataclass(frozen=True, slots=True)
class CalibrationProfile:
    """Fitted factors per (GPU, engine), when they were fitted, and the measurements left out."""

    fits: tuple[FactorFit, ...]
    created: str  # ISO date
    note: str = ""
    skipped: tuple[tuple[str, str], ...] = ()  # (measurement id, why it was not used)

    def fits_for(self, gpu_id: str, engine: str) -> tuple[FactorFit, ...]:
        return tuple(f for f in self.fits if f.gpu_id == gpu_id and f.engine == engine)

    def summary(self) -> str:
        """A few lines of text for a dialog or the CLI."""
        lines = [
            (
                f"Calibration of {self.created}: {len(self.fits)} factors fitted, "
                f"{len({m for m, _ in self.skipped})} measurements not used."
            )
        ]
        for f in self.fits:
            before = "n/a" if f.error_before_pct is None else f"{f.error_before_pct:.1f}%"
            after = "n/a" if f.error_after_pct is None else f"{f.error_after_pct:.1f}%"
            lines.append(
                f"  {f.gpu_id} / {f.engine}: {f.factor_name} = {f.value:.4g} from "
                f"{f.n_measurements} measurements (median error {before} -> {after})"
                + (f"; {f.note}" if f.note else "")
            )
        for mid, why in self.skipped:
            lines.append(f"  {mid}: {why}")
        return "\n".join(lines)


class Candidate(NamedTuple):
    """One way to run the scenario: ``gpu_count`` x ``gpu`` combined by ``parallelism``.

    Immutable like the other results; a named tuple because a whole-catalog comparison builds
    hundreds of them per keystroke and a frozen dataclass costs ten times more to construct.
    """

    gpu: GpuSpec
    gpu_count: int
    parallelism: str
    memory: MemoryBreakdown
    capacity_gib: float
    fits: bool
    headroom_gib: float
    utilization: float
    warnings: tuple[str, ...] = ()
    performance: PerformanceEstimate | None = None  # None when it does not fit
    cost: CostEstimate | None = None
    pareto: bool = False
    under_provisioned: bool = False
    over_provisioned: bool = False
    serving: ServingEstimate | None = None  # the fleet for workload.serving (None otherwise)
    #: How the job is laid out (None only for candidates built by hand: see :attr:`the_layout`).
    layout: Layout | None = None
    #: Host RAM per node the setup needs (offloaded state, layers kept in host memory), GiB.
    host_memory_gib: float = 0.0
    #: Why it does not fit when the GPU memory is not the reason (host memory), else "".
    misfit: str = ""
    #: Layers on the GPU when fewer than all (llama.cpp ``-ngl``: the rest run on the CPU from host
    #: RAM), whether offered by the advisor or set by ``workload.gpu_layers``; None: all of them.
    gpu_layers: int | None = None

    @property
    def the_layout(self) -> Layout:
        """The layout, derived from the one-word setup when the candidate carries none."""
        if self.layout is not None:
            return self.layout
        return plain_layout(self.gpu_count, self.parallelism)

    @property
    def layout_name(self) -> str:
        """The short human name of the layout ("TP8 · PP4 · DP32 · selective recompute")."""
        return self.the_layout.name

    @property
    def setup_label(self) -> str:
        """The setup in tables and charts: the one-word parallelism (``ddp``, ``tensor``), or the
        layout's name for a laid-out job (``TP8 SP · PP4 · DP2 ZeRO-1``)."""
        lay = self.layout
        if lay is None or lay.shorthand:
            return self.parallelism
        return lay.name

    @property
    def key(self) -> str:
        lay = self.layout
        if lay is None or lay.shorthand:
            return f"{self.gpu_count}x {self.gpu.id} ({self.parallelism})"
        return f"{self.gpu_count}x {self.gpu.id} ({lay.name})"

    @property
    def verdict(self) -> str:
        """``fits``, ``tight`` (above 95% of capacity) or ``does not fit``."""
        if not self.fits:
            return "does not fit"
        return "tight" if self.utilization > TIGHT_UTILIZATION else "fits"

    @property
    def fit_kind(self) -> str:
        """``full`` (every layer on the GPU), ``partial`` (some in host RAM) or ``no``."""
        if not self.fits:
            return "no"
        return "full" if self.gpu_layers is None else "partial"


@dataclass(frozen=True, slots=True)
class Session:
    """One person's interactive session on the machine they own (:attr:`Estimate.session`): how fast
    the answer comes, how long a prompt it can read and what memory is left."""

    tokens_per_s: float  # generation speed of the one sequence
    prompt_tokens: int
    prompt_s: float  # time to read a prompt of ``prompt_tokens`` (the first token's wait)
    prefill_tokens_per_s: float
    max_context_tokens: int  # the longest context that fits, at most the model's own
    memory_left_gib: float  # the card's capacity less what the session needs
    gpu_layers: int  # layers on the GPU (``num_layers`` when all)
    num_layers: int
    host_memory_gib: float  # host RAM the layers kept off the GPU need

    def to_dict(self) -> dict[str, Any]:
        return {
            "tokens_per_s": round(self.tokens_per_s, 2),
            "prompt_tokens": self.prompt_tokens,
            "prompt_s": round(self.prompt_s, 3),
            "prefill_tokens_per_s": round(self.prefill_tokens_per_s, 1),
            "max_context_tokens": self.max_context_tokens,
            "memory_left_gib": round(self.memory_left_gib, 3),
            "gpu_layers": self.gpu_layers,
            "num_layers": self.num_layers,
            "host_memory_gib": round(self.host_memory_gib, 3),
        }


@dataclass(frozen=True, slots=True)
class WhatIf:
    """The largest batch and the longest context that fit on one GPU type at a given setup."""

    gpu_id: str
    gpu_count: int
    parallelism: str
    max_batch: int
    max_context: int
    layout_name: str = ""


@dataclass(frozen=True, slots=True)
class Decision:
    """Which setup to choose, and one best setup per GPU type in the order to show them."""

    #: Candidate key of the recommended setup; None when nothing fits or nothing meets the limits.
    recommended_key: str | None
    #: The best setup of another GPU type that also meets (or likely meets) the limits.
    runner_up_key: str | None
    #: One candidate key per GPU type, best first (the rows of the ranking and the report table).
    per_gpu_keys: tuple[str, ...]
    #: "sure", "likely", "limits missed" or "nothing fits".
    status: str
    #: The cheapest setup of all, when the recommendation costs the same (within 1%) and is faster.
    same_cost_as_key: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "recommended": self.recommended_key,
            "runner_up": self.runner_up_key,
            "status": self.status,
            "per_gpu": list(self.per_gpu_keys),
            "same_cost_as": self.same_cost_as_key,
        }


@dataclass(frozen=True, slots=True)
class Estimate:
    """Everything the views show for one scenario."""

    scenario: Scenario
    model: ModelSpec
    candidates: tuple[Candidate, ...]
    memory_model: MemoryModel
    warnings: tuple[str, ...] = ()
    ranking: tuple[Candidate, ...] = ()
    advice: tuple[Change, ...] = ()
    engine: str = ""
    gpu_ids: tuple[str, ...] = ()  # the GPUs the comparison was restricted to (empty: whole catalog)
    #: The calibration profile passed to :func:`estimate` (None: calibration off).
    calibration: CalibrationProfile | None = None
    #: The fitted values that were applied, per GPU (after the scenario's own settings won).
    calibration_fits: tuple[FactorFit, ...] = ()
    #: Which setup to choose and one best setup per GPU type, in order (see :mod:`.recommendation`).
    decision: Decision | None = None
    #: The cloud instance snapshot: where each setup can be rented (see :meth:`instances_for`).
    instances: InstanceCatalog | None = None
    #: The speed model's constants the estimate was computed with (the engine profiles, the 80%
    #: ranges, ...): what the views and the report state about them is read here.
    constants: SpeedConstants | None = None
    #: Whether the GPUs compared are the machine the user owns (a laptop, desktop or Mac): its count
    #: is the one the user has, never replicated (docs/estimation.md, "The machine you own").
    own_machine: bool = False
    #: Whether the answer is an interactive session on that machine (inference without traffic
    #: targets or a number of requests): no job to time or price; the figures of :meth:`session_of`.
    session: bool = False
    #: One GPU type compared for inference: the scenario once per weight type the engine runs
    #: (:mod:`.weights_table`); () otherwise.
    weights_table: tuple[Any, ...] = ()
    #: Filled on first use by :meth:`best_per_gpu` and :meth:`candidate` (the views ask for them
    #: several times per update); not part of the value.
    _memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def speed_constants(self) -> SpeedConstants:
        """The constants the estimate was computed with (the shipped ones for a bare Estimate)."""
        return self.constants if self.constants is not None else shipped_constants()

    def best_per_gpu(self) -> dict[str, Candidate]:
        """For each GPU type its best setup (see :mod:`.recommendation`), best GPU type first.

        Returns a new dict each call (computed once per estimate)."""
        best = self._memo.get("best")
        if best is None:
            best = {}
            if self.decision is not None:  # every estimate() result has one (see .recommendation)
                for key in self.decision.per_gpu_keys:
                    c = self.candidate(key)
                    if c is not None:
                        best[c.gpu.id] = c
            else:  # a bare Estimate: each GPU's first setup that fits, else its closest
                for c in sorted(self.candidates, key=lambda c: (not c.fits, c.gpu_count, c.utilization)):
                    best.setdefault(c.gpu.id, c)
            self._memo["best"] = best
        return dict(best)

    @property
    def recommended(self) -> Candidate | None:
        """The recommended setup (None when nothing fits or nothing meets the limits)."""
        key = self.decision.recommended_key if self.decision is not None else None
        return self.candidate(key) if key else None

    @property
    def lead(self) -> Candidate | None:
        """The setup a view shows first: the recommended one, else the decision's first setup (the
        closest to the limits or the targets); None when nothing fits. The window selects it, so its
        chart and detail panel open on the setup the summary names."""
        rec = self.recommended
        if rec is not None:
            return rec
        return next((c for c in self.best_per_gpu().values() if c.fits), None)

    def instances_for(self, c: Candidate) -> tuple[InstanceOffer, ...]:
        """The instances that rent ``c`` (one replica of a service), cheapest first, of the providers
        the budget rents from (any without a choice); computed on first use."""
        if self.instances is None:
            return ()
        key = ("inst", c.gpu.id, c.gpu_count)
        got = self._memo.get(key)
        if got is None:
            providers = self.scenario.budget.providers
            node = self.scenario.hardware.gpus_per_node
            got = self._memo[key] = offers_for(self.instances, c.gpu.id, c.gpu_count, providers, node)
        return got

    def candidate(self, key: str) -> Candidate | None:
        """The candidate with this :attr:`Candidate.key`, or ``None``."""
        index = self._memo.get("index")
        if index is None:
            index = self._memo["index"] = {c.key: c for c in self.candidates}
        return index.get(key)

    def serving_of(self, c: Candidate, simulate: bool = True) -> ServingEstimate | None:
        """``c``'s fleet with its figures at the load (``at_load``, ``status``): each GPU type's
        leading fleet was simulated by :func:`~.estimate.estimate`; the others are, all at once,
        the first time one of them is asked for (the CLI's JSON, the PDF). ``simulate=False``:
        only what is simulated already (the window's list of every setup, drawn on the GUI thread)."""
        if c.serving is None or c.serving.at_load is not None:
            return c.serving
        done: dict[str, ServingEstimate] | None = self._memo.get("at_load")
        if done is None and not simulate:
            return c.serving
        if done is None:
            from .serving_load import ensure_at_load

            waiting = [x for x in self.candidates if x.serving is not None and x.serving.at_load is None]
            fleets: list[ServingEstimate] = ensure_at_load(
                [x.serving for x in waiting],  # type: ignore[misc]
                self.scenario.workload,
            )
            done = self._memo["at_load"] = {x.key: f for x, f in zip(waiting, fleets)}
        return done.get(c.key, c.serving)

    def chart_fleets(self, selected: str | None = None, most: int = 4) -> tuple[str, ...]:
        """The fleets a serving chart draws: the selected one, then each GPU type's best fleet in
        the decision's order, one per GPU type, at most ``most``."""
        if self.scenario.workload.serving is None:
            return ()
        keys: list[str] = []
        gpus: set[str] = set()
        sel = self.candidate(selected) if selected else None
        if sel is not None and sel.serving is not None:
            keys.append(sel.key)
            gpus.add(sel.gpu.id)
        for c in self.best_per_gpu().values():
            if len(keys) >= most:
                break
            if c.serving is not None and c.gpu.id not in gpus:
                keys.append(c.key)
                gpus.add(c.gpu.id)
        return tuple(keys)

    def load_curves(self, keys: tuple[str, ...]) -> tuple[Any, ...]:
        """The latency-against-load curves (:class:`.serving_load.LoadCurve`) of these candidates'
        fleets, computed on first use and remembered."""
        memo = self._memo.setdefault("load_curves", {})
        missing = tuple(k for k in keys if k not in memo)
        if missing:
            from .serving_load import load_curves

            keyed = []
            for k in missing:
                c = self.candidate(k)
                fleet = self.serving_of(c) if c is not None else None
                if fleet is not None and fleet.plan is not None:
                    keyed.append((k, fleet))
            for curve in load_curves(keyed, self.scenario.workload):
                memo[curve.key] = curve
        return tuple(memo[k] for k in keys if k in memo)

    @property
    def calibrated_gpus(self) -> tuple[str, ...]:
        """Ids of the GPUs whose figures use calibrated values, in catalog order."""
        return tuple(dict.fromkeys(f.gpu_id for f in self.calibration_fits))

    def is_calibrated(self, gpu_id: str) -> bool:
        """Whether this GPU's figures use calibrated values."""
        return gpu_id in self.calibrated_gpus

    def memory_model_of(self, candidate: Candidate) -> MemoryModel:
        """The memory model of this candidate: its GPU's calibrated runtime overhead, and its layers
        on the GPU when fewer than all."""
        mm = self._memory_model_for(candidate.gpu.id) if self.calibration_fits else self.memory_model
        g = candidate.gpu_layers
        if g is None or g == mm.workload.gpu_layers:
            return mm
        key = ("layers", id(mm), g)
        found = self._memo.get(key)
        if found is None:
            from .offload import with_gpu_layers

            found = self._memo[key] = with_gpu_layers(mm, g)
        return found

    def tokens_per_s(self, candidate: Candidate) -> Range | None:
        """The one tokens/s figure of this candidate that every view shows: in a session the speed
        of generation (one sequence's decode); otherwise the output (or trained) tokens per second
        of the whole job. With its 80% range; None without a speed."""
        perf = candidate.performance
        if perf is None:
            return None
        if self.session and perf.tokens_per_s_per_user:
            rate = perf.tokens_per_s_per_user
            whole = perf.tokens_per_s
            if whole.expected <= 0:
                return Range(rate, rate, rate)
            return Range(rate * whole.low / whole.expected, rate, rate * whole.high / whole.expected)
        return perf.tokens_per_s

    def session_of(self, candidate: Candidate) -> Session | None:
        """The session figures of this candidate (None outside a session or without a speed)."""
        perf = candidate.performance
        if not self.session or perf is None or not perf.tokens_per_s_per_user:
            return None
        w = self.scenario.workload
        prefill = perf.prefill_tokens_per_s or 0.0
        wi = self.what_if(candidate)
        layers = self.model.num_layers
        return Session(
            tokens_per_s=perf.tokens_per_s_per_user,
            prompt_tokens=w.prompt_tokens,
            prompt_s=perf.time_to_first_token_s or (w.prompt_tokens / prefill if prefill else 0.0),
            prefill_tokens_per_s=prefill,
            max_context_tokens=wi.max_context,
            memory_left_gib=candidate.headroom_gib,
            gpu_layers=layers if candidate.gpu_layers is None else candidate.gpu_layers,
            num_layers=layers,
            host_memory_gib=candidate.host_memory_gib,
        )

    def _memory_model_for(self, gpu_id: str) -> MemoryModel:
        """The memory model with this GPU's calibrated runtime overhead (the shared one otherwise)."""
        overhead = next(
            (
                f.value
                for f in self.calibration_fits
                if f.gpu_id == gpu_id and f.factor_name == "runtime_overhead_gib"
            ),
            None,
        )
        if overhead is None:
            return self.memory_model
        key = ("mm", overhead)
        mm = self._memo.get(key)
        if mm is None:
            base = self.memory_model
            mm = self._memo[key] = MemoryModel(
                base.model,
                base.workload,
                _calibrated_overhead(overhead),
                prefill_chunk_tokens=base.prefill_chunk_tokens,
            )
        return mm

    def what_if(self, candidate: Candidate) -> WhatIf:
        """Largest batch and longest context that fit for this candidate's GPU and setup (the context
        no longer than the model's maximum: a Mac's large memory must not promise more)."""
        cap = candidate.capacity_gib * GIB
        mm = self.memory_model_of(candidate)
        lay = candidate.layout
        return WhatIf(
            gpu_id=candidate.gpu.id,
            gpu_count=candidate.gpu_count,
            parallelism=candidate.parallelism,
            max_batch=mm.max_batch(cap, candidate.gpu_count, candidate.parallelism, layout=lay),
            max_context=min(
                mm.max_context(cap, candidate.gpu_count, candidate.parallelism, layout=lay),
                mm.model.max_context,
            ),
            layout_name=candidate.layout_name,
        )

    def layout_alternatives(self, candidate: Candidate) -> tuple[Candidate, ...]:
        """The other layouts of the same GPU type and count, fastest first (the search's runner-ups)."""
        same = [
            c
            for c in self.candidates
            if c.gpu.id == candidate.gpu.id and c.gpu_count == candidate.gpu_count and c.key != candidate.key
        ]
        return tuple(
            sorted(
                same,
                key=lambda c: (
                    not c.fits,
                    -(c.performance.tokens_per_s.expected if c.performance else 0.0),
                    c.memory.device_total,
                ),
            )
        )


def _calibrated_overhead(gib: float) -> RuntimeOverhead:
    """A fitted runtime overhead as a scenario overhead (the context field holds at most 64 GiB)."""
    return RuntimeOverhead(cuda_context_gib=min(gib, 64.0), fragmentation=0.0)
