"""The demo pair for the preflight tests, built once per session, and a copy per test to break."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.locations import REPO_ROOT


@pytest.fixture(scope="session")
def demo_pair(tmp_path_factory) -> Path:
    """The demo /opt/ml tree, built once per session from the builder in this checkout."""
    out = tmp_path_factory.mktemp("demo") / "opt_ml"
    subprocess.run(
        [sys.executable, "-m", "model_data_sources", str(out)],
        cwd=REPO_ROOT,
        check=True,
        capture_output=True,
    )
    return out


@pytest.fixture()
def pair(demo_pair: Path, tmp_path: Path) -> Path:
    """A private copy of the demo pair for one test to break."""
    return Path(shutil.copytree(demo_pair, tmp_path / "opt_ml"))
