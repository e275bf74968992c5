"""The container engine: a Docker client that can build with BuildKit, and a daemon that
answers it, installed and started here when absent (Debian's docker.io, no bridge network,
no firewall changes: containers use the host's network or none); and a compose CLI, which the
SageMaker SDK's local mode drives."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

DEBIAN_CLIENT = "/usr/bin/docker"
DAEMON_FLAGS = ["--bridge=none", "--iptables=false", "--ip-forward=false"]
DAEMON_START_SECONDS = 60.0
DAEMON_LOG = Path("/var/log/dockerd-image-build.log")


class EngineError(RuntimeError):
    """No usable container engine, and none could be set up; the message says what to do."""


def run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, **kwargs)


def answers(client: str) -> bool:
    """The client reaches a running daemon."""
    try:
        return run([client, "info", "--format", "{{.ServerVersion}}"], timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def builds_with_buildkit(client: str) -> bool:
    """Clients before 23.0 have BuildKit built in; later ones need the buildx plugin."""
    try:
        version = run([client, "version", "--format", "{{.Client.Version}}"], timeout=20).stdout
        if int(version.strip().split(".")[0]) < 23:
            return True
        return run([client, "buildx", "version"], timeout=20).returncode == 0
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return False


def candidate_clients() -> list[str]:
    found = [shutil.which("docker"), DEBIAN_CLIENT]
    return [path for index, path in enumerate(found) if path and path not in found[:index]]


def usable_client() -> str | None:
    for client in candidate_clients():
        if Path(client).exists() and builds_with_buildkit(client) and answers(client):
            return client
    return None


def apt_install(package: str, missing: str, docs: str) -> None:
    """`apt-get install PACKAGE` as root on Debian/Ubuntu; else an error naming what is
    `missing` and where `docs` say how to install it."""
    if os.geteuid() != 0:
        raise EngineError(
            f"{missing} and installing it needs root: install it ({docs}) or run as root on "
            "Debian/Ubuntu."
        )
    if shutil.which("apt-get") is None:
        raise EngineError(
            f"{missing} and this is not a Debian/Ubuntu machine: install it ({docs}), then run "
            "again."
        )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for argv in (["apt-get", "update"], ["apt-get", "install", "-y", package]):
        result = run(argv, env=env)
        if result.returncode != 0:
            raise EngineError(f"`{' '.join(argv)}` failed:\n{result.stderr[-2000:]}")


def install_engine() -> None:
    """Debian's docker.io: daemon, containerd, runc and a 20.10 client with BuildKit."""
    apt_install("docker.io", "no Docker engine answers", "https://docs.docker.com/engine/install/")


def start_daemon() -> None:
    dockerd = shutil.which("dockerd")
    if dockerd is None:
        raise EngineError("dockerd is not installed; `apt-get install -y docker.io` installs it.")
    log = DAEMON_LOG.open("ab")
    # Its own session: the daemon outlives this command, as a service would.
    subprocess.Popen([dockerd, *DAEMON_FLAGS], stdout=log, stderr=log, start_new_session=True)
    deadline = time.monotonic() + DAEMON_START_SECONDS
    while time.monotonic() < deadline:
        if answers(DEBIAN_CLIENT):
            return
        time.sleep(1)
    raise EngineError(
        f"dockerd did not answer within {DAEMON_START_SECONDS:.0f} s; see {DAEMON_LOG}."
    )


def ensure_engine() -> str:
    """A Docker client that builds with BuildKit and reaches a running daemon; sets one up on
    Debian/Ubuntu when there is none. Returns the client's path."""
    client = usable_client()
    if client is not None:
        return client
    if shutil.which("dockerd") is None or not Path(DEBIAN_CLIENT).exists():
        install_engine()
    if not answers(DEBIAN_CLIENT):
        start_daemon()
    if builds_with_buildkit(DEBIAN_CLIENT):
        return DEBIAN_CLIENT
    raise EngineError(
        f"{DEBIAN_CLIENT} cannot build with BuildKit; install the buildx plugin "
        "(https://docs.docker.com/build/install-buildx/)."
    )


def compose_cli() -> list[str] | None:
    """The compose command the SageMaker SDK's local mode would run: the `docker compose`
    plugin, else `docker-compose`; None when there is neither."""
    docker = shutil.which("docker")
    if docker is not None:
        try:
            if run([docker, "compose", "version"], timeout=20).returncode == 0:
                return [docker, "compose"]
        except (OSError, subprocess.TimeoutExpired):
            pass
    standalone = shutil.which("docker-compose")
    return [standalone] if standalone else None


def ensure_compose() -> list[str]:
    """A compose CLI; Debian's docker-compose is installed when there is none."""
    found = compose_cli()
    if found is None:
        apt_install(
            "docker-compose", "no docker compose CLI", "https://docs.docker.com/compose/install/"
        )
        found = compose_cli()
    if found is None:
        raise EngineError("docker-compose was installed but is not on PATH.")
    return found
