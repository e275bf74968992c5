"""Wiring: settings -> engine -> lifecycle -> app, run by uvicorn with our signal handling."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import shutil
import signal
import socket
import tempfile
from types import FrameType

import uvicorn

from serving import exit_codes
from serving.app import create_app
from serving.capture import Capture
from serving.engine import Engine, engine_environment, private_socket_path
from serving.engine_args.argv import build_argv, write_engine_files
from serving.engine_client import EngineClient, pool_idle_seconds
from serving.exchange import Exchanges
from serving.http_wire import FrontProtocol
from serving.lifecycle import Lifecycle
from serving.logs import printable
from serving.relay import Relay
from serving.restarts import RestartBudget
from serving.settings import Settings

log = logging.getLogger("serving.server")

# The uvicorn versions whose internals the front's overrides were read from (handle_exit and
# _captured_signals here, send_400_response in http_wire.py); pyproject.toml pins the same
# range and tests/serving/test_uvicorn_hooks.py checks both against the installed uvicorn.
TESTED_UVICORN = ("0.54", "0.55")


def version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version)[:2])


def uvicorn_is_tested(version: str) -> bool:
    low, high = TESTED_UVICORN
    return version_tuple(low) <= version_tuple(version) < version_tuple(high)


# Connections left open after the drain (idle keep-alives, a stream past the drain limit)
# get this long before uvicorn closes them.
GRACEFUL_CLOSE_SECONDS = 2


class FrontServer(uvicorn.Server):
    """uvicorn, but SIGTERM drains instead of closing the port at once."""

    def __init__(self, config: uvicorn.Config):
        super().__init__(config)
        self.exit_code = 0
        self.lifecycle: Lifecycle | None = None
        self.loop: asyncio.AbstractEventLoop | None = None

    def request_exit(self, code: int) -> None:
        if not self.should_exit:
            self.exit_code = code
        self.should_exit = True

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        # Not recorded in _captured_signals: uvicorn would re-raise it at the end and turn
        # a clean drain into exit code 143.
        if self.should_exit or self.lifecycle is None or self.loop is None:
            # Already closing: a further signal skips the wait for open connections.
            self.force_exit = self.should_exit
            self.should_exit = True
            return
        log.info("received %s", signal.Signals(sig).name)
        # The first signal drains; a second, while draining, ends the drain at once.
        self.loop.call_soon_threadsafe(self.lifecycle.begin_drain)

    async def serve(self, sockets=None) -> None:
        self.loop = asyncio.get_running_loop()
        await super().serve(sockets)


def bind(host: str, port: int) -> socket.socket:
    """The front's listening socket, bound before anything else starts."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def open_capture(settings: Settings) -> Capture | None:
    """The capture writer SERVING_CAPTURE_DIR asks for; OSError if it cannot write there."""
    if settings.capture_dir is None:
        return None
    settings.capture_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryFile(dir=settings.capture_dir):
        pass
    max_bytes = int(settings.capture_file_mb * 1024 * 1024)
    return Capture(settings.capture_dir, settings.capture_sample, max_bytes)


def warn_if_uvicorn_untested() -> None:
    if uvicorn_is_tested(uvicorn.__version__):
        return
    low, high = TESTED_UVICORN
    log.warning(
        "uvicorn %s is outside the range the front was tested with (>=%s,<%s); SIGTERM "
        "draining and JSON answers to malformed HTTP rely on its internals.",
        uvicorn.__version__,
        low,
        high,
    )


def front_config(settings: Settings) -> uvicorn.Config:
    """uvicorn's settings for the front; its app is set once the server exists."""
    return uvicorn.Config(
        app=None,  # serve() sets it, once the server (which the lifecycle calls back) exists
        http=FrontProtocol,
        access_log=False,
        log_config=None,
        timeout_graceful_shutdown=GRACEFUL_CLOSE_SECONDS,
        timeout_keep_alive=65,
        # /invocations-bidirectional-stream. SageMaker pings the socket (every 60 s) and the
        # front answers; it sends no pings of its own, which a router need not answer.
        ws="websockets-sansio",
        ws_ping_interval=None,
        # A frame up to twice the payload limit is read and answered with an error frame
        # (serving/bidi_session.py); a larger one closes the socket (1009).
        ws_max_size=2 * settings.max_payload_bytes,
    )


def serve(settings: Settings) -> int:
    warn_if_uvicorn_untested()
    try:
        front_socket = bind(settings.host, settings.port)
    except OSError as error:
        log.error(
            "the front cannot listen on %s:%d (%s); stop whatever holds the port, or set "
            "SAGEMAKER_BIND_TO_PORT to a free one.",
            settings.host,
            settings.port,
            error.strerror or error,
        )
        return exit_codes.FRONT_FAILED
    try:
        socket_path = private_socket_path()
        write_engine_files(settings, socket_path)
    except OSError as error:
        log.error(
            "cannot make the engine's private socket directory in %s (%s); point TMPDIR at a "
            "writable directory.",
            tempfile.gettempdir(),
            error.strerror or error,
        )
        front_socket.close()
        return exit_codes.FRONT_FAILED
    environment = engine_environment(settings, os.environ)
    engine = Engine(
        build_argv(settings, socket_path), settings.engine_niceness, environment, socket_path
    )
    try:
        capture = open_capture(settings)
    except OSError as error:
        log.error(
            "SERVING_CAPTURE_DIR %s is not a writable directory (%s); point it at one, or "
            "unset it to turn capture off.",
            printable(str(settings.capture_dir)),
            error.strerror or error,
        )
        front_socket.close()
        shutil.rmtree(socket_path.parent, ignore_errors=True)
        return exit_codes.BAD_CONFIG
    client = EngineClient(
        str(socket_path),
        max_connections=settings.max_concurrent_requests + 16,
        idle_seconds=pool_idle_seconds(environment),
    )
    relay = Relay(Exchanges(client, capture))
    config = front_config(settings)
    server = FrontServer(config)
    lifecycle = Lifecycle(
        engine,
        relay.client,
        drain_seconds=settings.drain_seconds,
        engine_exit_seconds=settings.engine_exit_seconds,
        request_exit=server.request_exit,
        restarts=RestartBudget(settings.engine_restarts, settings.engine_restart_window_seconds),
        stall_seconds=settings.engine_stall_seconds,
    )
    server.lifecycle = lifecycle
    config.app = create_app(settings, lifecycle, relay, capture)
    log.info(
        "front listening on %s:%d; engine on unix:%s", settings.host, settings.port, socket_path
    )
    try:
        server.run(sockets=[front_socket])
    finally:
        # A forced exit skips the app's shutdown: never leave vLLM behind.
        engine.kill_group(signal.SIGKILL)
        shutil.rmtree(socket_path.parent, ignore_errors=True)
    log.info("exiting with code %d", server.exit_code)
    return server.exit_code
