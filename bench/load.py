"""Load for T seconds while a prober, in a process of its own, times /ping. Two kinds:

- mixed (`run_load`): N clients, each sending one request after another, a mix of streamed and
  whole answers. Every request ends up in one bucket: completed, refused (429/503), other
  error, or lost (no complete answer and no error).
- big bodies (`run_body_load`): N clients posting chat payloads of about 5 MB (one long user
  message, max_tokens 1), so the front parses and relays megabytes while SageMaker keeps
  pinging. Any HTTP answer counts (vLLM answers 400 when the prompt exceeds its context); a
  request with no answer is lost. The goal: /ping p99 under 50 ms with 32 clients.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

import httpx

from bench import report
from bench.client import RequestResult
from bench.options import add_command, add_target_args, payloads_of, serving_target
from bench.pings import (
    probing,
)
from bench.report import markdown
from bench.targets import UrlTarget
from workloads.prompts import sampled

PING_INTERVAL_SECONDS = 0.1
BODY_PING_INTERVAL_SECONDS = 0.02
PING_GOAL_P99_MS = 50.0
# A scrape that takes longer than this counts as failed (SageMaker's own is not published).
SCRAPE_TIMEOUT_SECONDS = 5.0
REFUSED = (429, 503)
# After T seconds, requests in flight get this long to finish before they count as lost.
FINISH_GRACE_SECONDS = 120.0
MIB = 1024 * 1024
FILLER = "The quick brown fox jumps over the lazy dog while the model reads on. "


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


async def run_load(
    url: str,
    payloads: Sequence[dict[str, Any]],
    clients: int,
    duration: float,
    stream_fraction: float = 0.5,
    max_tokens: int = 64,
    seed: int = 0,
    scrape_interval: float | None = None,
) -> dict[str, Any]:
    """With `scrape_interval`, /metrics is also scraped that often, as SageMaker's detailed
    observability does (bench/scrape.py)."""
    base_url = url.rstrip("/").removesuffix("/invocations")
    target = UrlTarget(
        base_url, max_connections=clients + 8, read_timeout=duration + FINISH_GRACE_SECONDS
    )
    tally: Counter = Counter()
    errors: Counter = Counter()
    try:
        async with contextlib.AsyncExitStack() as probes:
            pings = await probes.enter_async_context(probing(base_url, PING_INTERVAL_SECONDS))
            if scrape_interval is not None:
                scrapes = await probes.enter_async_context(
                    probing(base_url, scrape_interval, "/metrics", SCRAPE_TIMEOUT_SECONDS)
                )
            started = time.monotonic()
            deadline = started + duration
            await asyncio.gather(*(
                client_loop(target, payloads, deadline, stream_fraction, max_tokens,
                            seed + index, tally, errors)
                for index in range(clients)
            ))  # fmt: skip
            elapsed = time.monotonic() - started
    finally:
        await target.aclose()
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
        **pings.summary(),
        **(scrapes.summary("scrape") if scrape_interval is not None else {}),
    }


def number(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def load_table(result: dict[str, Any]) -> str:
    return markdown(
        ["clients", "seconds", "sent", "completed", "429", "503", "other errors", "lost",
         "completed/s", "/ping p50 ms", "/ping p95 ms", "/ping p99 ms", "/ping max ms",
         "/ping failures"],
        [[
            str(result["clients"]), f"{result['elapsed_s']:.0f}", str(result["sent"]),
            str(result["completed"]), str(result["refused_429"]), str(result["refused_503"]),
            str(result["other_errors"]), str(result["lost"]), f"{result['completed_per_s']:.2f}",
            number(result["ping_ms_p50"]), number(result["ping_ms_p95"]),
            number(result["ping_ms_p99"]), number(result["ping_ms_max"]),
            str(sum(result["ping_failures"].values())),
        ]],
    )  # fmt: skip


def big_chat_body(body_mb: float) -> bytes:
    """A valid chat payload of `body_mb` MiB, encoded: one user message of filler text, one
    token out. Encoded once, so the clients spend no time on JSON."""
    size = int(body_mb * MIB)
    payload: dict[str, Any] = {"messages": [{"role": "user", "content": ""}], "max_tokens": 1}
    room = max(0, size - len(json.dumps(payload)))
    payload["messages"][0]["content"] = (FILLER * (room // len(FILLER) + 1))[:room]
    return json.dumps(payload).encode()


async def body_client_loop(
    http: httpx.AsyncClient,
    url: str,
    body: bytes,
    deadline: float,
    statuses: Counter,
    unanswered: Counter,
) -> None:
    while time.monotonic() < deadline:
        try:
            response = await http.post(
                url, content=body, headers={"content-type": "application/json"}
            )
            statuses[response.status_code] += 1
            if response.status_code in REFUSED:
                await asyncio.sleep(0.1)  # as above: keep the pressure on, not a busy loop
        except httpx.HTTPError as error:
            unanswered[f"{type(error).__name__}: {error}"[:160]] += 1


async def run_body_load(
    url: str, clients: int, duration: float, body_mb: float = 5.0, client_niceness: int = 0
) -> dict[str, Any]:
    """`clients` clients post `body_mb` MiB chat payloads for `duration` s; /ping every 20 ms.

    `client_niceness` lowers this process's priority once the prober runs (the prober and any
    container already started keep theirs): the clients stand in for machines elsewhere, and
    on a shared 2-core box pushing 160 MB at once they would otherwise take the CPU the server
    needs, so /ping would time the box rather than the server."""
    base_url = url.rstrip("/").removesuffix("/invocations")
    body = big_chat_body(body_mb)
    statuses: Counter = Counter()
    unanswered: Counter = Counter()
    async with (
        httpx.AsyncClient(
            timeout=httpx.Timeout(
                connect=10.0, read=duration + FINISH_GRACE_SECONDS, write=60.0, pool=None
            ),
            limits=httpx.Limits(max_connections=clients, max_keepalive_connections=clients),
        ) as http,
        probing(base_url, BODY_PING_INTERVAL_SECONDS) as pings,
    ):
        if client_niceness:
            os.nice(client_niceness)
        started = time.monotonic()
        deadline = started + duration
        await asyncio.gather(*(
            body_client_loop(http, f"{base_url}/invocations", body, deadline, statuses,
                             unanswered)
            for _ in range(clients)
        ))  # fmt: skip
        elapsed = time.monotonic() - started
    answered = sum(statuses.values())
    lost = sum(unanswered.values())
    # A refusal may come before the body is read; every other answer means it was read whole.
    read = sum(count for status, count in statuses.items() if status not in REFUSED)
    summary = pings.summary()
    return {
        "clients": clients,
        "body_bytes": len(body),
        "duration_s": duration,
        "elapsed_s": elapsed,
        "sent": answered + lost,
        "answered": answered,
        "lost": lost,
        "statuses": {str(status): count for status, count in sorted(statuses.items())},
        "answered_per_s": answered / elapsed if elapsed else 0.0,
        "read_mib_per_s": read * len(body) / MIB / elapsed if elapsed else 0.0,
        "error_samples": dict(unanswered.most_common(5)),
        **summary,
        "client_niceness": client_niceness,
        "ping_goal_p99_ms": PING_GOAL_P99_MS,
        "ping_goal_met": summary["ping_ms_p99"] is not None
        and summary["ping_ms_p99"] < PING_GOAL_P99_MS,
    }


def body_load_table(result: dict[str, Any]) -> str:
    statuses = " ".join(f"{status}:{count}" for status, count in result["statuses"].items())
    return markdown(
        ["clients", "body MiB", "seconds", "sent", "answered (status:count)", "lost",
         "answered/s", "MiB/s read", "pings", "/ping p50 ms", "/ping p95 ms", "/ping p99 ms",
         "/ping max ms", "/ping failures"],
        [[
            str(result["clients"]), f"{result['body_bytes'] / MIB:.1f}",
            f"{result['elapsed_s']:.0f}", str(result["sent"]),
            f"{result['answered']} ({statuses or '-'})", str(result["lost"]),
            f"{result['answered_per_s']:.2f}", f"{result['read_mib_per_s']:.1f}",
            str(result["pings"]),
            number(result["ping_ms_p50"]), number(result["ping_ms_p95"]),
            number(result["ping_ms_p99"]), number(result["ping_ms_max"]),
            str(sum(result["ping_failures"].values())),
        ]],
    )  # fmt: skip


def add_parser(commands: Any) -> None:
    parser = add_command(
        commands, "load", command, "N clients for T seconds; nothing may be lost", 64
    )
    add_target_args(parser)
    parser.add_argument("--clients", type=int, default=64, help="default 64")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds, default 60")
    parser.add_argument(
        "--stream-fraction", type=float, default=0.5, help="share of streamed requests, default 0.5"
    )
    parser.add_argument(
        "--body-mb",
        type=float,
        help="post chat payloads of this many MiB (one long message, max_tokens 1) instead,"
        " with /ping every 20 ms; e.g. --body-mb 5 --clients 32",
    )
    parser.add_argument(
        "--client-nice",
        type=int,
        default=10,
        help="with --body-mb: run the clients at this niceness once the /ping prober and any "
        "--start container run, as clients on other machines would not share the server's CPU "
        "(default 10, the engine's; 0 to compete with the server)",
    )


def command(args: argparse.Namespace) -> int:
    payloads = None if args.body_mb else payloads_of(args)
    with serving_target(args) as (url, _):
        kind = f"{args.body_mb:g} MiB bodies" if args.body_mb else "mixed requests"
        print(
            f"{args.clients} clients, {kind}, for {args.duration:.0f} s against {url} ...",
            flush=True,
        )
        began = time.monotonic()
        if args.body_mb:
            result = asyncio.run(
                run_body_load(url, args.clients, args.duration, args.body_mb, args.client_nice)
            )
        else:
            result = asyncio.run(
                run_load(
                    url,
                    payloads,
                    args.clients,
                    args.duration,
                    args.stream_fraction,
                    args.max_tokens,
                )
            )
    result["wall_s"] = time.monotonic() - began
    name = "load-bodies" if args.body_mb else "load"
    report.write_json(args.out_dir / f"{name}.json", result)
    print(body_load_table(result) if args.body_mb else load_table(result))
    if result["error_samples"]:
        print("errors:", result["error_samples"])
    if args.body_mb:
        verdict = "met" if result["ping_goal_met"] else "NOT met"
        print(f"/ping p99 under {PING_GOAL_P99_MS:.0f} ms: {verdict}")
    print(f"\nwrote {args.out_dir}/{name}.json")
    return 0 if result["lost"] == 0 else 1
