"""The one orchestrator: ``estimate(scenario, gpus, models) -> Estimate``.

For every candidate (GPU x count x parallelism) it computes the per-GPU memory breakdown and
the fit verdict; :mod:`gpuadvisor.core.performance` and :mod:`gpuadvisor.core.cost` add speed,
job time and cost, and :mod:`gpuadvisor.core.advice` ranks candidates and proposes changes.

Memory does not depend on which GPU runs the job (a card without FP8 or BF16 stores the same
bytes), so each (count, parallelism) breakdown is computed once and shared by every GPU of
the catalog: that is what keeps a whole-catalog comparison in the low milliseconds.

Calibration (``estimate(..., calibration=profile)``, see :mod:`gpuadvisor.core.calibration` and
``docs/measurements.md``): the profile's values for each GPU and the resolved engine are looked
up once per GPU. An efficiency the scenario sets itself wins over the calibration, which wins
over the engine profile; a fitted ``runtime_overhead_gib`` replaces the CUDA context and the
fragmentation in a per-GPU copy of the breakdowns, unless the scenario sets its own ``overhead``.
The GPUs and values actually used are recorded in :attr:`Estimate.calibration_fits`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from . import advice as _advice
from .cost import CostEstimate, buy_vs_rent, job_cost, job_tokens, price_range
from .engines import engine_for
from .errors import InputError
from .hardware import GpuCatalog, GpuSpec
from .memory import MemoryBreakdown, MemoryModel, applicable_parallelisms, check_parallelism
from .models import ModelSpec
from .performance import (SPEED_GROUP, PerformanceEstimate, inference_performance, training_performance,
                          training_prelude)
from .presets import ModelCatalog
from .scenario import Scenario
from .units import GIB
from .workload import RuntimeOverhead

if TYPE_CHECKING:  # calibration imports this module; the profile is only a value here
    from .calibration import CalibrationProfile, FactorFit

DEFAULT_GPU_COUNTS = (1, 2, 4, 8)
#: Memory utilization above this is too tight for a long job (allocator spikes, longer samples).
TIGHT_UTILIZATION = 0.95


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

    @property
    def key(self) -> str:
        return f"{self.gpu_count}x {self.gpu.id} ({self.parallelism})"

    @property
    def verdict(self) -> str:
        """``fits``, ``tight`` (above 95% of capacity) or ``does not fit``."""
        if not self.fits:
            return "does not fit"
        return "tight" if self.utilization > TIGHT_UTILIZATION else "fits"


@dataclass(frozen=True, slots=True)
class WhatIf:
    """The largest batch and the longest context that fit on one GPU type at a given setup."""

    gpu_id: str
    gpu_count: int
    parallelism: str
    max_batch: int
    max_context: int


@dataclass(frozen=True, slots=True)
class Estimate:
    """Everything the views show for one scenario."""

    scenario: Scenario
    model: ModelSpec
    candidates: tuple[Candidate, ...]
    memory_model: MemoryModel
    warnings: tuple[str, ...] = ()
    ranking: tuple[Candidate, ...] = ()
    advice: tuple[_advice.Change, ...] = ()
    engine: str = ""
    gpu_ids: tuple[str, ...] = ()  # the GPUs the comparison was restricted to (empty: whole catalog)
    #: The calibration profile passed to :func:`estimate` (None: calibration off).
    calibration: CalibrationProfile | None = None
    #: The fitted values that were applied, per GPU (after the scenario's own settings won).
    calibration_fits: tuple[FactorFit, ...] = ()
    #: Filled on first use by :meth:`best_per_gpu` and :meth:`candidate` (the views ask for them
    #: several times per update); not part of the value.
    _memo: dict = field(default_factory=dict, compare=False, repr=False)

    def best_per_gpu(self) -> dict[str, Candidate]:
        """For each GPU, the smallest fitting setup (fewest GPUs, then least memory); else its best try.

        Returns a new dict each call (computed once per estimate)."""
        best = self._memo.get("best")
        if best is None:
            best = {}
            for c in self.candidates:
                cur = best.get(c.gpu.id)
                if cur is None or _better(c, cur):
                    best[c.gpu.id] = c
            self._memo["best"] = best
        return dict(best)

    def candidate(self, key: str) -> Candidate | None:
        """The candidate with this :attr:`Candidate.key`, or ``None``."""
        index = self._memo.get("index")
        if index is None:
            index = self._memo["index"] = {c.key: c for c in self.candidates}
        return index.get(key)

    @property
    def calibrated_gpus(self) -> tuple[str, ...]:
        """Ids of the GPUs whose figures use calibrated values, in catalog order."""
        return tuple(dict.fromkeys(f.gpu_id for f in self.calibration_fits))

    def is_calibrated(self, gpu_id: str) -> bool:
        """Whether this GPU's figures use calibrated values."""
        return gpu_id in self.calibrated_gpus

    def _memory_model_for(self, gpu_id: str) -> MemoryModel:
        """The memory model with this GPU's calibrated runtime overhead (the shared one otherwise)."""
        overhead = next((f.value for f in self.calibration_fits
                         if f.gpu_id == gpu_id and f.factor_name == "runtime_overhead_gib"), None)
        if overhead is None:
            return self.memory_model
        key = ("mm", overhead)
        mm = self._memo.get(key)
        if mm is None:
            base = self.memory_model
            mm = self._memo[key] = MemoryModel(base.model, base.workload, _calibrated_overhead(overhead),
                                               prefill_chunk_tokens=base.prefill_chunk_tokens)
        return mm

    def what_if(self, candidate: Candidate) -> WhatIf:
        """Largest batch and longest context that fit for this candidate's GPU and setup."""
        cap = candidate.capacity_gib * GIB
        mm = self._memory_model_for(candidate.gpu.id) if self.calibration_fits else self.memory_model
        return WhatIf(gpu_id=candidate.gpu.id, gpu_count=candidate.gpu_count, parallelism=candidate.parallelism,
                      max_batch=mm.max_batch(cap, candidate.gpu_count, candidate.parallelism),
                      max_context=mm.max_context(cap, candidate.gpu_count, candidate.parallelism))


def _calibrated_overhead(gib: float) -> RuntimeOverhead:
    """A fitted runtime overhead as a scenario overhead (the context field holds at most 64 GiB)."""
    return RuntimeOverhead(cuda_context_gib=min(gib, 64.0), fragmentation=0.0)


def calibration_lookup(profile: CalibrationProfile, engine: str, scenario: Scenario
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


def _better(a: Candidate, b: Candidate) -> bool:
    if a.fits != b.fits:
        return a.fits
    if a.fits:
        if a.gpu_count != b.gpu_count:
            return a.gpu_count < b.gpu_count
        return a.utilization < b.utilization  # same GPU, so the same order as device memory
    return a.utilization < b.utilization


def resolve_model(scenario: Scenario, models: ModelCatalog) -> ModelSpec:
    """The :class:`ModelSpec` the scenario names (preset, architecture, HF config or parameter count)."""
    src = scenario.model
    if src.preset is not None:
        spec = models.get(src.preset)
    elif src.architecture is not None:
        arch = src.architecture_dict()
        missing = [k for k in ("num_layers", "hidden_size", "num_attention_heads", "intermediate_size", "vocab_size")
                   if k not in arch]
        if missing:
            raise InputError("model.architecture", f"missing {', '.join(missing)}")
        arch.setdefault("num_key_value_heads", arch["num_attention_heads"])
        try:
            spec = ModelSpec(name=src.name or "custom model", **arch)
        except TypeError as exc:
            raise InputError("model.architecture", f"has a value of the wrong type ({exc})") from None
    elif src.hf_config is not None:
        from .hf_import import model_from_hf_config  # local import: only needed for this source
        path = Path(src.hf_config).expanduser()
        if not path.is_absolute() and scenario.base_dir:
            path = Path(scenario.base_dir) / path
        spec = model_from_hf_config(path)
    elif src.gguf is not None:
        from .gguf_file import model_from_gguf  # local import: reads the file's header only
        path = Path(src.gguf).expanduser()
        if not path.is_absolute() and scenario.base_dir:
            path = Path(scenario.base_dir) / path
        spec = model_from_gguf(path)
    else:
        assert src.parameters is not None
        spec = ModelSpec.from_parameter_count(int(src.parameters), name=src.name or "")
    if src.name and spec.name != src.name:
        spec = spec.with_name(src.name)
    return spec


def estimate(scenario: Scenario, gpus: GpuCatalog, models: ModelCatalog,
             gpu_ids: list[str] | None = None, with_advice: bool = True, speed: bool = True,
             _model: ModelSpec | None = None, calibration: CalibrationProfile | None = None) -> Estimate:
    """Compare every candidate of the scenario (or of ``gpu_ids``) and return the :class:`Estimate`.

    ``speed=False`` computes memory and fit only (no speed, cost, ranking or advice).
    ``calibration`` applies a profile's values per GPU (see the module docstring).
    """
    model = _model or resolve_model(scenario, models)
    w, hw = scenario.workload, scenario.hardware
    warnings = list(scenario.warnings)
    if model.architecture_assumed:
        warnings.append("Only a parameter count was given: the architecture is assumed (Llama-like), so "
                        "activation and KV-cache figures are approximate.")
    if model.file_type and w.is_gguf and model.file_type != w.weights:
        warnings.append(f"The GGUF file holds {model.file_type} weights; its own size is used, "
                        f"while speed follows workload.weights {w.weights}.")
    elif model.file_weight_bytes and not w.is_gguf:
        warnings.append(f"The model is a GGUF file ({model.file_type or 'unknown type'}) but workload.weights is "
                        f"{w.weights}: memory is computed for {w.weights}; set weights to the file's type.")
    if w.context_tokens > model.max_context:
        warnings.append(f"The context ({w.context_tokens:,} tokens) exceeds the model's maximum "
                        f"({model.max_context:,}).")
    ids = gpu_ids or ([hw.gpu] if hw.gpu else None)
    selected = [gpus.get(i, "hardware.gpu" if not gpu_ids else "--gpu") for i in ids] if ids else list(gpus)
    if hw.memory_gib is not None:  # a Mac's RAM size or a slice: capacity follows the platform's rule
        selected = [g.with_memory_gib(hw.memory_gib) for g in selected]
    counts = (hw.gpu_count,) if hw.gpu_count else DEFAULT_GPU_COUNTS
    engine = engine_for(w.engine, w.kind)
    # Serving engines prefill in chunks, which bounds the transient activations.
    chunk = engine.prefill_chunk_tokens if not w.is_training else None
    mm = MemoryModel(model, w, scenario.overhead, prefill_chunk_tokens=chunk)
    setups: list[tuple[int, str, MemoryBreakdown, float]] = []  # (count, parallelism, breakdown, bytes/GPU)
    for n in counts:
        if hw.parallelism:
            pars: tuple[str, ...] = (check_parallelism(model, w, n, hw.parallelism),)
        else:
            pars = applicable_parallelisms(model, w, n, hw.gpus_per_node)
        for par in pars:
            bd = mm.breakdown(n, par)
            setups.append((n, par, bd, bd.device_total))
    eff = scenario.efficiency
    mfu, bw_eff, prefill_mfu = eff.mfu, eff.bandwidth_efficiency, eff.prefill_mfu
    lookup = calibration_lookup(calibration, engine.id, scenario) if calibration is not None else None
    applied: list[FactorFit] = []
    rows = []
    notes: list[str] = []
    tokens = job_tokens(w)
    training = w.is_training
    for gpu in selected:
        gpu_setups = setups
        if lookup:
            # Looked up once per GPU; without calibration the loop below is unchanged.
            mfu, bw_eff, prefill_mfu = eff.mfu, eff.bandwidth_efficiency, eff.prefill_mfu
            for f in lookup.get(gpu.id, ()):
                if f.factor_name == "runtime_overhead_gib":
                    # The breakdowns are shared by every GPU: this GPU gets its own copies.
                    gpu_setups = [(n, par, bd2, bd2.device_total) for n, par, bd, _need in setups
                                  for bd2 in (replace(bd, overhead=f.value * GIB),)]
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
        prelude = training_prelude(mm, gpu, engine, mfu) if training and speed else None
        same_speed: dict[tuple[int, str], tuple] = {}
        for n, par, bd, need in gpu_setups:
            fits = need <= cap_bytes
            perf = cost = None
            if fits and speed:
                # Setups whose speed model is identical (DDP and ZeRO-1/2 move the same gradient
                # bytes; ZeRO-3 and FSDP the same gathers) share one computation.
                group = (n, SPEED_GROUP.get(par, par) if training else par)
                known = same_speed.get(group)
                if known is not None:
                    perf, cost = known
                else:
                    if training:
                        perf = training_performance(mm, gpu, n, par, engine, mfu=mfu,
                                                    gpus_per_node=hw.gpus_per_node, prelude=prelude)
                    else:
                        perf = inference_performance(mm, gpu, n, par, engine, bw_eff=bw_eff,
                                                     prefill_mfu=prefill_mfu, gpus_per_node=hw.gpus_per_node)
                    cost = job_cost(w, scenario.budget, gpu, n, perf.tokens_per_s, prices=prices, buy=buy,
                                    tokens=tokens)
                    same_speed[group] = (perf, cost)
                    if perf.notes:
                        notes.extend(perf.notes)
            rows.append((gpu, n, par, bd, fits, need / cap_bytes, (cap_bytes - need) / GIB, perf, cost))
    # Pareto frontier and the cheapest candidate that meets the deadline, before building candidates.
    keys = [_advice.cost_hours(cost) if fits else None for (_, _, _, _, fits, _, _, _, cost) in rows]
    front = _advice.pareto_indices(keys)
    cheapest_meeting = min((k[0] for k, r in zip(keys, rows) if k is not None and k[0] != float("inf")
                            and r[8].meets_deadline is not False), default=None)
    # Positional arguments, in Candidate's field order: this runs hundreds of times per keystroke.
    under, over = _advice.under_provisioned, _advice.over_provisioned
    candidates = tuple(
        Candidate(gpu, n, par, bd, gpu.memory_gib_usable, fits, headroom, util, perf.notes if perf else (), perf,
                  cost, i in front, under(fits, util), over(fits, util, keys[i], cheapest_meeting))
        for i, (gpu, n, par, bd, fits, util, headroom, perf, cost) in enumerate(rows))
    result = Estimate(scenario=scenario, model=model, candidates=candidates, memory_model=mm,
                      warnings=tuple(dict.fromkeys(warnings + group_gpu_notes(notes))), engine=engine.id,
                      gpu_ids=tuple(g.id for g in selected) if ids else (), calibration=calibration,
                      calibration_fits=tuple(applied))
    return _finish(result, with_advice and speed, gpus, models)


def group_gpu_notes(notes: list[str]) -> list[str]:
    """Fold per-GPU notes of the same kind ("X has no BF16: ...") into one line naming every GPU."""
    grouped: dict[str, list[str]] = {}
    order: list[str] = []
    for note in dict.fromkeys(notes):
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
    changes: list = []
    hint = _advice.mig_hint(est)
    workable = [c for c in ranking if c.cost is None or
                (c.cost.meets_deadline is not False and c.cost.within_budget is not False)]
    if with_advice and not workable:
        for label, why, transform in _advice.remedies(est):
            try:
                any_gpu = "any GPU" in label
                variant = estimate(transform(est.scenario), gpus, models,
                                   gpu_ids=list(est.gpu_ids) if est.gpu_ids and not any_gpu else None,
                                   with_advice=False, _model=est.model, calibration=est.calibration)
            except InputError:
                continue
            ok = [c for c in variant.ranking if c.cost is None or
                  (c.cost.meets_deadline is not False and c.cost.within_budget is not False)]
            best = ok[0] if ok else None
            changes.append(_advice.Change(
                change=label, why=why, candidate=best.key if best else None,
                memory_per_gpu_gib=best.memory.device_total / GIB if best else None,
                job_hours=best.cost.job_hours.expected if best and best.cost else None,
                cost_usd=best.cost.cost_usd.expected if best and best.cost and best.cost.cost_usd else None,
                fits=best is not None))
        changes.sort(key=lambda ch: (not ch.fits, ch.cost_usd if ch.cost_usd is not None else float("inf"),
                                     ch.job_hours or float("inf")))
    warnings = est.warnings + ((hint,) if hint else ())
    if with_advice and not ranking:
        warnings += ("Nothing fits: see the changes below.",)
    elif with_advice and not workable:
        warnings += ("Nothing meets the deadline and the budget: see the changes below.",)
    return replace(est, ranking=ranking, advice=tuple(changes), warnings=warnings, _memo={})
