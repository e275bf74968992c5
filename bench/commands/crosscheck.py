"""`crosscheck`: our output tokens/s and TTFT against `vllm bench serve` on the same target."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from bench import report
from bench.commands.common import add_command, add_target_args, payloads_of, serving_target


def add_parser(commands: Any) -> None:
    parser = add_command(commands, "crosscheck", command, "compare with vllm bench serve", 64)
    add_target_args(parser)
    parser.add_argument("--concurrency", type=int, default=4, help="default 4")


def command(args: argparse.Namespace) -> int:
    from bench.crosscheck import crosscheck, crosscheck_table

    payloads = payloads_of(args)
    with serving_target(args) as (url, _):
        result = asyncio.run(
            crosscheck(url, payloads, args.concurrency, args.max_tokens, args.temperature)
        )
    table, within = crosscheck_table(result)
    report.write_json(args.out_dir / "crosscheck.json", result)
    (args.out_dir / "crosscheck.md").write_text(f"# Cross-check with vllm bench serve\n\n{table}\n")
    print(table)
    print(f"\n{'agree' if within else 'DISAGREE'} within 10%; wrote {args.out_dir}/crosscheck.json")
    return 0 if within else 1
