"""Quantization kernel families: how the kernels that run quantized weights stream them.

A kernel family (``workload.quantization``, or the one an engine runs by default,
:attr:`gpuadvisor.core.specs.engines.EngineProfile.int4_kernel`) sets how well its batch-1 GEMV
streams the quantized weights (a share of the engine's 16-bit bandwidth efficiency), the extra
kernels it launches per linear layer, the batch beyond which it dequantizes to a 16-bit copy (and
the bytes that copy costs) and the share of 16-bit tensor throughput its GEMM reaches. The values
are priors from the papers and kernel sources each family cites (``source``); the speed model's
fit may move ``gemv_efficiency`` (:mod:`gpuadvisor.core.specs.constants`). See
``docs/estimation.md``, "Quantized kernels".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True, slots=True)
class KernelFamily:
    """How one quantization kernel family runs (see the module docstring)."""

    id: str
    name: str
    gemv_efficiency: (
        float  # share of the engine's 16-bit bandwidth efficiency its batch-1 weight stream reaches
    )
    extra_kernels_per_linear: float  # launches added per quantized linear layer and step
    gemv_max_tokens: int  # tokens per GEMM up to which the GEMV/fused kernel runs
    dequant_bytes_per_weight: float  # beyond that: bytes per weight to write and read a 16-bit copy
    gemm_efficiency: float  # share of 16-bit tensor throughput its GEMM reaches (prefill, large batches)
    source: str = ""
    #: Whether the small-batch kernel streams the quantized weights once per row of the batch
    #: (a matrix-vector kernel run for each sequence) rather than once per step.
    gemv_per_row: bool = False
    #: With ``gemv_per_row``: rows of the batch one pass over the weights serves (a kernel whose
    #: thread blocks each take a tile of the weights and up to this many rows streams the weights
    #: ``ceil(batch / gemv_row_block)`` times).
    gemv_row_block: int = 1


#: Kernel families (``workload.quantization``). ``bnb`` with 8-bit weights is LLM.int8 (``bnb-int8``).
KERNEL_FAMILIES: Mapping[str, KernelFamily] = MappingProxyType(
    {
        k.id: k
        for k in (
            KernelFamily(
                "marlin",
                "Marlin (vLLM)",
                0.95,
                0.0,
                64,
                0.0,
                0.90,
                "Frantar et al. 2024 (MARLIN): near-ideal 3.9x over FP16 up to batch 16-32",
            ),
            KernelFamily(
                "awq",
                "AWQ (GEMV at batch 1, GEMM beyond)",
                0.90,
                0.0,
                8,
                0.0,
                0.60,
                "Lin et al. 2023 (AWQ), TinyChat kernels; AutoAWQ: GEMV for batch 1, GEMM slower than FP16 at large batch",
            ),
            KernelFamily(
                "exllama",
                "ExLlama(v2) GPTQ kernels",
                0.95,
                0.0,
                32,
                4.0,
                1.00,
                "turboderp/exllamav2: reconstructs an FP16 matrix for larger batches and runs cuBLAS; "
                "the small-batch q4 kernel (exllama's q4_matmul, a grid over the batch's rows) reads the "
                "weights for each row",
                gemv_per_row=True,
            ),
            KernelFamily(
                "gptq",
                "GPTQ (AutoGPTQ CUDA/Triton kernels)",
                0.70,
                0.0,
                32,
                4.0,
                0.90,
                "Frantar et al. 2022 (GPTQ) kernels: about 3x over FP16 at batch 1 on A100, reconstruct beyond; "
                "AutoGPTQ's cuda kernels (VecQuant4MatMul) are matrix-vector products, one per row of the batch",
                gemv_per_row=True,
            ),
            KernelFamily(
                "vllm-gptq",
                "GPTQ kernel of vLLM and SGLang (gptq_gemm, from ExLlamaV2)",
                0.85,
                0.0,
                50,
                4.0,
                0.90,
                "vllm-project/vllm csrc/quantization/gptq/q_gemm.cu (commit 03b2ee5): each thread block "
                "multiplies a tile of the weights with up to BLOCK_M_SIZE_MAX = 8 rows of the batch, so the "
                "weights stream once per 8 rows; beyond MAX_Q_GEMM_ROWS = 50 rows the matrix is reconstructed "
                "to FP16 for cuBLAS. The engine runs it where a GPTQ checkpoint is loaded with quantization "
                "'gptq' (not gptq_marlin). Batch-1 efficiency a prior between AutoGPTQ's and ExLlama's",
                gemv_per_row=True,
                gemv_row_block=8,
            ),
            KernelFamily(
                "w8a8",
                "INT8 W8A8 (SmoothQuant, compressed-tensors; CUTLASS scaled_mm)",
                0.65,
                0.5,
                1,
                0.0,
                1.00,
                "INT8 weights and activations on the INT8 tensor cores (vLLM's CUTLASS scaled_mm): a GEMM "
                "padded to a tile at batch 1, not a GEMV, with a small kernel quantizing the activations "
                "per token; priors as the FP8 family's",
            ),
            KernelFamily(
                "bnb",
                "bitsandbytes 4-bit (NF4/FP4)",
                0.45,
                3.0,
                1,
                4.5,
                0.95,
                "Dettmers et al. 2023 (QLoRA); bitsandbytes gemv_4bit at batch 1, a full FP16 dequantization "
                "per matmul otherwise",
            ),
            KernelFamily(
                "bnb-int8",
                "bitsandbytes LLM.int8 (outlier decomposition)",
                0.40,
                8.0,
                1,
                1.0,
                0.45,
                "Dettmers et al. 2022 (LLM.int8): int8 matmul plus an FP16 matmul of the outlier columns, "
                "activations quantized per row on the fly; slower than FP16",
            ),
            KernelFamily(
                "gguf",
                "llama.cpp GGUF",
                0.75,
                0.0,
                32,
                4.0,
                1.0,
                "llama.cpp: MMVQ kernels for small batches; beyond, the weights are dequantized to FP16 and "
                "multiplied with cuBLAS",
            ),
            KernelFamily(
                "fp8",
                "FP8 (W8A8 tensor cores)",
                0.65,
                0.5,
                1,
                0.0,
                1.00,
                "FP8 weights and activations: an FP8 GEMM padded to a tile at batch 1, not a GEMV; dynamic "
                "activation scales add a small kernel",
            ),
            KernelFamily(
                "mlc",
                "MLC LLM q4f16 (TVM-generated)",
                0.90,
                0.0,
                8,
                0.0,
                0.60,
                "mlc-ai/mlc-llm: group-32 symmetric int4 with fp16 scales, kernels tuned per GPU",
            ),
            KernelFamily(
                "torchao",
                "torchao int4 weight-only (tinygemm)",
                0.62,
                0.0,
                8,
                0.0,
                0.35,
                "pytorch-labs/gpt-fast README: Llama-2-7B on A100, int4 862.69 GB/s vs bf16 1397.31 GB/s",
            ),
            KernelFamily(
                "hqq",
                "HQQ (torchao tinygemm backend)",
                0.60,
                0.5,
                8,
                0.0,
                0.35,
                "mobiusml/hqq: inference through the torchao int4 kernel",
            ),
        )
    }
)
