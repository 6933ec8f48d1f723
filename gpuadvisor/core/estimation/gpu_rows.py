"""The stages of an estimate after the inputs are resolved: the setups (layouts and memory, shared
by every GPU) and, per GPU type, the rows of the comparison (fit, service, speed and cost).

:func:`.estimate.estimate` runs these stages in order:

1. **inputs** (:class:`Inputs`, built by :mod:`.estimate`): the model, the GPUs compared, the GPU
   counts, the engine, the memory model and the speed model's constants;
2. **setups** (:class:`Setup`, :func:`setups`): every (GPU count, layout) with its per-GPU memory
   breakdown and speed group; memory does not depend on which GPU runs the job, so this is done
   once and shared by every GPU (what keeps a whole-catalog comparison in milliseconds);
3. **per GPU** (:class:`GpuPass`): the calibration's values for that GPU, its prices, then for each
   setup whether it fits (a llama.cpp split, the host memory, a service's KV cache), its speed and
   its job cost (:class:`Row`); setups with the same speed model share one computation. The layout
   search's setups (training beyond a node) are priced from the highest speed ceiling down and
   only the fastest :data:`SEARCH_KEEP` of each count are kept (branch and bound);
4. **decide** (:mod:`.estimate`): the Pareto frontier, provisioning flags, candidates, ranking,
   the decision and the cheapest changes.

Each stage hands the next typed rows (:class:`Setup`, :class:`Row`: named tuples, which are as
cheap to build as the plain tuples they replace).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from ..formats.scenario import Scenario
from ..specs.constants import SpeedConstants
from ..specs.engines import BatchDefaults, EngineProfile
from ..specs.hardware import RAM_RESERVED_GIB, GpuSpec
from ..specs.instances import InstanceCatalog, instance_price_range, offers_for
from ..specs.models import ModelSpec
from ..specs.presets import ModelCatalog
from ..specs.serving import batch_defaults, batching_for
from ..specs.workload import RuntimeOverhead
from ..units import GIB
from ..vocabulary import GATHERING_SHARDINGS, Parallelism
from . import serving as _serving
from .communication import (
    ceiling_work,
    is_legacy,
    layout_training_performance,
    speed_ceiling,
    tp_width_slowdown,
)
from .cost import BuyVsRent, CostEstimate, buy_vs_rent, job_cost, price_range
from .disaggregated import Transfer
from .layout import Layout, explicit_layout, searched_layouts
from .memory import MemoryBreakdown, MemoryModel, applicable_parallelisms, check_parallelism
from .offload import LayerSplitter, host_ram, offers_split
from .performance import (
    SPEED_GROUP,
    PerformanceEstimate,
    Range,
    TrainingPrelude,
    inference_performance,
    link,
    training_performance,
    training_prelude,
)
from .results import CalibrationProfile, FactorFit
from .serving_memory import BatchLine

#: Layouts kept per GPU type and count when the search tries many (the fastest and its runner-ups).
SEARCH_KEEP = 3

#: ``n -> (price range per GPU-hour, buy versus rent)`` of a GPU rented as whole instances.
InstancePrices = Callable[[int], tuple[Range | None, BuyVsRent | None]]


class Setup(NamedTuple):
    """One (GPU count, layout) of the comparison, the same on every GPU."""

    gpu_count: int
    layout: Layout
    breakdown: MemoryBreakdown
    #: Bytes per GPU (the breakdown's device total).
    need_bytes: float
    #: Host bytes per node (offloaded state, layers kept off the GPU).
    host_bytes: float
    #: A searched layout's sibling without recomputation (None when not searched).
    lighter: Layout | None
    parallelism: str
    #: Setups of one speed group share one speed computation.
    speed_group: Any


class Row(NamedTuple):
    """One setup on one GPU type: what :class:`~.results.Candidate` is built from."""

    gpu: GpuSpec
    gpu_count: int
    layout: Layout
    breakdown: MemoryBreakdown
    fits: bool
    utilization: float
    headroom_gib: float
    performance: PerformanceEstimate | None
    cost: CostEstimate | None
    host_bytes: float
    misfit: str
    parallelism: str
    fleet: _serving.ServingEstimate | None
    gpu_layers: int | None


_new_row = tuple.__new__


@dataclass(frozen=True, slots=True)
class Inputs:
    """What the first stage resolved from the scenario (see the module docstring)."""

    scenario: Scenario
    model: ModelSpec
    constants: SpeedConstants
    engine: EngineProfile
    mm: MemoryModel
    #: Whether the GPUs compared are the machine the user owns, and whether the job is a session.
    own_machine: bool
    session: bool
    #: llama.cpp's layer split of the model (None when the engine does not split layers).
    splitter: LayerSplitter | None
    instances: InstanceCatalog
    #: The providers whose instances the setups are rented as (None: the GPU's own price).
    rent_from: Any
    speed: bool


def count_layouts(model: ModelSpec, scenario: Scenario, mm: MemoryModel, n: int) -> tuple[list[Layout], bool]:
    """(layouts to price at ``n`` GPUs, whether they come from the search and are pruned per GPU)."""
    w, hw = scenario.workload, scenario.hardware
    if hw.layout_given:
        simple = hw.parallelism is not None and not any(
            getattr(hw, a) is not None
            for a in (
                "tensor_parallel",
                "pipeline_parallel",
                "context_parallel",
                "expert_parallel",
                "expert_tensor_parallel",
                "data_parallel_shard",
            )
        )
        if simple:
            assert hw.parallelism is not None
            check_parallelism(model, w, n, hw.parallelism)  # the errors of the one-word setups
        if n == 1 and simple:
            return [mm.layout_for(1, "none")], False
        return [explicit_layout(model, w, hw, n)], False
    if n <= hw.gpus_per_node or not w.is_training:
        pars = applicable_parallelisms(model, w, n, hw.gpus_per_node)
        if w.offload.parameters != "none" and n > 1:  # offloaded weights are gathered: ZeRO-3/FSDP
            pars = tuple(p for p in pars if p in GATHERING_SHARDINGS)
        return [mm.layout_for(n, par) for par in pars], False
    return searched_layouts(model, w, hw, n), True


def setups(inputs: Inputs, counts: tuple[int, ...]) -> list[Setup]:
    """Stage 2: every (count, layout) with its breakdown and speed group, shared by every GPU.

    The speed group: setups with the same speed model share one computation (DDP and ZeRO-1/2
    move the same gradient bytes, ZeRO-3 and FSDP the same gathers)."""
    scenario, mm = inputs.scenario, inputs.mm
    w, hw = scenario.workload, scenario.hardware
    out: list[Setup] = []
    for n in counts:
        layouts, searched = count_layouts(inputs.model, scenario, mm, n)
        per_node = min(n, hw.gpus_per_node)
        if w.serving is not None:  # replicas are the fleet's business: a candidate is one replica
            layouts = [lay for lay in layouts if lay.dp == 1 and lay.parallelism != Parallelism.DDP]
        for lay in layouts:
            bd = mm.breakdown(n, lay.parallelism, layout=lay)
            par = lay.parallelism
            group: Any
            if not w.is_training:
                group = (n, par) if lay.shorthand or lay.dp == 1 or lay.gpus == lay.dp else lay
            elif is_legacy(mm, lay):
                group = (n, SPEED_GROUP.get(par, par))
            else:
                group = lay
            # A searched layout carries its sibling without recomputation (see GpuPass).
            sibling = lay._replace(recompute="none") if searched else None
            out.append(Setup(n, lay, bd, bd.device_total, bd.host * per_node, sibling, par, group))
    return out


def split_misfit(need: float, ram: float, assumed: bool, gpu: GpuSpec, gpu_layers: int, layers: int) -> str:
    """Why a split does not fit: the layers kept off the GPU need more host RAM than there is."""
    where = (
        f"assumed for {gpu.host_defaults.machine} less {RAM_RESERVED_GIB:g} GiB for the system; "
        "set hardware.host_memory_gib"
        if assumed
        else "hardware.host_memory_gib"
    )
    return (
        f"host memory: the {layers - gpu_layers} layers kept off the GPU need {need / GIB:,.1f} GiB "
        f"of system RAM, {ram / GIB:,.1f} GiB available ({where})"
    )


def host_misfit(host: float, host_cap: float) -> str:
    """Why offloaded state does not fit the host memory the scenario states."""
    return (
        f"host memory: needs {host / GIB:,.0f} GiB per node for offloaded state, "
        f"{host_cap / GIB:,.0f} GiB available (hardware.host_memory_gib)"
    )


def instance_pricing(
    gpu: GpuSpec, budget: Any, snapshot: InstanceCatalog, providers: Any, gpus_per_node: int
) -> InstancePrices:
    """``n -> (price range per GPU-hour, buy versus rent)`` of ``gpu`` rented as the cheapest
    instances of ``providers`` (see :func:`~gpuadvisor.core.specs.instances.instance_price_range`);
    (None, None) when none of them rents it: the setup is unpriced."""
    cache: dict[int, tuple[Range | None, BuyVsRent | None]] = {}

    def at(n: int) -> tuple[Range | None, BuyVsRent | None]:
        got = cache.get(n)
        if got is None:
            offers = offers_for(snapshot, gpu.id, n, providers, gpus_per_node)
            found = instance_price_range(offers, n, str(budget.price))
            if found is None:
                got = (None, None)
            else:
                r = found[0]
                got = (Range(r.low, r.expected, r.high), buy_vs_rent(gpu, budget, r.expected))
            cache[n] = got
        return got

    return at


def disaggregation_link(mm: MemoryModel, gpu: GpuSpec, gpu_count: int, gpus_per_node: int) -> Transfer:
    """How a prompt's KV cache travels from a prefill to a decode instance of ``gpu_count`` GPUs:
    over the GPUs' own links when both fit in a node, else the network."""
    bw, latency, name = link(gpu, 2 * gpu_count, gpus_per_node)
    per_token = mm.kv_bytes_per_token_layer * mm.model.num_layers
    return Transfer(per_token, bw, latency, name)


def calibration_lookup(
    profile: CalibrationProfile, engine: str, scenario: Scenario
) -> dict[str, tuple[FactorFit, ...]]:
    """GPU id -> the profile's fits for ``engine`` that the scenario leaves to the calibration.

    Efficiencies the scenario sets itself win; a fitted runtime overhead is used only while the
    scenario keeps the default ``overhead``.
    """
    eff = scenario.efficiency
    own_overhead = scenario.overhead != RuntimeOverhead()
    out: dict[str, list[FactorFit]] = {}
    for f in profile.fits:
        if f.engine != engine:
            continue
        if f.factor_name == "runtime_overhead_gib":
            if own_overhead:
                continue
        elif getattr(eff, f.factor_name, None) is not None:
            continue
        out.setdefault(f.gpu_id, []).append(f)
    return {gpu_id: tuple(fits) for gpu_id, fits in out.items()}


@dataclass(slots=True)
class ServiceShared:
    """A service's parts built once and shared by every GPU: the roofline at batches 1, 2, 4, ...,
    the context reserved per sequence, the KV cache each setup holds per sequence, and its memory
    at the operating point (per (count, setup), a line over the concurrency)."""

    batch_mms: dict[int, MemoryModel]
    reserve: int
    kv_lines: dict[tuple[int, str], tuple[float, float, float]]
    #: A speculative proposer's memory model (a draft model's; None for EAGLE and MTP or none).
    draft_mm: MemoryModel | None = None
    op_lines: dict[tuple[int, str], BatchLine] = field(default_factory=dict)


def _service_shared(inputs: Inputs, all_setups: list[Setup], models: ModelCatalog) -> ServiceShared:
    """A service's parts shared by every GPU (:class:`ServiceShared`). A speculative proposer's
    weights and KV cache sit beside the target's (a draft model's preset; EAGLE and MTP: one
    layer)."""
    scenario, mm = inputs.scenario, inputs.mm
    w = scenario.workload
    reserve = _serving.reserved_context(w, batching_for(inputs.engine.id))
    kv_lines = {(s[0], s[6]): _serving.kv_line(mm, s[0], s[6], reserve) for s in all_setups}
    draft_mm = None
    if w.speculative is not None and w.speculative.draft_model:
        draft_w = replace(w, serving=None, speculative=None)
        draft_mm = MemoryModel(
            models.get(w.speculative.draft_model, "workload.speculative.draft_model"),
            draft_w,
            scenario.overhead,
            prefill_chunk_tokens=mm.prefill_chunk_tokens,
        )
    if w.speculative is not None:
        kv_lines = {
            (n, par): _serving.with_proposer(line, *_serving.speculative_memory(mm, draft_mm, n))
            for (n, par), line in kv_lines.items()
        }
    return ServiceShared(_serving.batch_models(mm), reserve, kv_lines, draft_mm)


@dataclass(slots=True)
class Shared:
    """What every GPU's pass shares within one estimate: the setups, the search plan, caches of
    values that do not depend on the GPU, and the notes and calibration values collected."""

    setups: list[Setup]
    single_only: list[Setup]
    #: The searched layouts by count (:func:`search_groups`), priced from the highest speed
    #: ceiling down: their order and families do not depend on the GPU.
    plan: dict[int, tuple[list[Setup], list[tuple[int, ...]], int]]
    plain_setups: list[Setup]
    host_cap: float | None
    tokens: float
    lookup: dict[str, tuple[FactorFit, ...]] | None
    service: ServiceShared | None
    #: TP width slowdown per TP size (the model's: shared by every GPU).
    slowdowns: dict[int, float] = field(default_factory=dict)
    orders: dict[tuple[int, bool], list[tuple[float, int, float]]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    applied: list[FactorFit] = field(default_factory=list)

    @classmethod
    def build(
        cls,
        inputs: Inputs,
        all_setups: list[Setup],
        tokens: float,
        calibration: CalibrationProfile | None,
        models: ModelCatalog,
    ) -> Shared:
        scenario, engine = inputs.scenario, inputs.engine
        w, hw = scenario.workload, scenario.hardware
        service = None
        if w.serving is not None and inputs.speed:
            service = _service_shared(inputs, all_setups, models)
        plan = search_groups(all_setups) if inputs.speed and w.is_training else {}
        return cls(
            setups=all_setups,
            single_only=[s for s in all_setups if s[0] == 1],
            plan=plan,
            plain_setups=[s for s in all_setups if s[5] is None] if plan else all_setups,
            host_cap=hw.host_memory_gib * GIB if hw.host_memory_gib is not None else None,
            tokens=tokens,
            lookup=calibration_lookup(calibration, engine.id, scenario) if calibration is not None else None,
            service=service,
        )


class _Calibrated(NamedTuple):
    """One GPU's efficiencies and runtime overhead after the calibration (the scenario's when none)."""

    mfu: float | None
    bw_eff: float | None
    prefill_mfu: float | None
    fixed_overhead: float | None
    setups: list[Setup]


def _calibrated(inputs: Inputs, shared: Shared, gpu: GpuSpec, gpu_setups: list[Setup]) -> _Calibrated:
    """The calibration profile's values for ``gpu`` (looked up once per GPU; recorded in
    ``shared.applied``): an efficiency, or a runtime overhead that replaces the model's in this
    GPU's own copies of the breakdowns."""
    eff = inputs.scenario.efficiency
    training = inputs.scenario.workload.is_training
    mfu, bw_eff, prefill_mfu = eff.mfu, eff.bandwidth_efficiency, eff.prefill_mfu
    fixed_overhead = None
    for f in shared.lookup.get(gpu.id, ()) if shared.lookup else ():
        if f.factor_name == "runtime_overhead_gib":
            fixed_overhead = f.value * GIB
            # The breakdowns are shared by every GPU: this GPU gets its own copies.
            gpu_setups = [
                Setup(n, lay, bd2, bd2.device_total, host, sib, par, group)
                for n, lay, bd, _need, host, sib, par, group in gpu_setups
                for bd2 in (replace(bd, overhead=f.value * GIB),)
            ]
        elif f.factor_name == "mfu":
            if not training:
                continue
            mfu = f.value
        elif training:
            continue  # bandwidth and prefill efficiencies only enter the inference model
        elif f.factor_name == "bandwidth_efficiency":
            bw_eff = f.value
        else:
            prefill_mfu = f.value
        shared.applied.append(f)
    return _Calibrated(mfu, bw_eff, prefill_mfu, fixed_overhead, gpu_setups)


class GpuPass:
    """Stage 3 for one GPU type: its rows (see the module docstring)."""

    __slots__ = (
        "inputs", "shared", "gpu", "w", "hw", "budget", "training", "serving", "speed", "session",
        "mfu", "bw_eff", "prefill_mfu", "fixed_overhead", "setups",
        "gpu_defaults", "gpu_engine", "cap_bytes", "prices", "buy", "at", "prelude", "same_speed",
        "searched_rows", "pending", "faster_fits", "shared_plan", "host_cap", "gpu_layers", "splitter",
    )  # fmt: skip

    def __init__(self, inputs: Inputs, shared: Shared, gpu: GpuSpec) -> None:
        self.inputs, self.shared, self.gpu = inputs, shared, gpu
        # Read for every setup: kept at hand.
        self.speed, self.session, self.host_cap = inputs.speed, inputs.session, shared.host_cap
        layers = inputs.scenario.workload.gpu_layers
        self.gpu_layers = layers if layers is not None and layers < inputs.mm.layers else None
        self.splitter = inputs.splitter if inputs.splitter is not None and offers_split(gpu) else None
        scenario, engine = inputs.scenario, inputs.engine
        w, hw = scenario.workload, scenario.hardware
        self.w, self.hw, self.budget = w, hw, scenario.budget
        self.training = w.is_training
        self.serving = w.serving if inputs.speed else None
        if shared.lookup:
            cal = _calibrated(inputs, shared, gpu, self._gpu_setups())
            self.mfu, self.bw_eff, self.prefill_mfu = cal.mfu, cal.bw_eff, cal.prefill_mfu
            self.fixed_overhead, self.setups = cal.fixed_overhead, cal.setups
        else:
            eff = scenario.efficiency
            self.mfu, self.bw_eff, self.prefill_mfu = eff.mfu, eff.bandwidth_efficiency, eff.prefill_mfu
            self.fixed_overhead, self.setups = None, self._gpu_setups()
        # A service's engine schedules as it starts on this GPU (vLLM's sequences and prefill chunk):
        # the defaults are looked up once per GPU, reported with each fleet and give the engine its chunk.
        self.gpu_defaults: BatchDefaults | None = (
            batch_defaults(engine.id, gpu.name, gpu.memory_gib_usable) if self.serving is not None else None
        )
        self.gpu_engine = _serving.chunked_as(engine, self.gpu_defaults)
        self.cap_bytes = gpu.memory_gib_usable * GIB
        self.prices = price_range(gpu, scenario.budget)
        self.buy = buy_vs_rent(gpu, scenario.budget, self.prices.expected if self.prices else None)
        self.at: InstancePrices | None = None
        if inputs.rent_from is not None:
            self.at = instance_pricing(
                gpu, scenario.budget, inputs.instances, inputs.rent_from, hw.gpus_per_node
            )
        self.prelude: TrainingPrelude | None = (
            training_prelude(inputs.mm, gpu, engine, self.mfu, inputs.constants)
            if self.training and inputs.speed
            else None
        )
        self.same_speed: dict[Any, tuple[PerformanceEstimate, CostEstimate | None]] = {}
        self.searched_rows: dict[int, list[Row]] = {}
        # Searched layouts that fit, priced after the plain setups from the highest speed ceiling down.
        self.pending: dict[int, list[tuple[Layout, MemoryBreakdown, float, float, str]]] = {}
        self.faster_fits: set[Layout] = set()  # searched layouts whose less-recomputing sibling fits
        self.shared_plan = bool(shared.plan) and self.setups is shared.setups  # else own breakdowns

    def _gpu_setups(self) -> list[Setup]:
        """The setups this GPU is compared in. A Mac's GPU is one chip sharing the machine's memory:
        it is not combined with others unless the scenario asks for a count. The machine a user owns
        has the GPUs it has (one unless hardware.gpu_count says more), and is never replicated to
        finish a queue sooner."""
        gpu, own, shared = self.gpu, self.inputs.own_machine, self.shared
        if (gpu.unified_memory or (own and gpu.segment == "local")) and not self.hw.gpu_count:
            return shared.single_only
        if own and gpu.segment == "local" and not self.w.is_training:
            return [s for s in shared.setups if not (s[6] == Parallelism.DDP and s[0] > 1)]
        return shared.setups

    def prices_at(self, n: int) -> tuple[Range | None, BuyVsRent | None]:
        """The price range per GPU-hour and buy versus rent of ``n`` of this GPU."""
        return self.at(n) if self.at is not None else (self.prices, self.buy)

    # --- the rows ---------------------------------------------------------------------------------
    def rows(self) -> list[Row]:
        """Every row of this GPU: the plain setups in order, then each count's searched layouts
        (the fastest that fit, else the closest to fitting).

        This loop runs for every setup of every GPU (hundreds per keystroke): what is common stays
        inline, the rest is in the methods it calls."""
        out: list[Row] = []
        gpu, cap_bytes, speed, serving, session = (
            self.gpu,
            self.cap_bytes,
            self.speed,
            self.serving,
            self.session,
        )
        check_host, splitter, same_speed = self.host_cap is not None, self.splitter, self.same_speed
        for n, lay, bd, need, host, lighter, par, group in (
            self.shared.plain_setups if self.shared_plan else self.setups
        ):
            fits = need <= cap_bytes
            gpu_layers = self.gpu_layers
            if not fits and splitter is not None and lighter is None:
                # Llama.cpp splits layers: the most that fit on the GPU, the rest in host RAM.
                split = splitter.largest(n, par, lay, cap_bytes)
                if split is not None:
                    gpu_layers, bd = split
                    need, host, fits = bd.device_total, bd.host * min(n, self.hw.gpus_per_node), True
                    group = (group, gpu_layers)
            if lighter is not None and self._left_for_search(n, lay, bd, need, host, par, lighter, fits):
                continue
            misfit = self._misfit(host, gpu_layers) if check_host or gpu_layers is not None else ""
            fits = fits and not misfit
            perf = cost = fleet = None
            if fits and serving is not None:
                fleet = self._fleet(n, par)
                fits = fleet is not None and fleet.memory is not None
                if fleet is not None and fleet.memory is not None:
                    bd = fleet.memory.breakdown
                    need = bd.device_total
            if fits and speed:
                known = same_speed.get(group)  # setups of one speed group share one computation
                perf, cost = (
                    known if known is not None else self._speed(n, lay, par, group, gpu_layers, fleet)
                )
                cost = None if session else cost  # a session is no job: nothing to time or price
            # Built as a tuple (a Row's own constructor costs a call): this runs for every setup.
            row = (gpu, n, lay, bd, fits, need / cap_bytes, (cap_bytes - need) / GIB, perf, cost, host, misfit, par,
                   fleet, gpu_layers)  # fmt: skip
            if lighter is not None:
                self.searched_rows.setdefault(n, []).append(_new_row(Row, row))
            else:
                out.append(_new_row(Row, row))
        if self.shared_plan:
            self._search()
        self._price_pending()
        for found in self.searched_rows.values():
            out.extend(prune(found))
        return out

    def _left_for_search(
        self,
        n: int,
        lay: Layout,
        bd: MemoryBreakdown,
        need: float,
        host: float,
        par: str,
        lighter: Layout,
        fits: bool,
    ) -> bool:
        """The search lists each layout with recomputation none, selective, full: once one fits, the
        ones that recompute more are slower and are not priced. One that fits is priced with the
        search's (:meth:`_price_pending`) when speed is asked for."""
        if lighter in self.faster_fits:
            return True
        host_cap = self.shared.host_cap
        if fits and (host_cap is None or host <= host_cap):
            self.faster_fits.add(lighter)
            if self.inputs.speed:
                self.pending.setdefault(n, []).append((lay, bd, need, host, par))
                return True
        return False

    def _misfit(self, host: float, gpu_layers: int | None) -> str:
        """Why the host memory does not hold what a setup keeps there ("" when it does)."""
        host_cap = self.shared.host_cap
        if host_cap is not None and host > host_cap and not (gpu_layers is not None and not self.training):
            return host_misfit(host, host_cap)
        if gpu_layers is None:
            return ""
        split_ram, assumed = host_ram(self.gpu, self.hw)
        if split_ram is not None and host > split_ram:
            return split_misfit(host, split_ram, assumed, self.gpu, gpu_layers, self.inputs.mm.layers)
        return ""

    def _fleet(self, n: int, par: str) -> _serving.ServingEstimate | None:
        """A service on ``n`` of this GPU: its replica's curve and the fleet the traffic needs (None
        when not even one long request's KV cache fits)."""
        service, inputs = self.shared.service, self.inputs
        assert service is not None
        cap_bytes = self.cap_bytes
        kv_max = _serving.kv_capacity(service.kv_lines[(n, par)], cap_bytes)
        if kv_max < 1:  # a long (90th-percentile) request must fit too
            return None
        curve = _serving.replica_curve(
            service.batch_mms,
            self.gpu,
            n,
            par,
            self.gpu_engine,
            min(kv_max, _serving.MAX_CONCURRENCY),
            bw_eff=self.bw_eff,
            prefill_mfu=self.prefill_mfu,
            gpus_per_node=self.hw.gpus_per_node,
            constants=inputs.constants,
            draft=service.draft_mm,
        )
        line = service.op_lines.get((n, par))
        if line is None:
            line = service.op_lines[(n, par)] = BatchLine(inputs.mm, n, par, service.reserve)
        p_n, b_n = self.prices_at(n)
        return _serving.serving_estimate(
            curve,
            kv_max,
            n,
            p_n,
            b_n,
            self.budget,
            memory_at=line.memory_at(cap_bytes, inputs.engine.id, self.fixed_overhead),
            scheduler=self.gpu_defaults,
            kv_pool_tokens=_serving.kv_pool_tokens(service.kv_lines[(n, par)], cap_bytes, service.reserve),
            transfer=disaggregation_link(inputs.mm, self.gpu, n, self.hw.gpus_per_node)
            if self.serving is not None and self.serving.disaggregated
            else None,
        )

    def _speed(
        self,
        n: int,
        lay: Layout,
        par: str,
        group: Any,
        gpu_layers: int | None,
        fleet: _serving.ServingEstimate | None,
    ) -> tuple[PerformanceEstimate, CostEstimate | None]:
        """Speed and job cost of a setup that fits, the first of its speed group."""
        if fleet is not None and fleet.replica is not None and fleet.replica.perf1:
            perf = fleet.replica.perf1  # a service's replica has already run the roofline at one sequence
        else:
            perf = self._performance(n, lay, par, group, gpu_layers)
        cost = self._cost(n, perf)
        self.same_speed[group] = (perf, cost)
        if perf.notes:
            self.shared.notes.extend(perf.notes)
        return perf, cost

    def _cost(self, n: int, perf: PerformanceEstimate) -> CostEstimate | None:
        p_n, b_n = self.prices_at(n)
        return job_cost(
            self.w,
            self.budget,
            self.gpu,
            n,
            perf.tokens_per_s,
            prices=p_n,
            buy=b_n,
            tokens=self.shared.tokens,
        )

    def _performance(
        self, n: int, lay: Layout, par: str, group: Any, gpu_layers: int | None
    ) -> PerformanceEstimate:
        """The speed model of a setup: a one-word setup's (the original model), a layout's, or
        inference's (replicas of a tensor- or pipeline-parallel group share the requests)."""
        inputs, gpu, engine, k = self.inputs, self.gpu, self.inputs.engine, self.inputs.constants
        mm, per_node = inputs.mm, self.hw.gpus_per_node
        if self.training and group.__class__ is tuple:
            return training_performance(
                mm,
                gpu,
                n,
                par,
                engine,
                mfu=self.mfu,
                gpus_per_node=per_node,
                constants=k,
                prelude=self.prelude,
            )
        if self.training:
            return layout_training_performance(
                mm, gpu, lay, engine, mfu=self.mfu, gpus_per_node=per_node, constants=k, prelude=self.prelude
            )
        bw_eff, prefill_mfu = self.bw_eff, self.prefill_mfu
        if group.__class__ is tuple:
            split = gpu_layers is not None and inputs.splitter is not None
            return inference_performance(
                inputs.splitter.model(gpu_layers) if split else mm,  # type: ignore[union-attr,arg-type]
                gpu,
                n,
                par,
                engine,
                bw_eff=bw_eff,
                prefill_mfu=prefill_mfu,
                gpus_per_node=per_node,
                constants=k,
            )
        return inference_performance(
            mm,
            gpu,
            lay.tp * lay.pp,
            "tensor" if lay.tp > 1 else "pipeline",
            engine,
            bw_eff=bw_eff,
            prefill_mfu=prefill_mfu,
            gpus_per_node=per_node,
            constants=k,
            replicas=lay.dp,
        )

    # --- the layout search -------------------------------------------------------------------------
    def _priced(
        self, n: int, lay: Layout, bd: MemoryBreakdown, need: float, host: float, par: str, perf: Any
    ) -> Row:
        """The row of a searched layout that fits, priced (its notes kept for the warnings)."""
        cost = self._cost(n, perf)
        if perf.notes:
            self.shared.notes.extend(perf.notes)
        cap_bytes = self.cap_bytes
        return Row(
            self.gpu, n, lay, bd, True, need / cap_bytes, (cap_bytes - need) / GIB, perf, cost, host, "", par,
            None, None,
        )  # fmt: skip

    def _search(self) -> None:
        """The shared plan's searched layouts on this GPU, per count from the highest speed ceiling
        down: priced until no layout left can be faster than the :data:`SEARCH_KEEP` kept; the one
        closest to fitting when none fits."""
        prelude, shared = self.prelude, self.shared
        assert prelude is not None
        use_slow = not self.mfu
        for n, (srows, earlier, smallest) in shared.plan.items():
            found = self.searched_rows.setdefault(n, [])
            order = shared.orders.get((n, use_slow))
            if order is None:
                order = shared.orders[(n, use_slow)] = ceiling_order(
                    self.inputs.mm, srows, prelude, shared.slowdowns, use_slow, self.inputs.constants
                )
            if srows[smallest][3] <= self.cap_bytes:
                self._search_count(n, srows, earlier, order, found)
            if not found:  # nothing fits: the layout closest to fitting
                found.append(self._closest(n, srows[smallest]))

    def _search_count(
        self,
        n: int,
        srows: list[Setup],
        earlier: list[tuple[int, ...]],
        order: list[tuple[float, int, float]],
        found: list[Row],
    ) -> None:
        prelude = self.prelude
        assert prelude is not None
        cap, host_cap = self.cap_bytes, self.shared.host_cap
        ceiling_scale = n * prelude.peak_tflops * 1e12 * prelude.mfu
        best: list[float] = []  # the SEARCH_KEEP fastest speeds so far

        def ok(i: int) -> bool:
            return srows[i][3] <= cap and (host_cap is None or srows[i][4] <= host_cap)

        for work, i, slow in order:
            if len(best) >= SEARCH_KEEP and ceiling_scale / work < best[-1] * (1 - 1e-9):
                break  # no layout left can be faster than the ones kept
            if not ok(i) or any(ok(j) for j in earlier[i]):
                continue  # does not fit, or a sibling that recomputes less fits
            _, lay, bd, need, host, _, par, _ = srows[i]
            perf = layout_training_performance(
                self.inputs.mm,
                self.gpu,
                lay,
                self.inputs.engine,
                mfu=self.mfu,
                gpus_per_node=self.hw.gpus_per_node,
                constants=self.inputs.constants,
                prelude=prelude,
                tp_slowdown=slow,
            )
            best = sorted((*best, perf.tokens_per_s.expected), reverse=True)[:SEARCH_KEEP]
            found.append(self._priced(n, lay, bd, need, host, par, perf))

    def _closest(self, n: int, setup: Setup) -> Row:
        """The row of the searched layout closest to fitting, which does not."""
        _, lay, bd, need, host, _, par, _ = setup
        host_cap, cap_bytes = self.shared.host_cap, self.cap_bytes
        misfit = host_misfit(host, host_cap) if host_cap is not None and host > host_cap else ""
        return Row(
            self.gpu, n, lay, bd, False, need / cap_bytes, (cap_bytes - need) / GIB, None, None, host, misfit,
            par, None, None,
        )  # fmt: skip

    def _price_pending(self) -> None:
        """The searched layouts that fit, left by :meth:`_left_for_search`, priced."""
        for n, fitting in self.pending.items():
            assert self.prelude is not None
            found = self.searched_rows.setdefault(n, [])
            for lay, bd, need, host, par, perf in price_searched(
                self.inputs.mm,
                self.gpu,
                fitting,
                self.inputs.engine,
                self.mfu,
                self.hw.gpus_per_node,
                self.prelude,
                self.shared.slowdowns,
                self.inputs.constants,
            ):
                found.append(self._priced(n, lay, bd, need, host, par, perf))


def search_groups(all_setups: list[Setup]) -> dict[int, tuple[list[Setup], list[tuple[int, ...]], int]]:
    """Per GPU count, the searched setups (in the search's order), for each the indices of its
    siblings that recompute less (listed before it), and the index of the one needing the least
    memory per GPU (the closest to fitting when none fits)."""
    by_count: dict[int, list[Setup]] = {}
    for row in all_setups:
        if row[5] is not None:
            by_count.setdefault(row[0], []).append(row)
    out = {}
    for n, rows in by_count.items():
        family: dict[Layout, list[int]] = {}
        earlier = []
        for i, row in enumerate(rows):
            assert row[5] is not None
            members = family.setdefault(row[5], [])
            earlier.append(tuple(members))
            members.append(i)
        smallest = min(range(len(rows)), key=lambda i: rows[i][3])
        out[n] = (rows, earlier, smallest)
    return out


def ceiling_order(
    mm: MemoryModel,
    rows: list[Setup],
    prelude: TrainingPrelude,
    slowdowns: dict[int, float],
    use_slow: bool,
    constants: SpeedConstants,
) -> list[tuple[float, int, float]]:
    """``(work, index, TP slowdown)`` of the searched setups ``rows``, the highest speed ceiling
    (least work, :func:`~.communication.ceiling_work`) first."""
    out = []
    for i, row in enumerate(rows):
        lay = row[1]
        slow = 1.0
        if use_slow and lay.tp > 1:
            slow = slowdowns.get(lay.tp, 0.0)
            if not slow:
                slow = slowdowns[lay.tp] = tp_width_slowdown(mm.model, lay.tp, constants.gemm_width_half)
        out.append((ceiling_work(mm, lay, prelude.flops_per_token, slow), i, slow))
    out.sort(key=lambda r: r[0])
    return out


def price_searched(
    mm: MemoryModel,
    gpu: GpuSpec,
    fitting: list[tuple[Layout, MemoryBreakdown, float, float, str]],
    engine: EngineProfile,
    mfu: float | None,
    gpus_per_node: int,
    prelude: TrainingPrelude,
    slowdowns: dict[int, float],
    constants: SpeedConstants,
) -> list[tuple[Layout, MemoryBreakdown, float, float, str, PerformanceEstimate]]:
    """The searched layouts of one GPU type and count that fit, ``(layout, breakdown, bytes/GPU,
    host bytes, parallelism)``, with their speed appended: the fastest :data:`SEARCH_KEEP` of them
    at least (what :func:`prune` keeps).

    Layouts are priced from the highest :func:`~.communication.speed_ceiling` down; once the next
    ceiling is below the slowest of the ``SEARCH_KEEP`` fastest speeds found, no layout left can
    join them and the rest are not priced (branch and bound: the same layouts are kept)."""
    model = mm.model
    ranked = []
    for lay, bd, need, host, par in fitting:
        t = lay.tp
        slow = 1.0
        if t > 1 and not mfu:
            slow = slowdowns.get(t, 0.0)
            if not slow:
                slow = slowdowns[t] = tp_width_slowdown(model, t, constants.gemm_width_half)
        ranked.append((speed_ceiling(mm, lay, prelude, slow), slow, lay, bd, need, host, par))
    ranked.sort(key=lambda r: -r[0])
    best: list[float] = []  # the SEARCH_KEEP fastest speeds so far, fastest first
    out = []
    for ceiling, slow, lay, bd, need, host, par in ranked:
        if len(best) >= SEARCH_KEEP and ceiling < best[-1] * (1 - 1e-9):
            break
        perf = layout_training_performance(
            mm,
            gpu,
            lay,
            engine,
            mfu=mfu,
            gpus_per_node=gpus_per_node,
            constants=constants,
            prelude=prelude,
            tp_slowdown=slow,
        )
        best = sorted((*best, perf.tokens_per_s.expected), reverse=True)[:SEARCH_KEEP]
        out.append((lay, bd, need, host, par, perf))
    return out


def prune(rows: list[Row]) -> list[Row]:
    """The searched layouts of one GPU type and count worth showing: the fastest fitting ones
    (ties: less memory), else the one closest to fitting."""
    fitting = [r for r in rows if r[4]]
    if not fitting:
        return [min(rows, key=lambda r: r[5])]

    def speed(r: Row) -> float:
        return r[7].tokens_per_s.expected if r[7] is not None else 0.0

    fitting.sort(key=lambda r: (-round(speed(r), 6), r[5]))
    return fitting[:SEARCH_KEEP]
