"""Wiring: settings -> engine -> lifecycle -> app, run by uvicorn with our signal handling."""

from __future__ import annotations

import asyncio
import logging
import signal
from types import FrameType

import uvicorn

from serving.app import create_app
from serving.engine import Engine, build_argv
from serving.lifecycle import Lifecycle
from serving.relay import Relay
from serving.settings import Settings

log = logging.getLogger("serving.server")

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
            self.force_exit = self.should_exit
            self.should_exit = True
            return
        log.info("received %s", signal.Signals(sig).name)
        self.loop.call_soon_threadsafe(self.lifecycle.begin_drain)

    async def serve(self, sockets=None) -> None:
        self.loop = asyncio.get_running_loop()
        await super().serve(sockets)


def serve(settings: Settings) -> int:
    engine = Engine(build_argv(settings), settings.engine_url, settings.engine_niceness)
    relay = Relay(settings.engine_url, max_connections=settings.max_concurrent_requests + 16)
    config = uvicorn.Config(
        app=None,  # set below, once the server (which the lifecycle calls back) exists
        host=settings.host,
        port=settings.port,
        access_log=False,
        log_config=None,
        timeout_graceful_shutdown=GRACEFUL_CLOSE_SECONDS,
        timeout_keep_alive=65,
    )
    server = FrontServer(config)
    lifecycle = Lifecycle(
        engine,
        drain_seconds=settings.drain_seconds,
        engine_exit_seconds=settings.engine_exit_seconds,
        request_exit=server.request_exit,
    )
    server.lifecycle = lifecycle
    config.app = create_app(settings, lifecycle, relay)
    log.info(
        "front listening on %s:%d; engine on %s", settings.host, settings.port, settings.engine_url
    )
    server.run()
    log.info("exiting with code %d", server.exit_code)
    return server.exit_code
