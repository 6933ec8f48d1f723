"""The local model scan on a hostile disk: FIFOs, unreadable folders, link loops, a time limit.

Every case runs the real scan on a real folder tree; a FIFO is a real named pipe with no writer,
which a plain ``open()`` would wait on forever (the tests would hang, not fail, if it did).
"""

import json
import os
import time
from pathlib import Path

import pytest

from gpuadvisor.storage.local_models import LocalScan, scan_hf_cache, scan_local_models_report

QWEN = Path(__file__).resolve().parents[1] / "data" / "hf" / "Qwen3-8B" / "config.json"
ROOT = os.geteuid() == 0 if hasattr(os, "geteuid") else False


def _repo(cache: Path, name: str, commit: str = "c0ffee") -> Path:
    repo = cache / f"models--{name.replace('/', '--')}"
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit, encoding="utf-8")
    (repo / "blobs").mkdir()
    (snapshot / "config.json").write_bytes(QWEN.read_bytes())
    return repo


def _scan(cache: Path, **kw) -> LocalScan:
    return scan_local_models_report(include_defaults=False, env={"HF_HUB_CACHE": str(cache)}, **kw)


def test_a_fifo_as_refs_main_is_skipped_and_counted_not_waited_on(tmp_path):
    cache = tmp_path / "hub"
    good = _repo(cache, "Qwen/Qwen3-8B")
    odd = _repo(cache, "someone/piped")
    (odd / "refs" / "main").unlink()
    os.mkfifo(odd / "refs" / "main")
    start = time.monotonic()
    scan = _scan(cache)
    assert time.monotonic() - start < 5
    names = {m.name for m in scan.models}
    # The piped repo still shows its only snapshot (the newest one is taken without refs/main).
    assert names == {"Qwen/Qwen3-8B", "someone/piped"} and scan.unreadable == 1 and not scan.timed_out
    assert scan.problems() == "1 folder or file could not be read."
    assert good.exists()


def test_a_fifo_as_an_ollama_manifest_is_skipped(tmp_path):
    store = tmp_path / "ollama"
    manifests = store / "manifests" / "registry.ollama.ai" / "library" / "tiny"
    manifests.mkdir(parents=True)
    (store / "blobs").mkdir()
    blob = store / "blobs" / "sha256-abcd"
    blob.write_bytes(b"GGUF")
    layer = {"mediaType": "application/vnd.ollama.image.model", "digest": "sha256:abcd"}
    (manifests / "latest").write_text(json.dumps({"layers": [layer]}), encoding="utf-8")
    os.mkfifo(manifests / "piped")
    (manifests / "escape").write_text(
        json.dumps({"layers": [{**layer, "digest": "sha256:../../../etc/passwd"}]}), encoding="utf-8"
    )
    scan = scan_local_models_report([], include_defaults=False, env={"HF_HUB_CACHE": str(tmp_path / "none")})
    assert scan.models == []  # the extra folder was not given: nothing scanned yet
    scan = scan_local_models_report(
        [store], include_defaults=False, env={"HF_HUB_CACHE": str(tmp_path / "none"), "OLLAMA_MODELS": ""}
    )
    assert [m.name for m in scan.models] == ["tiny:latest"] and scan.unreadable == 1


def test_an_unreadable_snapshots_folder_is_skipped_and_counted(tmp_path):
    cache = tmp_path / "hub"
    _repo(cache, "Qwen/Qwen3-8B")
    looped = cache / "models--someone--looped"
    looped.mkdir()
    (looped / "snapshots").symlink_to(looped / "snapshots")  # ELOOP for everyone, root included
    scan = LocalScan()
    found = scan_hf_cache(cache, scan)
    assert [m.name for m in found] == ["Qwen/Qwen3-8B"] and scan.unreadable == 1


@pytest.mark.skipif(ROOT, reason="root reads folders whatever their permissions")
def test_a_folder_without_permission_is_skipped_and_counted(tmp_path):
    cache = tmp_path / "hub"
    _repo(cache, "Qwen/Qwen3-8B")
    locked = _repo(cache, "someone/locked")
    (locked / "snapshots").chmod(0)
    try:
        scan = _scan(cache)
    finally:
        (locked / "snapshots").chmod(0o755)
    assert [m.name for m in scan.models] == ["Qwen/Qwen3-8B"] and scan.unreadable >= 1
    assert "could not be read" in scan.problems()


def test_the_scan_stops_at_its_time_limit_with_what_it_found(tmp_path):
    cache = tmp_path / "hub"
    for i in range(30):
        _repo(cache, f"org/model-{i:02d}")
    scan = _scan(cache, time_limit_s=0.0)
    assert scan.timed_out and scan.finished and len(scan.models) < 30
    assert "time limit" in scan.problems()
    full = _scan(cache)
    assert len(full.models) == 30 and not full.timed_out and full.problems() == ""


def test_a_home_folder_that_cannot_be_found_does_not_stop_the_scan(tmp_path, monkeypatch):
    monkeypatch.delenv("HOME", raising=False)
    monkeypatch.setattr("pathlib.Path.home", classmethod(lambda cls: (_ for _ in ()).throw(RuntimeError())))
    scan = scan_local_models_report([], env={"HF_HUB_CACHE": "~nosuchuser-xyz/hub"})
    assert scan.models == [] and scan.finished
