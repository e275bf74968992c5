"""`python -m deploy` (sagemaker-peagle-deploy): the command line, and nothing else.

Each subcommand reads its options, turns bad input into sentences (exit 2, before any call),
and hands over to the module that does the work.
"""

from __future__ import annotations

import argparse
import functools
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from botocore.exceptions import BotoCoreError, ClientError

from deploy import (
    calls,
    cleanup,
    head_rollout,
    inputs,
    invoke,
    model_tarball,
    names,
    rollout,
    status,
    train_head,
    transform_job,
    upload,
)
from deploy.arguments import parser
from deploy.clients import Connect, Connection, connect
from deploy.decide import deploy_plan
from deploy.failures import EXIT_FAILED, EXIT_USAGE, DeployFailed, UsageError
from deploy.plan import Plan
from deploy.requests import SAGEMAKER
from deploy.sizing import GB
from deploy.waiting import Clock


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
        print_dry_run(plan, args.update, out, err)
        return 0
    existing = rollout.find_existing(plan, connection, out)
    if existing.endpoint:
        out.write(f"endpoint {plan.endpoint_name} exists: rolling it onto {plan.model_name}\n")
    clock.poll_seconds = args.poll_seconds
    rollout.run(plan, existing, connection, out, clock)
    out.write(
        f"endpoint {plan.endpoint_name} is in service; try: python -m deploy invoke "
        f"--name {plan.endpoint_name} --prompt 'What is deep learning?'\n"
    )
    out.write(openai_path(plan, connection.region))
    return 0


def openai_path(plan: Plan, region: str) -> str:
    """How OpenAI clients reach the endpoint: SageMaker's OpenAI-compatible path, with a
    bearer token made from the caller's AWS credentials (docs/clients.md)."""
    base = f"https://runtime.sagemaker.{region}.amazonaws.com/endpoints/{plan.endpoint_name}"
    if plan.component is not None:
        base += f"/inference-components/{plan.component.name}"
    recipe = f"generate_token(region='{region}')"
    return (
        f"OpenAI clients: base_url={base}/openai/v1, api_key=the token that "
        f"sagemaker.core.token_generator's {recipe} makes (pip install sagemaker; valid up "
        "to 12 h; the caller needs sagemaker:CallWithBearerToken and "
        "sagemaker:InvokeEndpoint)\n"
    )


def print_dry_run(plan: Plan, update: bool, out: TextIO, err: TextIO) -> None:
    if not update:
        steps = rollout.steps(plan, rollout.Existing())
        calls.print_calls(rollout.calls_of(plan, steps), out)
        err.write(
            f"dry run: nothing sent. These are the requests for a new endpoint "
            f"{plan.endpoint_name}; --update prints those that roll an existing one onto "
            "the head.\n"
        )
        return
    existing = rollout.Existing(
        endpoint=True, component=True, min_acceptance=plan.guard.min_acceptance
    )
    steps = rollout.steps(plan, existing)
    calls.print_calls(rollout.calls_of(plan, steps), out)
    err.write(
        f"dry run: nothing sent. These are the requests that roll the existing endpoint "
        f"{plan.endpoint_name} onto the head, guarded by the alarms shown"
        + (
            ""
            if plan.guard.min_acceptance is not None
            else "; run for real, deploy also reads the current head's acceptance over the "
            "last hour from CloudWatch and adds an acceptance alarm at 0.9 x that"
        )
        + ". The alarms are deleted once the update ends.\n"
    )


def run_delete(
    args: argparse.Namespace, connect_to: Connect, out: TextIO, err: TextIO, clock: Clock
) -> int:
    names.check_name(args.name)
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
    if args.pack:
        with tempfile.TemporaryDirectory() as scratch:
            tarball = Path(scratch) / model_tarball.TARBALL_NAME
            members = model_tarball.pack(args.target_dir, args.head_dir, tarball)
            err.write(f"packed {len(members)} files into {tarball.stat().st_size} bytes\n")
            model_tarball.upload_tarball(connection.client("s3"), tarball, base, out, err)
        return 0
    upload.upload_pair(connection.client("s3"), args.target_dir, args.head_dir, base, out, err)
    return 0


def run_invoke(args: argparse.Namespace, connect_to: Connect, out: TextIO, clock: Clock) -> int:
    payload = invoke.chat_payload(
        args.prompt, args.payload, args.max_tokens, args.temperature, args.stream
    )
    if args.asynchronous:
        problems: list[str] = []
        if args.stream:
            problems.append("--stream and --async do not go together: async answers land whole.")
        if args.input_uri is None:
            problems.append("--async needs --input-uri s3://.../, where the payload goes.")
        prefix = inputs.checked_prefix("--input-uri", args.input_uri or "", problems)
        if problems:
            raise UsageError(problems)
        assert prefix is not None
        connection = connect_to(args.profile, args.region, args.endpoint_url)
        clock.poll_seconds = args.poll_seconds
        invoke.invoke_async(
            connection.client("sagemaker-runtime"),
            connection.client("s3"),
            args.name,
            payload,
            prefix,
            out,
            clock,
            args.wait_seconds,
        )
        return 0
    if args.input_uri is not None:
        raise UsageError("--input-uri is for --async; add --async or drop it.")
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
            return run_invoke(args, connect_to, out, clock)
        if args.command == "shadow":
            return head_rollout.run_shadow(args, connect_to, out, err, clock)
        if args.command == "promote":
            return head_rollout.run_promote(args, connect_to, out, err, clock)
        if args.command == "compare":
            return head_rollout.run_compare(args, connect_to, out)
        jobs = {"train-head": train_head.run, "transform": transform_job.run}
        if args.command in jobs:  # each connects only once its options are checked
            connection = functools.partial(connect_to, args.profile, args.region, args.endpoint_url)
            return jobs[args.command](args, connection, out, err, clock)
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
