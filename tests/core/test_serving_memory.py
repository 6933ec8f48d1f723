"""A service's memory at its operating point (``serving.memory``): the KV cache of the requests in
flight per GPU of the replica, and the pool the engine preallocates.

Llama 3.1 8B keeps ``2 x 32 layers x 8 KV heads x 128 x 2 bytes`` = 131,072 bytes of KV cache per
token in 16 bit (its config.json: 32 layers, 8 key-value heads, head_dim 128).
"""

import json
from functools import lru_cache

import pytest

from gpuadvisor.core.estimation.estimate import estimate
from gpuadvisor.core.estimation.serving_memory import BatchLine, operating_memory
from gpuadvisor.core.formats.scenario import loads_scenario
from gpuadvisor.core.presentation.serialize import estimate_to_dict
from gpuadvisor.core.specs.engines import RECORDS
from gpuadvisor.core.specs.hardware import load_gpu_catalog
from gpuadvisor.core.specs.presets import load_model_catalog
from gpuadvisor.core.units import GIB

LLAMA_8B_KV_BYTES_PER_TOKEN = 2 * 32 * 8 * 128 * 2


@lru_cache(maxsize=1)
def catalogs():
    return load_gpu_catalog(), load_model_catalog()


def run(engine="vllm", gpus=None, workload=None, rate=20.0, ttft=1.0, itl=50.0, hardware=None):
    data = {
        "model": {"preset": "llama-3.1-8b"},
        "workload": {
            "kind": "inference",
            "engine": engine,
            "prompt_tokens": 2000,
            "output_tokens": 300,
            "serving": {"requests_per_s": rate, "ttft_s": ttft, "itl_ms": itl},
            **(workload or {}),
        },
        "hardware": hardware or {"segment": "data_centre"},
    }
    g, m = catalogs()
    return estimate(loads_scenario(json.dumps(data)), g, m)


def served(est):
    return [c for c in est.candidates if c.serving is not None]


def test_kv_in_flight_is_the_concurrency_times_the_reserved_context():
    est = run(hardware={"gpu": "h100-sxm", "gpu_count": 1})
    (c,) = served(est)
    m = c.serving.memory
    # Paged KV: the 2,000-token prompt and half the 300-token answer.
    assert m.tokens_per_sequence == 2000 + 150
    assert m.concurrency == c.serving.concurrency_per_replica > 1
    assert m.kv_in_flight == pytest.approx(m.concurrency * 2150 * LLAMA_8B_KV_BYTES_PER_TOKEN, rel=1e-9)


def test_kv_in_flight_scales_with_the_concurrency():
    est = run(hardware={"gpu": "h100-sxm", "gpu_count": 1})
    (c,) = served(est)
    mm, s = est.memory_model, c.serving.memory.tokens_per_sequence
    one = operating_memory(
        mm.breakdown(1, "none", batch_size=10, context=s), 10, s, 80 * GIB, "vllm", 0.6 * GIB
    )
    two = operating_memory(
        mm.breakdown(1, "none", batch_size=20, context=s), 20, s, 80 * GIB, "vllm", 0.6 * GIB
    )
    assert two.kv_in_flight == pytest.approx(2 * one.kv_in_flight, rel=1e-12)
    assert two.weights == one.weights
    assert two.need > one.need


def test_tensor_parallelism_splits_the_kv_cache_by_heads_and_pipelines_by_layers():
    est = run(hardware={"gpu": "h100-sxm", "gpu_count": 2, "parallelism": "tensor"})
    (tp,) = [c for c in served(est) if c.parallelism == "tensor"]
    m = tp.serving.memory
    # 8 KV heads over 2 GPUs: each GPU holds 4 of them for every sequence in flight.
    assert m.kv_in_flight == pytest.approx(
        m.concurrency * m.tokens_per_sequence * LLAMA_8B_KV_BYTES_PER_TOKEN / 2, rel=1e-9
    )
    assert (
        m.weights < 0.55 * served(run(hardware={"gpu": "h100-sxm", "gpu_count": 1}))[0].serving.memory.weights
    )
    est = run(hardware={"gpu": "h100-sxm", "gpu_count": 2, "parallelism": "pipeline"})
    (pp,) = [c for c in served(est) if c.parallelism == "pipeline"]
    m = pp.serving.memory
    # 32 layers in 2 stages of 16.
    assert m.kv_in_flight == pytest.approx(
        m.concurrency * m.tokens_per_sequence * LLAMA_8B_KV_BYTES_PER_TOKEN / 2, rel=1e-9
    )


def test_long_tail_lengths_raise_the_reservation():
    base = served(run(hardware={"gpu": "h100-sxm", "gpu_count": 1}))[0].serving.memory
    tail = served(
        run(
            hardware={"gpu": "h100-sxm", "gpu_count": 1},
            workload={"prompt_tokens_p90": 6000, "output_tokens_p90": 900},
        )
    )[0].serving.memory
    assert tail.tokens_per_sequence == 6000 + 450
    per_seq = tail.kv_in_flight / tail.concurrency
    assert per_seq == pytest.approx(6450 * LLAMA_8B_KV_BYTES_PER_TOKEN, rel=1e-9)
    assert per_seq > base.kv_in_flight / base.concurrency * 2.9


def test_slots_reserve_the_whole_context():
    (c,) = served(run(engine="llama.cpp", hardware={"gpu": "h100-sxm", "gpu_count": 1}, itl=200, ttft=10))
    assert c.serving.memory.tokens_per_sequence == 2300


@pytest.mark.parametrize(
    ("engine", "logits"),
    [
        ("vllm", None),
        ("sglang", None),
        ("tensorrt-llm", None),
        ("llama.cpp", None),
        # Transformers before v4.45 holds every prompt position's logits, which bind the memory here.
        ("transformers", "all"),
    ],
)
def test_the_operating_point_fits_the_capacity_and_is_the_candidates_memory(engine, logits):
    workload = {"prompt_tokens": 8000, "output_tokens": 1000}
    if logits:
        workload["prompt_logits"] = logits
    est = run(engine=engine, workload=workload, itl=200, ttft=20)
    fleets = served(est)
    assert any(c.serving.limited_by == "kv_cache" for c in fleets)
    for c in fleets:
        m = c.serving.memory
        # The planner's fit test: the KV cache of the concurrency fits the usable memory.
        assert m.need <= m.capacity * (1 + 1e-9), c.key
        assert m.capacity == c.capacity_gib * GIB
        # One answer: the candidate's memory (bar, need, headroom, JSON) is the operating point's.
        assert c.memory.device_total == pytest.approx(m.need, rel=1e-12)
        assert c.memory.kv_cache == m.kv_in_flight
        assert c.headroom_gib == pytest.approx(c.capacity_gib - m.need / GIB, abs=1e-9)
        assert c.fits


def test_vllm_preallocates_its_share_of_the_card():
    est = run(hardware={"gpu": "h100-sxm", "gpu_count": 1})
    m = served(est)[0].serving.memory
    assert m.setting == "gpu_memory_utilization" and m.fraction == 0.9
    assert not m.pool_short
    # The pool fills the engine's share of the card: nvidia-smi shows 90% however few requests run.
    assert m.engine_total == pytest.approx(0.9 * m.capacity, rel=1e-9)
    assert m.pool_reserved == pytest.approx(m.kv_pool - m.kv_in_flight)
    assert m.pool_sequences > m.concurrency


def test_a_pool_too_small_for_the_concurrency_says_which_setting_makes_room():
    est = run(workload={"prompt_tokens": 8000, "output_tokens": 1000}, itl=200, ttft=20)
    short = [c for c in served(est) if c.serving.memory.pool_short]
    assert short, "a KV-limited replica fills more than 90% of the card"
    for c in short:
        m = c.serving.memory
        assert m.fraction_needed > m.fraction
        assert m.pool_sequences < m.concurrency
        # At the needed setting the vLLM pool holds exactly the KV cache in flight.
        assert m.fraction_needed * m.capacity - (m.need - m.kv_in_flight) == pytest.approx(m.kv_in_flight)
        assert m.engine_total == m.need


def test_tensorrt_llm_takes_its_share_of_the_free_memory_and_llama_cpp_no_pool():
    trt = served(run(engine="tensorrt-llm", hardware={"gpu": "h100-sxm", "gpu_count": 1}))[0].serving.memory
    free = trt.capacity - (trt.need - trt.kv_in_flight)
    assert trt.kv_pool == pytest.approx(RECORDS["tensorrt-llm"].kv_pool.fraction * free)
    cpp = served(run(engine="llama.cpp", hardware={"gpu": "h100-sxm", "gpu_count": 1}, itl=200, ttft=10))
    m = cpp[0].serving.memory
    assert m.setting == "" and m.kv_pool == m.kv_in_flight and m.engine_total == m.need


def test_json_carries_the_operating_point_and_a_batch_job_has_none():
    est = run(hardware={"gpu": "h100-sxm", "gpu_count": 1})
    d = estimate_to_dict(est)["candidates"][0]
    mem = d["serving"]["memory_gib"]
    assert mem["need"] == d["memory_per_gpu_gib"]["device_total"]
    assert mem["kv_cache_in_flight"] == d["memory_per_gpu_gib"]["kv_cache"]
    assert mem["concurrency"] == d["serving"]["concurrency_per_replica"]
    assert mem["engine_total"] == pytest.approx(0.9 * d["capacity_gib"], abs=0.002)
    assert mem["pool_setting"] == "gpu_memory_utilization"
    g, m = catalogs()
    batch = {
        "model": {"preset": "llama-3.1-8b"},
        "workload": {"kind": "inference", "prompt_tokens": 2000, "output_tokens": 300, "batch_size": 4},
        "hardware": {"gpu": "h100-sxm", "gpu_count": 1},
    }
    est = estimate(loads_scenario(json.dumps(batch)), g, m)
    (c,) = est.candidates
    assert c.serving is None
    assert c.memory.kv_cache == pytest.approx(4 * 2300 * LLAMA_8B_KV_BYTES_PER_TOKEN)


@pytest.mark.parametrize("engine", ["vllm", "tensorrt-llm", "llama.cpp", "transformers", "autoawq"])
@pytest.mark.parametrize("gpu_count, parallelism", [(1, "none"), (2, "tensor"), (4, "pipeline")])
def test_the_batch_line_is_the_memory_model(engine, gpu_count, parallelism):
    """BatchLine's closed form equals the memory model's breakdown at every concurrency."""
    weights = "int4" if engine == "autoawq" else "bf16"
    est = run(engine=engine, workload={"weights": weights}, hardware={"gpu": "h100-sxm", "gpu_count": 1})
    mm = est.memory_model
    line = BatchLine(mm, gpu_count, parallelism, 2150)
    for c in (1, 2, 3, 7, 64, 85, 300, 1024):
        got, want = line.at(c), mm.breakdown(gpu_count, parallelism, batch_size=c, context=2150)
        for name in ("weights", "activations", "kv_cache", "overhead", "logits", "host"):
            assert getattr(got, name) == pytest.approx(getattr(want, name), rel=1e-9, abs=1e-3), (c, name)
        assert got.device_total == pytest.approx(want.device_total, rel=1e-12)


@pytest.mark.parametrize("engine", ["vllm", "transformers"])
def test_the_largest_batch_is_the_last_that_fits(engine):
    """The largest batch beside a service's requests in flight is the last that fits: the first
    sequences also widen the prefill chunk, so the slope between one and two sequences is too steep."""
    est = run(engine=engine, hardware={"gpu": "h100-sxm", "gpu_count": 1})
    (c,) = served(est)
    mm, cap = est.memory_model, c.capacity_gib * GIB
    best = est.what_if(c).max_batch
    assert mm.breakdown(1, "none", batch_size=best).device_total <= cap
    assert mm.breakdown(1, "none", batch_size=best + 1).device_total > cap
