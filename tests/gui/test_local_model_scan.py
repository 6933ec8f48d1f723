"""Model page > Models on this machine: the scan runs off the GUI thread and says what it skipped."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

from gui_helpers import click, settle
from PySide6.QtWidgets import QDialog

from gpuadvisor.gui import local_models_dialog

DATA = Path(__file__).resolve().parents[1] / "data" / "hf"


def _cache(tmp_path: Path) -> Path:
    cache = tmp_path / "hub"
    snapshot = cache / "models--meta-llama--Llama-2-7b-hf" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (cache / "models--meta-llama--Llama-2-7b-hf" / "blobs").mkdir()
    shutil.copy(DATA / "Llama-2-7b-hf" / "config.json", snapshot)
    piped = cache / "models--someone--piped"
    (piped / "snapshots" / "def456").mkdir(parents=True)
    (piped / "refs").mkdir()
    os.mkfifo(piped / "refs" / "main")  # a plain open() would wait here for ever
    return cache


def test_the_scan_runs_off_the_gui_thread_and_the_list_says_what_was_skipped(
    window, qtbot, tmp_path, monkeypatch
):
    monkeypatch.setenv("HF_HUB_CACHE", str(_cache(tmp_path)))
    threads: list[str] = []
    real = local_models_dialog.scan_local_models_report

    def spy(*args, **kwargs):
        threads.append(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(local_models_dialog, "scan_local_models_report", spy)
    seen: list[tuple[list[str], str]] = []

    def accept(dialog):
        seen.append(([m.name for m in dialog.models], dialog.note.text()))
        return QDialog.DialogCode.Accepted

    monkeypatch.setattr(local_models_dialog.LocalModelsDialog, "exec", accept)
    window.show_page(1)
    click(qtbot, window.model_page.local_models_button)
    settle(window)
    assert threads == ["local-model-scan"]
    names, note = seen[0]
    assert "meta-llama/Llama-2-7b-hf" in names
    assert note == "1 folder or file could not be read."
    assert window.state.error == ""


def test_a_scan_past_its_time_limit_shows_what_it_found(qtbot, tmp_path, monkeypatch):
    started = threading.Event()

    def slow(*, time_limit_s, into):
        into.models.append(
            local_models_dialog.LocalModel(
                "found/first", "huggingface", tmp_path, 0, {"hf_config": str(tmp_path)}
            )
        )
        started.set()
        threading.Event().wait(3)  # stuck in one call, past the limit
        into.finished = True

    monkeypatch.setattr(local_models_dialog, "scan_local_models_report", slow)
    scan = local_models_dialog.scan_in_background(None, time_limit_s=0.2)
    assert started.is_set() and scan is not None and scan.timed_out
    assert [m.name for m in scan.models] == ["found/first"] and "time limit" in scan.problems()
