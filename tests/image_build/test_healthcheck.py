"""The health checks of the Dockerfile and of both compose services: healthy on /ping 200,
unhealthy otherwise."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.support.image_files import GPU_DOCKERFILE, arguments_of, compose, exec_form


class PingStub(BaseHTTPRequestHandler):
    status = 200

    def do_GET(self):  # noqa: N802 (http.server's naming)
        self.send_response(self.status if self.path == "/ping" else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture()
def ping_stub() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), PingStub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def compose_healthcheck(service: str) -> list[str]:
    test = compose()["services"][service]["healthcheck"]["test"]
    assert test[0] == "CMD"
    return test[1:]


HEALTHCHECKS = {
    "Dockerfile": lambda: exec_form(arguments_of(GPU_DOCKERFILE, "HEALTHCHECK")[0]),
    "compose serving": lambda: compose_healthcheck("serving"),
    "compose serving-cpu": lambda: compose_healthcheck("serving-cpu"),
}


@pytest.mark.parametrize("name", HEALTHCHECKS)
def test_healthcheck_follows_ping(name: str, ping_stub: ThreadingHTTPServer):
    """Healthy on /ping 200; unhealthy on 503 (loading) and when nothing listens."""
    command = HEALTHCHECKS[name]()
    assert command[0] == "python3"
    command = [sys.executable, *command[1:]]
    port = str(ping_stub.server_address[1])

    def exit_code(bind_port: str) -> int:
        env = {**os.environ, "SAGEMAKER_BIND_TO_PORT": bind_port}
        return subprocess.run(command, env=env, capture_output=True, timeout=30).returncode

    PingStub.status = 200
    assert exit_code(port) == 0
    PingStub.status = 503
    assert exit_code(port) != 0
    assert exit_code(str(free_port())) != 0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
