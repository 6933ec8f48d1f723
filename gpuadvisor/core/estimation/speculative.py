"""Speculative decoding on a replica: the step, the tokens it yields, its memory, and where it pays.

With ``b`` sequences decoding, a speculative step drafts ``k`` tokens per sequence and verifies
them in one target pass (``workload.speculative``, :mod:`..specs.speculative`)::

    step_spec(b) = k x draft(b) + verify(b)
    verify(b)    = the target's decode step with b sequences scoring k + 1 tokens each: its weights
                   and KV cache read once, its FLOPs (and, for a mixture of experts, the experts its
                   tokens route to) those of b (k + 1) tokens (DecodeStep.terms)
    tokens/step  = tau = (1 - a^(k+1)) / (1 - a)        (Leviathan et al. 2023)

Each user then sees ``tau / step_spec(b)`` tokens a second against ``1 / step(b)`` without it.
The drafts:

- ``draft``: the draft model's own decode step on the same GPUs and split (its DecodeStep); its
  prompt is prefilled too, its weights and KV cache sit beside the target's;
- ``eagle`` and ``mtp``: one transformer layer and the output head per drafted token, costed as that
  share of the target's weight bytes (``(block / layers + head) / weights``) of its step; its
  weights are one layer of the target's and its KV cache one layer's worth;
- ``ngram``: a lookup on the host, nothing on the GPU.

A large batch is compute bound, where verifying ``k + 1`` tokens per sequence costs about ``k + 1``
times a plain step: the gain shrinks with the load and vanishes at the concurrency where
``tau x step(b) <= step_spec(b)`` (:func:`vanishing_concurrency`). From there on the engine
decodes without speculating (vLLM's ``--speculative-disable-by-batch-size``), so speculation never
makes a step slower than a plain one: where it does not pay even at one request (a poor acceptance
rate, a heavy draft), the answer says so and the service runs as without it. Where the step has no closed
form (llama.cpp's own speed model), verifying the extra ``b k`` tokens is costed at the prefill's
marginal time per token.

References: Leviathan, Kalman and Matias 2023, "Fast Inference from Transformers via Speculative
Decoding"; Chen et al. 2023, "Accelerating Large Language Model Decoding with Speculative
Sampling"; Li et al. 2024, "EAGLE: Speculative Sampling Requires Rethinking Feature Uncertainty";
DeepSeek-AI 2024, "DeepSeek-V3 Technical Report" (multi-token prediction).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..specs.speculative import SpeculativeMethod, SpeculativeSpec


@dataclass(frozen=True, slots=True)
class SpeculativeGain:
    """What speculative decoding gives one replica (the JSON's ``serving.speculative``)."""

    method: str
    num_tokens: int
    acceptance_rate: float
    tokens_per_step: float
    #: Tokens/s one user sees with one request in flight, with and without it.
    batch1_tokens_per_s: float
    batch1_tokens_per_s_without: float
    #: The concurrency at or above which it no longer raises a user's speed (None: not within the
    #: engine's reach).
    vanishes_at_concurrency: int | None
    draft_model: str | None = None

    @property
    def speedup(self) -> float:
        return self.batch1_tokens_per_s / self.batch1_tokens_per_s_without

    def to_dict(self) -> dict[str, object]:
        return {
            "method": self.method,
            "draft_model": self.draft_model,
            "num_tokens": self.num_tokens,
            "acceptance_rate": round(self.acceptance_rate, 4),
            "tokens_per_step": round(self.tokens_per_step, 3),
            "batch1_tokens_per_s": round(self.batch1_tokens_per_s, 2),
            "batch1_tokens_per_s_without": round(self.batch1_tokens_per_s_without, 2),
            "speedup_at_batch1": round(self.speedup, 3),
            "vanishes_at_concurrency": self.vanishes_at_concurrency,
        }


def light_draft_share(
    block_weight_bytes: float, num_layers: int, head_bytes: float, weight_bytes: float
) -> float:
    """The share of the target's decode step an EAGLE or MTP draft step takes: one layer of blocks
    and the output head over all the weights."""
    if weight_bytes <= 0:
        return 0.0
    return min(1.0, (block_weight_bytes / max(num_layers, 1) + head_bytes) / weight_bytes)


def vanishing_concurrency(plain: np.ndarray, spec_step: np.ndarray, tokens_per_step: float) -> int | None:
    """The smallest batch at which a speculative step no longer yields more tokens a second per
    user than a plain one (``tau x step(b) <= step_spec(b)``), None when it always does."""
    b = np.arange(len(plain))
    worse = (b >= 1) & (tokens_per_step * plain <= spec_step)
    hits = np.nonzero(worse)[0]
    return int(hits[0]) if hits.size else None


def gain_of(spec: SpeculativeSpec, plain: np.ndarray, spec_step: np.ndarray, tau: float) -> SpeculativeGain:
    """The gain at one request and where it vanishes (none, speed unchanged, where the drafts cost
    more than they save even at one request: the engine then decodes without them)."""
    return SpeculativeGain(
        method=str(spec.method),
        num_tokens=spec.k,
        acceptance_rate=spec.alpha,
        tokens_per_step=tau,
        batch1_tokens_per_s=max(tau / float(spec_step[1]), 1.0 / float(plain[1])),
        batch1_tokens_per_s_without=1.0 / float(plain[1]),
        vanishes_at_concurrency=vanishing_concurrency(plain, spec_step, tau),
        draft_model=spec.draft_model,
    )


def is_light(spec: SpeculativeSpec) -> bool:
    """A proposer that is a layer of the target (EAGLE, MTP)."""
    return spec.method in (SpeculativeMethod.EAGLE, SpeculativeMethod.MTP)


@dataclass(frozen=True, slots=True)
class SpeculativeTables:
    """A replica's speculative decoding, as the planner and the simulation use it."""

    #: The speculative step (s) at batch ``0..top`` (index = batch): ``k`` draft steps and a verify.
    step_s: np.ndarray
    #: The plain step at the same batches.
    plain_s: np.ndarray
    tokens_per_step: float
    #: Prefill seconds per prompt token the proposer adds (a draft model prefills the prompt too).
    extra_prefill_s_per_token: float
    #: Bytes per GPU the proposer's weights take, and its KV cache as a share of the target's.
    extra_weight_bytes: float
    kv_share: float
    gain: SpeculativeGain

    def per_token(self, b: float) -> float:
        """Seconds per generated token of one sequence at batch ``b`` (``step_spec(b) / tau``)."""
        return float(np.interp(b, np.arange(len(self.step_s)), self.step_s)) / self.tokens_per_step


def grid(top: int) -> np.ndarray:
    """Batches at which the steps are evaluated (every one to 16, then geometric to ``top``)."""
    small = np.arange(1, min(top, 16) + 1)
    if top <= 16:
        return small
    return np.unique(np.concatenate([small, np.rint(np.geomspace(16, top, 40)).astype(int)]))


def tables(
    spec: SpeculativeSpec,
    top: int,
    plain_step: Callable[[float], float],
    terms: Callable[[float], tuple[float, float, float, float]] | None,
    exposed: float,
    kv_s: float,
    prefill_s_per_token: float,
    draft_step: Callable[[float], float] | None,
    light_share: float,
    draft_prefill_s_per_token: float,
    extra_weight_bytes: float,
    kv_share: float,
) -> SpeculativeTables:
    """The speculative step at batch ``0..top`` (see the module docstring), evaluated at a grid of
    batches and interpolated (the steps are piecewise affine)."""
    g = grid(max(1, top))
    plain_g = np.array([plain_step(float(b)) for b in g])
    # verify(b): the plain step's terms at b sequences of k + 1 tokens each.
    q = spec.k + 1
    ver_g = np.empty(len(g))
    for i, b in enumerate(g):
        if terms is None:
            ver_g[i] = plain_g[i] + b * (q - 1) * prefill_s_per_token
            continue
        t_mem_q, t_comp_q, fixed, _cpu_q = terms(float(b * q))
        t_mem = t_mem_q - (b * q - b) * kv_s
        t_gpu = max(t_mem, t_comp_q) + fixed
        _m, _c, _f, t_cpu = terms(float(b))
        v = t_gpu + exposed * t_cpu if t_gpu >= t_cpu else t_cpu + exposed * t_gpu
        ver_g[i] = max(v, plain_g[i])
    if spec.method == SpeculativeMethod.DRAFT and draft_step is not None:
        draft_g = np.array([draft_step(float(b)) for b in g])
    elif is_light(spec):
        draft_g = plain_g * light_share
    else:
        draft_g = np.zeros(len(g))
    idx = np.arange(1, top + 1)
    plain = np.empty(top + 1)
    plain[1:] = np.interp(idx, g, plain_g)
    plain[0] = plain[1]
    raw = np.empty(top + 1)
    raw[1:] = np.interp(idx, g, spec.k * draft_g + ver_g)
    raw[0] = raw[1]
    tau = spec.tokens_per_step
    gain = gain_of(spec, plain, raw, tau)
    # Where speculating no longer pays (at and above the batch where it vanishes, or at every batch
    # when the drafts cost more than they save) the engine decodes without it, as vLLM does above
    # --speculative-disable-by-batch-size: its step yields one token, written here as tau tokens in
    # tau plain steps' time so that the table keeps one token count.
    step = np.minimum(raw, tau * plain)
    return SpeculativeTables(
        step_s=step,
        plain_s=plain,
        tokens_per_step=tau,
        extra_prefill_s_per_token=draft_prefill_s_per_token,
        extra_weight_bytes=extra_weight_bytes,
        kv_share=kv_share,
        gain=gain,
    )
