"""A local container for the benchmark: `entrypoint.sh serve` on the host with one speculation
configuration, its front and engine ports chosen here, stopped with SIGTERM like SageMaker does."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from serving import paths

REPO_ROOT = Path(__file__).resolve().parents[2]
ENTRYPOINT = REPO_ROOT / "entrypoint.sh"
RANDOM_DEMO_ROOT = REPO_ROOT / "build" / "opt_ml"
TRAINED_DEMO_ROOT = REPO_ROOT / "build" / "opt_ml_trained"
# The trained demo pair keeps its sequential EAGLE-3 head in a second channel.
EAGLE3_CHANNEL = "eagle3"


def default_opt_ml_root() -> Path:
    """The trained demo pair when it is built (`make trained-model`), the random one otherwise."""
    if (TRAINED_DEMO_ROOT / ".stamp").is_file():
        return TRAINED_DEMO_ROOT
    return RANDOM_DEMO_ROOT


STARTUP_TIMEOUT_SECONDS = 900.0
STOP_TIMEOUT_SECONDS = 40.0
# Container settings of the calling shell must not leak into a configuration under test.
CONTAINER_PREFIXES = ("SM_", "SAGEMAKER_", "SERVING_", "OPT_ML_ROOT", "HF_MODEL_ID")


@dataclass(frozen=True)
class Configuration:
    """One speculation setting: method none, eagle3 (sequential) or peagle, K and the drafter."""

    method: str
    k: int | None = None
    drafter: Path | None = None

    @property
    def name(self) -> str:
        return "none" if self.method == "none" else f"{self.method}-k{self.k}"

    def speculative_config(self) -> dict[str, Any] | None:
        if self.method == "none":
            return None
        config: dict[str, Any] = {"method": "eagle3", "num_speculative_tokens": self.k}
        if self.drafter is not None:
            config["model"] = str(self.drafter)
        if self.method == "peagle":
            config["parallel_drafting"] = True
        return config

    def describe(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "k": self.k,
            "drafter": str(self.drafter) if self.drafter else None,
            "speculative_config": self.speculative_config(),
        }


def parse_configuration(text: str, drafter: Path | None) -> Configuration:
    """`none`, `eagle3:3` or `peagle:7` (method:K)."""
    method, _, k = text.strip().partition(":")
    if method == "none" and not k:
        return Configuration("none")
    if method not in ("eagle3", "peagle") or not k.isdigit() or int(k) < 1:
        raise SystemExit(
            f"configuration {text!r} is not understood; use none, eagle3:K or peagle:K (K >= 1)."
        )
    return Configuration(method, int(k), drafter)


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind((paths.ENGINE_HOST, 0))
        return sock.getsockname()[1]


@dataclass
class LocalContainer:
    configuration: Configuration
    opt_ml_root: Path = field(default_factory=default_opt_ml_root)
    port: int = field(default_factory=free_port)
    engine_port: int = field(default_factory=free_port)
    log_path: Path | None = None
    enforce_eager: bool = True
    extra_env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def engine_url(self) -> str:
        return f"http://{paths.ENGINE_HOST}:{self.engine_port}"

    def environment(self) -> dict[str, str]:
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(CONTAINER_PREFIXES)
        }
        env.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
        env.update(
            PYTHON=sys.executable,
            OPT_ML_ROOT=str(self.opt_ml_root),
            SAGEMAKER_BIND_TO_PORT=str(self.port),
            SERVING_ENGINE_PORT=str(self.engine_port),
            SM_VLLM_MAX_MODEL_LEN=os.environ.get("SM_VLLM_MAX_MODEL_LEN", "2048"),
        )
        if self.enforce_eager:
            # Skips torch.compile: a cold start takes ~40 s instead of ~100 s on two cores.
            env["SM_VLLM_ENFORCE_EAGER"] = "true"
        speculative = self.configuration.speculative_config()
        if speculative is not None:
            env["SM_VLLM_SPECULATIVE_CONFIG"] = json.dumps(speculative)
        env.update(self.extra_env)
        return env

    def start(self) -> LocalContainer:
        log = subprocess.DEVNULL
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [str(ENTRYPOINT), "serve"],
            env=self.environment(),
            cwd=REPO_ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        return self

    def wait_ready(self, timeout: float = STARTUP_TIMEOUT_SECONDS) -> float:
        """Ping like SageMaker (2 s timeout) until 200; the seconds it took."""
        assert self.process is not None
        started = time.monotonic()
        with httpx.Client(timeout=2.0) as http:
            while time.monotonic() - started < timeout:
                if self.process.poll() is not None:
                    raise RuntimeError(
                        f"container {self.configuration.name} exited with code "
                        f"{self.process.returncode} before it was ready; see {self.log_path}."
                    )
                try:
                    if http.get(f"{self.url}/ping").status_code == 200:
                        return time.monotonic() - started
                except httpx.TransportError:
                    pass
                time.sleep(0.5)
        self.stop()
        raise TimeoutError(f"container {self.configuration.name} not ready in {timeout:.0f} s.")

    def stop(self, timeout: float = STOP_TIMEOUT_SECONDS) -> int | None:
        """SIGTERM (the front drains, then stops vLLM); SIGKILL the group after `timeout`."""
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else None
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            return self.process.wait()

    def __enter__(self) -> LocalContainer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
