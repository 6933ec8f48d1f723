"""Disaggregated prefill and decode (``serving.disaggregated``): a prefill pool sized to the TTFT
target, a decode pool sized to the ITL target, and the KV cache carried between them.

Each pool is made of instances of the candidate's layout (GPU x count x split). A request is
prefilled by a prefill instance (its first token), its KV cache is carried to a decode instance,
which then decodes the rest of the answer without any prompt in its steps (DistServe, Zhong et al.
2024; Splitwise, Patel et al. 2024)::

    TTFT = wait + prefill (prefill pool)  + transfer + wait for a decode slot + one decode step
    ITL  = the decode pool's step at its batch (no prompt interference)
    transfer = P x KV bytes per token / (link bandwidth x GPUs per instance) + link latency

The link is the GPUs' own (NVLink or PCIe) when both instances fit in one node
(``2 x GPUs per instance <= gpus_per_node``), else the network (``performance.link``).

**Sizing.** The decode pool runs at most ``c_d`` sequences an instance, the largest batch whose
step is within the ITL target (and whose KV cache fits); the prefill pool starts at the instances
whose prompt throughput (``chunk / max(chunk tau, prefill_alone(chunk))`` tokens a second) carries
the prompts at 70% busy, the decode pool at those that carry the answers at 85%. Both are then
simulated (:mod:`.serving_sim`: a prefill instance as an engine whose requests end at their first
token, a decode instance as one whose prompts arrive already in its KV cache) and grown, at most
:data:`MAX_ROUNDS` times, until the requested percentile of the TTFT and of the ITL is within its
target. The candidate reports both pools' GPUs and the saving against the one pool the planner
sizes for the same targets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .serving_sim import AtLoad, Percentiles

#: Sizing rounds at most.
MAX_ROUNDS = 5
#: Utilizations the pools start from.
PREFILL_START_BUSY, DECODE_START_BUSY = 0.7, 0.85


@dataclass(frozen=True, slots=True)
class DisaggregatedPlan:
    """Two pools of instances of one layout, and what they serve."""

    prefill_instances: int
    decode_instances: int
    gpus_per_instance: int
    decode_concurrency: int  # sequences per decode instance at most
    kv_transfer_s: float  # carrying a mean prompt's KV cache
    link: str
    colocated_gpus: int  # one pool's GPUs for the same targets
    at_load: AtLoad
    status: str | None
    usd_per_month: float | None = None
    colocated_usd_per_month: float | None = None

    @property
    def prefill_gpus(self) -> int:
        return self.prefill_instances * self.gpus_per_instance

    @property
    def decode_gpus(self) -> int:
        return self.decode_instances * self.gpus_per_instance

    @property
    def gpus_total(self) -> int:
        return self.prefill_gpus + self.decode_gpus

    @property
    def saving_gpus(self) -> int:
        """GPUs saved against one pool (negative: disaggregation needs more)."""
        return self.colocated_gpus - self.gpus_total

    def to_dict(self) -> dict[str, object]:
        saving = None
        if self.usd_per_month is not None and self.colocated_usd_per_month is not None:
            saving = round(self.colocated_usd_per_month - self.usd_per_month, 2)
        return {
            "prefill_instances": self.prefill_instances,
            "decode_instances": self.decode_instances,
            "gpus_per_instance": self.gpus_per_instance,
            "prefill_gpus": self.prefill_gpus,
            "decode_gpus": self.decode_gpus,
            "gpus_total": self.gpus_total,
            "decode_concurrency": self.decode_concurrency,
            "kv_transfer_ms": round(self.kv_transfer_s * 1000.0, 3),
            "link": self.link,
            "colocated_gpus": self.colocated_gpus,
            "saving_gpus": self.saving_gpus,
            "saving_usd_per_month": saving,
            "status": self.status,
            "at_load": self.at_load.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class Transfer:
    """How a replica's KV cache travels between a prefill and a decode instance."""

    kv_bytes_per_token: float  # the whole model's, every layer
    link_gb_s: float  # per GPU
    latency_s: float
    link: str


def kv_transfer_s(
    prompt_tokens: float, kv_bytes_per_token: float, gpus: int, link_gb_s: float, latency_s: float
) -> float:
    """Seconds to carry a prompt's KV cache from a prefill to a decode instance: each of the
    ``gpus`` GPUs sends its shard over its own link."""
    if kv_bytes_per_token <= 0:
        return 0.0
    return prompt_tokens * kv_bytes_per_token / (max(gpus, 1) * link_gb_s * 1e9) + latency_s


def combine(
    prefill_ttft: Percentiles,
    decode_queue: Percentiles,
    decode_itl_ms: Percentiles,
    decode_e2e: Percentiles,
    transfer_s: float,
    step1_s: float,
) -> tuple[Percentiles, Percentiles, Percentiles]:
    """(TTFT, ITL in ms, end to end) of a request through both pools; the stages' percentiles are
    added, which the stages' independence makes an upper bound."""
    ttft = Percentiles(
        prefill_ttft.p50 + transfer_s + decode_queue.p50 + step1_s,
        prefill_ttft.p90 + transfer_s + decode_queue.p90 + step1_s,
        prefill_ttft.p99 + transfer_s + decode_queue.p99 + step1_s,
    )
    e2e = Percentiles(
        prefill_ttft.p50 + transfer_s + decode_e2e.p50,
        prefill_ttft.p90 + transfer_s + decode_e2e.p90,
        prefill_ttft.p99 + transfer_s + decode_e2e.p99,
    )
    return ttft, decode_itl_ms, e2e


def start_instances(rate: float, per_instance: float, busy: float) -> int:
    """Instances carrying ``rate`` when each serves ``per_instance`` at ``busy`` utilization."""
    if per_instance <= 0 or not math.isfinite(per_instance):
        return 1
    return max(1, math.ceil(rate / (per_instance * busy)))
