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
from deploy.model_dirs import directory_bytes
from deploy.plan import (
    DEFAULT_INSTANCE_TYPE,
    DEFAULT_NUM_SPECULATIVE_TOKENS,
    Autoscaling,
    Component,
    Plan,
)
from deploy.requests import SAGEMAKER, speculative_config
from deploy.s3 import S3Prefix, parse_prefix, prefix_bytes
from deploy.sizing import GB, size_for
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
    host.add_argument("--inference-ami-version", help="e.g. al2-ami-sagemaker-inference-gpu-3-1")
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


def checked_prefix(option: str, uri: str, problems: list[str]) -> S3Prefix | None:
    try:
        return parse_prefix(option, uri)
    except ValueError as error:
        problems.append(str(error))
        return None


def checked_directory(option: str, directory: Path | None, problems: list[str]) -> None:
    if directory is not None and not directory.is_dir():
        problems.append(f"{option} {directory} is not a directory; give the local model folder.")


def autoscaling_of(args: argparse.Namespace, problems: list[str]) -> Autoscaling | None:
    values = (args.min_capacity, args.max_capacity, args.target_value)
    if not args.autoscale:
        if any(value is not None for value in values):
            problems.append(
                "--min-capacity, --max-capacity and --target-value take effect only with "
                "--autoscale; add it, or drop them."
            )
        return None
    missing = [
        option
        for option, value in zip(
            ("--min-capacity", "--max-capacity", "--target-value"), values, strict=True
        )
        if value is None
    ]
    if missing:
        problems.append(f"--autoscale needs {', '.join(missing)}; add them.")
        return None
    scaling = Autoscaling(args.min_capacity, args.max_capacity, args.target_value, args.metric)
    problems += inputs.autoscaling_problems(scaling, args.inference_component)
    return scaling


def model_bytes(
    args: argparse.Namespace,
    target: S3Prefix,
    head: S3Prefix,
    connection_for: Callable[[], Connection | None],
) -> int:
    """Local directories, else --model-gb, else the S3 prefixes' listing (a call)."""
    if args.target_dir is not None and args.head_dir is not None:
        return directory_bytes(args.target_dir) + directory_bytes(args.head_dir)
    if args.model_gb is not None:
        return int(args.model_gb * GB)
    connection = connection_for()
    if connection is None:
        raise UsageError(
            "--dry-run makes no calls, so it cannot list the S3 prefixes to size the model; "
            "pass --model-gb (e.g. --model-gb 31) or --target-dir and --head-dir."
        )
    s3 = connection.client("s3")
    found = prefix_bytes(s3, target) + prefix_bytes(s3, head)
    if not found:
        raise UsageError(
            f"--target-uri {target.uri} and --head-uri {head.uri} hold nothing; run `upload` "
            "first, or check the URIs."
        )
    return found


def deploy_plan(args: argparse.Namespace, connection_for: Callable[[], Connection | None]) -> Plan:
    """The Plan, or UsageError listing every problem with the options (all of them found
    before connecting, so a missing credential does not hide a bad option)."""
    problems: list[str] = []
    for problem in (
        names.name_problem("--name", args.name),
        inputs.role_problem(args.role),
        inputs.instance_type_problem(args.instance_type),
        args.inference_ami_version and inputs.ami_version_problem(args.inference_ami_version),
    ):
        if problem:
            problems.append(problem)
    target = checked_prefix("--target-uri", args.target_uri, problems)
    head = checked_prefix("--head-uri", args.head_uri, problems)
    environment = inputs.parse_environment(args.env, problems)
    if args.k < 1:
        problems.append(f"--k {args.k} is not a draft length; use 1 or more (7 suits P-EAGLE).")
    for option, value in (
        ("--instance-count", args.instance_count),
        ("--accelerators", args.accelerators),
        ("--copies", args.copies),
    ):
        if value < 1:
            problems.append(f"{option} {value} is below 1; use 1 or more.")
    if args.model_gb is not None and not args.model_gb > 0:
        problems.append(f"--model-gb {args.model_gb} is not above 0; give the size in GB.")
    if (args.target_dir is None) != (args.head_dir is None):
        problems.append(
            "--target-dir and --head-dir go together (the checks compare the head with the "
            "target); give both, or neither."
        )
    checked_directory("--target-dir", args.target_dir, problems)
    checked_directory("--head-dir", args.head_dir, problems)
    scaling = autoscaling_of(args, problems)
    if not problems and args.target_dir is not None and args.head_dir is not None:
        from deploy.preflight import speculation_problems

        found = speculation_problems(
            args.target_dir, args.head_dir, speculative_config(args.k), environment
        )
        problems += [
            f"preflight of --target-dir and --head-dir with --k {args.k}: {problem}"
            for problem in found
        ]
    if problems:
        raise UsageError(problems)
    assert target is not None and head is not None
    component = (
        Component(names.component_name(args.name), args.accelerators, args.memory_mb, args.copies)
        if args.inference_component
        else None
    )
    return Plan(
        endpoint_name=args.name,
        version=names.version_now(),
        image_uri=args.image,
        role_arn=args.role,
        target=target,
        head=head,
        num_speculative_tokens=args.k,
        instance_type=args.instance_type,
        instance_count=args.instance_count,
        sizing=size_for(model_bytes(args, target, head, connection_for), args.instance_type),
        extra_environment=environment,
        inference_ami_version=args.inference_ami_version,
        component=component,
        autoscaling=scaling,
    )


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
    base = checked_prefix("--s3-uri", args.s3_uri, problems)
    checked_directory("--target-dir", args.target_dir, problems)
    checked_directory("--head-dir", args.head_dir, problems)
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
