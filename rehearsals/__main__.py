"""`python -m rehearsals COMMAND`: the P-EAGLE head's lifecycle rehearsed on one machine, on
the demo pair, with the product's own parts.

  retrain     capture a workload (prose, or agent sessions with tools), fine-tune the head
              on it, both heads side by side on held-out requests
  train-head  the training image run as SageMaker Training runs it on a captured workload;
              its head beside the demo's and the fine-tune's
  rollout     a head rollout: a random head (or another one) as the shadow variant behind
              the local runtime, compare's verdict, and the production latency with a
              shadow attached
"""

from __future__ import annotations

import argparse
import sys

from rehearsals import retrain, rollout, train_head

COMMANDS = (retrain, train_head, rollout)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m rehearsals",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
