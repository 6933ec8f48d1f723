"""Speculative decoding of a service: ``workload.speculative``.

A cheap proposer drafts ``num_tokens`` tokens; the served (target) model scores them all in one
forward pass and keeps the longest prefix it agrees with, plus one token of its own. With each
drafted token accepted with probability ``a`` (independently), a target step yields on average

    tau = 1 + a + a^2 + ... + a^k = (1 - a^(k+1)) / (1 - a)

tokens (Leviathan, Kalman and Matias 2023, "Fast Inference from Transformers via Speculative
Decoding", ICML, eq. 1). The methods differ in the proposer:

- ``draft``: a smaller model of the same family (``draft_model``, a catalog preset) decodes the
  ``k`` tokens one after another;
- ``eagle``: a one-layer head on the target's own hidden states (EAGLE, Li et al. 2024), one layer
  and the output head per drafted token;
- ``mtp``: the model's own multi-token-prediction module (DeepSeek-V3), one block and the head per
  drafted token;
- ``ngram``: tokens looked up in the prompt and the answer so far (prompt lookup), no GPU work.

Default acceptance rates (per drafted token, at the method's usual draft length), each the ``a``
whose ``tau`` is the mean accepted tokens per step a published benchmark measured:

- ``eagle`` 0.79, ``draft`` 0.58, ``ngram`` 0.42: Spec-Bench's leaderboard on an A100
  (hemingkx/Spec-Bench ``Leaderboard.md``, commit 09244ff, "Leaderboard on A100", Vicuna-7B-v1.3,
  column "#Mean Accepted Tokens": EAGLE 3.61, SpS (a 68M-parameter draft model) 2.28, PLD (prompt
  lookup) 1.73), read at draft lengths 5, 5 and 10;
- ``mtp`` 0.85: DeepSeek-V3's second-token prediction, "the acceptance rate of the second token
  prediction ranges between 85% and 90%" (DeepSeek-AI 2024, "DeepSeek-V3 Technical Report",
  arXiv:2412.19437, section 5.4.3), at one drafted token.

The acceptance rate depends on the model pair and the text far more than on the hardware; state
your own when you have measured it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ..errors import InputError


class SpeculativeMethod(StrEnum):
    """Who drafts the tokens the target model verifies."""

    DRAFT = "draft"
    EAGLE = "eagle"
    NGRAM = "ngram"
    MTP = "mtp"


@dataclass(frozen=True, slots=True)
class MethodDefaults:
    """A method's default draft length and acceptance rate, and where the rate comes from."""

    num_tokens: int
    acceptance_rate: float
    source: str


METHOD_DEFAULTS: dict[SpeculativeMethod, MethodDefaults] = {
    SpeculativeMethod.EAGLE: MethodDefaults(
        5,
        0.79,
        "Spec-Bench A100 leaderboard, EAGLE on Vicuna-7B: 3.61 tokens a step (hemingkx/Spec-Bench 09244ff)",
    ),
    SpeculativeMethod.DRAFT: MethodDefaults(
        5,
        0.58,
        "Spec-Bench A100 leaderboard, SpS on Vicuna-7B: 2.28 tokens a step (hemingkx/Spec-Bench 09244ff)",
    ),
    SpeculativeMethod.NGRAM: MethodDefaults(
        10,
        0.42,
        "Spec-Bench A100 leaderboard, PLD on Vicuna-7B: 1.73 tokens a step (hemingkx/Spec-Bench 09244ff)",
    ),
    SpeculativeMethod.MTP: MethodDefaults(
        1, 0.85, "DeepSeek-V3 Technical Report, section 5.4.3: 85-90% of second tokens accepted"
    ),
}
#: The most tokens a step may draft.
MAX_DRAFT_TOKENS = 16

_KEYS = ("method", "draft_model", "num_tokens", "acceptance_rate")


def tokens_per_step(acceptance_rate: float, num_tokens: int) -> float:
    """Expected tokens one target step yields: ``(1 - a^(k+1)) / (1 - a)`` (``k + 1`` when every
    draft is accepted)."""
    a, k = acceptance_rate, num_tokens
    if a >= 1.0:
        return float(k + 1)
    return (1.0 - a ** (k + 1)) / (1.0 - a)


@dataclass(frozen=True, slots=True)
class SpeculativeSpec:
    """Speculative decoding as a service runs it (``workload.speculative``)."""

    method: str
    draft_model: str | None = None  # a catalog preset, for ``draft``
    num_tokens: int | None = None  # None: the method's default
    acceptance_rate: float | None = None  # None: the method's cited default

    def __post_init__(self) -> None:
        if self.method not in tuple(SpeculativeMethod):
            raise InputError(
                "workload.speculative.method", f"must be one of {', '.join(SpeculativeMethod)}", self.method
            )
        object.__setattr__(self, "method", SpeculativeMethod(self.method))
        if self.method == SpeculativeMethod.DRAFT:
            if not isinstance(self.draft_model, str) or not self.draft_model:
                raise InputError(
                    "workload.speculative.draft_model", "is required for method draft: a model preset id"
                )
        elif self.draft_model is not None:
            raise InputError(
                "workload.speculative.draft_model",
                f"is only for method draft, not {self.method}",
                self.draft_model,
            )
        k = self.num_tokens
        if k is not None and (
            isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_DRAFT_TOKENS
        ):
            raise InputError(
                "workload.speculative.num_tokens", f"must be a whole number from 1 to {MAX_DRAFT_TOKENS}", k
            )
        a = self.acceptance_rate
        if a is not None:
            if (
                isinstance(a, bool)
                or not isinstance(a, (int, float))
                or not math.isfinite(a)
                or not 0.0 <= a <= 1.0
            ):
                raise InputError("workload.speculative.acceptance_rate", "must be a share from 0 to 1", a)
            object.__setattr__(self, "acceptance_rate", float(a))

    @property
    def defaults(self) -> MethodDefaults:
        return METHOD_DEFAULTS[SpeculativeMethod(self.method)]

    @property
    def k(self) -> int:
        """Tokens drafted a step."""
        return self.num_tokens if self.num_tokens is not None else self.defaults.num_tokens

    @property
    def alpha(self) -> float:
        """The acceptance rate per drafted token."""
        return self.acceptance_rate if self.acceptance_rate is not None else self.defaults.acceptance_rate

    @property
    def tokens_per_step(self) -> float:
        return tokens_per_step(self.alpha, self.k)

    @classmethod
    def from_value(cls, value: object) -> SpeculativeSpec:
        """A spec from the scenario's JSON object (errors name ``workload.speculative.<key>``)."""
        if isinstance(value, SpeculativeSpec):
            return value
        if not isinstance(value, dict):
            raise InputError("workload.speculative", "must be a JSON object", type(value).__name__)
        unknown = [k for k in value if k not in _KEYS]
        if unknown:
            raise InputError(
                f"workload.speculative.{unknown[0]}", f"is not a key; known keys: {', '.join(_KEYS)}"
            )
        if "method" not in value:
            raise InputError("workload.speculative.method", "is required")
        return cls(**value)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"method": str(self.method)}
        for k in ("draft_model", "num_tokens", "acceptance_rate"):
            if getattr(self, k) is not None:
                out[k] = getattr(self, k)
        return out
