"""Saves that collide: real processes saving the same stored files at the same moment, and saves
killed with SIGKILL half-way. No edit may be lost, no file damaged, no temporary file left behind.

* 200 pairs of catalog imports: two processes, released together by a barrier 200 times, each
  adding its own row through the CLI's path (lock held from read to write).
* 60 pairs of a window and an import: one process reads the catalog, waits for the other to
  import a row, then saves its own edit (the window's path: re-read and merge under the lock).
* 60 pairs of measured runs added at once, and of settings saved by two windows.
* 60 pairs of price-list imports saving cloud instance types (each its own provider), and 60 of an
  import racing the undo and redo of another's: no instance type is lost, none comes back.
* A process saving the catalog in a loop is killed with SIGKILL 40 times at random moments: the
  catalog always loads as one of the versions written, and the next load leaves no orphan.
* The same races through the real ``gpuadvisor-cli catalog import`` and ``prices import`` entry
  points, fewer times.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpuadvisor.core.formats.measurements import Measurement
from gpuadvisor.core.formats.user_catalog import KindEdits, UserCatalog, bundled_rows, loads
from gpuadvisor.core.specs.instances import InstanceType
from gpuadvisor.storage import (
    load_measurements,
    load_settings,
    load_user_catalog,
    save_settings,
    save_user_catalog,
    user_catalog_file,
)
from gpuadvisor.storage.instances_store import (
    instances_file,
    load_user_instances,
    put_provider_rows,
    save_imported_instances,
)
from gpuadvisor.storage.locking import orphans
from gpuadvisor.storage.measurements_store import add_measurement
from gpuadvisor.storage.user_catalog_store import editing_user_catalog

PAIRS = 200  # catalog imports, as many as the fault was reproduced with
FEWER = 60  # the other races: the same code path (lock, re-read, write) on other files
FORK = multiprocessing.get_context("fork")
REPO = Path(__file__).resolve().parents[2]


def _row(row_id: str) -> dict[str, str]:
    """A short added row (the stored file is checked, not the catalog built from it)."""
    return {"id": row_id, "name": f"GPU {row_id}", "memory_gb": "80"}


def _add_row(user: UserCatalog, row_id: str) -> UserCatalog:
    gpus = user.gpus
    return user.with_edits("gpus", KindEdits(gpus.overrides, (*gpus.added, _row(row_id)), gpus.deleted))


def _importer(home: str, tag: str, barrier, rounds: int) -> None:
    os.environ["GPUADVISOR_HOME"] = home
    for i in range(rounds):
        barrier.wait(timeout=60)
        with editing_user_catalog() as edit:
            edit.save(_add_row(edit.loaded.catalog, f"{tag}-{i}"))


def _window(home: str, barrier, rounds: int) -> None:
    """Reads, lets the importer save in between, then saves its own edit (a stale read)."""
    os.environ["GPUADVISOR_HOME"] = home
    for i in range(rounds):
        loaded = load_user_catalog()
        barrier.wait(timeout=60)  # the importer runs now
        barrier.wait(timeout=60)  # ... and has saved
        save_user_catalog(_add_row(loaded.catalog, f"window-{i}"))


def _importer_after(home: str, barrier, rounds: int) -> None:
    os.environ["GPUADVISOR_HOME"] = home
    for i in range(rounds):
        barrier.wait(timeout=60)
        with editing_user_catalog() as edit:
            edit.save(_add_row(edit.loaded.catalog, f"import-{i}"))
        barrier.wait(timeout=60)


def _run(*targets) -> None:
    procs = [FORK.Process(target=t, args=a) for t, a in targets]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    assert [p.exitcode for p in procs] == [0] * len(procs)


def _added_ids() -> list[str]:
    return [r["id"] for r in loads(user_catalog_file().read_bytes()).gpus.added]


def test_two_imports_at_once_never_lose_a_row(tmp_path):
    home = os.environ["GPUADVISOR_HOME"]
    barrier = FORK.Barrier(2)
    _run((_importer, (home, "a", barrier, PAIRS)), (_importer, (home, "b", barrier, PAIRS)))
    ids = _added_ids()
    assert len(ids) == 2 * PAIRS and set(ids) == {f"{t}-{i}" for t in "ab" for i in range(PAIRS)}
    assert orphans(user_catalog_file()) == []


def test_a_window_saving_after_an_import_keeps_both_edits(tmp_path):
    home = os.environ["GPUADVISOR_HOME"]
    barrier = FORK.Barrier(2)
    _run((_window, (home, barrier, FEWER)), (_importer_after, (home, barrier, FEWER)))
    ids = set(_added_ids())
    assert ids == {f"{t}-{i}" for t in ("window", "import") for i in range(FEWER)}


def _measurer(home: str, tag: str, barrier, rounds: int) -> None:
    os.environ["GPUADVISOR_HOME"] = home
    for i in range(rounds):
        barrier.wait(timeout=60)
        add_measurement(
            Measurement(
                id=f"{tag}{i}", gpu_id="h100-sxm", kind="inference", model="m", tokens_per_s=100.0 + i
            )
        )


def test_runs_recorded_at_once_are_all_kept():
    home = os.environ["GPUADVISOR_HOME"]
    barrier = FORK.Barrier(2)
    _run((_measurer, (home, "a", barrier, FEWER)), (_measurer, (home, "b", barrier, FEWER)))
    loaded = load_measurements()
    assert loaded.warnings == [] and len(loaded.value) == 2 * FEWER
    assert {m.tokens_per_s for m in loaded.value} == {100.0 + i for i in range(FEWER)}


def _settings_window(home: str, field: str, barrier, rounds: int) -> None:
    os.environ["GPUADVISOR_HOME"] = home
    settings, _ = load_settings()
    for i in range(rounds):
        barrier.wait(timeout=60)
        if field == "recent":
            settings.splitter_sizes = {"main": [i, i + 1]}
        else:
            settings.extra[f"key-{i}"] = i
        save_settings(settings)


def test_two_windows_saving_settings_keep_each_others_changes():
    home = os.environ["GPUADVISOR_HOME"]
    barrier = FORK.Barrier(2)
    _run(
        (_settings_window, (home, "recent", barrier, FEWER)),
        (_settings_window, (home, "extra", barrier, FEWER)),
    )
    settings, warnings = load_settings()
    assert warnings == []
    assert settings.splitter_sizes == {"main": [FEWER - 1, FEWER]}
    assert {k: v for k, v in settings.extra.items() if k.startswith("key-")} == {
        f"key-{i}": i for i in range(FEWER)
    }


# --- cloud instance types ----------------------------------------------------------------------------
def _instance(provider: str, name: str) -> InstanceType:
    return InstanceType(provider, name, "h100-sxm", 8, 20.0, None, ("r1",), "2026-11-29")


def _instance_importer(home: str, tag: str, barrier, rounds: int) -> None:
    """Imports a price list of a new provider each round (the CLI's and the editor's path)."""
    os.environ["GPUADVISOR_HOME"] = home
    for i in range(rounds):
        barrier.wait(timeout=60)
        save_imported_instances([_instance(f"{tag}{i}", f"{tag}-type-{i}")], "2026-11-29")


def _instance_undoer(home: str, barrier, rounds: int) -> None:
    """An editor importing, undoing and redoing its import of one provider, round after round."""
    os.environ["GPUADVISOR_HOME"] = home
    mine = [_instance("editor", "editor-type")]
    for i in range(rounds):
        barrier.wait(timeout=60)
        saved = save_imported_instances(mine, "2026-11-29")
        put_provider_rows(saved.providers, saved.before)  # undo
        if i % 2:
            put_provider_rows(saved.providers, mine, "2026-11-29")  # redo


def _user_instance_types() -> set[str]:
    user, warnings = load_user_instances()
    assert warnings == []
    return set() if user is None else {t.instance_type for t in user.types}


def test_two_price_list_imports_at_once_never_lose_an_instance_type():
    home = os.environ["GPUADVISOR_HOME"]
    barrier = FORK.Barrier(2)
    _run(
        (_instance_importer, (home, "a", barrier, FEWER)),
        (_instance_importer, (home, "b", barrier, FEWER)),
    )
    assert _user_instance_types() == {f"{t}-type-{i}" for t in "ab" for i in range(FEWER)}
    assert orphans(instances_file()) == []


def test_undo_and_redo_of_an_import_keep_what_another_program_imported_meanwhile():
    home = os.environ["GPUADVISOR_HOME"]
    barrier = FORK.Barrier(2)
    _run((_instance_undoer, (home, barrier, FEWER)), (_instance_importer, (home, "c", barrier, FEWER)))
    # The last round (odd) redid the editor's import; every import of the other program is kept.
    expected = {f"c-type-{i}" for i in range(FEWER)} | ({"editor-type"} if (FEWER - 1) % 2 else set())
    assert _user_instance_types() == expected


# --- kill -9 mid-save -------------------------------------------------------------------------------
SAVER = """
import os, sys
from gpuadvisor.core.formats.user_catalog import KindEdits, UserCatalog, bundled_rows
from gpuadvisor.storage import save_user_catalog
base = bundled_rows("gpus")[0]
print("ready", flush=True)
i = 0
while True:
    rows = tuple({**base, "id": f"v{i}-{k}", "notes": "x" * (i % 7) * 4000} for k in range(1 + i % 5))
    save_user_catalog(UserCatalog(gpus=KindEdits(added=rows)))
    i += 1
"""


KILLS = 40


def test_kill_9_mid_save_never_loses_or_damages_the_catalog_and_leaves_no_orphan():
    rng = random.Random(41)
    path = user_catalog_file()
    kills = 0
    for round_ in range(KILLS):
        with subprocess.Popen([sys.executable, "-c", SAVER], stdout=subprocess.PIPE, cwd=REPO) as child:
            assert child.stdout is not None and child.stdout.readline().strip() == b"ready"
            time.sleep(rng.uniform(0.0, 0.08))
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=30)
        kills += 1
        if not path.exists():
            continue  # killed before its first save finished: nothing written, nothing lost
        loaded = load_user_catalog()
        assert loaded.warnings == [], (round_, loaded.warnings)
        added = loaded.catalog.gpus.added
        assert added and len({r["id"].split("-")[0] for r in added}) == 1  # one whole version
        assert orphans(path) == [], round_  # the load tidied what the kill left
        bak = path.with_name(path.name + ".bak")
        if bak.exists():
            loads(bak.read_bytes())  # the backup is whole too
    assert kills == KILLS


# --- through the command line -------------------------------------------------------------------------
@pytest.mark.parametrize("pair", range(5))
def test_two_cli_imports_at_once_keep_both(tmp_path, pair):
    files = []
    for tag in "ab":
        f = tmp_path / f"{tag}.json"
        row = {**bundled_rows("gpus")[0], "id": f"cli-{tag}-{pair}", "name": f"GPU {tag}"}
        f.write_text(json.dumps({"catalog": "gpus", "rows": [row]}), encoding="utf-8")
        files.append(f)
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "gpuadvisor.cli", "catalog", "import", "gpus", str(f)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for f in files
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert set(_added_ids()) == {f"cli-a-{pair}", f"cli-b-{pair}"}


LAMBDA_LIST = (
    "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,SpotPrice\n"
    "gpu_8x_h100_sxm5,H100,8,208,1800,19.99,us-east-1,,\n"
)
RUNPOD_LIST = (
    "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,SpotPrice\n"
    "8x_H100_SECURE,H100,8,128,1000,23.92,US,,\n"
)


@pytest.mark.parametrize("pair", range(3))
def test_two_cli_price_imports_at_once_keep_both_providers(tmp_path, pair):
    files = []
    for provider, text in (("lambda", LAMBDA_LIST), ("runpod", RUNPOD_LIST)):
        f = tmp_path / provider / "vms.csv"
        f.parent.mkdir()
        f.write_text(text, encoding="utf-8")
        files.append((provider, f))
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "gpuadvisor.cli", "prices", "import", "--provider", p, str(f)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for p, f in files
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert {"gpu_8x_h100_sxm5", "8x_H100_SECURE"} <= _user_instance_types()
