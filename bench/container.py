"""The containers the tests and the benchmark run, handled the way SageMaker handles them:
started with `serve`, pinged with a 2 s timeout until the first 200, stopped with SIGTERM and,
30-odd seconds later, SIGKILL.

`Container` is what callers use: `start()`, `wait_ready()`, `url`, `log_text()`,
`engine_socket()`, `stop()`. A backend says how the container runs: `HostContainer` runs
`entrypoint.sh serve` as a process group on this machine, its output in a log file;
`DockerContainer` runs `docker run IMAGE serve` with the demo tree mounted read-only where
SageMaker mounts it. `LocalContainer` is the benchmark's: one speculation configuration on the
demo tree.
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
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

import httpx

from serving import paths

if TYPE_CHECKING:
    import psutil

REPO_ROOT = Path(__file__).resolve().parents[1]
ENTRYPOINT = REPO_ROOT / "entrypoint.sh"
RANDOM_DEMO_ROOT = REPO_ROOT / "build" / "opt_ml"
TRAINED_DEMO_ROOT = REPO_ROOT / "build" / "opt_ml_trained"
# The first `make serve`'s pair, trained in minutes: a P-EAGLE head only.
QUICK_DEMO_ROOT = REPO_ROOT / "build" / "opt_ml_quick"
# The trained demo pair keeps its sequential EAGLE-3 head in a second channel.
EAGLE3_CHANNEL = "eagle3"
LOOPBACK = "127.0.0.1"

STARTUP_TIMEOUT_SECONDS = 900.0
STOP_TIMEOUT_SECONDS = 40.0
PING_TIMEOUT_SECONDS = 2.0  # SageMaker's
PING_INTERVAL_SECONDS = 0.25
ENGINE_SOCKET_TIMEOUT_SECONDS = 30.0
# The front logs `engine on unix:PATH` once it has picked its engine's socket; a whole line,
# so a half-written path is never read. Quotes and commas end it in JSON logs.
ENGINE_SOCKET_LINE = re.compile(r"engine on unix:([^\s\"',;]+)[^\n]*\n")
# Container settings of the calling shell must not leak into a configuration under test.
CONTAINER_PREFIXES = ("SM_", "SAGEMAKER_", "SERVING_", "OPT_ML_ROOT", "HF_MODEL_ID")
# The demo pairs are float32; the CPU build would cast them to bfloat16, which CPUs without
# bf16 instructions emulate slowly. The Makefile's DEMO_ENV and the compose file say the same.
DEMO_DTYPE = "float32"


def default_opt_ml_root() -> Path:
    """The trained demo pair when it is built (`make trained-model`), the random one otherwise."""
    if (TRAINED_DEMO_ROOT / ".stamp").is_file():
        return TRAINED_DEMO_ROOT
    return RANDOM_DEMO_ROOT


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return sock.getsockname()[1]


def host_environment(enforce_eager: bool = True, **settings: str) -> dict[str, str]:
    """This shell's environment without its container settings, the demo's defaults, then
    `settings` (e.g. OPT_ML_ROOT, SM_VLLM_SPECULATIVE_CONFIG)."""
    env = {
        key: value for key, value in os.environ.items() if not key.startswith(CONTAINER_PREFIXES)
    }
    env.update(
        PYTHON=sys.executable,
        # GiB; the CPU build would otherwise reserve most of the machine for its KV cache.
        VLLM_CPU_KVCACHE_SPACE="1",
        SM_VLLM_MAX_MODEL_LEN="2048",
        SM_VLLM_DTYPE=DEMO_DTYPE,
    )
    if enforce_eager:
        # Skips torch.compile: a cold start takes ~40 s instead of ~100 s on two cores.
        env["SM_VLLM_ENFORCE_EAGER"] = "true"
    env.update(settings)
    return env


class Container(ABC):
    """A serving container as SageMaker sees it: a port to ping and invoke, a log, a signal.

    Every backend writes the container's output to `log_path`. `wait_ready()` records each
    answer to its pings in `startup_pings` (status, seconds) and the time to the first 200 in
    `ready_after`; a subclass sees each answer in `on_startup_ping()`.
    """

    def __init__(
        self,
        name: str,
        env: Mapping[str, str],
        port: int | None = None,
        log_path: Path | None = None,
    ):
        self.name = name
        self.env = dict(env)
        self.port = port or free_port()
        self.log_path = log_path or Path(tempfile.gettempdir()) / f"{name}-{self.port}.log"
        self.started_at: float | None = None
        self.ready_after: float | None = None
        self.startup_pings: list[tuple[int, float]] = []

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    @abstractmethod
    def start(self) -> Self:
        """Start the container and return at once; `wait_ready()` waits for the model."""

    @abstractmethod
    def exit_code(self) -> int | None:
        """None while the container runs; its exit code once it has stopped."""

    @abstractmethod
    def stop(self, timeout: float = STOP_TIMEOUT_SECONDS) -> int | None:
        """SIGTERM (the front drains, then stops vLLM); SIGKILL after `timeout`. The exit code."""

    @abstractmethod
    def kill_engine(self, sig: int = signal.SIGKILL) -> None:
        """Send `sig` to the vLLM server process, as a crash or the OOM killer would."""

    def wait_exit(self, timeout: float) -> int:
        """The exit code once the container has stopped; TimeoutError after `timeout`."""
        deadline = time.monotonic() + timeout
        while (code := self.exit_code()) is None:
            if time.monotonic() >= deadline:
                raise TimeoutError(f"container {self.name} still runs after {timeout:.0f} s")
            time.sleep(0.05)
        return code

    def wait_ready(self, timeout: float = STARTUP_TIMEOUT_SECONDS) -> float:
        """Ping like SageMaker (2 s timeout) until 200; the seconds since `start()`."""
        if self.started_at is None:
            raise RuntimeError(f"container {self.name} was not started; call start() first.")
        deadline = time.monotonic() + timeout
        with httpx.Client(timeout=PING_TIMEOUT_SECONDS) as http:
            while time.monotonic() < deadline:
                code = self.exit_code()
                if code is not None:
                    raise RuntimeError(
                        f"container {self.name} exited with code {code} before it was ready; "
                        f"its log ({self.log_path}) ends:\n{self.tail()}"
                    )
                began = time.perf_counter()
                try:
                    status = http.get(f"{self.url}/ping").status_code
                except httpx.TransportError:
                    status = 0  # not listening yet, or silent for 2 s
                if status:
                    self.startup_pings.append((status, time.perf_counter() - began))
                    self.on_startup_ping(http, status)
                if status == 200:
                    self.ready_after = time.monotonic() - self.started_at
                    return self.ready_after
                time.sleep(PING_INTERVAL_SECONDS)
        raise TimeoutError(
            f"container {self.name} not ready in {timeout:.0f} s; its log ({self.log_path}) "
            f"ends:\n{self.tail()}"
        )

    def on_startup_ping(self, http: httpx.Client, status: int) -> None:
        """Called with each answer to a start-up ping, before the next one is sent: a hook
        for callers that look at the container while it loads (the tests do)."""
        return None

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def log_once(self, text: str, timeout: float = 5.0) -> str:
        """The log once it contains `text` (or after `timeout`): lines can trail the event,
        the access line for instance is written after the answer."""
        deadline = time.monotonic() + timeout
        while text not in (log := self.log_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        return log

    def engine_socket(self, timeout: float = ENGINE_SOCKET_TIMEOUT_SECONDS) -> Path:
        """The Unix socket the front talks to vLLM on, read from its `engine on unix:PATH`
        log line (waiting up to `timeout` for it)."""
        deadline = time.monotonic() + timeout
        while (match := ENGINE_SOCKET_LINE.search(self.log_text())) is None:
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"container {self.name} logged no 'engine on unix:PATH' line in "
                    f"{timeout:.0f} s; its log ({self.log_path}) ends:\n{self.tail()}"
                )
            time.sleep(0.05)
        return Path(match.group(1))

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class HostContainer(Container):
    """`entrypoint.sh serve` on this machine, as SageMaker would run it in the image: a process
    group of its own (the front, and vLLM under it), output to `log_path`."""

    process: subprocess.Popen | None = None  # set by start()

    def command(self) -> list[str]:
        return [str(ENTRYPOINT), "serve"]

    def environment(self) -> dict[str, str]:
        """What the process gets: `env`, and the port SageMaker would bind it to."""
        return {**self.env, "SAGEMAKER_BIND_TO_PORT": str(self.port)}

    def start(self) -> Self:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.started_at = time.monotonic()
        with self.log_path.open("wb") as log:  # the child keeps its own descriptor
            self.process = subprocess.Popen(
                self.command(),
                env=self.environment(),
                cwd=REPO_ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return self

    def exit_code(self) -> int | None:
        if self.process is None:
            raise RuntimeError(f"container {self.name} was not started; call start() first.")
        return self.process.poll()

    def stop(self, timeout: float = STOP_TIMEOUT_SECONDS) -> int | None:
        if self.process is None:
            return None
        if self.process.poll() is not None:
            # A front that died without its engine (SIGKILL) leaves it in the group.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
            return self.process.returncode
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            return self.process.wait()

    def find_engine_process(self) -> psutil.Process | None:
        """The vLLM server: the front's child running vLLM (its other children parse bodies),
        or None before the front has started it."""
        import psutil

        for child in psutil.Process(self.process.pid).children():
            with contextlib.suppress(psutil.Error):
                if "vllm" in " ".join(child.cmdline()):
                    return child
        return None

    def engine_process(self) -> psutil.Process:
        engine = self.find_engine_process()
        if engine is None:
            raise RuntimeError(f"{self.name}: the front has no vLLM child")
        return engine

    def kill_engine(self, sig: int = signal.SIGKILL) -> None:
        os.kill(self.engine_process().pid, sig)


# SageMaker's (and `docker stop`'s) time between SIGTERM and SIGKILL.
SAGEMAKER_STOP_GRACE_SECONDS = 30
CONTAINER_OPT_ML = str(paths.DEFAULT_OPT_ML_ROOT)
# What a host run needs and a container has built in.
HOST_ONLY_SETTINGS = ("PYTHON", "OPT_ML_ROOT")


# Run inside the container by `docker exec`: the image has Python, not procps.
# The vLLM server is the front's child (vLLM renames its processes, so not found by name).
KILL_ENGINE_SCRIPT = """
import os, sys
def read(pid, name):
    try:
        return open(f"/proc/{pid}/{name}", "rb").read()
    except OSError:
        return b""
pids = [pid for pid in os.listdir("/proc") if pid.isdigit()]
fronts = {pid for pid in pids if b"-m\\0serving\\0serve" in read(pid, "cmdline")}
for pid in pids:
    stat = read(pid, "stat")
    if stat and stat[stat.rindex(b")") + 2 :].split()[1].decode() in fronts \
            and b"vllm" in read(pid, "cmdline"):
        os.kill(int(pid), int(sys.argv[1]))
        print(pid)
"""
ZOMBIES_SCRIPT = """
import os
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        stat = open(f"/proc/{pid}/stat").read()
    except OSError:
        continue
    name, state = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2]
    if state == "Z":
        print(pid, name)
"""


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

    def kill_engine(self, sig: int = signal.SIGKILL) -> None:
        killed = self.exec("python3", "-c", KILL_ENGINE_SCRIPT, str(int(sig)))
        if killed.returncode != 0 or not killed.stdout.strip():
            raise RuntimeError(f"no vLLM server to kill in {self.name}: {killed.stderr}")

    def zombies(self) -> list[str]:
        """Processes in the container that ended and were never reaped: `pid name` each."""
        listed = self.exec("python3", "-c", ZOMBIES_SCRIPT)
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


class LocalContainer(HostContainer):
    """The benchmark's container: one speculation configuration on a demo tree. The KV cache
    size, max model length and dtype follow this shell's VLLM_CPU_KVCACHE_SPACE,
    SM_VLLM_MAX_MODEL_LEN and SM_VLLM_DTYPE when they are set."""

    def __init__(
        self,
        configuration: Configuration,
        opt_ml_root: Path | None = None,
        log_path: Path | None = None,
        enforce_eager: bool = True,
        extra_env: Mapping[str, str] | None = None,
        port: int | None = None,
    ):
        self.configuration = configuration
        self.opt_ml_root = opt_ml_root or default_opt_ml_root()
        settings = {
            "OPT_ML_ROOT": str(self.opt_ml_root),
            "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1"),
            "SM_VLLM_MAX_MODEL_LEN": os.environ.get("SM_VLLM_MAX_MODEL_LEN", "2048"),
            "SM_VLLM_DTYPE": os.environ.get("SM_VLLM_DTYPE", DEMO_DTYPE),
        }
        speculative = configuration.speculative_config()
        if speculative is not None:
            settings["SM_VLLM_SPECULATIVE_CONFIG"] = json.dumps(speculative)
        env = host_environment(enforce_eager, **{**settings, **(extra_env or {})})
        super().__init__(configuration.name, env, port, log_path)
