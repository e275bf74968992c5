"""`python -m deploy` (sagemaker-peagle-deploy): the command line, and nothing else.

Each subcommand reads its options, turns bad input into sentences (exit 2, before any call),
and hands over to the module that does the work.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from botocore.exceptions import BotoCoreError, ClientError

from deploy import calls, cleanup, inputs, invoke, names, rollout, status, upload
from deploy.clients import Connection, connect
from deploy.errors import EXIT_FAILED, EXIT_USAGE, DeployFailed, UsageError
from deploy.plan import DEFAULT_IMAGE_CUDA, DEFAULT_INSTANCE_TYPE, DEFAULT_NUM_SPECULATIVE_TOKENS
from deploy.planning import deploy_plan
from deploy.requests import SAGEMAKER
from deploy.sizing import GB
from deploy.waiting import Clock

Connect = Callable[[str | None, str | None, str | None], Connection]


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

    up = commands.add_parser(
        "upload", parents=[common], help="upload the target and head directories to S3"
    )
    up.add_argument("--target-dir", type=Path, required=True, help="local target model")
    up.add_argument("--head-dir", type=Path, required=True, help="local P-EAGLE head")
    up.add_argument(
        "--s3-uri", required=True, help="base prefix s3://bucket/path/; gets model/ and eagle/"
    )

    deploy = commands.add_parser(
        "deploy",
        parents=[common],
        help="create or update the endpoint",
        description="Create the model, endpoint config and endpoint (or roll an existing "
        "endpoint onto a new model), wait until it is in service, and set up autoscaling.",
    )
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
        default=DEFAULT_NUM_SPECULATIVE_TOKENS,
        help="num_speculative_tokens (default %(default)s)",
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
    scale = deploy.add_argument_group("autoscaling")
    scale.add_argument("--autoscale", action="store_true", help="add a target-tracking policy")
    scale.add_argument("--min-capacity", type=int, help="instances (or copies) at least")
    scale.add_argument("--max-capacity", type=int, help="instances (or copies) at most")
    scale.add_argument("--target-value", type=float, help="load per instance (or copy) to hold")
    scale.add_argument(
        "--metric",
        choices=("concurrency", "invocations"),
        default="concurrency",
        help="concurrent requests (high resolution) or invocations per minute (%(default)s)",
    )
    deploy.add_argument("--dry-run", action="store_true", help="print the requests, send none")
    deploy.add_argument(
        "--poll-seconds", type=float, default=30.0, help="status poll interval (%(default)s)"
    )

    call = commands.add_parser("invoke", parents=[common], help="send one chat request")
    call.add_argument("--name", required=True, help="endpoint name")
    what = call.add_mutually_exclusive_group(required=True)
    what.add_argument("--prompt", help="the user message")
    what.add_argument("--payload", type=Path, help="a JSON chat request file")
    call.add_argument("--max-tokens", type=int, help="overrides the payload's")
    call.add_argument("--temperature", type=float, help="overrides the payload's")
    call.add_argument("--stream", action="store_true", help="print tokens as they arrive")

    show = commands.add_parser("status", parents=[common], help="the endpoint's state")
    show.add_argument("--name", required=True, help="endpoint name")

    remove = commands.add_parser(
        "delete",
        parents=[common],
        help="delete the endpoint and everything deploy made for it",
    )
    remove.add_argument("--name", required=True, help="endpoint name")
    remove.add_argument("--dry-run", action="store_true", help="print the requests, send none")
    remove.add_argument("--poll-seconds", type=float, default=30.0, help=argparse.SUPPRESS)
    return top


def run_deploy(
    args: argparse.Namespace, connect_to: Connect, out: TextIO, err: TextIO, clock: Clock
) -> int:
    @functools.cache
    def connection_for() -> Connection | None:
        if args.dry_run:
            return None
        return connect_to(args.profile, args.region, args.endpoint_url)

    plan = deploy_plan(args, connection_for)
    problems = calls.problems(rollout.every_call(plan))
    if problems:
        raise UsageError(problems)
    sizing = plan.sizing
    err.write(
        f"model {sizing.model_bytes / GB:.1f} GB: download timeout {sizing.download_seconds} s, "
        f"start-up timeout {sizing.startup_seconds} s, "
        + (
            f"volume {sizing.volume_gb} GB\n"
            if sizing.volume_gb is not None
            else f"no VolumeSizeInGB ({plan.instance_type} serves from its local NVMe)\n"
        )
    )
    connection = connection_for()
    if connection is None:
        steps = rollout.steps(plan, rollout.Existing())
        calls.print_calls([step for step in steps if isinstance(step, calls.Call)], out)
        err.write(
            "dry run: nothing sent. These are the requests for a new endpoint "
            f"{plan.endpoint_name}; on an existing one deploy "
            + (
                "creates the same model, then calls UpdateInferenceComponent (or "
                "CreateInferenceComponent) and leaves the endpoint config as it is."
                if plan.component is not None
                else "creates the same model and config, then calls UpdateEndpoint instead "
                "of CreateEndpoint."
            )
            + "\n"
        )
        return 0
    existing = rollout.find_existing(plan, connection)
    if existing.endpoint:
        out.write(f"endpoint {plan.endpoint_name} exists: rolling it onto {plan.model_name}\n")
    clock.poll_seconds = args.poll_seconds
    rollout.run(plan, existing, connection, out, clock)
    out.write(
        f"endpoint {plan.endpoint_name} is in service; try: python -m deploy invoke "
        f"--name {plan.endpoint_name} --prompt 'What is deep learning?'\n"
    )
    return 0


def run_delete(
    args: argparse.Namespace, connect_to: Connect, out: TextIO, err: TextIO, clock: Clock
) -> int:
    problem = names.name_problem("--name", args.name)
    if problem:
        raise UsageError(problem)
    if args.dry_run:
        assumed = cleanup.assumed_inventory(args.name)
        resource_ids = [resource_id for resource_id, _, _ in assumed.scalable_targets]
        calls.print_calls(
            cleanup.discovery_calls(args.name, resource_ids)
            + cleanup.delete_calls(args.name, assumed),
            out,
        )
        err.write(
            "dry run: nothing sent. The Describe/List requests find what exists; the deletes "
            "shown are for deploy's fixed names, and every NAME-<timestamp> model and endpoint "
            "config they find (and the endpoint's own) is deleted too.\n"
        )
        return 0
    connection = connect_to(args.profile, args.region, args.endpoint_url)
    clock.poll_seconds = args.poll_seconds
    cleanup.delete(args.name, connection, out, clock)
    return 0


def run_upload(args: argparse.Namespace, connect_to: Connect, out: TextIO, err: TextIO) -> int:
    problems: list[str] = []
    base = inputs.checked_prefix("--s3-uri", args.s3_uri, problems)
    inputs.checked_directory("--target-dir", args.target_dir, problems)
    inputs.checked_directory("--head-dir", args.head_dir, problems)
    if problems:
        raise UsageError(problems)
    assert base is not None
    connection = connect_to(args.profile, args.region, args.endpoint_url)
    upload.upload_pair(connection.client("s3"), args.target_dir, args.head_dir, base, out, err)
    return 0


def run_invoke(args: argparse.Namespace, connect_to: Connect, out: TextIO) -> int:
    payload = invoke.chat_payload(
        args.prompt, args.payload, args.max_tokens, args.temperature, args.stream
    )
    connection = connect_to(args.profile, args.region, args.endpoint_url)
    invoke.invoke(connection.client("sagemaker-runtime"), args.name, payload, out)
    return 0


def run_status(args: argparse.Namespace, connect_to: Connect, out: TextIO) -> int:
    connection = connect_to(args.profile, args.region, args.endpoint_url)
    state = status.report(connection.client(SAGEMAKER), args.name, connection.region, out)
    return 0 if state == "InService" else EXIT_FAILED


def run(
    argv: Sequence[str] | None,
    out: TextIO,
    err: TextIO,
    connect_to: Connect = connect,
    clock: Clock | None = None,
) -> int:
    try:
        args = parser().parse_args(argv)
    except SystemExit as exit:  # --help, or argparse's own usage error (exit 2)
        return int(exit.code or 0)
    clock = clock or Clock()
    try:
        if args.command == "deploy":
            return run_deploy(args, connect_to, out, err, clock)
        if args.command == "delete":
            return run_delete(args, connect_to, out, err, clock)
        if args.command == "upload":
            return run_upload(args, connect_to, out, err)
        if args.command == "invoke":
            return run_invoke(args, connect_to, out)
        return run_status(args, connect_to, out)
    except UsageError as error:
        for problem in error.problems:
            err.write(f"error: {problem}\n")
        return EXIT_USAGE
    except DeployFailed as error:
        err.write(f"failed: {error}\n")
        return EXIT_FAILED
    except ClientError as error:
        detail = error.response.get("Error", {})
        err.write(
            f"failed: {error.operation_name} was refused: {detail.get('Code', '?')}: "
            f"{detail.get('Message', error)}\n"
        )
        return EXIT_FAILED
    except BotoCoreError as error:
        err.write(f"failed: {error}\n")
        return EXIT_FAILED


def main(argv: Sequence[str] | None = None) -> int:
    return run(argv, sys.stdout, sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
