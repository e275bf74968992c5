"""What the head trainer computes in: bfloat16 where the hardware computes in it natively, else
float32. speculators keeps the master weights in float32 either way and runs the forward and
backward passes under autocast in this dtype (its --hidden-states-dtype).

Natively means any GPU with bfloat16 (Ampere and later), or a CPU with AVX512-BF16 or AMX
whose instructions torch is allowed to use (ATEN_CPU_CAPABILITY=avx2 takes them away, as the
suite's limited-ISA runs do). Elsewhere bfloat16 is emulated, and slower than float32.
"""

from __future__ import annotations

AUTO = "auto"
BFLOAT16 = "bfloat16"
FLOAT32 = "float32"
CHOICES = (AUTO, BFLOAT16, FLOAT32)


def native_bfloat16() -> bool:
    import torch

    if torch.cuda.is_available():
        return torch.cuda.is_bf16_supported()
    capability = torch.backends.cpu.get_cpu_capability()
    if not capability.startswith("AVX512"):
        return False
    return torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()


def resolve(precision: str) -> str:
    """The dtype to train in for the hyperparameter `precision` (auto, bfloat16 or float32)."""
    if precision != AUTO:
        return precision
    return BFLOAT16 if native_bfloat16() else FLOAT32
