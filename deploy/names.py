"""SageMaker resource names: checking the user's, deriving ours, and where each one's logs are.

One deployment of endpoint NAME creates a model and an endpoint config both called
NAME-<UTC timestamp>, so a re-run never collides with the resources the endpoint still uses,
and `delete` finds every version by that form. An inference component keeps one stable
name, NAME-ic, so a re-run updates it in place.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

import botocore.session

from deploy.failures import UsageError

MAX_NAME = 63
VERSION_FORMAT = "%Y%m%d%H%M%S"
VERSION_DIGITS = 14
VARIANT_NAME = "AllTraffic"
COMPONENT_SUFFIX = "-ic"


def name_pattern(shape_name: str = "EndpointName") -> str:
    """SageMaker's own pattern for a kind of name, from botocore's model."""
    model = botocore.session.get_session().get_service_model("sagemaker")
    return model.shape_for(shape_name).metadata["pattern"]


def name_problem(option: str, name: str) -> str | None:
    """A sentence when `name` cannot name an endpoint (or a model: the rules are the same)."""
    if len(name) > MAX_NAME:
        return (
            f"{option} {name!r} is {len(name)} characters; SageMaker names are at most "
            f"{MAX_NAME}. Shorten it."
        )
    if not re.fullmatch(name_pattern(), name):
        return (
            f"{option} {name!r} has characters SageMaker does not allow in a name; use letters, "
            "digits and single hyphens, starting and ending with a letter or digit "
            "(e.g. qwen3-coder-peagle)."
        )
    return None


def check_name(name: str) -> None:
    """Stops with a usage error when NAME cannot name an endpoint."""
    problem = name_problem("--name", name)
    if problem:
        raise UsageError(problem)


def version_now(now: datetime | None = None) -> str:
    """The UTC timestamp that makes this run's names unique: 14 digits, e.g. 20250601120000."""
    return (now or datetime.now(UTC)).strftime(VERSION_FORMAT)


def with_suffix(endpoint_name: str, suffix: str) -> str:
    """endpoint_name + suffix within 63 characters, cut so no hyphen ends the kept part."""
    kept = endpoint_name[: MAX_NAME - len(suffix)].rstrip("-")
    return kept + suffix


def versioned_name(endpoint_name: str, version: str) -> str:
    """The model and endpoint config name of one deployment."""
    return with_suffix(endpoint_name, f"-{version}")


def is_versioned_name(endpoint_name: str, name: str) -> bool:
    """Whether `name` is one of this endpoint's model or endpoint config names."""
    stem = with_suffix(endpoint_name, "-" + "0" * VERSION_DIGITS)[: -VERSION_DIGITS - 1]
    return re.fullmatch(re.escape(stem) + rf"-\d{{{VERSION_DIGITS}}}", name) is not None


def component_name(endpoint_name: str) -> str:
    return with_suffix(endpoint_name, COMPONENT_SUFFIX)


def log_group(endpoint_name: str) -> str:
    return f"/aws/sagemaker/Endpoints/{endpoint_name}"


def console_url(region: str, endpoint_name: str) -> str:
    return (
        f"https://{region}.console.aws.amazon.com/sagemaker/home?region={region}"
        f"#/endpoints/{endpoint_name}"
    )


def logs_url(region: str, endpoint_name: str) -> str:
    group = log_group(endpoint_name).replace("/", "$252F")
    return (
        f"https://{region}.console.aws.amazon.com/cloudwatch/home?region={region}"
        f"#logsV2:log-groups/log-group/{group}"
    )
