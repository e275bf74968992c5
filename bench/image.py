"""The image against the host process: the same pair and flags.

The front on the host (`entrypoint.sh serve`) and the image (`docker run IMAGE serve`, the
demo tree mounted read-only) start at the same moment, so they share the machine's noise;
docker puts its containers in a cgroup of their own, so with two of each the scheduler would
split the CPU by group, not by server. Then the image's vLLM server is killed and the
container timed to its exit; then a second image container starts alone and is timed from
`docker stop` to its exit.
"""

from __future__ import annotations

import argparse
import signal
import time
from pathlib import Path
from typing import Any

from bench import report
from bench.configuration import LocalContainer
from bench.options import add_local_command, configuration_of
from harness.configurations import Configuration
from harness.container import Container
from harness.docker import DockerContainer
from image_build.build import CPU_IMAGE


def timed_exit(container: Container, action, timeout: float = 60) -> tuple[float, int]:
    """Seconds from `action()` until the container has exited, and its exit code."""
    began = time.monotonic()
    action()
    code = container.wait_exit(timeout)
    return time.monotonic() - began, code


def measure(
    configuration: Configuration, opt_ml_root: Path, image: str, docker: str, log_dir: Path
) -> dict[str, object]:
    host = LocalContainer(configuration, opt_ml_root, log_path=log_dir / "image-host.log")
    # The image gets exactly the host container's settings.
    images = [
        DockerContainer(
            name, host.env, image, docker, opt_ml_root, log_path=log_dir / f"image-{name}.log"
        )
        for name in ("killed", "stopped")
    ]
    killed, stopped = images
    try:
        for container in (host, killed):
            container.start()
        for container in (host, killed):
            container.wait_ready()
        host.stop()
        kill_seconds, kill_code = timed_exit(killed, lambda: killed.kill_engine(signal.SIGKILL))
        stopped.start()
        stopped.wait_ready()
        stop_seconds, stop_code = timed_exit(stopped, stopped.stop)
    finally:
        for container in (host, *images):
            container.stop()
    return {
        "configuration": configuration.name,
        "image": image,
        "host_ready_s": round(host.ready_after, 1),
        "image_ready_s": round(killed.ready_after, 1),
        "image_alone_ready_s": round(stopped.ready_after, 1),
        "docker_stop_to_exit_s": round(stop_seconds, 1),
        "docker_stop_exit_code": stop_code,
        "engine_kill_to_exit_s": round(kill_seconds, 1),
        "engine_kill_exit_code": kill_code,
    }


HELP = "the image against the host process: first /ping 200, docker stop, engine kill"


def add_parser(commands: Any) -> None:
    parser = add_local_command(commands, "image", command, HELP)
    parser.add_argument("--image", default=CPU_IMAGE, help="the built image")


def command(args: argparse.Namespace) -> int:
    from image_build.engine import ensure_engine

    configuration = configuration_of(args)
    result = measure(
        configuration, args.opt_ml_root.absolute(), args.image, ensure_engine(), args.out_dir
    )
    report.write_json(args.out_dir / "image.json", result)
    print(
        f"first /ping 200 ({result['configuration']}): host {result['host_ready_s']} s, "
        f"image {result['image_ready_s']} s (started together), image alone "
        f"{result['image_alone_ready_s']} s; "
        f"docker stop to exit {result['docker_stop_to_exit_s']} s "
        f"(code {result['docker_stop_exit_code']}); engine kill to exit "
        f"{result['engine_kill_to_exit_s']} s (code {result['engine_kill_exit_code']})"
    )
    return 0
