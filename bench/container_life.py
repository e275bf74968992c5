"""A container's life, host process and image: its cold start, the engine stalled and killed,
and `docker stop`.

For each backend: start the container (on the host, bare vLLM beside it with the very argv
the front would run, on a TCP port, both at the engine's niceness, so the two share the
machine's noise) and time the first /ping 200; send a long request, stop the engine's
engine-core and worker processes once it runs, and time /ping 503 (the stall noticed) and 200
(restarted); kill the engine and time /ping 503 and 200 again; for the image, time `docker
stop` to the container's exit. Recovery is a restart in place, so it is compared with that
backend's cold start: the goal is within 1.2x. The image runs after the host, alone: docker
puts a container in a cgroup of its own, where the scheduler would split the CPU by group.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

import httpx

from bench import report
from bench.configuration import LocalContainer
from bench.options import add_local_command, configuration_of, local_container
from harness.docker import DockerContainer
from harness.serving_container import Container, free_port
from image_build.build import CPU_IMAGE
from serving.engine_args.argv import build_argv
from serving.settings import load_settings

LONG = {
    "messages": [{"role": "user", "content": "def fibonacci(n):"}],
    "max_tokens": 1900,
    "temperature": 0,
    "ignore_eos": True,
}
TIMEOUT_SECONDS = 900.0
RUNNING_SECONDS = 120.0
# A stall or a death is noticed in seconds (the stall window, then one poll): far past it,
# the measurement has gone wrong, and says how.
NOTICE_SECONDS = 120.0
COLUMNS = {
    "cold_start_s": "cold start s",
    "bare_vllm_cold_start_s": "bare vLLM cold start s",
    "stall_to_ping_503_s": "stall -> /ping 503 s",
    "stall_to_ping_200_s": "stall -> /ping 200 s",
    "kill_to_ping_503_s": "kill -> /ping 503 s",
    "kill_to_ping_200_s": "kill -> /ping 200 s",
    "stall_recovery_over_cold_start": "stall recovery / cold start",
    "kill_recovery_over_cold_start": "kill recovery / cold start",
    "docker_stop_to_exit_s": "docker stop -> exit s",
    "docker_stop_exit_code": "exit code",
}


class Pinged(Protocol):
    """What is pinged: the front (a Container) or bare vLLM."""

    name: str
    url: str
    log_path: Path

    def exit_code(self) -> int | None: ...

    def tail(self, lines: int = 40) -> str: ...


def until_ping(
    server: Pinged,
    status: int,
    since: float,
    within: float = TIMEOUT_SECONDS,
    context: Callable[[], str] = str,
) -> float:
    """Seconds from `since` until the server's /ping answers `status` (SageMaker's 2 s
    timeout). An error with the end of its log once it has exited, or after `within`
    seconds: a measurement gone wrong says how, at once."""
    while True:
        try:
            if httpx.get(f"{server.url}/ping", timeout=2.0).status_code == status:
                return time.monotonic() - since
        except httpx.HTTPError:
            pass
        if (code := server.exit_code()) is not None:
            raise RuntimeError(
                f"{server.name} exited ({code}) before /ping answered {status}; its log "
                f"({server.log_path}) ends:\n{server.tail()}"
            )
        if time.monotonic() - since > within:
            raise TimeoutError(
                f"{server.name}: /ping did not answer {status} in {within:.0f} s{context()}; "
                f"its log ({server.log_path}) ends:\n{server.tail()}"
            )
        time.sleep(0.1)


class Stall:
    """A long streamed request whose reader stops the engine's engine-core and workers
    (SIGSTOP: a wedged GPU) at its first token, so the engine is stopped mid-answer with 1,800
    tokens to go; the processes are found before the request is sent. On CI (2026-12-07) the
    engine was stopped 6-14 s after the first token, by another thread and through a walk of
    /proc on a loaded machine: the answer had ended, nothing was in flight, and no stall was
    ever noticed. An error answer is kept in `refused` and the request sent again."""

    def __init__(self, container: Container):
        self.container = container
        self.stop_engine_now = container.engine_killer(signal.SIGSTOP, workers=True)
        self.stopped = threading.Event()
        self.stopped_at = 0.0
        self.refused: list[str] = []
        # What the reader saw, for the error when no stall is noticed: seconds from sending
        # to the answer's head, to its first token and to the engine stopped, and what came
        # after the stop.
        self.seen: dict[str, float] = {}
        self.last = b""  # the end of the answer the engine was stopped in
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        while not self.stopped.is_set():
            try:
                sent = time.monotonic()
                with httpx.stream(
                    "POST",
                    f"{self.container.url}/invocations",
                    json={**LONG, "stream": True},
                    timeout=600,
                ) as response:
                    self.seen["head_s"] = time.monotonic() - sent
                    if response.status_code != 200:
                        self.refused.append(f"{response.status_code} {response.read()[:300]!r}")
                        time.sleep(1.0)
                        continue
                    for chunk in response.iter_bytes():
                        if self.stopped.is_set():
                            self.last = chunk
                            self.seen["bytes_after_stop"] = len(chunk) + self.seen.get(
                                "bytes_after_stop", 0
                            )
                        elif b'"content"' in chunk:
                            self.seen["first_token_s"] = time.monotonic() - sent
                            self.stop_engine()
                            self.seen["stopped_s"] = self.stopped_at - sent
                    # Read to its end: the front ends it once it has noticed the stall.
            except httpx.HTTPError as error:
                self.refused.append(repr(error))

    def stop_engine(self) -> None:
        try:
            self.stop_engine_now()
        except Exception as error:  # said by start(), on the main thread
            self.refused.append(f"stopping the engine failed: {error!r}")
            raise
        self.stopped_at = time.monotonic()
        self.stopped.set()

    def start(self) -> float:
        """When the engine was stopped."""
        self.thread.start()
        if not self.stopped.wait(RUNNING_SECONDS):
            raise TimeoutError(
                f"{self.container.name}: no token of a request in {RUNNING_SECONDS:.0f} s "
                f"(answers: {self.refused[-3:]}); its log ({self.container.log_path}) ends:\n"
                f"{self.container.tail()}"
            )
        return self.stopped_at

    def said(self) -> str:
        return f" (the stalled request, seconds and bytes: {self.seen})"

    def check_interrupted(self) -> None:
        """The answer the engine was stopped in did not end whole: the stall cut it."""
        if b"[DONE]" in self.last:
            raise RuntimeError(
                "the answer the engine was stopped in ended whole, so the stop did not "
                f"interrupt it{self.said()}"
            )


@dataclasses.dataclass
class BareVllm:
    """Bare vLLM as a user would run it, pinged like the front."""

    url: str
    process: subprocess.Popen[bytes]
    log_path: Path
    name: str = "bare vLLM"

    def exit_code(self) -> int | None:
        return self.process.poll()

    def tail(self, lines: int = 40) -> str:
        text = self.log_path.read_text(errors="replace")
        return "\n".join(text.splitlines()[-lines:])


@contextlib.contextmanager
def bare_vllm(container: LocalContainer, log_path: Path) -> Iterator[BareVllm]:
    """Bare vLLM with the container's argv on a TCP port instead of the front's private
    socket. Its port is taken after the container's, which it must not share."""
    port = free_port()
    while port == container.port:
        port = free_port()
    argv = build_argv(load_settings(container.environment()), Path("unused.sock"))
    at = argv.index("--uds")
    argv[at : at + 2] = ["--host", "127.0.0.1", "--port", str(port)]
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("wb") as log:
        bare = subprocess.Popen(
            argv, env=container.environment(), stdout=log, stderr=subprocess.STDOUT
        )
        try:
            yield BareVllm(f"http://127.0.0.1:{port}", bare, log_path)
        finally:
            bare.terminate()
            try:
                bare.wait(30)
            except subprocess.TimeoutExpired:
                bare.kill()


def faults(container: Container, cold_start: float) -> dict[str, float]:
    """The stall and the kill, each timed to /ping 503 and back to 200, and each recovery
    (the restart in place) over the cold start."""
    stall = Stall(container)
    stopped = stall.start()
    stall_to_503 = until_ping(container, 503, stopped, NOTICE_SECONDS, stall.said)
    stall_to_200 = until_ping(container, 200, stopped)
    stall.thread.join(60)
    stall.check_interrupted()
    container.kill_engine(signal.SIGKILL)
    killed = time.monotonic()
    kill_to_503 = until_ping(container, 503, killed, NOTICE_SECONDS)
    kill_to_200 = until_ping(container, 200, killed)
    return {
        "stall_to_ping_503_s": stall_to_503,
        "stall_to_ping_200_s": stall_to_200,
        "kill_to_ping_503_s": kill_to_503,
        "kill_to_ping_200_s": kill_to_200,
        "stall_recovery_over_cold_start": (stall_to_200 - stall_to_503) / cold_start,
        "kill_recovery_over_cold_start": kill_to_200 / cold_start,
    }


def host_life(container: LocalContainer, log_dir: Path) -> dict[str, float]:
    with bare_vllm(container, log_dir / "lifecycle-bare.log") as bare, container.start():
        began = time.monotonic()
        # The front's pings and the bare engine's at once: each timed when it answers.
        front: dict[str, float] = {}
        waiting = threading.Thread(target=lambda: front.update(ready=container.wait_ready()))
        waiting.start()
        bare_ready = until_ping(bare, 200, began)
        waiting.join()
        if "ready" not in front:
            raise RuntimeError(f"the front never answered /ping 200; its log: {container.log_path}")
        figures = {"cold_start_s": front["ready"], "bare_vllm_cold_start_s": bare_ready}
        figures |= faults(container, front["ready"])
    return figures


def image_life(container: DockerContainer) -> dict[str, float]:
    try:
        container.start()
        cold_start = container.wait_ready()
        figures = {"cold_start_s": cold_start} | faults(container, cold_start)
        began = time.monotonic()
        code = container.stop()
        return figures | {
            "docker_stop_to_exit_s": time.monotonic() - began,
            "docker_stop_exit_code": code,
        }
    finally:
        container.stop()


def measure(args: argparse.Namespace, docker: str | None) -> dict[str, Any]:
    configuration = configuration_of(args)
    settings = {
        "SERVING_ENGINE_STALL_SECONDS": str(args.stall_seconds),
        "SERVING_ENGINE_RESTARTS": "3",
        "SERVING_ENGINE_NICE": "0",
    }
    opt_ml_root, log_dir = args.opt_ml_root.absolute(), args.out_dir / "logs"
    host = local_container(args, configuration, "lifecycle-host", settings)
    results: dict[str, Any] = {
        "configuration": configuration.name,
        "host": host_life(host, log_dir),
    }
    if docker is not None:
        image = DockerContainer(
            "lifecycle", host.env, args.image, docker, opt_ml_root, log_dir / "lifecycle-image.log"
        )
        results["image"] = image_life(image)
    return results


def table(results: dict[str, Any]) -> str:
    rows = [
        [backend]
        + [
            "-" if (value := figures.get(key)) is None else f"{value:.2f}".rstrip("0").rstrip(".")
            for key in COLUMNS
        ]
        for backend in ("host", "image")
        if (figures := results.get(backend))
    ]
    return report.markdown(["backend", *COLUMNS.values()], rows)


HELP = "cold start, engine stall and kill, docker stop: host process and image"


def add_parser(commands: Any) -> None:
    parser = add_local_command(commands, "lifecycle", command, HELP)
    parser.add_argument("--image", default=CPU_IMAGE, help="the built image (%(default)s)")
    parser.add_argument("--host-only", action="store_true", help="leave the image out")
    parser.add_argument(
        "--stall-seconds", type=float, default=10, help="SERVING_ENGINE_STALL_SECONDS (%(default)s)"
    )


def command(args: argparse.Namespace) -> int:
    docker = None
    if not args.host_only:
        from image_build.docker_daemon import ensure_engine

        docker = ensure_engine()
    results = measure(args, docker)
    report.write_json(args.out_dir / "lifecycle.json", results)
    print(f"{results['configuration']}, stall window {args.stall_seconds:g} s\n\n{table(results)}")
    return 0
