"""The versions the set-up pins by name, read from versions.env at the repository's root (the
one home the Makefile includes and image_build passes to the Dockerfiles), and the KEY=VALUE
format that file shares with demo.env."""

from __future__ import annotations

import re
from pathlib import Path

VERSIONS_FILE = Path(__file__).resolve().parents[1] / "versions.env"
_SETTING = re.compile(r"([A-Z][A-Z0-9_]*)=(\S+)")


def read_env_file(path: Path) -> dict[str, str]:
    """KEY=VALUE lines, in order; blank lines and # comments skipped."""
    settings = {}
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        if not (match := _SETTING.fullmatch(line.strip())):
            raise ValueError(
                f"{path}:{number}: {line!r} is not KEY=VALUE (an upper-case name, a value "
                "without spaces or quotes)"
            )
        settings[match[1]] = match[2]
    return settings


PINS = read_env_file(VERSIONS_FILE)
VLLM_VERSION = PINS["VLLM_VERSION"]
TORCH_CPU_VERSION = PINS["TORCH_CPU_VERSION"]
TORCH_CUDA_VERSION = PINS["TORCH_CUDA_VERSION"]
UV_VERSION = PINS["UV_VERSION"]
SPECULATORS_VERSION = PINS["SPECULATORS_VERSION"]
# vLLM's CUDA image of that release: the GPU image's default base.
VLLM_IMAGE = f"vllm/vllm-openai:v{VLLM_VERSION}"
