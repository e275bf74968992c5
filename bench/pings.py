"""/ping (or another GET, such as SageMaker's scrape of /metrics) timed from a process of its
own while a load runs: the load's clients share the benchmark's interpreter and would
otherwise delay the prober's clock, not the server's answer."""

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

    def summary(self, name: str = "ping") -> dict[str, Any]:
        return {
            f"{name}s": len(self.latencies),
            f"{name}_failures": dict(self.failures),
            f"{name}_ms_p50": ms(percentile(self.latencies, 50)),
            f"{name}_ms_p95": ms(percentile(self.latencies, 95)),
            f"{name}_ms_p99": ms(percentile(self.latencies, 99)),
            f"{name}_ms_max": ms(max(self.latencies, default=None)),
        }


def probe_pings() -> None:
    """The prober's process (argv: URL INTERVAL PATH TIMEOUT): GET PATH every INTERVAL s with
    TIMEOUT until stdin closes, then the Pings as one JSON line on stdout."""
    url, interval, path, timeout = sys.argv[1], float(sys.argv[2]), sys.argv[3], float(sys.argv[4])
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    pings = Pings()
    with httpx.Client(timeout=timeout) as http:
        print(PROBER_STARTED, flush=True)
        next_at = time.monotonic()
        while not stop.is_set():
            began = time.perf_counter()
            try:
                status = http.get(f"{url}{path}").status_code
                if status != 200:
                    pings.failures[str(status)] += 1
            except httpx.HTTPError as error:
                pings.failures[type(error).__name__] += 1
            pings.latencies.append(time.perf_counter() - began)
            next_at = max(next_at + interval, time.monotonic())
            stop.wait(next_at - time.monotonic())
    print(json.dumps({"latencies": pings.latencies, "failures": pings.failures}), flush=True)


@contextlib.asynccontextmanager
async def probing(
    url: str, interval: float, path: str = "/ping", timeout: float = PING_TIMEOUT_SECONDS
) -> AsyncIterator[Pings]:
    """GET `path` (SageMaker's /ping with its timeout, unless told) timed from a process of
    its own for the duration of the block: the load's clients share this interpreter and
    would otherwise delay the prober's clock, not the server's answer. The Pings are filled
    in when the block ends."""
    command = [sys.executable, "-c", f"from {__name__} import probe_pings; probe_pings()"]
    process = await asyncio.create_subprocess_exec(
        *command,
        url,
        str(interval),
        path,
        str(timeout),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        cwd=PACKAGE_ROOT,
    )
    pings = Pings()
    try:
        line = await asyncio.wait_for(process.stdout.readline(), PROBER_START_SECONDS)
        if line.decode().strip() != PROBER_STARTED:
            raise RuntimeError(f"the {path} prober did not start (it said {line!r}).")
        yield pings
    finally:
        process.stdin.close()  # stops it: it prints what it recorded, and exits
        with contextlib.suppress(TimeoutError):
            output, _ = await asyncio.wait_for(process.communicate(), 3 * timeout)
            if output.strip():
                recorded = json.loads(output)
                pings.latencies.extend(recorded["latencies"])
                pings.failures.update(recorded["failures"])
        if process.returncode is None:
            process.kill()
            await process.wait()
