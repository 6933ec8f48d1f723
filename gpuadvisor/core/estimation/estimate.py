"""The one orchestrator: ``estimate(scenario, gpus, models) -> Estimate``.

For every candidate (GPU x count x parallelism) it computes the per-GPU memory breakdown and
the fit verdict; :mod:`gpuadvisor.core.estimation.performance` and :mod:`gpuadvisor.core.estimation.cost` add speed,
job time and cost, and :mod:`gpuadvisor.core.estimation.advice` ranks candidates and proposes changes.

Memory does not depend on which GPU runs the job (a card without FP8 or BF16 stores the same
bytes), so each (count, parallelism) breakdown is computed once and shared by every GPU of
the catalog: that is what keeps a whole-catalog comparison in the low milliseconds.

Calibration (``estimate(..., calibration=profile)``, see :mod:`gpuadvisor.core.estimation.calibration` and
``docs/measurements.md``): the profile's values for each GPU and the resolved engine are looked
up once per GPU. An efficiency the scenario sets itself wins over the calibration, which wins
over the engine profile; a fitted ``runtime_overhead_gib`` replaces the CUDA context and the
fragmentation in a per-GPU copy of the breakdowns, unless the scenario sets its own ``overhead``.
The GPUs and values actually used are recorded in :attr:`Estimate.calibration_fits`.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..files import expand_user
from ..formats.model_file import gguf_path, weights_of_file_type
from ..formats.scenario import Scenario
from ..specs.constants import SpeedConstants, engine_for, shipped_constants
from ..specs.engines import engine_of
from ..specs.hardware import RAM_RESERVED_GIB, GpuCatalog, GpuSpec
from ..specs.instances import InstanceCatalog, bundled_instances, instance_price_range, offers_for
from ..specs.models import ModelSpec
from ..specs.presets import ModelCatalog
from ..specs.serving import batch_defaults, batching_for
from ..specs.workload import RuntimeOverhead
from ..units import GIB
from . import advice as _advice
from . import serving as _serving
from .communication import (
    ceiling_work,
    is_legacy,
    layout_training_performance,
    speed_ceiling,
    tp_width_slowdown,
)
from .cost import BuyVsRent, buy_vs_rent, job_cost, job_tokens, price_range
from .layout import Layout, explicit_layout, gpu_counts, searched_layouts
from .memory import MemoryBreakdown, MemoryModel, applicable_parallelisms, check_parallelism
from .offload import LayerSplitter, host_ram, offers_split, splits_layers
from .performance import (
    SPEED_GROUP,
    WAIT,
    HostWaitNote,
    Range,
    inference_performance,
    training_performance,
    training_prelude,
)
from .recommendation import decide
from .results import TIGHT_UTILIZATION as TIGHT_UTILIZATION  # the result types stay importable here
from .results import CalibrationProfile, Change, FactorFit
from .results import Candidate as Candidate
from .results import Estimate as Estimate
from .results import WhatIf as WhatIf
from .serving_memory import BatchLine
from .weights_table import wants_table, weights_table

DEFAULT_GPU_COUNTS = (1, 2, 4, 8)
#: Layouts kept per GPU type and count when the search tries many (the fastest and its runner-ups).
SEARCH_KEEP = 3


def count_layouts(model: ModelSpec, scenario: Scenario, mm: MemoryModel, n: int) -> tuple[list[Layout], bool]:
    """(layouts to price at ``n`` GPUs, whether they come from the search and are pruned per GPU)."""
    w, hw = scenario.workload, scenario.hardware
    if hw.layout_given:
        simple = hw.parallelism is not None and not any(
            getattr(hw, a) is not None
            for a in ("tensor_parallel", "pipeline_parallel", "context_parallel", "expert_parallel")
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
            pars = tuple(p for p in pars if p in ("zero3", "fsdp"))
        return [mm.layout_for(n, par) for par in pars], False
    return searched_layouts(model, w, hw, n), True


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


def searches_layouts(scenario: Scenario) -> bool:
    """Whether the estimate searches layouts beyond one node (a training job with
    ``gpu_count_max`` above a node and no layout given): the slow case, up to about a second for a
    MoE over a thousand GPUs."""
    w, hw = scenario.workload, scenario.hardware
    top = hw.gpu_count if hw.gpu_count is not None else hw.gpu_count_max
    return w.is_training and not hw.layout_given and top is not None and top > hw.gpus_per_node


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


def resolve_model(scenario: Scenario, models: ModelCatalog) -> ModelSpec:
    """The :class:`ModelSpec` the scenario names (preset, architecture, HF config or parameter count)."""
    src = scenario.model
    if src.preset is not None:
        spec = models.get(src.preset)
    elif src.architecture is not None:
        arch = src.architecture_dict()
        missing = [
            k
            for k in ("num_layers", "hidden_size", "num_attention_heads", "intermediate_size", "vocab_size")
            if k not in arch
        ]
        if missing:
            raise InputError("model.architecture", f"missing {', '.join(missing)}")
        arch.setdefault("num_key_value_heads", arch["num_attention_heads"])
        try:
            spec = ModelSpec(name=src.name or "custom model", **arch)
        except TypeError as exc:
            raise InputError("model.architecture", f"has a value of the wrong type ({exc})") from None
    elif src.hf_config is not None:
        from ..formats.hf_import import model_from_hf_config  # local import: only needed for this source

        path = expand_user(src.hf_config, "model.hf_config")
        if not path.is_absolute() and scenario.base_dir:
            path = Path(scenario.base_dir) / path
        spec = model_from_hf_config(path)
    elif src.gguf is not None:
        from ..formats.gguf_file import model_from_gguf  # local import: reads the file header only

        spec = model_from_gguf(gguf_path(src.gguf, scenario.base_dir))
    else:
        assert src.parameters is not None
        spec = ModelSpec.from_parameter_count(int(src.parameters), name=src.name or "")
    if src.name and spec.name != src.name:
        spec = spec.with_name(src.name)
    return spec


#: Said of every inference estimate of a DeepSeek-style model (MLA attention and a many-expert MoE):
#: the one published serving sweep of such a model that was checked ran far below the estimate
#: (docs/estimation.md, "Where the validation set stands").
MLA_MOE_SPEED_WARNING = (
    "Speed of MLA mixture-of-experts models (DeepSeek-V3/R1 style) is the least certain figure: in "
    "SGLang's own benchmarks (SGLang 0.5.6-0.5.7, late 2025: DeepSeek-R1 and Kimi K2 on 8 \u00d7 B200, "
    "DeepSeek-V3 on 8 \u00d7 MI300X) output tokens/s were a median 0.84 times the estimate here, the time "
    "between tokens 1.2 times and the first token 1.8 times; in GPUStack's bursts of DeepSeek-R1 on "
    "8 \u00d7 H200 (vLLM 0.11, SGLang 0.5.3) output tokens/s were 0.67 times the estimate and the first "
    "token 2.7 times; in an earlier sweep (vLLM 0.7 and SGLang 0.4, March 2025) output tokens/s were "
    "2.5 to 5 times lower. Engine releases differ widely on these models: treat the speed and the "
    "first-token time as optimistic."
)


def estimate(
    scenario: Scenario,
    gpus: GpuCatalog,
    models: ModelCatalog,
    gpu_ids: list[str] | None = None,
    with_advice: bool = True,
    speed: bool = True,
    _model: ModelSpec | None = None,
    calibration: CalibrationProfile | None = None,
    instances: InstanceCatalog | None = None,
    constants: SpeedConstants | None = None,
) -> Estimate:
    """Compare every candidate of the scenario (or of ``gpu_ids``) and return the :class:`Estimate`.

    ``speed=False`` computes memory and fit only (no speed, cost, ranking or advice).
    ``calibration`` applies a profile's values per GPU (see the module docstring).
    ``instances`` is the cloud instance snapshot (default: the bundled one): where each setup can
    be rented and, with ``budget.providers`` set, the price it is costed at. ``constants`` are the
    speed model's (:class:`~gpuadvisor.core.specs.constants.SpeedConstants`; the shipped ones when
    None): the estimate is a function of the scenario, the catalogs and these alone.
    """
    k = constants or shipped_constants()
    model = _model or resolve_model(scenario, models)
    w, hw = scenario.workload, scenario.hardware
    warnings = list(scenario.warnings)
    snapshot = instances if instances is not None else bundled_instances()
    # Rented as instances (budget.providers): the price depends on the GPU count (whole instances).
    rent_from = scenario.budget.providers if isinstance(scenario.budget.price, str) else None
    if model.architecture_assumed:
        warnings.append(
            "Only a parameter count was given: the architecture is assumed (Llama-like), so "
            "activation and KV-cache figures are approximate."
        )
    file_weights = weights_of_file_type(model.file_type) if model.file_type else None
    if model.file_type and w.is_gguf and file_weights != w.weights:
        warnings.append(
            f"The GGUF file holds {model.file_type} weights; its own size is used, "
            f"while speed follows workload.weights {w.weights}."
        )
    elif model.file_weight_bytes and not w.is_gguf and file_weights != w.weights:
        warnings.append(
            f"The model is a GGUF file ({model.file_type or 'unknown type'}) but workload.weights is "
            f"{w.weights}: memory is computed for {w.weights}; set weights to the file's type."
        )
    if w.kind == "inference" and model.is_mla and model.is_moe:
        warnings.append(MLA_MOE_SPEED_WARNING)
    if w.context_tokens > model.max_context:
        warnings.append(
            f"The context ({w.context_tokens:,} tokens) exceeds the model's maximum ({model.max_context:,})."
        )
    ids = gpu_ids or ([hw.gpu] if hw.gpu else None)
    if ids:
        selected = [gpus.get(i, "hardware.gpu" if not gpu_ids else "--gpu") for i in ids]
    else:
        selected = [g for g in gpus if hw.segment is None or g.segment == hw.segment]
        if not selected:
            raise InputError("hardware.segment", "no GPU of the catalog is in this segment", hw.segment)
    if hw.memory_gib is not None:  # a Mac's RAM size or a slice: capacity follows the platform's rule
        selected = [g.with_memory_gib(hw.memory_gib) for g in selected]
    if hw.host_memory_bandwidth_gb_s is not None:
        selected = [replace(g, host_bandwidth_override_gb_s=hw.host_memory_bandwidth_gb_s) for g in selected]
    counts = gpu_counts(hw, DEFAULT_GPU_COUNTS)
    replica = (hw.tensor_parallel or 1) * (hw.pipeline_parallel or 1) * (hw.context_parallel or 1)
    if not hw.gpu_count and replica > 1:
        # A layout without a count: the counts that hold whole replicas of it (at least one).
        counts = tuple(sorted({n for n in (*counts, replica) if n % replica == 0}))
    if w.serving is not None and hw.parallelism == "ddp" and any(n > 1 for n in counts):
        raise InputError(
            "hardware.parallelism",
            "a service's copies are its replicas, which the estimate sizes: use none, tensor or pipeline",
            hw.parallelism,
        )
    engine_id = engine_of(w, scenario.model)
    engine = engine_for(engine_id, w.kind, k)
    # The engine the workload runs on is the memory and speed models' too (a GGUF on llama.cpp).
    w_run = w if engine_id == w.engine else replace(w, engine=engine_id)
    # Serving engines prefill in chunks, which bounds the transient activations.
    chunk = engine.prefill_chunk_tokens if not w.is_training else None
    mm = MemoryModel(model, w_run, scenario.overhead, prefill_chunk_tokens=chunk)
    # The machine the user owns: laptops, desktops and Macs asked about as such (their segment, or one
    # of them named). Its count is the one the user has; inference without a stated job is a session.
    own = all(g.segment == "local" for g in selected) and (hw.segment == "local" or bool(ids))
    session = own and w.kind == "inference" and w.serving is None and w.requests is None
    splitter = LayerSplitter(mm) if splits_layers(engine.id, w) else None
    # (count, layout, breakdown, bytes/GPU, host bytes per node, sibling without recomputation when
    # searched, else None): computed once, shared by every GPU.
    # The speed group (setups with the same speed model share one computation: DDP and ZeRO-1/2
    # move the same gradient bytes, ZeRO-3 and FSDP the same gathers) is decided here too.
    setups: list[tuple[int, Layout, MemoryBreakdown, float, float, Layout | None, str, Any]] = []
    for n in counts:
        layouts, searched = count_layouts(model, scenario, mm, n)
        per_node = min(n, hw.gpus_per_node)
        if w.serving is not None:  # replicas are the fleet's business: a candidate is one replica
            layouts = [lay for lay in layouts if lay.dp == 1 and lay.parallelism != "ddp"]
        for lay in layouts:
            bd = mm.breakdown(n, lay.parallelism, layout=lay)
            par = lay.parallelism
            if not w.is_training:
                group: Any = (n, par) if lay.shorthand or lay.dp == 1 or lay.gpus == lay.dp else lay
            elif is_legacy(mm, lay):
                group = (n, SPEED_GROUP.get(par, par))
            else:
                group = lay
            # A searched layout carries its sibling without recomputation (see the GPU loop).
            sibling = lay._replace(recompute="none") if searched else None
            setups.append((n, lay, bd, bd.device_total, bd.host * per_node, sibling, par, group))
    host_cap = hw.host_memory_gib * GIB if hw.host_memory_gib is not None else None
    eff = scenario.efficiency
    mfu, bw_eff, prefill_mfu = eff.mfu, eff.bandwidth_efficiency, eff.prefill_mfu
    lookup = calibration_lookup(calibration, engine.id, scenario) if calibration is not None else None
    applied: list[FactorFit] = []
    rows = []
    notes: list[str] = []
    tokens = job_tokens(w)
    training = w.is_training
    single_only = [row for row in setups if row[0] == 1]
    serving = w.serving if speed else None
    if serving is not None:
        # Built once and shared by every GPU: the roofline at batches 1, 2, 4, ... and the KV
        # cache each setup holds per sequence.
        batch_mms = _serving.batch_models(mm)
        reserve = _serving.reserved_context(w, batching_for(engine.id))
        kv_lines = {(row[0], row[6]): _serving.kv_line(mm, row[0], row[6], reserve) for row in setups}
        # A service's memory is its operating point's, per (count, setup) a line over the concurrency.
        op_lines: dict[tuple[int, str], BatchLine] = {}
    slowdowns: dict[int, float] = {}  # TP width slowdown per TP size (the model's: shared by every GPU)
    # The searched layouts by count, priced from the highest speed ceiling down: their order and
    # families do not depend on the GPU, so they are built once (see _search_groups).
    plan = _search_groups(setups) if speed and training else {}
    plain_setups = [row for row in setups if row[5] is None] if plan else setups
    orders: dict[tuple[int, bool], list[tuple[float, int, float]]] = {}
    for gpu in selected:
        # A Mac's GPU is one chip sharing the machine's memory: it is not combined with others
        # unless the scenario asks for a count. The machine a user owns has the GPUs it has (one
        # unless hardware.gpu_count says more), and is never replicated to finish a queue sooner.
        if (gpu.unified_memory or (own and gpu.segment == "local")) and not hw.gpu_count:
            gpu_setups = single_only
        elif own and gpu.segment == "local" and not w.is_training:
            gpu_setups = [row for row in setups if not (row[6] == "ddp" and row[0] > 1)]
        else:
            gpu_setups = setups
        split_ram, split_ram_assumed = host_ram(gpu, hw)
        # A service's engine schedules as it starts on this GPU (vLLM's sequences and prefill chunk):
        # the defaults are looked up once per GPU, reported with each fleet and give the engine its chunk.
        gpu_defaults = (
            batch_defaults(engine.id, gpu.name, gpu.memory_gib_usable) if serving is not None else None
        )
        gpu_engine = _serving.chunked_as(engine, gpu_defaults)
        fixed_overhead = None  # a calibrated runtime overhead (bytes) replaces the model's
        if lookup:
            # Looked up once per GPU; without calibration the loop below is unchanged.
            mfu, bw_eff, prefill_mfu = eff.mfu, eff.bandwidth_efficiency, eff.prefill_mfu
            for f in lookup.get(gpu.id, ()):
                if f.factor_name == "runtime_overhead_gib":
                    fixed_overhead = f.value * GIB
                    # The breakdowns are shared by every GPU: this GPU gets its own copies.
                    gpu_setups = [
                        (n, lay, bd2, bd2.device_total, host, sib, par, group)
                        for n, lay, bd, _need, host, sib, par, group in gpu_setups
                        for bd2 in (replace(bd, overhead=f.value * GIB),)
                    ]
                elif f.factor_name == "mfu":
                    if not w.is_training:
                        continue
                    mfu = f.value
                elif w.is_training:
                    continue  # bandwidth and prefill efficiencies only enter the inference model
                elif f.factor_name == "bandwidth_efficiency":
                    bw_eff = f.value
                else:
                    prefill_mfu = f.value
                applied.append(f)
        cap_bytes = gpu.memory_gib_usable * GIB
        prices = price_range(gpu, scenario.budget)
        buy = buy_vs_rent(gpu, scenario.budget, prices.expected if prices else None)
        at: Any = None  # n -> (prices, buy) when rented as instances
        if rent_from is not None:
            at = _instance_pricing(gpu, scenario.budget, snapshot, rent_from, scenario.hardware.gpus_per_node)
        prelude = training_prelude(mm, gpu, engine, mfu, k) if training and speed else None
        same_speed: dict[Any, tuple[Any, ...]] = {}
        searched_rows: dict[int, list[tuple[Any, ...]]] = {}
        # Searched layouts that fit, priced after the loop from the highest speed ceiling down.
        pending: dict[int, list[tuple[Any, ...]]] = {}
        faster_fits: set[Layout] = set()  # searched layouts whose less-recomputing sibling fits
        shared_plan = bool(plan) and gpu_setups is setups  # else each GPU has its own breakdowns
        for n, lay, bd, need, host, lighter, par, group in plain_setups if shared_plan else gpu_setups:
            fits = need <= cap_bytes
            gpu_layers = w.gpu_layers if w.gpu_layers is not None and w.gpu_layers < mm.layers else None
            if not fits and splitter is not None and lighter is None and offers_split(gpu):
                # Llama.cpp splits layers: the most that fit on the GPU, the rest in host RAM.
                split = splitter.largest(n, par, lay, cap_bytes)
                if split is not None:
                    gpu_layers, bd = split
                    need, host, fits = bd.device_total, bd.host * min(n, hw.gpus_per_node), True
                    group = (group, gpu_layers)
            if lighter is not None:
                # The search lists each layout with recomputation none, selective, full: once one
                # fits, the ones that recompute more are slower and are not priced.
                if lighter in faster_fits:
                    continue
                if fits and (host_cap is None or host <= host_cap):
                    faster_fits.add(lighter)
                    if speed:
                        pending.setdefault(n, []).append((lay, bd, need, host, par))
                        continue
            misfit = ""
            if host_cap is not None and host > host_cap and not (gpu_layers is not None and not training):
                fits = False
                misfit = (
                    f"host memory: needs {host / GIB:,.0f} GiB per node for offloaded state, "
                    f"{host_cap / GIB:,.0f} GiB available (hardware.host_memory_gib)"
                )
            elif gpu_layers is not None and split_ram is not None and host > split_ram:
                fits = False
                misfit = split_misfit(host, split_ram, split_ram_assumed, gpu, gpu_layers, mm.layers)
            perf = cost = fleet = None
            if fits and serving is not None:
                kv_max = _serving.kv_capacity(kv_lines[(n, par)], cap_bytes)
                fits = kv_max >= 1  # a long (90th-percentile) request must fit too
                if fits:
                    curve = _serving.replica_curve(
                        batch_mms,
                        gpu,
                        n,
                        par,
                        gpu_engine,
                        min(kv_max, _serving.MAX_CONCURRENCY),
                        bw_eff=bw_eff,
                        prefill_mfu=prefill_mfu,
                        gpus_per_node=hw.gpus_per_node,
                        constants=k,
                    )
                    line = op_lines.get((n, par))
                    if line is None:
                        line = op_lines[(n, par)] = BatchLine(mm, n, par, reserve)
                    p_n, b_n = at(n) if at is not None else (prices, buy)
                    fleet = _serving.serving_estimate(
                        curve,
                        kv_max,
                        n,
                        p_n,
                        b_n,
                        scenario.budget,
                        memory_at=line.memory_at(cap_bytes, engine.id, fixed_overhead),
                        scheduler=gpu_defaults,
                    )
                    assert fleet.memory is not None
                    bd = fleet.memory.breakdown
                    need = bd.device_total
            if fits and speed:
                known = same_speed.get(group)
                if known is None and fleet is not None and fleet.replica is not None and fleet.replica.perf1:
                    # A service's replica has already run the roofline at one sequence.
                    perf = fleet.replica.perf1
                    p_n, b_n = at(n) if at is not None else (prices, buy)
                    cost = job_cost(
                        w, scenario.budget, gpu, n, perf.tokens_per_s, prices=p_n, buy=b_n, tokens=tokens
                    )
                    known = same_speed[group] = (perf, cost)
                    if perf.notes:
                        notes.extend(perf.notes)
                if known is not None:
                    perf, cost = known
                else:
                    if training and group.__class__ is tuple:  # a one-word setup: the original model
                        perf = training_performance(
                            mm,
                            gpu,
                            n,
                            par,
                            engine,
                            mfu=mfu,
                            gpus_per_node=hw.gpus_per_node,
                            constants=k,
                            prelude=prelude,
                        )
                    elif training:
                        perf = layout_training_performance(
                            mm,
                            gpu,
                            lay,
                            engine,
                            mfu=mfu,
                            gpus_per_node=hw.gpus_per_node,
                            constants=k,
                            prelude=prelude,
                        )
                    elif group.__class__ is tuple:
                        perf = inference_performance(
                            mm if gpu_layers is None or splitter is None else splitter.model(gpu_layers),
                            gpu,
                            n,
                            par,
                            engine,
                            bw_eff=bw_eff,
                            prefill_mfu=prefill_mfu,
                            gpus_per_node=hw.gpus_per_node,
                            constants=k,
                        )
                    else:  # replicas of a tensor- or pipeline-parallel group share the requests
                        perf = inference_performance(
                            mm,
                            gpu,
                            lay.tp * lay.pp,
                            "tensor" if lay.tp > 1 else "pipeline",
                            engine,
                            bw_eff=bw_eff,
                            prefill_mfu=prefill_mfu,
                            gpus_per_node=hw.gpus_per_node,
                            constants=k,
                            replicas=lay.dp,
                        )
                    p_n, b_n = at(n) if at is not None else (prices, buy)
                    cost = job_cost(
                        w, scenario.budget, gpu, n, perf.tokens_per_s, prices=p_n, buy=b_n, tokens=tokens
                    )
                    same_speed[group] = (perf, cost)
                    if perf.notes:
                        notes.extend(perf.notes)
            row = (
                gpu,
                n,
                lay,
                bd,
                fits,
                need / cap_bytes,
                (cap_bytes - need) / GIB,
                perf,
                None if session else cost,  # a session is no job: nothing to time or price
                host,
                misfit,
                par,
                fleet,
                gpu_layers,
            )
            if lighter is not None:
                searched_rows.setdefault(n, []).append(row)
            else:
                rows.append(row)

        def priced(
            n: int,
            lay: Layout,
            bd: MemoryBreakdown,
            need: float,
            host: float,
            par: str,
            perf: Any,
            gpu: GpuSpec = gpu,
            prices: Any = prices,
            buy: Any = buy,
            cap_bytes: float = cap_bytes,
            at: Any = at,
        ) -> tuple[Any, ...]:
            """The row of a searched layout that fits, priced (its notes kept for the warnings)."""
            if at is not None:
                prices, buy = at(n)
            cost = job_cost(
                w, scenario.budget, gpu, n, perf.tokens_per_s, prices=prices, buy=buy, tokens=tokens
            )
            if perf.notes:
                notes.extend(perf.notes)
            return (
                gpu,
                n,
                lay,
                bd,
                True,
                need / cap_bytes,
                (cap_bytes - need) / GIB,
                perf,
                cost,
                host,
                "",
                par,
                None,
                None,
            )

        if shared_plan:
            assert prelude is not None
            use_slow = not mfu
            for n, (srows, earlier, smallest) in plan.items():
                found = searched_rows.setdefault(n, [])
                order = orders.get((n, use_slow))
                if order is None:
                    order = orders[(n, use_slow)] = _ceiling_order(mm, srows, prelude, slowdowns, use_slow, k)
                ceiling_scale = n * prelude.peak_tflops * 1e12 * prelude.mfu
                best: list[float] = []  # the SEARCH_KEEP fastest speeds so far
                if srows[smallest][3] <= cap_bytes:

                    def ok(i: int, srows: list[tuple[Any, ...]] = srows, cap: float = cap_bytes) -> bool:
                        return srows[i][3] <= cap and (host_cap is None or srows[i][4] <= host_cap)

                    for work, i, slow in order:
                        if len(best) >= SEARCH_KEEP and ceiling_scale / work < best[-1] * (1 - 1e-9):
                            break  # no layout left can be faster than the ones kept
                        if not ok(i) or any(ok(j) for j in earlier[i]):
                            continue  # does not fit, or a sibling that recomputes less fits
                        _, lay, bd, need, host, _, par, _ = srows[i]
                        perf = layout_training_performance(
                            mm,
                            gpu,
                            lay,
                            engine,
                            mfu=mfu,
                            gpus_per_node=hw.gpus_per_node,
                            constants=k,
                            prelude=prelude,
                            tp_slowdown=slow,
                        )
                        best = sorted((*best, perf.tokens_per_s.expected), reverse=True)[:SEARCH_KEEP]
                        found.append(priced(n, lay, bd, need, host, par, perf))
                if not found:  # nothing fits: the layout closest to fitting
                    _, lay, bd, need, host, _, par, _ = srows[smallest]
                    misfit = ""
                    if host_cap is not None and host > host_cap:
                        misfit = (
                            f"host memory: needs {host / GIB:,.0f} GiB per node for offloaded state, "
                            f"{host_cap / GIB:,.0f} GiB available (hardware.host_memory_gib)"
                        )
                    found.append(
                        (
                            gpu,
                            n,
                            lay,
                            bd,
                            False,
                            need / cap_bytes,
                            (cap_bytes - need) / GIB,
                            None,
                            None,
                            host,
                            misfit,
                            par,
                            None,
                            None,
                        )
                    )
        for n, fitting in pending.items():
            assert prelude is not None
            found = searched_rows.setdefault(n, [])
            for lay, bd, need, host, par, perf in _price_searched(
                mm, gpu, fitting, engine, mfu, hw.gpus_per_node, prelude, slowdowns, k
            ):
                found.append(priced(n, lay, bd, need, host, par, perf))
        for found in searched_rows.values():
            rows.extend(_prune(found))
    # Pareto frontier and the cheapest candidate that meets the deadline, before building candidates.
    keys = [_advice.cost_hours(r[8]) if r[4] else None for r in rows]
    front = _advice.pareto_indices(keys)
    # A service has targets, not a job to finish: only its memory can make it over-provisioned.
    cheapest_meeting = None
    if w.serving is None:
        cheapest_meeting = min(
            (
                k[0]
                for k, r in zip(keys, rows)
                if k is not None
                and k[0] != float("inf")
                and (r[8] is None or (r[8].deadline_status != "at risk" and r[8].horizon_status != "beyond"))
            ),
            default=None,
        )
    # Positional arguments, in Candidate's field order: this runs hundreds of times per keystroke.
    under, over = _advice.under_provisioned, _advice.over_provisioned
    candidates = tuple(
        Candidate(
            gpu,
            n,
            par,
            bd,
            gpu.memory_gib_usable,
            fits,
            headroom,
            util,
            ((perf.notes if perf else ()) + (f"Does not fit: {misfit}.",))
            if misfit
            else (perf.notes if perf else ()),
            perf,
            cost,
            i in front,
            under(fits, util),
            over(fits, util, keys[i], cheapest_meeting),
            fleet,
            lay,
            host / GIB if host else 0.0,
            misfit,
            gpu_layers,
        )
        for i, (gpu, n, lay, bd, fits, util, headroom, perf, cost, host, misfit, par, fleet, gpu_layers) in (
            enumerate(rows)
        )
    )
    result = Estimate(
        scenario=scenario,
        model=model,
        candidates=candidates,
        memory_model=mm,
        warnings=tuple(dict.fromkeys(warnings + group_gpu_notes(notes))),
        engine=engine.id,
        gpu_ids=tuple(g.id for g in selected) if ids else (),
        calibration=calibration,
        calibration_fits=tuple(applied),
        instances=snapshot,
        constants=k,
        own_machine=own,
        session=session and speed,
    )
    result = _finish(result, with_advice and speed, gpus, models)
    if with_advice and speed and wants_table(result):
        result = replace(result, weights_table=weights_table(result, gpus, models, estimate))
    return result


def _instance_pricing(
    gpu: GpuSpec, budget: Any, snapshot: InstanceCatalog, providers: Any, gpus_per_node: int
) -> Any:
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


def _search_groups(
    setups: list[tuple[Any, ...]],
) -> dict[int, tuple[list[tuple[Any, ...]], list[tuple[int, ...]], int]]:
    """Per GPU count, the searched setups (in the search's order), for each the indices of its
    siblings that recompute less (listed before it), and the index of the one needing the least
    memory per GPU (the closest to fitting when none fits)."""
    by_count: dict[int, list[tuple[Any, ...]]] = {}
    for row in setups:
        if row[5] is not None:
            by_count.setdefault(row[0], []).append(row)
    out = {}
    for n, rows in by_count.items():
        family: dict[Layout, list[int]] = {}
        earlier = []
        for i, row in enumerate(rows):
            members = family.setdefault(row[5], [])
            earlier.append(tuple(members))
            members.append(i)
        smallest = min(range(len(rows)), key=lambda i: rows[i][3])
        out[n] = (rows, earlier, smallest)
    return out


def _ceiling_order(
    mm: MemoryModel,
    rows: list[tuple[Any, ...]],
    prelude: Any,
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


def _price_searched(
    mm: MemoryModel,
    gpu: Any,
    fitting: list[tuple[Any, ...]],
    engine: Any,
    mfu: float | None,
    gpus_per_node: int,
    prelude: Any,
    slowdowns: dict[int, float],
    constants: SpeedConstants,
) -> list[tuple[Any, ...]]:
    """The searched layouts of one GPU type and count that fit, ``(layout, breakdown, bytes/GPU,
    host bytes, parallelism)``, with their speed appended: the fastest :data:`SEARCH_KEEP` of them
    at least (what :func:`_prune` keeps).

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


def _prune(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The searched layouts of one GPU type and count worth showing: the fastest fitting ones
    (ties: less memory), else the one closest to fitting."""
    fitting = [r for r in rows if r[4]]
    if not fitting:
        return [min(rows, key=lambda r: r[5])]

    def speed(r: tuple[Any, ...]) -> float:
        return r[7].tokens_per_s.expected if r[7] is not None else 0.0

    fitting.sort(key=lambda r: (-round(speed(r), 6), r[5]))
    return fitting[:SEARCH_KEEP]


#: How a warning points to the suggested changes, in the window's layout (they are listed below
#: it); a view that lists them elsewhere says where (``presentation.wording.point_to_changes``).
CHANGES_POINTER = "see the changes below"


def fold_host_waits(notes: list[str]) -> list[str]:
    """Fold host-bound notes (:class:`~.performance.HostWaitNote`) that differ only in how long the
    GPU waits (one per GPU type) into one line with the range: "... (the GPU waits from 3% to 26%
    of each decode step, by GPU)", in the place of the first of them."""
    waits: dict[str, list[int]] = {}
    for note in notes:
        if isinstance(note, HostWaitNote):
            waits.setdefault(note.template, []).append(note.percent)
    out: list[str] = []
    for note in notes:
        if not isinstance(note, HostWaitNote):
            out.append(note)
            continue
        values = waits.pop(note.template, None)
        if values is None:
            continue  # folded into the first of its kind
        lo, hi = min(values), max(values)
        if lo == hi:
            out.append(note)
            continue
        low = "under 1%" if lo == 0 else f"{lo}%"
        out.append(
            note.template.replace(WAIT, f"the GPU waits from {low} to {hi}% of each decode step, by GPU")
        )
    return out


def group_gpu_notes(notes: list[str]) -> list[str]:
    """Fold per-GPU notes of the same kind ("X has no BF16: ...") into one line naming every GPU,
    and host-bound notes that differ only in the GPU's wait into one line with its range."""
    grouped: dict[str, list[str]] = {}
    order: list[str] = []
    for note in fold_host_waits(list(dict.fromkeys(notes))):
        gpu, sep, rest = note.partition(" has no ")
        key = rest if sep else note
        if key not in grouped:
            grouped[key] = []
            order.append(key)
        if sep:
            grouped[key].append(gpu)
    out = []
    for key in order:
        gpus = grouped[key]
        if not gpus:
            out.append(key)
            continue
        what, _, consequence = key.partition(":")
        names = ", ".join(g.replace("NVIDIA ", "") for g in gpus)
        out.append(f"No {what.strip()} on {names}:{consequence}" if consequence else f"No {what} on {names}")
    return out


def _finish(est: Estimate, with_advice: bool, gpus: GpuCatalog, models: ModelCatalog) -> Estimate:
    """Ranking, Pareto frontier, provisioning flags and (optionally) the cheapest changes."""
    cands = est.candidates
    ranking = _advice.rank(cands)
    changes: list[Change] = []
    hint = _advice.mig_hint(est)
    workable = [c for c in ranking if c.cost is None or c.cost.workable]
    if with_advice and not workable:
        tried: list[tuple[Scenario, bool]] = []
        for label, why, transform in _advice.remedies(est):
            try:
                any_gpu = "any GPU" in label
                changed = transform(est.scenario)
                # A combined remedy whose parts the scenario already has ("+ micro-batch 1" at batch
                # 1) is the same scenario as a simpler one: listing it again adds nothing.
                if (changed, any_gpu) in tried:
                    continue
                tried.append((changed, any_gpu))
                variant = estimate(
                    changed,
                    gpus,
                    models,
                    gpu_ids=list(est.gpu_ids) if est.gpu_ids and not any_gpu else None,
                    with_advice=False,
                    _model=est.model,
                    calibration=est.calibration,
                    instances=est.instances,
                    constants=est.constants,
                )
            except InputError:
                continue
            ok = [c for c in variant.ranking if c.cost is None or c.cost.workable]
            best = ok[0] if ok else None
            changes.append(
                Change(
                    change=label,
                    why=why,
                    candidate=best.key if best else None,
                    memory_per_gpu_gib=best.memory.device_total / GIB if best else None,
                    job_hours=best.cost.job_hours.expected if best and best.cost else None,
                    cost_usd=best.cost.cost_usd.expected
                    if best and best.cost and best.cost.cost_usd
                    else None,
                    fits=best is not None,
                    gpu_id=best.gpu.id if best else None,
                    gpu_name=best.gpu.name if best else None,
                )
            )
        changes.sort(
            key=lambda ch: (
                not ch.fits,
                ch.cost_usd if ch.cost_usd is not None else float("inf"),
                ch.job_hours or float("inf"),
            )
        )
    warnings = est.warnings + ((hint,) if hint else ())
    if with_advice and not ranking:
        warnings += (f"Nothing fits: {CHANGES_POINTER}.",)
    elif with_advice and not workable:
        warnings += (f"Nothing meets the deadline and the budget: {CHANGES_POINTER}.",)
    return replace(
        est, ranking=ranking, advice=tuple(changes), warnings=warnings, decision=decide(cands), _memo={}
    )
