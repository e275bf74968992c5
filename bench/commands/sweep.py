"""`sweep`: every speculation configuration, each on a local container of its own."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from bench.commands.common import (
    add_command,
    add_local_args,
    drafter_of,
    int_list,
    sampled_payloads,
    settings_of,
)
from bench.configuration import parse_configuration
from bench.run import DEFAULT_CONCURRENCY
from bench.sweep import DEFAULT_K, DEFAULT_ROUNDS
from harness.paths import EAGLE3_CHANNEL
from serving import paths


def add_parser(commands: Any) -> None:
    parser = add_command(
        commands, "sweep", command, "every speculation configuration on local containers"
    )
    add_local_args(parser.add_argument_group("local containers"))
    parser.add_argument(
        "--eagle3-drafter",
        type=Path,
        help="head for the sequential EAGLE-3 runs (default: the eagle3 channel when there is"
        " one, else --drafter)",
    )
    parser.add_argument(
        "--k", type=int_list, default=list(DEFAULT_K), help="draft lengths, default 3,5,7"
    )
    parser.add_argument("--configs", help="instead of the default set: e.g. none,eagle3:3,peagle:7")
    parser.add_argument(
        "--rounds",
        type=int,
        default=DEFAULT_ROUNDS,
        help="interleaved rounds of each method's best K, all up together, after the sweep"
        f" (default {DEFAULT_ROUNDS}; 0 leaves them out)",
    )
    parser.add_argument(
        "--concurrency",
        type=int_list,
        default=list(DEFAULT_CONCURRENCY),
        help="levels, default 1,4,8,32",
    )


def command(args: argparse.Namespace) -> int:
    from bench.sweep import default_configurations, run_configurations

    drafter = drafter_of(args)
    eagle3_drafter = args.eagle3_drafter or paths.channel_dir(args.opt_ml_root, EAGLE3_CHANNEL)
    eagle3_drafter = eagle3_drafter.absolute() if eagle3_drafter.is_dir() else None
    if args.configs:
        configurations = [
            parse_configuration(
                text, eagle3_drafter or drafter if text.startswith("eagle3") else drafter
            )
            for text in args.configs.split(",")
        ]
    else:
        configurations = default_configurations(drafter, eagle3_drafter, args.k)
    if eagle3_drafter is None and any(c.method == "eagle3" for c in configurations):
        print(
            f"no EAGLE-3 head in {args.opt_ml_root} (channel {EAGLE3_CHANNEL}): the EAGLE-3 runs"
            " draft with the P-EAGLE head, one token per pass. make bench-model builds the"
            " trained pair with one, in build/opt_ml_bench.",
            file=sys.stderr,
        )
    text = run_configurations(
        configurations,
        sampled_payloads(args),
        args.concurrency,
        args.opt_ml_root.absolute(),
        args.out_dir,
        settings_of(args),
        port=args.port,
        enforce_eager=args.enforce_eager,
        rounds=args.rounds,
    )
    print(text)
    print(f"wrote {args.out_dir}/sweep.json, sweep.md, sweep.png and sweep-positions.png")
    return 0
