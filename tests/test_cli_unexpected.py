"""The command line's last line of defence: anything unexpected is one ``error:`` line and exit 1,
with the traceback in the log file (and on stderr with ``--debug``).

The unexpected errors are provoked by making a core function fail, since no real input is known
to reach one any more (that is what tests/core/test_fuzz_readers.py checks); the handler is the
part under test, and it runs for real: the log file is written and read back.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpuadvisor.cli import main
from gpuadvisor.storage import LOG_FILENAME, user_paths

REPO = Path(__file__).resolve().parents[1]
SCENARIO = {"model": {"preset": "llama-3.1-8b"}, "workload": {"kind": "inference"}}


@pytest.fixture
def scenario(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(SCENARIO), encoding="utf-8")
    return str(path)


def _boom(*_args, **_kwargs):
    raise RuntimeError("boom in the estimate")


@pytest.mark.parametrize(
    "exc", [RuntimeError("boom in the estimate"), MemoryError(), RecursionError("too deep"), SystemError()]
)
def test_an_unexpected_error_is_one_line_exit_1_and_logged(monkeypatch, capsys, scenario, exc):
    def fail(*_args, **_kwargs):
        raise exc

    monkeypatch.setattr("gpuadvisor.cli.estimate.estimate", fail)
    code = main(["estimate", scenario])
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 1 and out == "" and len(lines) == 1, err
    assert lines[0].startswith(f"error: something went wrong ({type(exc).__name__}")
    assert "--debug" in lines[0] and "Traceback" not in err
    log = user_paths().log_dir / LOG_FILENAME
    assert str(log) in lines[0]
    text = log.read_text(encoding="utf-8")
    assert "Traceback (most recent call last)" in text and type(exc).__name__ in text


def test_debug_prints_the_traceback_too(monkeypatch, capsys, scenario):
    monkeypatch.setattr("gpuadvisor.cli.estimate.estimate", _boom)
    code = main(["--debug", "estimate", scenario])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback (most recent call last)" in err and "boom in the estimate" in err
    assert err.strip().splitlines()[-1].startswith("error: something went wrong (RuntimeError: boom")


def test_an_unwritable_log_still_gives_one_line(monkeypatch, capsys, scenario, tmp_path):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the home folder should be", encoding="utf-8")
    monkeypatch.setenv("GPUADVISOR_HOME", str(blocked))
    monkeypatch.setattr("gpuadvisor.cli.estimate.estimate", _boom)
    code = main(["estimate", scenario])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("error: something went wrong (RuntimeError: boom in the estimate)")


def test_input_errors_keep_their_exit_code(capsys, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("[" * 5000 + "]" * 5000, encoding="utf-8")
    assert main(["estimate", str(bad)]) == 2
    assert capsys.readouterr().err.startswith(f"error: {bad}: nests deeper than")


def test_a_real_process_never_shows_a_traceback(tmp_path):
    """Through the entry point as a user runs it: a device, a FIFO and a folder as the scenario."""
    fifo = tmp_path / "pipe.json"
    import os

    os.mkfifo(fifo)
    for target in ("/dev/zero", str(fifo), str(tmp_path)):
        done = subprocess.run(
            [sys.executable, "-m", "gpuadvisor.cli", "estimate", target],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2 and done.stdout == "", done.stderr
        assert done.stderr.count("\n") == 1 and done.stderr.startswith("error:"), done.stderr
