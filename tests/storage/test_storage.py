"""The storage layer: user folders, atomic writes, settings that survive damage, the log.

Plain pytest, no Qt. ``tests/conftest.py`` gives each test its own HOME and GPUADVISOR_HOME.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import platformdirs
import pytest

from gpuadvisor.core.errors import InputError
from gpuadvisor.storage import (
    MAX_RECENT_FILES,
    Settings,
    StorageError,
    UserPaths,
    add_recent_file,
    atomic_write_bytes,
    atomic_write_text,
    configure_logging,
    current_log_file,
    decode_blob,
    encode_blob,
    ensure_dir,
    existing_recent_files,
    load_settings,
    log_exception,
    remove_recent_file,
    save_settings,
    set_aside,
    settings_file,
    shutdown_logging,
    user_paths,
)

REPO = Path(__file__).resolve().parents[2]
STORAGE = REPO / "gpuadvisor" / "storage"


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


def _temp_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


# --- paths ------------------------------------------------------------------------------------
def test_gpuadvisor_home_redirects_every_folder(tmp_path, monkeypatch):
    home = tmp_path / "portable"
    monkeypatch.setenv("GPUADVISOR_HOME", str(home))
    paths = user_paths()
    assert paths == UserPaths(
        config_dir=home / "config", data_dir=home / "data", log_dir=home / "logs", cache_dir=home / "cache"
    )
    assert paths.portable
    assert settings_file() == home / "config" / "settings.json"


def test_gpuadvisor_home_relative_and_tilde_become_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GPUADVISOR_HOME", "rel")
    assert user_paths().config_dir == tmp_path / "rel" / "config"
    monkeypatch.setenv("GPUADVISOR_HOME", "~/ga")
    assert user_paths().data_dir == Path(os.environ["HOME"]) / "ga" / "data"


@pytest.mark.parametrize("value", [None, "", "   "])
def test_platformdirs_when_home_unset_or_empty(tmp_path, monkeypatch, value):
    if value is None:
        monkeypatch.delenv("GPUADVISOR_HOME")
    else:
        monkeypatch.setenv("GPUADVISOR_HOME", value)
    for var, sub in (
        ("XDG_CONFIG_HOME", "cfg"),
        ("XDG_DATA_HOME", "dat"),
        ("XDG_STATE_HOME", "state"),
        ("XDG_CACHE_HOME", "cch"),
    ):
        monkeypatch.setenv(var, str(tmp_path / sub))
    paths = user_paths()
    assert not paths.portable
    assert paths.config_dir == platformdirs.user_config_path("gpuadvisor", False)
    assert paths.data_dir == platformdirs.user_data_path("gpuadvisor", False)
    assert paths.log_dir == platformdirs.user_log_path("gpuadvisor", False)
    assert paths.cache_dir == platformdirs.user_cache_path("gpuadvisor", False)
    if sys.platform.startswith("linux"):
        assert paths.config_dir == tmp_path / "cfg" / "gpuadvisor"
        assert paths.data_dir == tmp_path / "dat" / "gpuadvisor"
        assert paths.log_dir == tmp_path / "state" / "gpuadvisor" / "log"
        assert paths.cache_dir == tmp_path / "cch" / "gpuadvisor"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="XDG layout is Linux's")
def test_platformdirs_default_to_home_without_xdg_vars(tmp_path, monkeypatch):
    monkeypatch.delenv("GPUADVISOR_HOME")
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    home = Path(os.environ["HOME"])
    paths = user_paths()
    assert paths.config_dir == home / ".config" / "gpuadvisor"
    assert paths.cache_dir == home / ".cache" / "gpuadvisor"
    assert all(str(p).startswith(str(home)) for p in (paths.data_dir, paths.log_dir))
    assert not home.exists()  # asking created nothing, not even HOME


def test_user_paths_creates_nothing(tmp_path):
    paths = user_paths()
    for folder in (paths.config_dir, paths.data_dir, paths.log_dir, paths.cache_dir):
        assert not folder.exists()
    assert _tree(tmp_path) == []


def test_importing_storage_creates_nothing_and_loads_no_qt(tmp_path):
    home = tmp_path / "fresh-home"
    code = (
        "import sys, importlib\n"
        "for m in ('paths', 'atomic', 'settings', 'logs', 'errors'):\n"
        "    importlib.import_module('gpuadvisor.storage.' + m)\n"
        "import gpuadvisor.storage as s\n"
        "s.user_paths(); s.load_settings()\n"
        "qt = ('PySide6', 'shiboken6', 'pyqtgraph')\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in qt\n"
        "             or m.startswith('gpuadvisor.gui'))\n"
        "print(bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    env = dict(os.environ, GPUADVISOR_HOME=str(home), HOME=str(tmp_path / "h"))
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == "[]"
    assert not home.exists() and not (tmp_path / "h").exists()


def test_storage_sources_never_import_qt_or_gui():
    import ast

    for path in STORAGE.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            for name in names:
                assert name.split(".")[0] not in ("PySide6", "shiboken6", "pyqtgraph"), (path.name, name)
                assert not name.startswith(("gui", "gpuadvisor.gui")), (path.name, name)


def test_ensure_dir_creates_lazily_and_is_idempotent(tmp_path):
    target = tmp_path / "a" / "b" / "c"
    assert ensure_dir(target) == target
    assert target.is_dir()
    if os.name == "posix":
        assert target.stat().st_mode & 0o777 == 0o700 & ~_umask()
    assert ensure_dir(target) == target


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_ensure_dir_reports_a_file_in_the_way(tmp_path):
    (tmp_path / "config").write_text("not a folder", encoding="utf-8")
    with pytest.raises(StorageError) as info:
        ensure_dir(tmp_path / "config")
    assert isinstance(info.value, InputError)
    assert info.value.field == "config"
    assert "cannot create the folder" in str(info.value) and "in the way" in str(info.value)
    with pytest.raises(StorageError, match="is a file, not a folder") as info:
        ensure_dir(tmp_path / "config" / "sub", what="config folder")
    assert info.value.field == "config folder"
    assert (tmp_path / "config").read_text(encoding="utf-8") == "not a folder"


def test_ensure_dir_reports_permission_denied(tmp_path, monkeypatch):
    def denied(self, *args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", str(self))

    monkeypatch.setattr(Path, "mkdir", denied)
    with pytest.raises(StorageError, match="Permission denied"):
        ensure_dir(tmp_path / "nope")


# --- atomic writes ----------------------------------------------------------------------------
def test_atomic_write_creates_and_replaces(tmp_path):
    target = tmp_path / "settings.json"
    assert atomic_write_text(target, "one\n") == target
    atomic_write_text(target, "two ünïcode\n")
    assert target.read_text(encoding="utf-8") == "two ünïcode\n"
    assert not (tmp_path / "settings.json.bak").exists()
    assert _temp_files(tmp_path) == []


def test_atomic_write_keeps_the_previous_content_as_bak(tmp_path):
    target = tmp_path / "gpus.csv"
    atomic_write_text(target, "first", backup=True)
    assert not (tmp_path / "gpus.csv.bak").exists()  # nothing to back up on the first write
    atomic_write_text(target, "second", backup=True)
    atomic_write_bytes(target, b"third", backup=True)
    assert target.read_bytes() == b"third"
    assert (tmp_path / "gpus.csv.bak").read_bytes() == b"second"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gpus.csv", "gpus.csv.bak"]


@pytest.mark.skipif(os.name != "posix", reason="POSIX modes")
def test_atomic_write_keeps_the_file_mode(tmp_path):
    target = tmp_path / "private.json"
    target.write_text("old", encoding="utf-8")
    target.chmod(0o600)
    atomic_write_text(target, "new", backup=True)
    assert target.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "private.json.bak").stat().st_mode & 0o777 == 0o600


def test_failed_replace_leaves_the_original_intact(tmp_path, monkeypatch):
    target = tmp_path / "settings.json"
    target.write_text("original", encoding="utf-8")

    def failing_replace(src, dst):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(StorageError) as info:
        atomic_write_text(target, "new content")
    assert str(info.value) == "cannot write settings.json: Input/output error"
    assert info.value.field == "settings.json" and info.value.path == target
    assert target.read_text(encoding="utf-8") == "original"
    assert _temp_files(tmp_path) == []


def test_failed_replace_after_backup_leaves_the_original_intact(tmp_path, monkeypatch):
    target = tmp_path / "settings.json"
    target.write_text("original", encoding="utf-8")
    real_replace = os.replace

    def replace_fails_for_target(src, dst):
        if Path(dst) == target:
            raise PermissionError(errno.EACCES, "Permission denied")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace_fails_for_target)
    with pytest.raises(StorageError, match="cannot write settings.json: Permission denied"):
        atomic_write_text(target, "new", backup=True)
    assert target.read_text(encoding="utf-8") == "original"
    assert (tmp_path / "settings.json.bak").read_text(encoding="utf-8") == "original"
    assert _temp_files(tmp_path) == []


def test_disk_full_while_writing(tmp_path, monkeypatch):
    target = tmp_path / "settings.json"
    target.write_text("original", encoding="utf-8")

    def no_space(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", no_space)
    with pytest.raises(StorageError, match="cannot write settings.json: No space left on device"):
        atomic_write_text(target, "x" * 100_000)
    assert target.read_text(encoding="utf-8") == "original"
    assert _temp_files(tmp_path) == []


def test_cannot_create_the_temp_file(tmp_path, monkeypatch):
    target = tmp_path / "settings.json"
    target.write_text("original", encoding="utf-8")
    real_open = os.open

    def deny_tmp(path, *args, **kwargs):
        if str(path).endswith(".tmp"):
            raise PermissionError(errno.EACCES, "Permission denied")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", deny_tmp)
    with pytest.raises(StorageError, match="Permission denied"):
        atomic_write_text(target, "new", backup=True)
    assert target.read_text(encoding="utf-8") == "original"
    assert not (tmp_path / "settings.json.bak").exists()  # the backup failed, so nothing was written


def test_interrupt_between_write_and_replace_cleans_up_and_propagates(tmp_path, monkeypatch):
    target = tmp_path / "settings.json"
    target.write_text("original", encoding="utf-8")

    def interrupted(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_text(target, "new")
    assert target.read_text(encoding="utf-8") == "original"
    assert _temp_files(tmp_path) == []


def test_process_killed_between_write_and_replace(tmp_path):
    """A real crash: the process dies after the temp file is written; the old settings survive."""
    home = Path(os.environ["GPUADVISOR_HOME"])
    save_settings(Settings(page_size="Letter"))
    code = (
        "import os\n"
        "import gpuadvisor.storage as s\n"
        "os.replace = lambda src, dst: os._exit(3)\n"
        "s.save_settings(s.Settings(page_size='A4', stale_price_months=99))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 3, proc.stderr
    config = home / "config"
    assert len(_temp_files(config)) == 1  # the orphan a real crash leaves; it is harmless
    settings, warnings = load_settings()
    assert (settings.page_size, settings.stale_price_months, warnings) == ("Letter", 6, [])
    save_settings(settings)  # and the next save still works
    assert load_settings()[0].page_size == "Letter"


def test_write_into_a_missing_folder_is_a_storage_error(tmp_path):
    with pytest.raises(StorageError, match="cannot write x.json: No such file or directory"):
        atomic_write_text(tmp_path / "missing" / "x.json", "{}")


def test_unencodable_text_is_a_storage_error(tmp_path):
    with pytest.raises(StorageError, match="cannot be encoded"):
        atomic_write_text(tmp_path / "x.txt", "caf\udce9")
    assert not (tmp_path / "x.txt").exists()


def test_set_aside_renames_never_deletes(tmp_path):
    bad = tmp_path / "settings.json"
    bad.write_bytes(b"\x00garbage")
    when = datetime(2024, 3, 5, 14, 7, 9)
    kept = set_aside(bad, "corrupt", now=when)
    assert kept.name == "settings.json.corrupt-20240305-140709"
    assert kept.read_bytes() == b"\x00garbage" and not bad.exists()
    bad.write_bytes(b"second")
    again = set_aside(bad, "corrupt", now=when)
    assert again.name == "settings.json.corrupt-20240305-140709-1"
    assert kept.read_bytes() == b"\x00garbage" and again.read_bytes() == b"second"
    with pytest.raises(ValueError):
        set_aside(again, "../evil")
    with pytest.raises(StorageError, match="cannot set settings.json aside"):
        set_aside(bad, "corrupt")  # it is gone already


# --- settings ---------------------------------------------------------------------------------
def test_missing_settings_give_defaults_without_warning():
    assert load_settings() == (Settings(), [])
    assert not Path(os.environ["GPUADVISOR_HOME"]).exists()


def test_settings_round_trip(tmp_path):
    recent = tmp_path / "a.gpuadvisor.json"
    original = Settings(
        window_geometry=encode_blob(b"\x01\xd9\xd0\xcb\x00geometry"),
        window_state=encode_blob(b"state"),
        splitter_sizes={"main": [300, 700]},
        recent_files=[str(recent)],
        last_scenario=str(recent),
        page_size="Letter",
        stale_price_months=12,
    )
    path = save_settings(original)
    assert path == Path(os.environ["GPUADVISOR_HOME"]) / "config" / "settings.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["version"] == 1 and data["page_size"] == "Letter"
    loaded, warnings = load_settings()
    assert warnings == []
    assert loaded == original
    assert decode_blob(loaded.window_geometry) == b"\x01\xd9\xd0\xcb\x00geometry"
    save_settings(Settings())
    backup = json.loads((path.parent / "settings.json.bak").read_text(encoding="utf-8"))
    assert backup["page_size"] == "Letter"
    assert _temp_files(path.parent) == []


def test_explicit_paths_are_used(tmp_path):
    paths = UserPaths(tmp_path / "c", tmp_path / "d", tmp_path / "l", tmp_path / "k")
    save_settings(Settings(page_size="Letter"), paths)
    assert (tmp_path / "c" / "settings.json").is_file()
    assert load_settings(paths)[0].page_size == "Letter"
    assert load_settings()[0].page_size == "A4"  # the default location was not touched


def test_unknown_keys_are_kept_and_written_back():
    path = settings_file()
    path.parent.mkdir(parents=True)
    path.write_text(
        json.dumps(
            {"version": 7, "page_size": "Letter", "future_feature": {"theme": "dark", "sizes": [1, 2]}}
        ),
        encoding="utf-8",
    )
    settings, warnings = load_settings()
    assert warnings == []
    assert settings.page_size == "Letter"
    assert settings.extra == {"future_feature": {"theme": "dark", "sizes": [1, 2]}}
    save_settings(add_recent_file(settings, "x.json"))
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["future_feature"] == {"theme": "dark", "sizes": [1, 2]}
    assert data["page_size"] == "Letter" and data["version"] == 1


CORRUPT = {
    "truncated JSON": b'{"page_size": "Letter", "recent_fi',
    "a list": b'["A4", "Letter"]',
    "null": b"null",
    "wrong types": b'{"page_size": 5, "stale_price_months": "six", "recent_files": "a.json"}',
    "empty": b"",
    "whitespace": b"  \n\t",
    "binary": bytes(range(256)),
    "nul bytes": b'{"page_size": "A4"\x00\x00}',
    "utf-16": '{"page_size": "Letter"}'.encode("utf-16"),
    "deep nesting": b"[" * 100_000,
}


@pytest.mark.parametrize("content", list(CORRUPT.values()), ids=list(CORRUPT))
def test_corrupt_settings_give_defaults_a_warning_and_are_set_aside(content):
    path = settings_file()
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    settings, warnings = load_settings()
    assert settings == Settings()
    assert warnings and all(str(path) in w or "kept as" in w for w in warnings)
    assert any("settings.json" in w for w in warnings)
    kept = sorted(path.parent.glob("settings.json.corrupt-*"))
    assert len(kept) == 1 and kept[0].read_bytes() == content
    assert any(str(kept[0]) in w for w in warnings)
    assert not path.exists()
    save_settings(settings)  # a fresh file; the damaged one stays where it was put
    assert kept[0].read_bytes() == content
    assert load_settings() == (Settings(), [])


def test_one_bad_key_is_dropped_by_name_and_the_rest_kept():
    path = settings_file()
    path.parent.mkdir(parents=True)
    content = json.dumps(
        {
            "page_size": "Letter",
            "stale_price_months": True,
            "splitter_sizes": {"main": [1, -2]},
            "window_state": "!!not base64!!",
        }
    )
    path.write_text(content, encoding="utf-8")
    settings, warnings = load_settings()
    assert settings.page_size == "Letter"
    assert (settings.stale_price_months, settings.splitter_sizes, settings.window_state) == (6, {}, "")
    named = " ".join(warnings)
    for key in ("stale_price_months", "splitter_sizes", "window_state"):
        assert key in named
    assert "page_size" not in named
    kept = list(path.parent.glob("settings.json.corrupt-*"))
    assert len(kept) == 1 and kept[0].read_text(encoding="utf-8") == content


def test_a_utf8_bom_is_tolerated():
    path = settings_file()
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\xef\xbb\xbf" + b'{"page_size": "Letter"}')
    assert load_settings() == (Settings(page_size="Letter"), [])


def test_an_unreadable_settings_path_warns_and_is_left_alone():
    path = settings_file()
    path.mkdir(parents=True)  # a folder where the file should be
    settings, warnings = load_settings()
    assert settings == Settings() and len(warnings) == 1 and "is a folder, not a file" in warnings[0]
    assert path.is_dir()
    with pytest.raises(StorageError, match="cannot write settings.json: it is a folder, not a file"):
        save_settings(settings)


def test_saving_a_bad_value_names_the_setting_and_keeps_the_file():
    save_settings(Settings(page_size="Letter"))
    with pytest.raises(StorageError) as info:
        save_settings(Settings(page_size="A3"))
    assert info.value.field == "page_size" and "A4 or Letter" in str(info.value)
    with pytest.raises(StorageError) as info:
        save_settings(Settings(extra={"x": object()}))
    assert info.value.field == "extra"
    assert load_settings()[0].page_size == "Letter"


def test_saving_when_the_config_folder_is_blocked(tmp_path):
    home = Path(os.environ["GPUADVISOR_HOME"])
    home.mkdir()
    (home / "config").write_text("in the way", encoding="utf-8")
    with pytest.raises(StorageError, match="cannot create the folder"):
        save_settings(Settings())


def test_recent_files_order_dedup_and_cap(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    s = Settings()
    s2 = add_recent_file(s, "a.json")
    assert s.recent_files == [] and s2 is not s  # the original is not changed
    assert s2.recent_files == [str(tmp_path / "a.json")]
    s2 = add_recent_file(s2, tmp_path / "b.json")
    s2 = add_recent_file(s2, tmp_path / "sub" / ".." / "a.json")  # the same file again moves to the front
    assert s2.recent_files == [str(tmp_path / "a.json"), str(tmp_path / "b.json")]
    for i in range(15):
        s2 = add_recent_file(s2, f"f{i}.json")
    assert len(s2.recent_files) == MAX_RECENT_FILES
    assert s2.recent_files[0] == str(tmp_path / "f14.json")
    assert s2.recent_files[-1] == str(tmp_path / "f5.json")
    assert all(os.path.isabs(p) for p in s2.recent_files)
    assert remove_recent_file(s2, "f14.json").recent_files[0] == str(tmp_path / "f13.json")


def test_existing_recent_files_skips_missing_ones(tmp_path):
    there = tmp_path / "there.json"
    there.write_text("{}", encoding="utf-8")
    s = add_recent_file(add_recent_file(Settings(), tmp_path / "gone.json"), there)
    assert existing_recent_files(s) == [str(there)]
    assert len(s.recent_files) == 2  # listing does not change the settings


def test_loaded_recent_files_are_deduplicated_and_capped():
    path = settings_file()
    path.parent.mkdir(parents=True)
    files = [f"/x/{i}.json" for i in range(12)]
    path.write_text(json.dumps({"recent_files": ["/x/0.json", *files]}), encoding="utf-8")
    settings, warnings = load_settings()
    assert warnings == []
    assert settings.recent_files == [os.path.normpath(f) for f in files[:MAX_RECENT_FILES]]


def test_blob_helpers():
    assert decode_blob(encode_blob(b"\x00\xff")) == b"\x00\xff"
    assert decode_blob("") == b"" and decode_blob("not base64!") == b""


# --- logging ----------------------------------------------------------------------------------
@pytest.fixture
def clean_logging():
    root = logging.getLogger()
    level = root.level
    yield
    shutdown_logging()
    root.setLevel(level)


def _ours() -> list[logging.Handler]:
    return [h for h in logging.getLogger().handlers if getattr(h, "_gpuadvisor_handler", False)]


def test_configure_logging_once_and_writes_a_line(clean_logging):
    log_file = configure_logging()
    assert log_file == Path(os.environ["GPUADVISOR_HOME"]) / "logs" / "gpuadvisor.log"
    assert configure_logging() == log_file
    assert len(_ours()) == 1
    handler = _ours()[0]
    assert isinstance(handler, logging.handlers.RotatingFileHandler)
    assert (handler.maxBytes, handler.backupCount) == (1024 * 1024, 3)
    logging.getLogger("gpuadvisor.test").info("hello from the test ✓")
    handler.flush()
    text = log_file.read_text(encoding="utf-8")
    assert "INFO gpuadvisor.test: hello from the test ✓" in text
    assert current_log_file() == log_file


def test_configure_logging_follows_a_new_folder(tmp_path, clean_logging):
    first = configure_logging()
    other = UserPaths(tmp_path / "c", tmp_path / "d", tmp_path / "other-logs", tmp_path / "k")
    second = configure_logging(other)
    assert second == tmp_path / "other-logs" / "gpuadvisor.log" != first
    assert len(_ours()) == 1 and current_log_file() == second


def test_configure_logging_falls_back_to_stderr(tmp_path, clean_logging, capsys):
    home = Path(os.environ["GPUADVISOR_HOME"])
    home.mkdir()
    (home / "logs").write_text("a file in the way", encoding="utf-8")
    assert configure_logging() is None
    assert configure_logging() is None
    assert len(_ours()) == 1 and current_log_file() is None
    assert "cannot create the folder" in capsys.readouterr().err
    message = log_exception(*_raise_and_catch())
    assert "error output" in message


def _raise_and_catch():
    try:
        raise ValueError("the catalog row 12 has\na negative price")
    except ValueError:
        return sys.exc_info()


def test_log_exception_logs_the_traceback_and_returns_a_short_message(clean_logging):
    log_file = configure_logging()
    message = log_exception(*_raise_and_catch())
    assert "Traceback" not in message and "\n" not in message
    assert "ValueError: the catalog row 12 has a negative price" in message
    assert str(log_file) in message
    for h in _ours():
        h.flush()
    text = log_file.read_text(encoding="utf-8")
    assert "Traceback" in text and "ERROR gpuadvisor" in text and "_raise_and_catch" in text


def test_storage_error_is_an_input_error_with_a_plain_message(tmp_path):
    error = StorageError(
        "settings.json",
        "cannot write settings.json: No space left on device",
        path=tmp_path / "settings.json",
    )
    assert isinstance(error, InputError) and isinstance(error, ValueError)
    assert str(error) == "cannot write settings.json: No space left on device"
    assert error.field == "settings.json" and error.path == tmp_path / "settings.json"
