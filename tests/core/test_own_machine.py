"""The machine you own: one laptop, desktop or Mac answers with the GPUs it has, as an interactive
session, with layers split on llama.cpp when the model does not fit, and a table of weight types.

The journeys of the issue (docs/examples/desktop-rtx4090-qwen3-32b.json, mac-m3max-64gb-llama70b.json):
Qwen3 32B Q4_K_M on one RTX 4090 (20 GiB: it runs on the one card the user owns, never "8 x ddp");
Llama 3.1 70B Q4_K_M on one RTX 4090 (40 GiB: layers split with system RAM); the same on an M3 Max
64 GB (one memory pool); a .gguf file with F16 tensors (counted as F16 on llama.cpp).
"""

from dataclasses import replace

import numpy as np
import pytest
from gguf import GGUFWriter, LlamaFileType

from gpuadvisor.core.estimation.estimate import estimate
from gpuadvisor.core.estimation.offload import SPLIT_FILL
from gpuadvisor.core.formats.scenario import ModelSource, Scenario, load_scenario, scenario_from_dict
from gpuadvisor.core.presentation.serialize import estimate_to_dict
from gpuadvisor.core.presentation.text import render_estimate
from gpuadvisor.core.presentation.wording import summary_line
from gpuadvisor.core.specs.hardware import HOST_DEFAULTS, MachineClass, load_gpu_catalog
from gpuadvisor.core.specs.presets import load_model_catalog
from gpuadvisor.core.specs.workload import Hardware, Workload
from gpuadvisor.core.units import GIB


@pytest.fixture(scope="module")
def cats():
    return load_gpu_catalog(), load_model_catalog()


def _scenario(preset: str, gpu: str, **hw) -> Scenario:
    return Scenario(
        model=ModelSource(preset=preset),
        workload=Workload(kind="inference", weights="q4_k_m"),
        hardware=Hardware(gpu=gpu, **hw),
    )


def test_one_desktop_card_runs_alone_and_is_never_replicated(cats):
    est = estimate(_scenario("qwen3-32b", "rtx-4090"), *cats)
    assert est.own_machine and est.session and est.engine == "llama.cpp"
    assert {(c.gpu_count, c.parallelism) for c in est.candidates} == {(1, "none")}
    lead = est.recommended
    s = est.session_of(lead)
    assert lead.fit_kind == "full" and s.gpu_layers == s.num_layers == 64
    assert lead.cost is None  # a session is no job: nothing timed or priced
    line = summary_line(est)
    assert line.startswith("On 1 × NVIDIA GeForce RTX 4090: ~") and "ddp" not in line
    assert f"~{s.tokens_per_s:.1f} tokens/s" in line and "a 1k-token prompt in" in line
    assert f"up to {s.max_context_tokens:,} tokens of context" in line
    assert f"{s.memory_left_gib:.1f} GiB of 24.0 GiB free" in line


def test_two_cards_the_user_has_split_the_model_but_are_not_replicas(cats):
    est = estimate(_scenario("qwen3-32b", "rtx-3090", gpu_count=2), *cats)
    assert {c.parallelism for c in est.candidates} <= {"tensor", "pipeline"}
    assert all(c.gpu_count == 2 for c in est.candidates)


def test_data_centre_gpus_keep_their_counts(cats):
    est = estimate(_scenario("qwen3-32b", "h100-sxm"), *cats)
    assert not est.own_machine and not est.session
    assert {c.gpu_count for c in est.candidates} == {1, 2, 4, 8}


def test_a_data_centre_card_is_not_offered_a_split_unless_asked(cats):
    """A cluster is given cards that hold the model; a server's RAM is not known."""
    s = _scenario("llama-3.1-70b", "t4")
    est = estimate(s, *cats)
    assert est.engine == "llama.cpp" and all(c.gpu_layers is None for c in est.candidates)
    one = next(c for c in est.candidates if c.gpu_count == 1)
    assert not one.fits
    asked = estimate(replace(s, workload=replace(s.workload, gpu_layers=20)), *cats)
    one = next(c for c in asked.candidates if c.gpu_count == 1)
    assert one.gpu_layers == 20 and one.fits


def test_a_stated_job_on_the_own_machine_is_timed_not_a_session(cats):
    s = _scenario("qwen3-32b", "rtx-4090")
    est = estimate(replace(s, workload=replace(s.workload, requests=1000)), *cats)
    assert est.own_machine and not est.session and est.recommended.cost is not None
    assert est.tokens_per_s(est.recommended) == est.recommended.performance.tokens_per_s


def test_a_model_too_big_for_the_card_is_offered_layers_split_with_system_ram(cats):
    est = estimate(_scenario("llama-3.1-70b", "rtx-4090"), *cats)
    c = est.recommended
    assert c is not None and c.fits and c.fit_kind == "partial"
    g, layers = c.gpu_layers, est.model.num_layers
    assert 30 < g < layers
    assert c.memory.device_total <= c.capacity_gib * GIB * SPLIT_FILL  # room left: not "tight"
    # One layer more would not keep that room.
    more = est.memory_model_of(c.__class__(*c[:-1], gpu_layers=g + 1))
    assert more.breakdown(1, "none").device_total > c.capacity_gib * GIB * SPLIT_FILL
    ram = HOST_DEFAULTS[MachineClass.DESKTOP].ram_gib
    assert 0 < c.host_memory_gib <= ram
    line = summary_line(est)
    assert f"fits with {g} of {layers} layers on the GPU" in line
    assert "assumed for a desktop with 32 GB of dual-channel DDR5-5600" in line
    d = next(x for x in estimate_to_dict(est)["candidates"] if x["gpu"] == "rtx-4090")
    assert d["gpu_layers"] == g and d["num_layers"] == layers and d["host_memory_gib"] > 15
    assert d["host"]["ram_assumed"] and d["host"]["ram_available_gib"] == ram
    assert d["session"]["tokens_per_s"] == d["tokens_per_s"]  # one figure


def test_the_split_speed_is_the_gpu_share_plus_the_cpu_share(cats):
    """Per token the GPU reads its layers at its bandwidth and then the CPU its layers and the output
    head at the host's: a slower host makes the step slower by exactly its own share."""
    s = _scenario("llama-3.1-70b", "rtx-4090")
    base = estimate(s, *cats).recommended
    slow = estimate(
        replace(s, hardware=replace(s.hardware, host_memory_bandwidth_gb_s=44.8)), *cats
    ).recommended
    assert slow.gpu_layers == base.gpu_layers
    t_base, t_slow = 1 / base.performance.tokens_per_s_per_user, 1 / slow.performance.tokens_per_s_per_user
    assert 1.6 < t_slow / t_base < 2.0  # the host share dominates and doubles
    assert base.performance.bound == "host memory"


def test_too_little_system_ram_is_said_not_silently_split(cats):
    s = _scenario("llama-3.1-70b", "rtx-4090")
    est = estimate(replace(s, hardware=replace(s.hardware, host_memory_gib=8)), *cats)
    assert est.recommended is None
    c = next(iter(est.best_per_gpu().values()))
    assert not c.fits and "need" in c.misfit and "8.0 GiB available" in c.misfit
    assert summary_line(est).startswith("Does not fit 1 × NVIDIA GeForce RTX 4090: host memory")


def test_a_stated_layer_count_is_kept(cats):
    s = _scenario("llama-3.1-70b", "rtx-4090")
    est = estimate(replace(s, workload=replace(s.workload, gpu_layers=30)), *cats)
    c = est.recommended
    assert c.gpu_layers == 30 and "fits with 30 of 80 layers" in summary_line(est)


def test_a_mac_is_one_memory_pool_and_never_offloads(cats):
    est = estimate(_scenario("llama-3.1-70b", "apple-m3-max", memory_gib=64), *cats)
    c = est.recommended
    assert c.fit_kind == "full" and c.gpu_layers is None and c.memory.host == 0
    line = summary_line(est)
    assert "with 64 GB" in line and "one memory pool shared with macOS" in line and "system RAM" not in line
    # A model beyond Metal's share does not fit: no offload is offered on a Mac.
    big = estimate(_scenario("llama-3.1-70b", "apple-m3-max", memory_gib=36), *cats)
    assert big.recommended is None and all(c.gpu_layers is None for c in big.candidates)


def test_one_tokens_per_s_figure_in_every_view(cats):
    """The M3 Max journey said 4.44 in the summary and 2.92 in the ranking: now one figure."""
    est = estimate(_scenario("llama-3.1-70b", "apple-m3-max", memory_gib=64), *cats)
    c = est.recommended
    rate = est.tokens_per_s(c).expected
    from gpuadvisor.core.formatting import fmt_rate

    shown = fmt_rate(rate)
    assert f"~{shown} tokens/s" in summary_line(est)
    assert f"  {shown}  " in render_estimate(est)
    assert estimate_to_dict(est)["candidates"][0]["tokens_per_s"] == round(rate, 2)


def test_the_fastest_card_leads_a_session_over_laptop_and_desktop_gpus(cats):
    s = Scenario(
        model=ModelSource(preset="qwen3-8b"),
        workload=Workload(kind="inference", weights="q4_k_m"),
        hardware=Hardware(segment="local"),
    )
    est = estimate(s, *cats)
    assert est.session and all(c.gpu_count == 1 for c in est.candidates)
    fitting = [c for c in est.best_per_gpu().values() if c.fit_kind == "full"]
    speeds = [c.performance.tokens_per_s_per_user for c in fitting]
    assert speeds == sorted(speeds, reverse=True) and est.recommended.key == fitting[0].key
    assert summary_line(est).startswith("Recommended: 1 × ") and "the fastest that fits" in summary_line(est)


def test_gguf_types_run_on_llama_cpp_and_the_json_says_which_engine(cats):
    gguf = estimate(_scenario("qwen3-32b", "h100-sxm"), *cats)
    assert gguf.engine == "llama.cpp" and estimate_to_dict(gguf)["workload"]["engine"] == "llama.cpp"
    s = _scenario("qwen3-32b", "h100-sxm")
    named = estimate(replace(s, workload=replace(s.workload, engine="vllm")), *cats)
    assert named.engine == "vllm"
    bf16 = estimate(replace(s, workload=replace(s.workload, weights="bf16")), *cats)
    assert estimate_to_dict(bf16)["workload"]["engine"] == "vllm"
    fp4 = estimate(replace(s, workload=replace(s.workload, weights="mxfp4")), *cats)
    assert fp4.engine == "vllm"  # an FP4 checkpoint format, which serving engines publish and run


def _f16_file(path):
    h, ff, layers, vocab = 512, 1024, 4, 2000
    w = GGUFWriter(path, "llama")
    w.add_name("tiny f16 model")
    w.add_file_type(LlamaFileType.MOSTLY_F16)
    w.add_block_count(layers)
    w.add_context_length(4096)
    w.add_embedding_length(h)
    w.add_feed_forward_length(ff)
    w.add_head_count(8)
    w.add_head_count_kv(4)
    w.add_vocab_size(vocab)
    w.add_tensor("token_embd.weight", np.zeros((vocab, h), dtype=np.float16))
    shapes = {"attn_q": (h, h), "attn_k": (h // 2, h), "attn_v": (h // 2, h), "attn_output": (h, h)}
    shapes |= {"ffn_gate": (ff, h), "ffn_up": (ff, h), "ffn_down": (h, ff)}
    for i in range(layers):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(h, dtype=np.float32))
        for name, shape in shapes.items():
            w.add_tensor(f"blk.{i}.{name}.weight", np.zeros(shape, dtype=np.float16))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(h, dtype=np.float32))
    w.add_tensor("output_norm.weight", np.ones(h, dtype=np.float32))
    w.add_tensor("output.weight", np.zeros((vocab, h), dtype=np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def test_a_gguf_file_sets_its_own_weights_and_runs_on_llama_cpp(cats, tmp_path):
    _f16_file(tmp_path / "tiny-F16.gguf")
    path = tmp_path / "s.json"
    path.write_text(
        '{"model": {"gguf": "tiny-F16.gguf"}, "workload": {"kind": "inference"},'
        ' "hardware": {"gpu": "rtx-4090"}}'
    )
    s = load_scenario(path)
    assert s.workload.weights == "fp16"
    est = estimate(s, *cats)
    assert est.engine == "llama.cpp" and not any("GGUF file" in w for w in est.warnings)
    stated = scenario_from_dict(
        {"model": {"gguf": "tiny-F16.gguf"}, "workload": {"kind": "inference", "weights": "q4_k_m"}},
        base_dir=str(tmp_path),
    )
    assert stated.workload.weights == "q4_k_m"  # the scenario's own weights win


def test_the_weights_table_of_one_card(cats):
    est = estimate(_scenario("llama-3.1-70b", "rtx-4090"), *cats)
    rows = {r.weights: r for r in est.weights_table}
    assert list(rows)[:2] == ["bf16", "q8_0"] and rows["q4_k_m"].current
    assert rows["bf16"].fit == "no" and rows["bf16"].gpu_layers is None and rows["bf16"].tokens_per_s is None
    assert rows["q4_k_m"].fit == "partial" and rows["q4_k_m"].gpu_layers == est.recommended.gpu_layers
    assert rows["q4_k_m"].tokens_per_s == pytest.approx(est.tokens_per_s(est.recommended).expected)
    assert rows["q2_k"].weights_gib < rows["q4_k_m"].weights_gib < rows["q8_0"].weights_gib
    assert rows["q2_k"].tokens_per_s > rows["q4_k_m"].tokens_per_s
    table = estimate_to_dict(est)["weights_table"]
    assert set(table[0]) >= {
        "weights",
        "weights_gib",
        "fit",
        "gpu_layers",
        "tokens_per_s",
        "prefill_tokens_per_s",
        "max_context",
    }
    small = estimate(_scenario("qwen3-32b", "rtx-4090"), *cats)
    assert {r.weights: r.fit for r in small.weights_table}["q4_k_m"] == "full"


def test_the_weights_table_s_prompt_speeds_follow_the_kernels(cats):
    """Qwen3 32B on one RTX 4090: every type that fits whole is compute-bound in its prompt, and the
    prompt speed follows the type's kernels (legacy Q4_0 ahead of the k-quants, Q3_K_M and Q2_K,
    mostly sub-blocks of 16, behind Q4_K_M), each row as the estimate of that type gives it."""
    est = estimate(_scenario("qwen3-32b", "rtx-4090"), *cats)
    rows = {r.weights: r for r in est.weights_table if r.fit == "full"}
    assert {"q4_k_m", "q4_0", "iq4_xs", "q3_k_m", "q2_k"} <= set(rows)
    pp = {w: r.prefill_tokens_per_s for w, r in rows.items()}
    assert len({round(v) for v in pp.values()}) >= 3  # no longer one figure for every type
    assert pp["q4_0"] > pp["q4_k_m"] > pp["q3_k_m"] > pp["q2_k"]
    assert pp["q4_k_m"] == pytest.approx(est.recommended.performance.prefill_tokens_per_s)
    q4_0 = estimate(replace(est.scenario, workload=replace(est.scenario.workload, weights="q4_0")), *cats)
    assert pp["q4_0"] == pytest.approx(q4_0.recommended.performance.prefill_tokens_per_s)


def test_no_weights_table_for_several_gpu_types_or_a_service(cats):
    s = _scenario("qwen3-32b", "rtx-4090")
    assert estimate(replace(s, hardware=Hardware(segment="local")), *cats).weights_table == ()
    assert (
        estimate(replace(s, workload=replace(s.workload, weights="bf16", kind="lora")), *cats).weights_table
        == ()
    )


def test_a_session_on_the_machine_you_own_names_nowhere_to_rent(cats):
    """The user owns the card or the Mac: the answer offers no cloud instance to rent it from."""
    import datetime

    from gpuadvisor.core.presentation.detail import candidate_detail
    from gpuadvisor.core.presentation.prices import rent_as

    for est in (
        estimate(_scenario("qwen3-32b", "rtx-4090"), *cats),
        estimate(_scenario("llama-3.1-70b", "apple-m3-max", memory_gib=64), *cats),
    ):
        assert est.session and rent_as(est) == ""
        text = render_estimate(est)
        assert "Rent it as" not in text and "Where to rent" not in text
        detail = " ".join(t for t, _tone in candidate_detail(est, est.recommended.key, datetime.date.today()))
        assert "Rent it as" not in detail and "Where to rent" not in detail
