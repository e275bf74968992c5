"""The host's NVIDIA driver against the CUDA release the image was built on.

The default base, vllm/vllm-openai:v0.32.0, is built with CUDA 13.0, which needs driver 580
or newer; vLLM's `v0.32.0-cu129` tag (CUDA 12.9) runs on any driver from 525 on (NVIDIA's
minor-version compatibility within a CUDA major release). SageMaker's inference AMIs carry
drivers 535 to 580. A mismatch otherwise shows up as a CUDA error deep in vLLM's start-up,
after minutes of loading; here it is one sentence before anything loads, and never a reason
to restart the engine. The image records its CUDA release in SERVING_CUDA_VERSION (and a
label); the CPU image has none, and a host without an NVIDIA driver is not checked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path

IMAGE_CUDA_VAR = "SERVING_CUDA_VERSION"
DRIVER_VERSION_FILE = Path("/proc/driver/nvidia/version")
# The oldest Linux driver each CUDA major release runs on (NVIDIA's CUDA compatibility table).
MINIMUM_DRIVER = {12: (525, 60, 13), 13: (580, 65, 6)}
# SageMaker's inference AMIs (botocore's ProductionVariantInferenceAmiVersion) and the NVIDIA
# driver branch each carries, newest first.
AMI_DRIVERS = {
    "al2023-ami-sagemaker-inference-gpu-4-1": (580,),
    "al2-ami-sagemaker-inference-gpu-3-1": (550,),
    "al2-ami-sagemaker-inference-gpu-2-1": (535,),
    "al2-ami-sagemaker-inference-gpu-2": (535,),
}
CU129_BASE = "vllm/vllm-openai:v0.32.0-cu129"


def version_text(version: tuple[int, ...]) -> str:
    return ".".join(str(part) for part in version)


def host_driver_version(path: Path = DRIVER_VERSION_FILE) -> tuple[int, ...] | None:
    """The loaded NVIDIA kernel module's version, or None on a host without one. The one
    seam the tests fake: there is no GPU on the machines that run them."""
    try:
        text = path.read_text()
    except OSError:
        return None
    found = re.search(r"Kernel Module(?:\s+for\s+\S+)?\s+(\d+(?:\.\d+)+)", text)
    return tuple(int(part) for part in found.group(1).split(".")) if found else None


def cuda_major(cuda: str) -> int | None:
    head = cuda.strip().split(".", 1)[0]
    return int(head) if head.isdigit() else None


def minimum_driver(cuda: str) -> tuple[int, ...] | None:
    major = cuda_major(cuda)
    return None if major is None else MINIMUM_DRIVER.get(major)


def ami_for(cuda: str) -> str | None:
    """The newest inference AMI whose driver runs an image built on `cuda`."""
    needed = minimum_driver(cuda)
    if needed is None:
        return None
    for ami, driver in AMI_DRIVERS.items():
        if driver >= needed[:1]:
            return ami
    return None


def ami_problem(ami: str, cuda: str) -> str | None:
    """Why an explicit inference AMI cannot run an image built on `cuda`, or None."""
    needed = minimum_driver(cuda)
    driver = AMI_DRIVERS.get(ami)
    if needed is None or driver is None or driver >= needed[:1]:
        return None
    return (
        f"--inference-ami-version {ami} carries NVIDIA driver {version_text(driver)}, and the "
        f"image is built on CUDA {cuda}, which needs driver {version_text(needed)} or newer; "
        f"use {ami_for(cuda)}, or an image built on {CU129_BASE} (make image "
        f"BASE_IMAGE={CU129_BASE})."
    )


def check_cuda_driver(
    environ: Mapping[str, str],
    errors: list[str],
    read_driver: Callable[[], tuple[int, ...] | None] = host_driver_version,
) -> None:
    cuda = environ.get(IMAGE_CUDA_VAR, "").strip()
    needed = minimum_driver(cuda) if cuda else None
    if needed is None:
        return
    driver = read_driver()
    if driver is None or driver >= needed:
        return
    errors.append(
        f"This image is built on CUDA {cuda} ({IMAGE_CUDA_VAR}), which needs NVIDIA driver "
        f"{version_text(needed)} or newer; this host's driver is {version_text(driver)}. On "
        f"SageMaker, deploy with InferenceAmiVersion={ami_for(cuda)} (sagemaker-peagle-deploy "
        f"chooses it); elsewhere, update the driver, or build the image on {CU129_BASE} "
        f"(make image BASE_IMAGE={CU129_BASE}), which runs on driver 525 or newer."
    )
