"""`ab`: one configuration in two containers that differ only in their environment, side by
side (the cost of a setting, as a ratio)."""

from __future__ import annotations

import argparse
from typing import Any

from bench.commands.common import (
    add_local_command,
    add_prompt_args,
    configuration_of,
    int_list,
    sampled_payloads,
)

HELP = (
    "the same configuration with two environments (--a-env, --b-env KEY=VALUE), both up "
    "together, the same requests to each in turn for --rounds rounds; medians and B / A"
)


def add_parser(commands: Any) -> None:
    parser = add_local_command(commands, "ab", command, HELP)
    add_prompt_args(parser, 64)
    parser.add_argument("--a-env", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--b-env", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--concurrency", type=int_list, default=[1, 4], help="default 1,4")
    parser.add_argument(
        "--rounds", type=int, default=4, help="default 4 (even, so each variant leads as often)"
    )


def command(args: argparse.Namespace) -> int:
    from bench.ab import parse_env, run_ab

    if args.port:
        raise SystemExit("--port: ab starts two containers, each on a free port; leave it out.")
    env = {"A": parse_env(args.a_env), "B": parse_env(args.b_env)}
    if env["A"] == env["B"]:
        raise SystemExit("--a-env and --b-env are the same; give the setting B changes.")
    text = run_ab(
        configuration_of(args),
        env,
        sampled_payloads(args),
        args.concurrency,
        args.rounds,
        args.opt_ml_root.absolute(),
        args.out_dir,
        args.enforce_eager,
    )
    print(text)
    print(f"\nwrote {args.out_dir}/ab.json and ab.md")
    return 0
