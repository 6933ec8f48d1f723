"""The PDF comparison report, read back with poppler: figures, fonts, pages, footers, errors.

Every figure is checked against ``gpuadvisor-cli estimate --json`` (the same candidate that the
report's row shows, found through the JSON's ``what_if`` list, which holds each GPU's best
setup), formatted with the report's own rules, and one row is also pinned to literal values.
The poppler tools (pdftotext, pdfinfo, pdffonts, pdftoppm) come from ``poppler-utils``, which
``make test`` installs; without them those checks are skipped.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from PySide6.QtGui import QFontDatabase, QImage
from report_json import json_row_cells

from gpuadvisor import __version__
from gpuadvisor.core.estimation.estimate import estimate
from gpuadvisor.core.formats.scenario import load_scenario, loads_scenario
from gpuadvisor.core.formatting import fmt_usd
from gpuadvisor.core.presentation.report import TABLE_HEADER, build_report
from gpuadvisor.storage import StorageError
from gpuadvisor.storage.user_catalog_store import load_catalogs
from gpuadvisor.views import report_pdf
from gpuadvisor.views.report_pdf import export_pdf

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "docs" / "examples" / "lora-llama-3.1-8b.json"
TODAY = datetime.date(2026, 11, 29)
POPPLER = all(shutil.which(t) for t in ("pdftotext", "pdfinfo", "pdffonts", "pdftoppm"))
needs_poppler = pytest.mark.skipif(
    not POPPLER,
    reason="poppler-utils (pdftotext, pdfinfo, pdffonts, pdftoppm) is not installed; `make test` installs it",
)
#: A row pinned to literal values (sample scenario, bundled catalog of 2026-11-29, speed constants
#: refitted whole 2026-12-08 with vLLM's prompt pass given its own host time (GEMM half size 1.0 token,
#: width half size 327, a kernel's GPU time 3.85 µs), LoRA's adapter kernels counted, the ranges'
#: spreads rounded outward).
H100_ROW = (
    "H100 SXM5 80 GB",
    "8 \u00d7 ddp (DP8\u00b7full)",
    "fits",
    "32.7",
    "79.7",
    "+46.9",
    "59,005",
    "2.0\u20133.4 h",
    "$30\u2013$188",
    "$0.09",
    "yes",
    "yes",
)


# -- helpers -------------------------------------------------------------------------------------
def run(*args: str, timeout: float = 60) -> str:
    proc = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout, check=True)
    return proc.stdout


def normalise(text: str) -> str:
    """NFKC (ligatures become letters) and every run of white space one space."""
    return " ".join(unicodedata.normalize("NFKC", text).split())


def page_texts(pdf: Path) -> list[str]:
    pages = int(re.search(r"Pages:\s+(\d+)", run("pdfinfo", str(pdf))).group(1))
    return [
        normalise(run("pdftotext", "-f", str(i), "-l", str(i), str(pdf), "-")) for i in range(1, pages + 1)
    ]


def find_row(text: str, cells: tuple[str, ...], reach: int = 40) -> bool:
    """Whether ``cells`` appear in order, each within ``reach`` characters of the previous one
    (pdftotext writes a table row's cells one after another)."""
    for start in (m.start() for m in re.finditer(re.escape(cells[0]), text)):
        pos = start + len(cells[0])
        for cell in cells[1:]:
            nxt = text.find(cell, pos)
            if nxt < 0 or nxt - pos > reach:
                break
            pos = nxt + len(cell)
        else:
            return True
    return False


def normalise_cells(cells) -> tuple[str, ...]:
    return tuple(normalise(c) for c in cells)


# -- fixtures ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def catalogs():
    return load_catalogs()


@pytest.fixture(scope="module")
def sample(catalogs):
    est = estimate(load_scenario(SAMPLE), *catalogs)
    return est, build_report(est, catalogs[0].meta, TODAY)


@pytest.fixture(scope="module")
def sample_pdf(qapp, sample, tmp_path_factory):
    est, report = sample
    path = tmp_path_factory.mktemp("report") / "sample.pdf"
    stats = export_pdf(report, est, path, page_size="A4")
    return path, stats


@pytest.fixture(scope="module")
def sample_json():
    """What ``gpuadvisor-cli estimate --json`` says about the sample scenario."""
    out = run(sys.executable, "-m", "gpuadvisor.cli", "estimate", str(SAMPLE), "--json")
    return json.loads(out)


@pytest.fixture(scope="module")
def sample_pages(sample_pdf):
    if not POPPLER:
        pytest.skip("poppler-utils is not installed")
    return page_texts(sample_pdf[0])


# -- content -------------------------------------------------------------------------------------
def test_dejavu_sans_is_installed(qapp):
    """Without the font Qt silently draws boxes (STACK-NOTES P5)."""
    assert "DejaVu Sans" in QFontDatabase.families()
    assert report_pdf.report_font().family() == "DejaVu Sans"


def test_export_returns_stats(sample_pdf):
    path, stats = sample_pdf
    assert path.read_bytes().startswith(b"%PDF-")
    assert stats.bytes == path.stat().st_size
    assert 3 <= stats.pages <= 8
    assert stats.seconds > 0


@needs_poppler
def test_text_holds_scenario_model_and_sections(sample_pages, sample):
    _, report = sample
    text = " ".join(sample_pages)
    assert normalise(report.scenario_name) in text
    assert "Llama 3.1 8B" in text
    for heading in (
        "1. Recommendation",
        "2. The scenario in plain words",
        "3. Comparison",
        "4. Charts",
        "5. Rent or buy",
        "6. Assumptions, method and warnings",
    ):
        assert heading in text
    assert normalise(report.recommendation) in text
    assert "Outside the calibrated range" in text  # hf-trainer's profile is an assumption
    assert "Stale prices" in text


@needs_poppler
def test_no_ligatures_in_extracted_text(sample_pdf):
    raw = run("pdftotext", str(sample_pdf[0]), "-")
    assert not re.search("[\ufb00-\ufb06]", raw)  # liga off: "fits", not "ﬁts"
    assert "fine-tuning" in raw and "fits" in raw


@needs_poppler
def test_table_figures_match_the_cli_json(sample_pages, sample, sample_json):
    """Each row shows the JSON's numbers for that GPU's best setup, formatted by the report's rules."""
    _, report = sample
    text = " ".join(sample_pages)
    best = {(w["gpu"], w["gpu_count"], w["parallelism"]) for w in sample_json["what_if"]}
    by_gpu = {
        c["gpu"]: c for c in sample_json["candidates"] if (c["gpu"], c["gpu_count"], c["parallelism"]) in best
    }
    assert len(report.table_rows) == min(40, len(by_gpu))  # build_report shows at most 40 GPU types
    for gpu in ("h100-sxm", "a100-40gb", "mi300x", "a100-80gb", "l4", "b200"):
        cells = normalise_cells(json_row_cells(by_gpu[gpu]))
        assert find_row(text, cells), (gpu, cells)
        # and the report's own row is the same
        assert next(r for r in report.table_rows if r.gpu_id == gpu).cells == json_row_cells(by_gpu[gpu])
    d = by_gpu["h100-sxm"]
    assert f"{d['memory_per_gpu_gib']['device_total']:.1f}" == "32.7"
    assert f"{d['capacity_gib']:.1f}" == "79.7"


@needs_poppler
def test_a_row_pinned_to_literal_values(sample_pages):
    assert find_row(" ".join(sample_pages), normalise_cells(H100_ROW))


@needs_poppler
def test_every_page_has_the_footer(sample_pages, sample):
    _, report = sample
    n = len(sample_pages)
    assert 3 <= n <= 8
    for i, text in enumerate(sample_pages, 1):
        assert f"gpuadvisor {__version__}" in text
        assert f"page {i} of {n}" in text
        assert report.date in text


@needs_poppler
def test_fonts_are_embedded(sample_pdf):
    rows = [line.split() for line in run("pdffonts", str(sample_pdf[0])).splitlines()[2:]]
    dejavu = [r for r in rows if r and r[0].endswith("DejaVuSans")]
    assert dejavu, rows
    assert all(r[-5] == "yes" for r in rows), rows  # the "emb" column


@needs_poppler
def test_a4_page_size(sample_pdf):
    assert "(A4)" in run("pdfinfo", str(sample_pdf[0]))


@needs_poppler
def test_page_one_renders(sample_pdf, tmp_path):
    out = tmp_path / "page1"
    run("pdftoppm", "-r", "30", "-f", "1", "-l", "1", "-png", "-singlefile", str(sample_pdf[0]), str(out))
    image = QImage(str(out) + ".png")
    assert not image.isNull()
    inked = sum(
        1
        for y in range(0, image.height(), 3)
        for x in range(0, image.width(), 3)
        if image.pixelColor(x, y).lightness() < 200
    )
    assert inked > 200  # text and table, not a blank page


@needs_poppler
def test_table_header_repeats_where_the_table_continues(qapp, catalogs, tmp_path):
    """A long note pushes the 40-row table down so that it continues on page 2: that page starts
    with the header row (``<thead>`` -> the QTextTable's header row, repeated by the layout)."""
    data = json.loads(SAMPLE.read_text(encoding="utf-8"))
    data["notes"] = (
        "A long note that pushes the comparison table down the first page, so that the table "
        "must continue on the second page. "
    ) * 8
    est = estimate(loads_scenario(json.dumps(data)), *catalogs)
    report = build_report(est, catalogs[0].meta, TODAY)
    path = tmp_path / "long.pdf"
    export_pdf(report, est, path)
    pages = page_texts(path)
    header = normalise(" ".join(TABLE_HEADER[:3]))
    last_row = normalise_cells(report.table_rows[-1].cells)[
        :6
    ]  # pdftotext may reorder the wide cells after these
    assert not find_row(pages[0], last_row), "the table should continue on page 2"
    assert last_row[0] in pages[1]  # the last GPU's name (its wide cells may wrap in pdftotext's output)
    assert header in pages[0]
    assert pages[1].startswith(header), pages[1][:200]  # the next header words may come out in another order


# -- errors: never a partial PDF -------------------------------------------------------------------
def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_directory_as_output(qapp, sample, tmp_path):
    est, report = sample
    target = tmp_path / "out.pdf"
    target.mkdir()
    with pytest.raises(StorageError, match="out.pdf.*folder"):
        export_pdf(report, est, target)
    assert _leftovers(tmp_path) == ["out.pdf"] and target.is_dir()


def test_missing_folder(qapp, sample, tmp_path):
    est, report = sample
    with pytest.raises(StorageError, match="report.pdf.*does not exist"):
        export_pdf(report, est, tmp_path / "missing" / "report.pdf")
    assert _leftovers(tmp_path) == []


def test_failed_rename_leaves_nothing(qapp, sample, tmp_path, monkeypatch):
    """The tests run as root, so permissions cannot make the write fail: the rename fails instead."""
    est, report = sample
    target = tmp_path / "report.pdf"

    def refuse(src, dst):
        raise PermissionError(13, "Permission denied", str(dst))

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(StorageError, match="cannot write report.pdf: Permission denied"):
        export_pdf(report, est, target)
    assert _leftovers(tmp_path) == []


def test_failed_rename_keeps_the_old_file(qapp, sample, tmp_path, monkeypatch):
    est, report = sample
    target = tmp_path / "report.pdf"
    target.write_bytes(b"old")
    monkeypatch.setattr(report_pdf, "render_pdf_bytes", lambda *a, **k: (b"%PDF-1.4 new", 1))

    def refuse(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(StorageError, match="No space left"):
        export_pdf(report, est, target)
    assert target.read_bytes() == b"old"
    assert _leftovers(tmp_path) == ["report.pdf"]


def test_bad_page_size(qapp, sample, tmp_path):
    est, report = sample
    with pytest.raises(ValueError, match="page_size"):
        export_pdf(report, est, tmp_path / "x.pdf", page_size="A3")
    assert _leftovers(tmp_path) == []


# -- the command line ------------------------------------------------------------------------------
def _cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY")}
    return subprocess.run(
        [sys.executable, "-m", "gpuadvisor.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def test_cli_report_end_to_end_letter(tmp_path):
    """Headless (no DISPLAY, no QT_QPA_PLATFORM): the CLI picks the offscreen platform itself."""
    out = tmp_path / "report.pdf"
    proc = _cli(
        "report",
        str(SAMPLE),
        "-o",
        str(out),
        "--page-size",
        "Letter",
        "--gpu",
        "h100-sxm",
        "--gpu",
        "a100-80gb",
    )
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes().startswith(b"%PDF-")
    assert re.fullmatch(rf"{re.escape(str(out))}: \d+ pages in \d+\.\d s\n", proc.stdout), proc.stdout
    assert proc.stderr == ""
    if POPPLER:
        info = run("pdfinfo", str(out))
        assert "(letter)" in info.lower() and "612 x 792" in info
        text = normalise(run("pdftotext", str(out), "-"))
        assert "H100 SXM5 80 GB" in text and "A100 SXM4 80 GB" in text and "RTX 4090" not in text


def test_cli_report_bad_scenario_is_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"model": {"preset": "llama-3.1-8b"}, "workload": {"batch_size": 0}}', encoding="utf-8")
    proc = _cli("report", str(bad), "-o", str(tmp_path / "r.pdf"))
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: workload.batch_size")
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "r.pdf").exists()


def test_cli_report_unwritable_target_is_one_line(tmp_path):
    proc = _cli("report", str(SAMPLE), "-o", str(tmp_path / "nowhere" / "r.pdf"))
    assert proc.returncode == 2
    assert proc.stderr == f"error: cannot write r.pdf: the folder {tmp_path / 'nowhere'} does not exist\n"


def test_other_commands_stay_qt_free():
    code = (
        "import sys; from gpuadvisor.cli import main; main(['gpus', '--json']) ; "
        "sys.stderr.write(str(sorted(m for m in sys.modules if m.startswith(('PySide6', 'pyqtgraph')))))"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    assert proc.stderr == "[]"


# -- a service (workload.serving) -------------------------------------------------------------------
SERVING_SAMPLE = SAMPLE.parent / "serving-20-replicas.json"


def test_a_service_gets_its_serving_section_with_the_fleet_and_the_chart(qapp, catalogs, tmp_path):
    if not POPPLER:
        pytest.skip("poppler-utils is not installed")
    est = estimate(load_scenario(SERVING_SAMPLE), *catalogs)
    report = build_report(est, catalogs[0].meta, TODAY)
    fleet = est.recommended.serving
    assert dict(report.serving_lines)["Fleet"].startswith(f"{fleet.replicas} \u00d7")
    path = tmp_path / "serving.pdf"
    export_pdf(report, est, path, page_size="A4")
    first = page_texts(path)[0]
    assert "Serving: traffic, targets and the fleet" in first
    assert "122 requests/s (Poisson arrivals) of 2,000 prompt and 300 output tokens" in first
    # The fleet table's row (pdftotext may write a one-row table's cells column by column), with the
    # targets judged like a deadline from the simulated percentiles.
    for cell in (
        "NVIDIA H100 SXM5 80 GB",
        "20 \u00d7 1 GPU",
        f"{fleet.concurrency_per_replica}",
        fleet.status,
    ):
        assert cell in first, cell
    a = fleet.at_load
    assert f"TTFT p50/p90/p99 {a.ttft_s.p50:.2f} / {a.ttft_s.p90:.2f} / {a.ttft_s.p99:.2f} s" in normalise(
        first
    )
    assert normalise(fmt_usd(fleet.usd_per_month)) in first
    # The serving chart is embedded in place of the cost-versus-time chart (a service has no job
    # to time), and the rent-or-buy findings speak of the fleet's hours, not of a job.
    images = run("pdfimages", "-list", str(path)).strip().splitlines()[2:]
    assert len(images) == 4  # memory, throughput against speed, and latency against load (TTFT, ITL)
    text = " ".join(page_texts(path))
    assert "Job time against cost" not in text and "This job alone" not in text
    assert "The service keeps its 20 GPUs busy 24 h a day" in text
    # The memory at the operating point: the same GiB as `gpuadvisor-cli estimate --json`.
    data = json.loads(run(sys.executable, "-m", "gpuadvisor.cli", "estimate", str(SERVING_SAMPLE), "--json"))
    (cand,) = [c for c in data["candidates"] if "serving" in c]
    mem = cand["serving"]["memory_gib"]
    assert mem["need"] == cand["memory_per_gpu_gib"]["device_total"]
    assert (
        f"{mem['concurrency']} requests in flight: {mem['need']:.1f} of {cand['capacity_gib']:.1f} GiB "
        f"(weights {mem['weights']:.1f}, KV cache {mem['kv_cache_in_flight']:.1f} for {mem['concurrency']} "
        f"\u00d7 {mem['kv_tokens_per_sequence']:,} tokens"
    ) in text
    assert f"vLLM preallocates a {mem['kv_pool']:.1f} GiB KV pool" in text
    assert f"so {mem['engine_total']:.1f} GiB of the card are in use" in text
    # The comparison row: need, capacity, headroom, then the requests in flight, their KV cache
    # and what the engine takes.
    assert re.search(
        rf"{mem['need']:.1f} {cand['capacity_gib']:.1f} \+[0-9.]+ {mem['concurrency']} "
        rf"{mem['kv_cache_in_flight']:.1f} {mem['engine_total']:.1f}",
        text,
    ), "the comparison row carries the JSON's memory figures"
    assert "the KV cache of the requests in flight" in text  # Figure 1's caption says what the bar is
