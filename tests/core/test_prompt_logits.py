"""Where a prefill computes logits (``workload.prompt_logits``), and what that costs.

Hugging Face Transformers' ``generate`` asks the model for the last prompt position's logits only
since v4.45 (pull #31292, ``num_logits_to_keep``); before it, a prefill projected every position
through the output head and held those logits twice, in 16 bits and upcast to fp32. Llama 3.1 8B
has a vocabulary of 128,256 (its config.json), so a 6,144-token prompt held
``6,144 x 128,256 x (2 + 4)`` bytes = 4.40 GiB of logits on an older release, and only the sampled
row (128,256 x 4 bytes) on a current one.
"""

import json
from functools import lru_cache

import pytest

from gpuadvisor.core.errors import InputError
from gpuadvisor.core.estimation.estimate import estimate
from gpuadvisor.core.formats.scenario import dumps_scenario, loads_scenario
from gpuadvisor.core.specs.engines import RECORDS, PromptLogits
from gpuadvisor.core.specs.hardware import load_gpu_catalog
from gpuadvisor.core.specs.presets import load_model_catalog
from gpuadvisor.core.units import GIB

PROMPT = 6144
LLAMA_8B_VOCAB = 128_256


@lru_cache(maxsize=1)
def catalogs():
    return load_gpu_catalog(), load_model_catalog()


def scenario_text(engine="transformers", logits=None):
    workload = {"kind": "inference", "engine": engine, "prompt_tokens": PROMPT, "output_tokens": 2048}
    if logits is not None:
        workload["prompt_logits"] = logits
    return json.dumps(
        {
            "model": {"preset": "llama-3.1-8b"},
            "workload": workload,
            "hardware": {"gpu": "a100-80gb", "gpu_count": 1},
        }
    )


def one(engine="transformers", logits=None):
    est = estimate(loads_scenario(scenario_text(engine, logits)), *catalogs())
    (c,) = est.candidates
    return c


def test_transformers_now_projects_only_the_sampled_position():
    profile = RECORDS["transformers"]
    assert profile.prompt_logits == PromptLogits.LAST
    assert not profile.full_prompt_logits
    # The one row it samples from, in fp32.
    assert one().memory.logits == LLAMA_8B_VOCAB * 4


def test_an_older_release_holds_every_prompt_positions_logits_in_16_and_32_bits():
    now, older = one(), one(logits="all")
    assert older.memory.logits == pytest.approx(PROMPT * LLAMA_8B_VOCAB * 6, rel=1e-9)
    assert older.memory.logits / GIB == pytest.approx(4.40, abs=0.01)
    extra = older.memory.logits - now.memory.logits
    # The logits are part of the activations; the allocator's share of them comes on top.
    assert older.memory.activations - now.memory.activations == pytest.approx(extra, rel=1e-9)
    assert older.memory.device_total - now.memory.device_total >= extra
    # And its prefill multiplies every prompt token with the output head too.
    assert older.performance.time_to_first_token_s > now.performance.time_to_first_token_s


def test_stating_the_engines_own_habit_changes_nothing():
    assert RECORDS["vllm"].with_logits("last") is RECORDS["vllm"]
    assert RECORDS["autoawq"].with_logits("all") is RECORDS["autoawq"]
    assert RECORDS["transformers"].with_logits(None) is RECORDS["transformers"]
    # llama.cpp computes every position's logits already; stating it adds no Hugging Face logits.
    assert RECORDS["llama.cpp"].with_logits("all") is RECORDS["llama.cpp"]
    base, same = one(), one(logits="last")
    assert same.memory.device_total == base.memory.device_total
    assert same.performance.time_to_first_token_s == base.performance.time_to_first_token_s


def test_the_key_round_trips_and_is_left_out_when_not_stated():
    stated = loads_scenario(scenario_text(logits="all"))
    assert stated.workload.prompt_logits == "all"
    assert json.loads(dumps_scenario(stated))["workload"]["prompt_logits"] == "all"
    plain = loads_scenario(scenario_text())
    assert "prompt_logits" not in json.loads(dumps_scenario(plain))["workload"]


def test_a_wrong_value_is_refused_in_the_users_words():
    with pytest.raises(InputError) as info:
        loads_scenario(scenario_text(logits="every"))
    assert "workload.prompt_logits" in str(info.value)
    assert "must be one of last, all" in str(info.value)


def test_a_workloads_engine_habits_are_applied_in_one_place():
    """``EngineProfile.for_workload`` is the one home of a run's overrides of its engine: every
    reader in the package goes through it, none applies ``with_logits`` itself."""
    from pathlib import Path

    import gpuadvisor
    from gpuadvisor.core.specs.workload import Workload

    package = Path(gpuadvisor.__file__).parent
    callers = sorted(
        str(p.relative_to(package))
        for p in package.rglob("*.py")
        if ".with_logits(" in p.read_text(encoding="utf-8")
    )
    assert callers == ["core/specs/engines.py"]
    older = Workload(kind="inference", engine="transformers", prompt_logits="all")
    assert RECORDS["transformers"].for_workload(older).prompt_logits == PromptLogits.ALL
    assert RECORDS["transformers"].for_workload(Workload(kind="inference")) is RECORDS["transformers"]
