"""The ranking: what to buy, one row per GPU type, in the core's decision order.

The core decides (:mod:`gpuadvisor.core.estimation.recommendation`): ``Estimate.best_per_gpu()`` gives one
best setup per GPU type with the recommended setup first, ``Estimate.decision`` names the
recommended setup and its runner-up, and each setup's ``CostEstimate`` says whether it meets the
deadline and the budget ("meets", "likely", "at risk"; "within", "likely", "over"). The ranking
shows those answers in words and never works them out again.

- :mod:`.model`: rows and texts (:class:`RankingModel`), numeric sorting (:class:`RankingProxy`)
- :mod:`.view`: :class:`RankingView`, which paints its cells in one pass and explains an empty table
- :mod:`.table`: :class:`RankingTable`, the widget the window embeds (toggles, copy, CSV export)
- :mod:`.colors`: status colours readable on light and dark palettes

The table is redrawn on every input change, so it is built for speed: the model filters rows
itself, caches each row's texts and updates rows in place; the view paints the visible cells in
one pass from that cache (``docs/development.md``, "Performance notes").
"""

from .colors import TableColors, contrast_ratio, readable, table_colors
from .model import (
    COL_BUDGET,
    COL_COST,
    COL_DEADLINE,
    COL_GPU,
    COL_HEADROOM,
    COL_NEED,
    COL_PER_M,
    COL_PICK,
    COL_PRICE_DATE,
    COL_RANGE,
    COL_SETUP,
    COL_TIME,
    COL_TPS,
    COL_VERDICT,
    EXPAND_LABEL,
    FITTING_FILTER_LABEL,
    HEADERS,
    LIMITS_FILTER_LABEL,
    RECOMMENDED_MARK,
    ROLE_KEY,
    ROLE_SORT,
    RUNNER_UP_MARK,
    RankingModel,
    RankingProxy,
    setup_name,
    setup_words,
)
from .table import RankingTable, to_csv
from .view import RankingView

__all__ = [
    "COL_BUDGET",
    "COL_COST",
    "COL_DEADLINE",
    "COL_GPU",
    "COL_HEADROOM",
    "COL_NEED",
    "COL_PER_M",
    "COL_PICK",
    "COL_PRICE_DATE",
    "COL_RANGE",
    "COL_SETUP",
    "COL_TIME",
    "COL_TPS",
    "COL_VERDICT",
    "EXPAND_LABEL",
    "FITTING_FILTER_LABEL",
    "HEADERS",
    "LIMITS_FILTER_LABEL",
    "RECOMMENDED_MARK",
    "ROLE_KEY",
    "ROLE_SORT",
    "RUNNER_UP_MARK",
    "RankingModel",
    "RankingProxy",
    "RankingTable",
    "RankingView",
    "TableColors",
    "contrast_ratio",
    "readable",
    "setup_name",
    "setup_words",
    "table_colors",
    "to_csv",
]
