"""The deploy command's options: what it serves, on what, how it scales, asynchronous
inference, what SageMaker keeps of the traffic, and the guard an update to an existing
endpoint goes through; and the two that every command sending requests shares (--dry-run,
--poll-seconds)."""

from __future__ import annotations

import argparse
from pathlib import Path

from deploy import routing
from deploy.plan import (
    DEFAULT_ACCEPTANCE_FLOOR,
    DEFAULT_BAKE_SECONDS,
    DEFAULT_CANARY_PERCENT,
    DEFAULT_IMAGE_CUDA,
    DEFAULT_INSTANCE_TYPE,
    DEFAULT_NUM_SPECULATIVE_TOKENS,
)
from deploy.traffic_capture import DEFAULT_CAPTURE_PERCENT

CHANGE_DRY_RUN = "read the endpoint, print the requests that change it, send none"


def add_sending_options(
    command: argparse.ArgumentParser,
    dry_run: str = "print the requests, send none",
    poll_seconds: float = 30.0,
    poll_help: str = argparse.SUPPRESS,
) -> None:
    """--dry-run (what it prints) and --poll-seconds (how often a wait polls), as every
    command that sends requests takes them."""
    command.add_argument("--dry-run", action="store_true", help=dry_run)
    command.add_argument("--poll-seconds", type=float, default=poll_seconds, help=poll_help)


def add_deploy(commands, common: argparse.ArgumentParser) -> None:
    """deploy: create an endpoint, or roll an existing one onto a new head."""
    deploy = commands.add_parser(
        "deploy",
        parents=[common],
        help="create or update the endpoint",
        description="Create the model, endpoint config and endpoint (or roll an existing "
        "endpoint onto a new model), wait until it is in service, and set up autoscaling.",
    )
    add_model_options(deploy)
    add_hosting_options(deploy)
    add_autoscaling_options(deploy)
    add_async_options(deploy)
    add_traffic_capture_options(deploy)
    add_guard_options(deploy)
    routing.add_options(deploy)
    add_sending_options(deploy, poll_help="status poll interval (%(default)s)")
    deploy.add_argument(
        "--update",
        action="store_true",
        help="with --dry-run: print the requests that roll an existing endpoint onto the head",
    )


def add_model_options(deploy: argparse.ArgumentParser) -> None:
    """Its name, the image, the target and its head, K or a schedule, the container's
    variables, the model's size."""
    deploy.add_argument("--name", required=True, help="endpoint name (letters, digits, -)")
    deploy.add_argument("--image", required=True, help="the serving image's ECR URI")
    deploy.add_argument(
        "--image-cuda",
        default=DEFAULT_IMAGE_CUDA,
        help="the CUDA release the image is built on, which decides the inference AMI "
        "(%(default)s: vllm/vllm-openai:v0.32.0; 12.9 for the -cu129 base)",
    )
    deploy.add_argument("--role", required=True, help="IAM role ARN SageMaker assumes")
    deploy.add_argument("--target-uri", required=True, help="s3://.../model/ (from upload)")
    deploy.add_argument("--head-uri", required=True, help="s3://.../eagle/ (from upload)")
    deploy.add_argument(
        "--k",
        type=int,
        help=f"num_speculative_tokens (default {DEFAULT_NUM_SPECULATIVE_TOKENS})",
    )
    deploy.add_argument(
        "--speculative-config",
        type=Path,
        metavar="FILE",
        help="K by batch size from `python -m bench crossover` (its speculative-config.json): "
        "num_speculative_tokens and num_speculative_tokens_per_batch_size, instead of --k. A "
        "schedule holds only for the instance type it was measured on: calibrate it there "
        "(the default, a fixed K, needs no calibration)",
    )
    deploy.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="container variable (SM_VLLM_*, SERVING_*, SAGEMAKER_*); repeatable",
    )
    sizes = deploy.add_argument_group("model size (sets timeouts and disk; first given wins)")
    sizes.add_argument("--target-dir", type=Path, help="local copy of the target: size, checks")
    sizes.add_argument("--head-dir", type=Path, help="local copy of the head: size, checks")
    sizes.add_argument("--model-gb", type=float, help="target + head size in GB")


def add_hosting_options(deploy: argparse.ArgumentParser) -> None:
    """Instances, or an inference component's copies on them."""
    host = deploy.add_argument_group("hosting")
    host.add_argument("--instance-type", default=DEFAULT_INSTANCE_TYPE, help="(%(default)s)")
    host.add_argument("--instance-count", type=int, default=1, help="(%(default)s)")
    host.add_argument(
        "--inference-ami-version",
        help="default: the newest whose NVIDIA driver runs the image's CUDA release",
    )
    host.add_argument(
        "--inference-component",
        action="store_true",
        help="host the model as an inference component on the endpoint",
    )
    host.add_argument("--accelerators", type=int, default=1, help="GPUs per copy (%(default)s)")
    host.add_argument(
        "--memory-mb", type=int, default=16384, help="host memory per copy (%(default)s)"
    )
    host.add_argument("--copies", type=int, default=1, help="component copies (%(default)s)")


def add_autoscaling_options(deploy: argparse.ArgumentParser) -> None:
    """A target-tracking policy on the variant or the component."""
    scale = deploy.add_argument_group("autoscaling")
    scale.add_argument("--autoscale", action="store_true", help="add a target-tracking policy")
    scale.add_argument("--min-capacity", type=int, help="instances (or copies) at least")
    scale.add_argument("--max-capacity", type=int, help="instances (or copies) at most")
    scale.add_argument("--target-value", type=float, help="load per instance (or copy) to hold")
    scale.add_argument(
        "--metric",
        choices=("concurrency", "invocations", "backlog"),
        default="concurrency",
        help="concurrent requests (high resolution), invocations per minute, or (--async) the "
        "queued requests per instance (%(default)s)",
    )


def add_async_options(deploy: argparse.ArgumentParser) -> None:
    """An asynchronous endpoint: its S3 locations, notifications and scale to zero."""
    asynchronous = deploy.add_argument_group(
        "asynchronous inference (requests and answers through S3, queued, up to 1 GB and an hour)"
    )
    asynchronous.add_argument(
        "--async",
        dest="asynchronous",
        action="store_true",
        help="an asynchronous endpoint (invoke it with invoke --async)",
    )
    asynchronous.add_argument("--async-output-uri", help="s3://.../ where answers are written")
    asynchronous.add_argument(
        "--async-failure-uri", help="s3://.../ for failed requests (default: OUTPUT/failures/)"
    )
    asynchronous.add_argument("--sns-success-topic", help="SNS topic ARN told of each answer")
    asynchronous.add_argument("--sns-error-topic", help="SNS topic ARN told of each failure")
    asynchronous.add_argument(
        "--max-concurrent-invocations",
        type=int,
        help="requests SageMaker sends each instance at once (default: SageMaker's)",
    )
    asynchronous.add_argument(
        "--scale-to-zero",
        action="store_true",
        help="no instance while the queue is empty: target tracking on the backlog per "
        "instance (--target-value, default 5) down to 0, and an alarm on "
        "HasBacklogWithoutCapacity that adds one when requests arrive",
    )


def add_traffic_capture_options(deploy: argparse.ArgumentParser) -> None:
    """Data capture to S3, or tracing to CloudWatch Logs (deploy/traffic_capture.py)."""
    kept = deploy.add_argument_group(
        "what SageMaker keeps of the traffic (data capture or tracing, not both; "
        "docs/metrics-and-capture.md)"
    )
    kept.add_argument(
        "--data-capture",
        metavar="S3_URI",
        help="write requests and answers under s3://.../ (SageMaker Data Capture), for "
        "`python -m capture export` and training a head on your traffic",
    )
    kept.add_argument(
        "--capture-percent",
        type=percent,
        metavar="N",
        help=f"share of requests --data-capture keeps (default {DEFAULT_CAPTURE_PERCENT}%%)",
    )
    kept.add_argument(
        "--tracing",
        type=percent,
        metavar="PERCENT",
        help="send this share of requests and answers to CloudWatch Logs "
        "(/aws/sagemaker/Endpoints/NAME/traces), for Model Monitor configs",
    )
    kept.add_argument(
        "--tracing-s3-uri",
        metavar="S3_URI",
        help="s3://.../ where --tracing delivers payloads over 512 KiB whole (else cut short)",
    )
    kept.add_argument(
        "--tracing-kms-key",
        metavar="KEY",
        help="KMS key id, ARN or alias that encrypts what goes to --tracing-s3-uri",
    )


def add_guard_options(deploy: argparse.ArgumentParser) -> None:
    """The canary an update to an existing endpoint goes through, and its alarms."""
    guard = deploy.add_argument_group(
        "guarded update (an existing endpoint moves to the new head through a canary that "
        "SageMaker rolls back when an alarm fires)"
    )
    guard.add_argument(
        "--canary",
        type=percent,
        default=f"{DEFAULT_CANARY_PERCENT}%",
        help="share of the capacity that takes the new head first (%(default)s)",
    )
    guard.add_argument(
        "--bake",
        type=int,
        default=DEFAULT_BAKE_SECONDS,
        metavar="SECONDS",
        help="how long the canary is watched before the rest moves (%(default)s)",
    )
    guard.add_argument(
        "--min-acceptance",
        type=float,
        help="roll back when the new head's mean acceptance length falls below this "
        f"(default: {DEFAULT_ACCEPTANCE_FLOOR:g} x the current head's over the last hour)",
    )


def percent(text: str) -> int:
    """ "10%" or "10": a whole percentage from 0 to 100."""
    value = text.strip().removesuffix("%")
    if not value.isdigit() or int(value) > 100:
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage; give e.g. 10%")
    return int(value)
