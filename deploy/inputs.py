"""Checks on the command line's values before any call, each problem a sentence naming the
option, what is wrong, and the fix. The allowed values come from botocore's SageMaker model,
so a new instance type works as soon as boto3 knows it."""

from __future__ import annotations

import argparse
import difflib
import functools
import re
from pathlib import Path

import botocore.session

from deploy import names
from deploy.plan import Autoscaling
from deploy.s3 import S3Prefix, parse_prefix
from serving.engine_args.environment import vllm_flags_from_env
from serving.variables import SPECULATIVE_CONFIG_VAR

ROLE_ARN = r"arn:aws[a-z\-]*:iam::\d{12}:role/[\w+=,.@\-/]+"
# What the container reads: vLLM's flags, and its own and SageMaker's settings.
ENV_PREFIXES = ("SM_VLLM_", "SERVING_", "SAGEMAKER_")


@functools.cache
def sagemaker_enum(shape_name: str) -> tuple[str, ...]:
    model = botocore.session.get_session().get_service_model("sagemaker")
    return tuple(model.shape_for(shape_name).enum)


def role_problem(role_arn: str) -> str | None:
    if re.fullmatch(ROLE_ARN, role_arn):
        return None
    return (
        f"--role {role_arn!r} is not an IAM role ARN; pass the ARN of a role SageMaker can "
        "assume, e.g. arn:aws:iam::123456789012:role/SageMakerExecutionRole (IAM console, "
        "Roles, the role's ARN)."
    )


def enum_problem(option: str, value: str, shape_name: str, what: str) -> str | None:
    allowed = sagemaker_enum(shape_name)
    if value in allowed:
        return None
    close = difflib.get_close_matches(value, allowed, n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(close)}?" if close else f"e.g. {allowed[-1]}."
    return (
        f"{option} {value!r} is not {what} SageMaker lists (boto3's model knows "
        f"{len(allowed)}); {hint}"
    )


def job_problems(args: argparse.Namespace, instance_shape: str, what: str) -> list[str]:
    """A job's --name, --role and --instance-type (one of botocore's `instance_shape`)."""
    found = (
        names.name_problem("--name", args.name),
        role_problem(args.role),
        enum_problem("--instance-type", args.instance_type, instance_shape, what),
    )
    return [problem for problem in found if problem]


def instance_type_problem(instance_type: str) -> str | None:
    return enum_problem(
        "--instance-type", instance_type, "ProductionVariantInstanceType", "an instance type"
    )


def ami_version_problem(version: str) -> str | None:
    return enum_problem(
        "--inference-ami-version",
        version,
        "ProductionVariantInferenceAmiVersion",
        "an inference AMI version",
    )


def parse_environment(pairs: list[str], problems: list[str]) -> dict[str, str]:
    """NAME=value pairs from --env; a sentence for each one the container would not read or
    would refuse."""
    environment: dict[str, str] = {}
    for pair in pairs:
        name, equals, value = pair.partition("=")
        if not equals or not name:
            problems.append(
                f"--env {pair!r} is not NAME=value; write it as e.g. "
                "--env SM_VLLM_MAX_MODEL_LEN=32768."
            )
        elif name == SPECULATIVE_CONFIG_VAR:
            problems.append(
                f"--env {SPECULATIVE_CONFIG_VAR} is built by this command from --k and the eagle "
                "channel; remove it and set --k."
            )
        elif not name.startswith(ENV_PREFIXES):
            problems.append(
                f"--env {name} is not read by the container, which takes only "
                f"{', '.join(prefix + '*' for prefix in ENV_PREFIXES)} variables; rename it "
                "(vLLM flag --foo-bar is SM_VLLM_FOO_BAR)."
            )
        else:
            environment[name] = value
    # The container's own rules for SM_VLLM_* values (booleans, JSON, reserved flags), so a
    # value it would refuse at start-up is refused here instead.
    vllm_flags_from_env(environment, problems)
    return environment


def autoscaling_problems(scaling: Autoscaling, component: bool) -> list[str]:
    # Only inference components scale to zero; a variant keeps one instance at least.
    floor = 0 if component else 1
    problems = []
    if scaling.min_capacity < floor:
        problems.append(
            f"--min-capacity {scaling.min_capacity} is below {floor}: "
            + (
                "copies cannot be negative; use 0 or more."
                if component
                else "an endpoint variant keeps at least one instance (only inference "
                "components scale to zero); use 1 or more, or add --inference-component."
            )
        )
    if scaling.max_capacity < max(1, scaling.min_capacity):
        problems.append(
            f"--max-capacity {scaling.max_capacity} is below --min-capacity "
            f"{scaling.min_capacity} (or below 1); raise it."
        )
    if not scaling.target_value > 0:
        problems.append(
            f"--target-value {scaling.target_value} is not above 0; set the load per "
            f"{'copy' if component else 'instance'} to hold, e.g. 4 concurrent requests."
        )
    return problems


def checked_prefix(option: str, uri: str, problems: list[str]) -> S3Prefix | None:
    try:
        return parse_prefix(option, uri)
    except ValueError as error:
        problems.append(str(error))
        return None


def checked_directory(option: str, directory: Path | None, problems: list[str]) -> None:
    if directory is not None and not directory.is_dir():
        problems.append(f"{option} {directory} is not a directory; give the local model folder.")
