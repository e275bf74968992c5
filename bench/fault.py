"""Faults and recovery, host process and image: the engine stalled (its engine-core and
worker processes stopped) and killed, against the engine's own cold start in the same run.

For each backend: start the container and time its first /ping 200 (the cold start); send a
long request, stop the engine's workers once it runs, and time /ping 503 (the stall noticed)
and 200 (restarted); then kill the engine and time /ping 200 again. Recovery is a restart in
place, so it is compared with that backend's cold start: the goal is within 1.2x.
"""

from __future__ import annotations

import argparse
import signal
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from bench import report
from bench.configuration import LocalContainer
from bench.options import add_local_command, configuration_of
from harness.configurations import Configuration
from harness.container import Container
from harness.docker import DockerContainer
from image_build.build import CPU_IMAGE

LONG = {
    "messages": [{"role": "user", "content": "def fibonacci(n):"}],
    "max_tokens": 1900,
    "temperature": 0,
    "ignore_eos": True,
}
TIMEOUT_SECONDS = 600


def until_ping(container: Container, status: int, since: float) -> float:
    """Seconds from `since` until /ping answers `status` (SageMaker's 2 s timeout)."""
    while True:
        try:
            if httpx.get(f"{container.url}/ping", timeout=2.0).status_code == status:
                return time.monotonic() - since
        except httpx.HTTPError:
            pass
        if time.monotonic() - since > TIMEOUT_SECONDS:
            raise TimeoutError(f"{container.name}: /ping never answered {status}")
        time.sleep(0.1)


def running(container: Container) -> None:
    """Until the engine runs a request (its own gauge, read through the front)."""
    began = time.monotonic()
    while True:
        text = httpx.get(f"{container.url}/metrics", timeout=30).text
        for line in text.splitlines():
            if line.startswith("vllm:num_requests_running{") and float(line.split()[-1]) >= 1:
                return
        if time.monotonic() - began > TIMEOUT_SECONDS:
            raise TimeoutError(f"{container.name}: the request never ran")
        time.sleep(0.1)


def faults(container: Container, stall_seconds: float) -> dict[str, float]:
    container.start()
    cold = container.wait_ready()
    request = threading.Thread(
        target=lambda: httpx.post(f"{container.url}/invocations", json=LONG, timeout=600),
        daemon=True,
    )
    request.start()
    running(container)
    container.kill_engine(signal.SIGSTOP, workers=True)
    stopped = time.monotonic()
    stall_to_503 = until_ping(container, 503, stopped)
    stall_to_200 = until_ping(container, 200, stopped)
    request.join(60)
    container.kill_engine(signal.SIGKILL)
    killed = time.monotonic()
    kill_to_503 = until_ping(container, 503, killed)
    kill_to_200 = until_ping(container, 200, killed)
    return {
        "cold_start_s": round(cold, 1),
        "stall_window_s": stall_seconds,
        "stall_to_ping_503_s": round(stall_to_503, 1),
        "stall_to_ping_200_s": round(stall_to_200, 1),
        "kill_to_ping_503_s": round(kill_to_503, 1),
        "kill_to_ping_200_s": round(kill_to_200, 1),
        "kill_recovery_over_cold_start": round(kill_to_200 / cold, 2),
        "stall_recovery_over_cold_start": round((stall_to_200 - stall_to_503) / cold, 2),
    }


def measure(
    configuration: Configuration,
    opt_ml_root: Path,
    image: str | None,
    docker: str | None,
    stall_seconds: float,
    log_dir: Path,
) -> dict[str, object]:
    settings = {
        "SERVING_ENGINE_STALL_SECONDS": str(stall_seconds),
        "SERVING_ENGINE_RESTARTS": "3",
    }
    host = LocalContainer(
        configuration, opt_ml_root, log_path=log_dir / "fault-host.log", extra_env=settings
    )
    backends: dict[str, Container] = {"host": host}
    if image is not None and docker is not None:
        backends["image"] = DockerContainer(
            "fault", host.env, image, docker, opt_ml_root, log_path=log_dir / "fault-image.log"
        )
    results: dict[str, object] = {"configuration": configuration.name}
    for name, container in backends.items():
        try:
            results[name] = faults(container, stall_seconds)
        finally:
            container.stop()
    return results


HELP = "engine stall and kill: time to /ping 503 and back to 200, against the cold start"


def add_parser(commands: Any) -> None:
    parser = add_local_command(commands, "fault", command, HELP)
    parser.add_argument("--image", default=CPU_IMAGE, help="the built image (%(default)s)")
    parser.add_argument("--host-only", action="store_true", help="leave the image out")
    parser.add_argument(
        "--stall-seconds", type=float, default=10, help="SERVING_ENGINE_STALL_SECONDS (%(default)s)"
    )


def command(args: argparse.Namespace) -> int:
    docker = None
    if not args.host_only:
        from image_build.engine import ensure_engine

        docker = ensure_engine()
    configuration = configuration_of(args)
    result = measure(
        configuration,
        args.opt_ml_root.absolute(),
        None if args.host_only else args.image,
        docker,
        args.stall_seconds,
        args.out_dir,
    )
    report.write_json(args.out_dir / "fault.json", result)
    rows = [
        "| backend | cold start s | stall -> /ping 503 s | stall -> /ping 200 s | "
        "kill -> /ping 503 s | kill -> /ping 200 s | kill recovery / cold start | "
        "stall recovery / cold start |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for backend in ("host", "image"):
        if (figures := result.get(backend)) is None:
            continue
        rows.append(
            f"| {backend} | {figures['cold_start_s']} | {figures['stall_to_ping_503_s']} "
            f"(window {figures['stall_window_s']:g}) | {figures['stall_to_ping_200_s']} | "
            f"{figures['kill_to_ping_503_s']} | {figures['kill_to_ping_200_s']} | "
            f"{figures['kill_recovery_over_cold_start']} | "
            f"{figures['stall_recovery_over_cold_start']} |"
        )
    print("\n".join(rows))
    return 0
