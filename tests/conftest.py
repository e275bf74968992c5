"""Shared fixtures: the demo model tree and real running containers (front + vLLM CPU build).

The demo tree is the trained pair when it is built (`make test` builds it), the random pair
otherwise; the trained one is what makes acceptance observable.

One container per configuration, started once per session, all configurations in
parallel: a cold start costs about a minute and a half on two cores.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil
import pytest

from serving.bench.container import RANDOM_DEMO_ROOT, TRAINED_DEMO_ROOT, default_opt_ml_root

ROOT = Path(__file__).resolve().parents[1]
DEMO_ROOT = default_opt_ml_root()
TRAINED = DEMO_ROOT == TRAINED_DEMO_ROOT
ENTRYPOINT = ROOT / "entrypoint.sh"
LOG_DIR = ROOT / "build" / "test-logs"
STARTUP_TIMEOUT = 900
LOADING_PROBE = {"messages": [{"role": "user", "content": "Are you up?"}], "max_tokens": 4}
PEAGLE_MAX_CONCURRENT = 8
PEAGLE_CONFIG = {"method": "eagle3", "num_speculative_tokens": 3, "parallel_drafting": True}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def clean_env(**overrides: str) -> dict[str, str]:
    """The runner's environment without any container settings, plus `overrides`."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("SM_", "SAGEMAKER_", "SERVING_", "OPT_ML_ROOT", "HF_MODEL_ID"))
    }
    env.update(
        PYTHON=sys.executable,
        VLLM_CPU_KVCACHE_SPACE="1",
        SM_VLLM_MAX_MODEL_LEN="2048",
        # Skips torch.compile: a cold start takes ~40 s instead of ~100 s on two cores.
        SM_VLLM_ENFORCE_EAGER="true",
    )
    env.update(overrides)
    return env


@dataclass
class Container:
    """`entrypoint.sh serve` on the host, as SageMaker would run it in the image."""

    name: str
    env: dict[str, str]
    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None
    startup_pings: list[tuple[int, float]] = field(default_factory=list)
    started_at: float = 0.0
    ready_after: float | None = None
    loading_invocation: tuple[int, dict] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return LOG_DIR / f"{self.name}.log"

    def start(self) -> Container:
        LOG_DIR.mkdir(parents=True, exist_ok=True)
        env = {**self.env, "SAGEMAKER_BIND_TO_PORT": str(self.port)}
        self.started_at = time.monotonic()
        self.process = subprocess.Popen(
            [str(ENTRYPOINT), "serve"],
            env=env,
            cwd=ROOT,
            stdout=self.log_path.open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        return self

    def poll_until_ready(self, timeout: float = STARTUP_TIMEOUT) -> None:
        """Ping like SageMaker does (2 s timeout) until 200, recording every answer."""
        deadline = time.monotonic() + timeout
        with httpx.Client(timeout=2.0) as client:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise RuntimeError(
                        f"{self.name} exited with {self.process.returncode}:\n{self.tail()}"
                    )
                began = time.perf_counter()
                try:
                    status = client.get(f"{self.url}/ping").status_code
                except httpx.TransportError:
                    status = 0
                elapsed = time.perf_counter() - began
                if status:
                    self.startup_pings.append((status, elapsed))
                if status == 503 and self.loading_invocation is None:
                    answer = client.post(f"{self.url}/invocations", json=LOADING_PROBE)
                    self.loading_invocation = (answer.status_code, answer.json())
                if status == 200:
                    self.ready_after = time.monotonic() - self.started_at
                    return
                time.sleep(0.25)
        raise TimeoutError(f"{self.name} not ready in {timeout} s:\n{self.tail()}")

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return ""

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def log_once(self, text: str, timeout: float = 5.0) -> str:
        """The log once it contains `text`: the access line is written after the answer."""
        deadline = time.monotonic() + timeout
        while text not in (log := self.log_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        return log

    def stop(self, timeout: float = 40) -> int | None:
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else None
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            return self.process.wait()

    def engine_process(self) -> psutil.Process:
        """The vLLM server: the front's only child process."""
        (child,) = psutil.Process(self.process.pid).children()
        return child

    def engine_port(self) -> int:
        match = re.search(r"engine on http://127\.0\.0\.1:(\d+)", self.log_text())
        assert match, "the front did not log its engine's address"
        return int(match.group(1))

    def metric(self, name: str, client: httpx.Client | None = None) -> float:
        """Sum of a metric's samples on the front's /metrics."""
        text = (client or httpx).get(f"{self.url}/metrics").text
        total = 0.0
        for line in text.splitlines():
            if line.startswith(name + "{") or line.startswith(name + " "):
                total += float(line.rsplit(" ", 1)[1])
        return total


def demo_env(**overrides: str) -> dict[str, str]:
    return clean_env(OPT_ML_ROOT=str(DEMO_ROOT), **overrides)


@pytest.fixture(scope="session")
def demo_root() -> Path:
    if not TRAINED:  # the random pair builds in seconds; the trained one is `make trained-model`
        subprocess.run(
            [sys.executable, "-m", "model_data_sources", str(RANDOM_DEMO_ROOT)],
            check=True,
            cwd=ROOT,
        )
    return DEMO_ROOT


CONFIGURATIONS = {
    # The main container: P-EAGLE on, a small concurrency limit to reach 429 quickly, and
    # SageMaker's stateful sessions on so session headers can be checked.
    "peagle": lambda: demo_env(
        SM_VLLM_SPECULATIVE_CONFIG=json.dumps(PEAGLE_CONFIG),
        MAX_CONCURRENT_REQUESTS=str(PEAGLE_MAX_CONCURRENT),
        SAGEMAKER_ENABLE_STATEFUL_SESSIONS="true",
    ),
    # The target alone, for the lossless comparison; JSON logs.
    "plain": lambda: demo_env(SERVING_LOG_FORMAT="json"),
    # Containers that a test stops: one by SIGTERM, one by killing its engine.
    "drain": lambda: demo_env(SM_VLLM_SPECULATIVE_CONFIG=json.dumps(PEAGLE_CONFIG)),
    "doomed": lambda: demo_env(),
}


@pytest.fixture(scope="session")
def containers(demo_root: Path):
    """Every shared configuration, started together and stopped at the end of the session."""
    # Timings are taken by this process: let it, like the fronts, win the CPU from the
    # (niced) engines, so a slow answer means a slow server and not a starved client.
    with contextlib.suppress(PermissionError):
        os.nice(-5)
    started = {
        name: Container(name, make_env()).start() for name, make_env in CONFIGURATIONS.items()
    }
    try:
        for container in started.values():
            container.poll_until_ready()
        yield started
    finally:
        for container in started.values():
            container.stop()


@pytest.fixture(scope="session")
def peagle(containers) -> Container:
    return containers["peagle"]


@pytest.fixture(scope="session")
def plain(containers) -> Container:
    return containers["plain"]


@pytest.fixture(scope="session")
def drain(containers) -> Container:
    return containers["drain"]


@pytest.fixture(scope="session")
def doomed(containers) -> Container:
    return containers["doomed"]


@pytest.fixture()
def client(peagle: Container):
    with httpx.Client(base_url=peagle.url, timeout=120) as http:
        yield http
