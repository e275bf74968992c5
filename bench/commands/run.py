"""`run`: the concurrency sweep against one target (a URL, a SageMaker endpoint, or a local
container started for it)."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from bench import report
from bench.commands.common import add_levels_command, sampled_payloads, serving_target, settings_of
from bench.run import DEFAULT_CONCURRENCY


def add_parser(commands: Any) -> None:
    parser = add_levels_command(
        commands,
        "run",
        command,
        "concurrency sweep against one target",
        list(DEFAULT_CONCURRENCY),
        sagemaker=True,
    )
    parser.add_argument("--name", default="bench", help="file name stem of the results")


def command(args: argparse.Namespace) -> int:
    from bench.run import run_sweep
    from bench.targets import make_target

    payloads = sampled_payloads(args)
    with serving_target(args) as (url, _):

        async def sweep() -> list[dict[str, Any]]:
            target = make_target(
                url,
                args.endpoint_name,
                args.region,
                max(args.concurrency) + 8,
                endpoint_url=args.endpoint_url,
            )
            try:
                return await run_sweep(target, payloads, args.concurrency)
            finally:
                await target.aclose()

        levels = asyncio.run(sweep())
    table = report.write_run(args.out_dir, args.name, levels, {"settings": settings_of(args)})
    print(table)
    print(f"\nwrote {args.out_dir}/{args.name}.json, .md and .png")
    return 0
