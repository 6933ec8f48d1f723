"""Serving at a stated load (issue 46): the load in clients or a rate, targets judged like deadlines,
speculative decoding and disaggregated prefill and decode, through the whole estimate."""

import json
import math
from functools import lru_cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuadvisor.core.errors import ScenarioError
from gpuadvisor.core.estimation.estimate import estimate
from gpuadvisor.core.estimation.serving_load import judge
from gpuadvisor.core.estimation.serving_sim import AtLoad, Percentiles, TargetStatus
from gpuadvisor.core.formats.scenario import load_scenario, loads_scenario, scenario_to_dict
from gpuadvisor.core.specs.constants import shipped_constants
from gpuadvisor.core.specs.hardware import load_gpu_catalog
from gpuadvisor.core.specs.presets import load_model_catalog
from gpuadvisor.core.specs.serving import ServingSpec
from gpuadvisor.core.specs.speculative import METHOD_DEFAULTS, SpeculativeMethod, tokens_per_step

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]
#: The simulation's sampling noise between two loads (as tests/core/test_serving_sim.py).
NOISE = {50: 0.05, 90: 0.05, 99: 0.12}


@lru_cache(maxsize=1)
def catalogs():
    return load_gpu_catalog(), load_model_catalog()


def scenario(
    serving,
    preset="llama-3.1-8b",
    gpu="h100-sxm",
    speculative=None,
    prompt=1000,
    output=200,
    gpu_count=None,
):
    workload = {
        "kind": "inference",
        "engine": "vllm",
        "prompt_tokens": prompt,
        "output_tokens": output,
        "serving": serving,
    }
    if speculative is not None:
        workload["speculative"] = speculative
    hardware = {"gpu": gpu} if gpu_count is None else {"gpu": gpu, "gpu_count": gpu_count}
    data = {"model": {"preset": preset}, "workload": workload, "hardware": hardware}
    return loads_scenario(json.dumps(data))


def serving_candidates(s):
    g, m = catalogs()
    est = estimate(s, g, m)
    return est, [c for c in est.candidates if c.serving is not None]


# --- the stated load ---------------------------------------------------------------------------------


def test_every_serving_candidate_reports_its_figures_at_the_load():
    est, cands = serving_candidates(scenario({"concurrency": 16}))
    assert cands
    for c in cands:
        point = est.serving_of(c).at_load
        assert point is not None
        d = point.to_dict()
        assert d["concurrency"] == 16
        for figure in ("ttft_s", "itl_ms", "e2e_s", "queue_s"):
            p = d[figure]
            assert p["p50"] <= p["p90"] <= p["p99"], (c.key, figure, p)
        assert d["output_tokens_per_s"] > 0 and d["requests_per_s"] > 0


@pytest.mark.parametrize("load", [{"concurrency": 8}, {"requests_per_s": 2.0}])
def test_without_targets_the_answer_is_the_operating_point(load):
    est, cands = serving_candidates(scenario(load))
    for c in cands:
        f = est.serving_of(c)
        assert f.status is None and f.replicas == 1
        assert f.at_load is not None
        if "concurrency" in load:
            assert f.concurrency_per_replica == min(load["concurrency"], f.plan.engine_max)


@pytest.mark.parametrize("clients", [1, 4, 16, 64])
def test_more_clients_never_lower_a_latency_or_raise_a_users_speed(clients):
    """One replica of each GPU layout, ``clients`` then twice as many: every percentile of the TTFT
    and the ITL rises (within the simulation's sampling noise) and a user's tokens/s falls."""

    def points(n):
        est, cands = serving_candidates(scenario({"concurrency": n}))
        return {c.key: est.serving_of(c).at_load for c in cands}

    low, high = points(clients), points(2 * clients)
    checked = 0
    for key, a in low.items():
        b = high.get(key)
        if a is None or b is None or b.replicas != a.replicas:
            continue
        checked += 1
        for figure in ("ttft_s", "itl_ms"):
            for q in (50, 90, 99):
                x, y = getattr(a, figure).at(q), getattr(b, figure).at(q)
                assert y >= x * (1.0 - NOISE[q]), (key, figure, q, x, y)
        # A user's speed: one token per ITL.
        assert 1.0 / b.itl_ms.p50 <= (1.0 / a.itl_ms.p50) * (1.0 + NOISE[50]), key
    assert checked > 0


# --- targets judged like deadlines ------------------------------------------------------------------


def _point(ttft_s: float, itl_ms: float) -> AtLoad:
    p = Percentiles(ttft_s * 0.5, ttft_s * 0.8, ttft_s)
    i = Percentiles(itl_ms * 0.8, itl_ms * 0.9, itl_ms)
    return AtLoad(1.0, 1.0, 10.0, p, i, p, Percentiles(0.0, 0.0, 0.0), 1)


@given(
    ttft=st.floats(0.01, 10.0),
    itl=st.floats(1.0, 500.0),
    limit_t=st.floats(0.01, 10.0),
    limit_i=st.floats(1.0, 500.0),
)
@settings(max_examples=200, deadline=None, database=None)
def test_meets_needs_the_far_end_of_the_range_likely_the_expected_value(ttft, itl, limit_t, limit_i):
    spec = ServingSpec(requests_per_s=1.0, ttft_s=limit_t, itl_ms=limit_i, percentile=99)
    point = _point(ttft, itl)
    status = judge(point, spec)
    k = shipped_constants()
    far = k.time_range(ttft, "ttft")[1] <= limit_t and k.time_range(itl, "itl")[1] <= limit_i
    expected = ttft <= limit_t and itl <= limit_i
    if far:
        assert status == TargetStatus.MEETS
    elif expected:
        assert status == TargetStatus.LIKELY
    else:
        assert status == TargetStatus.AT_RISK


# --- speculative decoding -----------------------------------------------------------------------------


def test_expected_tokens_per_step_is_leviathans():
    assert tokens_per_step(0.8, 4) == pytest.approx((1 - 0.8**5) / (1 - 0.8))
    assert tokens_per_step(0.0, 4) == 1.0
    assert tokens_per_step(1.0, 4) == 5.0
    for method, d in METHOD_DEFAULTS.items():
        assert 0 < d.acceptance_rate < 1 and d.source, method


@given(
    method=st.sampled_from(list(SpeculativeMethod)),
    acceptance=st.floats(0.3, 1.0),
    k=st.integers(1, 8),
)
@settings(max_examples=12, deadline=None, database=None)
def test_speculation_above_point_three_never_lowers_a_lone_users_speed(method, acceptance, k):
    spec = {"method": str(method), "num_tokens": k, "acceptance_rate": acceptance}
    if method == SpeculativeMethod.DRAFT:
        spec["draft_model"] = "llama-3.2-1b"
    _est, cands = serving_candidates(scenario({"concurrency": 1}, speculative=spec))
    gains = [c.serving.speculative for c in cands if c.serving.speculative is not None]
    assert gains
    for g in gains:
        assert g.batch1_tokens_per_s >= g.batch1_tokens_per_s_without * (1.0 - 1e-9)
        assert g.tokens_per_step == pytest.approx(tokens_per_step(acceptance, k))


def test_speculation_says_where_its_gain_vanishes():
    est, cands = serving_candidates(scenario({"concurrency": 4}, speculative={"method": "eagle"}))
    d = est.serving_of(cands[0]).to_dict()
    spec = d["speculative"]
    assert spec["speedup_at_batch1"] > 1.0
    assert spec["vanishes_at_concurrency"] is None or spec["vanishes_at_concurrency"] > 1


# --- disaggregated prefill and decode --------------------------------------------------------------


@pytest.mark.parametrize(
    "serving",
    [
        {"requests_per_s": 20.0, "ttft_s": 2.0, "itl_ms": 40.0, "disaggregated": True},
        {"concurrency": 64, "ttft_s": 2.0, "itl_ms": 40.0, "percentile": 99, "disaggregated": True},
    ],
)
def test_a_disaggregated_fleet_that_meets_has_both_latencies_within_target(serving):
    est, cands = serving_candidates(scenario(serving, gpu="h100-sxm", prompt=4000, output=300))
    spec = ServingSpec.from_value(serving)
    met = 0
    for c in cands:
        f = est.serving_of(c)
        assert f.disaggregated is not None, c.key  # every fleet, the leaders' and the others'
        d = f.to_dict()
        assert d["gpus_total"] == d["prefill_gpus"] + d["decode_gpus"]
        if f.status == "meets":
            met += 1
            q = spec.percentile
            assert f.at_load.ttft_s.at(q) <= spec.ttft_s + 1e-9
            assert f.at_load.itl_ms.at(q) <= spec.itl_ms + 1e-9
    assert met > 0


@pytest.mark.parametrize("hours", [24.0, 6.0])
@pytest.mark.parametrize("disaggregated", [False, True])
def test_monthly_cost_follows_gpus_times_price(hours, disaggregated):
    serving = {"requests_per_s": 10.0, "ttft_s": 1.0, "itl_ms": 40.0, "hours_per_day": hours}
    if disaggregated:
        serving["disaggregated"] = True
    est, cands = serving_candidates(scenario(serving, gpu="h100-sxm", prompt=2000, output=300))
    g, _ = catalogs()
    price = g.get("h100-sxm").cloud_usd_per_hour.expected
    for c in cands:
        f = est.serving_of(c)
        assert f.usd_per_month == pytest.approx(f.gpus_total * price * 730.0 * hours / 24.0)


# --- the scenario format ------------------------------------------------------------------------------


def test_the_new_keys_round_trip_and_old_files_still_load():
    s = scenario(
        {"requests_per_s": 3.0, "arrival": "burst", "ttft_s": 1.0, "itl_ms": 50.0, "disaggregated": True},
        speculative={"method": "draft", "draft_model": "llama-3.2-1b", "num_tokens": 4},
    )
    again = loads_scenario(json.dumps(scenario_to_dict(s)))
    assert again.workload.serving == s.workload.serving
    assert again.workload.speculative == s.workload.speculative
    clients = scenario({"concurrency": 12})
    d = scenario_to_dict(clients)["workload"]["serving"]
    assert d["concurrency"] == 12 and "requests_per_s" not in d and "ttft_s" not in d
    # A file written before the load keys existed: every target given, no new key written back.
    old = load_scenario(ROOT / "docs" / "examples" / "serving-20-replicas.json")
    assert set(scenario_to_dict(old)["workload"]["serving"]) <= {
        "requests_per_s",
        "ttft_s",
        "itl_ms",
        "percentile",
        "hours_per_day",
        "output_tokens_p90",
        "prompt_tokens_p90",
        "prefix_cache_hit_rate",
        "request_overhead_s",
    }


@pytest.mark.parametrize(
    ("serving", "field"),
    [
        ({"concurrency": 4, "requests_per_s": 1.0}, "workload.serving.requests_per_s"),
        ({"concurrency": 0}, "workload.serving.concurrency"),
        ({"concurrency": 4, "arrival": "burst"}, "workload.serving.arrival"),
        ({"requests_per_s": 1.0, "arrival": "flood"}, "workload.serving.arrival"),
        ({"requests_per_s": 1.0, "ttft_s": 1.0, "disaggregated": True}, "workload.serving.disaggregated"),
    ],
)
def test_bad_load_keys_name_the_field(serving, field):
    with pytest.raises(ScenarioError) as exc:
        scenario(serving)
    assert field in str(exc.value)


def test_speculative_keys_are_checked():
    for bad, field in (
        ({"method": "magic"}, "workload.speculative.method"),
        ({"method": "draft"}, "workload.speculative.draft_model"),
        ({"method": "eagle", "num_tokens": 0}, "workload.speculative.num_tokens"),
        ({"method": "eagle", "acceptance_rate": 1.5}, "workload.speculative.acceptance_rate"),
    ):
        with pytest.raises(ScenarioError) as exc:
            scenario({"concurrency": 1}, speculative=bad)
        assert field in str(exc.value), bad
    assert not math.isnan(tokens_per_step(0.5, 3))


# --- the planner's search for replicas ----------------------------------------------------------------


def _settled_leaders(est):
    return [c for c in est.best_per_gpu().values() if c.serving is not None]


@pytest.mark.parametrize("percentile", [90, 99])
def test_a_fleet_grown_by_the_simulation_is_the_fewest_replicas_judged_likely(percentile):
    """A leader the simulation had to grow beyond the closed form's fleet is the least one judged at
    least "likely": with one replica fewer (the same requests, the same concurrency) it is judged
    "at risk", not a multiple overshooting the need."""
    from gpuadvisor.core.estimation.serving_load import _job, _refit, _run, service_lengths

    serving = {"requests_per_s": 10.0, "ttft_s": 0.15, "itl_ms": 30.0, "percentile": percentile}
    s = scenario(serving, gpu="l40s")
    g, m = catalogs()
    est = estimate(s, g, m)
    spec = s.workload.serving
    grown = 0
    for c in est.candidates:
        f = c.serving
        if f is None or not f.settled or f.status not in ("meets", "likely"):
            continue
        closed = _refit(f, f.concurrency_per_replica, None)
        if f.replicas <= closed.replicas:
            continue
        grown += 1
        fewer = _refit(f, f.concurrency_per_replica, f.replicas - 1)
        (point,) = _run([_job(fewer)], service_lengths(s.workload, spec))
        assert judge(point, spec) == TargetStatus.AT_RISK, (c.key, f.replicas)
    assert grown, "these targets are tight enough that the simulation grows some fleet"


def test_no_unsettled_fleet_could_undercut_the_leader():
    """Sizing at the load only grows a fleet, so every closed-form fleet of a GPU type that ranks
    ahead of the leader must have been settled: the leader is the cheapest the simulation knows."""
    serving = {"requests_per_s": 1.0, "ttft_s": 0.25, "itl_ms": 13.0, "percentile": 95}
    est, cands = serving_candidates(scenario(serving, gpu="l40s"))
    leader = _settled_leaders(est)[0].serving
    assert leader.settled
    for c in cands:
        if not c.serving.settled and c.fits:
            assert (c.serving.order, c.serving.gpus_total) >= (leader.order, leader.gpus_total)


def test_a_target_with_no_room_to_queue_stops_the_search_and_says_why():
    """A TTFT target 1% above one request's own time at p99 leaves no room for a request to wait:
    the planner stops at MAX_IDLE_FACTOR times the replicas that would carry the load one request at
    a time, marks it at risk and says why in the user's words, instead of answering with hundreds of
    nearly idle replicas as if they served.
    Two GPUs per replica, whose layouts the simulation settles (the slowest layout's own time sets
    the target), and no time outside the engine (whose spread from request to request would make
    even an idle replica's 99th percentile miss such a target)."""
    QUIET = {"request_overhead_ms": 0}
    from gpuadvisor.core.estimation.serving import MAX_IDLE_FACTOR, MAX_REPLICAS
    from gpuadvisor.core.presentation.serving_text import fleet_detail, serving_summary

    g, m = catalogs()
    loose = estimate(
        scenario(
            {**QUIET, "requests_per_s": 0.5, "ttft_s": 10.0, "itl_ms": 40.0, "percentile": 99},
            gpu="l40s",
            gpu_count=2,
        ),
        g,
        m,
    )
    alone = {c.key: c.serving.ttft_alone_s for c in loose.candidates if c.serving is not None}
    key = max(alone, key=lambda k: alone[k])
    tight = scenario(
        {**QUIET, "requests_per_s": 0.5, "ttft_s": alone[key] * 1.01, "itl_ms": 40.0, "percentile": 99},
        gpu="l40s",
        gpu_count=2,
    )
    est = estimate(tight, g, m)
    stopped = [c for c in est.candidates if c.serving is not None and c.serving.stopped]
    assert stopped, "a target 1% above the idle TTFT at p99 must stop some fleet's search"
    for c in stopped:
        f = c.serving
        assert f.stopped == "headroom" and f.status == "at risk" and not f.meets_slo
        # Stopped at the cap: twenty times the replicas that would carry 0.5 requests/s back to back.
        alone = f.replica.point(1)[3]
        assert f.replicas >= min(MAX_REPLICAS, math.ceil(MAX_IDLE_FACTOR * 0.5 * alone)) > 1
        text = " ".join(line for _kind, line in fleet_detail(c, "vllm", est.serving_of(c)))
        assert "leaves no room for a request to wait" in text
    if est.recommended is None:
        assert (
            "no room" in serving_summary(est)
            or "cannot meet" in serving_summary(est)
            or "needed" in serving_summary(est)
        )


def test_an_idle_miss_is_worded_as_no_fleet_size_helping():
    from gpuadvisor.core.estimation.serving_sim import AtLoad, Percentiles
    from gpuadvisor.core.presentation.serving_text import stopped_phrase

    spec = ServingSpec(requests_per_s=1.0, ttft_s=0.2, itl_ms=40.0, percentile=95)
    p = Percentiles(0.3, 0.35, 0.4)
    idle = AtLoad(1.0, 0.5, 100.0, p, Percentiles(20.0, 22.0, 25.0), p, Percentiles(0.0, 0.0, 0.0), 1)
    g, m = catalogs()
    est, cands = serving_candidates(
        scenario({"requests_per_s": 1.0, "ttft_s": 2.0, "itl_ms": 40.0}, gpu="l40s")
    )
    f = cands[0].serving._replace(stopped="idle", idle=idle)
    text = stopped_phrase(f, spec)
    assert "even one request at a time on one replica" in text
    assert f"{idle.ttft_s.at(95):.2f} s to the first token (target 0.2 s)" in text
    assert "more replicas cannot meet it" in text and "ms between tokens" not in text
