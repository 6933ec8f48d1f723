"""Render the application icon (resources/icons/gpuadvisor.svg) to PNG sizes, .ico and .icns with Qt.

    python packaging/make_icons.py OUTPUT_DIR

Runs with Qt's offscreen platform, so it needs no display and no image tool besides PySide6
(already a dependency). Writes gpuadvisor-<size>.png for the hicolor theme, gpuadvisor.ico
(Windows executable icon) and, where Qt's icns plugin can write, gpuadvisor.icns (macOS).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

SIZES = (16, 32, 48, 64, 128, 256, 512)
ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QGuiApplication, QImage, QImageWriter, QPainter
    from PySide6.QtSvg import QSvgRenderer

    app = QGuiApplication.instance() or QGuiApplication([sys.argv[0]])  # noqa: F841 - kept alive while painting
    renderer = QSvgRenderer(str(ROOT / "resources" / "icons" / "gpuadvisor.svg"))
    if not renderer.isValid():
        print("error: resources/icons/gpuadvisor.svg is not a valid SVG", file=sys.stderr)
        return 1

    def render(size: int) -> QImage:
        image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        renderer.render(painter)
        painter.end()
        return image

    for size in SIZES:
        path = out / f"gpuadvisor-{size}.png"
        if not render(size).save(str(path), "PNG"):
            print(f"error: could not write {path}", file=sys.stderr)
            return 1
    formats = {bytes(f).decode() for f in QImageWriter.supportedImageFormats()}
    for fmt, size in (("ico", 256), ("icns", 512)):
        if fmt in formats:
            render(size).save(str(out / f"gpuadvisor.{fmt}"), fmt.upper())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
