"""`k0-return`: acceptance of a request that lived through K=0 steps against the same
request drafted from its first token (bench/k0_return.py)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from bench.commands.common import add_local_command, configuration_of, payloads_of

HELP = (
    "coming back from K=0: each prompt alone (drafted from its first token) and beside a "
    "filler that holds the batch at K=0 for its first tokens, greedy; acceptance over the "
    "same positions of the same text"
)
SCHEDULE = "peagle:7@1-1/0@2-1024"


def add_parser(commands: Any) -> None:
    parser = add_local_command(commands, "k0-return", command, HELP, config=SCHEDULE)
    parser.add_argument("--num-prompts", type=int, default=8, help="default 8")
    parser.add_argument("--max-tokens", type=int, default=256, help="default 256")
    parser.add_argument(
        "--filler-tokens",
        type=int,
        default=64,
        help="tokens the filler generates, so about the K=0 steps of the measured one (default 64)",
    )


def command(args: argparse.Namespace) -> int:
    from bench.configuration import LocalContainer
    from bench.k0_return import measure_prompt, table
    from bench.report import write_json

    if args.filler_tokens + 2 * 32 > args.max_tokens:
        raise SystemExit("--max-tokens must leave at least 64 tokens after --filler-tokens.")
    configuration = configuration_of(args)
    args.api, args.prompts, args.workload = "chat", None, "humaneval"
    payloads = payloads_of(args)
    if len(payloads) < 2:
        raise SystemExit("--num-prompts: at least 2 (one is the filler of the first).")
    container = LocalContainer(
        configuration,
        opt_ml_root=args.opt_ml_root.absolute(),
        port=args.port,
        log_path=args.out_dir / "logs" / "k0-return.log",
        enforce_eager=args.enforce_eager,
    )
    results = []
    with container.start():
        print(f"starting {configuration.name} on {container.url} ...", file=sys.stderr)
        container.wait_ready()
        for index, payload in enumerate(payloads):
            filler = payloads[(index + 1) % len(payloads)]
            results.append(
                asyncio.run(
                    measure_prompt(
                        container.url, payload, filler, args.max_tokens, args.filler_tokens
                    )
                )
            )
            print(f"prompt {index + 1}/{len(payloads)} measured", file=sys.stderr)
    text = table(results, args.filler_tokens)
    write_json(
        args.out_dir / "k0-return.json",
        {"configuration": configuration.describe(), "results": results},
    )
    (args.out_dir / "k0-return.md").write_text(
        f"# Coming back from K=0: {configuration.name}\n\n{text}\n"
    )
    print(text)
    print(f"\nwrote {args.out_dir}/k0-return.json and k0-return.md")
    return 0
