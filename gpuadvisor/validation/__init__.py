"""Validation: the estimator set against published measurements, in sample and out of sample.

- :mod:`.data`: the validation set (``tests/data/validation``): sources, measurement rows, and
  each row restated as a scenario;
- :mod:`.harness`: predictions, the engine-profile fit, leave-one-source-out, summary figures;
- :mod:`.ledger`: the prospective ledger: each new source's first score by the shipped model,
  append-only, and the rows the fits read (:func:`load_measurements` leaves new sources out until
  they are admitted);
- :mod:`.report`: the text ``scripts/validate.py`` prints and ``docs/validation.md``.
"""

from .data import (
    DATA_DIR,
    GROUPS,
    Row,
    Source,
    ValidationDataError,
    load_sources,
    scenario_dict,
)
from .harness import (
    Comparison,
    Predictor,
    fit_engine,
    fit_engines,
    group_stats,
    in_sample,
    out_of_sample,
    per_source,
    summary,
)
from .ledger import load_measurements

__all__ = [
    "DATA_DIR",
    "GROUPS",
    "Comparison",
    "Predictor",
    "Row",
    "Source",
    "ValidationDataError",
    "fit_engine",
    "fit_engines",
    "group_stats",
    "in_sample",
    "load_measurements",
    "load_sources",
    "out_of_sample",
    "per_source",
    "scenario_dict",
    "summary",
]
