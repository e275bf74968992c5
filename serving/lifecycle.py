"""The container's life: loading -> ready -> draining -> stopped; ready -> restarting -> ready
when the engine dies or stalls and a restart is left (serving/restarts.py); dead when not.

/ping and the request gate read `status`; the drain reads the gate's in-flight count.
Nothing here blocks the event loop.
"""

from __future__ import annotations

import asyncio
import enum
import functools
import logging
import signal
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from serving import exit_codes
from serving.engine import Engine, EngineExited
from serving.engine_client import EngineClient
from serving.restarts import RestartBudget, describe_exit
from serving.stall_watch import StallWatch

if TYPE_CHECKING:
    from serving.metrics import FrontMetrics

log = logging.getLogger("serving.lifecycle")


class Status(enum.Enum):
    LOADING = "loading"
    READY = "ready"
    RESTARTING = "restarting"
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
        restarts: RestartBudget | None = None,
        stall_seconds: float = 0.0,
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
        self.restarts = restarts or RestartBudget(0, 1.0)
        self.stall_seconds = stall_seconds
        self.metrics: FrontMetrics | None = None
        self.drained: Callable[[], Awaitable[None]] | None = None
        self._tasks: list[asyncio.Task] = []

    @property
    def ready(self) -> bool:
        return self.status is Status.READY

    def start(
        self,
        in_flight: Callable[[], int],
        metrics: FrontMetrics | None = None,
        drained: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """Start the engine's supervision; returns at once (the engine loads in the background).

        `in_flight` reads the number of requests the drain waits for; `metrics` counts
        restarts and stalls; `drained` runs when the drain ends, before the exit (it closes
        the bidirectional-stream sessions, answering what is still in flight)."""
        self.in_flight = in_flight
        self.metrics = metrics
        self.drained = drained
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
        while True:
            # stop() cancels this task before ending the engine, so any end seen here is a
            # death or a stall.
            reason, what = await self._until_failure()
            if self.status is not Status.READY:
                raise EngineExited(f"the engine {what} while the container was {self.status.value}")
            if not self.restarts.take(time.monotonic()):
                raise EngineExited(f"the engine {what}; {self.restarts.spent()}")
            await self._restart(reason, what)

    async def _until_failure(self) -> tuple[str, str]:
        """("exit", how it ended) when the engine ends; ("stall", what was seen) when it
        stops making progress, after ending it."""
        exited = asyncio.ensure_future(self.engine.wait_exit())
        watches = {exited}
        if self.stall_seconds > 0:
            metrics = functools.partial(self.client.get_text, "/metrics")
            watch = StallWatch(
                self.stall_seconds, metrics, self.in_flight, lambda: self.client.unanswered
            )
            watches.add(asyncio.ensure_future(watch.watch()))
        try:
            done, _ = await asyncio.wait(watches, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in watches:
                task.cancel()
        if exited in done:
            return "exit", describe_exit(exited.result())
        (stalled,) = done
        seen = stalled.result()
        log.error("engine stalled: %s", seen)
        if self.metrics is not None:
            self.metrics.engine_stalls.inc()
        # Requests in flight get their answers from the relay as the engine goes.
        self.client.unavailable = f"the engine stalled ({seen}); retry shortly."
        self.engine.kill_group(signal.SIGKILL)
        return "stall", f"stalled: {seen}"

    async def _restart(self, reason: str, what: str) -> None:
        began = time.monotonic()
        self.status = Status.RESTARTING
        self.client.unavailable = self.client.unavailable or (
            f"the engine {what}; it is being restarted: retry shortly."
        )
        log.error("the engine %s; restarting it in place", what)
        if self.metrics is not None:
            self.metrics.engine_restarts.labels(reason).inc()
        # What is left of it goes first: workers included, and the GPU memory they hold.
        self.engine.kill_group(signal.SIGKILL)
        await self.engine.wait_exit()
        await self.engine.wait_group_gone()
        await self.client.reset()
        await self.engine.start()
        # An engine that cannot start again is a start-up error: EngineExited ends the
        # container, as on a first start.
        try:
            await self.engine.wait_ready(self.client)
        except EngineExited as error:
            raise EngineExited(
                f"the engine could not start again after it {what}: {error}"
            ) from None
        self.client.unavailable = None
        if self.status is Status.RESTARTING:
            self.status = Status.READY
        log.warning(
            "engine restarted after it %s: ready again in %.1f s", what, time.monotonic() - began
        )

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
            self._tasks.append(asyncio.create_task(self._end_drain(), name="drain-end"))
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
        await self._end_drain()

    async def _end_drain(self) -> None:
        if self.drained is not None:
            drained, self.drained = self.drained, None  # once, whichever ends the drain
            await drained()
        self.request_exit(0)

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await self.engine.stop()
