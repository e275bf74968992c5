"""Is the engine still making progress? A wedged engine (a kernel or collective that never
returns) keeps its port and its /health; only its own counters show that it stopped.

While the engine has work, some of its progress counters must move: engine steps, prompt
tokens, generated tokens. However slowly they move, that is progress; a non-streamed
4,000-token answer sends nothing to the client for a minute and is not a stall. The engine
has work when its gauges say requests are running or waiting, or when a request the front
sent it has no answer begun (serving/engine_client.py): vLLM sets its gauges only as its
core takes a step, so a core wedged while idle reads 0 and 0 for ever, and the requests sent
to it after are the only sign. An engine whose metrics do not answer while the front has
requests in flight counts as making none.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

log = logging.getLogger("serving.stall_watch")

WORK_GAUGES = ("vllm:num_requests_running", "vllm:num_requests_waiting")
# Counters that move with every step the engine takes: steps (the per-step histogram's
# count), prefilled tokens, generated tokens.
PROGRESS_SAMPLES = (
    "vllm:iteration_tokens_total_count",
    "vllm:prompt_tokens_total",
    "vllm:generation_tokens_total",
)
POLL_SECONDS_MAX = 5.0


@dataclass(frozen=True)
class Reading:
    """The engine's work and progress at one moment."""

    running: float
    waiting: float
    progress: tuple[float, ...]

    @property
    def busy(self) -> bool:
        return self.running + self.waiting > 0


def read(text: str) -> Reading:
    """The few samples wanted, summed over engines, by a scan of the lines that start with
    their names: the full exposition parser costs the front's loop ten times more, every
    poll, under load."""
    sums = dict.fromkeys((*WORK_GAUGES, *PROGRESS_SAMPLES), 0.0)
    names = tuple(sums)
    for line in text.splitlines():
        if not line.startswith(names):
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in sums:
            try:
                sums[name] += float(line.rsplit(" ", 1)[1])
            except (IndexError, ValueError):
                continue
    return Reading(
        running=sums[WORK_GAUGES[0]],
        waiting=sums[WORK_GAUGES[1]],
        progress=tuple(sums[name] for name in PROGRESS_SAMPLES),
    )


class StallWatch:
    """Returns from `watch()` when the engine has had work and made no progress for
    `stall_seconds`, with a sentence saying what was seen."""

    def __init__(
        self,
        stall_seconds: float,
        engine_metrics: Callable[[], Awaitable[str | None]],
        in_flight: Callable[[], int],
        unanswered: Callable[[], int],
        clock: Callable[[], float] = time.monotonic,
    ):
        self.stall_seconds = stall_seconds
        self.engine_metrics = engine_metrics
        self.in_flight = in_flight
        self.unanswered = unanswered
        self.clock = clock
        self.poll_seconds = min(POLL_SECONDS_MAX, stall_seconds / 6)

        self.last: Reading | None = None

    async def watch(self) -> str:
        self.last = None
        progress_at = self.clock()
        while True:
            await asyncio.sleep(self.poll_seconds)
            # Every request passes through the front: with none in flight the engine has
            # no work, and its metrics are not worth fetching.
            seen = self.check(await self.engine_metrics()) if self.in_flight() else None
            now = self.clock()
            if seen is None:
                progress_at = now
            elif now - progress_at >= self.stall_seconds:
                return f"the engine made no progress for {now - progress_at:.0f} s ({seen})"

    def check(self, text: str | None) -> str | None:
        """None when this reading is progress (or there is no work); else what was seen."""
        if text is None:
            if self.in_flight() == 0:
                return None
            return f"its metrics did not answer with {self.in_flight()} request(s) in flight"
        reading = read(text)
        previous, self.last = self.last, reading
        unanswered = self.unanswered()
        busy = reading.busy or unanswered > 0
        if not busy or previous is None or reading.progress != previous.progress:
            return None
        sent = f", {unanswered} sent with no answer begun" if unanswered else ""
        return (
            f"{reading.running:.0f} running and {reading.waiting:.0f} waiting{sent}, "
            f"generated tokens stuck at {reading.progress[2]:.0f}"
        )
