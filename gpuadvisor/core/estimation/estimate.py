"""The one orchestrator: ``estimate(scenario, gpus, models) -> Estimate``, in named stages.

1. **Inputs**: the model (:func:`resolve_model`), the GPUs compared (:func:`selected_gpus`), the GPU
   counts (:func:`candidate_counts`), the engine, the memory model and the warnings about the
   inputs (:func:`input_warnings`), gathered in :class:`~.gpu_rows.Inputs`;
2. **setups**: every (count, layout) with its per-GPU memory breakdown
   (:func:`~.gpu_rows.setups`). Memory does not depend on which GPU runs the job (a card without FP8
   or BF16 stores the same bytes), so each breakdown is computed once and shared by every GPU of the
   catalog: that is what keeps a whole-catalog comparison in the low milliseconds;
3. **per GPU type**: fit, service, speed and cost of each setup (:class:`~.gpu_rows.GpuPass`;
   :mod:`~gpuadvisor.core.estimation.performance`, :mod:`~gpuadvisor.core.estimation.serving`,
   :mod:`~gpuadvisor.core.estimation.cost`);
4. **decide**: the candidates with the Pareto frontier and provisioning flags
   (:func:`candidates_of`), the ranking, the decision and the cheapest changes (:func:`_finish`,
   :mod:`~gpuadvisor.core.estimation.advice`, :mod:`~gpuadvisor.core.estimation.recommendation`).

The estimate is a function of the scenario, the catalogs and the speed model's constants
(``constants``; the shipped ones when None): nothing it reads is changed by anyone else.

Calibration (``estimate(..., calibration=profile)``, see :mod:`gpuadvisor.core.estimation.calibration` and
``docs/measurements.md``): the profile's values for each GPU and the resolved engine are looked
up once per GPU. An efficiency the scenario sets itself wins over the calibration, which wins
over the engine profile; a fitted ``runtime_overhead_gib`` replaces the CUDA context and the
fragmentation in a per-GPU copy of the breakdowns, unless the scenario sets its own ``overhead``.
The GPUs and values actually used are recorded in :attr:`Estimate.calibration_fits`.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..files import expand_user
from ..formats.model_file import gguf_path, weights_of_file_type
from ..formats.scenario import Scenario
from ..specs.constants import SpeedConstants, engine_for, shipped_constants
from ..specs.engines import engine_of
from ..specs.hardware import GpuCatalog, GpuSpec
from ..specs.instances import InstanceCatalog, bundled_instances
from ..specs.models import ModelSpec
from ..specs.presets import ModelCatalog
from ..specs.workload import Workload
from ..units import GIB
from ..vocabulary import HorizonStatus, Parallelism, TargetStatus, WorkloadKind
from . import advice as _advice
from . import serving_load as _serving_load
from .cost import job_tokens
from .gpu_rows import GpuPass, Inputs, Row, Shared, setups
from .layout import gpu_counts
from .memory import MemoryModel
from .offload import LayerSplitter, splits_layers
from .performance import WAIT, CardsNote, HostWaitNote
from .recommendation import PARALLELISM_ORDER, decide
from .results import TIGHT_UTILIZATION as TIGHT_UTILIZATION  # the result types stay importable here
from .results import CalibrationProfile, Change
from .results import Candidate as Candidate
from .results import Estimate as Estimate
from .results import WhatIf as WhatIf
from .weights_table import wants_table, weights_table

DEFAULT_GPU_COUNTS = (1, 2, 4, 8)


def searches_layouts(scenario: Scenario) -> bool:
    """Whether the estimate searches layouts beyond one node (a training job with
    ``gpu_count_max`` above a node and no layout given): the slow case, up to about a second for a
    MoE over a thousand GPUs."""
    w, hw = scenario.workload, scenario.hardware
    top = hw.gpu_count if hw.gpu_count is not None else hw.gpu_count_max
    return w.is_training and not hw.layout_given and top is not None and top > hw.gpus_per_node


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
    # Stage 1: the model and the hardware.
    warnings = input_warnings(scenario, model)
    selected, ids = selected_gpus(scenario, gpus, gpu_ids)
    counts = candidate_counts(scenario)
    engine_id = engine_of(w, scenario.model)
    engine = engine_for(engine_id, w.kind, k).for_workload(w)
    warnings += engine_warnings(engine.id, scenario, model)
    # The engine the workload runs on is the memory and speed models' too (a GGUF on llama.cpp).
    w_run = w if engine_id == w.engine else replace(w, engine=engine_id)
    # Serving engines prefill in chunks, which bounds the transient activations.
    chunk = engine.prefill_chunk_tokens if not w.is_training else None
    mm = MemoryModel(model, w_run, scenario.overhead, prefill_chunk_tokens=chunk)
    # The machine the user owns: laptops, desktops and Macs asked about as such (their segment, or one
    # of them named). Its count is the one the user has; inference without a stated job is a session.
    own = all(g.segment == "local" for g in selected) and (hw.segment == "local" or bool(ids))
    session = own and w.kind == WorkloadKind.INFERENCE and w.serving is None and w.requests is None
    inputs = Inputs(
        scenario=scenario,
        model=model,
        constants=k,
        engine=engine,
        mm=mm,
        own_machine=own,
        session=session,
        splitter=LayerSplitter(mm) if splits_layers(engine.id, w) else None,
        instances=instances if instances is not None else bundled_instances(),
        # Rented as instances (budget.providers): the price depends on the GPU count (whole instances).
        rent_from=scenario.budget.providers if isinstance(scenario.budget.price, str) else None,
        speed=speed,
    )
    # Stage 2: layouts and memory, shared by every GPU.
    shared = Shared.build(inputs, setups(inputs, counts), job_tokens(w), calibration, models)
    # Stage 3: per GPU type, fit, speed and cost.
    rows: list[Row] = []
    for gpu in selected:
        rows.extend(GpuPass(inputs, shared, gpu).rows())
    if speed and w.serving is not None:
        # Each GPU type's leading fleets simulated at their load and resized where they fall short.
        rows = _settle_services(rows, w)
    # Stage 4: decide.
    result = Estimate(
        scenario=scenario,
        model=model,
        candidates=candidates_of(rows, w),
        memory_model=mm,
        warnings=tuple(dict.fromkeys(warnings + group_gpu_notes(shared.notes))),
        engine=engine.id,
        gpu_ids=tuple(g.id for g in selected) if ids else (),
        calibration=calibration,
        calibration_fits=tuple(shared.applied),
        instances=inputs.instances,
        constants=k,
        own_machine=own,
        session=session and speed,
    )
    result = _finish(result, with_advice and speed, gpus, models)
    if with_advice and speed and wants_table(result):
        result = replace(result, weights_table=weights_table(result, gpus, models, estimate))
    return result


#: Hugging Face Transformers' generate, measured against this estimate on sources first-scored by
#: the prospective ledger (docs/validation.md, "Diagnoses"): what the speed model does not price.
TRANSFORMERS_LONG_CONTEXT_TOKENS = 16_384
TRANSFORMERS_LONG_CONTEXT_WARNING = (
    "Hugging Face Transformers generates more slowly at long contexts than this estimate: the "
    "published runs of Qwen1.5, Qwen2.5, Qwen3 and GLM-4 decoded at 0.1 to 0.7 times the estimated "
    "speed with 30,000 to 200,000 tokens of context (their per-token time grows with the context far "
    "beyond the KV cache's reading). Treat the speed as the fastest it is likely to be."
)
TRANSFORMERS_QUANTIZED_WARNING = (
    "Transformers' own FP8 path and 8-bit GPTQ kernels ran well below this estimate in published "
    "runs (Qwen3's speed benchmark, FP8 at 0.2 to 0.55 times and GPTQ Int8 at 0.5 to 0.65 times the "
    "estimated speed; Qwen2 and Qwen2.5 GPTQ Int8 at 0.6 to 0.7 times): the 16-bit weights or "
    "another engine can be faster."
)
TRANSFORMERS_MOE_WARNING = (
    "Transformers runs a mixture-of-experts layer's experts one after another in Python: Qwen3-30B-A3B "
    "generated about 2 tokens/s in BF16 (0.4 in FP8) on an H20 in Qwen3's speed benchmark, a tenth "
    "of this estimate. A serving engine (vLLM, SGLang, llama.cpp) runs the experts as fused kernels."
)


def engine_warnings(engine_id: str | None, scenario: Scenario, model: ModelSpec) -> list[str]:
    """What published runs of the engine showed that the speed model does not price, for the
    workload asked about (inference on Hugging Face Transformers: long contexts, its FP8 and 8-bit
    GPTQ paths, mixture-of-experts layers)."""
    w = scenario.workload
    if engine_id != "transformers" or w.kind != WorkloadKind.INFERENCE:
        return []
    out = []
    if w.context_tokens >= TRANSFORMERS_LONG_CONTEXT_TOKENS:
        out.append(TRANSFORMERS_LONG_CONTEXT_WARNING)
    if w.weights == "fp8" or (w.weights == "int8" and w.quantization == "gptq"):
        out.append(TRANSFORMERS_QUANTIZED_WARNING)
    if model.is_moe:
        out.append(TRANSFORMERS_MOE_WARNING)
    return out


def input_warnings(scenario: Scenario, model: ModelSpec) -> list[str]:
    """The scenario's own warnings and what the model and the workload say about the answer's
    reliability (an assumed architecture, a GGUF file of other weights, a context beyond the
    model's)."""
    w = scenario.workload
    warnings = list(scenario.warnings)
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
    if w.kind == WorkloadKind.INFERENCE and model.is_mla and model.is_moe:
        warnings.append(MLA_MOE_SPEED_WARNING)
    if w.context_tokens > model.max_context:
        warnings.append(
            f"The context ({w.context_tokens:,} tokens) exceeds the model's maximum ({model.max_context:,})."
        )
    return warnings


def selected_gpus(
    scenario: Scenario, gpus: GpuCatalog, gpu_ids: list[str] | None
) -> tuple[list[GpuSpec], list[str] | None]:
    """(the GPUs compared, the ids asked for: ``gpu_ids``, else the scenario's GPU, else None for
    the catalog's segment), each with the memory and host bandwidth the scenario states."""
    hw = scenario.hardware
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
    if hw.nvlink_bridge:
        selected = [replace(g, nvlink_bridged=True) if g.nvlink_bridge else g for g in selected]
    return selected, ids


def candidate_counts(scenario: Scenario) -> tuple[int, ...]:
    """The GPU counts compared: the scenario's, else :data:`DEFAULT_GPU_COUNTS`; a layout without
    a count takes the counts that hold whole replicas of it."""
    w, hw = scenario.workload, scenario.hardware
    counts = gpu_counts(hw, DEFAULT_GPU_COUNTS)
    model_parallel = (hw.tensor_parallel or 1) * (hw.pipeline_parallel or 1)
    # The GPUs a count must be a multiple of: whole replicas of TP x PP x CP and, with hybrid
    # sharding, whole shard groups of data-parallel ranks (at least two, so that the comparison
    # holds a hybrid layout).
    unit = smallest = model_parallel * (hw.context_parallel or 1)
    if hw.data_parallel_shard:
        unit = math.lcm(unit, model_parallel * hw.data_parallel_shard)
        smallest = 2 * unit
    if not hw.gpu_count and unit > 1:
        counts = tuple(sorted({n for n in (*counts, smallest) if n % unit == 0}))
    if w.serving is not None and hw.parallelism == Parallelism.DDP and any(n > 1 for n in counts):
        raise InputError(
            "hardware.parallelism",
            "a service's copies are its replicas, which the estimate sizes: use none, tensor or pipeline",
            hw.parallelism,
        )
    return counts


def candidates_of(rows: list[Row], w: Workload) -> tuple[Candidate, ...]:
    """The rows as candidates, with the Pareto frontier (cost against time) and the provisioning
    flags, which need every row: over-provisioned is judged against the cheapest setup that meets
    the deadline (a service has targets, not a job to finish: only its memory can make it so)."""
    keys = [_advice.cost_hours(r[8]) if r[4] else None for r in rows]
    front = _advice.pareto_indices(keys)
    cheapest_meeting = None
    if w.serving is None:
        cheapest_meeting = min(
            (
                key[0]
                for key, r in zip(keys, rows)
                if key is not None
                and key[0] != float("inf")
                and (
                    r[8] is None
                    or (
                        r[8].deadline_status != TargetStatus.AT_RISK
                        and r[8].horizon_status != HorizonStatus.BEYOND
                    )
                )
            ),
            default=None,
        )
    # Positional arguments, in Candidate's field order: this runs hundreds of times per keystroke.
    under, over = _advice.under_provisioned, _advice.over_provisioned
    return tuple(
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


def _settle_services(rows: list[Row], w: Workload) -> list[Row]:
    """Each GPU type's leading fleet simulated at its load and resized where it falls short
    (:func:`.serving_load.settle`), disaggregated when the service asks; the rows' memory follows
    a resized fleet's concurrency.

    A resized fleet may no longer lead its GPU type: resizing only grows a fleet, so the closed
    form's fleets are lower bounds, and every fleet of the type whose closed-form place is ahead of
    the best settled one is settled too, round by round, until the leader of each GPU type is a
    settled fleet that no unsettled one can overtake (the planner stands behind only the fleets it
    simulated)."""
    out = list(rows)
    settled: set[int] = set()
    chosen = [i for i in _service_leaders(out).values()]
    while chosen:
        fleets = _serving_load.settle([f for i in chosen if (f := out[i].fleet) is not None], w)
        spec = w.serving
        if spec is not None and spec.disaggregated:
            fleets = [_serving_load.disaggregate(f, w) for f in fleets]
        for i, fleet in zip(chosen, fleets):
            gpu, n, lay, bd, fits, util, headroom, perf, cost, host, misfit, par, _old, gpu_layers = out[i]
            if fleet.memory is not None:
                cap = gpu.memory_gib_usable * GIB
                bd = fleet.memory.breakdown
                util, headroom = bd.device_total / cap, (cap - bd.device_total) / GIB
            out[i] = Row(
                gpu, n, lay, bd, fits, util, headroom, perf, cost, host, misfit, par, fleet, gpu_layers
            )
            settled.add(i)
        best = {out[i][0].id: _service_key(out[i]) for i in _service_leaders(out, settled).values()}
        chosen = [
            i
            for i, r in enumerate(out)
            if i not in settled
            and r[12] is not None
            and r[4]
            and r[0].id in best
            and _service_key(r) < best[r[0].id]
        ]
    return out


def _service_key(r: Row) -> tuple[Any, ...]:
    """A fitting fleet's place within its GPU type: the fleet's order (meets the targets, then
    monthly cost), its GPUs, then its GPU count and the parallelism's order."""
    par = PARALLELISM_ORDER.index(r[11]) if r[11] in PARALLELISM_ORDER else len(PARALLELISM_ORDER)
    fleet = r.fleet
    assert fleet is not None
    return (fleet.order, fleet.gpus_total, r[1], par)


def _service_leaders(rows: list[Row], among: set[int] | None = None) -> dict[str, int]:
    """Per GPU type, the index of its leading fitting fleet (:func:`_service_key`), among the
    indices ``among`` when given."""
    lead: dict[str, int] = {}
    for i, r in enumerate(rows):
        if r[12] is None or not r[4] or (among is not None and i not in among):
            continue
        j = lead.get(r[0].id)
        if j is None or _service_key(r) < _service_key(rows[j]):
            lead[r[0].id] = i
    return lead


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


def fold_card_notes(notes: list[str]) -> list[str]:
    """Fold the notes of one kind about several GPU types' cards (:class:`~.performance.CardsNote`:
    cards talking over PCIe for want of a stated NVLink bridge, rings across a server's sockets)
    into one line per kind naming every such card, in the place of the first of them."""
    names: dict[type[CardsNote], list[str]] = {}
    for n in notes:
        if isinstance(n, CardsNote):
            names.setdefault(type(n), []).append(n.cards.replace("NVIDIA ", ""))
    folded = {
        kind: kind(", ".join(cards[:-1]) + " and " + cards[-1])
        for kind, cards in names.items()
        if len(cards) > 1
    }
    out: list[str] = []
    for note in notes:
        kind = type(note)
        if kind not in folded:
            out.append(note)
        elif folded[kind] not in out:
            out.append(folded[kind])
    return out


def group_gpu_notes(notes: list[str]) -> list[str]:
    """Fold per-GPU notes of the same kind ("X has no BF16: ...") into one line naming every GPU,
    host-bound notes that differ only in the GPU's wait into one line with its range, and the notes
    of one kind about several GPU types' cards (:func:`fold_card_notes`) into one line naming them."""
    grouped: dict[str, list[str]] = {}
    order: list[str] = []
    for note in fold_host_waits(fold_card_notes(list(dict.fromkeys(notes)))):
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
