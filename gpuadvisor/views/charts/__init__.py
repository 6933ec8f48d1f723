"""Chart widgets (pyqtgraph) and the shared palette; they display the core's numbers and compute none.

- :class:`VramChart`: memory per GPU as horizontal stacked bars, one row per GPU.
- :class:`CostTimeChart`: cost versus job time, Pareto frontier, deadline and budget.
- :class:`WhatIfChart`: memory versus context length or batch size for a few GPUs;
  its data comes from :func:`whatif_curves` (pure, calls the core).

The names are imported lazily (PEP 562) so that ``python -m gpuadvisor.views.charts.vram_chart``
previews a chart without importing it twice.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

_EXPORTS = {
    "CostTimeChart": "cost_time_chart",
    "VramChart": "vram_chart",
    "WhatIfChart": "whatif_chart",
    "AXIS_LABELS": "whatif_data",
    "WhatIfCurve": "whatif_data",
    "default_gpu_ids": "whatif_data",
    "whatif_curves": "whatif_data",
}
__all__ = [
    "AXIS_LABELS",
    "CostTimeChart",
    "VramChart",
    "WhatIfChart",
    "WhatIfCurve",
    "default_gpu_ids",
    "whatif_curves",
]

if TYPE_CHECKING:
    from .cost_time_chart import CostTimeChart
    from .vram_chart import VramChart
    from .whatif_chart import WhatIfChart
    from .whatif_data import AXIS_LABELS, WhatIfCurve, default_gpu_ids, whatif_curves


def __getattr__(name: str) -> object:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
