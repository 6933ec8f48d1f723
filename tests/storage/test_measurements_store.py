"""Measured runs and the calibration profile on disk: atomic saves with a backup, damaged files set aside."""

import json
from pathlib import Path

import pytest

from gpuadvisor.core.errors import InputError
from gpuadvisor.core.estimation.calibration import CalibrationProfile, FactorFit, profile_to_json
from gpuadvisor.core.formats.measurements import Measurement
from gpuadvisor.storage import (
    CALIBRATION_FILENAME,
    MEASUREMENTS_FILENAME,
    add_measurement,
    calibration_file,
    export_calibration,
    import_calibration,
    load_calibration,
    load_measurements,
    load_settings,
    measurements_file,
    merge_measurements,
    save_calibration,
    save_measurements,
    save_settings,
    user_paths,
)
from gpuadvisor.storage.settings import Settings


def run(i, **over):
    data = dict(
        id=f"m{i}",
        gpu_id="h100-sxm",
        kind="inference",
        model="llama-3.1-8b",
        engine="vllm",
        tokens_per_s=1000.0 + i,
        peak_memory_gib=40.0,
        measured_on="2026-11-20",
    )
    data.update(over)
    return Measurement(**data)


PROFILE = CalibrationProfile(
    fits=(
        FactorFit(
            gpu_id="h100-sxm",
            engine="vllm",
            factor_name="bandwidth_efficiency",
            value=0.55,
            n_measurements=3,
            error_before_pct=21.0,
            error_after_pct=1.4,
            measurement_ids=("m1", "m2", "m3"),
        ),
    ),
    created="2026-11-30",
    note="test",
)


def test_files_live_in_the_data_folder():
    data = user_paths().data_dir
    assert measurements_file() == data / MEASUREMENTS_FILENAME == data / "measurements.json"
    assert calibration_file() == data / CALIBRATION_FILENAME == data / "calibration.json"


def test_missing_files_are_empty_and_create_nothing():
    loaded = load_measurements()
    assert loaded.value == [] and loaded.warnings == [] and loaded.set_aside is None
    assert load_calibration().value is None
    assert not user_paths().data_dir.exists()


def test_measurements_round_trip_with_backup():
    path = save_measurements([run(1)])
    assert load_measurements().value == [run(1)]
    save_measurements([run(1), run(2)])
    assert [m.id for m in load_measurements().value] == ["m1", "m2"]
    backup = json.loads(path.with_name(path.name + ".bak").read_text(encoding="utf-8"))
    assert [m["id"] for m in backup["measurements"]] == ["m1"]
    assert not [
        p for p in path.parent.iterdir() if p.name.startswith(".") and not p.name.endswith(".lock")
    ]  # no temporary files left


def test_add_measurement_gives_a_taken_id_a_new_one():
    add_measurement(run(1))
    same, _ = add_measurement(run(1))  # the same run again: kept once
    other, path = add_measurement(run(1, tokens_per_s=5.0))  # another run with a taken id
    assert same.id == "m1" and other.id == "m2" and other.tokens_per_s == 5.0
    assert [m.id for m in load_measurements().value] == ["m1", "m2"] and path == measurements_file()


def test_merge_measurements():
    merged = merge_measurements([run(1), run(2)], [run(2), run(1, note="elsewhere"), run(7)])
    assert [m.id for m in merged] == ["m1", "m2", "m3", "m7"] and merged[2].note == "elsewhere"


@pytest.mark.parametrize(
    "content, needle",
    [
        (b"\xff\xfe not text", "is not UTF-8 text"),
        (
            b'{"format": "gpuadvisor-measurements", "schema_version": 1, "measurements": [{"id": "m1"}]}',
            "measurements[0]: is missing gpu_id",
        ),
        (b"{ truncated", "is not valid JSON"),
        (b'{"format": "gpuadvisor-measurements", "schema_version": 9, "measurements": []}', "schema_version"),
    ],
)
def test_a_damaged_measurements_file_is_set_aside(content, needle):
    save_measurements([run(1)])
    save_measurements([run(1), run(2)])  # the .bak now holds a good copy
    path = measurements_file()
    path.write_bytes(content)
    loaded = load_measurements()
    assert loaded.value == [] and loaded.set_aside is not None and loaded.set_aside.read_bytes() == content
    (warning,) = loaded.warnings
    assert needle in warning and str(loaded.set_aside) in warning and ".bak" in warning
    assert not path.exists()


def test_calibration_round_trip_import_and_export(tmp_path):
    path = save_calibration(PROFILE)
    assert load_calibration().value == PROFILE and path == calibration_file()
    out = export_calibration(PROFILE, tmp_path / "shared.json")
    assert json.loads(out.read_text(encoding="utf-8"))["format"] == "gpuadvisor-calibration"
    save_calibration(CalibrationProfile(fits=(), created="2026-12-01"))
    profile, saved = import_calibration(out)
    assert profile == PROFILE and saved == calibration_file() and load_calibration().value == PROFILE


def test_a_malformed_profile_is_refused_and_changes_nothing(tmp_path):
    save_calibration(PROFILE)
    bad = tmp_path / "bad.json"
    bad.write_text(profile_to_json(PROFILE).replace('"value": 0.55', '"value": 1.5'), encoding="utf-8")
    with pytest.raises(InputError) as info:
        import_calibration(bad)
    assert str(info.value) == "bad.json: fits[0].value: must be in (0, 1] for bandwidth_efficiency (got 1.5)"
    with pytest.raises(InputError, match="missing.json: file not found"):
        import_calibration(tmp_path / "missing.json")
    assert load_calibration().value == PROFILE


def test_a_damaged_calibration_file_is_set_aside():
    save_calibration(PROFILE)
    calibration_file().write_text('{"format": "something else"}', encoding="utf-8")
    loaded = load_calibration()
    assert loaded.value is None and loaded.set_aside is not None
    assert "is not a gpuadvisor calibration profile" in loaded.warnings[0]


def test_calibration_enabled_setting_defaults_off_and_round_trips():
    settings, _ = load_settings()
    assert settings.calibration_enabled is False
    save_settings(Settings(calibration_enabled=True))
    assert load_settings()[0].calibration_enabled is True
    path = Path(user_paths().config_dir) / "settings.json"
    path.write_text(json.dumps({"calibration_enabled": "yes"}), encoding="utf-8")
    settings, warnings = load_settings()
    assert (
        settings.calibration_enabled is False and "calibration_enabled: must be true or false" in warnings[0]
    )
