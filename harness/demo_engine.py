"""The demo engine's settings, read from demo.env at the repository's root (the one home the
Makefile and docker-compose.yml read too)."""

from __future__ import annotations

from pathlib import Path

from deps.pins import read_env_file
from harness.locations import REPO_ROOT

DEMO_ENV_FILE = REPO_ROOT / "demo.env"


def read_settings(path: Path = DEMO_ENV_FILE) -> dict[str, str]:
    """KEY=VALUE lines, in order; blank lines and # comments skipped."""
    return read_env_file(path)


DEMO_ENGINE = read_settings()
