"""Measured runs, their JSON file, nvidia-smi logs and the diagnosis rules of the seed article."""

import json

import pytest

from gpuadvisor.core.errors import InputError
from gpuadvisor.core.formats.measurements import (
    Measurement,
    measurements_from_json,
    measurements_to_json,
    next_measurement_id,
)
from gpuadvisor.core.formats.scenario import ModelSource, Scenario, scenario_to_dict
from gpuadvisor.core.formats.smi_log import (
    THRESHOLDS,
    GpuLogSummary,
    diagnose,
    measurement_from_log,
    parse_nvidia_smi_log,
)
from gpuadvisor.core.specs.workload import Hardware, Workload

SNAPSHOT = scenario_to_dict(
    Scenario(
        model=ModelSource(preset="llama-3.1-8b"),
        workload=Workload(kind="inference", batch_size=8),
        hardware=Hardware(gpu="h100-sxm", gpu_count=1),
        name="serving test",
    )
)


def make(**kw):
    base = dict(id="m1", gpu_id="h100-sxm", kind="inference", model="llama-3.1-8b", tokens_per_s=1500.0)
    base.update(kw)
    return Measurement(**base)


# --- Measurement -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"id": ""}, "measurement.id"),
        ({"gpu_id": 3}, "measurement.gpu_id"),
        ({"kind": "serving"}, "measurement.kind"),
        ({"engine": ""}, "measurement.engine"),
        ({"num_gpus": 0}, "measurement.num_gpus"),
        ({"batch_size": 2.5}, "measurement.batch_size"),
        ({"batch_size": True}, "measurement.batch_size"),
        ({"seq_len": -1}, "measurement.seq_len"),
        ({"peak_memory_gib": -3.0}, "measurement.peak_memory_gib"),
        ({"peak_memory_gib": 5000.0}, "measurement.peak_memory_gib"),
        ({"tokens_per_s": 0}, "measurement.tokens_per_s"),
        ({"tokens_per_s": float("nan")}, "measurement.tokens_per_s"),
        ({"source": "dcgm"}, "measurement.source"),
        ({"measured_on": "20/11/2026"}, "measurement.measured_on"),
        ({"scenario": ["not", "a", "dict"]}, "measurement.scenario"),
        ({"tokens_per_s": None}, "measurement"),  # neither memory nor throughput
        ({"tokens_per_s": None, "seconds_per_step": 2.0}, "measurement.tokens_per_step"),
    ],
)
def test_validation_names_the_field(changes, field):
    with pytest.raises(InputError) as exc:
        make(**changes)
    assert exc.value.field == field


def test_throughput_from_seconds_per_step():
    m = make(
        kind="full_finetune",
        tokens_per_s=None,
        seconds_per_step=2.0,
        batch_size=4,
        seq_len=2048,
        num_gpus=2,
        engine="fsdp",
    )
    assert m.throughput_tokens_per_s == pytest.approx(4 * 2048 * 2 / 2.0)
    explicit = make(tokens_per_s=None, seconds_per_step=0.5, tokens_per_step=1000.0)
    assert explicit.throughput_tokens_per_s == pytest.approx(2000.0)
    memory_only = make(tokens_per_s=None, peak_memory_gib=40.0)
    assert memory_only.throughput_tokens_per_s is None


def test_memory_source_meaning():
    assert make(peak_memory_gib=30.0, source="nvidia-smi log").memory_is_device_total
    assert not make(peak_memory_gib=30.0, source="torch.cuda.max_memory_allocated").memory_is_device_total


def test_snapshot_is_copied_and_fingerprinted():
    snap = json.loads(json.dumps(SNAPSHOT))
    m = make(scenario=snap)
    snap["workload"]["batch_size"] = 99
    assert m.scenario["workload"]["batch_size"] == 8
    renamed = dict(SNAPSHOT, name="another name", notes="n")
    assert make(scenario=renamed).scenario_fingerprint == m.scenario_fingerprint
    other = json.loads(json.dumps(SNAPSHOT))
    other["workload"]["batch_size"] = 16
    assert make(scenario=other).scenario_fingerprint != m.scenario_fingerprint
    assert len(m.scenario_fingerprint) == 16 and make().scenario_fingerprint is None
    hash(m)  # usable as a key despite the dict snapshot


def test_json_round_trip():
    items = [
        make(
            scenario=SNAPSHOT,
            peak_memory_gib=20.5,
            source="nvidia-smi log",
            measured_on="2026-11-20",
            note="vLLM 0.11",
        ),
        make(
            id="m2",
            kind="lora",
            engine="hf-trainer",
            tokens_per_s=None,
            seconds_per_step=1.5,
            seq_len=1024,
            batch_size=2,
        ),
    ]
    text = measurements_to_json(items)
    doc = json.loads(text)
    assert doc["format"] == "gpuadvisor-measurements" and doc["schema_version"] == 1
    assert doc["measurements"][0]["scenario_fingerprint"] == items[0].scenario_fingerprint
    assert measurements_from_json(text) == items
    assert next_measurement_id(items) == "m3"
    assert next_measurement_id([]) == "m1"


def _doc(*items, **top):
    doc = {"format": "gpuadvisor-measurements", "schema_version": 1, "measurements": list(items)}
    doc.update(top)
    return json.dumps(doc)


GOOD = {"id": "a", "gpu_id": "a100-80gb", "kind": "inference", "model": "m", "tokens_per_s": 10.0}


@pytest.mark.parametrize(
    "text, field, reason",
    [
        ("{not json", "runs.json", "is not valid JSON"),
        ("[]", "runs.json", "must be a JSON object"),
        (
            _doc(GOOD, format="gpuadvisor-scenario"),
            "runs.json: format",
            "is not a gpuadvisor measurements file",
        ),
        (_doc(GOOD, schema_version=2), "runs.json: schema_version", "supported: 1"),
        (_doc(GOOD, extra=1), "runs.json", "unknown key(s) extra"),
        (
            json.dumps({"format": "gpuadvisor-measurements", "schema_version": 1, "measurements": {}}),
            "runs.json: measurements",
            "must be a list",
        ),
        (_doc(GOOD, 3), "runs.json: measurements[1]", "must be a JSON object"),
        (_doc(dict(GOOD, tokens_per_sec=3.0)), "runs.json: measurements[0]", "unknown key(s) tokens_per_sec"),
        (
            _doc({"id": "a", "kind": "inference", "tokens_per_s": 1.0}),
            "runs.json: measurements[0]",
            "is missing gpu_id, model",
        ),
        (
            _doc(GOOD, dict(GOOD, id="b", batch_size="8")),
            "runs.json: measurements[1].batch_size",
            "whole number",
        ),
        (_doc(GOOD, dict(GOOD, tokens_per_s=None)), "runs.json: measurements[1]", "at least one of"),
        (_doc(GOOD, GOOD), "runs.json: measurements[1].id", "duplicates measurements[0]"),
    ],
)
def test_malformed_files_are_rejected_precisely(text, field, reason):
    with pytest.raises(InputError) as exc:
        measurements_from_json(text, origin="runs.json")
    assert exc.value.field == field
    assert reason in exc.value.reason


# --- nvidia-smi logs -------------------------------------------------------------------------------------

HEADER = "timestamp, name, memory.used [MiB], memory.total [MiB], utilization.gpu [%], utilization.memory [%]"
LOG = "\n".join(
    [
        HEADER,  # 1
        "2026/11/20 10:00:01.123, NVIDIA H100 80GB HBM3, 61234 MiB, 81559 MiB, 97 %, 54 %",  # 2 GPU 0
        "2026/11/20 10:00:01.123, NVIDIA H100 80GB HBM3, 20000 MiB, 81559 MiB, 35 %, 12 %",  # 3 GPU 1
        "2026/11/20 10:00:02.125, NVIDIA H100 80GB HBM3, 62000 MiB, 81559 MiB, 99 %, 56 %",  # 4 GPU 0
        "2026/11/20 10:00:02.125, NVIDIA H100 80GB HBM3, twenty MiB, 81559 MiB, 30 %, 10 %",  # 5 GPU 1, bad
        "2026/11/20 10:00:03.120, NVIDIA H100 80GB HBM3, 61500 MiB, 81559 MiB, 95 %, 50 %",  # 6 GPU 0
        "2026/11/20 10:00:03.120, NVIDIA H100 80GB HBM3, 21000 MiB, 81559 MiB, 40 %, 14 %",  # 7 GPU 1
        "2026/11/20 10:00:04.121, NVIDIA H100 80GB HBM3, 61000 MiB",  # 8 too short
        HEADER,  # 9 repeated
        "2026/11/20 10:00:04.121, NVIDIA H100 80GB HBM3, 60000 MiB, 81559 MiB, [N/A], 50 %",  # 10 GPU 0
        "2026/11/20 10:00:04.121, NVIDIA H100 80GB HBM3, 22000 MiB, 81559 MiB, 101 %, 14 %",  # 11 bad util
        "someday, NVIDIA H100 80GB HBM3, 1 MiB, 81559 MiB, 1 %, 1 %",  # 12 bad time
        "",
    ]
)


def test_two_interleaved_gpus_and_bad_lines():
    log = parse_nvidia_smi_log(LOG, origin="run.csv")
    assert set(log.gpus) == {"0", "1"}
    assert log.bad_lines == (
        (5, "memory.used is not a number in MiB ('twenty MiB')"),
        (
            8,
            (
                "has 3 values, expected 6 (timestamp, name, memory.used, memory.total, utilization.gpu, "
                "utilization.memory)"
            ),
        ),
        (11, "utilization.gpu is out of range ('101 %')"),
        (12, "timestamp is not a date and time ('someday'; expected e.g. 2026/11/20 10:00:01.123)"),
    )
    gpu0, gpu1 = log.gpus["0"], log.gpus["1"]
    assert gpu0.memory_used_mib == (61234.0, 62000.0, 61500.0, 60000.0)
    assert gpu1.memory_used_mib == (20000.0, 21000.0)  # the bad line 5 did not shift GPU 1 onto GPU 0
    assert gpu0.gpu_util_pct == (97.0, 99.0, 95.0, None)
    summary = log.summary()
    s0, s1 = summary.gpus
    assert (s0.samples, s1.samples) == (4, 2)
    assert s0.duration_s == pytest.approx(2.998)
    assert s0.peak_memory_mib == 62000.0 and s0.peak_memory_gib == pytest.approx(62000 / 1024)
    assert s0.peak_memory_fraction == pytest.approx(62000 / 81559)
    assert s0.mean_gpu_util_pct == pytest.approx(97.0) and s0.median_gpu_util_pct == 97.0
    assert s0.p95_gpu_util_pct == 99.0
    assert s0.mean_memory_util_pct == pytest.approx((54 + 56 + 50 + 50) / 4)
    assert s1.mean_gpu_util_pct == pytest.approx(37.5)
    assert summary.bad_lines == log.bad_lines


def test_index_column_noheader_nounits():
    text = "\n".join(
        [
            "1, 2026/11/20 10:00:01.000, 30000, 46068, 90, 40",
            "0, 2026/11/20 10:00:01.001, 44000, 46068, 95, 60",
            "1, 2026/11/20 10:00:02.000, 31000, 46068, 91, 41",
        ]
    )
    cols = ["index", "timestamp", "memory.used", "memory.total", "utilization.gpu", "utilization.memory"]
    log = parse_nvidia_smi_log(text, columns=cols)
    assert log.gpus["1"].memory_used_mib == (30000.0, 31000.0)
    assert log.gpus["0"].memory_used_mib == (44000.0,)
    assert log.bad_lines == ()


def test_pci_bus_id_column():
    text = "\n".join(
        [
            "pci.bus_id, memory.used [MiB], memory.total [MiB]",
            "00000000:18:00.0, 100 MiB, 1000 MiB",
            "00000000:3B:00.0, 200 MiB, 1000 MiB",
            "00000000:18:00.0, 300 MiB, 1000 MiB",
        ]
    )
    log = parse_nvidia_smi_log(text)
    assert log.gpus["00000000:18:00.0"].memory_used_mib == (100.0, 300.0)
    assert log.summary().gpus[0].duration_s is None  # no timestamps


@pytest.mark.parametrize(
    "text, columns, field",
    [
        ("", None, "nvidia-smi log"),
        ("index, name\n0, x", None, "nvidia-smi log: line 1"),
        ("1, 2", ["index", "name"], "columns"),
    ],
)
def test_unreadable_logs(text, columns, field):
    with pytest.raises(InputError) as exc:
        parse_nvidia_smi_log(text, columns=columns)
    assert exc.value.field == field


# --- diagnosis -------------------------------------------------------------------------------------------


def gpu(util, memory_fraction, samples=120, mem_util=40.0, key="0"):
    total = 81559.0
    return GpuLogSummary(
        gpu=key,
        name="NVIDIA H100 80GB HBM3",
        samples=samples,
        duration_s=float(samples),
        peak_memory_mib=memory_fraction * total,
        memory_total_mib=total,
        mean_gpu_util_pct=util,
        median_gpu_util_pct=util,
        p95_gpu_util_pct=util,
        mean_memory_util_pct=mem_util,
    )


def titles(findings):
    return [(f.severity, f.title) for f in findings]


def test_thresholds_quote_the_seed_article():
    assert THRESHOLDS["gpu_util_target"].value == 80.0
    assert (THRESHOLDS["memory_target_low"].value, THRESHOLDS["memory_target_high"].value) == (0.85, 0.95)
    for name in ("gpu_util_target", "memory_target_low", "memory_target_high"):
        assert THRESHOLDS[name].source.startswith("seed article")


def test_low_util_high_memory_is_bandwidth_saturation():
    findings = diagnose(gpu(45.0, 0.90, mem_util=85.0))
    warning = [f for f in findings if f.severity == "warning"]
    assert len(warning) == 1 and "memory-bandwidth saturation" in warning[0].title
    assert dict(warning[0].numbers)["median_gpu_util_pct"] == 45.0
    assert dict(warning[0].numbers)["peak_memory_pct_of_vram"] == pytest.approx(90.0)
    assert any("FP8" in a for a in warning[0].advice)
    assert ("ok", "Memory use in the 85%-95% target band") in titles(findings)


def test_low_util_low_memory_is_a_pipeline_bottleneck():
    findings = diagnose(gpu(30.0, 0.40))
    assert [t for s, t in titles(findings) if s == "warning"] == [
        "Low utilization with low memory use: CPU or data-pipeline bottleneck"
    ]
    advice = " ".join(findings[0].advice)
    for hint in ("num_workers", "pin_memory", "Tokenize", "Prefetch"):
        assert hint in advice


def test_memory_above_95_percent_is_an_oom_risk():
    findings = diagnose(gpu(96.0, 0.97))
    assert titles(findings) == [
        ("ok", "GPU busy: median utilization 96% (target above 80%)"),
        ("warning", "Memory above 95% of VRAM: risk of out-of-memory errors and fragmentation"),
    ]
    assert any("gradient checkpointing" in a for a in findings[1].advice)


def test_busy_gpu_with_memory_to_spare():
    findings = diagnose(gpu(92.0, 0.50))
    assert findings[-1].severity == "info"
    assert findings[-1].title == (
        "Memory well below the 85% target: room for a larger batch or a smaller GPU"
    )
    assert any("larger" in a or "Raise the batch" in a for a in findings[-1].advice)
    assert "42 GiB" in findings[-1].advice[1]  # peak 39.8 GiB / 0.95


def test_healthy_run_and_boundaries():
    assert [f.severity for f in diagnose(gpu(80.0, 0.85))] == ["ok", "ok"]  # thresholds are inclusive
    assert [f.severity for f in diagnose(gpu(90.0, 0.949))] == ["ok", "ok"]


def test_few_samples_uneven_gpus_and_missing_columns():
    findings = diagnose(parse_nvidia_smi_log(LOG).summary())
    text = [f.text() for f in findings]
    assert any(t.startswith("[info] GPU 0: Only 4 samples") for t in text)
    assert any(t.startswith("[warning] GPU 1: Low utilization with low memory use") for t in text)
    assert any("Uneven load across GPUs" in t for t in text)
    assert any("4 log lines could not be read" in t for t in text)
    no_total = parse_nvidia_smi_log("memory.used [MiB], utilization.gpu [%]\n100 MiB, 50 %").summary()
    assert diagnose(no_total)[-1].title.startswith("The log has no memory.total")
    assert diagnose(parse_nvidia_smi_log(HEADER).summary())[0].title == "The log holds no valid samples"


def test_measurement_from_log():
    s0 = parse_nvidia_smi_log(LOG).summary().gpus[0]
    m = measurement_from_log(
        s0,
        id="m7",
        gpu_id="h100-sxm",
        kind="inference",
        model="llama-3.1-8b",
        scenario=SNAPSHOT,
        measured_on="2026-11-20",
    )
    assert m.source == "nvidia-smi log" and m.memory_is_device_total
    assert m.peak_memory_gib == pytest.approx(62000 / 1024)
    assert m.tokens_per_s is None and "4 nvidia-smi samples" in m.note
