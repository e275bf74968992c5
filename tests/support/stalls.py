"""When the machine held a CPU's work. A process of the tests, the front or vLLM's API server
that waits seconds to run makes a step of the product look late that never had a chance to
run. Sessions 8-11 saw holds of 1-70 s here and blamed the host; the cause was the engine's
session taking CPUs from the others as an equal under the kernel's autogroup, which the
engine now avoids (serving/engine.py: `lower_priority`). The watchers stay, for a host that
does hold a virtual CPU: a watcher per CPU (pinned, nice -10) sees each hold as a long gap
between two wakes, so a test can tell "the product was slow" from "the machine held it",
and a failure can say which.

`python -m tests.support.stalls FILE CPU` is one watcher: pinned to CPU, a line per hold,
"start seconds", in CLOCK_MONOTONIC, which all processes share; it ends when its parent does.
"""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.locations import REPO_ROOT

TICK_SECONDS = 0.02
# A gap this much longer than a tick is a hold; a busy two-core machine wakes a sleeper
# (nice -10, above vLLM and the tests) within a few hundred milliseconds.
STALL_SECONDS = 0.5


def merged(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """(start, seconds) spans, overlapping ones (two CPUs held at once) joined into one."""
    joined: list[list[float]] = []
    for start, length in sorted(spans):
        if joined and start <= joined[-1][1]:
            joined[-1][1] = max(joined[-1][1], start + length)
        else:
            joined.append([start, start + length])
    return [(start, end - start) for start, end in joined]


class StallWatch:
    """The watcher processes (`start()` them before the tests); the holds read from their file."""

    def __init__(self) -> None:
        self._path: Path | None = None

    def start(self) -> Path:
        if self._path is None:
            handle, name = tempfile.mkstemp(prefix="stalls-", suffix=".txt")
            os.close(handle)
            self._path = Path(name)
            for cpu in sorted(os.sched_getaffinity(0)):
                watcher = subprocess.Popen(
                    [sys.executable, "-m", "tests.support.stalls", name, str(cpu)],
                    cwd=REPO_ROOT,
                )
                atexit.register(watcher.kill)
            atexit.register(self._path.unlink, missing_ok=True)
        return self._path

    @property
    def stalls(self) -> list[tuple[float, float]]:
        """(monotonic start, seconds) of each time some CPU was held, so far."""
        lines = self.start().read_text().splitlines()
        return merged([(float(start), float(length)) for start, length in map(str.split, lines)])

    def stalled(self, begin: float, end: float) -> float:
        """Seconds of [begin, end] (monotonic) during which some CPU was held."""
        return sum(
            max(0.0, min(end, start + length) - max(begin, start)) for start, length in self.stalls
        )

    def running(self, begin: float, end: float) -> float:
        """Seconds from `begin` to `end` (monotonic) that the whole machine was running: how
        long the product surely had to act, whatever the host did meanwhile."""
        return end - begin - self.stalled(begin, end)

    def since(self, begin: float) -> float:
        """Seconds from `begin` (monotonic) to now that the whole machine was running."""
        return self.running(begin, time.monotonic())


def watch(path: str) -> None:
    # O_APPEND: each watcher's short lines land whole in the shared file.
    with open(path, "a") as out:
        parent = os.getppid()
        last = time.monotonic()
        while os.getppid() == parent:
            time.sleep(TICK_SECONDS)
            now = time.monotonic()
            if now - last > STALL_SECONDS:
                out.write(f"{last:.3f} {now - last:.3f}\n")
                out.flush()
            last = now


WATCH = StallWatch()

if __name__ == "__main__":
    os.sched_setaffinity(0, {int(sys.argv[2])})
    try:
        os.nice(-10)  # above vLLM (nice 10) and the tests: a busy CPU is no hold
    except PermissionError:
        pass
    watch(sys.argv[1])
