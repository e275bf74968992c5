"""Bursts of requests separated by idle gaps aimed at the keep-alive timeouts in the chain.

A connection a server closes for idleness can meet a request written on it in the same
milliseconds; the client then sees a reset. Spread evenly over a window around each timeout
(the engine's keep-alive, the front's pool, the front's own 65 s, the local runtime's pool),
enough gaps land in that window to show whether anything fails there. Every answer that is
not 200 is counted and printed.

    python -m harness.idle_gaps --url http://127.0.0.1:8080 --around 5 --spread 0.1 --gaps 100
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import sys
import time

import httpx

BODY = {"messages": [{"role": "user", "content": "Hello"}], "max_tokens": 4}


async def burst(client: httpx.AsyncClient, path: str, size: int) -> list[tuple[int, str]]:
    async def one() -> tuple[int, str]:
        try:
            answer = await client.post(path, json=BODY)
            return answer.status_code, answer.text[:200]
        except httpx.HTTPError as error:
            return 0, f"{type(error).__name__}: {error}"

    return await asyncio.gather(*(one() for _ in range(size)))


def gap_plan(around: list[float], spread: float, gaps: int) -> list[float]:
    """`gaps` gaps for each timeout, evenly from `spread` below it to `spread` above."""
    plan = []
    for centre in around:
        step = 2 * spread / max(gaps - 1, 1)
        plan += [max(centre - spread + step * index, 0.0) for index in range(gaps)]
    return plan


async def run(url: str, path: str, plan: list[float], size: int) -> collections.Counter:
    counts: collections.Counter = collections.Counter()
    limits = httpx.Limits(max_connections=size, max_keepalive_connections=size)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:
        await burst(client, path, size)  # every connection open and idle at the start
        for number, gap in enumerate(plan, 1):
            await asyncio.sleep(gap)
            for status, text in await burst(client, path, size):
                counts[status] += 1
                if status != 200:
                    print(f"  gap #{number} ({gap:.3f} s): {status} {text}", flush=True)
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.idle_gaps", description=__doc__)
    parser.add_argument("--url", default="http://127.0.0.1:8080")
    parser.add_argument("--path", default="/invocations")
    parser.add_argument(
        "--around", default="5", help="timeouts to aim at, seconds, comma-separated"
    )
    parser.add_argument("--spread", type=float, default=0.05, help="seconds either side")
    parser.add_argument("--gaps", type=int, default=100, help="gaps per timeout")
    parser.add_argument("--burst", type=int, default=4, help="requests per burst")
    args = parser.parse_args(argv)
    around = [float(value) for value in args.around.split(",")]
    plan = gap_plan(around, args.spread, args.gaps)
    began = time.monotonic()
    counts = asyncio.run(run(args.url, args.path, plan, args.burst))
    failed = sum(count for status, count in counts.items() if status != 200)
    print(
        f"{len(plan)} gaps ({args.spread:g} s either side of {args.around} s) x {args.burst} "
        f"requests in {time.monotonic() - began:.0f} s: by status {dict(sorted(counts.items()))}"
        f"; failed {failed}"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
