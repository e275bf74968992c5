"""`train-head`: the training image on a captured prose workload, its head beside the demo's."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from bench.commands.common import add_local_command, configuration_of
from bench.configuration import FIXED_DEFAULT
from image_build.build import CPU_TRAINING_IMAGE

# The job continues the demo head (the eagle channel) on the captured prose and a replay of
# the head's own code traffic (the replay channel), on the target's own answers at full
# length (the capture stops answers at 64 tokens), with the loss greedy decoding accepts by,
# and keeps a share of the demo head in the head it writes (docs/benchmarks.md has the sweep
# these come from).
EPOCHS = 20
LEARNING_RATE = "0.0006"
LOSS = "ce"
KEEP_START_HEAD = "0.15"
REGENERATE_MAX_TOKENS = "192"
HELP = (
    "the training image run as SageMaker Training runs it on a captured prose workload, "
    "and its head side by side with the demo head and the project's fine-tune"
)


def add_parser(commands: Any) -> None:
    parser = add_local_command(commands, "train-head", command, HELP, config=FIXED_DEFAULT)
    parser.set_defaults(config="peagle:7", out_dir=Path("build/train-head"))
    parser.add_argument("--image", default=CPU_TRAINING_IMAGE, help="(%(default)s)")
    parser.add_argument("--epochs", type=int, default=EPOCHS, help="the job's epochs (%(default)s)")
    parser.add_argument(
        "--learning-rate", default=LEARNING_RATE, help="the job's learning rate (%(default)s)"
    )
    parser.add_argument("--loss", default=LOSS, help="the job's loss (%(default)s)")
    parser.add_argument(
        "--keep-start-head",
        default=KEEP_START_HEAD,
        help="the share of the demo head the job's head keeps (%(default)s)",
    )
    parser.add_argument(
        "--regenerate-max-tokens",
        default=REGENERATE_MAX_TOKENS,
        help="the target answers the training conversations again, up to this many tokens "
        "(%(default)s; 0: learn from the captured answers)",
    )
    parser.add_argument(
        "--code-prompts", type=int, default=32, help="HumanEval prompts in the comparison"
    )


def command(args: argparse.Namespace) -> int:
    from bench.train_head import run_demo, table
    from image_build.engine import ensure_engine

    configuration = configuration_of(args)
    if configuration.method != "peagle":
        raise SystemExit(
            f"--config {configuration.name}: the job trains a P-EAGLE head; use peagle:K."
        )
    args.out_dir.mkdir(parents=True, exist_ok=True)
    result = run_demo(
        configuration,
        args.opt_ml_root.absolute(),
        args.out_dir.absolute(),
        ensure_engine(),
        args.image,
        {
            "epochs": str(args.epochs),
            "learning_rate": args.learning_rate,
            "loss": args.loss,
            "keep_start_head": args.keep_start_head,
            "regenerate_max_tokens": args.regenerate_max_tokens,
            "held_out_prompts": "16",
        },
        args.code_prompts,
    )
    (args.out_dir / "train-head.json").write_text(json.dumps(result, indent=2) + "\n")
    text = table(result)
    (args.out_dir / "train-head.md").write_text(text + "\n")
    print(text)
    print(f"whole demo {result['seconds']} s; figures in {args.out_dir / 'train-head.json'}")
    return 0
