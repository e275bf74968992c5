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

import sys

from bench.options import main_of
from rehearsals import retrain, rollout_rehearsal, train_head_job

COMMANDS = (retrain, train_head_job, rollout_rehearsal)


def main(argv: list[str] | None = None) -> int:
    return main_of("python -m rehearsals", __doc__, COMMANDS, argv)


if __name__ == "__main__":
    sys.exit(main())
