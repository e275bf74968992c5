"""CPU-only workarounds for speculators 0.9.0's trainer, applied only when torch sees no
accelerator; on a GPU the trainer runs as its authors ship it. Each patch names the line it
works around (speculators/train/...).

- trainer.py: the local rank (0) is used as a device (`.to(self.local_rank)`): cuda:0.
- trainer.py: `torch.accelerator.synchronize()` in the step timer raises with no accelerator.
- trainer.py: `device_type` falls back to "cuda", which turns autocast off on CPU.
- checkpointer.py: `get_current_device()` gives "cuda:0", so a resumed run loads onto it.
"""

from __future__ import annotations


def needed() -> bool:
    import torch

    return not torch.accelerator.is_available()


def apply() -> None:
    import speculators.train.checkpointer as checkpointer
    import speculators.train.trainer as trainer
    import torch

    torch.accelerator.synchronize = lambda *args, **kwargs: None
    trainer.get_local_rank = lambda: "cpu"
    checkpointer.get_current_device = lambda: "cpu"
    setup = trainer.Trainer.setup_trainer

    def setup_on_cpu(self):  # noqa: ANN001
        self.device_type = "cpu"
        return setup(self)

    trainer.Trainer.setup_trainer = setup_on_cpu


# Flags for the trainer on CPU: flex attention has no CPU backward, the fused loss needs
# Triton, and spawned data workers only cost memory on two cores.
TRAIN_FLAGS = [
    "--draft-attn-impl", "sdpa",
    "--loss-implementation", "eager",
    "--num-workers", "0",
]  # fmt: skip


def offline_vllm_in_one_process() -> None:
    """The acceptance check's offline `LLM()` in this one process: vLLM would start an engine
    core and a worker beside it, each importing torch and vLLM again. vLLM's CPU platform keeps
    its single-process executor when multiprocessing is off (vllm/platforms/cpu.py), and this
    process does nothing else. Call it before `LLM()`."""
    import os

    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")


def vllm_settings() -> dict:
    """vLLM's CPU build for the acceptance check: float32 (CPUs without bf16 emulate it
    slowly), eager (compiling costs more than the check), a small KV cache."""
    import os

    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    return {"dtype": "float32", "enforce_eager": True, "max_model_len": 2048}
