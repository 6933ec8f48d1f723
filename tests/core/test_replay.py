"""The replay of published serving benchmarks (``validation.replay``): a closed loop, a loop in
step, a burst and a paced client on a replica as the engine starts by default.

Properties: one request alone is the same however it was sent; a wave's requests wait for the
prompts ahead of them and are slowed by those behind; answers that stop early drain until the
longest ends; requests beyond the KV cache or the engine's default pool and scheduling limits wait
for a slot; a loop in step is a burst every round; a paced client above the engine's rate is the
closed loop, below it sets the pace.
"""

import math

import pytest
from serving_setups import burst_setup, catalogs

from gpuadvisor.validation.replay import BenchReplica


def test_request_overhead_lengthens_the_first_token_and_the_request():
    """The per-request time (HTTP, tokenization, scheduling, streaming) adds to TTFT once and to the
    time a client's request takes, not to the decode steps."""
    from gpuadvisor.core.estimation.memory import MemoryModel
    from gpuadvisor.core.specs.constants import engine_for
    from gpuadvisor.core.specs.workload import Workload
    from gpuadvisor.validation.replay import closed_loop

    gpus, models = catalogs()
    engine = engine_for("vllm", "inference")
    w = Workload(kind="inference", engine="vllm", prompt_tokens=233, output_tokens=221, batch_size=4)
    mm = MemoryModel(models.get("qwen3-8b"), w, prefill_chunk_tokens=engine.prefill_chunk_tokens)
    bare = closed_loop(BenchReplica(mm, gpus.get("h100-sxm"), 1, "none", engine, request_overhead_s=0.0), 4)
    slow = closed_loop(BenchReplica(mm, gpus.get("h100-sxm"), 1, "none", engine, request_overhead_s=0.05), 4)
    assert slow.ttft_s == pytest.approx(bare.ttft_s + 0.05)
    assert slow.itl_s == pytest.approx(bare.itl_s)
    assert slow.tokens_per_s < bare.tokens_per_s


def test_a_burst_of_one_request_is_a_closed_loop_of_one_client():
    """One request alone: nothing queues ahead of it and no prompt interrupts its decode, however
    it was sent."""
    from gpuadvisor.validation.replay import burst, closed_loop

    mm, gpu, engine = burst_setup()
    one = burst(BenchReplica(mm, gpu, 1, "none", engine), 1)
    loop = closed_loop(BenchReplica(mm, gpu, 1, "none", engine), 1)
    assert one.tokens_per_s == pytest.approx(loop.tokens_per_s)
    assert one.ttft_s == pytest.approx(loop.ttft_s)
    assert one.itl_s == pytest.approx(loop.itl_s)


def test_a_wave_waits_for_the_prompts_ahead_and_is_slowed_by_those_behind():
    """In a wave of N requests the mean request waits for (N - 1) / 2 prompts before its first
    token and shares its decode with the (N - 1) / 2 prompts behind it: the first token comes
    later than in a closed loop of N clients, the tokens after it faster."""
    from gpuadvisor.validation.replay import _benchmark_curve, burst, closed_loop

    mm, gpu, engine = burst_setup()
    last = None
    for n in (2, 16, 128, 500):
        wave = burst(BenchReplica(mm, gpu, 1, "none", engine), n)
        loop = closed_loop(BenchReplica(mm, gpu, 1, "none", engine), n)
        assert wave.running == n == loop.running
        c, curve = _benchmark_curve(BenchReplica(mm, gpu, 1, "none", engine), n)
        d = curve.new_mean * curve.tau
        assert wave.ttft_s == pytest.approx(curve.point(1, closed=True)[2] + (n - 1) / 2 * d)
        assert curve.step(n) < wave.itl_s < loop.itl_s
        if last is not None:
            assert wave.ttft_s > last.ttft_s and wave.itl_s > last.itl_s
        last = wave


def test_a_wave_of_answers_that_stop_early_drains_until_its_longest_ends():
    """Answers that stop at their end token (mean O, none past L) keep the wave going until the
    longest ends, at ever smaller batches: the decode lasts longer than O - 1 steps at batch N,
    more so the longer the cap, and the mean step per token lies between the lone and the full
    batch's. One request alone takes its mean length; a cap at the mean is equal lengths."""
    from gpuadvisor.validation.replay import _benchmark_curve, burst, drain

    mm, gpu, engine = burst_setup(prompt=256, output=350)
    n = 100
    _c, curve = _benchmark_curve(BenchReplica(mm, gpu, 1, "none", engine), n)
    out = mm.workload.output_tokens
    equal = (out - 1) * curve.step(n)
    assert drain(curve.step, n, out, out) == (pytest.approx(equal), pytest.approx(curve.step(n)))
    alone, step1 = drain(curve.step, 1, out, 512)
    assert alone == pytest.approx((out - 1) * curve.step(1), rel=0.01)
    assert step1 == pytest.approx(curve.step(1))
    last = equal
    for cap in (400, 512, 1024, 4096):
        time, per_token = drain(curve.step, n, out, cap)
        assert time > last
        assert curve.step(1) <= per_token <= curve.step(n)
        last = time
    # Beyond the point where the longest of n answers is expected, a higher cap changes little.
    assert drain(curve.step, n, out, 10**6)[0] == pytest.approx(drain(curve.step, n, out, 10**5)[0], rel=0.01)
    fixed = burst(BenchReplica(mm, gpu, 1, "none", engine), n)
    cut = burst(BenchReplica(mm, gpu, 1, "none", engine), n, longest_output=512)
    assert cut.tokens_per_s < fixed.tokens_per_s
    assert cut.ttft_s == pytest.approx(fixed.ttft_s) and cut.itl_s < fixed.itl_s


@pytest.mark.parametrize(
    ("first", "rise", "cap", "n"),
    [
        (0.02, 0.001, math.inf, 500),  # no cap: an arithmetic series
        (0.02, 0.001, 0.05, 500),  # capped after 30 terms
        (0.02, 0.001, 0.0205, 7),  # capped after the first
        (0.02, 0.0, 0.05, 9),  # flat
        (0.02, 0.003, 0.02, 4),  # the cap at the first term
        (0.02, 0.001, 0.03, 11),  # the cap met exactly at j = 10
        (0.02, 0.001, 0.05, 0),  # nothing to sum
    ],
)
def test_a_waves_capped_ramp_is_summed_in_closed_form(first, rise, cap, n):
    """A wave's mean ITL sums ``min(step + j d / (O - 1), cap)`` over its requests; the closed form
    is that sum, for any number of requests, with or without a cap."""
    from gpuadvisor.validation.replay import capped_ramp_sum

    plain = sum(min(first + j * rise, cap) for j in range(n))
    assert capped_ramp_sum(first, rise, cap, n) == pytest.approx(plain, rel=1e-12, abs=1e-15)


def test_a_lone_client_meets_no_prompt_ahead_of_its_own():
    """In a closed loop a new prompt meets the prompts of the other clients only (the arrival
    theorem), so one client never waits behind a prompt, however long: its first token is its
    own prefill's. A Poisson stream at the same concurrency does meet one (PASTA)."""
    from gpuadvisor.validation.replay import _benchmark_curve, closed_loop

    mm, gpu, engine = burst_setup(prompt=28_000, output=350)
    _c, curve = _benchmark_curve(BenchReplica(mm, gpu, 1, "none", engine), 1)
    lone = closed_loop(BenchReplica(mm, gpu, 1, "none", engine), 1)
    _itl, _tail, alone, _s = curve.point(1, closed=True)
    assert lone.ttft_s == pytest.approx(alone)
    assert curve.point(1)[2] > 1.1 * alone  # the open stream's wait for the prompt ahead
    # With more clients the others' prompts are met, and more of them the more clients there are.
    assert closed_loop(BenchReplica(mm, gpu, 1, "none", engine), 2).ttft_s > lone.ttft_s


def test_a_burst_beyond_the_kv_cache_waits_about_half_a_closed_loops_wait():
    """Requests beyond the KV cache wait for a slot, each request once: the mean wait is about half
    of a closed loop's of N clients (whose clients send again), at the same throughput."""
    from gpuadvisor.validation.replay import burst, closed_loop

    mm, gpu, engine = burst_setup(prompt=8000, output=2000, model="llama-3.1-70b", gpu="h100-sxm")
    replica = BenchReplica(mm, gpu, 2, "tensor", engine)
    many, loop = burst(replica, 1000), closed_loop(replica, 1000)
    assert many.running == loop.running < 1000
    assert 0.4 * loop.ttft_s < many.ttft_s < 0.6 * loop.ttft_s
    assert many.tokens_per_s == pytest.approx(loop.tokens_per_s)


@pytest.mark.parametrize("engine_id", ["vllm", "sglang", "tensorrt-llm"])
def test_a_benchmark_runs_no_more_sequences_than_the_engines_default_pool_holds(engine_id):
    """A benchmark runs the engine as it starts: the KV pool its default setting preallocates
    (vLLM's 0.9 of the card, SGLang's static share, TensorRT-LLM's share of the free memory), not
    the card's free memory, caps the sequences it runs at once. A large model on one GPU leaves a
    pool of a few GiB, so a burst of 1,000 short chat requests runs fewer than the card would hold."""
    from gpuadvisor.core.estimation.memory import MemoryModel
    from gpuadvisor.core.estimation.serving import kv_capacity, kv_line, reserved_context
    from gpuadvisor.core.estimation.serving_memory import operating_memory
    from gpuadvisor.core.specs.constants import engine_for
    from gpuadvisor.core.specs.serving import batching_for
    from gpuadvisor.core.specs.workload import Workload
    from gpuadvisor.core.units import GIB
    from gpuadvisor.validation.replay import _benchmark_curve, pool_sequences

    gpus, models = catalogs()
    engine = engine_for(engine_id, "inference")
    w = Workload(kind="inference", engine=engine_id, weights="fp8", prompt_tokens=215, output_tokens=196)
    mm = MemoryModel(models.get("llama-3.1-70b"), w, prefill_chunk_tokens=engine.prefill_chunk_tokens)
    gpu = gpus.get("h100-sxm")
    capacity = gpu.memory_gib_usable * GIB
    context = reserved_context(mm.workload, batching_for(engine.id))
    card = kv_capacity(kv_line(mm, 1, "none", context), capacity)
    pool = pool_sequences(mm, 1, "none", context, capacity, engine.id)
    bd = mm.breakdown(1, "none", batch_size=1, context=context)
    sm = operating_memory(bd, 1, context, capacity, engine.id, mm.overhead.cuda_context_gib * GIB)
    assert pool == int(sm.kv_pool // bd.kv_cache)
    assert pool > 0
    if engine_id != "tensorrt-llm":  # 0.9 of the free memory is about what the card holds
        assert pool < card
    running, _curve = _benchmark_curve(BenchReplica(mm, gpu, 1, "none", engine), 1000)
    assert running == min(pool, card)
    # An engine without a preallocated pool runs what the card holds.
    plain = engine_for("transformers", "inference")
    assert pool_sequences(mm, 1, "none", context, capacity, plain.id) is None


@pytest.mark.parametrize(
    ("gpu_id", "sequences", "chunk"),
    [("h100-sxm", 1024, 8192), ("h200", 1024, 8192), ("a100-80gb", 256, 2048), ("rtx-4090", 256, 2048)],
)
def test_vllm_schedules_as_its_defaults_on_each_gpu(gpu_id, sequences, chunk):
    """vLLM's defaults depend on the GPU: 1,024 sequences and 8,192 prompt tokens a step on a GPU of
    70 GiB or more that is not an A100, 256 and 2,048 elsewhere. A benchmark's burst runs no more
    sequences than that at once, with that chunk; other engines keep their profile's chunk."""
    from gpuadvisor.core.estimation.memory import MemoryModel
    from gpuadvisor.core.specs.constants import engine_for
    from gpuadvisor.core.specs.serving import batch_defaults
    from gpuadvisor.core.specs.workload import Workload
    from gpuadvisor.validation.replay import _benchmark_curve, scheduled_on

    gpus, models = catalogs()
    gpu = gpus.get(gpu_id)
    limits = batch_defaults("vllm", gpu.name, gpu.memory_gib_usable)
    assert limits is not None and (limits.max_sequences, limits.chunk_tokens) == (sequences, chunk)
    vllm = engine_for("vllm", "inference")
    engine, most = scheduled_on(vllm, gpu)
    assert (engine.prefill_chunk_tokens, most) == (chunk, sequences)
    # A small model whose KV cache holds far more than the default: the scheduler is the cap.
    w = Workload(kind="inference", engine="vllm", weights="bf16", prompt_tokens=128, output_tokens=4)
    mm = MemoryModel(models.get("qwen3-0.6b"), w, prefill_chunk_tokens=vllm.prefill_chunk_tokens)
    running, curve = _benchmark_curve(BenchReplica(mm, gpu, 1, "none", vllm), 2000)
    assert running == sequences
    assert curve.chunk == chunk
    # The V0 release line and the other engines have no GPU-dependent default.
    for other in ("vllm-v0", "sglang", "tensorrt-llm", "llama.cpp"):
        assert batch_defaults(other, gpu.name, gpu.memory_gib_usable) is None
        profile = engine_for(other, "inference")
        assert scheduled_on(profile, gpu)[0] is profile


def test_a_burst_beyond_the_kv_cache_fills_slots_as_answers_end():
    """After the first wave the j-th waiting request gets a slot after about j S(c) / c and then
    takes the closed loop's TTFT0(c); the throughput is the closed loop's. More requests wait
    longer on average, with equal answers and with answers that stop at their end token."""
    from gpuadvisor.validation.replay import _benchmark_curve, _wave, burst

    mm, gpu, engine = burst_setup(prompt=8000, output=1000, model="llama-3.1-70b", gpu="h100-sxm")
    replica = BenchReplica(mm, gpu, 2, "tensor", engine)
    last = None
    for n, longest in ((400, 4000), (1000, 4000), (3000, 4000), (3001, None)):
        got = burst(replica, n, longest_output=longest)
        c, curve = _benchmark_curve(replica, n)
        assert c < n
        first_ttft, first_itl, _ = _wave(curve, c, 1000, longest)
        itl, _tail, ttft0, service = curve.point(c, closed=True)
        m = n - c
        assert got.ttft_s == pytest.approx((c * first_ttft + m * (ttft0 + (m + 1) / 2 * service / c)) / n)
        assert got.tokens_per_s == pytest.approx(c * 1000 / service)
        assert got.itl_s == pytest.approx((c * first_itl + m * itl) / n)
        if last is not None:
            assert got.ttft_s > last.ttft_s
        last = got


def test_a_closed_loop_in_step_is_a_burst_every_round():
    """Fixed-length requests whose clients start together finish together (each running sequence's
    steps carry the prompts behind it), so every round is the same wave: the figures of a burst of
    as many requests. Its first token comes later than a steady loop's, where each new prompt meets
    a queue of about one, and the makespan, not the steady service time, sets the tokens/s."""
    from gpuadvisor.validation.replay import burst, closed_loop, lockstep

    mm, gpu, engine = burst_setup(prompt=2000, output=200)
    for n in (1, 4, 25, 128):
        step = lockstep(BenchReplica(mm, gpu, 1, "none", engine), n)
        assert step == burst(BenchReplica(mm, gpu, 1, "none", engine), n)
        loop = closed_loop(BenchReplica(mm, gpu, 1, "none", engine), n)
        if n == 1:
            assert step.ttft_s == pytest.approx(loop.ttft_s)
        else:
            assert step.ttft_s > loop.ttft_s


def test_a_closed_loop_in_step_beyond_the_kv_cache_runs_in_waves_of_what_it_holds():
    """With more clients than the engine holds, each round is a wave of the c it holds and the rest
    wait for whole waves: by Little's law a request takes N / c wave makespans from sending to its
    end, its decode included; the tokens/s are those of one wave of c."""
    from gpuadvisor.validation.replay import _benchmark_curve, burst, lockstep

    mm, gpu, engine = burst_setup(prompt=8000, output=2000, model="llama-3.1-70b", gpu="h100-sxm")
    clients = 1000
    waves = lockstep(BenchReplica(mm, gpu, 2, "tensor", engine), clients)
    c = waves.running
    assert c < clients
    one_wave = burst(BenchReplica(mm, gpu, 2, "tensor", engine), c)
    assert waves.tokens_per_s == pytest.approx(one_wave.tokens_per_s)
    assert waves.itl_s == pytest.approx(one_wave.itl_s)
    out = mm.workload.output_tokens
    makespan = c * out / one_wave.tokens_per_s
    request_time = waves.ttft_s + (out - 1) * waves.itl_s
    assert request_time == pytest.approx(clients / c * makespan)
    # Waiting a whole wave or more: the first token comes after the first wave's makespan.
    _c, curve = _benchmark_curve(BenchReplica(mm, gpu, 2, "tensor", engine), clients)
    assert waves.ttft_s > makespan > curve.point(1)[2]


def test_a_paced_client_above_the_engines_rate_is_the_closed_loop():
    """Offered more requests than its clients can turn over, a paced client's queue never empties:
    the figures are those of the closed loop of its workers."""
    from gpuadvisor.validation.replay import closed_loop, paced

    mm, gpu, engine = burst_setup()
    loop = closed_loop(BenchReplica(mm, gpu, 1, "none", engine), 16)
    assert paced(BenchReplica(mm, gpu, 1, "none", engine), 16, 1000.0) == loop


def test_a_paced_client_below_the_engines_rate_sets_the_pace():
    """Offered fewer requests than the closed loop serves, the engine serves them all (tokens/s =
    rate x O) with fewer sequences in flight, so each decodes faster and none waits for a worker;
    at a trickle each request runs alone."""
    from gpuadvisor.validation.replay import _benchmark_curve, closed_loop, paced

    mm, gpu, engine = burst_setup()
    out = mm.workload.output_tokens
    loop = closed_loop(BenchReplica(mm, gpu, 1, "none", engine), 64)
    rate = 0.5 * loop.tokens_per_s / out
    slow = paced(BenchReplica(mm, gpu, 1, "none", engine), 64, rate)
    assert slow.tokens_per_s == pytest.approx(rate * out)
    assert slow.itl_s < loop.itl_s and slow.ttft_s <= loop.ttft_s
    # Little's law at the pace found: x sequences in flight turn over `rate` requests a second.
    _c, curve = _benchmark_curve(BenchReplica(mm, gpu, 1, "none", engine), 64)
    x = next(b for b in range(1, 65) if curve.itl(b) >= slow.itl_s)
    assert x / curve.point(x)[3] == pytest.approx(rate, rel=0.15)
    trickle = paced(BenchReplica(mm, gpu, 1, "none", engine), 64, 0.01)
    alone = closed_loop(BenchReplica(mm, gpu, 1, "none", engine), 1)
    assert trickle.itl_s == pytest.approx(alone.itl_s)
    assert trickle.ttft_s == pytest.approx(curve.point(1)[2])


def test_a_sequence_alone_decodes_at_the_bare_step():
    """A closed loop's ITL carries the prompts of the other sequences only: one client's decode is
    never interrupted by its own next prompt."""
    from gpuadvisor.validation.replay import _benchmark_curve

    mm, gpu, engine = burst_setup()
    _c, curve = _benchmark_curve(BenchReplica(mm, gpu, 1, "none", engine), 8)
    assert curve.itl(1) == pytest.approx(curve.step(1))
    per_prompt = curve.new_mean * curve.tau / mm.workload.output_tokens
    assert curve.itl(8) == pytest.approx(curve.step(8) + 7 * per_prompt)


def test_tensorrt_llm_reserves_each_requests_whole_answer():
    """TensorRT-LLM admits a request only with the pages of its prompt and its whole answer reserved
    (GUARANTEED_NO_EVICT); vLLM holds the pages a sequence has filled. A decode-heavy load therefore
    runs about half as many sequences at once on TensorRT-LLM from the same memory."""
    from gpuadvisor.core.estimation.memory import MemoryModel
    from gpuadvisor.core.estimation.serving import reserved_context
    from gpuadvisor.core.specs.constants import engine_for
    from gpuadvisor.core.specs.serving import batching_for
    from gpuadvisor.core.specs.workload import Workload
    from gpuadvisor.validation.replay import closed_loop

    gpus, models = catalogs()
    w = Workload(kind="inference", engine="vllm", prompt_tokens=128, output_tokens=2048)
    assert reserved_context(w, batching_for("vllm")) == 128 + 1024
    assert reserved_context(w, batching_for("tensorrt-llm")) == 128 + 2048
    running = {}
    for engine_id in ("vllm", "tensorrt-llm"):
        engine = engine_for(engine_id, "inference")
        we = Workload(kind="inference", engine=engine_id, prompt_tokens=128, output_tokens=2048)
        mm = MemoryModel(models.get("llama-3.1-8b"), we, prefill_chunk_tokens=engine.prefill_chunk_tokens)
        running[engine_id] = closed_loop(
            # An H100: vLLM's default of 1,024 sequences there is above what either holds.
            BenchReplica(mm, gpus.get("h100-sxm"), 1, "none", engine),
            1000,
        ).running
    assert max(running.values()) < 1024
    assert 0.45 < running["tensorrt-llm"] / running["vllm"] < 0.65


def test_a_v0_burst_is_host_bound_so_more_gpus_barely_help():
    """150 prompts at once on an 8B model: the V0 host's 100 us per sequence (15 ms a step) bounds
    the step, so tensor parallelism over 8 H200 instead of 2 adds little; the V1 engine's step
    keeps shrinking with the GPUs' weight stream."""
    from gpuadvisor.core.estimation.memory import MemoryModel
    from gpuadvisor.core.specs.constants import engine_for
    from gpuadvisor.core.specs.workload import Workload
    from gpuadvisor.validation.replay import burst

    gpus, models = catalogs()
    gain = {}
    for engine_id in ("vllm-v0", "vllm"):
        engine = engine_for(engine_id, "inference")
        w = Workload(kind="inference", engine=engine_id, prompt_tokens=247, output_tokens=361)
        mm = MemoryModel(models.get("llama-3.1-8b"), w, prefill_chunk_tokens=engine.prefill_chunk_tokens)
        speed = {
            n: burst(BenchReplica(mm, gpus.get("h200"), n, "tensor", engine), 150).tokens_per_s
            for n in (2, 8)
        }
        gain[engine_id] = speed[8] / speed[2]
        assert speed[8] > speed[2]
    assert gain["vllm-v0"] < 1.3 < gain["vllm"]


def test_a_finite_closed_loop_starts_with_a_wave_and_ends_draining():
    """A closed loop of N requests in all: its clients start together (a first wave) and its last
    answers drain. With many requests per client it tends to the steady loop; with N = c it is one
    wave; its first tokens lie between the wave's and the steady loop's."""
    from gpuadvisor.validation.replay import _benchmark_curve, _wave, burst, closed_loop, drain

    mm, gpu, engine = burst_setup(prompt=500, output=500)
    replica = BenchReplica(mm, gpu, 1, "none", engine)
    c = 16
    steady = closed_loop(replica, c)
    wave = burst(replica, c, 1000)
    five = closed_loop(replica, c, 5 * c, 1000)
    assert five.running == steady.running == c
    assert five.tokens_per_s < steady.tokens_per_s
    assert min(steady.ttft_s, wave.ttft_s) < five.ttft_s < max(steady.ttft_s, wave.ttft_s)
    many = closed_loop(replica, c, 2000 * c, 1000)
    assert many.tokens_per_s == pytest.approx(steady.tokens_per_s, rel=0.01)
    assert many.ttft_s == pytest.approx(steady.ttft_s, rel=0.01)
    # The figures as the docstring writes them.
    _c, curve = _benchmark_curve(replica, c)
    itl, _tail, ttft0, service = curve.point(c, closed=True)
    w_ttft, w_itl, _ = _wave(curve, c, 500, 1000)
    last, _ = drain(curve.step, c, 500, 1000)
    n = 5 * c
    assert five.tokens_per_s == pytest.approx(n * 500 / ((n - c) * service / c + ttft0 + last))
    assert five.ttft_s == pytest.approx((c * w_ttft + (n - c) * ttft0) / n)
    assert five.itl_s == pytest.approx((c * w_itl + (n - c) * itl) / n)
    # Equal answers: the last wave decodes O - 1 steps at batch c; no stated total: the steady loop.
    equal = closed_loop(replica, c, 5 * c)
    assert equal.tokens_per_s == pytest.approx(
        n * 500 / ((n - c) * service / c + ttft0 + 499 * curve.step(c))
    )
    assert closed_loop(replica, c, None, 1000) == steady


def test_past_a_full_chunk_of_prompts_a_step_the_itl_stops_rising_and_the_rest_wait():
    """A step holds at most the engine's chunk of tokens: the c running decodes and the prompts of
    the (c - 1) / O requests that replace the finished ones. Short answers to long prompts fill it
    at a low concurrency (vLLM's 2,048-token chunk, 2,000-token prompts, 4-token answers: at about
    5 sequences). Past that saturation every step is a full chunk: the ITL and the tokens/s stay
    those at the saturation, and the other requests wait for their prompts' turn, which is time
    before their first token (Little's law)."""
    from dataclasses import replace

    from gpuadvisor.validation.replay import _benchmark_curve, closed_loop

    mm, gpu, engine = burst_setup(prompt=2000, output=4, gpu="a100-80gb")
    engine = replace(engine, prefill_chunk_tokens=2048)
    replica = BenchReplica(mm, gpu, 1, "none", engine)
    _c, curve = _benchmark_curve(replica, 64)
    sat = curve.saturation
    assert sat == pytest.approx(1 + 2047 * 4 / (4 + 2000))
    # At the saturation the step's tokens are one chunk: c decodes and (c - 1) / O prompts.
    assert sat + (sat - 1) / 4 * 2000 == pytest.approx(2048)
    at = curve.point(sat, closed=True)
    for c in (16, 64):
        itl, tail, mean, service = curve.point(c, closed=True)
        assert itl == at[0] == pytest.approx(curve.itl(c), rel=1e-12)  # one closed form, two roundings
        assert c / service == pytest.approx(sat / at[3])  # the requests ended a second stay
        assert mean - at[2] == pytest.approx(service - at[3])  # the rest is waiting
        assert service > at[3]
        loop = closed_loop(replica, c)
        assert loop.tokens_per_s == pytest.approx(sat * 4 / at[3])
    # Below it nothing changes: the prompts' share still grows with the clients.
    below = curve.point(3, closed=True)[0]
    assert below == pytest.approx(curve.step(3) + 2 * curve.new_mean * curve.tau / 4)
    # A long answer never saturates a big chunk at the concurrencies an engine runs.
    mm2, gpu2, engine2 = burst_setup(prompt=500, output=500)
    assert _benchmark_curve(BenchReplica(mm2, gpu2, 1, "none", engine2), 64)[1].saturation > 64


def test_a_lone_clients_first_token_waits_a_step_only_where_the_engine_streams_a_step_late():
    """vLLM's V1 engine streams a token as the step that computed it ends: one client's first token
    is the per-request time and its prompt's pass. The V0 engine processes a step's output while
    the next step runs: the same client sees its first token one decode step later."""
    from gpuadvisor.core.estimation.memory import MemoryModel
    from gpuadvisor.core.specs.constants import engine_for
    from gpuadvisor.core.specs.workload import Workload
    from gpuadvisor.validation.replay import _benchmark_curve, closed_loop

    gpus, models = catalogs()
    firsts = {}
    for engine_id in ("vllm", "vllm-v0"):
        engine = engine_for(engine_id, "inference")
        w = Workload(kind="inference", engine=engine_id, prompt_tokens=512, output_tokens=128, batch_size=1)
        mm = MemoryModel(models.get("llama-3.1-8b"), w, prefill_chunk_tokens=engine.prefill_chunk_tokens)
        replica = BenchReplica(mm, gpus.get("h100-sxm"), 1, "none", engine, request_overhead_s=0.02)
        _c, curve = _benchmark_curve(replica, 1)
        lone = closed_loop(replica, 1)
        prefill = max(curve.ttft1, curve.step1)
        firsts[engine_id] = (lone.ttft_s, prefill, curve.step(1))
    v1, v0 = firsts["vllm"], firsts["vllm-v0"]
    assert v1[0] == pytest.approx(0.02 + v1[1])
    assert v0[0] == pytest.approx(0.02 + v0[1] + v0[2])
    assert v0[0] > v1[0]
