"""`retrain`: capture a new workload, fine-tune the head on it, compare both heads."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from bench.commands.common import add_local_command, configuration_of
from bench.configuration import FIXED_DEFAULT
from serving import paths

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
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="interleaved rounds of the comparison, every container in turn (default 1)",
    )
    parser.add_argument(
        "--fine-tuned",
        type=Path,
        help="an /opt/ml tree a run of the loop wrote (OUT_DIR/opt_ml): compare its head only, "
        "without capturing and fine-tuning again",
    )


def command(args: argparse.Namespace) -> int:
    from bench import retrain

    configuration = configuration_of(args)
    if configuration.method != "peagle":
        raise SystemExit(
            f"--config {configuration.name}: the loop retrains a P-EAGLE head; use peagle:K."
        )
    if args.rounds < 1:
        raise SystemExit(f"--rounds {args.rounds}: give 1 or more.")
    if args.fine_tuned and not paths.channel_dir(args.fine_tuned).is_dir():
        raise SystemExit(
            f"--fine-tuned {args.fine_tuned}: not an /opt/ml tree with a head; give the opt_ml "
            "folder a run of the loop wrote (its --out-dir's opt_ml)."
        )
    args.out_dir.mkdir(parents=True, exist_ok=True)
    result = retrain.run_loop(
        configuration,
        args.opt_ml_root.absolute(),
        args.out_dir.absolute(),
        args.code_prompts,
        args.workload,
        rounds=args.rounds,
        fine_tuned=args.fine_tuned.absolute() if args.fine_tuned else None,
    )
    retrain.write(result, args.out_dir)
    print(retrain.table(result))
    print(f"whole loop {result['seconds']} s; figures in {args.out_dir / 'retrain.json'}")
    return 0
