"""The shadow container, as SageMaker's shadow variants have it: a sampled share of the calls
is also sent to a second container, whose answer is read in full and discarded.

The mirror never changes or delays the production answer: `offer` is synchronous and only
schedules a task, and whatever the shadow does (answers late, errs, is down) shows up in the
counters and the log alone. The shadow is never pinged; one that is down is failed mirrors.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Mapping

from local_runtime.container import ContainerClient, ContainerError

log = logging.getLogger(__name__)
DEFAULT_SAMPLE_PERCENT = 50.0
# A shadow that has not accepted a connection by then is down: the mirror fails early.
CONNECT_TIMEOUT_SECONDS = 2.0


def sampled(number: int, percent: float) -> bool:
    """Whether the `number`-th offered call (from 0) is mirrored. Exact, not random: of the
    first n calls floor(n * percent / 100) are, spread evenly, so a person can count them."""
    return math.floor((number + 1) * percent / 100) > math.floor(number * percent / 100)


class Shadow:
    """The mirror to one shadow container, with its counters: `offered` calls, of which
    `mirrored` were sent and `dropped` were not (`max_in_flight` mirrors already running);
    of those sent, `answered` (status < 400, read to the end) or `failed`."""

    def __init__(self, url: str, sample_percent: float, max_in_flight: int = 64):
        if not 0 <= sample_percent <= 100:
            raise ValueError(f"shadow sample {sample_percent:g} is not a percentage from 0 to 100")
        if max_in_flight < 1:
            raise ValueError(f"max_in_flight {max_in_flight} must be at least 1")
        self.url = url
        self.sample_percent = sample_percent
        self.max_in_flight = max_in_flight
        self.client = ContainerClient(url, connect_timeout=CONNECT_TIMEOUT_SECONDS)
        # Strong references: the event loop keeps only weak ones to tasks.
        self.running: set[asyncio.Task[None]] = set()
        self.offered = 0
        self.mirrored = 0
        self.dropped = 0
        self.failed = 0
        self.answered = 0

    def offer(self, headers: Mapping[str, str], body: bytes, stream: bool, timeout: float) -> bool:
        """Mirror this call (its container headers and body, as production gets them) if the
        sample picks it; True if a mirror was scheduled. Never waits on the shadow."""
        number = self.offered
        self.offered += 1
        if not sampled(number, self.sample_percent):
            return False
        if len(self.running) >= self.max_in_flight:
            self.dropped += 1
            return False
        self.mirrored += 1
        task = asyncio.get_running_loop().create_task(self.mirror(headers, body, stream, timeout))
        self.running.add(task)
        task.add_done_callback(self.running.discard)
        return True

    async def mirror(
        self, headers: Mapping[str, str], body: bytes, stream: bool, timeout: float
    ) -> None:
        """One mirrored call, answered or failed within `timeout` seconds."""
        try:
            async with asyncio.timeout(timeout):
                if stream:
                    status = await self.drain_stream(headers, body, timeout)
                else:
                    status = (await self.client.fetch("POST", "/invocations", headers, body)).status
        except TimeoutError:
            self.fail(f"no whole answer within {timeout:g} s")
        except ContainerError as error:
            self.fail(str(error))
        else:
            if status >= 400:
                self.fail(f"answered status {status}")
            else:
                self.answered += 1

    async def drain_stream(self, headers: Mapping[str, str], body: bytes, timeout: float) -> int:
        """The streamed call read to its end, as a client would; its status."""
        upstream = await self.client.stream("/invocations", headers, body, read_timeout=timeout)
        try:
            async for _ in upstream.chunks():
                pass
        finally:
            upstream.close()
        return upstream.status

    def fail(self, reason: str) -> None:
        # The line before the count: whoever sees the count can read the line.
        log.info("shadow %s: mirrored call failed: %s", self.url, reason)
        self.failed += 1

    @property
    def in_flight(self) -> int:
        return len(self.running)

    def counters(self) -> dict[str, object]:
        """What a person reads at the runtime's GET /shadow."""
        return {
            "url": self.url,
            "sample_percent": self.sample_percent,
            "offered": self.offered,
            "mirrored": self.mirrored,
            "dropped": self.dropped,
            "failed": self.failed,
            "answered": self.answered,
            "in_flight": self.in_flight,
        }

    async def aclose(self) -> None:
        """Cancel the running mirrors, wait for them to let go of their connections, close."""
        tasks = list(self.running)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.client.close()
