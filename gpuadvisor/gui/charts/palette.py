"""The colours of every chart, shared with the PDF report.

Memory components use the Okabe-Ito palette (Okabe & Ito 2008, "Color Universal Design"),
which stays distinguishable under the common colour-vision deficiencies; overhead is grey
because it is not a tensor. Status colours are always paired with a distinct marker shape
or a text label, so colour is never the only cue.

Only :func:`qcolor` touches Qt; the hex strings can be used anywhere (HTML, CSS).
"""

from __future__ import annotations

from PySide6.QtGui import QColor

#: Memory components in stacking order (bottom/left first); matches ``gpuadvisor.core.memory.COMPONENTS``.
COMPONENT_ORDER: tuple[str, ...] = (
    "weights", "gradients", "optimizer", "activations", "kv_cache", "adapters", "overhead")

COMPONENT_LABELS: dict[str, str] = {
    "weights": "Weights",
    "gradients": "Gradients",
    "optimizer": "Optimizer states",
    "activations": "Activations",
    "kv_cache": "KV cache",
    "adapters": "Adapters (LoRA)",
    "overhead": "Overhead (CUDA context, fragmentation)",
}

#: Short labels for legends where space is tight.
COMPONENT_SHORT_LABELS: dict[str, str] = {
    "weights": "Weights",
    "gradients": "Gradients",
    "optimizer": "Optimizer",
    "activations": "Activations",
    "kv_cache": "KV cache",
    "adapters": "Adapters",
    "overhead": "Overhead",
}

COMPONENT_COLORS: dict[str, str] = {
    "weights": "#0072B2",      # blue
    "gradients": "#E69F00",    # orange
    "optimizer": "#CC79A7",    # reddish purple
    "activations": "#009E73",  # bluish green
    "kv_cache": "#56B4E9",     # sky blue
    "adapters": "#F0E442",     # yellow
    "overhead": "#999999",     # grey
}

FIT_COLOR = "#117733"        # dark green (Tol), drawn as a filled circle
TIGHT_COLOR = "#DDAA33"      # amber (Tol high-contrast yellow), drawn as a triangle
NO_FIT_COLOR = "#D55E00"     # vermillion, drawn as a cross
PARETO_COLOR = "#0072B2"     # blue: the cost/time frontier
OTHER_COLOR = "#A8A8A8"      # grey: everything that is not highlighted
SELECTED_COLOR = "#000000"   # black ring around the selected point
DEADLINE_COLOR = "#D55E00"   # vermillion
BUDGET_COLOR = "#AA3377"     # purple (Tol)
CAPACITY_COLOR = "#000000"   # the usable-memory marker
TEXT_COLOR = "#222222"
MUTED_TEXT_COLOR = "#555555"
BACKGROUND_COLOR = "#FFFFFF"
ERROR_BAR_COLOR = "#B8B8B8"

#: Colours for a few series on one chart (what-if curves), in order.
SERIES_COLORS: tuple[str, ...] = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9")

#: Every colour by name, for :func:`qcolor` and for the report.
NAMED_COLORS: dict[str, str] = {
    **COMPONENT_COLORS,
    "fit": FIT_COLOR, "tight": TIGHT_COLOR, "no_fit": NO_FIT_COLOR, "pareto": PARETO_COLOR,
    "other": OTHER_COLOR, "selected": SELECTED_COLOR, "deadline": DEADLINE_COLOR, "budget": BUDGET_COLOR,
    "capacity": CAPACITY_COLOR, "text": TEXT_COLOR, "muted_text": MUTED_TEXT_COLOR,
    "background": BACKGROUND_COLOR, "error_bar": ERROR_BAR_COLOR,
}


def verdict_color(verdict: str) -> str:
    """The colour of a candidate's verdict (``fits``, ``tight`` or ``does not fit``)."""
    return {"fits": FIT_COLOR, "tight": TIGHT_COLOR}.get(verdict, NO_FIT_COLOR)


def qcolor(name: str, alpha: int | None = None) -> QColor:
    """A ``QColor`` from a palette name (``"weights"``, ``"pareto"``...) or a ``#rrggbb`` string.

    ``alpha`` (0-255) overrides the opacity. Unknown names raise ``KeyError`` so a typo never
    silently draws black.
    """
    value = name if name.startswith("#") else NAMED_COLORS[name]
    color = QColor(value)
    if not color.isValid():
        raise KeyError(name)
    if alpha is not None:
        color.setAlpha(alpha)
    return color
