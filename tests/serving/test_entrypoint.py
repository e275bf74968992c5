"""entrypoint.sh run on the host, with the host venv as the image's python. `entrypoint.sh
serve` with a real vLLM is the shared server fixture's job (conftest.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from serving import paths
from tests.support.image_files import ROOT

ENTRYPOINT = ROOT / "entrypoint.sh"


def run_entrypoint(*args: str, **env: str) -> tuple[int, int, str, str]:
    """(entrypoint's pid, exit code, stdout, stderr) with the host venv as the image's python."""
    environ = {key: value for key, value in os.environ.items() if not key.startswith("SM_")}
    environ.update({"PYTHON": sys.executable, **env})
    process = subprocess.Popen(
        [str(ENTRYPOINT), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environ,
        cwd=ROOT,
    )
    stdout, stderr = process.communicate(timeout=120)
    return process.pid, process.returncode, stdout, stderr


def test_entrypoint_is_an_executable_posix_script():
    assert os.access(ENTRYPOINT, os.X_OK)
    text = ENTRYPOINT.read_text()
    assert text.startswith("#!/bin/sh\n")
    assert "\nset -e\n" in text
    subprocess.run(["sh", "-n", str(ENTRYPOINT)], check=True)


def test_entrypoint_runs_other_commands_as_given():
    _, code, stdout, _ = run_entrypoint("echo", "hi")
    assert (code, stdout) == (0, "hi\n")
    code = run_entrypoint("sh", "-c", "exit 7")[1]
    assert code == 7


def test_entrypoint_execs_other_commands():
    """`exec`: the command replaces the entrypoint's shell, so it is PID 1 in the container."""
    pid, code, stdout, _ = run_entrypoint("sh", "-c", "echo $$")
    assert code == 0
    assert int(stdout) == pid


def test_entrypoint_execs_serve_with_python(tmp_path: Path):
    """`serve` becomes `$PYTHON -m serving serve` in the entrypoint's own process."""
    fake_python = tmp_path / "python"
    fake_python.write_text('#!/bin/sh\necho "$$ $*"\n')
    fake_python.chmod(0o755)
    pid, code, stdout, _ = run_entrypoint("serve", PYTHON=str(fake_python))
    assert code == 0
    assert stdout.split() == [str(pid), "-m", "serving", "serve"]


def test_entrypoint_check_accepts_the_demo_pair(demo_root: Path):
    code, stdout, stderr = run_entrypoint(
        "check",
        OPT_ML_ROOT=str(demo_root),
        SM_VLLM_SPECULATIVE_CONFIG=json.dumps(
            {"method": "eagle3", "num_speculative_tokens": 3, "parallel_drafting": True}
        ),
    )[1:]
    assert code == 0, stdout + stderr


def test_entrypoint_check_fails_fast_without_a_model(tmp_path: Path):
    code, stdout, stderr = run_entrypoint("check", OPT_ML_ROOT=str(tmp_path))[1:]
    assert code != 0
    assert str(tmp_path / paths.MODEL_SUBDIR) in stdout + stderr
