"""The train-head subcommand: its options made into a TrainingPlan (local folders uploaded
first, unless it is a dry run), the request checked against botocore's model, then sent and
waited on."""

from __future__ import annotations

import argparse
from dataclasses import fields
from pathlib import Path
from typing import Any, TextIO

from deploy import calls, inputs, names
from deploy.clients import Connection
from deploy.failures import UsageError
from deploy.s3 import S3Prefix
from deploy.training_job import TrainingPlan, create_training_job, job_name, wait_for_job
from deploy.upload import extra_warning, upload_directory
from deploy.waiting import Clock
from training.contract import ContractError, Hyperparameters

# (option stem, channel and S3 folder name)
SOURCES = (("target", "target"), ("train", "train"), ("head", "eagle"), ("replay", "replay"))
OPTIONAL = ("head", "replay")


def hyperparameters_of(args: argparse.Namespace, problems: list[str]) -> dict[str, str]:
    """--hyperparameter NAME=VALUE, --k and --epochs, as strings, checked as the job will."""
    given: dict[str, str] = {}
    for pair in args.hyperparameter:
        name, equals, value = pair.partition("=")
        if not equals:
            problems.append(f"--hyperparameter {pair!r} is not NAME=VALUE.")
            continue
        given[name.strip()] = value.strip()
    if args.k is not None:
        given["num_speculative_tokens"] = str(args.k)
    if args.epochs is not None:
        given["epochs"] = str(args.epochs)
    try:
        Hyperparameters.parse(given)
    except ContractError as error:
        problems.append(f"{error} (names: {', '.join(f.name for f in fields(Hyperparameters))})")
    return given


def source_of(
    args: argparse.Namespace, stem: str, folder: str, base: S3Prefix | None, problems: list[str]
) -> tuple[S3Prefix | None, Path | None]:
    """The channel's S3 prefix: --STEM-uri, or --STEM-dir uploaded under --s3-uri."""
    uri, directory = getattr(args, f"{stem}_uri"), getattr(args, f"{stem}_dir")
    if uri and directory:
        problems.append(f"give --{stem}-uri or --{stem}-dir, not both.")
        return None, None
    if directory is not None:
        inputs.checked_directory(f"--{stem}-dir", directory, problems)
        if base is None:
            problems.append(f"--{stem}-dir needs --s3-uri, the prefix it is uploaded under.")
            return None, None
        return base.child(folder), directory
    if uri:
        return inputs.checked_prefix(f"--{stem}-uri", uri, problems), None
    if stem not in OPTIONAL:
        problems.append(f"train-head needs --{stem}-uri s3://... or --{stem}-dir PATH.")
    return None, None


def plan_of(
    args: argparse.Namespace, version: str
) -> tuple[TrainingPlan, dict[str, tuple[S3Prefix, Path]]]:
    """The plan, and the folders to upload first (channel -> (prefix, folder))."""
    problems = inputs.job_problems(args, "TrainingInstanceType", "a training type")
    base = inputs.checked_prefix("--s3-uri", args.s3_uri, problems) if args.s3_uri else None
    prefixes: dict[str, S3Prefix | None] = {}
    uploads: dict[str, tuple[S3Prefix, Path]] = {}
    for stem, folder in SOURCES:
        prefix, directory = source_of(args, stem, folder, base, problems)
        prefixes[stem] = prefix
        if prefix is not None and directory is not None:
            uploads[folder] = (prefix, directory)
    output = (
        inputs.checked_prefix("--output-uri", args.output_uri, problems)
        if args.output_uri
        else (base.child("training") if base is not None else None)
    )
    if output is None and not problems:
        problems.append("train-head needs --output-uri s3://... (or --s3-uri) for the head.")
    hyperparameters = hyperparameters_of(args, problems)
    for option, value in (
        ("--instance-count", args.instance_count),
        ("--volume-gb", args.volume_gb),
    ):
        if value < 1:
            problems.append(f"{option} {value} is below 1.")
    if not 0 < args.max_hours <= 28 * 24:
        problems.append(f"--max-hours {args.max_hours:g} is outside SageMaker's 28 days.")
    if problems:
        raise UsageError(problems)
    assert prefixes["target"] and prefixes["train"] and output
    plan = TrainingPlan(
        job_name=job_name(args.name, version),
        image_uri=args.image,
        role_arn=args.role,
        target=prefixes["target"],
        train=prefixes["train"],
        head=prefixes["head"],
        replay=prefixes["replay"],
        output=output,
        instance_type=args.instance_type,
        instance_count=args.instance_count,
        volume_gb=args.volume_gb,
        spot=args.spot,
        max_seconds=int(args.max_hours * 3600),
        hyperparameters=hyperparameters,
    )
    return plan, uploads


def run(
    args: argparse.Namespace,
    connection_for: Any,
    out: TextIO,
    err: TextIO,
    clock: Clock,
) -> int:
    plan, uploads = plan_of(args, names.version_now())
    request = create_training_job(plan)
    problems = calls.problems([request])
    if problems:
        raise UsageError(problems)
    if args.dry_run:
        calls.print_calls([request], out)
        uploading = "".join(
            f"\n  {directory} -> {prefix.uri}" for prefix, directory in uploads.values()
        )
        err.write(
            "dry run: nothing uploaded or sent."
            + (f" A real run first uploads:{uploading}" if uploads else "")
            + f"\nThe head will be at {plan.head_uri} (deploy's --head-uri).\n"
        )
        return 0
    connection: Connection = connection_for()
    for prefix, directory in uploads.values():
        outcome = upload_directory(connection.client("s3"), directory, prefix, err)
        out.write(
            f"{prefix.uri}: {len(outcome.uploaded)} uploaded, {len(outcome.skipped)} unchanged\n"
        )
        if outcome.extra:
            err.write(extra_warning(prefix, directory, outcome.extra) + "\n")
    out.write(f"CreateTrainingJob {plan.job_name}\n")
    calls.send(connection.client, request)
    clock.poll_seconds = args.poll_seconds
    description = wait_for_job(connection.client("sagemaker"), plan, out, clock)
    head = description.get("ModelArtifacts", {}).get("S3ModelArtifacts") or plan.head_uri
    out.write(
        f"the head is at {head}; serve it with: python -m deploy deploy ... --head-uri {head}\n"
    )
    return 0
