"""A plain, step-by-step reference of the engine ``core.estimation.serving_sim`` simulates.

It plays the same requests through the same engine one step at a time, with no event skipping and
no cleverness (slow: for tests only), so the simulation's event loop can be checked against it."""

from __future__ import annotations

import math
from collections import deque

import numpy as np

from gpuadvisor.core.estimation.serving_sim import (
    UNCHUNKED,
    Arrival,
    EngineLane,
    Load,
    _sends,
    request_overheads,
)


def reference(engine: EngineLane, load: Load, prompt, output, cached_share: float = 0.0, seed: int = 0):
    """(ttft, itl, e2e, queue, preemptions) per request, in request order."""
    n = len(prompt)
    prompt = [int(p) for p in prompt]
    output = [int(o) for o in output]
    new = [max(1, round(p * (1.0 - cached_share))) for p in prompt]
    tps = engine.tokens_per_step
    steps = [1 if o <= 1 else 1 + math.ceil((o - 1) / tps) for o in output]
    whole = engine.reserve_whole_context
    pool = engine.kv_pool_tokens
    hold = [min(p + (o if whole else 0), pool) for p, o in zip(prompt, output)]
    chunk = engine.chunk_tokens if math.isfinite(engine.chunk_tokens) else UNCHUNKED
    table = list(engine.step_s)

    def decode(nd: int) -> float:
        if nd <= 0:
            return 0.0
        if nd < len(table):
            return table[nd]
        return table[-1] + (nd - len(table) + 1) * max(table[-1] - table[-2], 0.0)

    send = [math.nan] * n
    arrive = [math.nan] * n
    oh = request_overheads(engine.request_overhead_s, n, seed)
    sends = _sends(load, n, seed)
    clients = load.clients if load.arrival == Arrival.CLOSED else 0
    if sends is not None:
        send = [float(x) for x in sends]
    else:
        for i in range(min(clients, n)):
            send[i] = 0.0
    for i in range(n):
        if not math.isnan(send[i]):
            arrive[i] = send[i] + oh[i]
    admit = [math.nan] * n
    first = [math.nan] * n
    end = [math.nan] * n
    waiting: deque[int] = deque()
    queued = set()
    running: list[int] = []  # oldest first
    left = list(new)
    after = [s - 1 for s in steps]
    decoding: dict[int, int] = {}  # request -> decode steps left
    made = [0.0] * n  # tokens written since its prefill (paged KV growth)
    kv = 0.0
    t = 0.0
    done = 0
    preemptions = 0
    # Tokens computed in the last step: shown as it ends, or after the next where the engine lags.
    show: list[tuple[int, bool]] = []
    lag = engine.token_lag_steps

    def flush(when: float) -> None:
        for i, last in show:
            if not last:
                if math.isnan(first[i]):
                    first[i] = when
                continue
            end[i] = when
            if clients:
                j = i + clients
                if j < n:
                    send[j] = when
                    arrive[j] = when + oh[j]
        show.clear()

    while done < n:
        for i in sorted(
            (i for i in range(n) if not math.isnan(arrive[i]) and i not in queued and math.isnan(end[i])),
            key=lambda i: (arrive[i], i),
        ):
            if arrive[i] <= t and i not in running:
                waiting.append(i)
                queued.add(i)
        while waiting:
            i = waiting[0]
            if len(running) >= engine.max_sequences or kv + hold[i] > pool:
                break
            waiting.popleft()
            if math.isnan(admit[i]):
                admit[i] = t
            running.append(i)
            kv += hold[i]
        if not running:
            if show:
                flush(t + engine.step1)
                continue
            future = [
                arrive[i]
                for i in range(n)
                if not math.isnan(arrive[i]) and math.isnan(end[i]) and i not in running
            ]
            t = min(x for x in future if x > t)
            continue
        nd = sum(1 for i in running if i in decoding)
        if not whole and nd and kv + nd * tps > pool:
            while kv + sum(1 for i in running if i in decoding) * tps > pool and len(running) > 1:
                v = running.pop()
                if v in decoding:
                    kv -= hold[v] + made[v]
                    hold[v] += made[v]
                    left[v] = new[v] + int(round(made[v]))
                    after[v] = decoding.pop(v) - 1
                    made[v] = 0.0
                else:
                    kv -= hold[v]
                    left[v] = new[v]
                preemptions += 1
                waiting.appendleft(v)
            nd = sum(1 for i in running if i in decoding)
        budget = max(chunk - nd, 0) if engine.mixed_prefill else chunk
        p = 0
        for i in running:
            if i not in decoding and budget > 0:
                take = min(budget, left[i])
                left[i] -= take
                budget -= take
                p += take
        alone = max(p * engine.prefill_alone_s_per_token, engine.step1) if p > 0 else 0.0
        if engine.mixed_prefill:
            d = max((decode(nd) + p * engine.prefill_s_per_token) if nd > 0 else 0.0, alone)
        else:
            d = decode(nd) + alone
        if show:
            flush(t + d)
        t += d
        finished = []
        for i in list(running):
            if i in decoding:
                decoding[i] -= 1
                if not whole:
                    kv += tps
                    made[i] += tps
                if decoding[i] == 0:
                    finished.append(i)
            elif left[i] == 0:
                show.append((i, False))
                made[i] = 0.0
                if after[i] <= 0:
                    finished.append(i)
                else:
                    decoding[i] = after[i]
        for i in finished:
            running.remove(i)
            decoding.pop(i, None)
            kv -= hold[i] + (0.0 if whole else made[i])
            show.append((i, True))
            done += 1
        if show and not lag:
            flush(t)
    if show:
        flush(t + engine.step1)
    s = np.array(send)
    ttft = np.array(first) - s
    e2e = np.array(end) - s
    o = np.array(output, float)
    itl = np.where(o > 1, (np.array(end) - np.array(first)) / np.maximum(o - 1, 1), np.nan)
    queue = np.array(admit) - np.array(arrive)
    return ttft, itl, e2e, queue, preemptions
