"""Import and export of catalog tables: formats, round trips, per-row rejection with exact lines."""

import copy
import json
from pathlib import Path

import pytest

from gpuadvisor.core.errors import CatalogError
from gpuadvisor.core.formats.catalog_exchange import (
    ImportLine,
    ImportReport,
    export_text,
    import_file,
    import_text,
)
from gpuadvisor.core.formats.user_catalog import (
    KINDS,
    KindEdits,
    bundled_meta,
    bundled_rows,
    columns,
    full_row,
    merge,
)

CATALOG_DIR = Path(__file__).resolve().parents[2] / "catalogs"
FORMATS = ("csv", "json")


def merged_table(kind):
    rows, _ = merge(kind, KindEdits())
    return [r.row for r in rows]


# --- export and round trips --------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_csv_export_of_the_bundle_is_the_bundled_file(kind):
    updated = bundled_meta(kind).updated  # each catalog file states its own date
    text = export_text(kind, bundled_rows(kind), "csv", updated)
    assert text == (CATALOG_DIR / f"{kind}.csv").read_text(encoding="utf-8")


def test_json_export_shape():
    rows = bundled_rows("gpus")[:2]
    data = json.loads(export_text("gpus", rows, "json", "2026-11-29"))
    assert data == {"catalog": "gpus", "schema_version": 1, "updated": "2026-11-29", "rows": rows}
    assert list(data["rows"][0]) == list(columns("gpus"))


def test_export_fills_missing_columns_and_drops_unknown_keys():
    text = export_text("gpus", [{"id": "x", "colour": "red"}], "csv", "2026-01-01")
    assert text.splitlines()[2] == "x" + "," * (len(columns("gpus")) - 1)
    with pytest.raises(CatalogError, match="format: must be one of csv, json"):
        export_text("gpus", [], "xlsx", "2026-01-01")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_round_trip_into_the_same_table_changes_nothing(kind, fmt):
    table = merged_table(kind)
    report = import_text(kind, export_text(kind, table, fmt, "2026-11-29"), table, origin=f"export.{fmt}")
    assert report.rejected == [] and report.added == [] and report.updated == [] and report.warnings == []
    assert [u.id for u in report.unchanged] == [r["id"] for r in table]
    assert report.rows == table and not report.changed


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_round_trip_into_an_empty_table_adds_identical_rows(kind, fmt):
    table = merged_table(kind)
    report = import_text(kind, export_text(kind, table, fmt, "2026-11-29"), [])
    assert report.rejected == [] and report.updated == [] and report.unchanged == []
    assert [a.id for a in report.added] == [r["id"] for r in table]
    assert report.rows == table


def test_csv_lines_of_the_export_are_physical_lines():
    table = merged_table("gpus")[:3]
    table[1]["notes"] = "first line\nsecond line"
    report = import_text("gpus", export_text("gpus", table, "csv", "x"), [])
    assert [a.line for a in report.added] == [3, 4, 6]
    report = import_text("gpus", export_text("gpus", table, "json", "x"), [])
    lines = export_text("gpus", table, "json", "x").splitlines()
    assert [lines[a.line - 1].strip() for a in report.added] == ["{"] * 3
    per_row = len(columns("gpus")) + 2  # "{", one line per column, "}"
    assert [a.line for a in report.added] == [6, 6 + per_row, 6 + 2 * per_row]


# --- a CSV with good and bad rows --------------------------------------------------------------

HEADER = [
    "id",
    "name",
    "architecture",
    "memory_gib_usable",
    "memory_bandwidth_gb_s",
    "fp16_dense_tflops",
    "tdp_w",
    "source",
    "price_as_of",
    "shop_url",
]


def _csv_line(values):
    import csv
    import io

    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(values)
    return out.getvalue()


def mixed_csv():
    h100 = next(r for r in bundled_rows("gpus") if r["id"] == "h100-sxm")
    good = [
        "my-gpu",
        "My GPU\n(second line of the name)",
        "ada",
        "24",
        "1000",
        "100",
        "300",
        "me",
        "2026-06-30",
        "http://x",
    ]
    t4 = next(r for r in bundled_rows("gpus") if r["id"] == "t4")
    lines = [
        "# catalog=gpus; schema_version=1; updated=2026-11-29\n",  # 1
        _csv_line(HEADER),  # 2
        _csv_line(good),  # 3-4 (a quoted newline)
        "\n",  # 5 blank
        _csv_line(["bad-number", "B", "ada", "24", "1000", "100", "lots", "me", "", ""]),  # 6
        _csv_line(["neg-bw", "N", "ada", "24", "-100", "100", "300", "me", "", ""]),  # 7
        _csv_line(["", "No id", "ada", "24", "1000", "100", "300", "me", "", ""]),  # 8
        _csv_line(["my-gpu", "Again", "ada", "24", "1000", "100", "300", "me", "", ""]),  # 9
        _csv_line(["quantum-1", "Q", "quantum", "24", "1000", "100", "300", "me", "", ""]),  # 10
        _csv_line(["bad-date", "D", "ada", "24", "1000", "100", "300", "me", "30/06/2026", ""]),  # 11
        _csv_line([h100[c] for c in HEADER[:6]] + ["650", h100["source"], h100["price_as_of"], ""]),  # 12
        _csv_line([t4[c] for c in HEADER[:9]] + [""]),  # 13 unchanged
        "too-many,a,ada,24,1000,100,300,me,,,extra\n",  # 14
    ]
    return "".join(lines)


def test_import_csv_with_good_and_bad_rows():
    current = merged_table("gpus")
    before = copy.deepcopy(current)
    report = import_text("gpus", mixed_csv(), current, origin="mine.csv")
    assert current == before  # not mutated
    assert report.added == [ImportLine(3, "my-gpu")]
    assert report.updated == [ImportLine(12, "h100-sxm", columns=("tdp_w",))]
    assert report.unchanged == [ImportLine(13, "t4")]
    assert report.rejected == [
        ImportLine(6, "bad-number", "column tdp_w: is not a number (got 'lots')"),
        ImportLine(7, "neg-bw", "column memory_bandwidth_gb_s: must be > 0 (got '-100')"),
        ImportLine(8, None, "column id: is required"),
        ImportLine(9, "my-gpu", "column id: duplicates the row on line 3"),
        ImportLine(
            10,
            "quantum-1",
            "column architecture: must be one of ada, ampere, apple, blackwell, "
            "cdna2, cdna3, cdna4, hopper, other, pascal, rdna3, turing, volta "
            "(got 'quantum')",
        ),
        ImportLine(11, "bad-date", "column price_as_of: must be an ISO date YYYY-MM-DD (got '30/06/2026')"),
        ImportLine(
            14, "too-many", "has 11 cells but the header has 10 columns (a comma in an unquoted value?)"
        ),
    ]
    assert report.warnings == ["mine.csv: column(s) shop_url are not gpus catalog columns and were ignored"]
    ids = [r["id"] for r in report.rows]
    assert ids == [r["id"] for r in current] + ["my-gpu"]
    h100 = report.rows[ids.index("h100-sxm")]
    assert h100 == dict(before[ids.index("h100-sxm")], tdp_w="650")  # other columns kept
    mine = report.rows[-1]
    assert mine["name"] == "My GPU\n(second line of the name)"
    assert mine["vendor"] == "" and mine["notes"] == ""
    assert report.summary().splitlines()[:3] == [
        "mine.csv: 1 added, 1 updated, 1 unchanged, 7 rejected",
        "Rejected:",
        "  line 6 (id bad-number): column tdp_w: is not a number (got 'lots')",
    ]
    assert "  line 8 (no id): column id: is required" in report.summary()
    assert "  line 12 (id h100-sxm): tdp_w" in report.summary()


def test_import_csv_without_the_metadata_line_counts_from_the_header():
    body = "".join(mixed_csv().splitlines(keepends=True)[1:])
    report = import_text("gpus", body, merged_table("gpus"))
    assert report.added == [ImportLine(2, "my-gpu")]
    assert [r.line for r in report.rejected] == [5, 6, 7, 8, 9, 10, 13]


def test_windows_line_endings_and_a_bom_keep_the_line_numbers(tmp_path):
    path = tmp_path / "excel.csv"
    path.write_bytes(b"\xef\xbb\xbf" + mixed_csv().replace("\n", "\r\n").encode("utf-8"))
    report = import_file("gpus", path, merged_table("gpus"))
    assert [r.line for r in report.rejected] == [6, 7, 8, 9, 10, 11, 14]
    assert report.added == [ImportLine(3, "my-gpu")] and report.updated[0].line == 12


def test_text_is_kept_exactly():
    row = full_row("gpus", next(r for r in bundled_rows("gpus") if r["id"] == "h100-sxm"))
    row.update(id="na-gpu", name="NA", notes='NULL, "n/a"; 0.50', cloud_usd_per_hour_low="0.50")
    report = import_text("gpus", export_text("gpus", [row], "csv", "x"), [])
    assert report.rows == [row]


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "# catalog=models; schema_version=1; updated=x\nid\n",
            "f.csv: line 1: is a 'models' catalog, expected 'gpus'",
        ),
        (
            "# catalog=gpus; schema_version=9; updated=x\nid\n",
            "f.csv: line 1: schema_version 9 is not supported by this version of gpuadvisor (supported: 1)",
        ),
        ("# catalog=gpus; updated=x\nid\n", "f.csv: line 1: schema_version is missing or not a whole number"),
        (
            "id,name,architecture,memory_gib_usable,memory_bandwidth_gb_s,source\nx,y,ada,1,1,z\n",
            "f.csv: line 1: is missing required column(s) fp16_dense_tflops, tdp_w",
        ),
        ("id;name;tdp_w\nx;y;1\n", "f.csv: line 1: is missing required column(s) id, name, architecture"),
        ("id,id,name\n", "f.csv: line 1: has column(s) id more than once"),
        ("", "f.csv: is empty"),
        ("\n\n", "f.csv: is empty"),
        ("id,\x00name\n", "f.csv: is not a text file (binary content)"),
    ],
)
def test_unusable_csv_files_raise(text, message):
    with pytest.raises(CatalogError) as info:
        import_text("gpus", text, [], "csv", "f.csv")
    assert str(info.value).startswith(message), str(info.value)


def test_semicolon_files_get_a_hint():
    with pytest.raises(CatalogError, match="looks semicolon-separated"):
        import_text("gpus", "id;name;tdp_w\nx;y;1\n", [], "csv", "f.csv")


# --- JSON --------------------------------------------------------------------------------------


def test_import_json_list_with_numbers_and_partial_updates():
    text = (
        "[\n"
        '  {"id": "h100-sxm", "tdp_w": 650},\n'
        '  {"id": "new-gpu", "name": "New", "architecture": "ada", "memory_gib_usable": 24,\n'
        '   "memory_bandwidth_gb_s": 1000.5, "fp16_dense_tflops": 100, "tdp_w": 300, "source": "me",\n'
        '   "mig_instances": null, "colour": "red"},\n'
        '  "not a row",\n'
        '  {"id": "bad", "tdp_w": [1]}\n'
        "]\n"
    )
    current = merged_table("gpus")
    report = import_text("gpus", text, current, origin="rows.json")
    assert report.updated == [ImportLine(2, "h100-sxm", columns=("tdp_w",))]
    assert report.added == [ImportLine(3, "new-gpu")]
    assert report.rejected == [
        ImportLine(6, None, "must be an object of column -> value"),
        ImportLine(7, "bad", "column tdp_w: must be text or a number"),
    ]
    assert report.warnings == ["rows.json: key(s) colour are not gpus catalog columns and were ignored"]
    assert report.rows[-1]["memory_bandwidth_gb_s"] == "1000.5" and report.rows[-1]["mig_instances"] == ""


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"catalog": "models", "rows": []}', "r.json: catalog: is a 'models' catalog, expected 'gpus'"),
        (
            '{"catalog": "gpus", "schema_version": 3, "rows": []}',
            "r.json: schema_version: 3 is not supported",
        ),
        ('{"catalog": "gpus"}', "r.json: rows: is required"),
        (
            '{"catalog": "gpus", "rows": [\n  {"id": "x"},\n',
            "r.json: is not valid JSON: Expecting value at line 3, column 1",
        ),
        ('"rows"', 'r.json: must hold an object with "rows" or a list of row objects'),
    ],
)
def test_unusable_json_files_raise(text, message):
    with pytest.raises(CatalogError) as info:
        import_text("gpus", text, [], "json", "r.json")
    assert str(info.value).startswith(message), str(info.value)


def test_json_rows_key_found_after_other_keys():
    text = '{"updated": "x",\n "notes": {"rows": [1, 2]},\n "rows": [\n\n  {"id": "t4"}]}'
    report = import_text("gpus", text, merged_table("gpus"), origin="r.json")
    assert report.unchanged == [ImportLine(5, "t4")]


# --- files -------------------------------------------------------------------------------------


def test_import_file_detects_the_format_and_names_the_file(tmp_path):
    table = merged_table("models")
    for name, fmt in (("a.json", "json"), ("b.csv", "csv"), ("c.txt", "json"), ("d", "csv")):
        path = tmp_path / name
        path.write_text(export_text("models", table, fmt, "x"), encoding="utf-8")
        report = import_file("models", path, table)
        assert len(report.unchanged) == len(table) and report.origin == name


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "nope.csv: file not found"),
        (b"", "nope.csv: is empty"),
        (b"\x89PNG\r\n\x1a\n\x00\x00", "nope.csv: is not a text file (binary content)"),
        (
            b"id,name\n\xe9t\xe9,x\n",
            "nope.csv: is not UTF-8 text (undecodable byte at offset 8); save it as 'CSV UTF-8'",
        ),
    ],
)
def test_import_file_errors(tmp_path, content, message):
    path = tmp_path / "nope.csv"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(CatalogError) as info:
        import_file("gpus", path, [])
    assert str(info.value) == message


def test_summary_of_a_clean_import():
    report = ImportReport(kind="gpus", origin="f.csv", added=[ImportLine(3, "a")], warnings=["w"])
    assert report.summary() == (
        "f.csv: 1 added, 0 updated, 0 unchanged, 0 rejected\nAdded:\n  line 3 (id a)\nWarning: w"
    )
    assert report.to_dict()["added"] == [{"line": 3, "id": "a"}]
