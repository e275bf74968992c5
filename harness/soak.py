"""A soak: moderate mixed traffic for a long while, the front's and the engine's memory and
file descriptors sampled, every request's outcome counted.

Each client loops over a chat answer, a streamed one, a completion, a tool call, a JSON
answer and a fuzzed body (harness/fuzz.py), with a pause of 0 to `--max-pause` seconds after
each, so idle connections meet every keep-alive timeout in the chain too. A request is lost
when it gets no answer, or a 5xx; a fuzzed body's 4xx is its right answer. The front is the
process listening on the URL's port; the engine, its child vLLM API server and that one's
children.

    python -m harness.soak --url http://127.0.0.1:8080 --minutes 60 --clients 4
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import random
import sys
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx
import psutil

from harness import fuzz, fuzz_seeds

CHAT = {"messages": [{"role": "user", "content": "What is deep learning?"}], "max_tokens": 32}
WORK = [
    ("chat", "/invocations", CHAT),
    ("stream", "/invocations", {**CHAT, "stream": True}),
    ("completion", "/v1/completions", {"prompt": "def parse(text):", "max_tokens": 32}),
    (
        "tools",
        "/invocations",
        {**CHAT, "tools": fuzz_seeds.TOOLS, "tool_choice": "required", "max_tokens": 32},
    ),
    (
        "json",
        "/v1/chat/completions",
        {**CHAT, "response_format": {"type": "json_object"}},
    ),
]


@dataclass
class Tally:
    statuses: collections.Counter = field(default_factory=collections.Counter)
    lost: list[str] = field(default_factory=list)
    samples: list[dict] = field(default_factory=list)


def processes(url: str) -> tuple[psutil.Process, list[psutil.Process]]:
    """The front listening on the URL's port, and the engine's processes under it."""
    port = urlsplit(url).port
    for connection in psutil.net_connections("tcp"):
        if connection.status == "LISTEN" and connection.laddr.port == port and connection.pid:
            front = psutil.Process(connection.pid)
            return front, front.children(recursive=True)
    raise SystemExit(f"nothing listens on port {port}")


def sample(url: str, began: float) -> dict:
    front, engine = processes(url)
    alive = [process for process in engine if process.is_running()]

    def rss(group: list[psutil.Process]) -> float:
        return sum(process.memory_info().rss for process in group) / 2**20

    def fds(group: list[psutil.Process]) -> int:
        return sum(process.num_fds() for process in group)

    return {
        "minute": round((time.monotonic() - began) / 60, 2),
        "front_rss_mib": round(rss([front]), 1),
        "front_fds": fds([front]),
        "engine_rss_mib": round(rss(alive), 1),
        "engine_fds": fds(alive),
        "engine_processes": len(alive),
    }


async def client_loop(
    http: httpx.AsyncClient,
    rng: random.Random,
    deadline: float,
    max_pause: float,
    tally: Tally,
    fuzzed,
) -> None:
    while time.monotonic() < deadline:
        for kind, path, body in [*WORK, ("", "", None)]:
            if body is None:  # a fuzzed body
                case = next(fuzzed)
                kind, path = f"fuzz:{case.kind}", case.path
                request = {"content": case.body, "headers": fuzz.headers_of(case)}
            else:
                request = {"content": json.dumps(body).encode(), "headers": JSON}
            try:
                answer = await http.post(path, **request)
                status = answer.status_code
                detail = answer.text[:200]
            except httpx.HTTPError as error:
                status, detail = 0, f"{type(error).__name__}: {error}"
            tally.statuses[status] += 1
            if status == 0 or status >= 500 or (status != 200 and not kind.startswith("fuzz")):
                tally.lost.append(f"{kind} {path}: {status} {detail}")
                print(f"  LOST {kind} {path}: {status} {detail}", flush=True)
            await asyncio.sleep(rng.uniform(0, max_pause))


JSON = {"content-type": "application/json"}


async def soak(url: str, minutes: float, clients: int, max_pause: float, every: float) -> Tally:
    tally = Tally()
    began = time.monotonic()
    deadline = began + minutes * 60
    fuzzed = iter(fuzz.cases(seed=7, count=10**9))
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=300, limits=limits) as http:

        async def sampler() -> None:
            while time.monotonic() < deadline:
                row = sample(url, began)
                row["requests"] = sum(tally.statuses.values())
                tally.samples.append(row)
                print(json.dumps(row), flush=True)
                await asyncio.sleep(every)

        loops = [
            client_loop(http, random.Random(number), deadline, max_pause, tally, fuzzed)
            for number in range(clients)
        ]
        await asyncio.gather(sampler(), *loops)
    row = sample(url, began)
    row["requests"] = sum(tally.statuses.values())
    tally.samples.append(row)
    return tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.soak", description=__doc__)
    parser.add_argument("--url", default="http://127.0.0.1:8080")
    parser.add_argument("--minutes", type=float, default=60)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--max-pause", type=float, default=8.0)
    parser.add_argument("--sample-seconds", type=float, default=60)
    parser.add_argument("--out", help="a JSON file of the samples and counts")
    args = parser.parse_args(argv)
    tally = asyncio.run(
        soak(args.url, args.minutes, args.clients, args.max_pause, args.sample_seconds)
    )
    first, last = tally.samples[1 if len(tally.samples) > 2 else 0], tally.samples[-1]
    print(
        f"{sum(tally.statuses.values())} requests in {args.minutes:g} min, by status "
        f"{dict(sorted(tally.statuses.items()))}; lost {len(tally.lost)}\n"
        f"front RSS {first['front_rss_mib']} -> {last['front_rss_mib']} MiB, fds "
        f"{first['front_fds']} -> {last['front_fds']}; engine RSS {first['engine_rss_mib']} -> "
        f"{last['engine_rss_mib']} MiB, fds {first['engine_fds']} -> {last['engine_fds']} "
        "(from the sample after warm-up to the last)"
    )
    if args.out:
        with open(args.out, "w") as out:
            json.dump(
                {"statuses": tally.statuses, "lost": tally.lost, "samples": tally.samples}, out
            )
    return 1 if tally.lost else 0


if __name__ == "__main__":
    sys.exit(main())
