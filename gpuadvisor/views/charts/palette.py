"""The colours of every chart, shared with the PDF report.

Memory components use the Okabe-Ito palette (Okabe & Ito 2008, "Color Universal Design"),
which stays distinguishable under the common colour-vision deficiencies; overhead is grey
because it is not a tensor. Status colours are always paired with a distinct marker shape
or a text label, so colour is never the only cue.

Two variants: light (the default, and always the PDF's) and dark, chosen by
:func:`chart_colors`; :func:`is_dark_palette` decides from the application palette. The dark
variant keeps the memory components (they stay apart on a dark background) and lightens the
lines and text that would vanish on it.

Only :func:`qcolor` and :func:`is_dark_palette` touch Qt; the hex strings can be used anywhere
(HTML, CSS).
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtGui import QColor, QPalette

from ...core.estimation.memory import COMPONENTS

#: Memory components in stacking order (bottom/left first): the core's ``memory.COMPONENTS``.
COMPONENT_ORDER: tuple[str, ...] = COMPONENTS

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
    "weights": "#0072B2",  # blue
    "gradients": "#E69F00",  # orange
    "optimizer": "#CC79A7",  # reddish purple
    "activations": "#009E73",  # bluish green
    "kv_cache": "#56B4E9",  # sky blue
    "adapters": "#F0E442",  # yellow
    "overhead": "#999999",  # grey
}

FIT_COLOR = "#117733"  # dark green (Tol), drawn as a filled circle
TIGHT_COLOR = "#DDAA33"  # amber (Tol high-contrast yellow), drawn as a triangle
NO_FIT_COLOR = "#D55E00"  # vermillion, drawn as a cross
PARETO_COLOR = "#0072B2"  # blue: the cost/time frontier
OTHER_COLOR = "#A8A8A8"  # grey: everything that is not highlighted
SELECTED_COLOR = "#000000"  # black ring around the selected point
DEADLINE_COLOR = "#D55E00"  # vermillion
BUDGET_COLOR = "#AA3377"  # purple (Tol)
CAPACITY_COLOR = "#000000"  # the usable-memory marker
RECOMMENDED_COLOR = "#F0B400"  # gold star (its outline is the text colour)
TEXT_COLOR = "#222222"
MUTED_TEXT_COLOR = "#555555"
BACKGROUND_COLOR = "#FFFFFF"
ERROR_BAR_COLOR = "#B8B8B8"
TRACK_COLOR = "#EEEEEE"  # the VRAM chart's capacity track
HIGHLIGHT_COLOR = "#D8E6F5"  # the band behind the selected row

#: Colours for a few series on one chart (what-if curves), in order.
SERIES_COLORS: tuple[str, ...] = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9")

#: Every colour by name, for :func:`qcolor` and for the report.
NAMED_COLORS: dict[str, str] = {
    **COMPONENT_COLORS,
    "fit": FIT_COLOR,
    "tight": TIGHT_COLOR,
    "no_fit": NO_FIT_COLOR,
    "pareto": PARETO_COLOR,
    "other": OTHER_COLOR,
    "selected": SELECTED_COLOR,
    "deadline": DEADLINE_COLOR,
    "budget": BUDGET_COLOR,
    "capacity": CAPACITY_COLOR,
    "text": TEXT_COLOR,
    "muted_text": MUTED_TEXT_COLOR,
    "background": BACKGROUND_COLOR,
    "error_bar": ERROR_BAR_COLOR,
    "recommended": RECOMMENDED_COLOR,
    "track": TRACK_COLOR,
    "highlight": HIGHLIGHT_COLOR,
}


@dataclass(frozen=True, slots=True)
class ChartColors:
    """Every colour a chart draws with, for one background (``#rrggbb`` strings)."""

    dark: bool
    background: str
    text: str
    muted_text: str
    capacity: str
    track: str
    highlight: str
    selected: str
    recommended: str
    pareto: str
    other: str
    other_edge: str
    error_bar: str
    deadline: str
    budget: str
    fit: str
    tight: str
    no_fit: str
    components: dict[str, str]
    series: tuple[str, ...]

    def verdict(self, verdict: str) -> str:
        """The colour of a verdict (``fits``, ``tight`` or ``does not fit``)."""
        return {"fits": self.fit, "tight": self.tight}.get(verdict, self.no_fit)


LIGHT = ChartColors(
    dark=False,
    background=BACKGROUND_COLOR,
    text=TEXT_COLOR,
    muted_text=MUTED_TEXT_COLOR,
    capacity=CAPACITY_COLOR,
    track=TRACK_COLOR,
    highlight=HIGHLIGHT_COLOR,
    selected=SELECTED_COLOR,
    recommended=RECOMMENDED_COLOR,
    pareto=PARETO_COLOR,
    other=OTHER_COLOR,
    other_edge="#7A7A7A",
    error_bar=ERROR_BAR_COLOR,
    deadline=DEADLINE_COLOR,
    budget=BUDGET_COLOR,
    fit=FIT_COLOR,
    tight=TIGHT_COLOR,
    no_fit=NO_FIT_COLOR,
    components=dict(COMPONENT_COLORS),
    series=SERIES_COLORS,
)

#: Dark variant: the same hues where they read on #1E1F22, lighter ones where they would not
#: (Okabe-Ito blue, Tol purple and dark green are too dark there; sky blue, pink and a light green
#: take their place). Text and lines are light grey, never pure white (less glare).
DARK = ChartColors(
    dark=True,
    background="#1E1F22",
    text="#E6E6E6",
    muted_text="#A8A8A8",
    capacity="#F2F2F2",
    track="#34363B",
    highlight="#2F4560",
    selected="#FFFFFF",
    recommended=RECOMMENDED_COLOR,
    pareto="#56B4E9",
    other="#6E6E6E",
    other_edge="#9A9A9A",
    error_bar="#4A4A4A",
    deadline="#FF7F3F",
    budget="#EE88CC",
    fit="#44BB66",
    tight=TIGHT_COLOR,
    no_fit="#FF7F3F",
    components=dict(COMPONENT_COLORS),
    series=("#56B4E9", "#FF7F3F", "#2CC290", "#EE88CC", "#E69F00", "#F0E442"),
)


def chart_colors(dark: bool) -> ChartColors:
    """The colours for a dark (``True``) or light background; the PDF always uses the light one."""
    return DARK if dark else LIGHT


def is_dark_palette(palette: QPalette) -> bool:
    """True when the palette's window colour is dark (lightness below one half)."""
    return palette.color(QPalette.ColorRole.Window).lightnessF() < 0.5


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
