"""A local model directory: the files that go to S3, and their bytes.

`huggingface-cli download --local-dir` leaves a `.cache` folder of its own beside the
weights, and a clone has `.git`: neither belongs in the endpoint's model data.
"""

from __future__ import annotations

import os
from pathlib import Path

SKIPPED_DIRS = frozenset({".cache", ".git"})


def model_files(directory: Path) -> list[tuple[Path, str]]:
    """(path, key relative to the directory, with /) for each file to upload, sorted."""
    found = []
    for root, dirs, names in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        for name in sorted(names):
            path = Path(root) / name
            found.append((path, path.relative_to(directory).as_posix()))
    return found


def directory_bytes(directory: Path) -> int:
    return sum(path.stat().st_size for path, _ in model_files(directory))
