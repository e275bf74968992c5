"""/dev/shm: what vLLM needs of it, measured before vLLM starts.

vLLM's multiprocess executor passes work between its processes through shared-memory ring
buffers: the scheduler's broadcast queue (10 chunks of VLLM_MQ_MAX_CHUNK_BYTES_MB, 16 MiB by
default) and each worker's response queue (10 chunks of 24 MiB, fixed). vLLM refuses to create
one unless /dev/shm has its full size free (the files are sparse and fill only as messages
pass). That executor runs on the CPU build always (its OpenMP set-up needs it) and on GPUs
with more than one worker; a single GPU runs its worker in the engine process and uses no
/dev/shm. Docker gives a container 64 MiB unless told otherwise.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from serving.engine_args.flags import flag_value
from serving.preflight.cpu_build import is_cpu_build

if TYPE_CHECKING:  # only for annotations: the checks need no pydantic
    from serving.settings import Settings

MIB = 2**20
SHM_PATH = Path("/dev/shm")
QUEUE_CHUNKS = 10
RESPONSE_CHUNK_MIB = 24
DEFAULT_BROADCAST_CHUNK_MIB = 16
# Queue metadata and vLLM's small segments (locks, the executor's handles).
HEADROOM_MIB = 16


def worker_count(settings: Settings) -> int:
    """Tensor x pipeline parallel size, from vLLM's flags or SM_NUM_GPUS."""
    sizes = []
    for names, default in (
        (("--tensor-parallel-size", "-tp"), settings.tensor_parallel_size or 1),
        (("--pipeline-parallel-size", "-pp"), 1),
    ):
        value = flag_value(settings.engine_flags, *names) or ""
        sizes.append(int(value) if value.isdigit() and int(value) > 0 else default)
    return sizes[0] * sizes[1]


def required_mib(environ: Mapping[str, str]) -> int:
    """Free /dev/shm the multiprocess executor's largest queue needs."""
    chunk = environ.get("VLLM_MQ_MAX_CHUNK_BYTES_MB", "").strip()
    broadcast_chunk = int(chunk) if chunk.isdigit() else DEFAULT_BROADCAST_CHUNK_MIB
    return QUEUE_CHUNKS * max(RESPONSE_CHUNK_MIB, broadcast_chunk) + HEADROOM_MIB


def check_shared_memory(
    settings: Settings,
    environ: Mapping[str, str],
    errors: list[str],
    shm_path: Path = SHM_PATH,
    cpu_build: bool | None = None,
) -> None:
    """An error, with the fix, when vLLM would stop a minute from now for lack of /dev/shm."""
    cpu_build = is_cpu_build() if cpu_build is None else cpu_build
    workers = worker_count(settings)
    if not cpu_build and workers == 1:
        return
    who = "vLLM's CPU build" if cpu_build else f"vLLM with {workers} GPU workers"
    needed = required_mib(environ)
    fix = (
        "Start the container with --shm-size 1g (or --ipc=host); in docker compose set "
        "shm_size: 1g."
    )
    if not cpu_build:
        fix += " SageMaker has no such setting: serve on one GPU (SM_NUM_GPUS=1) there."
    if not shm_path.is_dir():
        errors.append(f"{shm_path} does not exist; {who} needs {needed} MiB there. {fix}")
        return
    free = shutil.disk_usage(shm_path).free // MIB
    if free < needed:
        errors.append(
            f"{shm_path} has {free} MiB free; {who} needs at least {needed} MiB there for the "
            f"queues between its processes, and would stop at start-up. {fix}"
        )
