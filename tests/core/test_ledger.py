"""The prospective ledger (tests/data/validation/ledger.jsonl): append-only, first scores by the shipped
model, new sources kept out of every fit until admitted (issue 45)."""

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from expected_misses import marked

from gpuadvisor.core.specs.hardware import load_gpu_catalog
from gpuadvisor.core.specs.presets import load_model_catalog
from gpuadvisor.validation import GROUPS, Predictor, load_measurements, load_sources
from gpuadvisor.validation.data import DATA_DIR
from gpuadvisor.validation.harness import measured_value
from gpuadvisor.validation.ledger import (
    DIAGNOSIS_THRESHOLD_PCT,
    LEDGER_FILE,
    RESTATED_COLUMNS,
    RESTATED_SINCE,
    LedgerError,
    ScoredRow,
    append,
    first_score,
    load_diagnoses,
    load_ledger,
    pending_rows,
    per_source,
    predictions_sha256,
    restated_rows,
    rows_sha256,
    summary,
    worst_median,
)

ROOT = Path(__file__).resolve().parents[2]
A_COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(scope="module")
def ledger():
    found = load_ledger()
    assert found is not None, "the data folder has a ledger"
    return found


@pytest.fixture(scope="module")
def every_row():
    return load_measurements(include_prospective=True)


def _data_with_a_new_source(tmp_path: Path) -> str:
    """The data folder and its ledger copied to ``tmp_path`` with one more source added: a copy of the
    first scored row under the id NEW-01 (source ``a-new-source``)."""
    for name in ("sources.csv", "measurements.csv", "rescored.csv", LEDGER_FILE):
        shutil.copy(DATA_DIR / name, tmp_path / name)
    with (tmp_path / "sources.csv").open("a", encoding="utf-8") as fh:
        fh.write(
            'a-new-source,A new source,"github.com/example/bench README.md (commit abc), table 1",blog,2026-12-06,\n'
        )
    lines = (DATA_DIR / "measurements.csv").read_text(encoding="utf-8").splitlines()
    first = next(r for r in load_measurements() if r.scored)
    line = next(text for text in lines if text.startswith(first.id + ","))
    with (tmp_path / "measurements.csv").open("a", encoding="utf-8") as fh:
        fh.write("NEW-01,a-new-source," + line.split(",", 2)[2] + "\n")
    return "NEW-01"


# --- new sources stay out of the fits ---------------------------------------------------------------
def test_the_fits_read_the_baseline_sources_only_unless_asked(ledger, every_row):
    """Every fit and leave-one-source-out run loads its rows with ``load_measurements()``: that is
    exactly the rows of the sources the ledger began with (or admitted since), so nothing of a new
    source moves a fitted constant or an out-of-sample figure until it is admitted on purpose."""
    fitted = load_measurements()
    assert {r.source_id for r in fitted} == set(ledger.fitted)
    assert [r for r in every_row if r.source_id in ledger.fitted] == fitted
    new = [r for r in every_row if r.source_id not in ledger.fitted]
    # Scored sources stay out until an ``admitted`` line lets the fits read them.
    assert {r.source_id for r in new} == {e.source for e in ledger.scores} - ledger.admitted


def test_a_source_added_after_the_baseline_is_prospective_until_admitted(tmp_path):
    new_id = _data_with_a_new_source(tmp_path)
    assert new_id not in {r.id for r in load_measurements(tmp_path)}
    every = load_measurements(tmp_path, include_prospective=True)
    assert new_id in {r.id for r in every}
    ledger = load_ledger(tmp_path)
    assert [r.id for r in pending_rows(every, ledger)] == [new_id]
    # Without a ledger every row counts (a bare data folder of the format).
    (tmp_path / LEDGER_FILE).unlink()
    assert new_id in {r.id for r in load_measurements(tmp_path)}


def test_a_first_score_is_the_shipped_model_s_prediction_and_reads_back(tmp_path):
    new_id = _data_with_a_new_source(tmp_path)
    every = load_measurements(tmp_path, include_prospective=True)
    ledger = ledger_before = load_ledger(tmp_path)
    predictor = Predictor(load_gpu_catalog(), load_model_catalog())
    pending = pending_rows(every, ledger)
    entry = first_score("a-new-source", pending, predictor, A_COMMIT, "2026-12-06")
    append(tmp_path, entry)
    again = load_ledger(tmp_path)
    scored = again.scores[-1]
    (row,) = scored.rows
    shipped = predictor.compare(next(r for r in every if r.id == new_id))
    assert row.id == new_id and row.estimate == pytest.approx(shipped.estimate, rel=1e-5)
    assert row.error_pct == pytest.approx(100 * shipped.error, abs=0.01)
    assert scored.commit == A_COMMIT and scored.rows_sha256 == rows_sha256(
        [r for r in every if r.id == new_id]
    )
    # A line written now hashes every column, the restated ones too.
    assert scored.hash_omits == ()
    # Scored once: nothing is pending, and the source stays out of the fits until admitted.
    assert pending_rows(every, again) == []
    assert new_id not in {r.id for r in load_measurements(tmp_path)}
    append(tmp_path, {"kind": "admitted", "date": "2026-12-07", "commit": A_COMMIT, "source": "a-new-source"})
    assert new_id in {r.id for r in load_measurements(tmp_path)}
    # The first score stays what the ledger reports after admission.
    assert summary(load_ledger(tmp_path))["rows"] == summary(ledger_before)["rows"] + 1


# --- append-only ------------------------------------------------------------------------------------
def test_rewriting_an_earlier_line_breaks_the_chain(tmp_path):
    _data_with_a_new_source(tmp_path)
    every = load_measurements(tmp_path, include_prospective=True)
    predictor = Predictor(load_gpu_catalog(), load_model_catalog())
    entry = first_score(
        "a-new-source", pending_rows(every, load_ledger(tmp_path)), predictor, A_COMMIT, "2026-12-06"
    )
    append(tmp_path, entry)
    append(tmp_path, {"kind": "admitted", "date": "2026-12-07", "commit": A_COMMIT, "source": "a-new-source"})
    path = tmp_path / LEDGER_FILE
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    # A better first score written over the old one: its own hash would match, the next line's does not.
    doctored = json.loads(lines[1])
    doctored["rows"][0]["estimate"] = doctored["rows"][0]["measured"]
    doctored["rows"][0]["error_pct"] = 0.0
    doctored["predictions_sha256"] = predictions_sha256(tuple(ScoredRow(**r) for r in doctored["rows"]))
    lines[1] = json.dumps(doctored, separators=(",", ":")) + "\n"
    path.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(LedgerError, match=r"line 3: prev_sha256 does not match"):
        load_ledger(tmp_path)


def test_edited_predictions_inside_the_last_line_are_caught(tmp_path):
    _data_with_a_new_source(tmp_path)
    every = load_measurements(tmp_path, include_prospective=True)
    predictor = Predictor(load_gpu_catalog(), load_model_catalog())
    append(
        tmp_path,
        first_score(
            "a-new-source", pending_rows(every, load_ledger(tmp_path)), predictor, A_COMMIT, "2026-12-06"
        ),
    )
    path = tmp_path / LEDGER_FILE
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    last = json.loads(lines[-1])
    last["rows"][0]["error_pct"] = 0.0
    lines[-1] = json.dumps(last, separators=(",", ":")) + "\n"
    path.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(LedgerError, match="predictions_sha256 does not match"):
        load_ledger(tmp_path)


@pytest.mark.parametrize(
    "entry, message",
    [
        ({"kind": "rescore", "date": "2026-12-06", "commit": A_COMMIT}, "kind must be one of"),
        (
            {"kind": "admitted", "date": "yesterday", "commit": A_COMMIT, "source": "x"},
            "date must be YYYY-MM-DD",
        ),
        (
            {"kind": "admitted", "date": "2026-12-06", "commit": "1c1317e", "source": "x"},
            "full 40-digit commit",
        ),
        (
            {"kind": "admitted", "date": "2026-12-06", "commit": A_COMMIT, "source": "x"},
            "admitted before any first score",
        ),
        (
            {"kind": "baseline", "date": "2026-12-06", "commit": A_COMMIT, "sources": ["x"]},
            "the first line, and only it",
        ),
    ],
)
def test_a_bad_entry_is_named_by_its_line_and_never_written(tmp_path, entry, message):
    _data_with_a_new_source(tmp_path)
    before = (tmp_path / LEDGER_FILE).read_text(encoding="utf-8")
    with pytest.raises(LedgerError, match=message):
        append(tmp_path, entry)
    assert (tmp_path / LEDGER_FILE).read_text(encoding="utf-8") == before


def test_a_source_a_model_change_read_is_recorded_as_retrospective(tmp_path):
    """A source added with a model change built while reading it cannot be scored first: a
    ``retrospective`` line, with why, lets the fits read it and keeps it out of the prospective figure."""
    new_id = _data_with_a_new_source(tmp_path)
    with pytest.raises(LedgerError, match="says why"):
        append(
            tmp_path,
            {"kind": "retrospective", "date": "2026-12-07", "commit": A_COMMIT, "source": "a-new-source"},
        )
    why = "its rows were read while the model of this workload was built"
    append(
        tmp_path,
        {
            "kind": "retrospective",
            "date": "2026-12-07",
            "commit": A_COMMIT,
            "source": "a-new-source",
            "why": why,
        },
    )
    ledger = load_ledger(tmp_path)
    assert new_id in {r.id for r in load_measurements(tmp_path)}
    assert pending_rows(load_measurements(tmp_path, include_prospective=True), ledger) == []
    assert summary(ledger) == summary(load_ledger())


def test_the_shipped_ledger_is_intact_and_its_rows_unchanged_since_scored(ledger, every_row):
    """The chain holds (load_ledger checks it), every row is first-scored once, and the rows of each
    first score are still, cell for cell, the rows that were scored (measurements.csv only grows;
    later decisions go to rescored.csv, which the hash leaves out)."""
    by_id = {r.id: r for r in every_row}
    seen: set[str] = set()
    for e in ledger.scores:
        ids = [r.id for r in e.rows] + [rid for rid, _ in e.unscorable]
        assert not seen & {r.id for r in e.rows}, e.source
        seen |= {r.id for r in e.rows}
        assert all(rid in by_id and by_id[rid].source_id == e.source for rid in ids), e.source
        assert e.rows_sha256 == rows_sha256([by_id[rid] for rid in ids], e.hash_omits), (
            f"{e.source}: rows edited after their first score"
        )
        for r in e.rows:
            assert r.measured == pytest.approx(measured_value(by_id[r.id])[0], rel=1e-5)


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_the_ledger_at_each_recorded_commit_is_a_prefix_of_the_ledger_now(ledger):
    """Append-only across history: the ledger as committed at the commit each first score ran at (the
    rows committed, the ledger not yet holding that score) is a prefix of the ledger now, and so is
    the ledger at HEAD (nothing committed was rewritten in the working tree)."""
    if shutil.which("git") is None or _git("rev-parse", "--git-dir").returncode != 0:
        pytest.skip("not a git checkout")
    now = (DATA_DIR / LEDGER_FILE).read_text(encoding="utf-8")
    rel = (DATA_DIR / LEDGER_FILE).relative_to(ROOT).as_posix()
    commits = [e.commit for e in ledger.entries]
    checked = 0
    for commit in [*dict.fromkeys(commits), "HEAD"]:
        if _git("cat-file", "-e", f"{commit}^{{commit}}").returncode != 0:
            continue  # a shallow clone or a rewritten history: nothing to compare with
        then = _git("show", f"{commit}:{rel}")
        if then.returncode != 0:
            continue  # the ledger did not exist yet at that commit
        assert now.startswith(then.stdout), f"the ledger at {commit[:10]} is not a prefix of the ledger now"
        checked += 1
    assert checked or len(commits) == 1


def test_a_first_score_records_the_commit_that_held_its_rows(ledger):
    """Score after commit: each first score's commit already holds every row it scored."""
    if shutil.which("git") is None or _git("rev-parse", "--git-dir").returncode != 0:
        pytest.skip("not a git checkout")
    rel = (DATA_DIR / "measurements.csv").relative_to(ROOT).as_posix()
    for e in ledger.scores:
        then = _git("show", f"{e.commit}:{rel}")
        if then.returncode != 0:
            continue
        ids = {line.split(",", 1)[0] for line in then.stdout.splitlines()}
        assert {r.id for r in e.rows} <= ids, f"{e.source}: scored before its rows were committed"


# --- what the ledger reports ---------------------------------------------------------------------
def test_the_script_prints_the_prospective_summary():
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "validate.py"), "--prospective", "--json"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    data = json.loads(out.stdout)
    assert set(data) == {"sources", "rows", "unscorable", "groups"}
    assert set(data["groups"]) == set(GROUPS)
    for g, figures in data["groups"].items():
        assert {"n", "median_abs_pct"} <= set(figures), g
    assert data == summary(load_ledger())


def test_the_ledger_holds_the_sources_added_since_the_baseline(ledger, every_row):
    """Ten new sources and a hundred rows at least, all first-scored (none pending), the rows the model
    cannot express counted apart with their reason."""
    s = summary(ledger)
    assert s["sources"] >= 10 and s["rows"] >= 100, s
    assert pending_rows(every_row, ledger) == []
    assert all(why for e in ledger.scores for _, why in e.unscorable)
    sources = load_sources()
    assert all(e.source in sources for e in ledger.scores)


def test_every_first_score_worse_than_the_threshold_has_a_diagnosis(ledger):
    diagnoses = load_diagnoses()
    for source, _, _, _, _, figures in per_source(ledger):
        worst = worst_median(figures)
        if worst is not None and worst > DIAGNOSIS_THRESHOLD_PCT:
            assert source in diagnoses and len(diagnoses[source][1]) > 80, source
    assert set(diagnoses) <= {e.source for e in ledger.scores}


def test_the_ledger_s_rows_can_be_scored_by_the_model_now(ledger, every_row):
    """How a model change fares on the sources scored before it (``--prospective --now``): the same
    rows and groups as the first scores, predicted by the model in force, never appended."""
    from gpuadvisor.validation.ledger import score_now

    before = (DATA_DIR / LEDGER_FILE).read_text(encoding="utf-8")
    now = score_now(ledger, every_row, Predictor(load_gpu_catalog(), load_model_catalog()))
    first = summary(ledger)
    assert set(now) == set(first) and now["rows"] == first["rows"]
    assert {g: f["n"] for g, f in now["groups"].items()} == {g: f["n"] for g, f in first["groups"].items()}
    assert (DATA_DIR / LEDGER_FILE).read_text(encoding="utf-8") == before


def test_the_rescored_rows_pair_each_first_score_with_today_s_per_source_and_row(ledger, every_row):
    """``--prospective --now`` per source and with ``--rows`` per row: every first-scored row appears
    once beside today's prediction of the same row, the per-source counts add up to the groups', and
    the text names every source and (with rows) every row."""
    from gpuadvisor.validation.ledger import rescore, rescored_per_source
    from gpuadvisor.validation.report import now_text

    pairs = rescore(ledger, every_row, Predictor(load_gpu_catalog(), load_model_catalog()))
    assert [p.first for p in pairs] == [r for r in ledger.scored_rows() if r.id in {x.id for x in every_row}]
    assert all(p.first.id == p.now.id and p.first.group == p.now.group for p in pairs)
    per = rescored_per_source(pairs)
    first = summary(ledger)["groups"]
    for g in ("memory", "inference_speed", "training_speed", "serving"):
        assert sum(n for _, group, n, _, _ in per if group == g) == first[g]["n"]
    # A source scored once: its first-score median is the one the ledger wrote for it.
    for source, g, _, was, _ in per:
        entries = [e for e in ledger.scores if e.source == source]
        if len(entries) == 1:
            assert was == entries[0].raw["groups"][g]["median_abs_pct"]
    text = now_text(pairs, with_rows=True)
    assert all(source in text for source, *_ in per)
    assert all(f"    {p.first.id} " in text for p in pairs)


# --- issue 45's targets on the first scores ------------------------------------------------------
#: The ledger's targets (issue 45): first-score medians, memory <= 10% and each speed group <= 20%;
#: the 80% ranges hold at least 75% of the ledger's rows. A miss is a strict expected failure that
#: carries the figure when it was set (remove the mark as soon as the target holds).
LEDGER_TARGETS = {"memory": 10.0, "inference_speed": 20.0, "training_speed": 20.0, "serving": 20.0}
LEDGER_MISSES = {
    "memory": "12.9% over 800 rows on 2026-12-08 (LLaMA-Factory's LoRA and QLoRA memory comparison on an A100, 1.3% over 3, added; 13.0% over 797 before: lit-llama's memory figures, 7.0% over 10, and torchtune's 2024 memory tables, 24.4% over 5, added; 13.0% over 782 before: InternEvo's memory table, 41% over 16: readings 1.6-2.0 times the peak in every layout, a peft-explore V100 log, 19.8% over 7, a DeepSpeed blog's ZeRO-2 run, 21.5%, Vertex's OpenLLaMA report, 9.8% over 9, LitGPT's 70B inference tables, 6.6% over 12, and Accelerate's GPT-J run, 3.6%, added; 12.6% over 736 before: ChatGLM3-6B's fine-tuning demo, 74% over 2: a precision the figures contradict, added; 12.6% over 734 before: DeepSeek LLM's 7B memory table, 4.1% over 21, and ChatGLM2-6B's, 18.3% over 6, added; 13.2% over 707 before: GPTQ-for-LLaMa's RTX 3090 generation memory, 0.5% over 20, LitGPT's quantize and LoRA tutorials, 21.9% over 10, and PEFT's DeepSpeed and FSDP pages, 10.3% over 3, added; 14.1% over 674 before: Megatron-SWIFT's FP8 and BF16 runs on the H20, 28% over 2, added; 14.1% over 672 before: GLM-4's inference and fine-tuning tables, 1-22%, Qwen3's Transformers benchmark on the H20, 6.7% over 80, and the Qwen README's inference tables, 12.3%, added; 16.4% over 547 before: the Qwen1.5 Transformers page's 59 rows, 4.1%, torchtune's optimization flags and torchao's 1B pre-training, 14-17%, added; 19.2% over 481 before: Colossal-AI's H200 ZeRO-2 run, 10.6%; MLPerf's FP8 LoRA recipes on B200, scored 174% before the "
    "fused count knew a frozen base; the Qwen2.5 speed benchmark's long prompts, scored 79% before the "
    "Transformers profile knew that generate keeps one position's logits since v4.45; the torchtitan rows of "
    "the first day, scored 116%, torchao's quantized generation 12-22% low, a B200 recipe whose memory says "
    "its setup differs, a fine-tuning loop that frees its logits and keeps QLoRA's unquantized layers in "
    "fp32, the fp32 logit copies of a 152K vocabulary, the reserve of FSDP's second GPU above what its "
    "tensors take)",
    "inference_speed": "20.8% over 1,381 rows on 2026-12-08 (Prem AI's A100 table of 13 engines at batch 1, 33.0% over 30: generation loops bound by the host, vLLM 0.4's AWQ kernel and LLM.int8's outliers, added; 20.5% over 1,351 before: three llama-bench notes of RX 7900 XTX, RTX 3090, 4090 and RTX PRO 6000 runs, 17.4%, 4.8% and 31.5%, added; 20.5% over 1,329 before: AMD's vLLM 0.8.5 MI300X latency rows restated as the V0 engine, 11.3% over 32, the ledger keeping the 16 first scored as V1 beside them, added; 21.2% over 1,297 before: three more releases of AMD's vLLM MI300X tables, 8.9-11.8% over 32 latency rows each, added; 23.4% over 1,201 before: llama.cpp PR #10491's M1 Pro table, 220% over 12: master's Metal matrix-matrix kernel for 2-4 tokens, an RTX 3060 ExLlama log, 28% over 3, and an RX 7900 XTX llama.cpp HIP table, 14% over 5, added; 23.3% over 1,181 before: AMD's llama.cpp blogs on eight MI300X, 6,583% and 798% over 13 and 26: a layer split counted as every GPU prefilling at once, fixed the same day, and the ROCm builds' kernels; gpt-fast's README, 44% over 25: a compiled lean decoder read as Transformers; four llama.cpp PR and issue tables, 6-40%; llama.cpp PR #10238 on an M2 Ultra, 11.7% over 40, added; 21.3% over 1,059 before: two llama.cpp Metal tables of August 2023 on an M2 Ultra, 80% and 64%: the prompt speed of that month's builds, half of later builds' on the same machine, added; 21.1% over 1,042 before: the ROCm blog's TensorRT-LLM 0.16 latency runs on eight H100, 11.8% over 32, added; 21.6% over 1,010 before: ROCm's vLLM 0.7.3 and 0.8.5 MI300X latency tables, 8.1% over 32 and 17.4% over 16, added; 22.6% over 962 before: MLC's llm-perf-bench README, 27.9% over 69: batch-1 tensor parallel over PCIe of llama.cpp's row split and vLLM 0.2 two to eight times slower than the model at 4-8 GPUs; ROCm's vLLM 0.9.1 on MI300X, 11.9% over 16; llama.cpp's first Mixtral build on an M2 Max, 152% over 16: Metal's MoE prefill without a matrix-matrix kernel; 22.5% over 861 before: TinyChat's RTX 4090 tables, 99% over 42: a lean FP16 engine mapped to Transformers and 4-bit first tokens of TensorRT-LLM and MLC, AutoGPTQ's 2023 README, 44% over 3, and vLLM on one MI300X, 21% over 12, added; 21.7% over 804 before: GLM-4's Transformers tables, 32% and 41%, and its 32B rows, 11.5%, added; 19.6% over 686 before: Qwen3's Transformers benchmark "
    "on the H20 scored 78% over 80 rows: Transformers' eager MoE loop, its block-FP8 and GPTQModel's Int8 paths "
    "at a fraction of the BF16 speed, and a per-token cost growing with the context that the model does not have)",
    "serving": "28.6% over 2,086 rows on 2026-12-08 (vLLM 70B closed loops on MI300X, 30.6% over 27: multi-step scheduling, which the scenario cannot state, trades later first tokens for shorter gaps, added; 28.6% over 2,059 before: CloudRift's vLLM and SGLang closed loops of 4-bit Qwen3-Coder-30B-A3B on an RTX 5090, 50.1% over 105: a 4-bit MoE decode step about 1.7 times longer in the model than measured, and its October 2025 server benchmark, 24.5% over 18, added; 26.7% over 1,936 before: a ROCm blog's Qwen3-8B reasoning bursts on an MI300X, 40% over 5: answers far shorter and more alike than their max_tokens limit, added; 26.7% over 1,931 before: TensorRT-LLM's 0.14 and 0.20 throughput overviews, 21.9% over 622 and 14.8% over 120, and vLLM 0.10 bursts on A100, 28.4% over 76, added; 33.0% over 1,113 before: the ROCm blog's TensorRT-LLM 0.16 throughput runs on eight H100, 71% over 8: 59% of the per-GPU rate NVIDIA's own overview reports, added; 32.4% over 1,105 before: vLLM 0.8.4 bursts of Qwen3-4B on a T4, 54% over 27: a decode step twice the model's, added; 30.5% over 1,078 before: ai-factory's vLLM 0.23, the A100 TP report and tt-inference-server restated with their prefix-cache hits, 23.5%, 31.1% and 19.6%, added; 31.0% over 1,032 before: vLLM closed loops on an RTX PRO 6000, 60% over 30 first and 13% over 24 restated with the prefix-cache hits of their repeated prompts, added; 31.7% over 978 before: a vLLM 0.9 / SGLang 0.4.9 comparison on H100, 53%, whose levels "
    "are not consistent with their stated load, an A100 PCIe TP 1 / TP 2 report, 59% first and 29% restated, a "
    "Qwen3-32B quantization matrix on A100, 17%, and vLLM 0.23 on an L4, 5.4%, added; 32.3% over 807 before: vLLM 0.20 on an RTX 4090, 36.0%, added: first tokens twice as late "
    "in the model and Marlin and MoE decode faster than it; vLLM 0.23 on an RTX A6000 scored 54% and GPUStack's "
    "quantized vLLM bursts 60%: a newer release's decode step and bursts' admission; dstack's vLLM 405B FP8 "
    "offline runs on H100 and MI300X, 18.0%; DeepSeek-R1 on the ROCm and vLLM builds of its first "
    "weeks, scored 82%; long prompts' first tokens, queues of Poisson runs past what the model says the "
    "GPUs sustain, SGLang's decode step on H200 slower in the model than measured)",
}


@pytest.mark.parametrize("group", marked(LEDGER_TARGETS, LEDGER_MISSES))
def test_the_first_scores_meet_the_ledgers_median_targets(ledger, group):
    figures = summary(ledger)["groups"][group]
    assert figures["n"] > 0 and figures["median_abs_pct"] <= LEDGER_TARGETS[group], figures


@pytest.mark.xfail(
    strict=True, reason="64% of 5,158 memory and speed rows on 2026-12-08 (65% of 4,897 on 2026-12-07)"
)
def test_the_ranges_hold_three_quarters_of_the_ledgers_rows(ledger):
    groups = summary(ledger)["groups"]
    n = sum(groups[g]["n"] for g in LEDGER_TARGETS)
    covered = sum(groups[g]["coverage"] * groups[g]["n"] for g in LEDGER_TARGETS)
    assert covered / n >= 0.75, f"{covered / n:.0%} of {n} rows"


def test_a_fact_stated_after_the_first_score_leaves_the_rows_hash_and_is_listed(ledger, every_row):
    """Transformers' generate keeps one position's logits since v4.45 (``prompt_logits``, added after
    the Qwen2 speed benchmark and torchao's generation were first scored): their rows state ``all``
    from their own sources (Transformers 4.38, an eager loop), which the first score never read, so
    the rows' hash is the same with or without the column, and docs/validation.md lists them."""
    assert "prompt_logits" in RESTATED_COLUMNS and set(RESTATED_COLUMNS) == set(RESTATED_SINCE)
    # The page's Transformers rows (memory and speed); its vLLM rows keep only the last position's logits.
    qwen2 = [r for r in every_row if r.source_id == "qwen2-speed-benchmark" and r.engine == "transformers"]
    assert qwen2 and all(r.fact("prompt_logits") == "all" for r in qwen2)
    stripped = [
        dataclasses.replace(r, facts=tuple((k, v) for k, v in r.facts if k != "prompt_logits")) for r in qwen2
    ]
    # The lines written before it leave the column out of their hash; a line written now hashes it.
    old = ledger.scores[0]
    assert "prompt_logits" in old.hash_omits
    assert rows_sha256(stripped, old.hash_omits) == rows_sha256(qwen2, old.hash_omits)
    assert rows_sha256(stripped) != rows_sha256(qwen2)
    listed = {(col, value, sid): n for col, value, sid, n in restated_rows(ledger, every_row)}
    assert ("prompt_logits", "all", "torchao-quant-llama-generate") in listed
    # The page's memory rows were scored before the column existed; its speed rows, scored after with
    # the column stated, are not restated.
    memory_entry = next(e for e in ledger.scores if e.source == "qwen2-speed-benchmark")
    assert listed[("prompt_logits", "all", "qwen2-speed-benchmark")] == len(memory_entry.rows) + len(
        memory_entry.unscorable
    )
    assert all(r.group == "memory" for r in memory_entry.rows)
    # A baseline source's rows are not first scores: they are not listed.
    assert not any(sid == "litgpt-resource-tables" for _, _, sid, _ in restated_rows(ledger, every_row))


def test_a_column_stated_after_a_full_hash_line_is_left_out_of_that_lines_hash(ledger, every_row):
    """Megatron-LM counts the causal half of the attention in its TFLOPS since 2025-03-06: the MoE
    model zoo's and the DeepSeek-V3 guide's TFLOPS rows state it (``tflops_attention``) after their
    first score, whose line hashes every column it knew (``rows_hash_omits: []``): the column is
    left out of that line's hash, and the harness compares those rows with no conversion."""
    from gpuadvisor.validation.harness import published_tflops_ratio

    entry = next(e for e in ledger.scores if e.source == "mcore-moe-modelzoo-qwen3")
    assert entry.raw["rows_hash_omits"] == [] and "tflops_attention" in entry.hash_omits
    mine = [r for r in every_row if r.source_id == "mcore-moe-modelzoo-qwen3"]
    causal = [r for r in mine if r.fact("tflops_attention") == "causal"]
    assert causal and all(r.quantity == "train_tflops_per_gpu" for r in causal)
    # A line written after the column existed hashes it like any other.
    later = dataclasses.replace(entry, line=RESTATED_SINCE["tflops_attention"] + 1)
    assert "tflops_attention" not in later.hash_omits
    listed = {(c, v, sid): n for c, v, sid, n in restated_rows(ledger, every_row)}
    assert listed[("tflops_attention", "causal", "mcore-dsv3-gb200-opt")] == 13
    assert published_tflops_ratio.__doc__ and "8873b55" in published_tflops_ratio.__doc__


def test_tflops_counted_causally_are_compared_without_the_conversion(every_row):
    from gpuadvisor.validation.harness import published_tflops_ratio

    predictor = Predictor(load_gpu_catalog(), load_model_catalog())
    row = next(r for r in every_row if r.id == "MZQ-02")
    assert row.fact("tflops_attention") == "causal"
    full = dataclasses.replace(row, facts=tuple((k, v) for k, v in row.facts if k != "tflops_attention"))
    causal_est, full_est = predictor.compare(row).estimate, predictor.compare(full).estimate
    model = load_model_catalog().get("qwen3-235b-a22b")
    assert full_est / causal_est == pytest.approx(published_tflops_ratio(model, 4096), rel=1e-9)
    assert full_est / causal_est == pytest.approx(1.128, abs=0.001)


def test_mfu_counted_over_the_whole_sequence_is_converted_like_tflops(every_row):
    """nanotron's MFU counts the attention core over the whole sequence (its rows state
    ``tflops_attention`` full): the estimate's MFU is converted to that count, by the ratio TFLOPS
    rows of Megatron's older count take; without the column an MFU row is compared as counted."""
    from gpuadvisor.validation.harness import published_tflops_ratio

    predictor = Predictor(load_gpu_catalog(), load_model_catalog())
    row = next(r for r in every_row if r.source_id == "nanotron-bench-summary" and r.quantity == "train_mfu")
    assert row.fact("tflops_attention") == "full"
    plain = dataclasses.replace(row, facts=tuple((k, v) for k, v in row.facts if k != "tflops_attention"))
    full_est, plain_est = predictor.compare(row).estimate, predictor.compare(plain).estimate
    prepared = predictor.prepare(row)
    assert not isinstance(prepared, str)
    sc, model, _omitted = prepared
    assert full_est / plain_est == pytest.approx(published_tflops_ratio(model, sc.workload.seq_len), rel=1e-9)
    assert 1.02 < full_est / plain_est < 1.15
