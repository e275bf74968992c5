"""`shadow`, `promote` and `compare` from the command line: a new head beside production as a
shadow variant, its figures against production's, then in production's place."""

from __future__ import annotations

import argparse
from typing import TextIO

from deploy import (
    calls,
    cloudwatch_figures,
    container_figures,
    inputs,
    names,
    rollout,
    shadow_variant,
)
from deploy.clients import Connect, Connection
from deploy.failures import UsageError
from deploy.requests import SAGEMAKER
from deploy.waiting import Clock, wait_for_endpoint


def run_shadow(
    args: argparse.Namespace, connect_to: Connect, out: TextIO, err: TextIO, clock: Clock
) -> int:
    problems = [problem for problem in [names.name_problem("--name", args.name)] if problem]
    head = None
    if args.remove:
        if args.head_uri or args.k is not None:
            problems.append("--remove takes no --head-uri or --k; drop them.")
    else:
        if args.head_uri is None:
            problems.append("shadow needs --head-uri s3://.../eagle/ (or --remove).")
        else:
            head = inputs.checked_prefix("--head-uri", args.head_uri, problems)
        if args.k is not None and args.k < 1:
            problems.append(f"--k {args.k} is not a draft length; use 1 or more.")
        if args.sample < 1:
            problems.append("--sample 0% copies nothing to the shadow; use 1% to 100%.")
    if problems:
        raise UsageError(problems)
    connection = connect_to(args.profile, args.region, args.endpoint_url)
    live = shadow_variant.read_live(connection, args.name)
    version = names.version_now()
    if args.remove:
        planned = shadow_variant.remove(live, version)
    else:
        assert head is not None
        planned = shadow_variant.add(live, version, head, args.k, args.sample)
    return change_endpoint(args, planned, connection, out, err, clock)


def run_promote(
    args: argparse.Namespace, connect_to: Connect, out: TextIO, err: TextIO, clock: Clock
) -> int:
    names.check_name(args.name)
    connection = connect_to(args.profile, args.region, args.endpoint_url)
    live = shadow_variant.read_live(connection, args.name)
    planned = shadow_variant.promote(live, names.version_now())
    return change_endpoint(args, planned, connection, out, err, clock)


def change_endpoint(
    args: argparse.Namespace,
    planned: list[calls.Call],
    connection: Connection,
    out: TextIO,
    err: TextIO,
    clock: Clock,
) -> int:
    """Check the requests, then print them (--dry-run) or send them and wait."""
    problems = calls.problems(planned)
    if problems:
        raise UsageError(problems)
    if args.dry_run:
        calls.print_calls(planned, out)
        err.write(f"dry run: read endpoint {args.name}, changed nothing.\n")
        return 0
    for call in planned:
        out.write(rollout.describe_step(call) + "\n")
        calls.send(connection.client, call)
    clock.poll_seconds = args.poll_seconds
    config_name = planned[-1].params["EndpointConfigName"]
    sagemaker = connection.client(SAGEMAKER)
    wait_for_endpoint(sagemaker, args.name, connection.region, out, clock, config_name)
    out.write(f"endpoint {args.name} is in service on {config_name}\n")
    return 0


def run_compare(args: argparse.Namespace, connect_to: Connect, out: TextIO) -> int:
    local = (args.container_url, args.shadow_container_url)
    if args.name is None and None in local:
        raise UsageError(
            "compare reads CloudWatch for --name ENDPOINT, or two local containers' metrics "
            "for --container-url and --shadow-container-url; give one of the two."
        )
    if args.name is not None and any(local):
        raise UsageError("give --name, or the two container URLs, not both.")
    if args.minutes < 5:
        raise UsageError(f"--minutes {args.minutes} is too short a window; use 5 or more.")
    if args.name is None:
        table = container_figures.local(args.container_url, args.shadow_container_url)
    else:
        connection = connect_to(args.profile, args.region, args.endpoint_url)
        table = cloudwatch_figures.from_cloudwatch(connection, args.name, args.minutes)
    out.write(table.render())
    return 0
