"""The image against the host process: the same pair and flags, started at the same moment.

Three containers start together, so they share the machine's noise: the front on the host
(`entrypoint.sh serve`), and the image twice (`docker run IMAGE serve`, the demo tree mounted
read-only). Once all three answer /ping 200, one image container gets `docker stop` and the
other loses its vLLM server to SIGKILL; each is timed to its exit.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

from bench.container import Configuration, Container, DockerContainer, LocalContainer


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
        for name in ("stopped", "killed")
    ]
    containers = [host, *images]
    try:
        for container in containers:
            container.start()
        for container in containers:
            container.wait_ready()
        stop_seconds, stop_code = timed_exit(images[0], images[0].stop)
        kill_seconds, kill_code = timed_exit(
            images[1], lambda: images[1].kill_engine(signal.SIGKILL)
        )
    finally:
        for container in containers:
            container.stop()
    return {
        "configuration": configuration.name,
        "image": image,
        "host_ready_s": round(host.ready_after, 1),
        "image_ready_s": [round(container.ready_after, 1) for container in images],
        "docker_stop_to_exit_s": round(stop_seconds, 1),
        "docker_stop_exit_code": stop_code,
        "engine_kill_to_exit_s": round(kill_seconds, 1),
        "engine_kill_exit_code": kill_code,
    }
