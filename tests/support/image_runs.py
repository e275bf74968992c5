"""A command run in a built image as the image tests run one: `docker run --rm` with no
network, and the JSON that a Python snippet in the image prints."""

from __future__ import annotations

import json
import subprocess
from typing import Any


def run_image(
    docker: str, image: str, *command: str, options: tuple[str, ...] = (), timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """`docker run --rm` with no network: `options` before the image, `command` after."""
    return subprocess.run(
        [docker, "run", "--rm", "--network", "none", *options, image, *command],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def image_json(docker: str, image: str, code: str, *args: str) -> Any:
    """The last line that `python3 -c CODE ARGS` prints in the image, read as JSON; the
    command must succeed."""
    found = run_image(docker, image, "python3", "-c", code, *args)
    assert found.returncode == 0, found.stderr[-2000:]
    return json.loads(found.stdout.splitlines()[-1])
