"""The docker backend: `docker run IMAGE serve` as SageMaker runs it, the demo tree's model and
channels mounted read-only at /opt/ml, stopped by `docker stop` with SageMaker's 30 s grace."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Self

from harness.serving_container import Container
from serving import paths

# SageMaker's (and `docker stop`'s) time between SIGTERM and SIGKILL.
SAGEMAKER_STOP_GRACE_SECONDS = 30
CONTAINER_OPT_ML = str(paths.DEFAULT_OPT_ML_ROOT)
# What a host run needs and a container has built in.
HOST_ONLY_SETTINGS = ("PYTHON", "OPT_ML_ROOT")
IN_CONTAINER = Path(__file__).resolve().parent / "in_container"


def in_container_script(name: str) -> str:
    """The source of harness/in_container/NAME.py, for `python3 -c` inside the container."""
    return (IN_CONTAINER / f"{name}.py").read_text()


def container_settings(env: Mapping[str, str]) -> dict[str, str]:
    """What a caller set for the container: `env` where it differs from this shell's, without
    the host-only settings (the image has its own Python and /opt/ml)."""
    return {
        key: value
        for key, value in env.items()
        if os.environ.get(key) != value and key not in HOST_ONLY_SETTINGS
    }


class DockerContainer(Container):
    """`docker run IMAGE serve` as SageMaker runs it: the demo tree's model and channels
    mounted read-only at /opt/ml, SIGTERM by `docker stop` with SageMaker's 30 s grace.

    On the host network the front binds `port` (SAGEMAKER_BIND_TO_PORT); with
    network="none" only loopback exists inside and callers probe through `exec()`.
    """

    def __init__(
        self,
        name: str,
        env: Mapping[str, str],
        image: str,
        docker: str,
        opt_ml_root: Path,
        port: int | None = None,
        log_path: Path | None = None,
        network: str = "host",
        run_args: tuple[str, ...] = ("--shm-size", "1g"),
        command: tuple[str, ...] = ("serve",),
    ):
        super().__init__(name, env, port, log_path)
        self.image = image
        self.docker = docker
        self.opt_ml_root = opt_ml_root
        self.network = network
        self.run_args = run_args
        self.command = command
        self.container_name = f"{name}-{self.port}"
        self.logs: subprocess.Popen | None = None
        self.returncode: int | None = None

    def mounts(self) -> list[str]:
        """The model and each channel, read-only, where SageMaker mounts them."""
        args = ["--volume", f"{self.opt_ml_root / 'model'}:{CONTAINER_OPT_ML}/model:ro"]
        channels = self.opt_ml_root / "additional-model-data-sources"
        for channel in sorted(channels.iterdir()) if channels.is_dir() else []:
            target = f"{CONTAINER_OPT_ML}/additional-model-data-sources/{channel.name}"
            args += ["--volume", f"{channel}:{target}:ro"]
        return args

    def run_argv(self) -> list[str]:
        # Paths into the demo tree name the same files at /opt/ml inside.
        settings = {
            key: value.replace(str(self.opt_ml_root), CONTAINER_OPT_ML)
            for key, value in container_settings(self.env).items()
        }
        if self.network == "host":
            settings["SAGEMAKER_BIND_TO_PORT"] = str(self.port)
        environment = [arg for key, value in settings.items() for arg in ("-e", f"{key}={value}")]
        return [
            self.docker, "run", "--detach", "--name", self.container_name,
            "--network", self.network, *self.run_args, *self.mounts(), *environment,
            self.image, *self.command,
        ]  # fmt: skip

    def start(self) -> Self:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.started_at = time.monotonic()
        subprocess.run(self.run_argv(), check=True, capture_output=True)
        with self.log_path.open("wb") as log:
            self.logs = subprocess.Popen(
                [self.docker, "logs", "--follow", self.container_name],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        return self

    def inspect(self, template: str) -> str | None:
        argv = [self.docker, "inspect", "--format", template, self.container_name]
        result = subprocess.run(argv, capture_output=True, text=True)
        return result.stdout.strip() if result.returncode == 0 else None

    def exit_code(self) -> int | None:
        if self.started_at is None:
            raise RuntimeError(f"container {self.name} was not started; call start() first.")
        if self.returncode is None:
            state = self.inspect("{{.State.Running}} {{.State.ExitCode}}")
            if state is not None and not state.startswith("true"):
                self.returncode = int(state.split()[1])
        return self.returncode

    def exec(self, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess:
        """Run `argv` inside the container (as `docker exec` does)."""
        return subprocess.run(
            [self.docker, "exec", self.container_name, *argv],
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def kill_engine(self, sig: int = signal.SIGKILL, workers: bool = False) -> None:
        extra = ["workers"] if workers else []
        killed = self.exec(
            "python3", "-c", in_container_script("kill_engine"), str(int(sig)), *extra
        )
        if killed.returncode != 0 or not killed.stdout.strip():
            raise RuntimeError(f"no vLLM server to kill in {self.name}: {killed.stderr}")

    def zombies(self) -> list[str]:
        """Processes in the container that ended and were never reaped: `pid name` each."""
        listed = self.exec("python3", "-c", in_container_script("zombies"))
        return listed.stdout.split("\n")[:-1] if listed.returncode == 0 else [listed.stderr]

    def stop(self, timeout: float = SAGEMAKER_STOP_GRACE_SECONDS) -> int | None:
        """`docker stop`: SIGTERM, SIGKILL after `timeout`; the exit code. The container is
        removed; its log stays in `log_path`."""
        if self.started_at is None:
            return None
        if self.exit_code() is None:
            subprocess.run(
                [self.docker, "stop", "--time", str(int(timeout)), self.container_name],
                capture_output=True,
            )
            self.exit_code()
        if self.logs is not None:
            try:
                self.logs.wait(10)
            except subprocess.TimeoutExpired:
                self.logs.kill()
        subprocess.run([self.docker, "rm", "--force", self.container_name], capture_output=True)
        return self.returncode
