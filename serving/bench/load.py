"""Load: N clients, each sending one request after another (a mix of streamed and whole
answers) for T seconds, while a separate poller times /ping. Every request ends up in one
bucket: completed, refused (429/503), other error, or lost (no complete answer and no error)."""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

import httpx

from serving.bench.client import RequestResult
from serving.bench.prompts import sampled
from serving.bench.report import markdown
from serving.bench.stats import ms, percentile
from serving.bench.targets import UrlTarget

PING_INTERVAL_SECONDS = 0.1
PING_TIMEOUT_SECONDS = 2.0  # SageMaker's
REFUSED = (429, 503)
# After T seconds, requests in flight get this long to finish before they count as lost.
FINISH_GRACE_SECONDS = 120.0


def outcome(result: RequestResult) -> str:
    if result.ok:
        return "completed"
    if result.status in REFUSED:
        return "refused"
    if result.timed_out or (result.status == 200 and not result.error):
        return "lost"  # a hang, or an answer cut short with no error said
    return "error"


async def client_loop(
    target: UrlTarget,
    payloads: Sequence[dict[str, Any]],
    deadline: float,
    stream_fraction: float,
    max_tokens: int,
    seed: int,
    tally: Counter,
    errors: Counter,
) -> None:
    chooser = random.Random(seed)
    while time.monotonic() < deadline:
        payload = sampled(
            chooser.choice(payloads), max_tokens, stream=chooser.random() < stream_fraction
        )
        tally["sent"] += 1
        result = await target.send(payload)
        kind = outcome(result)
        tally[kind] += 1
        if kind == "refused":
            tally[str(result.status)] += 1
            await asyncio.sleep(0.1)  # Retry-After says 1 s; a short pause keeps the pressure on
        elif kind in ("error", "lost"):
            errors[f"{result.status} {result.error[:120]}"] += 1


async def ping_loop(
    url: str, stop: asyncio.Event, latencies: list[float], failures: Counter
) -> None:
    async with httpx.AsyncClient(timeout=PING_TIMEOUT_SECONDS) as http:
        while not stop.is_set():
            began = time.perf_counter()
            try:
                response = await http.get(f"{url}/ping")
                latencies.append(time.perf_counter() - began)
                if response.status_code != 200:
                    failures[str(response.status_code)] += 1
            except httpx.HTTPError as error:
                latencies.append(time.perf_counter() - began)
                failures[type(error).__name__] += 1
            await asyncio.sleep(PING_INTERVAL_SECONDS)


async def run_load(
    url: str,
    payloads: Sequence[dict[str, Any]],
    clients: int,
    duration: float,
    stream_fraction: float = 0.5,
    max_tokens: int = 64,
    seed: int = 0,
) -> dict[str, Any]:
    base_url = url.rstrip("/").removesuffix("/invocations")
    target = UrlTarget(
        base_url, max_connections=clients + 8, read_timeout=duration + FINISH_GRACE_SECONDS
    )
    tally: Counter = Counter()
    errors: Counter = Counter()
    ping_latencies: list[float] = []
    ping_failures: Counter = Counter()
    stop = asyncio.Event()
    pinger = asyncio.create_task(ping_loop(base_url, stop, ping_latencies, ping_failures))
    started = time.monotonic()
    deadline = started + duration
    try:
        await asyncio.gather(*(
            client_loop(target, payloads, deadline, stream_fraction, max_tokens, seed + index,
                        tally, errors)
            for index in range(clients)
        ))  # fmt: skip
    finally:
        stop.set()
        await pinger
        await target.aclose()
    elapsed = time.monotonic() - started
    return {
        "clients": clients,
        "duration_s": duration,
        "elapsed_s": elapsed,
        "stream_fraction": stream_fraction,
        "max_tokens": max_tokens,
        "sent": tally["sent"],
        "completed": tally["completed"],
        "refused_429": tally["429"],
        "refused_503": tally["503"],
        "other_errors": tally["error"],
        "lost": tally["lost"],
        "completed_per_s": tally["completed"] / elapsed if elapsed else 0.0,
        "error_samples": dict(errors.most_common(5)),
        "pings": len(ping_latencies),
        "ping_failures": dict(ping_failures),
        "ping_ms_p50": ms(percentile(ping_latencies, 50)),
        "ping_ms_p99": ms(percentile(ping_latencies, 99)),
        "ping_ms_max": ms(max(ping_latencies, default=None)),
    }


def load_table(result: dict[str, Any]) -> str:
    def number(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f}"

    return markdown(
        ["clients", "seconds", "sent", "completed", "429", "503", "other errors", "lost",
         "completed/s", "/ping p50 ms", "/ping p99 ms", "/ping failures"],
        [[
            str(result["clients"]), f"{result['elapsed_s']:.0f}", str(result["sent"]),
            str(result["completed"]), str(result["refused_429"]), str(result["refused_503"]),
            str(result["other_errors"]), str(result["lost"]), f"{result['completed_per_s']:.2f}",
            number(result["ping_ms_p50"]), number(result["ping_ms_p99"]),
            str(sum(result["ping_failures"].values())),
        ]],
    )  # fmt: skip
