"""The image's warm vLLM model-info cache: what it relies on in vLLM still exists and works.

serving/model_info_cache.py reaches into vLLM's registry (a lazily registered model's
`inspect_model_cls` and the module's `_run_in_subprocess`). These tests run the real vLLM
in a subprocess with an empty VLLM_CACHE_ROOT, so an upgrade that renames or changes either
fails here, loudly, rather than silently bringing back the slow start.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.locations import REPO_ROOT

# vLLM's model inspection, as the engine runs it at start-up.
pytestmark = pytest.mark.engine

# The demo pair's two architectures: the target's and the P-EAGLE drafter's.
DEMO_ARCHITECTURES = ["LlamaForCausalLM", "Eagle3LlamaForCausalLM"]


def run(code: str, cache_root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        env={"PATH": "/usr/bin:/bin", "VLLM_CACHE_ROOT": str(cache_root), "HOME": "/nonexistent"},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_warming_writes_the_entries_vllm_reads_at_start_up(tmp_path: Path):
    warmed = run(
        "from serving.model_info_cache import main; "
        f"raise SystemExit(main({DEMO_ARCHITECTURES!r}))",
        tmp_path,
    )
    assert warmed.returncode == 0, warmed.stdout + warmed.stderr
    assert "2 architectures cached, 0 left" in warmed.stdout
    entries = sorted(path.name for path in (tmp_path / "modelinfos").iterdir())
    assert len(entries) == 2, entries
    assert all(
        "hash" in json.loads((tmp_path / "modelinfos" / name).read_text()) for name in entries
    )

    # vLLM's own start-up path now answers from the cache: no subprocess is started.
    probe = run(
        "from vllm.model_executor.models import registry\n"
        "def refuse(fn):\n"
        "    raise AssertionError('vLLM resolved an architecture in a subprocess')\n"
        "registry._run_in_subprocess = refuse\n"
        f"for name in {DEMO_ARCHITECTURES!r}:\n"
        "    info = registry.ModelRegistry.models[name].inspect_model_cls()\n"
        "    print(name, info.architecture)\n",
        tmp_path,
    )
    assert probe.returncode == 0, probe.stdout + probe.stderr
    assert "LlamaForCausalLM LlamaForCausalLM" in probe.stdout


def test_an_unknown_architecture_named_at_build_fails_the_build(tmp_path: Path):
    warmed = run(
        "from serving.model_info_cache import main; raise SystemExit(main(['NoSuchArch']))",
        tmp_path,
    )
    # Named but not registered: nothing cached, and the build step fails saying why.
    assert warmed.returncode == 1, warmed.stdout + warmed.stderr
    assert "NoSuchArch (not an architecture this vLLM registers)" in warmed.stdout
