"""`transform`: a Batch Transform job of N records on a local container in a transform job's
environment, beside real-time calls to the same container."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from bench.commands.common import (
    add_local_command,
    add_prompt_args,
    configuration_of,
    int_list,
    sampled_payloads,
)
from bench.configuration import LocalContainer

HELP = (
    "a Batch Transform job (local_runtime transform) of --records HumanEval records with one "
    "bad record, beside real-time calls at --concurrency on the same container: records/s, "
    "output tok/s, the ratio to the best real-time level, lost and error lines, front memory"
)


def add_parser(commands: Any) -> None:
    parser = add_local_command(commands, "transform", command, HELP)
    add_prompt_args(parser, 64)
    parser.add_argument("--records", type=int, default=1000, help="default 1000")
    parser.add_argument(
        "--concurrency",
        type=int_list,
        default=[16, 64, 256],
        help="real-time levels, default 16,64,256",
    )
    parser.add_argument(
        "--big-body-mb",
        type=int,
        default=100,
        help="then one body of this many MiB (the limit raised to it), for the front's "
        "memory; 0: none (default 100)",
    )


def command(args: argparse.Namespace) -> int:
    from bench.transform import run_transform_bench

    configuration = configuration_of(args)
    # Whole answers both ways: a transform's records cannot stream.
    payloads = sampled_payloads(args, stream=False)
    container = LocalContainer(
        configuration,
        opt_ml_root=args.opt_ml_root.absolute(),
        log_path=args.out_dir / "logs" / "transform.log",
        enforce_eager=args.enforce_eager,
        extra_env={
            "SAGEMAKER_BATCH": "true",
            "SAGEMAKER_MAX_PAYLOAD_IN_MB": str(max(args.big_body_mb + 1, 6)),
        },
        port=args.port,
    )
    with container.start():
        print(f"starting {configuration.name} on {container.url} ...", file=sys.stderr, flush=True)
        container.wait_ready()
        text = run_transform_bench(
            container.url,
            container.process.pid,
            payloads,
            args.records,
            args.concurrency,
            args.out_dir,
            args.big_body_mb,
        )
    print(text)
    print(f"wrote {args.out_dir}/transform.json and transform.md")
    return 0
