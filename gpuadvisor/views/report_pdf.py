"""The comparison report as a PDF: :class:`~gpuadvisor.core.report.Report` + chart images -> QPdfWriter.

The text is one ``QTextDocument`` built from escaped HTML (DejaVu Sans, ligatures off so that
copied or extracted text reads ``offline``, not ``oﬄine``; STACK-NOTES P4). Pagination is done
here rather than by ``QTextDocument.print_``: the document's page height is the printable body
minus a footer band, each page paints its slice of the laid-out document, then the footer
(``gpuadvisor <version> · <scenario> · page N of M`` and the date). The comparison table's
``<thead>`` becomes the table's header row, which the layout repeats on every page the table
reaches.

The charts are the window's own widgets (:class:`VramChart`, :class:`CostTimeChart`, same
palette), created offscreen at a fixed size, fed the estimate the way the window feeds them,
and rendered at three times their logical size (``render_image(dpr=3)``, STACK-NOTES P2).

The PDF is rendered in memory and written with :func:`gpuadvisor.storage.atomic_write_bytes`:
a temporary file in the target folder, flushed, then renamed over the target. Any failure
raises :class:`~gpuadvisor.storage.StorageError` naming the file, and leaves neither a partial
PDF nor a temporary file behind.

``python -m gpuadvisor.views.report_pdf SCENARIO.json OUT.pdf`` previews a report.
"""

from __future__ import annotations

import html
import os
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QLineF, QMarginsF, QRectF, QSizeF, Qt, QUrl
from PySide6.QtGui import (
    QAbstractTextDocumentLayout,
    QColor,
    QFont,
    QFontDatabase,
    QFontMetricsF,
    QImage,
    QPageLayout,
    QPageSize,
    QPainter,
    QPalette,
    QPdfWriter,
    QTextBlock,
    QTextBlockFormat,
    QTextCursor,
    QTextDocument,
    QTextFormat,
    QTextTable,
)
from PySide6.QtWidgets import QApplication

from ..core.estimation.estimate import Estimate
from ..core.presentation.report import WEIGHTS_HEADER, Report
from ..storage import StorageError, atomic_write_bytes
from .charts.palette import (
    BACKGROUND_COLOR,
    FIT_COLOR,
    MUTED_TEXT_COLOR,
    NO_FIT_COLOR,
    TEXT_COLOR,
    TIGHT_COLOR,
)

PAGE_SIZES = {"A4": QPageSize.PageSizeId.A4, "Letter": QPageSize.PageSizeId.Letter}
MARGINS_MM = (12.0, 14.0, 12.0, 12.0)  # left, top, right, bottom
#: Device units per inch. 96 keeps pyqtgraph and point sizes in step (STACK-NOTES P1); the PDF
#: stays vector (text, tables) and the charts are embedded at 3x.
RESOLUTION_DPI = 96
FOOTER_PX = 28
FONT_FAMILY = "DejaVu Sans"
BODY_PT = 9.0
FOOTER_PT = 7.0
CHART_DPR = 3.0
VRAM_CHART_SIZE = (820, 460)  # logical px; render_image grows the height until every GPU's row fits
COST_CHART_SIZE = (820, 460)
SERVING_CHART_SIZE = (820, 370)
#: Each latency-against-load chart (the time to first token, the time between tokens).
LATENCY_CHART_SIZE = (820, 300)
#: Space on the charts page for the heading and the two captions, in px.
CHART_PAGE_TEXT_PX = 150
#: Font sizes tried for the comparison table until every row fits the width on one line.
TABLE_PT_STEPS = (7.0, 6.0, 5.5, 5.0)
#: A full-width table with collapsed borders reports this much more than the body width.
TABLE_BORDER_PX = 2.0
HEADER_BG = "#E8EEF4"
RECOMMENDED_BG = "#E3F1E6"
STRIPE_BG = "#F6F6F6"
RULE_COLOR = "#B0B0B0"


@dataclass(frozen=True, slots=True)
class ReportStats:
    """What an export produced: page count, wall time in seconds and file size in bytes."""

    pages: int
    seconds: float
    bytes: int


# -- fonts and the application -------------------------------------------------------------------
def ensure_app() -> QApplication:
    """The running QApplication, or a new one (set ``QT_QPA_PLATFORM=offscreen`` first when headless)."""
    app = QApplication.instance()
    if app is None:
        app = QApplication(sys.argv[:1] or ["gpuadvisor"])
    return app  # type: ignore[return-value]


def report_font(point_size: float = BODY_PT) -> QFont:
    """DejaVu Sans (the default family when it is missing) with ligatures off."""
    family = FONT_FAMILY if FONT_FAMILY in QFontDatabase.families() else QFont().defaultFamily()
    font = QFont(family)
    font.setPointSizeF(point_size)
    font.setFeature(QFont.Tag("liga"), 0)
    font.setFeature(QFont.Tag("clig"), 0)
    return font


# -- charts --------------------------------------------------------------------------------------
def chart_images(est: Estimate, selected_key: str | None = None) -> tuple[QImage, ...]:
    """(memory chart, cost-versus-time chart[, serving chart]) as print-resolution images, as the
    window draws them; the serving chart only for a service (``workload.serving``).

    ``selected_key`` rings that candidate on the cost chart (the report passes its recommendation).
    """
    from .charts import CostTimeChart, VramChart  # pyqtgraph: imported only when a report is made

    vram = VramChart(dark=False)
    cost = CostTimeChart(dark=False)
    try:
        # The same method the window calls: the ranking's order, the recommendation starred.
        vram.show_estimate(est, selected_key)
        cost.show_estimate(est, selected_key)
        images: tuple[QImage, ...] = (
            vram.render_image(dpr=CHART_DPR, size=VRAM_CHART_SIZE),
            cost.render_image(dpr=CHART_DPR, size=COST_CHART_SIZE),
        )
    finally:
        for chart in (vram, cost):
            chart.deleteLater()
    if est.scenario.workload.serving is not None:
        from .charts.latency_chart import LatencyChart
        from .charts.serving_chart import ServingChart

        serving = ServingChart(dark=False)
        ttft, itl = LatencyChart("ttft", dark=False), LatencyChart("itl", dark=False)
        try:
            serving.show_estimate(est, selected_key)
            ttft.show_estimate(est, selected_key)
            itl.show_estimate(est, selected_key)
            images = images + (
                serving.render_image(dpr=CHART_DPR, size=SERVING_CHART_SIZE),
                ttft.render_image(dpr=CHART_DPR, size=LATENCY_CHART_SIZE),
                itl.render_image(dpr=CHART_DPR, size=LATENCY_CHART_SIZE),
            )
        finally:
            for widget in (serving, ttft, itl):
                widget.deleteLater()
    # No alpha channel: the PDF then embeds one image per chart instead of an image and a mask.
    return images


# -- HTML ------------------------------------------------------------------------------------------
def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


VERDICT_COLORS = {"fits": FIT_COLOR, "tight": TIGHT_COLOR, "does not fit": NO_FIT_COLOR}
#: Header cells break into lines of at most this many characters (never inside a word).
HEADER_LINE_CHARS = 9
RECOMMENDED_MARK = "\u2605"  # a black star after the recommended GPU's name
#: A GPU's full name breaks into lines of at most this many characters (between words): it is never cut.
NAME_LINE_CHARS = 22


def wrapped(name: str, width: int = NAME_LINE_CHARS) -> str:
    """A full name as escaped HTML lines of at most ``width`` characters, broken between words."""
    return "<br>".join(_e(line) for line in textwrap.wrap(name, width, break_long_words=False)) or "&nbsp;"


def report_html(
    report: Report,
    chart_width_px: float,
    chart_sizes: tuple[tuple[int, int], ...],
    table_pt: float = TABLE_PT_STEPS[0],
    serving_chart_size: tuple[int, int] | None = None,
    latency_chart_size: tuple[int, int] | None = None,
) -> str:
    """The report body as HTML for ``QTextDocument`` (images named ``vram.png`` and ``cost-time.png``;
    a service's ``serving.png``, ``latency-ttft.png`` and ``latency-itl.png``).

    Body cells of the comparison table never wrap, so no row can be split by a page break.
    """
    r = report
    p: list[str] = []
    muted = MUTED_TEXT_COLOR
    p.append(f"<h1 style='font-size:17pt; margin-bottom:2px'>{_e(r.title)}</h1>")
    p.append(f"<p style='font-size:11pt; margin-top:0'><b>{_e(r.subtitle)}</b></p>")
    meta = [
        f"Made {_e(r.date)} with gpuadvisor {_e(r.app_version)}",
        f"GPU catalog: {_e(r.catalog_version)}",
        "Prices as of " + (_e(", ".join(r.price_as_of)) if r.price_as_of else "(no dates)"),
    ]
    p.append(f"<p style='color:{muted}; font-size:8pt'>{' &middot; '.join(meta)}</p>")
    if r.scenario_notes:
        p.append(f"<p style='color:{muted}; font-size:8pt'>Notes: {_e(r.scenario_notes)}</p>")

    p.append("<h2>1. Recommendation</h2>")
    box = _e(r.recommendation)
    if r.rent_as:
        # The core's sentence whole, its opening words ("Rent it as", "Where to rent it:") in bold.
        cut = r.rent_as.find(" as ") + 4 if r.rent_as.startswith("Rent") else r.rent_as.find(":") + 1
        box += f"<br><b>{_e(r.rent_as[:cut].rstrip())}</b> {_e(r.rent_as[cut:].lstrip())}"
    for flag in r.recommendation_flags:
        box += f"<br><span style='color:{NO_FIT_COLOR}'><b>\u26a0 {_e(flag)}</b></span>"
    p.append(
        "<table width='100%' cellspacing='0' cellpadding='6' "
        f"style='background-color:{RECOMMENDED_BG}; border-style:none'><tr><td>{box}</td>"
        "</tr></table>"
    )
    if r.changes:
        p.append(
            "<p style='margin-bottom:2px'><b>Changes that make it work</b> (cheapest first; each re-estimated "
            "on the whole comparison):</p>"
        )
        p.append("<ul>" + "".join(f"<li>{_e(c)}</li>" for c in r.changes) + "</ul>")
    if r.warnings:
        p.append(
            f"<p style='color:{NO_FIT_COLOR}'><b>{len(r.warnings)} warning{'s' if len(r.warnings) != 1 else ''}"
            "</b> to read before deciding: see section 6.</p>"
        )

    if r.serving_lines:
        p.append(_serving_html(r, chart_width_px, serving_chart_size, latency_chart_size))

    p.append("<h2>2. The scenario in plain words</h2>")
    p.append("<table cellspacing='0' cellpadding='2'>")
    for label, text in r.scenario_lines:
        p.append(
            f"<tr><td style='color:{muted}; padding-right:10px' nowrap>{_e(label)}</td><td>{_e(text)}</td></tr>"
        )
    p.append("</table>")

    p.append("<h2>3. Comparison, one row per GPU type</h2>")
    p.append(
        f"<table width='100%' cellspacing='0' cellpadding='2' border='1' "
        f"style='border-collapse:collapse; border-color:{RULE_COLOR}; font-size:{table_pt}pt'>"
    )
    p.append(f"<thead><tr style='background-color:{HEADER_BG}'>")
    for i, head in enumerate(r.table_header):
        align = "left" if i < 3 else "right"
        lines = "<br>".join(_e(line) for line in textwrap.wrap(head, HEADER_LINE_CHARS)) or "&nbsp;"
        p.append(f"<th align='{align}' style='font-size:{table_pt}pt; white-space:nowrap'>{lines}</th>")
    p.append("</tr></thead><tbody>")
    for n, row in enumerate(r.table_rows):
        bg = RECOMMENDED_BG if row.recommended else (STRIPE_BG if n % 2 else BACKGROUND_COLOR)
        p.append(f"<tr style='background-color:{bg}'>")
        for i, cell in enumerate(row.cells):
            style = f"font-size:{table_pt}pt; white-space:nowrap"
            if i == 2:
                style += f"; color:{VERDICT_COLORS.get(row.verdict, TEXT_COLOR)}"
            if i in (10, 11) and cell == "no":
                style += f"; color:{NO_FIT_COLOR}"
            text = wrapped(cell) if i == 0 else _e(cell)
            if row.recommended and i == 0:
                text = f"<b>{text}&nbsp;{RECOMMENDED_MARK}</b>"
            align = "left" if i < 3 else "right"
            p.append(f"<td align='{align}' style='{style}'>{text}</td>")
        p.append("</tr>")
    p.append("</tbody></table>")
    notes = list(r.table_notes)
    if any(row.recommended for row in r.table_rows):
        notes.insert(0, f"{RECOMMENDED_MARK} and the green row: the recommended setup.")
    p.append(f"<p style='color:{muted}; font-size:7.5pt; margin-top:3px'>{_e(' '.join(notes))}</p>")
    if r.weights_rows:
        p.append(_weights_html(r, table_pt))

    p.append("<h2>4. Charts</h2>")
    captions = (
        r.vram_caption
        or "Memory per GPU for each GPU type's row of the table, in the table's order (\u2605: the recommended "
        "setup, outlined): coloured segments are the memory components, the black tick is the usable capacity, "
        "the marker on the right the verdict.",
        "Job time against cost for every setup that fits and has a price (all GPU counts and splits). Blue: the "
        "cost/time frontier (nothing is both cheaper and faster); whiskers: the low\u2013high range; dashed lines: "
        "the deadline and the budget"
        + (
            "; the star is the recommended setup; the frontier's points are labelled GPU \u00d7 count."
            if r.recommended_key
            else "; the frontier's points are labelled GPU \u00d7 count."
        ),
    )
    figures: tuple[tuple[str, str], ...] = (("vram.png", captions[0]), ("cost-time.png", captions[1]))
    if r.serving_lines or r.session:
        # A service or a session has no job to time: no cost-time chart (a service's throughput-latency
        # chart is in the recommendation).
        figures = figures[:1]
    for n, ((name, caption), (w, h)) in enumerate(zip(figures, chart_sizes), 1):
        height = round(chart_width_px * h / w)
        # The caption is an <h4> above its chart, so keep_headings_with_next() keeps the two together.
        p.append(
            f"<h4 style='color:{muted}; font-size:7.5pt; font-weight:normal; margin-top:8px; "
            f"margin-bottom:2px'><b>Figure {n}.</b> {_e(caption)}</h4>"
        )
        p.append(
            f"<p align='center' style='margin-top:0'><img src='{name}' width='{round(chart_width_px)}' "
            f"height='{height}'></p>"
        )

    p.append("<h2>5. Rent or buy</h2>")
    if r.session:
        p.append(
            "<p style='font-size:8pt'>Not compared: an interactive session on the machine you own has no job "
            "to rent GPUs for. Give the scenario a number of requests (workload.requests) to time and price "
            "one, rented or on your own card.</p>"
        )
    else:
        p.append(f"<p style='font-size:8pt'>{_e(r.rent_buy_settings)}</p>")
    if r.rent_buy_rows:
        p.append(
            f"<table width='100%' cellspacing='0' cellpadding='3' border='1' "
            f"style='border-collapse:collapse; border-color:{RULE_COLOR}; font-size:8pt'>"
        )
        p.append(f"<thead><tr style='background-color:{HEADER_BG}'>")
        for i, head in enumerate(r.rent_buy_header):
            p.append(f"<th align='{'left' if i == 0 else 'right'}' style='font-size:8pt'>{_e(head)}</th>")
        p.append("</tr></thead><tbody>")
        for rent_buy in r.rent_buy_rows:
            p.append(
                "<tr>"
                + "".join(
                    f"<td align='{'left' if i == 0 else 'right'}' style='font-size:8pt"
                    f"{'; white-space:nowrap' if i not in (1,) else ''}'>{wrapped(c) if i == 0 else _e(c)}</td>"
                    for i, c in enumerate(rent_buy.cells)
                )
                + "</tr>"
            )
        p.append("</tbody></table>")
    p.append("<ul>" + "".join(f"<li>{_e(f)}</li>" for f in r.rent_buy_findings) + "</ul>")

    p.append("<h2>6. Assumptions, method and warnings</h2>")
    p.append("<h3>Warnings</h3>")
    if r.warnings:
        p.append("<ul>" + "".join(f"<li>{_e(w)}</li>" for w in r.warnings) + "</ul>")
    else:
        p.append("<p>None.</p>")
    p.append("<h3>Method in brief</h3>")
    p.append("<ul>" + "".join(f"<li>{_e(m)}</li>" for m in r.method_lines) + "</ul>")
    p.append(f"<h3>Engine profile: {_e(r.engine_name)}</h3>")
    p.append("<table cellspacing='0' cellpadding='2'>")
    for label, value in r.engine_factors:
        p.append(
            f"<tr><td style='color:{muted}; padding-right:10px'>{_e(label)}</td><td>{_e(value)}</td></tr>"
        )
    fitted = (
        "an assumption, not a fit to measurements: " + r.engine_calibrated_on.removeprefix("assumed:").strip()
        if r.engine_assumed
        else "fitted on the published measurements "
        + r.engine_calibrated_on
        + " (rows of tests/data/validation/measurements.csv; see docs/validation.md)"
    )
    p.append(
        f"<tr><td style='color:{muted}; padding-right:10px'>Where the factors come from</td>"
        f"<td>{_e(fitted)}</td></tr></table>"
    )
    if r.calibration_lines:
        p.append("<h3>Calibration to your measurements</h3>")
        p.append("<ul>" + "".join(f"<li>{_e(line)}</li>" for line in r.calibration_lines) + "</ul>")
    p.append("<h3>Catalog sources of the GPUs shown</h3>")
    p.append(
        f"<p style='font-size:7.5pt'>{_e(r.catalog_version)}. Figures are dense datasheet values; prices are "
        "indicative. Price sources: "
        + "; ".join(f"[P{i}] {_e(s)}" for i, s in enumerate(r.price_sources, 1))
        + "</p>"
    )
    for s in r.sources:  # paragraphs, not a table: a long entry may continue on the next page
        price = f"prices {s.price_as_of}" + (f" [P{s.price_ref}]" if s.price_ref else "")
        p.append(
            f"<p style='font-size:7pt; margin-top:0; margin-bottom:2px'><b>{_e(s.gpu_name)}</b>: "
            f"{_e(s.spec_source)}; {_e(price)}</p>"
        )
    return "\n".join(p)


def _weights_html(r: Report, table_pt: float) -> str:
    """Which weight type fits the one GPU compared: a table with the scenario's own row marked."""
    muted = MUTED_TEXT_COLOR
    out = [
        f"<h3 style='font-size:10pt; margin-top:10px; margin-bottom:3px'>{_e(r.weights_title)}</h3>",
        f"<table cellspacing='0' cellpadding='2' border='1' "
        f"style='border-collapse:collapse; border-color:{RULE_COLOR}; font-size:{table_pt}pt'>",
        f"<thead><tr style='background-color:{HEADER_BG}'>",
    ]
    for i, head in enumerate(WEIGHTS_HEADER):
        lines = "<br>".join(_e(line) for line in textwrap.wrap(head, HEADER_LINE_CHARS))
        out.append(f"<th align='{'left' if i < 1 else 'right'}' style='font-size:{table_pt}pt'>{lines}</th>")
    out.append("</tr></thead><tbody>")
    for n, row in enumerate(r.weights_rows):
        current = n == r.weights_current
        bg = RECOMMENDED_BG if current else (STRIPE_BG if n % 2 else BACKGROUND_COLOR)
        out.append(f"<tr style='background-color:{bg}'>")
        for i, cell in enumerate(row):
            style = f"font-size:{table_pt}pt; white-space:nowrap"
            if i == 2 and cell == "no":
                style += f"; color:{NO_FIT_COLOR}"
            text = f"<b>{_e(cell)}</b>" if current and i == 0 else _e(cell)
            out.append(f"<td align='{'left' if i < 1 else 'right'}' style='{style}'>{text}</td>")
        out.append("</tr>")
    out.append("</tbody></table>")
    note = r.weights_note + (" The green row: the scenario's weights." if r.weights_current >= 0 else "")
    out.append(f"<p style='color:{muted}; font-size:7.5pt; margin-top:3px'>{_e(note)}</p>")
    return "".join(out)


def _serving_html(
    r: Report,
    chart_width_px: float,
    chart_size: tuple[int, int] | None,
    latency_size: tuple[int, int] | None = None,
) -> str:
    """The service's part of the recommendation: traffic, targets, the fleet, its monthly cost, the
    fleet table and the throughput-latency chart (all the core's words and figures)."""
    muted = MUTED_TEXT_COLOR
    p = ["<h3>Serving: traffic, targets and the fleet</h3>", "<table cellspacing='0' cellpadding='2'>"]
    for label, text in r.serving_lines:
        p.append(
            f"<tr><td style='color:{muted}; padding-right:10px' nowrap>{_e(label)}</td><td>{_e(text)}</td></tr>"
        )
    p.append("</table>")
    if r.fleet_rows:
        # The fleet table without its widest column (buy vs rent is in the lines above).
        keep = [i for i, h in enumerate(r.fleet_header) if h != "buy vs rent"]
        p.append(
            f"<table width='100%' cellspacing='0' cellpadding='2' border='1' "
            f"style='border-collapse:collapse; border-color:{RULE_COLOR}; font-size:7pt; margin-top:4px'>"
        )
        p.append(f"<thead><tr style='background-color:{HEADER_BG}'>")
        for i in keep:
            lines = "<br>".join(_e(line) for line in textwrap.wrap(r.fleet_header[i], HEADER_LINE_CHARS))
            p.append(f"<th align='{'left' if i < 2 else 'right'}' style='font-size:7pt'>{lines}</th>")
        p.append("</tr></thead><tbody>")
        for n, row in enumerate(r.fleet_rows[:12]):
            bg = (
                RECOMMENDED_BG if n == 0 and r.recommended_key else (STRIPE_BG if n % 2 else BACKGROUND_COLOR)
            )
            cells = "".join(
                f"<td align='{'left' if i < 2 else 'right'}' style='font-size:7pt; white-space:nowrap'>"
                f"{wrapped(row[i]) if i == 0 else _e(row[i])}</td>"
                for i in keep
            )
            p.append(f"<tr style='background-color:{bg}'>{cells}</tr>")
        p.append("</tbody></table>")
        p.append(
            f"<p style='color:{muted}; font-size:7.5pt; margin-top:3px'>One row per GPU type, its cheapest "
            f"fleet meeting the targets first. {_e(r.fleet_note)}</p>"
        )
    if chart_size is not None:
        w, h = chart_size
        width = min(chart_width_px, 820.0)
        p.append(
            f"<h4 style='color:{muted}; font-size:7.5pt; font-weight:normal; margin-top:8px; margin-bottom:2px'>"
            "<b>Serving.</b> Output tokens/s per GPU against the tokens/s each user sees, for the best fleet "
            "of each GPU type (★: recommended): more requests in flight raise the throughput and slow "
            "every user. Dashed: the ITL target; diamonds: each fleet's operating point.</h4>"
        )
        p.append(
            f"<p align='center' style='margin-top:0'><img src='serving.png' width='{round(width)}' "
            f"height='{round(width * h / w)}'></p>"
        )
    if latency_size is not None:
        w, h = latency_size
        width = min(chart_width_px, 820.0)
        p.append(
            f"<h4 style='color:{muted}; font-size:7.5pt; font-weight:normal; margin-top:8px; margin-bottom:2px'>"
            f"<b>Latency against load.</b> {_e(r.latency_caption)}</h4>"
        )
        for name in ("latency-ttft.png", "latency-itl.png"):
            p.append(
                f"<p align='center' style='margin-top:0; margin-bottom:0'><img src='{name}' "
                f"width='{round(width)}' height='{round(width * h / w)}'></p>"
            )
    return "\n".join(p)


def _stylesheet() -> str:
    return (
        f"body {{ color:{TEXT_COLOR}; }} "
        "h1 { font-size:17pt; } h2 { font-size:12pt; margin-top:14px; margin-bottom:4px; } "
        "h3 { font-size:9.5pt; margin-top:8px; margin-bottom:2px; } "
        "th { font-weight:bold; } li { margin-bottom:2px; }"
    )


# -- the PDF ---------------------------------------------------------------------------------------
def render_pdf_bytes(
    report: Report, est: Estimate, page_size: str = "A4", images: tuple[QImage, ...] | None = None
) -> tuple[bytes, int]:
    """The report as PDF bytes and its page count (no file is touched).

    ``images`` are the two chart images from :func:`chart_images`. Drawing them needs widgets,
    so it happens in the GUI thread; with them given, the rest (layout and PDF writing) may run
    in a worker thread, which is how the window keeps responding during an export.
    """
    if page_size not in PAGE_SIZES:
        raise ValueError(f"page_size must be one of {', '.join(PAGE_SIZES)}, not {page_size!r}")
    if images is None:
        ensure_app()
        images = chart_images(est, report.recommended_key)
    vram_img, cost_img = images[0], images[1]
    serving_img = images[2] if len(images) > 2 else None
    latency_imgs = images[3:5] if len(images) > 4 else ()

    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    writer = QPdfWriter(buffer)
    writer.setPageSize(QPageSize(PAGE_SIZES[page_size]))
    writer.setPageOrientation(QPageLayout.Orientation.Portrait)
    writer.setPageMargins(QMarginsF(*MARGINS_MM), QPageLayout.Unit.Millimeter)
    writer.setResolution(RESOLUTION_DPI)
    writer.setTitle(f"{report.title}: {report.subtitle}")
    writer.setCreator(f"gpuadvisor {report.app_version}")

    body = writer.pageLayout().paintRectPixels(writer.resolution())
    body_w, body_h = float(body.width()), float(body.height())
    page_h = body_h - FOOTER_PX

    doc = QTextDocument()
    doc.documentLayout().setPaintDevice(writer)
    doc.setDefaultFont(report_font(BODY_PT))
    doc.setDefaultStyleSheet(_stylesheet())
    doc.setDocumentMargin(0)
    doc.addResource(QTextDocument.ResourceType.ImageResource, QUrl("vram.png"), vram_img)
    doc.addResource(QTextDocument.ResourceType.ImageResource, QUrl("cost-time.png"), cost_img)
    serving_size = None
    if serving_img is not None:
        doc.addResource(QTextDocument.ResourceType.ImageResource, QUrl("serving.png"), serving_img)
        serving_size = (round(serving_img.width() / CHART_DPR), round(serving_img.height() / CHART_DPR))
    latency_size = None
    for name, img in zip(("latency-ttft.png", "latency-itl.png"), latency_imgs):
        doc.addResource(QTextDocument.ResourceType.ImageResource, QUrl(name), img)
        latency_size = (round(img.width() / CHART_DPR), round(img.height() / CHART_DPR))
    sizes = tuple(
        (round(img.width() / CHART_DPR), round(img.height() / CHART_DPR)) for img in (vram_img, cost_img)
    )
    # Both charts and their captions share one page.
    chart_w = min(body_w, (page_h - CHART_PAGE_TEXT_PX) / sum(h / w for w, h in sizes))
    doc.setPageSize(QSizeF(body_w, page_h))
    for table_pt in TABLE_PT_STEPS:
        doc.setHtml(
            f"<body>{report_html(report, chart_w, sizes, table_pt, serving_size, latency_size)}</body>"
        )
        if comparison_table_width(doc) <= body_w + TABLE_BORDER_PX:
            break
    keep_headings_with_next(doc, page_h)
    pages = doc.pageCount()

    painter = QPainter()
    if not painter.begin(writer):
        raise StorageError("report", "cannot start the PDF writer")
    # Lossless (Flate) chart images: flat colours compress better than with JPEG, and stay sharp.
    painter.setRenderHint(QPainter.RenderHint.LosslessImageRendering, True)
    try:
        footer_font = report_font(FOOTER_PT)
        metrics = QFontMetricsF(footer_font, writer)
        ctx = QAbstractTextDocumentLayout.PaintContext()
        ctx.palette.setColor(QPalette.ColorRole.Text, QColor(TEXT_COLOR))
        for i in range(pages):
            if i:
                writer.newPage()
            painter.save()
            painter.setClipRect(QRectF(0, 0, body_w, page_h))
            painter.translate(0, -i * page_h)
            ctx.clip = QRectF(0, i * page_h, body_w, page_h)
            doc.documentLayout().draw(painter, ctx)
            painter.restore()
            _draw_footer(painter, report, i + 1, pages, body_w, body_h, footer_font, metrics)
    finally:
        painter.end()
    buffer.close()
    return bytes(data.data()), pages


def comparison_table_width(doc: QTextDocument) -> float:
    """Laid-out width of the document's widest table (the comparison table), in px."""
    layout = doc.documentLayout()
    widths = [
        layout.frameBoundingRect(frame).width()
        for frame in doc.rootFrame().childFrames()
        if isinstance(frame, QTextTable)
    ]
    return max(widths, default=0.0)


def _first_line_top(layout: QAbstractTextDocumentLayout, block: QTextBlock) -> float:
    """Where a block's first line starts (a block can start on one page and its first line, pushed
    down by the pagination, on the next)."""
    top = layout.blockBoundingRect(block).top()
    text_layout = block.layout()
    if text_layout is not None and text_layout.lineCount():
        top += text_layout.lineAt(0).y()
    return top


def keep_headings_with_next(doc: QTextDocument, page_h: float, max_passes: int = 12) -> int:
    """Move a heading that ends a page to the next page, with what follows it; returns how many moved.

    Qt's layout has no "keep with next": after each layout, a heading whose next block starts
    on a later page gets a page break before it, and the document is laid out again.
    """
    layout = doc.documentLayout()
    moved = 0
    for _ in range(max_passes):
        orphan = None
        block = doc.begin()
        while block.isValid():
            nxt = block.next()
            if block.blockFormat().headingLevel() > 0 and nxt.isValid():
                top = _first_line_top(layout, block)
                nxt_top = _first_line_top(layout, nxt)
                if int(nxt_top // page_h) > int(top // page_h) and top % page_h > 1:
                    orphan = block
                    break
            block = nxt
        if orphan is None:
            break
        # A run of headings (a section and its first subsection) moves as one: the break goes
        # before the first of them, and none stays between them.
        first = orphan
        while first.previous().isValid() and first.previous().blockFormat().headingLevel() > 0:
            first = first.previous()
        fmt = QTextBlockFormat()
        fmt.setPageBreakPolicy(QTextFormat.PageBreakFlag.PageBreak_AlwaysBefore)
        QTextCursor(first).mergeBlockFormat(fmt)
        block = first.next()
        while block.isValid() and block.blockFormat().headingLevel() > 0:
            fmt = block.blockFormat()
            fmt.setPageBreakPolicy(QTextFormat.PageBreakFlag.PageBreak_Auto)
            QTextCursor(block).setBlockFormat(fmt)
            block = block.next()
        moved += 1
    return moved


def _draw_footer(
    painter: QPainter,
    report: Report,
    page: int,
    pages: int,
    width: float,
    height: float,
    font: QFont,
    metrics: QFontMetricsF,
) -> None:
    top = height - FOOTER_PX + 8
    painter.save()
    painter.setPen(QColor(RULE_COLOR))
    painter.drawLine(QLineF(0.0, top, width, top))
    painter.setFont(font)
    painter.setPen(QColor(MUTED_TEXT_COLOR))
    right = report.date
    right_w = metrics.horizontalAdvance(right)
    prefix = f"gpuadvisor {report.app_version} \u00b7 "
    suffix = f" \u00b7 page {page} of {pages}"
    room = width - right_w - 20 - metrics.horizontalAdvance(prefix + suffix)
    name = metrics.elidedText(report.scenario_name, Qt.TextElideMode.ElideRight, max(room, 40))
    rect = QRectF(0, top + 3, width, FOOTER_PX - 11)
    painter.drawText(
        rect, int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter), prefix + name + suffix
    )
    painter.drawText(rect, int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter), right)
    painter.restore()


def check_target(path: str | os.PathLike[str]) -> Path:
    """The output path, or StorageError when it is a folder or its folder does not exist."""
    target = Path(path)
    if target.is_dir():
        raise StorageError(
            target.name, f"cannot write {target.name}: it is a folder, not a file", path=target
        )
    if not target.parent.is_dir():
        raise StorageError(
            target.name, f"cannot write {target.name}: the folder {target.parent} does not exist", path=target
        )
    return target


def export_pdf(
    report: Report,
    est: Estimate,
    path: str | os.PathLike[str],
    page_size: str = "A4",
    images: tuple[QImage, ...] | None = None,
) -> ReportStats:
    """Write the report to ``path`` as a PDF (``page_size`` ``"A4"`` or ``"Letter"``) and return its stats.

    The file appears whole or not at all. Raises :class:`StorageError` naming the file when the
    folder is missing, the path is a folder, or writing fails (permissions, a full disk, a file
    held open elsewhere); nothing is left behind then.
    """
    start = time.perf_counter()
    if page_size not in PAGE_SIZES:
        raise ValueError(f"page_size must be one of {', '.join(PAGE_SIZES)}, not {page_size!r}")
    target = check_target(path)
    data, pages = render_pdf_bytes(report, est, page_size, images)
    atomic_write_bytes(target, data)
    return ReportStats(pages=pages, seconds=time.perf_counter() - start, bytes=len(data))


def _main(argv: list[str] | None = None) -> int:
    import datetime

    from ..core.estimation.estimate import estimate
    from ..core.formats.scenario import load_scenario
    from ..core.presentation.report import build_report
    from ..storage.user_catalog_store import load_catalogs

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m gpuadvisor.views.report_pdf SCENARIO.json OUT.pdf", file=sys.stderr)
        return 2
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    gpus, models = load_catalogs()
    est = estimate(load_scenario(args[0]), gpus, models)
    stats = export_pdf(build_report(est, gpus.meta, datetime.date.today()), est, args[1])
    print(f"{args[1]}: {stats.pages} pages, {stats.seconds:.2f} s, {stats.bytes:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(_main())
