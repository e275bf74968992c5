"""The demo engine's settings, read from demo.env at the repository's root (the one home the
Makefile and docker-compose.yml read too)."""

from __future__ import annotations

import re
from pathlib import Path

from harness.paths import REPO_ROOT

DEMO_ENV_FILE = REPO_ROOT / "demo.env"
_SETTING = re.compile(r"([A-Z][A-Z0-9_]*)=(\S+)")


def read_settings(path: Path = DEMO_ENV_FILE) -> dict[str, str]:
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


DEMO_ENGINE = read_settings()
