"""A virtual environment per client family, as a user installs it: the frozen requirements
in tests/clients/requirements, built once and kept outside the clone, keyed by the file and
this Python, so a warm run installs nothing."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

CLIENTS = Path(__file__).parents[1] / "clients"
CALLS = CLIENTS / "calls"
MARKER = "=== client results ==="
# Clients that need a newer Python than the suite's: the oldest each takes.
NEWER_PYTHON = {"sagemaker-http2": (3, 12)}
# The local runtime checks no credentials; boto3 still wants some, and a region.
LOCAL_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "local",
    "AWS_SECRET_ACCESS_KEY": "local",
    "AWS_DEFAULT_REGION": "us-east-1",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
}


def base_python(name: str) -> tuple[str, str]:
    """The interpreter an environment is made from, and its version: this one, or for a
    client in NEWER_PYTHON, the first Python at least that new on PATH or in pyenv's
    versions (a pyenv shim for a version not selected fails its probe and is passed over)."""
    oldest = NEWER_PYTHON.get(name)
    if oldest is None or sys.version_info >= oldest:
        return sys.executable, sys.version
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    candidates = [f"python{oldest[0]}.{minor}" for minor in range(oldest[1], oldest[1] + 4)]
    candidates += sorted(str(path) for path in root.glob("versions/3.*/bin/python3"))
    probe = f"import sys; assert sys.version_info >= {oldest!r}; print(sys.version)"
    for candidate in candidates:
        try:
            found = subprocess.run(
                [candidate, "-c", probe], capture_output=True, text=True, timeout=30
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if found.returncode == 0:
            return candidate, found.stdout.strip()
    raise RuntimeError(
        f"the {name} client needs Python {oldest[0]}.{oldest[1]} or later, and none was found "
        f"on PATH or under {root}/versions; install one (pyenv install 3.12, or Debian's "
        "python3.12) and run again."
    )


def env_dir(name: str) -> Path:
    requirements = (CLIENTS / "requirements" / f"{name}.txt").read_bytes()
    _, version = base_python(name)
    key = hashlib.sha256(requirements + version.encode()).hexdigest()[:16]
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "sagemaker-vllm-peagle" / "client-envs" / f"{name}-{key}"


def client_python(name: str) -> Path:
    """The environment's python, built first when missing (a staging folder renamed into
    place, so an interrupted build is never taken for a finished one)."""
    target = env_dir(name)
    python = target / "bin" / "python"
    if python.exists():
        return python
    staging = target.with_name(f"{target.name}.staging-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    subprocess.run([base_python(name)[0], "-m", "venv", str(staging)], check=True)
    subprocess.run(
        [
            str(staging / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
            str(CLIENTS / "requirements" / f"{name}.txt"),
        ],
        check=True,
    )
    # Renamed, a venv's python still finds its packages (console scripts would not: the
    # suite runs python itself).
    staging.rename(target)
    return python


def run_calls(
    env: str,
    script: str,
    url: str,
    endpoint: str,
    max_tokens: int,
    extra_env: dict[str, str] | None = None,
) -> dict:
    """Run one client script in its environment; its results by case name."""
    done = subprocess.run(
        [str(client_python(env)), str(CALLS / script), url, endpoint, str(max_tokens)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(CALLS), **(extra_env or {})},
    )
    _, marker, results = done.stdout.partition(MARKER + "\n")
    assert marker, f"{script} reported nothing (exit {done.returncode}):\n{done.stderr[-3000:]}"
    return json.loads(results)


def build_all() -> None:
    """Every client family's environment, all at once: each install waits mostly on the
    network (CI builds them beside `make setup`)."""
    names = sorted(requirements.stem for requirements in (CLIENTS / "requirements").glob("*.txt"))
    with ThreadPoolExecutor(max_workers=len(names)) as pool:
        for python in pool.map(client_python, names):
            print(python, flush=True)


if __name__ == "__main__":
    build_all()
