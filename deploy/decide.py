"""The deploy subcommand's options made into a Plan: every problem with them found at once,
before any call, each a sentence; then the model's size, from the local directories, the
option, or (the one call) the S3 listing."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable

from deploy import inputs, names, routing
from deploy.clients import Connection
from deploy.failures import UsageError
from deploy.model_dirs import directory_bytes
from deploy.plan import (
    DEFAULT_NUM_SPECULATIVE_TOKENS,
    AsyncInference,
    Autoscaling,
    Component,
    Guard,
    Plan,
)
from deploy.requests import speculative_config
from deploy.s3 import S3Prefix, prefix_bytes
from deploy.sizing import GB, size_for
from deploy.traffic_capture import DEFAULT_CAPTURE_PERCENT, DataCapture, Tracing
from serving.preflight.cuda_driver import ami_for, ami_problem
from serving.variables import BATCH_SCHEDULE_KEY


def autoscaling_of(args: argparse.Namespace, problems: list[str]) -> Autoscaling | None:
    if args.asynchronous and args.scale_to_zero:
        return scale_to_zero_of(args, problems)
    if args.metric == "backlog" and not args.asynchronous:
        problems.append("--metric backlog is the queue of an asynchronous endpoint; add --async.")
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


# Queued requests per instance that --scale-to-zero holds when --target-value is not given.
DEFAULT_BACKLOG_PER_INSTANCE = 5.0


def asynchronous_of(args: argparse.Namespace, problems: list[str]) -> AsyncInference | None:
    """--async and its options; --scale-to-zero's autoscaling is made in autoscaling_of."""
    given = [
        option
        for option, value in (
            ("--async-output-uri", args.async_output_uri),
            ("--async-failure-uri", args.async_failure_uri),
            ("--sns-success-topic", args.sns_success_topic),
            ("--sns-error-topic", args.sns_error_topic),
            ("--max-concurrent-invocations", args.max_concurrent_invocations),
            ("--scale-to-zero", args.scale_to_zero or None),
        )
        if value is not None
    ]
    if not args.asynchronous:
        if given:
            problems.append(f"{', '.join(given)} take effect only with --async; add it.")
        return None
    if args.inference_component:
        problems.append(
            "--async and --inference-component do not go together: SageMaker hosts "
            "asynchronous endpoints on the variant's model only; drop one."
        )
    if args.async_output_uri is None:
        problems.append("--async needs --async-output-uri s3://.../, where answers are written.")
        return None
    output = inputs.checked_prefix("--async-output-uri", args.async_output_uri, problems)
    failure = (
        inputs.checked_prefix("--async-failure-uri", args.async_failure_uri, problems)
        if args.async_failure_uri
        else (output.child("failures") if output is not None else None)
    )
    if args.max_concurrent_invocations is not None and args.max_concurrent_invocations < 1:
        problems.append(
            f"--max-concurrent-invocations {args.max_concurrent_invocations} is below 1."
        )
    if output is None or failure is None:
        return None
    return AsyncInference(
        output=output,
        failure=failure,
        success_topic=args.sns_success_topic,
        error_topic=args.sns_error_topic,
        max_concurrent_invocations=args.max_concurrent_invocations,
        scale_to_zero=args.scale_to_zero,
    )


def scale_to_zero_of(args: argparse.Namespace, problems: list[str]) -> Autoscaling:
    """Target tracking on the backlog per instance, from 0 to --max-capacity (default: the
    instance count)."""
    if args.autoscale or args.min_capacity is not None:
        problems.append(
            "--scale-to-zero sets the autoscaling itself (0 to --max-capacity instances on "
            "the backlog per instance); drop --autoscale and --min-capacity."
        )
    if args.metric not in ("concurrency", "backlog"):
        problems.append("--scale-to-zero scales on the backlog; drop --metric.")
    maximum = args.max_capacity if args.max_capacity is not None else args.instance_count
    target = args.target_value if args.target_value is not None else DEFAULT_BACKLOG_PER_INSTANCE
    scaling = Autoscaling(0, maximum, target, "backlog")
    # The variant's floor of one does not hold for an asynchronous endpoint.
    problems += [
        problem
        for problem in inputs.autoscaling_problems(scaling, component=True)
        if "--min-capacity" not in problem
    ]
    return scaling


def data_capture_of(args: argparse.Namespace, problems: list[str]) -> DataCapture | None:
    if args.data_capture is None:
        if args.capture_percent is not None:
            problems.append("--capture-percent takes effect only with --data-capture; add it.")
        return None
    destination = inputs.checked_prefix("--data-capture", args.data_capture, problems)
    if destination is None:
        return None
    percent = DEFAULT_CAPTURE_PERCENT if args.capture_percent is None else args.capture_percent
    return DataCapture(destination, percent)


def tracing_of(args: argparse.Namespace, problems: list[str]) -> Tracing | None:
    if args.tracing is None:
        given = [
            option
            for option, value in (
                ("--tracing-s3-uri", args.tracing_s3_uri),
                ("--tracing-kms-key", args.tracing_kms_key),
            )
            if value is not None
        ]
        if given:
            verb = "take" if len(given) > 1 else "takes"
            problems.append(f"{' and '.join(given)} {verb} effect only with --tracing; add it.")
        return None
    if args.data_capture is not None:
        problems.append(
            "--data-capture and --tracing do not go together: SageMaker refuses tracing on an "
            "endpoint that captures data. Keep --data-capture to train a head on your traffic "
            "(python -m capture export), or --tracing for Model Monitor and CloudWatch Logs."
        )
    large_payloads = (
        inputs.checked_prefix("--tracing-s3-uri", args.tracing_s3_uri, problems)
        if args.tracing_s3_uri is not None
        else None
    )
    kms_key = args.tracing_kms_key
    if kms_key is not None and args.tracing_s3_uri is None:
        problems.append(
            "--tracing-kms-key encrypts the payloads delivered to --tracing-s3-uri, and there "
            "is none; add --tracing-s3-uri s3://.../, or drop the key."
        )
    elif kms_key is not None and not kms_key.strip():
        problems.append("--tracing-kms-key is empty; give a KMS key id, ARN or alias/NAME.")
    return Tracing(args.tracing, large_payloads, kms_key)


def guard_of(args: argparse.Namespace, problems: list[str]) -> Guard:
    # SageMaker's limits: a canary of at most half the fleet (a component's batch: 5..50%
    # of its copies), a bake of at most an hour.
    if not 1 <= args.canary <= 50:
        problems.append(
            f"--canary {args.canary}% is outside 1..50%; SageMaker moves at most half "
            "the capacity first. Use e.g. --canary 10%."
        )
    elif args.inference_component and args.canary < 5:
        problems.append(
            f"--canary {args.canary}% is below 5%, the smallest batch SageMaker moves in an "
            "inference component's rolling update; use 5% to 50%."
        )
    if not 0 <= args.bake <= 3600:
        problems.append(f"--bake {args.bake} is outside 0..3600 seconds; use e.g. --bake 600.")
    if args.min_acceptance is not None and not args.min_acceptance >= 1.0:
        problems.append(
            f"--min-acceptance {args.min_acceptance:g} is below 1, where every mean acceptance "
            "length starts (1 + accepted drafts per step); use e.g. --min-acceptance 2.5."
        )
    return Guard(args.canary, args.bake, args.min_acceptance)


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


def speculation_of(
    args: argparse.Namespace, problems: list[str]
) -> tuple[int, tuple[tuple[int, int, int], ...] | None]:
    """K, and K by batch size when --speculative-config names a file (bench crossover's)."""
    if args.speculative_config is None:
        k = DEFAULT_NUM_SPECULATIVE_TOKENS if args.k is None else args.k
        if k < 1:
            problems.append(f"--k {k} is not a draft length; use 1 or more (7 suits P-EAGLE).")
        return k, None
    where = f"--speculative-config {args.speculative_config}"
    if args.k is not None:
        problems.append(f"--k and {where} both set K; give one (the file holds K by batch size).")
    try:
        config = json.loads(args.speculative_config.read_text())
    except (OSError, ValueError) as error:
        problems.append(
            f"{where}: cannot read it as JSON ({error}); give the file "
            "`python -m bench crossover` wrote (speculative-config.json)."
        )
        return DEFAULT_NUM_SPECULATIVE_TOKENS, None
    k = config.get("num_speculative_tokens") if isinstance(config, dict) else None
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        problems.append(
            f"{where}: no num_speculative_tokens of 1 or more; it is not a P-EAGLE "
            "config (bench crossover writes null when no K beat no speculation)."
        )
        return DEFAULT_NUM_SPECULATIVE_TOKENS, None
    schedule = config.get(BATCH_SCHEDULE_KEY)
    # Its shape is for the preflight of --target-dir/--head-dir (and the container's) to judge.
    return k, tuple(tuple(entry) for entry in schedule) if isinstance(schedule, list) else None


def sizes_and_directories(args: argparse.Namespace, problems: list[str]) -> None:
    """The counts, the model's size and the local directories the checks read."""
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
    inputs.checked_directory("--target-dir", args.target_dir, problems)
    inputs.checked_directory("--head-dir", args.head_dir, problems)


def deploy_plan(args: argparse.Namespace, connection_for: Callable[[], Connection | None]) -> Plan:
    """The Plan, or UsageError listing every problem with the options (all of them found
    before connecting, so a missing credential does not hide a bad option)."""
    problems: list[str] = []
    for problem in (
        names.name_problem("--name", args.name),
        inputs.role_problem(args.role),
        inputs.instance_type_problem(args.instance_type),
        args.inference_ami_version and inputs.ami_version_problem(args.inference_ami_version),
        args.inference_ami_version and ami_problem(args.inference_ami_version, args.image_cuda),
    ):
        if problem:
            problems.append(problem)
    target = inputs.checked_prefix("--target-uri", args.target_uri, problems)
    head = inputs.checked_prefix("--head-uri", args.head_uri, problems)
    environment = inputs.parse_environment(args.env, problems)
    k, batch_schedule = speculation_of(args, problems)
    given = (
        f"--k {k}"
        if args.speculative_config is None
        else f"--speculative-config {args.speculative_config}"
    )
    sizes_and_directories(args, problems)
    asynchronous = asynchronous_of(args, problems)
    scaling = autoscaling_of(args, problems)
    guard = guard_of(args, problems)
    traffic = routing.routing_of(args, environment, problems)
    observability = routing.observability_of(args, problems)
    data_capture = data_capture_of(args, problems)
    tracing = tracing_of(args, problems)
    if not problems and args.target_dir is not None and args.head_dir is not None:
        from serving.preflight.pair import speculation_problems

        found = speculation_problems(
            args.target_dir, args.head_dir, speculative_config(k, batch_schedule), environment
        )
        problems += [
            f"preflight of --target-dir and --head-dir with {given}: {problem}" for problem in found
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
        num_speculative_tokens=k,
        batch_schedule=batch_schedule,
        instance_type=args.instance_type,
        instance_count=args.instance_count,
        sizing=size_for(model_bytes(args, target, head, connection_for), args.instance_type),
        extra_environment=environment,
        # The AMI decides the host's NVIDIA driver, which must run the image's CUDA release.
        inference_ami_version=args.inference_ami_version or ami_for(args.image_cuda),
        component=component,
        autoscaling=scaling,
        guard=guard,
        asynchronous=asynchronous,
        routing=traffic,
        observability=observability,
        data_capture=data_capture,
        tracing=tracing,
    )
