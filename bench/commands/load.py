"""`load`: N clients for T seconds against a container, /ping timed all along. With
--body-mb, the clients post chat payloads of that many MiB instead of HumanEval prompts."""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from bench import report
from bench.commands.common import add_command, add_target_args, payloads_of, serving_target


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
    from bench.load import (
        PING_GOAL_P99_MS,
        body_load_table,
        load_table,
        run_body_load,
        run_load,
    )

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
