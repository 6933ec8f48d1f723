"""The user's imported instance types on disk: written on a fresh install, put back on undo."""

from __future__ import annotations

from gpuadvisor.core.specs.instances import InstanceType, bundled_instances
from gpuadvisor.storage.instances_store import (
    instances_file,
    instances_text_after_import,
    load_instances,
    put_user_instances,
    save_imported_instances,
    user_instances_text,
)

MINE = InstanceType("lambda", "gpu_8x_h100_sxm5", "h100-sxm", 8, 19.99, None, ("us-east-1",), "2026-11-29")


def test_a_first_import_creates_the_data_folder_and_undo_removes_the_file():
    assert not instances_file().parent.exists() and user_instances_text() is None
    path, snapshot = save_imported_instances([MINE], "2026-11-29")
    assert path == instances_file() and path.exists()
    assert [t for t in snapshot.types if t.provider == "lambda"] == [MINE]
    _path, back = put_user_instances(None)  # undo of the first import
    assert not instances_file().exists() and back.types == bundled_instances().types


def test_undo_puts_back_the_file_an_earlier_import_left():
    save_imported_instances([MINE], "2026-11-29")
    earlier = user_instances_text()
    cheaper = InstanceType(
        "lambda", "gpu_8x_h100_sxm5", "h100-sxm", 8, 17.5, None, ("us-east-1",), "2026-12-01"
    )
    text = instances_text_after_import([cheaper], "2026-12-01")
    assert user_instances_text() == earlier  # computing what an import would write writes nothing
    put_user_instances(text)
    assert load_instances()[0].types != bundled_instances().types
    _path, back = put_user_instances(earlier)
    assert [t.usd_per_hour for t in back.types if t.provider == "lambda"] == [19.99]
