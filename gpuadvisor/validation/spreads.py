"""The 80% ranges from held-out residuals: split-conformal order statistics of measured / estimate.

Each engine's range (``spread_low``, ``spread_high``) and each serving figure's are set from the
leave-one-source-out residuals of the validation set (:func:`.harness.spreads_from`), so a range
states how far new work is expected to land from the estimate, not how well the fit matches the
rows it was fitted to.

References: Vovk, Gammerman and Shafer 2005, "Algorithmic Learning in a Random World" (conformal
prediction); Lei, G'Sell, Rinaldo, Tibshirani and Wasserman 2018, "Distribution-Free Predictive
Inference for Regression" (split conformal).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


def spread_from_ratios(
    ratios: Sequence[float], low_quantile: float, high_quantile: float, floor: float = 0.1
) -> tuple[float, float]:
    """(spread_low, spread_high) whose range holds the ``low_quantile`` .. ``high_quantile`` share of
    ``ratios`` (measured / estimate) for new work: ``1 - r_low`` and ``r_high - 1``, each at least
    ``floor``.

    ``r_low`` and ``r_high`` are the split-conformal order statistics of the ``n`` held-out ratios
    (Vovk et al. 2005; Lei et al. 2018): the ``floor((n + 1) q_low)``-th and the
    ``ceil((n + 1) q_high)``-th smallest (the extremes when ``n`` is too small). Unlike the
    interpolated sample quantile, this keeps the share of a new ratio inside the range at least
    ``q_high - q_low`` when new work errs as the held-out work did. The spreads are kept to two
    decimals rounded outward, so that the range still holds both order statistics (rounding to the
    nearest hundredth could leave the ratio that sets a bound just outside it), except where the
    low spread is capped at 0.9 (a ratio below 0.1: the range's slow end stays a tenth of the
    estimate)."""
    v = sorted(r for r in ratios if math.isfinite(r))
    if not v:
        return floor, floor
    n = len(v)
    lo_rank = max(1, math.floor((n + 1) * low_quantile))
    hi_rank = min(n, math.ceil((n + 1) * high_quantile))
    low = max(floor, 1.0 - v[lo_rank - 1])
    high = max(floor, v[hi_rank - 1] - 1.0)
    return min(_outward(low), 0.9), _outward(high)


def _outward(spread: float) -> float:
    """``spread`` to two decimals, rounded up (a hair of float error, 1e-9, is not a hundredth)."""
    return math.ceil(spread * 100.0 - 1e-9) / 100.0


def engine_spreads(
    ratios_by_engine: Mapping[str, Sequence[float]],
    kinds: Mapping[str, str],
    low_quantile: float = 0.1,
    high_quantile: float = 0.9,
    min_rows: int = 15,
    floor: float = 0.1,
) -> dict[str, tuple[float, float]]:
    """Each engine's (spread_low, spread_high) from held-out ratios measured / estimate.

    An engine with at least ``min_rows`` ratios gets its own quantiles; the others get the quantiles
    of the pooled ratios of the engines of their kind that have fewer (``kinds`` maps engine id to
    "inference" or "training"), so that the pooled range describes the engines it is used for; a kind
    whose engines all have their own gets the quantiles of all its ratios."""
    pooled: dict[str, list[float]] = {}
    everything: dict[str, list[float]] = {}
    for eid, ratios in ratios_by_engine.items():
        finite = [r for r in ratios if math.isfinite(r)]
        everything.setdefault(kinds.get(eid, ""), []).extend(finite)
        if len(finite) < min_rows:
            pooled.setdefault(kinds.get(eid, ""), []).extend(finite)
    for kind, ratios in everything.items():
        pooled.setdefault(kind, ratios)
    out: dict[str, tuple[float, float]] = {}
    for eid, kind in kinds.items():
        own = [r for r in ratios_by_engine.get(eid, ()) if math.isfinite(r)]
        ratios = own if len(own) >= min_rows else pooled.get(kind, [])
        if ratios:
            out[eid] = spread_from_ratios(ratios, low_quantile, high_quantile, floor)
    return out
