"""`retrain`: capture a new workload, fine-tune the head on it, compare both heads."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from bench.commands.common import add_local_command, configuration_of
from bench.configuration import FIXED_DEFAULT

HELP = (
    "the retraining loop on the demo pair: capture a workload (prose requests, or agent "
    "sessions with tools), export, fine-tune the P-EAGLE head, then both heads side by side "
    "on held-out requests of that workload and HumanEval"
)


def add_parser(commands: Any) -> None:
    parser = add_local_command(commands, "retrain", command, HELP, config=FIXED_DEFAULT)
    parser.set_defaults(config="peagle:7", out_dir=Path("build/retrain"))
    parser.add_argument(
        "--code-prompts", type=int, default=32, help="HumanEval prompts in the comparison"
    )
    parser.add_argument(
        "--workload",
        choices=("prose", "agent"),
        default="prose",
        help="what is captured and held out: prose questions, or multi-turn agent sessions "
        "with tools (bench/agent.py) (default prose)",
    )


def command(args: argparse.Namespace) -> int:
    from bench import retrain

    configuration = configuration_of(args)
    if configuration.method != "peagle":
        raise SystemExit(
            f"--config {configuration.name}: the loop retrains a P-EAGLE head; use peagle:K."
        )
    args.out_dir.mkdir(parents=True, exist_ok=True)
    result = retrain.run_loop(
        configuration,
        args.opt_ml_root.absolute(),
        args.out_dir.absolute(),
        args.code_prompts,
        args.workload,
    )
    retrain.write(result, args.out_dir)
    print(retrain.table(result))
    print(f"whole loop {result['seconds']} s; figures in {args.out_dir / 'retrain.json'}")
    return 0
