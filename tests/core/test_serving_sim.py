"""The request-level simulation of a continuous-batching engine (core/estimation/serving_sim.py):
its event loop against a plain step-by-step reference, its determinism, and its properties
(percentiles in order, more load never faster)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from serving_reference import reference

from gpuadvisor.core.estimation import serving_sim as sim
from gpuadvisor.core.estimation.serving_sim import Arrival, EngineLane, Lengths, Load, simulate


def lane(
    cmax=256,
    pool=math.inf,
    mixed=True,
    chunk=2048,
    whole=False,
    overhead=0.03,
    s0=0.010,
    s1=0.0001,
    tps=1.0,
    static=False,
    lag=0,
):
    b = np.arange(cmax + 1, dtype=float)
    return EngineLane(s0 + s1 * b, 2e-5, 4e-5, mixed, chunk, cmax, pool, whole, overhead, tps, static, lag)


def lengths(n=300, prompt=(1000, 2000), output=(200, 400)):
    rng = np.random.default_rng(1)
    return sim.draw_lengths(*prompt, n, rng), sim.draw_lengths(*output, n, np.random.default_rng(2))


CASES = {
    "poisson, light": (lane(), Load(Arrival.POISSON, requests_per_s=2.0)),
    "poisson, busy": (lane(), Load(Arrival.POISSON, requests_per_s=12.0)),
    "sequence limit": (lane(cmax=24), Load(Arrival.POISSON, requests_per_s=8.0)),
    "paged pool, preemptions": (lane(pool=40_000), Load(Arrival.POISSON, requests_per_s=8.0)),
    "reserved pool": (lane(pool=60_000, whole=True), Load(Arrival.POISSON, requests_per_s=6.0)),
    "prefill passes of their own": (lane(mixed=False, chunk=8192), Load(Arrival.POISSON, requests_per_s=5.0)),
    "no chunk": (lane(chunk=math.inf), Load(Arrival.POISSON, requests_per_s=6.0)),
    "closed loop of 4": (lane(), Load(Arrival.CLOSED, clients=4)),
    "closed loop of 48": (lane(), Load(Arrival.CLOSED, clients=48)),
    "everything at once": (lane(), Load(Arrival.ALL_AT_ONCE, whole_run=True)),
    "bursty rate": (lane(), Load(Arrival.BURST, requests_per_s=6.0)),
    "speculative": (lane(tps=2.6, s1=0.0004), Load(Arrival.POISSON, requests_per_s=6.0)),
    # vLLM's V0 engine: every token shown a step after it was computed.
    "tokens a step late, poisson": (lane(lag=1), Load(Arrival.POISSON, requests_per_s=8.0)),
    "tokens a step late, prefill passes": (
        lane(mixed=False, lag=1),
        Load(Arrival.POISSON, requests_per_s=5.0),
    ),
    "tokens a step late, closed loop": (lane(lag=1), Load(Arrival.CLOSED, clients=16)),
    "tokens a step late, preemptions": (lane(pool=40_000, lag=1), Load(Arrival.POISSON, requests_per_s=8.0)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_event_loop_plays_the_engine_exactly_as_a_plain_step_loop(name):
    engine, load = CASES[name]
    p, o = lengths()
    cached = 0.25 if name == "poisson, light" else 0.0
    got = simulate([engine], [load], [Lengths(p, o, cached)])[0]
    ttft, itl, e2e, queue, preempted = reference(engine, load, p, o, cached, seed=sim.SEED)
    n = len(p)
    sl = slice(0, n) if load.whole_run else slice(int(n * sim.WARMUP_SHARE), n - int(n * sim.TAIL_SHARE))

    def pct(x):
        v = x[sl]
        return np.percentile(v[np.isfinite(v)], sim.QUANTILES)

    for ours, theirs in (
        (got.ttft_s, pct(ttft)),
        (got.itl_s, pct(itl)),
        (got.e2e_s, pct(e2e)),
        (got.queue_s, pct(queue)),
    ):
        assert [ours.p50, ours.p90, ours.p99] == pytest.approx(list(theirs), rel=1e-9, abs=1e-9)
    assert got.preempted == preempted
    if name == "paged pool, preemptions":
        assert preempted > 0  # the case exercises preemption


def test_the_same_scenario_always_gives_the_same_percentiles():
    p, o = lengths(400)
    engine, load = CASES["poisson, busy"]
    a = simulate([engine], [load], [Lengths(p, o)])[0]
    b = simulate([engine, lane()], [load, load], [Lengths(p, o)] * 2)
    assert a == b[0] == b[1]


@settings(max_examples=40, deadline=None)
@given(
    s0=st.floats(0.002, 0.05),
    s1=st.floats(0.0, 0.002),
    rate=st.floats(0.2, 30.0),
    cmax=st.integers(1, 300),
    mixed=st.booleans(),
    chunk=st.sampled_from([512, 2048, 8192, math.inf]),
)
def test_percentiles_are_in_order(s0, s1, rate, cmax, mixed, chunk):
    p, o = lengths(200)
    got = simulate(
        [lane(cmax=cmax, s0=s0, s1=s1, mixed=mixed, chunk=chunk)],
        [Load(Arrival.POISSON, requests_per_s=rate)],
        [Lengths(p, o)],
    )[0]
    for pc in (got.ttft_s, got.itl_s, got.e2e_s, got.queue_s):
        assert pc.p50 <= pc.p90 <= pc.p99


LOAD_ENGINES = {
    "memory bound": lane(),
    "compute bound": lane(s0=0.004, s1=0.0008),
    "sequence limit": lane(cmax=32),
    "paged pool": lane(pool=50_000),
    "passes of their own": lane(mixed=False, chunk=8192),
}


#: How far a percentile may fall between two loads through sampling alone: a request's first token
#: waits for the next step to start, a phase that moves with the load, and a percentile is read
#: from about a thousand requests (the 99th from its ten slowest). Measured: at most 9% at p99 and
#: 3% at p50 over these engines (2026-12-06).
NOISE = {"p50": 0.05, "p90": 0.05, "p99": 0.12}


@pytest.mark.parametrize("name", list(LOAD_ENGINES))
def test_more_load_never_lowers_a_latency_or_raises_a_users_speed(name):
    """A higher rate of the same requests (the same seed, arrivals closer together) and a closed
    loop with more clients never give a shorter time to first token, between tokens or for the
    whole request beyond the sampling noise of the percentile (:data:`NOISE`); the service's own
    curves against the load (serving_load.load_curves) are monotone outright."""
    engine = LOAD_ENGINES[name]
    p, o = lengths(sim.STEADY_REQUESTS)
    rates = [0.5, 1, 2, 4, 6, 8, 10, 12, 14]
    loads = [Load(Arrival.POISSON, requests_per_s=r) for r in rates]
    loads += [Load(Arrival.CLOSED, clients=c) for c in (1, 2, 4, 8, 16, 32, 64)]
    got = simulate([engine] * len(loads), loads, [Lengths(p, o)] * len(loads))
    for series in (got[: len(rates)], got[len(rates) :]):
        for a, b in zip(series, series[1:]):
            for fa, fb in ((a.ttft_s, b.ttft_s), (a.itl_s, b.itl_s), (a.e2e_s, b.e2e_s)):
                for q in ("p50", "p90", "p99"):
                    assert getattr(fb, q) >= getattr(fa, q) * (1 - NOISE[q]), (name, q)


def test_a_lone_clients_tokens_come_a_step_later_where_the_engine_lags_a_step():
    """One client, fixed lengths and no time outside the engine: each request's first token is its
    prompt's own pass where tokens are streamed as their step ends, one decode step more where the
    engine shows them a step late; the tokens after it are a step apart either way."""
    p, o = np.full(40, 1000), np.full(40, 50)
    load = Load(Arrival.CLOSED, clients=1)
    now, late = (simulate([lane(lag=lag, overhead=0.0)], [load], [Lengths(p, o)])[0] for lag in (0, 1))
    step1 = lane().step1
    prompt_pass = 1000 * 4e-5
    assert now.ttft_s.p50 == pytest.approx(prompt_pass)
    assert late.ttft_s.p50 == pytest.approx(prompt_pass + step1)
    assert now.itl_s.p50 == pytest.approx(step1) == pytest.approx(late.itl_s.p50)
    assert late.output_tokens_per_s < now.output_tokens_per_s


def test_each_requests_time_outside_the_engine_varies_about_its_mean():
    """The per-request time is drawn for each request, half to one and a half times its mean, the
    same draws for the same seed: one client's first tokens spread by about the mean either side of
    the mean's, and their mean is the mean's."""
    oh = sim.request_overheads(0.04, 4000, sim.SEED)
    assert min(oh) >= 0.02 and max(oh) <= 0.06 and np.mean(oh) == pytest.approx(0.04, rel=0.01)
    assert oh == sim.request_overheads(0.04, 4000, sim.SEED)
    assert sim.request_overheads(0.0, 3, sim.SEED) == [0.0, 0.0, 0.0]
    p, o = np.full(400, 1000), np.full(400, 50)
    got = simulate([lane(overhead=0.04)], [Load(Arrival.CLOSED, clients=1)], [Lengths(p, o)])[0]
    assert got.mean_ttft_s == pytest.approx(0.04 + 1000 * 4e-5, rel=0.02)
    assert got.ttft_s.p99 - got.ttft_s.p50 > 0.015
