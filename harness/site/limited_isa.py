"""HARNESS_CPU_ISA=avx2: a CPU limited to AVX2, for the suite's proof that it holds on older
x86 servers (issue 67): every Python process (the front, vLLM's engine and its workers, the
pair builder) computes as an AVX2 machine does. Loaded by this folder's sitecustomize.

What each switch does on the CPU build (vLLM 0.32.0, torch 2.13.0+cpu):
- ATEN_CPU_CAPABILITY: ATen's own vectorised kernels (elementwise, softmax, reductions);
- ONEDNN_MAX_CPU_ISA: oneDNN's matmuls and convolutions (AMX and AVX-512 bf16 among them);
- MKL_ENABLE_INSTRUCTIONS: MKL's BLAS, where torch calls it;
- vLLM reads the hardware itself (torch.cpu._is_avx512_supported, _is_avx512_bf16_supported,
  _is_amx_tile_supported: CPUID, which no variable changes) to pick its kernel library
  (vllm/_C_AVX2 against _C / _C_AVX512, platforms/cpu.py) and its attention ISA
  (v1/attention/backends/cpu_attn.py); those three answer False here, once torch is imported.
"""

import os

LIMITS = {
    "avx2": {
        "ATEN_CPU_CAPABILITY": "avx2",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
        "MKL_ENABLE_INSTRUCTIONS": "AVX2",
    }
}


def hide_wider_isas(torch) -> None:
    """torch.cpu's _is_*_supported read this one table of CPUID features."""
    read = torch._C._cpu._get_cpu_capability

    def limited():
        return {
            feature: present and not feature.startswith(("avx512", "amx"))
            for feature, present in read().items()
        }

    torch._C._cpu._get_cpu_capability = limited


def apply(after_import) -> None:
    limit = os.environ.get("HARNESS_CPU_ISA", "")
    if limit in LIMITS:
        for variable, value in LIMITS[limit].items():
            os.environ.setdefault(variable, value)
        after_import("torch", hide_wider_isas)
