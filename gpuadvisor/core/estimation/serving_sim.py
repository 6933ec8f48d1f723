"""A request-level simulation of continuous-batching engines: latency percentiles at a stated load.

The closed-form queue of :mod:`.serving` gives a replica's mean figures; this module gives their
distribution. It plays a stream of requests (prompt and output lengths drawn from a log-normal
fitted to the stated mean and 90th percentile) through one engine, step by step, on the same
step-time model (``serving.DecodeStep``, the roofline's prefill) and returns the percentiles of
the time to first token, the time between tokens, the whole request and the wait for admission.

**The engine.** Each engine step decodes one token for every running sequence and prefills
prompt tokens first come, first served:

- *admission*: a request waits until it has arrived, every earlier request has been admitted
  (first come, first served), the engine runs fewer than its sequence limit, and the KV pool
  holds it. A sequence holds ``P + O`` tokens of KV when the engine reserves a request's whole
  context on admission (TensorRT-LLM's default policy, llama.cpp's slots) and, when the pool is
  paged and filled as tokens are written (vLLM, SGLang), ``P + O / 2`` on average over its life;
- *chunked prefill*: a step carries at most ``chunk`` tokens; the decode tokens of the running
  sequences count against it where the engine mixes prompts into its decode batches
  (``EngineProfile.mixed_prefill``), so a step prefills ``chunk - decoding`` prompt tokens, and a
  step of its own where it does not (SGLang, vLLM's V0 engine);
- *step time*: ``max(step(n) + p tau, prefill_alone(p))`` for ``n`` decoding sequences and ``p``
  prompt tokens (mixed), ``step(n) + prefill_alone(p)`` otherwise, with ``step`` the replica's
  decode step, ``tau`` its prefill seconds per token in long chunks and ``prefill_alone(p) =
  max(p t_1, step(1))`` a prompt's own pass (``t_1`` the roofline's prefill time per token of one
  prompt); an idle engine waits for the next arrival;
- *preemption*: where the live KV cache of the running sequences (prompt plus the tokens written
  so far) outgrows the pool, the newest sequences are preempted; each is charged the
  recomputation of its prompt and half its answer as prefill work (vLLM's recompute policy);
- *tokens shown*: a token computed in one step reaches its client when that step ends (vLLM's V1
  engine core and SGLang's scheduler hand each step's tokens to a detokenizer process), or, where
  the engine processes a step's output while the next step runs (vLLM's V0 engine,
  ``EngineProfile.token_lag_steps`` 1), at the end of the next one: a lone token is then shown
  after a step of its own, a prompt's first token comes one step after its prefill and a
  closed-loop client sends its next request a step after its last token. The closed form has the
  same two structures (``TTFT0 = prefill`` and ``TTFT0 = prefill + ITL``);
- *prefix cache*: a share ``h`` of each prompt is found in the cache and not prefilled; its KV is
  still counted per request (shared pages are not credited, as in the planner);
- *time outside the engine*: a request reaches the engine its per-request time after it was sent
  (HTTP, the chat template, tokenization), drawn for each request between half and one and a half
  times the stack's mean (:func:`request_overheads`; no source states its spread), and is admitted
  at the next step boundary. Requests queue in the order they arrive.

**How it is computed.** The engine is played step by step, but only from event to event:
between two events (an arrival the engine can admit, a prompt's last chunk, a sequence's last
token, the KV pool filling up) every step is the same, so the loop jumps over them at once and a
run costs a few events per request, not one iteration per token. The loop itself is sequential
(each admission depends on every step before it); what can be vectorized is (the length and
arrival draws, the statistics, with numpy). Each lane's stream is drawn from the same seed, so two
GPUs are compared on the same requests and the same scenario always gives the same percentiles.
A vectorized alternative, a Jacobi iteration over all requests in step space, was tried and not
kept: exact for closed loops, it needed 50 and more passes for an open stream, whose mapping from
arrival times to steps drifts over a long run.

It refines the closed-form M/G/c queue (``serving.wait_at_percentile``) where that queue is
coarse: it has no independent servers (every sequence slows the shared step), the prompts of the
requests in flight queue for the same chunk budget, and the percentiles come from the lengths'
distribution rather than from an exponential tail.

References: Yu et al. 2022 (Orca, iteration-level scheduling); Kwon et al. 2023 (vLLM,
PagedAttention and preemption by recomputation); Agrawal et al. 2024 (Sarathi-Serve, chunked
prefill and its token budget); Lindley 1952 (the waiting-time recursion); Kiefer and Wolfowitz
1955 (first-come-first-served multi-server queues).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple

import numpy as np

from ..vocabulary import TargetStatus as _TargetStatus

#: The percentiles every result reports.
QUANTILES = (50, 90, 99)
#: Requests simulated per lane at a steady load, and how many of them are measured: the first
#: :data:`WARMUP_SHARE` start an empty engine and the last :data:`TAIL_SHARE` see it drain.
STEADY_REQUESTS = 1200
WARMUP_SHARE, TAIL_SHARE = 0.12, 0.08
#: The seed of every draw: the same scenario always gives the same percentiles.
SEED = 20261206
#: z of the 90th percentile of a normal distribution.
Z90 = 1.2815515655446004
#: Tokens a step carries when the engine sets no chunk (large enough never to bind).
UNCHUNKED = 1 << 40
#: A served rate below this share of the offered one marks a saturated engine.
SATURATED_SHARE = 0.97
#: The first pass's steps, as a multiple of the fluid balance's.
INITIAL_STRETCH = 1.5


class Arrival(StrEnum):
    """How requests reach a replica."""

    POISSON = "poisson"  # a Poisson stream at ``requests_per_s``
    BURST = "burst"  # bursty arrivals at ``requests_per_s``: gamma gaps of shape BURSTINESS
    CLOSED = "closed"  # ``clients`` clients, each sending its next request when the last ends
    ALL_AT_ONCE = "all_at_once"  # every request at time 0 (a benchmark's burst)
    PACED = "paced"  # one request every ``1 / requests_per_s`` s to at most ``clients`` workers


#: The shape of the gamma distribution of a bursty stream's gaps: vLLM's benchmark client draws
#: its gaps from a gamma distribution of shape ``burstiness`` (1: Poisson; below 1: burstier);
#: 0.25 gives gaps with a coefficient of variation of 2 (vllm-project/vllm
#: ``vllm/benchmarks/serve.py``, ``get_request``, argument ``--burstiness``).
BURSTINESS = 0.25


@dataclass(frozen=True, slots=True)
class Load:
    """The load one replica sees."""

    arrival: Arrival
    requests_per_s: float = 0.0  # POISSON, BURST, PACED
    clients: int = 0  # CLOSED, PACED (0: no cap)
    requests: int = 0  # requests in all (0: STEADY_REQUESTS, measured in the steady middle)
    #: Measure every request (a benchmark's figures), not only the steady middle.
    whole_run: bool = False

    @property
    def steady(self) -> bool:
        return not self.whole_run


@dataclass(frozen=True, slots=True)
class EngineLane:
    """One replica's engine, as the simulation sees it (times in seconds)."""

    #: The decode step with ``n`` sequences at index ``n`` (``step_s[0]`` unused), up to the
    #: most sequences the engine runs; a larger batch takes the last entry's slope.
    step_s: np.ndarray
    prefill_s_per_token: float  # tau: a prompt token's marginal time in a long chunk
    prefill_alone_s_per_token: float  # t_1: a prompt's own pass, per token
    mixed_prefill: bool  # prompts ride in the decode batches (else a pass of their own)
    chunk_tokens: float  # the step's token budget (math.inf: none)
    max_sequences: int
    kv_pool_tokens: float  # math.inf: no limit
    reserve_whole_context: bool  # a request reserves P + O tokens of KV on admission
    request_overhead_s: float = 0.0  # time outside the engine's steps, in every TTFT
    #: Tokens each decode step adds per sequence (speculative decoding; 1 without).
    tokens_per_step: float = 1.0
    #: Static batches (Transformers, AutoAWQ): a batch starts when the engine is idle, prefills
    #: together and returns when its longest answer ends.
    static: bool = False
    #: Steps between the step that computes a token and its client having it (0: at the end of
    #: that step; 1: at the end of the next, ``EngineProfile.token_lag_steps``).
    token_lag_steps: int = 0

    def __post_init__(self) -> None:
        if self.max_sequences < 1:
            raise ValueError("max_sequences must be at least 1")
        if self.token_lag_steps not in (0, 1):
            raise ValueError("token_lag_steps must be 0 or 1")

    @property
    def step1(self) -> float:
        return float(self.step_s[1])


@dataclass(frozen=True, slots=True)
class Lengths:
    """Prompt and output lengths of the simulated requests (tokens)."""

    prompt: np.ndarray
    output: np.ndarray
    #: Share of each prompt found in the prefix cache.
    cached_share: float = 0.0
    #: Prompt tokens each request prefills, where they are not ``prompt x (1 - cached_share)`` (a
    #: decode pool receives its prompts' KV cache and prefills none of it).
    new_tokens: np.ndarray | None = None


@dataclass(frozen=True, slots=True)
class Percentiles:
    """p50, p90 and p99 of one figure."""

    p50: float
    p90: float
    p99: float

    def at(self, percentile: int) -> float:
        """The value at ``percentile`` (50, 90, 95 or 99; 95 is interpolated between 90 and 99)."""
        if percentile <= 50:
            return self.p50
        if percentile <= 90:
            return self.p90
        if percentile >= 99:
            return self.p99
        return self.p90 + (self.p99 - self.p90) * (percentile - 90) / 9.0

    def scaled(self, factor: float) -> Percentiles:
        return Percentiles(self.p50 * factor, self.p90 * factor, self.p99 * factor)

    def to_dict(self, digits: int) -> dict[str, float | None]:
        return {f"p{q}": _round(getattr(self, f"p{q}"), digits) for q in QUANTILES}


def _round(x: float, digits: int) -> float | None:
    return round(x, digits) if math.isfinite(x) else None


@dataclass(frozen=True, slots=True)
class SimResult:
    """What one lane's simulation measured (times in seconds)."""

    ttft_s: Percentiles
    itl_s: Percentiles  # each request's mean time between its tokens
    e2e_s: Percentiles
    queue_s: Percentiles  # from arrival at the engine to admission
    mean_ttft_s: float
    mean_itl_s: float
    mean_e2e_s: float
    requests_per_s: float  # requests completed per second
    output_tokens_per_s: float
    concurrency: float  # requests in flight on average (Little's law)
    running: float  # sequences the engine runs on average
    saturated: bool  # the engine serves less than is offered: the queue grows without bound
    preempted: int  # preemptions (a request may be preempted more than once)
    n: int = 0  # requests measured
    #: The time between tokens averaged over every gap of every request (a benchmark's "mean ITL"),
    #: where ``mean_itl_s`` averages each request's own mean ("mean TPOT").
    itl_token_mean_s: float = math.nan


# --- lengths -------------------------------------------------------------------------------------
def lognormal_sigma(mean: float, p90: float | None) -> float:
    """sigma of a log-normal with this mean and 90th percentile (0 without a percentile or with
    ``p90 <= mean``): ``ln(p90 / mean) = z sigma - sigma^2 / 2``, the smaller root (the larger one
    is the same tail reached from a much smaller median), the vertex when there is none."""
    if p90 is None or p90 <= mean:
        return 0.0
    r = math.log(p90 / mean)
    disc = Z90 * Z90 - 2.0 * r
    return Z90 - math.sqrt(disc) if disc > 0 else Z90


def draw_lengths(
    mean: float, p90: float | None, n: int, rng: np.random.Generator, sigma: float | None = None
) -> np.ndarray:
    """``n`` lengths (whole tokens, at least 1) of a log-normal with this mean and 90th percentile
    (``sigma`` given: that spread); all equal to the mean without a spread. The draws are rescaled
    so that their own mean is the stated one."""
    s = lognormal_sigma(mean, p90) if sigma is None else sigma
    if s <= 0.0:
        return np.full(n, max(1, round(mean)), dtype=np.int64)
    x = np.exp(rng.standard_normal(n) * s)
    x *= mean / x.mean()
    return np.maximum(1, np.rint(x)).astype(np.int64)


# --- the engine, step by step ---------------------------------------------------------------------
def _sends(load: Load, n: int, seed: int) -> np.ndarray | None:
    """Send times of an open stream's requests (None: they follow from completions)."""
    if load.arrival == Arrival.ALL_AT_ONCE:
        return np.zeros(n)
    if load.arrival in (Arrival.POISSON, Arrival.BURST):
        rng = np.random.default_rng(seed + 1)  # the same stream whatever the lengths
        gaps = (
            rng.gamma(BURSTINESS, 1.0 / BURSTINESS, n)
            if load.arrival == Arrival.BURST
            else rng.exponential(1.0, n)
        )
        return np.cumsum(gaps) / load.requests_per_s
    return None


class _Run:
    """One lane's requests as they pass through the engine (times in seconds)."""

    __slots__ = ("send", "arrive", "admit", "first", "end", "preempted")

    def __init__(self, n: int):
        nan = math.nan
        self.send = [nan] * n
        self.arrive = [nan] * n
        self.admit = [nan] * n
        self.first = [nan] * n
        self.end = [nan] * n
        self.preempted = 0


def request_overheads(oh: float, n: int, seed: int) -> list[float]:
    """Each request's time outside the engine's steps (HTTP, the chat template and tokenization,
    the scheduler's next poll), uniform between half and one and a half times the mean ``oh``: it
    varies from request to request, which also keeps a closed loop's clients, who send as a step
    ends, from arriving at the same point of every step (with one fixed time a client's wait for
    the next step boundary, up to a step, would follow the step's length in a saw-tooth)."""
    if oh <= 0.0:
        return [0.0] * n
    draws: list[float] = (oh * (0.5 + np.random.default_rng(seed + 2).random(n))).tolist()
    return draws


def _enqueue(pending: deque[int], run: _Run, oh: list[float], j: int, when: float) -> None:
    """Request ``j``, sent at ``when``, queued for the engine by when it arrives (nearly always
    last: the scan from the end stops at once)."""
    arrive = run.arrive
    run.send[j] = when
    a = arrive[j] = when + oh[j]
    pos = len(pending)
    while pos and arrive[pending[pos - 1]] > a:
        pos -= 1
    pending.insert(pos, j)


def _clients(
    run: _Run, load: Load, n: int, seed: int, oh_mean: float
) -> tuple[deque[int], Callable[[list[tuple[int, bool]], float], None]]:
    """The clients' side of a lane: when each request is sent and arrives (``arrive = send +
    request overhead``), and how a finished request releases the next one. An open stream sends
    every request up front; a closed loop's ``clients`` each send their next request when their
    last one has been shown; a paced stream sends one every ``1 / rate`` s with at most
    ``clients`` outstanding.

    Returns the requests sent and not yet admitted, in the order they reach the engine (first
    come, first served: each request's own time outside the engine, :func:`request_overheads`,
    may let a later one arrive first), and ``show(tokens, when)``: the
    tokens computed in the last step reach their clients at ``when`` (a request's first token, or
    its last: the request ends and its client may send the next); it empties ``tokens``. A
    closure, not a method: the engine calls it at nearly every event."""
    first, end = run.first, run.end
    oh = request_overheads(oh_mean, n, seed)
    pending: deque[int] = deque()
    sends = _sends(load, n, seed)
    closed = load.arrival == Arrival.CLOSED
    paced = load.arrival == Arrival.PACED
    cap = load.clients if load.clients > 0 else n
    done_times: list[float] = []  # completion times in order (a paced client's permits)
    sent = 0
    if sends is not None:  # every request sent up front: sorted once by arrival
        for i in range(n):
            run.send[i] = float(sends[i])
            run.arrive[i] = run.send[i] + oh[i]
        pending.extend(sorted(range(n), key=run.arrive.__getitem__))
        sent = n
    elif closed:
        for i in range(min(cap, n)):
            _enqueue(pending, run, oh, i, 0.0)
        sent = min(cap, n)
    else:  # paced: one request every 1 / rate s, at most ``cap`` outstanding
        gap = 1.0 / load.requests_per_s
        while sent < min(cap, n):
            _enqueue(pending, run, oh, sent, sent * gap)
            sent += 1

    def show(tokens: list[tuple[int, bool]], when: float) -> None:
        nonlocal sent
        for i, last in tokens:
            if not last:
                if first[i] != first[i]:
                    first[i] = when
                continue
            end[i] = when
            if paced:
                done_times.append(when)
            if closed:
                if i + cap < n:
                    _enqueue(pending, run, oh, i + cap, when)
            elif paced and sent < n:
                gap = 1.0 / load.requests_per_s
                while sent < n and sent - cap < len(done_times):
                    _enqueue(pending, run, oh, sent, max(sent * gap, done_times[sent - cap]))
                    sent += 1
        tokens.clear()

    return pending, show


class _InEngine(NamedTuple):
    """What the engine keeps per request (lists indexed by request, changed in place)."""

    new: list[int]  # prompt tokens to prefill (those the prefix cache does not hold)
    hold: list[float]  # KV tokens held since admission (a preempted answer's tokens added)
    left: list[int]  # prompt tokens still to prefill (a preempted request recomputes its context)
    after: list[int]  # decode steps after the prefill's step
    grown_from: list[int]  # the step a sequence started decoding (its KV grows from there)
    alive: list[bool]  # admitted and not finished or preempted
    tokens_per_step: float  # KV tokens a decoding sequence writes per step
    pool: float  # the KV pool, tokens
    run: _Run


def _preempt(
    q: _InEngine,
    order: list[int],
    heap: list[tuple[int, int]],
    prefill_q: deque[int],
    pending: deque[int],
    k: int,
    kv: float,
    running: int,
) -> tuple[float, int]:
    """Preempt the newest sequences while the pool cannot take the next step's tokens (at least
    one sequence keeps running). A sequence still in its prompt drops its KV and is prefilled
    again; a decoding one returns with its prompt and its answer so far to recompute (vLLM's
    recompute policy). Each goes back to the front of ``pending``; ``heap`` is changed in place.
    Returns the KV tokens held and the sequences running after it."""
    tps, pool, hold, left, new, alive = q.tokens_per_step, q.pool, q.hold, q.left, q.new, q.alive
    while order and kv + len(heap) * tps > pool and len(heap) + len(prefill_q) > 1:
        v = order.pop()
        if not alive[v]:
            continue
        alive[v] = False
        running -= 1
        if v in prefill_q:  # its prompt's KV is dropped: prefilled again on its return
            prefill_q.remove(v)
            kv -= hold[v]
            left[v] = new[v]
        else:
            ek = next(x for x, j in heap if j == v)
            heap[:] = [(x, j) for x, j in heap if j != v]
            heapq.heapify(heap)
            made = (k - q.grown_from[v]) * tps
            kv -= hold[v] + made
            # Recomputed as a prompt when it returns (its answer so far included); that
            # pass writes its next token, then it has the rest of its steps to run.
            hold[v] += made
            left[v] = new[v] + int(round(made))
            q.after[v] = ek - k - 1
        q.run.preempted += 1
        pending.appendleft(v)
    return kv, running


def _step_table(e: EngineLane) -> tuple[list[float], int, float]:
    """The decode step as a list indexed by the sequences running, its last index, and the slope
    that extends it past the last (the table's last rise)."""
    table = [float(x) for x in e.step_s]
    top = len(table) - 1
    return table, top, (max(table[-1] - table[-2], 0.0) if top >= 2 else 0.0)


def _in_engine(e: EngineLane, prompt: list[int], new: list[int], steps: list[int], run: _Run) -> _InEngine:
    """A lane's per-request state before the first step. A request takes its prompt's KV on
    admission (its whole context where the engine reserves it); a drawn request longer than the
    whole pool runs alone (an engine would refuse it: its tail is the length draw's, not the
    service's)."""
    tps, pool = e.tokens_per_step, e.kv_pool_tokens
    outputs = [max(1, round(1 + (s - 1) * tps)) if s > 1 else 1 for s in steps]
    whole = e.reserve_whole_context
    hold = [min(p + (o if whole else 0), pool) for p, o in zip(prompt, outputs)]
    n = len(prompt)
    return _InEngine(new, hold, list(new), [s - 1 for s in steps], [0] * n, [False] * n, tps, pool, run)


# C901: the step's branches stay inline (a call per step costs about 5% of a run); 120 lines.
def _play(e: EngineLane, load: Load, prompt: list[int], new: list[int], steps: list[int], seed: int) -> _Run:  # noqa: C901
    """Play one lane's requests through its continuous-batching engine from event to event (an
    arrival the engine can admit, a prompt's last chunk, a sequence's last token, the pool filling
    up): the steps between two are the same, so the loop jumps over them at once. Exact for the
    engine of the module docstring (``tests/core/serving_reference.py`` checks it step by step).
    The clients are :func:`_clients`, a preemption :func:`_preempt`; the step stays in one piece
    here, since a function call per step costs about 5% of a run."""
    n = len(prompt)
    run = _Run(n)
    table, top, slope = _step_table(e)
    tau, alone_rate, step1 = e.prefill_s_per_token, e.prefill_alone_s_per_token, e.step1
    mixed, lag = e.mixed_prefill, e.token_lag_steps > 0  # lag: tokens shown a step late
    chunk = int(e.chunk_tokens) if math.isfinite(e.chunk_tokens) else UNCHUNKED
    cmax, pool, whole, tps = e.max_sequences, e.kv_pool_tokens, e.reserve_whole_context, e.tokens_per_step
    lane = _in_engine(e, prompt, new, steps, run)
    hold, left, after, grown_from, alive = lane.hold, lane.left, lane.after, lane.grown_from, lane.alive
    pending, show_at = _clients(run, load, n, seed, e.request_overhead_s)
    arrive, admit = run.arrive, run.admit
    prefill_q: deque[int] = deque()
    heap: list[tuple[int, int]] = []  # (the step its last token ends, request)
    order: list[int] = []  # admitted, oldest first (preemption takes the newest)
    kv, t = 0.0, 0.0
    running = done = k = 0  # k: steps run
    show: list[tuple[int, bool]] = []  # tokens computed: shown as their step ends (lagging: the next)
    done_now: list[int] = []

    while done < n:
        # Admit the waiting requests that have arrived, first come first served.
        while pending:
            i = pending[0]
            if arrive[i] > t or running >= cmax or kv + hold[i] > pool:
                break
            pending.popleft()
            if admit[i] != admit[i]:  # first admission (not a preempted request's return)
                admit[i] = t
            prefill_q.append(i)
            alive[i] = True
            if not whole:
                order.append(i)
            running += 1
            kv += hold[i]
        nd = len(heap)
        if nd == 0 and not prefill_q:
            if show:  # the last tokens computed are shown after a step of their own
                show_at(show, t + step1)
                continue
            if not pending:
                break  # nothing left that can arrive
            nxt = arrive[pending[0]]
            if nxt <= t:
                raise ValueError("a request needs more KV cache than the whole pool")
            t = nxt
            continue
        # Preempt the newest sequences while the pool cannot take the next step's tokens.
        if not whole and nd and kv + nd * tps > pool:
            kv, running = _preempt(lane, order, heap, prefill_q, pending, k, kv, running)
            nd = len(heap)
        # This step's prompt tokens, first come first served within its token budget: the full
        # chunks of a head prompt longer than the budget (``m`` steps of them, taken after them
        # as ``m`` may shrink), or the heads that fit, taken now (prompts in ``done_now``).
        budget = (chunk - nd) if mixed else chunk
        p = 0
        m = 1
        big = False
        if prefill_q and budget > 0:
            if left[prefill_q[0]] > budget:
                p, m, big = budget, left[prefill_q[0]] // budget, True
            else:
                while prefill_q and p < budget:
                    i = prefill_q[0]
                    take = left[i] if left[i] < budget - p else budget - p
                    left[i] -= take
                    p += take
                    if left[i] > 0:
                        break
                    done_now.append(prefill_q.popleft())
        dstep = (table[nd] if nd <= top else table[top] + (nd - top) * slope) if nd else 0.0
        d = dstep
        if p:  # mixed: max(step(n) + p tau, the prompt's own pass); else step(n) + its own pass
            alone = p * alone_rate if p * alone_rate > step1 else step1
            d = (dstep + p * tau if dstep + p * tau > alone else alone) if mixed else dstep + alone
        if show:
            show_at(show, t + d)
        if nd:
            if not p or heap[0][0] - k < m:
                m = heap[0][0] - k
            if not whole and tps * nd * m + kv > pool:
                m = max(1, min(m, int((pool - kv) // (tps * nd))))
        if pending and running < cmax and kv + hold[pending[0]] <= pool:  # the next admission
            wait = arrive[pending[0]] - t
            steps_to = math.ceil(wait / d) if wait > 0 and d > 0 else 1
            if steps_to < m:
                m = steps_to
        t += m * d
        k += m
        if not whole:
            kv += tps * nd * m
        if big and left[prefill_q[0]] <= m * budget:  # the head's last chunk ran
            left[prefill_q[0]] = 0
            done_now.append(prefill_q.popleft())
        elif big:
            left[prefill_q[0]] -= m * budget
        for i in done_now:  # prompts that finished: their first token, then their decode steps
            show.append((i, False))
            grown_from[i] = k
            heapq.heappush(heap, (k + after[i] if after[i] > 0 else k, i))
        done_now.clear()
        # Sequences whose last token this was.
        while heap and heap[0][0] <= k:
            _ek, i = heapq.heappop(heap)
            show.append((i, True))
            alive[i] = False
            running -= 1
            kv -= hold[i] + (0 if whole else (k - grown_from[i]) * tps)
            done += 1
        if show and not lag:  # shown as the step ends
            show_at(show, t)
    if show:
        show_at(show, t + step1)
    return run


def _play_static(e: EngineLane, load: Load, new: list[int], steps: list[int], seed: int) -> _Run:
    """Static batches: when the engine is idle it takes up to its sequence limit of the requests
    that have arrived, prefills them in one pass (``max(tokens tau, the mean prompt's own pass)``),
    and decodes ``step(batch)`` per token until the longest answer ends, when the whole batch
    returns (the first token is the prefill's; where the engine lags a step, every token is shown a
    step later)."""
    n = len(new)
    run = _Run(n)
    sends = _sends(load, n, seed)
    closed = load.arrival == Arrival.CLOSED
    cap = load.clients if load.clients > 0 else n
    oh = e.request_overhead_s  # one fixed time: a batch starts when the engine is idle, no step to meet
    table, top, slope = _step_table(e)
    pending: deque[int] = deque()
    if sends is not None:
        for i in range(n):
            run.send[i], run.arrive[i] = float(sends[i]), float(sends[i]) + oh
        pending.extend(range(n))
    else:  # a closed loop (a paced client is taken as one too)
        for i in range(min(cap, n)):
            run.send[i], run.arrive[i] = 0.0, oh
            pending.append(i)
    t = 0.0
    done = 0
    while done < n and pending:
        t = max(t, run.arrive[pending[0]])
        batch: list[int] = []
        while pending and len(batch) < e.max_sequences and run.arrive[pending[0]] <= t:
            batch.append(pending.popleft())
        b = len(batch)
        tokens = sum(new[i] for i in batch)
        prefill = max(tokens * e.prefill_s_per_token, tokens / b * e.prefill_alone_s_per_token, e.step1)
        step = table[b] if b <= top else table[top] + (b - top) * slope
        late = step * e.token_lag_steps  # a lagging engine shows each token a step later
        first = t + prefill + late
        t = t + prefill + (max(steps[i] for i in batch) - 1) * step
        shown = t + late
        for i in batch:
            run.admit[i], run.first[i], run.end[i] = run.arrive[i], first, shown
            if closed and i + cap < n:
                j = i + cap
                run.send[j], run.arrive[j] = shown, shown + oh
                pending.append(j)
        done += b
    return run


def simulate(
    engines: Sequence[EngineLane],
    loads: Sequence[Load],
    lengths: Sequence[Lengths],
    seed: int = SEED,
) -> list[SimResult]:
    """Simulate each lane (an engine, its load and its requests' lengths) and measure it."""
    if not (len(engines) == len(loads) == len(lengths)):
        raise ValueError("one load and one set of lengths per engine")
    out = []
    for e, load, ln in zip(engines, loads, lengths):
        prompt = np.asarray(ln.prompt, dtype=np.int64)
        output = np.asarray(ln.output, dtype=np.int64)
        if ln.new_tokens is not None:
            new = np.maximum(1, np.asarray(ln.new_tokens, dtype=np.int64))
        else:
            new = np.maximum(1, np.rint(prompt * (1.0 - ln.cached_share))).astype(np.int64)
        # Decode steps, the prefill's step (the first token) included.
        steps = np.where(output <= 1, 1, 1 + np.ceil((output - 1) / e.tokens_per_step)).astype(np.int64)
        if e.static:
            run = _play_static(e, load, new.tolist(), steps.tolist(), seed)
        else:
            run = _play(e, load, prompt.tolist(), new.tolist(), steps.tolist(), seed)
        out.append(_measure(load, run, output.astype(np.float64)))
    return out


def _measure(load: Load, run: _Run, o_tok: np.ndarray) -> SimResult:
    """Percentiles and rates of one lane's run: over the steady middle (the first and last requests,
    which meet a filling and a draining engine, left out), or over every request of a benchmark."""
    n = o_tok.size
    t_send, t = np.asarray(run.send), np.asarray(run.arrive)
    t_admit, t_first, t_end = np.asarray(run.admit), np.asarray(run.first), np.asarray(run.end)
    if load.steady:
        lo, hi = int(n * WARMUP_SHARE), n - int(n * TAIL_SHARE)
    else:
        lo, hi = 0, n
    sl = slice(lo, max(hi, lo + 1))
    ttft = t_first - t_send
    e2e = t_end - t_send
    with np.errstate(divide="ignore", invalid="ignore"):
        itl = np.where(o_tok > 1, (t_end - t_first) / np.maximum(o_tok - 1.0, 1.0), np.nan)
    queue = t_admit - t
    if load.whole_run:
        span = float(np.nanmax(t_end) - np.nanmin(t_send))
        req_rate = n / span if span > 0 else math.inf
        tok_rate = float(o_tok.sum()) / span if span > 0 else math.inf
    else:
        t0, t1 = float(t_send[lo]), float(t_send[max(hi - 1, lo)])
        window = t1 - t0
        inside = (t_end >= t0) & (t_end <= t1)
        if window > 0:
            req_rate = float(inside.sum()) / window
            tok_rate = float(o_tok[inside].sum()) / window
        else:
            req_rate = tok_rate = math.inf
    offered = load.requests_per_s if load.arrival in (Arrival.POISSON, Arrival.BURST) else 0.0
    saturated = bool(offered > 0 and req_rate < SATURATED_SHARE * offered)

    def pct(x: np.ndarray) -> Percentiles:
        v = x[sl]
        v = v[np.isfinite(v)]
        if not v.size:
            return Percentiles(math.nan, math.nan, math.nan)
        p = np.percentile(v, QUANTILES)
        return Percentiles(float(p[0]), float(p[1]), float(p[2]))

    itl_v = itl[sl]
    mean_e2e = float(np.mean(e2e[sl]))
    return SimResult(
        ttft_s=pct(ttft),
        itl_s=pct(itl),
        e2e_s=pct(e2e),
        queue_s=pct(queue),
        mean_ttft_s=float(np.mean(ttft[sl])),
        mean_itl_s=float(np.nanmean(itl_v)) if np.isfinite(itl_v).any() else math.nan,
        mean_e2e_s=mean_e2e,
        requests_per_s=req_rate,
        output_tokens_per_s=tok_rate,
        concurrency=req_rate * mean_e2e,
        running=req_rate * float(np.mean((t_end - t_admit)[sl])),
        saturated=saturated,
        preempted=run.preempted,
        n=max(hi, lo + 1) - lo,
        itl_token_mean_s=_token_mean(t_first[sl], t_end[sl], o_tok[sl]),
    )


def _token_mean(first: np.ndarray, end: np.ndarray, out: np.ndarray) -> float:
    """Every gap between two tokens of every request, averaged."""
    gaps = np.maximum(out - 1.0, 0.0)
    total = float(gaps.sum())
    return float(np.sum(end - first)) / total if total > 0 else math.nan


# --- a service's figures at its load -------------------------------------------------------------
#: How a latency target is met (:class:`~gpuadvisor.core.vocabulary.TargetStatus`, importable here too).
TargetStatus = _TargetStatus


@dataclass(frozen=True, slots=True)
class AtLoad:
    """A service's figures at its load (the JSON's ``serving.at_load``): the fleet's rates and
    requests in flight, and the latencies a request sees, as percentiles (times in seconds, the
    ITL in milliseconds)."""

    concurrency: float  # requests in flight in the fleet on average (a closed loop: its clients)
    requests_per_s: float
    output_tokens_per_s: float
    ttft_s: Percentiles
    itl_ms: Percentiles
    e2e_s: Percentiles
    queue_s: Percentiles
    replicas: int
    saturated: bool = False
    preempted_share: float = 0.0  # preemptions per request

    def to_dict(self) -> dict[str, object]:
        return {
            "concurrency": round(self.concurrency, 2),
            "requests_per_s": round(self.requests_per_s, 4),
            "output_tokens_per_s": round(self.output_tokens_per_s, 2),
            "ttft_s": self.ttft_s.to_dict(4),
            "itl_ms": self.itl_ms.to_dict(3),
            "e2e_s": self.e2e_s.to_dict(3),
            "queue_s": self.queue_s.to_dict(4),
            "replicas": self.replicas,
            "saturated": self.saturated,
            "preempted_per_request": round(self.preempted_share, 4),
        }


def at_load(result: SimResult, replicas: int, clients: int | None = None) -> AtLoad:
    """One replica's simulation as the fleet's figures (``replicas`` replicas sharing the load)."""
    served = result.requests_per_s if math.isfinite(result.requests_per_s) else 0.0
    return AtLoad(
        concurrency=float(clients) if clients is not None else result.concurrency * replicas,
        requests_per_s=served * replicas,
        output_tokens_per_s=(result.output_tokens_per_s if math.isfinite(result.output_tokens_per_s) else 0.0)
        * replicas,
        ttft_s=result.ttft_s,
        itl_ms=result.itl_s.scaled(1000.0),
        e2e_s=result.e2e_s,
        queue_s=result.queue_s,
        replicas=replicas,
        saturated=result.saturated,
        preempted_share=result.preempted / max(1, result.n),
    )
