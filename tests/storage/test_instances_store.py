"""The user's imported instance types on disk: written on a fresh install, put back on undo provider
by provider, read as untrusted input, and a damaged file set aside rather than taking the app down."""

from __future__ import annotations

import os

import pytest

from gpuadvisor.core.specs.instances import InstanceType, bundled_instances
from gpuadvisor.storage import StorageError
from gpuadvisor.storage.instances_store import (
    instances_file,
    load_instances,
    load_user_instances,
    put_provider_rows,
    save_imported_instances,
)
from gpuadvisor.storage.locking import orphans

MINE = InstanceType("lambda", "gpu_8x_h100_sxm5", "h100-sxm", 8, 19.99, None, ("us-east-1",), "2026-11-29")
AWS = InstanceType("aws", "p5.48xlarge", "h100-sxm", 8, 55.04, 21.0, ("us-east-1",), "2026-11-29")


def _user_rows(provider: str) -> list[InstanceType]:
    user, warnings = load_user_instances()
    assert warnings == []
    return [] if user is None else [t for t in user.types if t.provider == provider]


def test_a_first_import_creates_the_data_folder_and_undo_removes_the_file():
    assert not instances_file().parent.exists()
    saved = save_imported_instances([MINE], "2026-11-29")
    assert saved.path == instances_file() and saved.path.exists()
    assert saved.providers == ("lambda",) and saved.before == ()
    assert [t for t in saved.snapshot.types if t.provider == "lambda"] == [MINE]
    back = put_provider_rows(saved.providers, saved.before)  # undo of the first import
    assert not instances_file().exists() and back.snapshot.types == bundled_instances().types


def test_undo_puts_back_the_rows_an_earlier_import_left():
    save_imported_instances([MINE], "2026-11-29")
    cheaper = InstanceType(
        "lambda", "gpu_8x_h100_sxm5", "h100-sxm", 8, 17.5, None, ("us-east-1",), "2026-12-01"
    )
    second = save_imported_instances([cheaper], "2026-12-01")
    assert second.before == (MINE,)
    assert load_instances()[0].types != bundled_instances().types
    back = put_provider_rows(second.providers, second.before)
    assert [t.usd_per_hour for t in back.snapshot.types if t.provider == "lambda"] == [19.99]
    assert instances_file().with_name("instances.csv.bak").exists()  # the previous file kept


def test_undo_of_one_provider_keeps_what_another_program_imported_meanwhile():
    lambda_import = save_imported_instances([MINE], "2026-11-29")
    save_imported_instances([AWS], "2026-11-29")  # another window or the CLI, in between
    put_provider_rows(lambda_import.providers, lambda_import.before)  # undo of the first import
    assert _user_rows("lambda") == [] and _user_rows("aws") == [AWS]
    put_provider_rows(lambda_import.providers, [MINE], "2026-11-29")  # and its redo
    assert _user_rows("lambda") == [MINE] and _user_rows("aws") == [AWS]


@pytest.mark.parametrize(
    ("content", "tag"),
    [
        (b"\xff\xfe not utf-8", "corrupt"),
        (b"# catalog=instances; schema_version=9; updated=2026-11-29\nprovider\n", "unsupported"),
        (b"# catalog=instances; schema_version=1; updated=x\nprovider,instance_type\n", "corrupt"),
        (
            b"# catalog=instances; schema_version=1; updated=x\n"
            b"provider,instance_type,gpu_id,gpus_per_instance,usd_per_hour,price_date\n"
            b"aws," + b"x" * 140_000 + b",h100-sxm,8,1,2026-01-01\n",
            "corrupt",
        ),
        (
            b"# catalog=instances; schema_version=1; updated=x\n"
            b"provider,instance_type,gpu_id,gpus_per_instance,usd_per_hour,price_date\n"
            b"aws," + b"y" * 500 + b",h100-sxm,8,1,2026-01-01\n",
            "corrupt",
        ),
    ],
)
def test_a_damaged_file_is_set_aside_with_one_warning_and_the_bundled_snapshot_used(content, tag):
    path = instances_file()
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    snapshot, warnings = load_instances()
    assert snapshot.types == bundled_instances().types
    assert len(warnings) == 1 and "\n" not in warnings[0] and "bundled one is used" in warnings[0]
    assert not path.exists()
    assert [p.name.split("-")[0] for p in path.parent.iterdir() if p.name.startswith("instances.csv.")] == [
        f"instances.csv.{tag}"
    ]


def test_a_fifo_in_the_files_place_neither_hangs_nor_stops_an_import():
    path = instances_file()
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    snapshot, warnings = load_instances()
    assert snapshot.types == bundled_instances().types and "not a regular file" in warnings[0]
    os.mkfifo(path)
    saved = save_imported_instances([MINE], "2026-11-29")  # set aside under the lock, then written
    assert path.is_file() and [t for t in saved.snapshot.types if t.provider == "lambda"] == [MINE]


def test_a_save_tidies_the_orphans_a_killed_save_left_when_next_loaded():
    save_imported_instances([MINE], "2026-11-29")
    orphan = instances_file().with_name(".instances.csv.4242-deadbeef.tmp")
    orphan.write_text("half", encoding="utf-8")
    load_instances()
    assert orphans(instances_file()) == []


def test_more_instance_types_than_the_file_may_hold_are_refused_before_anything_is_written():
    save_imported_instances([MINE], "2026-11-29")
    before = instances_file().read_bytes()
    many = [
        InstanceType("vast", f"{i:06d}-" + "z" * 150, "h100-sxm", 1, 1.0, None, ("r",), "2026-11-29")
        for i in range(100_000)
    ]
    with pytest.raises(StorageError, match="would be larger than 16 MB"):
        save_imported_instances(many, "2026-11-29")
    assert instances_file().read_bytes() == before
