"""/ping timed from a process of its own while a load runs: the load's clients share the
benchmark's interpreter and would otherwise delay the prober's clock, not the server's answer."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench.stats import ms, percentile

PING_TIMEOUT_SECONDS = 2.0  # SageMaker's

PROBER_START_SECONDS = 60.0

PROBER_STARTED = "probing"

PACKAGE_ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Pings:
    latencies: list[float] = field(default_factory=list)  # seconds, failures included
    failures: Counter = field(default_factory=Counter)  # status or exception name -> count

    def summary(self) -> dict[str, Any]:
        return {
            "pings": len(self.latencies),
            "ping_failures": dict(self.failures),
            "ping_ms_p50": ms(percentile(self.latencies, 50)),
            "ping_ms_p95": ms(percentile(self.latencies, 95)),
            "ping_ms_p99": ms(percentile(self.latencies, 99)),
            "ping_ms_max": ms(max(self.latencies, default=None)),
        }


def probe_pings() -> None:
    """The prober's process (argv: URL INTERVAL): GET /ping every INTERVAL s with SageMaker's
    timeout until stdin closes, then the Pings as one JSON line on stdout."""
    url, interval = sys.argv[1], float(sys.argv[2])
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    pings = Pings()
    with httpx.Client(timeout=PING_TIMEOUT_SECONDS) as http:
        print(PROBER_STARTED, flush=True)
        next_at = time.monotonic()
        while not stop.is_set():
            began = time.perf_counter()
            try:
                status = http.get(f"{url}/ping").status_code
                if status != 200:
                    pings.failures[str(status)] += 1
            except httpx.HTTPError as error:
                pings.failures[type(error).__name__] += 1
            pings.latencies.append(time.perf_counter() - began)
            next_at = max(next_at + interval, time.monotonic())
            stop.wait(next_at - time.monotonic())
    print(json.dumps({"latencies": pings.latencies, "failures": pings.failures}), flush=True)


@contextlib.asynccontextmanager
async def probing(url: str, interval: float) -> AsyncIterator[Pings]:
    """/ping timed from a process of its own for the duration of the block: the load's
    clients share this interpreter and would otherwise delay the prober's clock, not the
    server's answer. The Pings are filled in when the block ends."""
    command = [sys.executable, "-c", f"from {__name__} import probe_pings; probe_pings()"]
    process = await asyncio.create_subprocess_exec(
        *command,
        url,
        str(interval),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        cwd=PACKAGE_ROOT,
    )
    pings = Pings()
    try:
        line = await asyncio.wait_for(process.stdout.readline(), PROBER_START_SECONDS)
        if line.decode().strip() != PROBER_STARTED:
            raise RuntimeError(f"the /ping prober did not start (it said {line!r}).")
        yield pings
    finally:
        process.stdin.close()  # stops it: it prints what it recorded, and exits
        with contextlib.suppress(TimeoutError):
            output, _ = await asyncio.wait_for(process.communicate(), 3 * PING_TIMEOUT_SECONDS)
            if output.strip():
                recorded = json.loads(output)
                pings.latencies.extend(recorded["latencies"])
                pings.failures.update(recorded["failures"])
        if process.returncode is None:
            process.kill()
            await process.wait()
