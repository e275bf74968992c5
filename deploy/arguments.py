"""The command line's options: one parser, one subcommand per task."""

from __future__ import annotations

import argparse
from pathlib import Path

from deploy.deploy_options import CHANGE_DRY_RUN, add_deploy, add_sending_options, percent
from deploy.training_job import DEFAULT_TRAINING_INSTANCE

# Batch Transform's instance list lags the endpoints' (no ml.g7e in botocore's model yet).
DEFAULT_TRANSFORM_INSTANCE = "ml.g6e.2xlarge"


def parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    aws = common.add_argument_group("AWS")
    aws.add_argument("--region", help="AWS region (else AWS_REGION or the profile's)")
    aws.add_argument("--profile", help="AWS profile from ~/.aws/config")
    aws.add_argument("--endpoint-url", help="send every call here (tests, local stacks)")

    top = argparse.ArgumentParser(
        prog="sagemaker-peagle-deploy",
        description="Take a target model and its P-EAGLE head to a SageMaker endpoint.",
    )
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    add_upload(commands, common)
    add_deploy(commands, common)
    add_endpoint_commands(commands, common)
    add_head_rollout(commands, common)
    add_train_head(commands, common)
    add_transform(commands, common)
    return top


def add_upload(commands, common: argparse.ArgumentParser) -> None:
    """upload: the target and head directories to S3 (or one tarball)."""
    up = commands.add_parser(
        "upload", parents=[common], help="upload the target and head directories to S3"
    )
    up.add_argument("--target-dir", type=Path, required=True, help="local target model")
    up.add_argument("--head-dir", type=Path, required=True, help="local P-EAGLE head")
    up.add_argument(
        "--s3-uri", required=True, help="base prefix s3://bucket/path/; gets model/ and eagle/"
    )
    up.add_argument(
        "--pack",
        action="store_true",
        help="instead, one model.tar.gz with the head under eagle/, for Batch Transform "
        "(transform's --model-url)",
    )


def add_endpoint_commands(commands, common: argparse.ArgumentParser) -> None:
    """invoke, status and delete: what is asked of an endpoint that is up."""
    call = commands.add_parser("invoke", parents=[common], help="send one chat request")
    call.add_argument("--name", required=True, help="endpoint name")
    what = call.add_mutually_exclusive_group(required=True)
    what.add_argument("--prompt", help="the user message")
    what.add_argument("--payload", type=Path, help="a JSON chat request file")
    call.add_argument("--max-tokens", type=int, help="overrides the payload's")
    call.add_argument("--temperature", type=float, help="overrides the payload's")
    call.add_argument("--stream", action="store_true", help="print tokens as they arrive")
    call.add_argument(
        "--async",
        dest="asynchronous",
        action="store_true",
        help="an asynchronous endpoint: upload the payload under --input-uri, "
        "InvokeEndpointAsync, wait for the answer in S3 and print it",
    )
    call.add_argument("--input-uri", help="s3://.../ where --async uploads the payload")
    call.add_argument(
        "--wait-seconds", type=float, default=3600.0, help="how long --async waits (%(default)s)"
    )
    call.add_argument("--poll-seconds", type=float, default=5.0, help=argparse.SUPPRESS)

    show = commands.add_parser("status", parents=[common], help="the endpoint's state")
    show.add_argument("--name", required=True, help="endpoint name")

    remove = commands.add_parser(
        "delete",
        parents=[common],
        help="delete the endpoint and everything deploy made for it",
    )
    remove.add_argument("--name", required=True, help="endpoint name")
    add_sending_options(remove)


def add_head_rollout(commands, common: argparse.ArgumentParser) -> None:
    """shadow, promote and compare: a new head beside production, then in its place."""
    shadow = commands.add_parser(
        "shadow",
        parents=[common],
        help="add a new head as a shadow variant (or --remove it)",
        description="Add a shadow variant that serves the new head beside the production "
        "variant: same image, target and instances. SageMaker copies a sample of the live "
        "requests to it and discards its answers; `compare` shows both heads' figures.",
    )
    shadow.add_argument("--name", required=True, help="endpoint name")
    shadow.add_argument("--head-uri", help="s3://.../eagle/ of the new head")
    shadow.add_argument("--k", type=int, help="num_speculative_tokens (default: production's)")
    shadow.add_argument(
        "--sample",
        type=percent,
        default="50%",
        help="share of live requests copied to the shadow (%(default)s)",
    )
    shadow.add_argument("--remove", action="store_true", help="drop the shadow variant")
    add_sending_options(shadow, CHANGE_DRY_RUN)

    promote = commands.add_parser(
        "promote",
        parents=[common],
        help="make the shadow's head the production head",
        description="Roll the production variant onto the shadow's head and K, and drop the "
        "shadow variant.",
    )
    promote.add_argument("--name", required=True, help="endpoint name")
    add_sending_options(promote, CHANGE_DRY_RUN)

    compare = commands.add_parser(
        "compare",
        parents=[common],
        help="the production and shadow heads' figures side by side",
        description="Acceptance per draft position, mean acceptance length, output tokens/s "
        "and latency of both variants over one window, their ratio, and whether the "
        "difference is larger than the window's noise. From CloudWatch (--name), or from two "
        "local containers' /metrics (--container-url and --shadow-container-url).",
    )
    compare.add_argument("--name", help="endpoint name (reads CloudWatch)")
    compare.add_argument(
        "--minutes", type=int, default=60, help="the window: the last N minutes (%(default)s)"
    )
    compare.add_argument("--container-url", help="a local production container")
    compare.add_argument("--shadow-container-url", help="a local shadow container")


def add_train_head(commands, common: argparse.ArgumentParser) -> None:
    """train-head: a training job on captured traffic."""
    train = commands.add_parser(
        "train-head",
        parents=[common],
        help="train a P-EAGLE head for your target from captured traffic (a training job)",
        description="Run the training image as a SageMaker training job on your target and "
        "your captured traffic (python -m capture export); its output is the --head-uri "
        "that deploy takes.",
    )
    train.add_argument("--name", required=True, help="job name stem; the job is NAME-<time>")
    train.add_argument("--image", required=True, help="the training image's ECR URI")
    train.add_argument("--role", required=True, help="IAM role ARN SageMaker assumes")
    data = train.add_argument_group("channels (an S3 prefix, or a local folder to upload)")
    for stem, what in (
        ("target", "the target's HF checkpoint"),
        ("train", "capture export's JSONL"),
        ("head", "a head to start from (optional)"),
        ("replay", "conversations of the traffic that head drafts, to keep (optional)"),
    ):
        data.add_argument(f"--{stem}-uri", help=f"s3://... of {what}")
        data.add_argument(f"--{stem}-dir", type=Path, help=f"local folder of {what}")
    data.add_argument("--s3-uri", help="prefix local folders are uploaded under")
    data.add_argument(
        "--output-uri", help="where the job writes (default: the --s3-uri prefix's training/)"
    )
    job = train.add_argument_group("job")
    job.add_argument("--instance-type", default=DEFAULT_TRAINING_INSTANCE, help="(%(default)s)")
    job.add_argument("--instance-count", type=int, default=1, help="(%(default)s)")
    job.add_argument(
        "--volume-gb", type=int, default=200, help="disk for data and hidden states (%(default)s)"
    )
    job.add_argument("--max-hours", type=float, default=24.0, help="(%(default)s)")
    job.add_argument("--spot", action="store_true", help="managed spot, resumed from checkpoints")
    job.add_argument("--k", type=int, help="the parallel depth to train (hyperparameter)")
    job.add_argument("--epochs", type=int, help="(hyperparameter)")
    job.add_argument(
        "--hyperparameter",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="any other of the trainer's hyperparameters; repeatable",
    )
    add_sending_options(train, "print the request, send none", poll_seconds=60.0)


def add_transform(commands, common: argparse.ArgumentParser) -> None:
    """transform: a Batch Transform job over JSON Lines."""
    transform = commands.add_parser(
        "transform",
        parents=[common],
        help="run a Batch Transform job over JSON Lines with the target and its head",
        description="Create the model from one tarball (the target with its head under "
        "eagle/, from `upload --pack`) and a Batch Transform job over the JSON Lines under "
        "--input-uri (SplitType Line, MultiRecord, AssembleWith Line); wait for it, and say "
        "where the answers are and how many records got an error line.",
    )
    transform.add_argument("--name", required=True, help="job name stem; the job is NAME-<time>")
    transform.add_argument("--image", required=True, help="the serving image's ECR URI")
    transform.add_argument("--role", required=True, help="IAM role ARN SageMaker assumes")
    transform.add_argument(
        "--model-url", required=True, help="s3://.../model.tar.gz (from upload --pack)"
    )
    transform.add_argument("--input-uri", required=True, help="s3://.../ of JSON Lines files")
    transform.add_argument("--output-uri", required=True, help="s3://.../ for the answers")
    transform.add_argument(
        "--instance-type", default=DEFAULT_TRANSFORM_INSTANCE, help="(%(default)s)"
    )
    transform.add_argument("--instance-count", type=int, default=1, help="(%(default)s)")
    transform.add_argument("--k", type=int, default=7, help="draft tokens (%(default)s)")
    transform.add_argument(
        "--max-payload-mb",
        type=int,
        default=6,
        help="mini-batch size limit, up to 100 (%(default)s)",
    )
    transform.add_argument(
        "--max-concurrent-transforms",
        type=int,
        help="mini-batches in flight per instance (default: the container's, 4)",
    )
    transform.add_argument(
        "--invocations-timeout",
        type=int,
        default=3600,
        help="seconds a mini-batch may take, up to 3600 (%(default)s)",
    )
    transform.add_argument("--max-retries", type=int, default=1, help="(%(default)s)")
    transform.add_argument(
        "--join-source",
        choices=["none", "input"],
        default="none",
        help="input: each output line is the input record with the answer under SageMakerOutput",
    )
    add_sending_options(transform)
