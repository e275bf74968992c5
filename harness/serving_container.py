"""What every backend offers: a serving container handled the way SageMaker handles it,
started with `serve`, pinged with a 2 s timeout until the first 200, stopped with SIGTERM and,
30-odd seconds later, SIGKILL.

`Container` is what callers use: `start()`, `wait_ready()`, `url`, `log_text()`,
`engine_socket()`, `stop()`. A backend (harness.host, harness.docker) says how it runs.
"""

from __future__ import annotations

import functools
import re
import signal
import socket
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Self

import httpx

LOOPBACK = "127.0.0.1"
STARTUP_TIMEOUT_SECONDS = 900.0
STOP_TIMEOUT_SECONDS = 40.0
PING_TIMEOUT_SECONDS = 2.0  # SageMaker's
PING_INTERVAL_SECONDS = 0.25
ENGINE_SOCKET_TIMEOUT_SECONDS = 30.0
# The front logs `engine on unix:PATH` once it has picked its engine's socket; a whole line,
# so a half-written path is never read. Quotes and commas end it in JSON logs.
ENGINE_SOCKET_LINE = re.compile(r"engine on unix:([^\s\"',;]+)[^\n]*\n")


def free_port() -> int:
    """A loopback port no one listens on now."""
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return sock.getsockname()[1]


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
    def kill_engine(self, sig: int = signal.SIGKILL, workers: bool = False) -> None:
        """Send `sig` to the vLLM server process, as a crash or the OOM killer would; with
        `workers`, to its engine-core and worker processes instead (SIGSTOP: a wedged GPU)."""

    def engine_killer(self, sig: int, workers: bool = False) -> Callable[[], None]:
        """A call that does what kill_engine(sig, workers) does, as quickly as the backend
        can: where it can, the processes are found now and the call only signals them."""
        return functools.partial(self.kill_engine, sig, workers)

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
