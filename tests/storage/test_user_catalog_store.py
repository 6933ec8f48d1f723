"""The user catalog file: loading never fails or loses data, saves are atomic, restore checks first."""

import errno
import json
import os
from pathlib import Path

import pytest

from gpuadvisor.core.errors import CatalogError
from gpuadvisor.core.formats.user_catalog import KindEdits, UserCatalog, dumps, loads
from gpuadvisor.core.specs.hardware import load_gpu_catalog
from gpuadvisor.storage import (
    USER_CATALOG_FILENAME,
    StorageError,
    atomic_write_text,
    load_effective_catalogs,
    load_user_catalog,
    restore_user_catalog,
    save_user_catalog,
    user_catalog_backups,
    user_catalog_file,
    user_paths,
)

EDIT_A = UserCatalog(gpus=KindEdits(overrides={"h100-sxm": {"tdp_w": "650"}}))
EDIT_B = UserCatalog(
    gpus=KindEdits(deleted=("t4",)), models=KindEdits(overrides={"gpt2-xl": {"name": "GPT-2"}})
)


def _others(folder: Path, keep: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p != keep)


def _temp_files(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.startswith(".") and not p.name.endswith(".lock")]


def test_the_file_lives_in_the_data_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUADVISOR_HOME", str(tmp_path))
    assert user_catalog_file() == tmp_path / "data" / USER_CATALOG_FILENAME
    assert user_catalog_file() == user_paths().data_dir / "user-catalog.json"


def test_missing_file_is_an_empty_catalog_and_creates_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUADVISOR_HOME", str(tmp_path / "home"))
    loaded = load_user_catalog()
    assert loaded.catalog == UserCatalog.empty() and loaded.warnings == [] and loaded.set_aside is None
    assert loaded.path == user_catalog_file()
    assert not (tmp_path / "home").exists()


def test_save_and_load_round_trip():
    path = save_user_catalog(EDIT_A)
    assert path == user_catalog_file()
    loaded = load_user_catalog()
    assert loaded.warnings == [] and loaded.catalog.gpus == EDIT_A.gpus
    assert loaded.catalog.saved  # stamped at save time
    assert json.loads(path.read_text(encoding="utf-8"))["format"] == "gpuadvisor-user-catalog"


CORRUPT = [
    (
        "truncated",
        b'{"format": "gpuadvisor-user-catalog", "schema_version": 1, "gpus": {"overr',
        "could not be loaded: is not valid JSON: Unterminated string starting at at line 1, column 69",
        "corrupt",
    ),
    (
        "newer",
        json.dumps({"format": "gpuadvisor-user-catalog", "schema_version": 7}).encode(),
        "schema_version: 7 is not supported by this version of gpuadvisor (written by a newer gpuadvisor?); "
        "supported: 1",
        "unsupported",
    ),
    (
        "wrong-types",
        json.dumps(
            {
                "format": "gpuadvisor-user-catalog",
                "schema_version": 1,
                "gpus": {"overrides": {"h100-sxm": {"tdp_w": 700}}},
            }
        ).encode(),
        "gpus.overrides.h100-sxm.tdp_w: must be a string (the CSV text), not a number (got 700)",
        "corrupt",
    ),
    ("empty", b"", "could not be loaded: is empty.", "corrupt"),
    ("binary", bytes(range(256)), "is not UTF-8 text", "corrupt"),
    ("nul", b'{"format": \x00\x00}', "contains binary data", "corrupt"),
    ("array", b"[1, 2, 3]", "must hold a JSON object, not a list", "corrupt"),
]


@pytest.mark.parametrize("content, problem, tag", [c[1:] for c in CORRUPT], ids=[c[0] for c in CORRUPT])
def test_a_damaged_file_is_set_aside_never_deleted(content, problem, tag):
    path = user_catalog_file()
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    loaded = load_user_catalog()
    assert loaded.catalog == UserCatalog.empty()
    assert loaded.set_aside is not None and loaded.set_aside.read_bytes() == content
    assert loaded.set_aside.parent == path.parent
    assert loaded.set_aside.name.startswith(f"user-catalog.json.{tag}-")
    assert not path.exists()
    [warning] = loaded.warnings
    assert str(path) in warning and problem in warning, warning
    assert f"The file was kept as {loaded.set_aside}." in warning
    assert "The bundled catalogs are used instead." in warning
    assert "backup" not in warning  # there is none


def test_warning_points_at_a_backup_that_can_be_restored():
    save_user_catalog(EDIT_A)
    save_user_catalog(EDIT_B)
    path = user_catalog_file()
    path.write_bytes(b"{oops")
    loaded = load_user_catalog()
    [warning] = loaded.warnings
    assert f"{path}.bak and can be restored" in warning
    restored = restore_user_catalog(Path(f"{path}.bak"))
    assert restored.catalog.gpus == EDIT_A.gpus


def test_a_damaged_backup_is_mentioned():
    path = user_catalog_file()
    path.parent.mkdir(parents=True)
    path.write_bytes(b"[]")
    Path(f"{path}.bak").write_bytes(b"{")
    [warning] = load_user_catalog().warnings
    assert "is damaged too" in warning


def test_an_unreadable_file_is_set_aside(monkeypatch):
    path = user_catalog_file()
    path.mkdir(parents=True)  # a folder where the file should be: reading it fails
    loaded = load_user_catalog()
    assert "is a folder, not a file" in loaded.warnings[0]
    assert loaded.set_aside is not None and loaded.set_aside.is_dir() and not path.exists()


def test_a_file_that_cannot_be_moved_is_left_in_place(monkeypatch):
    path = user_catalog_file()
    path.parent.mkdir(parents=True)
    path.write_bytes(b"[]")

    def refuse(src, dst):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr("gpuadvisor.storage.atomic.os.rename", refuse)
    loaded = load_user_catalog()
    assert "could not be moved aside" in loaded.warnings[0] and loaded.set_aside is None
    assert path.read_bytes() == b"[]"


def test_save_twice_keeps_the_first_version_as_bak():
    path = save_user_catalog(EDIT_A)
    first = path.read_bytes()
    save_user_catalog(EDIT_B)
    assert Path(f"{path}.bak").read_bytes() == first
    assert loads(path.read_bytes()).gpus == EDIT_B.gpus


@pytest.mark.parametrize("fail_on", ["target", "any"])
def test_a_save_interrupted_before_the_replace_leaves_the_old_file(monkeypatch, fail_on):
    path = save_user_catalog(EDIT_A)
    old = path.read_bytes()
    real_replace = os.replace

    def failing_replace(src, dst):
        if fail_on == "any" or Path(dst) == path:
            raise OSError(errno.EIO, "Input/output error")
        real_replace(src, dst)

    monkeypatch.setattr("gpuadvisor.storage.atomic.os.replace", failing_replace)
    with pytest.raises(StorageError, match=r"user-catalog.json(.bak)?: Input/output error"):
        save_user_catalog(EDIT_B)
    assert path.read_bytes() == old
    assert _temp_files(path.parent) == []


def test_save_reports_a_folder_that_cannot_be_created(tmp_path, monkeypatch):
    (tmp_path / "blocked").write_text("a file", encoding="utf-8")
    monkeypatch.setenv("GPUADVISOR_HOME", str(tmp_path / "blocked"))
    with pytest.raises(StorageError, match="cannot create the folder"):
        save_user_catalog(EDIT_A)


def test_backups_are_listed_newest_first():
    path = save_user_catalog(EDIT_A)
    save_user_catalog(EDIT_B)
    path.write_bytes(b"{")
    aside = load_user_catalog().set_aside
    bak = Path(f"{path}.bak")
    os.utime(bak, (1_000_000, 1_000_000))
    os.utime(aside, (2_000_000, 2_000_000))
    assert user_catalog_backups() == [aside, bak]
    assert user_catalog_backups(user_paths()) == [aside, bak]


def test_no_backups_without_a_folder():
    assert user_catalog_backups() == []


def test_restore_from_backup_keeps_the_current_file_as_backup():
    path = save_user_catalog(EDIT_A)
    first = path.read_bytes()
    save_user_catalog(EDIT_B)
    second = path.read_bytes()
    restored = restore_user_catalog(Path(f"{path}.bak"))
    assert restored.path == path and restored.warnings == [] and restored.set_aside is None
    assert restored.catalog.gpus == EDIT_A.gpus
    assert path.read_bytes() == first and Path(f"{path}.bak").read_bytes() == second


def test_restore_checks_the_file_first(tmp_path):
    path = save_user_catalog(EDIT_A)
    current = path.read_bytes()
    bad = tmp_path / "old.json"
    bad.write_text(dumps(EDIT_B).replace('"schema_version": 1', '"schema_version": 2'), encoding="utf-8")
    with pytest.raises(CatalogError, match="old.json: schema_version: 2 is not supported"):
        restore_user_catalog(bad)
    with pytest.raises(StorageError, match="cannot read missing.json"):
        restore_user_catalog(tmp_path / "missing.json")
    assert path.read_bytes() == current


def test_restore_into_a_fresh_home(tmp_path):
    source = tmp_path / "export.json"
    source.write_text(dumps(EDIT_B), encoding="utf-8")
    loaded = restore_user_catalog(source)
    assert user_catalog_file().read_bytes() == source.read_bytes()
    assert loaded.catalog == EDIT_B


def test_effective_catalogs_apply_the_edits():
    save_user_catalog(EDIT_B.with_edits("gpus", EDIT_A.gpus))
    gpus, models, warnings = load_effective_catalogs()
    assert warnings == []
    assert gpus.gpus["h100-sxm"].tdp_w == 650 and models.models["gpt2-xl"].name == "GPT-2"
    assert gpus.meta.origin == "bundled catalog + user edits (1 changed row)"
    gpus, models, warnings = load_effective_catalogs(use_user=False)
    assert gpus.gpus["h100-sxm"].tdp_w == 700 and warnings == [] and gpus.meta.origin == "gpus.csv"


def test_effective_catalogs_survive_a_damaged_file_and_bad_edits():
    path = user_catalog_file()
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\x00")
    gpus, _, warnings = load_effective_catalogs()
    assert len(gpus) == len(load_gpu_catalog()) and "could not be loaded" in warnings[0]
    save_user_catalog(UserCatalog(gpus=KindEdits(deleted=tuple(load_gpu_catalog().gpus))))
    gpus, _, warnings = load_effective_catalogs()
    assert len(gpus) == len(load_gpu_catalog())
    assert warnings == [
        "Your catalog edits are not used: user catalog: leaves no valid GPU row (restore a "
        "backup or reset the GPU catalog)."
    ]


def _added(*ids):
    return UserCatalog(gpus=KindEdits(added=tuple({"id": i, "name": i} for i in ids)))


def _on_disk():
    return [r["id"] for r in loads(user_catalog_file().read_bytes()).gpus.added]


def test_a_window_saving_twice_keeps_what_another_program_saved_in_between():
    """The catalog editor saves its own view after every change; another program's row, merged in
    by the first save, must survive the second (the editor's view never had it)."""
    load_user_catalog()
    save_user_catalog(_added("w1"))
    # Another program (a CLI import) saves meanwhile; this process did not see it.
    atomic_write_text(user_catalog_file(), dumps(_added("w1", "x1")))
    save_user_catalog(_added("w1", "w2"))
    assert _on_disk() == ["w1", "x1", "w2"]
    save_user_catalog(_added("w1", "w2", "w3"))
    assert _on_disk() == ["w1", "x1", "w2", "w3"]
    # ... and a row the window removes goes, while the other program's stays.
    save_user_catalog(_added("w2", "w3"))
    assert _on_disk() == ["x1", "w2", "w3"]


def test_merge_takes_both_sides_changes_cell_by_cell():
    from gpuadvisor.core.formats.user_catalog_merge import merge_user_catalogs

    base = UserCatalog(
        gpus=KindEdits(overrides={"h100-sxm": {"tdp_w": "700", "notes": "a"}}, deleted=("l4",))
    )
    ours = UserCatalog(gpus=KindEdits(overrides={"h100-sxm": {"tdp_w": "650", "notes": "a"}}, deleted=()))
    theirs = UserCatalog(
        gpus=KindEdits(overrides={"h100-sxm": {"tdp_w": "700", "notes": "b"}}, deleted=("l4", "t4"))
    )
    merged = merge_user_catalogs(base, ours, theirs)
    assert dict(merged.gpus.overrides["h100-sxm"]) == {"tdp_w": "650", "notes": "b"}
    assert merged.gpus.deleted == ("t4",)


def test_a_caller_with_its_own_base_gets_the_merged_edits_whatever_else_loaded_the_file():
    """The catalog editor keeps its own base: a load of the file elsewhere in the process (a dialog
    reading the catalogs) must not make its next save drop what another program saved meanwhile."""
    from gpuadvisor.storage.user_catalog_store import save_and_merge_user_catalog

    first = save_and_merge_user_catalog(_added("w1"), UserCatalog.empty())
    assert not first.merged and [r["id"] for r in first.catalog.gpus.added] == ["w1"]
    atomic_write_text(user_catalog_file(), dumps(_added("w1", "x1")))  # another program
    load_user_catalog()  # something else in this process reads the file
    second = save_and_merge_user_catalog(_added("w1", "w2"), first.catalog)
    assert second.merged and [r["id"] for r in second.catalog.gpus.added] == ["w1", "x1", "w2"]
    assert _on_disk() == ["w1", "x1", "w2"]
    # With the merged edits as its base, the caller's next save merges nothing more.
    third = save_and_merge_user_catalog(_added("w1", "x1", "w2", "w3"), second.catalog)
    assert not third.merged and _on_disk() == ["w1", "x1", "w2", "w3"]


def test_an_editors_table_is_moved_onto_the_merged_edits():
    from gpuadvisor.core.formats.user_catalog import bundled_rows, diff, merge
    from gpuadvisor.core.formats.user_catalog_merge import rebase_rows

    bundled = {r["id"]: r for r in bundled_rows("gpus")}
    mine = [dict(m.row) for m in merge("gpus", _added("w1").gpus)[0]]
    base = diff("gpus", mine)
    theirs = KindEdits(overrides={"l4": {"tdp_w": "80"}}, added=_added("w1", "x1").gpus.added)
    # An undo step's table from before "w1" was added: the other program's row and cell come along.
    before = [r for r in mine if r["id"] != "w1"]
    moved = {r["id"]: r for r in rebase_rows("gpus", before, base, theirs)}
    assert "w1" not in moved and "x1" in moved and moved["l4"]["tdp_w"] == "80"
    assert moved["h100-sxm"] == {c: bundled["h100-sxm"].get(c, "") for c in moved["h100-sxm"]}
