"""The image's build files as the tests read them: where they are, a Dockerfile's
instructions, and docker-compose.yml with every ${NAME:-default} as a user gets it."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
GPU_DOCKERFILE = ROOT / "Dockerfile"
CPU_BASE_DOCKERFILE = ROOT / "docker" / "cpu-base" / "Dockerfile"
STANDIN_BASE_DOCKERFILE = ROOT / "docker" / "gpu-standin-base" / "Dockerfile"
DOCKERFILES = [GPU_DOCKERFILE, CPU_BASE_DOCKERFILE, STANDIN_BASE_DOCKERFILE]
COMPOSE_FILE = ROOT / "docker-compose.yml"


def instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    result: list[tuple[str, str]] = []
    pending = ""
    for line in dockerfile.read_text().splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        keyword, _, arguments = (pending + line).strip().partition(" ")
        result.append((keyword.upper(), arguments.strip()))
        pending = ""
    return result


def arguments_of(dockerfile: Path, keyword: str, stage: str | None = None) -> list[str]:
    """Every `keyword` instruction's arguments, in the whole file or in one stage."""
    found = instructions(dockerfile) if stage is None else stage_instructions(dockerfile, stage)
    return [arguments for name, arguments in found if name == keyword]


def stage_instructions(dockerfile: Path, stage: str) -> list[tuple[str, str]]:
    """The instructions of the stage `FROM ... AS stage`, up to the next FROM."""
    found: list[tuple[str, str]] = []
    inside = False
    for name, arguments in instructions(dockerfile):
        if name == "FROM":
            inside = arguments.split()[-2:] == ["AS", stage]
        if inside:
            found.append((name, arguments))
    assert found, f"{dockerfile} has no stage {stage}"
    return found


def key_values(dockerfile: Path, keyword: str) -> dict[str, str]:
    """ENV, LABEL or ARG entries as one mapping (KEY=VALUE, shell-quoted)."""
    pairs: dict[str, str] = {}
    for arguments in arguments_of(dockerfile, keyword):
        for token in shlex.split(arguments):
            key, _, value = token.partition("=")
            pairs[key] = value
    return pairs


def exec_form(arguments: str) -> list[str]:
    """The JSON array of an exec-form ENTRYPOINT, CMD or HEALTHCHECK CMD."""
    return json.loads(arguments[arguments.index("[") :])


INTERPOLATION = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}")


def interpolated(value):
    """Compose's ${NAME:-default} with nothing set: every default, as a user gets it."""
    if isinstance(value, dict):
        return {key: interpolated(item) for key, item in value.items()}
    if isinstance(value, list):
        return [interpolated(item) for item in value]
    if isinstance(value, str):
        return INTERPOLATION.sub(lambda match: match.group(2) or "", value).replace("$$", "$")
    return value


def compose() -> dict:
    return interpolated(yaml.safe_load(COMPOSE_FILE.read_text()))
