"""The container's life: loading -> ready -> draining -> stopped, or dead when the engine ends.

/ping and the request gate read `status`; the drain reads the gate's in-flight count.
Nothing here blocks the event loop.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import signal
import time
from collections.abc import Callable

from serving import exit_codes
from serving.engine import Engine, EngineExited
from serving.engine_client import EngineClient

log = logging.getLogger("serving.lifecycle")


class Status(enum.Enum):
    LOADING = "loading"
    READY = "ready"
    DRAINING = "draining"
    DEAD = "dead"


class Lifecycle:
    def __init__(
        self,
        engine: Engine,
        client: EngineClient,
        drain_seconds: float,
        engine_exit_seconds: float,
        request_exit: Callable[[int], None],
    ):
        self.engine = engine
        self.client = client
        self.drain_seconds = drain_seconds
        self.engine_exit_seconds = engine_exit_seconds
        self.request_exit = request_exit
        self.status = Status.LOADING
        self.in_flight: Callable[[], int] = lambda: 0
        self.started_at = time.monotonic()
        self.ready_at: float | None = None
        self.died = asyncio.Event()
        self._tasks: list[asyncio.Task] = []

    @property
    def ready(self) -> bool:
        return self.status is Status.READY

    def start(self, in_flight: Callable[[], int]) -> None:
        """Start the engine's supervision; returns at once (the engine loads in the background).

        `in_flight` reads the number of requests the drain waits for."""
        self.in_flight = in_flight
        self._tasks.append(asyncio.create_task(self._supervise(), name="engine-supervisor"))

    async def _supervise(self) -> None:
        # Any failure here must end the container: a supervisor that dies quietly would
        # leave /ping answering 503 forever.
        try:
            await self._start_and_watch()
        except asyncio.CancelledError:
            raise
        except EngineExited as error:
            self._engine_died(str(error))
        except Exception as error:  # noqa: BLE001 - any failure ends the container
            self._engine_died(f"the engine could not be started or watched: {error!r}")

    async def _start_and_watch(self) -> None:
        await self.engine.start()
        await self.engine.wait_ready(self.client)
        if self.status is Status.LOADING:
            self.status = Status.READY
            self.ready_at = time.monotonic()
            log.info("engine ready after %.1f s; serving", self.ready_at - self.started_at)
        # stop() cancels this task before ending the engine, so any exit seen here is a death.
        code = await self.engine.wait_exit()
        raise EngineExited(f"engine exited with code {code}")

    def _engine_died(self, reason: str) -> None:
        log.error("%s; the container stops so the platform can replace it", reason)
        self.status = Status.DEAD
        self.died.set()
        # Take down any vLLM workers left behind, then give in-flight requests a moment to
        # receive their errors before the process exits.
        self.engine.kill_group(signal.SIGKILL)
        asyncio.get_running_loop().call_later(
            self.engine_exit_seconds, self.request_exit, exit_codes.ENGINE_DIED
        )

    def begin_drain(self) -> None:
        """On SIGTERM: refuse new work, let in-flight requests finish, then exit 0.

        A second SIGTERM while draining means "now": the drain ends at once."""
        if self.status is Status.DEAD:
            return
        if self.status is Status.DRAINING:
            log.warning("second stop signal: ending the drain with %d in flight", self.in_flight())
            self.request_exit(0)
            return
        log.info(
            "draining: %d request(s) in flight, up to %.0f s", self.in_flight(), self.drain_seconds
        )
        self.status = Status.DRAINING
        self._tasks.append(asyncio.create_task(self._drain(), name="drain"))

    async def _drain(self) -> None:
        deadline = time.monotonic() + self.drain_seconds
        while self.in_flight() > 0 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        if self.in_flight():
            log.warning("drain limit reached with %d request(s) still in flight", self.in_flight())
        self.request_exit(0)

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await self.engine.stop()
