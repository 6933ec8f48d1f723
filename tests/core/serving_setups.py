"""Setups the serving and replay tests share: the bundled catalogs (loaded once) and one replica's
memory model, GPU and engine for the burst and closed-loop checks."""

from __future__ import annotations

from functools import lru_cache

from gpuadvisor.core.estimation.memory import MemoryModel
from gpuadvisor.core.specs.constants import engine_for
from gpuadvisor.core.specs.hardware import load_gpu_catalog
from gpuadvisor.core.specs.presets import load_model_catalog
from gpuadvisor.core.specs.workload import Workload


@lru_cache(maxsize=1)
def catalogs():
    return load_gpu_catalog(), load_model_catalog()


def burst_setup(prompt=467, output=256, model="llama-3.1-8b", gpu="h100-sxm"):
    """(memory model, GPU, engine) of a TensorRT-LLM replica serving ``prompt`` + ``output`` tokens."""
    gpus, models = catalogs()
    engine = engine_for("tensorrt-llm", "inference")
    w = Workload(kind="inference", engine="tensorrt-llm", prompt_tokens=prompt, output_tokens=output)
    mm = MemoryModel(models.get(model), w, prefill_chunk_tokens=engine.prefill_chunk_tokens)
    return mm, gpus.get(gpu), engine
