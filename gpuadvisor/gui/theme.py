"""Light and dark appearance: the desktop's palette by default, or a choice in View > Appearance.

Colours the window draws itself (banners, the summary's warning line, the detail panel's
cautions) come from :func:`colors`, chosen by the lightness of the application palette, so they
stay readable on a dark desktop. Charts follow the same palette (``charts/palette.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

APPEARANCES = (("system", "Follow the desktop"), ("light", "Light"), ("dark", "Dark"))


@dataclass(frozen=True)
class Colors:
    """Colours for text the window draws itself."""

    ok: str
    caution: str
    problem: str
    banner_bg: str
    banner_fg: str
    notice_bg: str
    notice_fg: str
    muted: str


LIGHT = Colors(
    ok="#117733",
    caution="#8a5300",
    problem="#8a0015",
    banner_bg="#fde8ea",
    banner_fg="#8a0015",
    notice_bg="#fff4d6",
    notice_fg="#5c3b00",
    muted="#555555",
)
DARK = Colors(
    ok="#7fd69b",
    caution="#f2c46d",
    problem="#ff8f9c",
    banner_bg="#4a1f26",
    banner_fg="#ffd7dc",
    notice_bg="#3f3416",
    notice_fg="#f7e3b0",
    muted="#b8b8b8",
)


def is_dark(palette: QPalette | None = None) -> bool:
    """Whether the palette's window colour is dark (lightness below half)."""
    palette = palette or QGuiApplication.palette()
    return palette.color(QPalette.ColorRole.Window).lightnessF() < 0.5


def colors(palette: QPalette | None = None) -> Colors:
    return DARK if is_dark(palette) else LIGHT


def dark_palette() -> QPalette:
    """A dark palette for the Fusion style (View > Appearance > Dark)."""
    p = QPalette()
    base, window, text, mid = QColor("#1e1f22"), QColor("#2b2d31"), QColor("#e6e6e6"), QColor("#3c3f45")
    roles = {
        QPalette.ColorRole.Window: window,
        QPalette.ColorRole.WindowText: text,
        QPalette.ColorRole.Base: base,
        QPalette.ColorRole.AlternateBase: QColor("#26282c"),
        QPalette.ColorRole.ToolTipBase: window,
        QPalette.ColorRole.ToolTipText: text,
        QPalette.ColorRole.Text: text,
        QPalette.ColorRole.Button: mid,
        QPalette.ColorRole.ButtonText: text,
        QPalette.ColorRole.BrightText: QColor("#ff6b6b"),
        QPalette.ColorRole.Link: QColor("#7ab7ff"),
        QPalette.ColorRole.Highlight: QColor("#3d6fb4"),
        QPalette.ColorRole.HighlightedText: QColor("#ffffff"),
        QPalette.ColorRole.PlaceholderText: QColor("#8c8c8c"),
        QPalette.ColorRole.Mid: QColor("#50535a"),
        QPalette.ColorRole.Dark: QColor("#17181a"),
        QPalette.ColorRole.Light: QColor("#4a4d54"),
    }
    for role, color in roles.items():
        p.setColor(role, color)
    disabled = QColor("#7a7a7a")
    for role in (QPalette.ColorRole.Text, QPalette.ColorRole.ButtonText, QPalette.ColorRole.WindowText):
        p.setColor(QPalette.ColorGroup.Disabled, role, disabled)
    return p


def apply_appearance(app: QApplication, mode: str) -> None:
    """Use the desktop's palette ("system"), or force "light" or "dark" (Fusion style)."""
    if mode == "dark":
        app.setStyle("Fusion")
        app.setPalette(dark_palette())
    elif mode == "light":
        app.setStyle("Fusion")
        app.setPalette(app.style().standardPalette())
    else:
        hints = QGuiApplication.styleHints()
        scheme = hints.colorScheme() if hasattr(hints, "colorScheme") else Qt.ColorScheme.Unknown
        if scheme == Qt.ColorScheme.Dark and not is_dark(app.palette()):
            # The desktop says dark but the platform theme gave a light palette (no theme plugin).
            app.setStyle("Fusion")
            app.setPalette(dark_palette())
