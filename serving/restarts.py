"""When a dead or stalled engine is started again in place, and how its end is described.

A restart keeps the instance (and the weights in its page cache) instead of having SageMaker
replace it and download the model again. At most `limit` restarts within `window` seconds:
past that the engine is taken as broken for good and the container exits, as it does at once
with a limit of 0.
"""

from __future__ import annotations

import signal
from collections import deque


class RestartBudget:
    def __init__(self, limit: int, window_seconds: float):
        self.limit = limit
        self.window_seconds = window_seconds
        self.times: deque[float] = deque()

    def take(self, now: float) -> bool:
        """Spend one restart at `now`, if the window still has one."""
        while self.times and now - self.times[0] >= self.window_seconds:
            self.times.popleft()
        if len(self.times) >= self.limit:
            return False
        self.times.append(now)
        return True

    def spent(self) -> str:
        return (
            f"{len(self.times)} restart(s) in the last {self.window_seconds:g} s already "
            f"(SERVING_ENGINE_RESTARTS={self.limit}, "
            f"SERVING_ENGINE_RESTART_WINDOW_SECONDS={self.window_seconds:g})"
        )


def describe_exit(code: int | None) -> str:
    """`exited with code 1`, or `was killed by signal SIGKILL` (asyncio's negative codes)."""
    if code is None:
        return "is gone"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = str(-code)
        return f"was killed by signal {name}"
    return f"exited with code {code}"
