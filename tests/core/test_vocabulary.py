"""The core's vocabularies are StrEnums whose values are the strings the files hold: a member
compares equal to its string, writes as it in JSON, and the scenario format's lists of accepted
values are built from the members."""

from __future__ import annotations

import json

import pytest

from gpuadvisor.core.estimation.serving_sim import TargetStatus as SimTargetStatus
from gpuadvisor.core.formats.scenario import default_scenario, scenario_from_dict, scenario_to_dict
from gpuadvisor.core.specs import workload as spec
from gpuadvisor.core.vocabulary import (
    GATHERING_SHARDINGS,
    GRADIENT_SHARDINGS,
    OPTIMIZER_SHARDINGS,
    BudgetStatus,
    DecisionStatus,
    HorizonStatus,
    OffloadTarget,
    Optimizer,
    Parallelism,
    Precision,
    Recompute,
    TargetStatus,
    WorkloadKind,
)


def test_a_member_is_its_string_in_code_and_in_json():
    assert WorkloadKind.FULL_FINETUNE == "full_finetune" and str(WorkloadKind.LORA) == "lora"
    assert f"{TargetStatus.AT_RISK}" == "at risk"
    assert json.dumps([Parallelism.ZERO3, Precision.NF4]) == '["zero3", "nf4"]'
    assert {"meets": 1}[TargetStatus.MEETS] == 1  # a dict keyed by strings finds the member


def test_the_scenario_formats_lists_are_the_vocabularies():
    assert spec.WORKLOAD_KINDS == ("inference", "lora", "qlora", "full_finetune", "pretrain")
    assert spec.TRAINING_KINDS == ("lora", "qlora", "full_finetune", "pretrain")
    assert [k.is_training for k in WorkloadKind] == [k in spec.TRAINING_KINDS for k in WorkloadKind]
    assert spec.OPTIMIZERS == ("adamw", "adamw_8bit", "sgd", "adafactor") == tuple(Optimizer)
    assert spec.PARALLELISMS == ("ddp", "zero1", "zero2", "zero3", "fsdp", "tensor", "pipeline")
    assert spec.RECOMPUTE_CHOICES == ("none", "selective", "op", "full") == tuple(Recompute)
    assert spec.OFFLOAD_TARGETS == ("none", "cpu", "nvme") == tuple(OffloadTarget)
    assert spec.KV_PRECISIONS == ("fp32", "bf16", "fp16", "fp8", "int8", "int4")
    assert spec.WEIGHT_PRECISIONS[:7] == ("fp32", "bf16", "fp16", "fp8", "int8", "int4", "nf4")


def test_the_shardings_nest():
    assert GATHERING_SHARDINGS < GRADIENT_SHARDINGS < OPTIMIZER_SHARDINGS
    assert OPTIMIZER_SHARDINGS == {"zero1", "zero2", "zero3", "fsdp"}


def test_one_status_vocabulary_for_deadlines_and_latency_targets():
    assert SimTargetStatus is TargetStatus
    assert tuple(TargetStatus) == ("meets", "likely", "at risk")
    assert tuple(BudgetStatus) == ("within", "likely", "over")
    assert tuple(HorizonStatus) == ("within", "likely", "beyond")
    assert tuple(DecisionStatus) == ("sure", "likely", "limits missed", "nothing fits")


@pytest.mark.parametrize("kind", list(WorkloadKind))
def test_a_scenario_of_each_kind_round_trips_as_plain_strings(kind):
    sc = default_scenario()
    data = scenario_to_dict(sc)
    data["workload"]["kind"] = kind
    if kind == WorkloadKind.QLORA:
        data["workload"]["weights"] = Precision.NF4
    text = json.dumps(data)
    assert f'"kind": "{kind.value}"' in text
    back = scenario_from_dict(json.loads(text))
    assert back.workload.kind == kind
