"""The window's choice lists hold the core's vocabularies (gpuadvisor/core/vocabulary.py), each
value once, with a label: a value the core adds or drops shows in the window or fails here."""

from __future__ import annotations

from gpuadvisor.core.specs.workload import KV_PRECISIONS, WEIGHT_PRECISIONS
from gpuadvisor.core.vocabulary import OffloadTarget, Optimizer, Parallelism, Recompute, WorkloadKind
from gpuadvisor.gui.pages import model_page, workload_page


def _values(choices):
    values = [v for v, _label in choices]
    assert len(values) == len(set(values)), "a value listed twice"
    assert all(label for _v, label in choices)
    return set(values)


def test_the_workload_pages_lists_are_the_cores():
    assert _values(workload_page.KINDS) == set(WorkloadKind) | {workload_page.SERVING}
    assert _values(workload_page.OPTIMIZERS) == set(Optimizer)
    assert _values(workload_page.PARALLELISMS) == set(Parallelism) - {Parallelism.NONE} | {""}
    assert _values(workload_page.RECOMPUTE) == set(Recompute) | {""}
    assert _values(workload_page.OFFLOAD) == set(OffloadTarget)


def test_the_model_pages_precisions_are_the_cores():
    assert _values(model_page.WEIGHTS) == set(WEIGHT_PRECISIONS)
    assert _values(model_page.KV) == set(KV_PRECISIONS) | {""}
