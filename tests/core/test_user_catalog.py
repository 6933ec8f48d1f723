"""The user's catalog edits: validation rules, merge/diff, the effective catalogs and the JSON file."""

import datetime as dt
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuadvisor.core.errors import CatalogError
from gpuadvisor.core.formats.user_catalog import (
    KINDS,
    KindEdits,
    MergedRow,
    UserCatalog,
    build_catalogs,
    bundled_rows,
    columns,
    describe_error,
    diff,
    dumps,
    error_column,
    full_row,
    loads,
    merge,
    months_before,
    price_age_days,
    stale_price,
    validate_row,
)
from gpuadvisor.core.specs.hardware import GpuSpec, load_gpu_catalog
from gpuadvisor.core.specs.models import ModelSpec
from gpuadvisor.core.specs.presets import load_model_catalog

TODAY = dt.date(2026, 11, 29)
CATALOG_DIR = __import__("pathlib").Path(__file__).resolve().parents[2] / "catalogs"


def gpu(gpu_id="h100-sxm", **changes):
    row = next(r for r in bundled_rows("gpus") if r["id"] == gpu_id)
    row.update(changes)
    return row


def model(model_id="llama-2-7b", **changes):
    row = next(r for r in bundled_rows("models") if r["id"] == model_id)
    row.update(changes)
    return row


# --- bundled rows -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_columns_are_the_bundled_header(kind):
    header = (CATALOG_DIR / f"{kind}.csv").read_text(encoding="utf-8").splitlines()[1].split(",")
    assert columns(kind) == tuple(header)


def test_bundled_rows_are_fresh_copies_in_file_order():
    rows = bundled_rows("gpus")
    assert [r["id"] for r in rows] == list(load_gpu_catalog().gpus)
    rows[0]["tdp_w"] = "1"
    assert bundled_rows("gpus")[0]["tdp_w"] != "1"


@pytest.mark.parametrize("kind, row_id", [(k, r["id"]) for k in KINDS for r in bundled_rows(k)])
def test_every_bundled_row_validates(kind, row_id):
    row = next(r for r in bundled_rows(kind) if r["id"] == row_id)
    spec = validate_row(kind, row, today=TODAY)
    expected = load_gpu_catalog().gpus[row_id] if kind == "gpus" else load_model_catalog().models[row_id]
    assert spec == expected


def test_unknown_kind():
    with pytest.raises(CatalogError, match="kind: must be one of gpus, models"):
        columns("tpus")


# --- validation rules ------------------------------------------------------------------------------

GPU_RULES = [
    ("id", "H100 SXM", "must be a lowercase letter or digit followed by"),
    ("id", "-h100", "must be a lowercase letter or digit followed by"),
    ("id", "", "is required"),
    ("name", "", "is required"),
    ("architecture", "quantum", "must be one of ada, ampere, apple, blackwell"),
    ("memory_bandwidth_gb_s", "-100", "must be > 0"),
    ("memory_bandwidth_gb_s", "fast", "is not a number"),
    ("memory_gib_usable", "81", "must not exceed memory_gb (80)"),
    ("tdp_w", "0", "must be > 0"),
    ("tdp_w", "9000", "must be between 5 and 5000 W"),
    ("tdp_w", "2", "must be between 5 and 5000 W"),
    ("fp8_dense_tflops", "3957.8", "must be at most 4x fp16_dense_tflops (989.4); is it a sparse figure?"),
    ("bf16_dense_tflops", "1978.9", "must be at most 2x fp16_dense_tflops"),
    ("tf32_dense_tflops", "989.5", "must be at most 1x fp16_dense_tflops"),
    ("int8_dense_tops", "9000", "must be at most 8x fp16_dense_tflops"),
    ("fp4_dense_tflops", "9000", "must be at most 8x fp16_dense_tflops"),
    ("fp16_acc16_dense_tflops", "1978.9", "must be at most 2x fp16_dense_tflops"),
    ("fp16_acc16_dense_tflops", "500", "must be at least fp16_dense_tflops (989.4): accumulating in FP16"),
    ("pcie_gen", "9", "must be 1 to 7"),
    ("nvlink_domain_gpus", "0", "must be >= 1"),
    ("nvlink_domain_gpus", "36.5", "must be a whole number"),
    ("pcie_gen", "4.5", "must be a whole number"),
    ("launch_year", "2031", "must not be after 2028"),
    ("launch_year", "1980", "must be >= 1990"),
    ("cloud_usd_per_hour_high", "5000", "must be at most 1000 USD per GPU-hour"),
    ("cloud_usd_per_hour_low", "900", "must not exceed the high price"),
    ("purchase_new_usd_low", "99999", "is above purchase_new_usd_high"),
    ("price_as_of", "30/06/2026", "must be an ISO date YYYY-MM-DD"),
    ("price_as_of", "2026-13-01", "must be an ISO date YYYY-MM-DD"),
    ("price_as_of", "2026-6-30", "must be an ISO date YYYY-MM-DD"),
    ("price_as_of", "2026-12-01", "must not be in the future (today is 2026-11-29)"),
    ("mig_instances", "-1", "must be >= 0"),
    ("source", "", "is required"),
]


def test_a_quote_below_the_low_price_widens_the_range_instead_of_dropping_the_gpu():
    """The user's own quote is a valid price: an expected price under 'low' extends the range to it."""
    spec = validate_row("gpus", gpu(cloud_usd_per_hour_expected="0.5"), today=TODAY)
    assert spec.cloud_usd_per_hour.expected == spec.cloud_usd_per_hour.low == 0.5


@pytest.mark.parametrize("column, value, rule", GPU_RULES, ids=[f"{c}={v}" for c, v, _ in GPU_RULES])
def test_gpu_rules_name_the_column_and_the_rule(column, value, rule):
    with pytest.raises(CatalogError) as info:
        validate_row("gpus", gpu(**{column: value}), today=TODAY)
    assert error_column(info.value) == column
    assert rule in info.value.reason
    assert f"column {column}: {rule}" in str(info.value)


MODEL_RULES = [
    ("num_layers", "0", "must be >= 1"),
    ("num_layers", "5000", "must be at most 2,000"),
    ("hidden_size", "lots", "is not a number"),
    ("num_key_value_heads", "5", "must divide num_attention_heads (32)"),
    ("vocab_size", "5000000", "must be at most 4,000,000"),
    ("published_params", "20000000000", "must be within 1.5x of the count computed from the architecture"),
    ("published_active_params", "9000000000", "must not exceed published_params"),
    ("gated_mlp", "maybe", "must be true or false"),
    ("id", "Llama 2", "must be a lowercase letter or digit followed by"),
    ("experts_per_token", "2", "cannot exceed num_experts (1)"),
]


@pytest.mark.parametrize("column, value, rule", MODEL_RULES, ids=[f"{c}={v}" for c, v, _ in MODEL_RULES])
def test_model_rules_name_the_column_and_the_rule(column, value, rule):
    with pytest.raises(CatalogError) as info:
        validate_row("models", model(**{column: value}), today=TODAY)
    assert error_column(info.value) == column
    assert rule in info.value.reason


def test_error_location_with_and_without_a_line():
    with pytest.raises(CatalogError) as info:
        validate_row("gpus", gpu(tdp_w="-5"))
    assert str(info.value) == "user catalog: id h100-sxm, column tdp_w: must be > 0 (got '-5')"
    assert describe_error(info.value) == "column tdp_w: must be > 0 (got '-5')"
    with pytest.raises(CatalogError) as info:
        validate_row("gpus", gpu(tdp_w="-5"), origin="mine.csv", line=7)
    assert str(info.value) == "mine.csv: line 7, column tdp_w: must be > 0 (got '-5')"


def test_validation_strips_spaces_and_fills_missing_columns():
    row = {
        "id": " my-gpu ",
        "name": "Mine",
        "architecture": "ada",
        "memory_gib_usable": "24",
        "memory_bandwidth_gb_s": " 1000",
        "fp16_dense_tflops": "100",
        "tdp_w": "300",
        "source": "me",
    }
    spec = validate_row("gpus", row, today=TODAY)
    assert isinstance(spec, GpuSpec) and spec.id == "my-gpu" and spec.memory_bandwidth_gb_s == 1000
    assert isinstance(validate_row("models", model(), today=TODAY), ModelSpec)


def test_price_date_one_day_ahead_is_accepted():
    assert validate_row("gpus", gpu(price_as_of="2026-11-30"), today=TODAY).price_as_of == "2026-11-30"


# --- merge ---------------------------------------------------------------------------------------


def test_merge_without_edits_is_the_bundle():
    rows, warnings = merge("gpus", KindEdits())
    assert warnings == []
    assert [r.row for r in rows] == bundled_rows("gpus")
    assert all(r.status == "bundled" and r.changed == frozenset() and r.bundled == r.row for r in rows)


def test_merge_applies_overrides_deletions_and_additions():
    mine = full_row("gpus", gpu(id="my-gpu", name="Mine"))
    same_name = {"name": gpu("a100-80gb")["name"]}
    edits = KindEdits(
        overrides={"h100-sxm": {"tdp_w": "650"}, "a100-80gb": same_name}, added=(mine,), deleted=("t4",)
    )
    rows, warnings = merge("gpus", edits)
    assert warnings == []
    by_id = {r.id: r for r in rows}
    assert "t4" not in by_id
    h100 = by_id["h100-sxm"]
    assert h100.status == "modified" and h100.changed == {"tdp_w"} and h100.row["tdp_w"] == "650"
    assert h100.bundled["tdp_w"] == "700"
    assert by_id["a100-80gb"].status == "bundled"
    assert rows[-1] == MergedRow(id="my-gpu", row=mine, status="added", changed=frozenset(columns("gpus")))
    assert [r.id for r in rows[:-1]] == [r["id"] for r in bundled_rows("gpus") if r["id"] != "t4"]


def test_merge_warns_about_stale_edits_and_never_raises():
    bundle = [r for r in bundled_rows("gpus") if r["id"] != "t4"]
    edits = KindEdits(overrides={"t4": {"tdp_w": "60"}, "l4": {"colour": "red", "id": "l4x"}})
    rows, warnings = merge("gpus", edits, bundled=bundle)
    assert (
        "gpus: your changes to 't4' (tdp_w) are not applied: the bundled catalog no longer has that id"
        in warnings
    )
    assert "gpus: a change to 'l4' in unknown column 'colour' is ignored" in warnings
    assert "gpus: a change of the id of 'l4' is ignored (ids cannot be renamed)" in warnings
    assert [r.row for r in rows] == bundle


def test_an_added_id_that_the_bundle_now_has_wins_and_becomes_an_override():
    mine = full_row("gpus", gpu("l4", tdp_w="75", name="My L4"))
    rows, warnings = merge("gpus", KindEdits(added=(mine,)))
    assert warnings == ["gpus: the bundled catalog now has 'l4', which you added yourself; your row is used"]
    l4 = [r for r in rows if r.id == "l4"]
    assert len(l4) == 1 and l4[0].row == mine and l4[0].status == "modified"
    assert l4[0].changed == {"tdp_w", "name"}
    expected = KindEdits(overrides={"l4": {"name": "My L4", "tdp_w": "75"}})
    assert diff("gpus", [r.row for r in rows]) == expected


# --- diff ----------------------------------------------------------------------------------------


def test_diff_of_the_bundle_is_empty():
    assert diff("gpus", bundled_rows("gpus")).is_empty
    assert diff("models", bundled_rows("models")).is_empty


def test_diff_is_minimal():
    rows = bundled_rows("gpus")
    rows[3]["tdp_w"] = "301"
    del rows[5]
    rows.insert(0, full_row("gpus", {"id": "zz-new", "name": "New"}))
    edits = diff("gpus", rows)
    assert dict(edits.overrides) == {bundled_rows("gpus")[3]["id"]: {"tdp_w": "301"}}
    assert edits.deleted == (bundled_rows("gpus")[5]["id"],)
    assert [r["id"] for r in edits.added] == ["zz-new"] and len(edits.added[0]) == len(columns("gpus"))


@pytest.mark.parametrize(
    "rows, message",
    [
        ([{"id": ""}], r"rows\[0\].id: is required"),
        ([{"id": "a"}, {"id": "b"}, {"id": "a"}], r"rows\[2\].id: duplicates rows\[0\]"),
    ],
)
def test_diff_rejects_missing_and_duplicate_ids(rows, message):
    with pytest.raises(CatalogError, match=message):
        diff("gpus", rows)


def test_edits_are_read_only_copies():
    source = {"h100-sxm": {"tdp_w": "650"}}
    edits = KindEdits(overrides=source)
    source["h100-sxm"]["tdp_w"] = "1"
    assert edits.overrides["h100-sxm"]["tdp_w"] == "650"
    with pytest.raises(TypeError):
        edits.overrides["h100-sxm"]["tdp_w"] = "2"


_BUNDLE = bundled_rows("gpus")
_COLS = columns("gpus")
_cell = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=6)


@st.composite
def edited_tables(draw):
    """A table an editor could produce: some bundled rows (in bundle order, some cells changed),
    then new rows with fresh ids."""
    rows = []
    for base in _BUNDLE:
        if draw(st.booleans()):
            continue
        row = dict(base)
        for column in draw(st.lists(st.sampled_from(_COLS[1:]), max_size=3)):
            row[column] = draw(_cell)
        rows.append(row)
    new_ids = draw(st.lists(st.from_regex(r"[a-z][a-z0-9-]{0,8}", fullmatch=True), max_size=4, unique=True))
    for new_id in new_ids:
        if new_id in {r["id"] for r in _BUNDLE}:
            continue
        rows.append({c: (new_id if c == "id" else draw(_cell)) for c in _COLS})
    return rows


@settings(max_examples=60, deadline=None)
@given(edited_tables())
def test_merge_of_diff_gives_the_table_back(rows):
    edits = diff("gpus", rows)
    merged, warnings = merge("gpus", edits)
    assert warnings == []
    assert [m.row for m in merged] == rows
    assert loads(dumps(UserCatalog(gpus=edits))).gpus == edits
    assert diff("gpus", [m.row for m in merged]) == edits


# --- the effective catalogs --------------------------------------------------------------------


def test_build_without_edits_is_the_bundled_catalogs():
    gpus, models, warnings = build_catalogs(UserCatalog.empty())
    assert warnings == []
    assert gpus.gpus == load_gpu_catalog().gpus and models.models == load_model_catalog().models
    assert gpus.meta.origin == "gpus.csv" and models.meta.origin == "models.csv"


def test_build_applies_edits_and_skips_a_bad_row_with_a_warning():
    mine = full_row("gpus", gpu(id="my-gpu", name="Mine"))
    broken = full_row("gpus", gpu(id="broken", tdp_w="-5"))
    user = UserCatalog(
        gpus=KindEdits(overrides={"h100-sxm": {"tdp_w": "650"}}, added=(mine, broken), deleted=("t4",)),
        models=KindEdits(overrides={"llama-2-7b": {"num_layers": "zero"}}),
    )
    gpus, models, warnings = build_catalogs(user)
    assert gpus.gpus["h100-sxm"].tdp_w == 650 and "my-gpu" in gpus.gpus
    assert "t4" not in gpus.gpus and "broken" not in gpus.gpus
    assert "llama-2-7b" not in models.models and len(models) == len(bundled_rows("models")) - 1
    assert warnings == [
        "gpus: row broken skipped: column tdp_w: must be > 0 (got '-5')",
        "models: row llama-2-7b skipped: column num_layers: is not a number (got 'zero')",
    ]
    assert gpus.meta.origin == "bundled catalog + user edits (4 changed rows)"
    assert models.meta.origin == "bundled catalog + user edits (1 changed row)"
    assert gpus.meta.updated == load_gpu_catalog().meta.updated


def test_build_raises_only_when_no_gpu_remains():
    user = UserCatalog(gpus=KindEdits(deleted=tuple(r["id"] for r in bundled_rows("gpus"))))
    with pytest.raises(CatalogError, match="leaves no valid GPU row"):
        build_catalogs(user)


def test_user_catalog_helpers():
    user = UserCatalog.empty()
    assert user.is_empty and user.edits("gpus") == KindEdits()
    edited = user.with_edits("models", KindEdits(deleted=("gpt2-xl",)))
    assert not edited.is_empty and edited.models.deleted == ("gpt2-xl",) and edited.gpus.is_empty
    assert user.is_empty


# --- the JSON file -------------------------------------------------------------------------------


def test_dumps_loads_round_trip_exactly():
    edits = KindEdits(
        overrides={"h100-sxm": {"tdp_w": "650.0", "notes": 'a, "quoted"\nline'}},
        added=(full_row("gpus", {"id": "x", "name": "Ünïcode"}),),
        deleted=("t4",),
    )
    user = UserCatalog(gpus=edits, saved="2026-11-29T10:00:00+00:00")
    text = dumps(user)
    data = json.loads(text)
    assert data["format"] == "gpuadvisor-user-catalog" and data["schema_version"] == 1
    assert data["gpus"]["overrides"] == {"h100-sxm": {"tdp_w": "650.0", "notes": 'a, "quoted"\nline'}}
    assert loads(text) == user and loads(text.encode("utf-8")) == user
    assert dumps(loads(text)) == text


def _file(**changes):
    data = {
        "format": "gpuadvisor-user-catalog",
        "schema_version": 1,
        "saved": "",
        "gpus": {"overrides": {}, "added": [], "deleted": []},
        "models": {"overrides": {}, "added": [], "deleted": []},
    }
    data.update(changes)
    return json.dumps(data)


BAD_FILES = [
    ("", "mine.json: is empty"),
    ("  \n", "mine.json: is empty"),
    (b"\xff\xfe\x00\x01garbage", "mine.json: is not UTF-8 text (undecodable byte at offset 0)"),
    ('{"format": \x00}', "mine.json: contains binary data"),
    (
        '{"format": "gpuadvisor-user-catalog",\n "gpus": {"overr',
        "mine.json: is not valid JSON: Unterminated string starting at at line 2, column 11",
    ),
    ("[1, 2]", "mine.json: must hold a JSON object, not a list"),
    ('"text"', "mine.json: must hold a JSON object, not text"),
    (_file(format="something-else"), "mine.json: format: must be 'gpuadvisor-user-catalog'"),
    (
        _file(schema_version=2),
        "mine.json: schema_version: 2 is not supported by this version of gpuadvisor "
        "(written by a newer gpuadvisor?); supported: 1",
    ),
    (_file(schema_version="1"), "mine.json: schema_version: must be a whole number (supported: 1)"),
    (_file(saved=5), "mine.json: saved: must be a string"),
    (_file(colour="red"), "mine.json: colour: is not a known key"),
    (_file(gpus=[]), "mine.json: gpus: must be an object with overrides, added and deleted, not a list"),
    (_file(gpus={"overides": {}}), "mine.json: gpus.overides: is not a known key"),
    (
        _file(gpus={"overrides": {"h100-sxm": {"tdp_w": 700}}}),
        "mine.json: gpus.overrides.h100-sxm.tdp_w: must be a string (the CSV text), not a number (got 700)",
    ),
    (
        _file(gpus={"overrides": {"h100-sxm": ["tdp_w"]}}),
        "mine.json: gpus.overrides.h100-sxm: must be an object of column -> text, not a list",
    ),
    (_file(gpus={"overrides": []}), "mine.json: gpus.overrides: must be an object of id -> changed columns"),
    (_file(models={"added": {}}), "mine.json: models.added: must be a list of rows, not an object"),
    (
        _file(models={"added": [{"id": "x", "num_layers": None}]}),
        "mine.json: models.added[0].num_layers: must be a string (the CSV text), not null",
    ),
    (_file(models={"deleted": "gpt2-xl"}), "mine.json: models.deleted: must be a list of ids, not text"),
    (_file(models={"deleted": [1]}), "mine.json: models.deleted[0]: must be a string (an id), not a number"),
]


@pytest.mark.parametrize("text, message", BAD_FILES, ids=range(len(BAD_FILES)))
def test_loads_errors_say_what_and_where(text, message):
    with pytest.raises(CatalogError) as info:
        loads(text, "mine.json")
    assert str(info.value).startswith(message), str(info.value)


def test_loads_accepts_missing_kinds_and_a_bom():
    assert loads('\ufeff{"format": "gpuadvisor-user-catalog", "schema_version": 1}') == UserCatalog.empty()


# --- stale prices --------------------------------------------------------------------------------


def test_stale_price_uses_the_report_rule():
    cutoff = months_before(TODAY, 6)
    assert not stale_price(gpu(price_as_of=cutoff.isoformat()), TODAY, 6)
    assert stale_price(gpu(price_as_of=(cutoff - dt.timedelta(days=1)).isoformat()), TODAY, 6)
    assert stale_price(gpu(price_as_of=""), TODAY, 6)
    assert stale_price(gpu(price_as_of="soon"), TODAY, 6)
    no_price = {c: "" for c in columns("gpus")} | {"id": "x", "price_as_of": ""}
    assert not stale_price(no_price, TODAY, 6)


def test_stale_price_and_age_for_rows_and_specs():
    spec = load_gpu_catalog().gpus["h100-sxm"]
    row = gpu()
    for item in (spec, row):
        assert price_age_days(item, TODAY) == (TODAY - dt.date(2026, 6, 30)).days
        assert stale_price(item, TODAY, 3) and not stale_price(item, TODAY, 6)
    assert price_age_days(gpu(price_as_of=""), TODAY) is None
