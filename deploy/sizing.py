"""Timeouts and disk sized from the model's bytes (target plus head).

SageMaker's defaults (a short start-up health check, a small volume) suit small models; a
30 GB target times out or runs out of disk with them. The formulas, in seconds:

    download = 300 + bytes / 50 MB/s    (S3 to the instance, with room for a slow start)
    startup  = 600 + bytes / 100 MB/s   (weights from disk to GPU, plus vLLM's compile and
                                         CUDA graph capture, which P-EAGLE's drafter adds to)

each clamped to SageMaker's 60..3600. Qwen3-Coder-30B-A3B FP8 (31 GB): download 920 s,
startup 910 s. The 600 s base is an estimate, not a measurement on a GPU: vLLM 0.32 compiles
the target and the P-EAGLE head with torch.compile (minutes for a 30B MoE on first start,
per vLLM's compilation docs; cached after), captures piecewise CUDA graphs for both, and
warms its Triton kernels; `make gpu-check` measures a cold start on a GPU box. Where a start
outruns it, SM_VLLM_ENFORCE_EAGER=true skips compile and graphs (slower serving).

The volume holds the model twice over (the download and vLLM's caches) plus 20 GB for the
image's scratch, clamped to SageMaker's 1..512 GB.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MB = 10**6
GB = 10**9
DOWNLOAD_BASE_SECONDS = 300
DOWNLOAD_BYTES_PER_SECOND = 50 * MB
STARTUP_BASE_SECONDS = 600
STARTUP_BYTES_PER_SECOND = 100 * MB
TIMEOUT_RANGE = (60, 3600)
VOLUME_RANGE_GB = (1, 512)
VOLUME_MARGIN_GB = 20
# Instance families that serve from local NVMe instance storage, where SageMaker attaches no
# EBS volume and rejects VolumeSizeInGB (the rule the SageMaker Python SDK applies, with the
# newer GPU and Trainium families): a "d" in the family (c5d, g4dn, p4d), g5 and later, p5 and
# later, trn.
INSTANCE_STORE_FAMILIES = ("g5", "g6", "g7", "p5", "p6", "trn")


@dataclass(frozen=True)
class Sizing:
    model_bytes: int
    download_seconds: int
    startup_seconds: int
    volume_gb: int | None  # None: the instance type takes no VolumeSizeInGB


def clamp(value: float, bounds: tuple[int, int]) -> int:
    return max(bounds[0], min(bounds[1], math.ceil(value)))


def takes_volume_size(instance_type: str) -> bool:
    family = instance_type.removeprefix("ml.").split(".")[0]
    return "d" not in family and not family.startswith(INSTANCE_STORE_FAMILIES)


def size_for(model_bytes: int, instance_type: str) -> Sizing:
    download = DOWNLOAD_BASE_SECONDS + model_bytes / DOWNLOAD_BYTES_PER_SECOND
    startup = STARTUP_BASE_SECONDS + model_bytes / STARTUP_BYTES_PER_SECOND
    volume = 2 * model_bytes / GB + VOLUME_MARGIN_GB
    return Sizing(
        model_bytes=model_bytes,
        download_seconds=clamp(download, TIMEOUT_RANGE),
        startup_seconds=clamp(startup, TIMEOUT_RANGE),
        volume_gb=clamp(volume, VOLUME_RANGE_GB) if takes_volume_size(instance_type) else None,
    )
