"""Published TFLOPS per GPU are compared in their own convention (Megatron-LM's FLOPs formula).

Megatron-LM, NeMo and Megatron-DeepSpeed count the attention core over the whole sequence; the
estimate counts the causal half a causal kernel computes. The validation harness converts the
estimate's TFLOPS to the published convention before comparing (``harness.published_tflops_ratio``).
"""

import pytest

from gpuadvisor.core.estimation.performance import matmul_params
from gpuadvisor.core.specs.presets import load_model_catalog
from gpuadvisor.validation.harness import published_tflops_ratio


@pytest.fixture(scope="module")
def models():
    return load_model_catalog()


def test_the_ratio_is_megatrons_full_attention_over_the_causal_half(models):
    m = models.get("llama-2-7b")
    s = 4096
    dense = 2 * matmul_params(m)
    full = dense + 4 * m.num_layers * m.q_dim * s
    causal = dense + 4 * m.num_layers * m.q_dim * s / 2
    assert published_tflops_ratio(m, s) == pytest.approx(full / causal)
    assert 1.06 < published_tflops_ratio(m, s) < 1.09


def test_the_ratio_grows_with_the_sequence_toward_two(models):
    m = models.get("llama-2-7b")
    ratios = [published_tflops_ratio(m, s) for s in (512, 4096, 32_768, 262_144, 1_048_576)]
    assert all(a < b for a, b in zip(ratios, ratios[1:], strict=False))
    assert ratios[0] > 1.0
    assert 1.9 < ratios[-1] < 2.0


def test_short_sequences_of_large_models_barely_differ(models):
    assert published_tflops_ratio(models.get("llama-3.1-405b"), 2048) < 1.02
