"""Colours of the ranking table that stay readable on the application's palette, light or dark.

The status hues are the charts' (``gpuadvisor.views.charts.palette``: fits, tight, does not fit).
On a given background each is moved towards black (light palette) or white (dark palette) until
its contrast ratio reaches 4.5:1, the WCAG 2.1 minimum for normal text (success criterion 1.4.3;
relative luminance and contrast ratio as defined there). The recommended row is tinted with a
light wash of the palette's selection colour over its base colour, painted opaque (blending a
translucent fill costs more to paint on every update).

References: W3C, "Web Content Accessibility Guidelines (WCAG) 2.1", 2018,
https://www.w3.org/TR/WCAG21/#contrast-minimum and #dfn-relative-luminance.
"""

from __future__ import annotations

from PySide6.QtGui import QColor, QPalette

from ...views.charts.palette import FIT_COLOR, NO_FIT_COLOR, TIGHT_COLOR

#: The status words of the verdict, deadline and budget columns, and their tone.
TONES = {
    "fits": "good",
    "tight": "caution",
    "does not fit": "bad",
    "meets": "good",
    "within": "good",
    "likely": "caution",
    "at risk": "bad",
    "over": "bad",
}
#: WCAG 2.1 minimum contrast for normal text.
TEXT_CONTRAST = 4.5
#: How far the recommended row's tint goes from the base colour towards the selection colour.
RECOMMENDED_TINT = 0.16


def _channel(v: float) -> float:
    return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4


def luminance(c: QColor) -> float:
    """WCAG 2.1 relative luminance (0 black to 1 white)."""
    return 0.2126 * _channel(c.redF()) + 0.7152 * _channel(c.greenF()) + 0.0722 * _channel(c.blueF())


def contrast_ratio(a: QColor, b: QColor) -> float:
    """WCAG 2.1 contrast ratio of two colours (1 to 21)."""
    la, lb = luminance(a), luminance(b)
    return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)


def mix(a: QColor, b: QColor, t: float) -> QColor:
    """``a`` moved a fraction ``t`` of the way towards ``b``, opaque."""
    return QColor.fromRgbF(
        a.redF() + (b.redF() - a.redF()) * t,
        a.greenF() + (b.greenF() - a.greenF()) * t,
        a.blueF() + (b.blueF() - a.blueF()) * t,
    )


def readable(color: QColor, background: QColor, ratio: float = TEXT_CONTRAST) -> QColor:
    """``color`` moved towards white (dark background) or black (light one) until it has ``ratio`` of contrast."""
    # Past this luminance black text has more contrast than white (the two ratios cross at 0.179).
    target = QColor("white") if luminance(background) < 0.179 else QColor("black")
    c = QColor(color)
    for step in range(1, 11):
        if contrast_ratio(c, background) >= ratio:
            break
        c = mix(color, target, step / 10)
    return c


class TableColors:
    """The table's colours for one palette: status tones, the recommended row's tint, the stale flag."""

    def __init__(self, palette: QPalette, group: QPalette.ColorGroup = QPalette.ColorGroup.Active) -> None:
        base = palette.color(group, QPalette.ColorRole.Base)
        self.text = palette.color(group, QPalette.ColorRole.Text)
        self.tones = {
            "good": readable(QColor(FIT_COLOR), base),
            "caution": readable(QColor(TIGHT_COLOR), base),
            "bad": readable(QColor(NO_FIT_COLOR), base),
        }
        self.stale = self.tones["caution"]
        self.recommended = mix(base, palette.color(group, QPalette.ColorRole.Highlight), RECOMMENDED_TINT)

    def tone(self, word: str) -> QColor | None:
        """The colour of a status word (``fits``, ``at risk``...), None for any other text."""
        name = TONES.get(word) or ("bad" if word.startswith("misses ") else None)
        return self.tones[name] if name else None


_CACHE: dict[tuple[int, ...], TableColors] = {}


def table_colors(palette: QPalette, group: QPalette.ColorGroup = QPalette.ColorGroup.Active) -> TableColors:
    """:class:`TableColors` for this palette, computed once per set of colours (every paint asks)."""
    key = (group.value,) + tuple(
        palette.color(group, role).rgba()
        for role in (QPalette.ColorRole.Base, QPalette.ColorRole.Text, QPalette.ColorRole.Highlight)
    )
    colors = _CACHE.get(key)
    if colors is None:
        if len(_CACHE) > 16:
            _CACHE.clear()
        colors = _CACHE[key] = TableColors(palette, group)
    return colors
