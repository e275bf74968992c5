"""Waiting for an endpoint or an inference component, and saying what happened.

boto3's endpoint waiter is silent for up to an hour and has none for inference components,
so this polls Describe* itself: each status change printed with the time elapsed, a line
every few minutes while nothing changes, and on failure SageMaker's FailureReason with
where the container's logs are.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

from botocore.exceptions import ClientError

from deploy import names
from deploy.failures import DeployFailed

POLL_SECONDS = 30.0
HEARTBEAT_SECONDS = 300.0
# Start-up can take up to both timeouts (3600 s each) plus provisioning.
MAX_WAIT_SECONDS = 3 * 3600.0
ENDPOINT_FAILED = frozenset({"Failed", "OutOfService", "UpdateRollbackFailed"})
COMPONENT_FAILED = frozenset({"Failed"})
IN_SERVICE = frozenset({"InService"})


@dataclass
class Clock:
    """Time for the waits; tests pass a fake one so they never sleep."""

    poll_seconds: float = POLL_SECONDS
    now: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep


def elapsed(seconds: float) -> str:
    minutes, seconds = divmod(int(seconds), 60)
    return f"{minutes}:{seconds:02d}"


def where_logs_are(region: str, endpoint_name: str) -> str:
    return (
        f"The container's logs are in CloudWatch log group {names.log_group(endpoint_name)} "
        f"({names.logs_url(region, endpoint_name)}); the endpoint is at "
        f"{names.console_url(region, endpoint_name)}."
    )


def until_in_service(
    describe: Callable[[], dict[str, Any]],
    status_key: str,
    what: str,
    failed: frozenset[str],
    out: TextIO,
    clock: Clock,
) -> dict[str, Any]:
    """Describe until the status is InService or in `failed`; the last description."""
    done = IN_SERVICE
    start = clock.now()
    last_status, last_heartbeat = None, start
    while True:
        description = describe()
        status = description[status_key]
        now = clock.now()
        if status != last_status:
            out.write(f"[{elapsed(now - start)}] {what}: {status}\n")
            last_status, last_heartbeat = status, now
        elif now - last_heartbeat >= HEARTBEAT_SECONDS:
            out.write(f"[{elapsed(now - start)}] {what}: still {status}\n")
            last_heartbeat = now
        out.flush()
        if status in done or status in failed:
            return description
        if now - start > MAX_WAIT_SECONDS:
            raise DeployFailed(
                f"{what} is still {status} after {elapsed(now - start)}; check it with "
                "`python -m deploy status` and in the console."
            )
        clock.sleep(clock.poll_seconds)


def wait_for_endpoint(
    sagemaker: Any,
    endpoint_name: str,
    region: str,
    out: TextIO,
    clock: Clock,
    expected_config: str | None = None,
) -> dict[str, Any]:
    """Until InService; DeployFailed with the reason and the logs' place otherwise.

    After an update that fails, SageMaker rolls back and the endpoint is InService again on
    the old config: `expected_config` tells that apart from success.
    """
    describe = functools.partial(sagemaker.describe_endpoint, EndpointName=endpoint_name)
    what = f"endpoint {endpoint_name}"
    description = until_in_service(describe, "EndpointStatus", what, ENDPOINT_FAILED, out, clock)
    status = description["EndpointStatus"]
    rolled_back = expected_config and description.get("EndpointConfigName") != expected_config
    if status in ENDPOINT_FAILED or rolled_back:
        reason = description.get("FailureReason", "SageMaker gave no reason")
        outcome = (
            f"the update to {expected_config} failed and SageMaker rolled back to "
            f"{description.get('EndpointConfigName')}"
            if status not in ENDPOINT_FAILED
            else f"is {status}"
        )
        raise DeployFailed(
            f"endpoint {endpoint_name}: {outcome}. FailureReason: {reason} "
            + where_logs_are(region, endpoint_name)
        )
    return description


def wait_for_component(
    sagemaker: Any,
    component_name: str,
    endpoint_name: str,
    region: str,
    out: TextIO,
    clock: Clock,
    expected_model: str | None = None,
) -> dict[str, Any]:
    """Until InService; DeployFailed otherwise, and when a rolling update was rolled back
    (InService again, on the model it had: `expected_model` tells that apart)."""
    describe = functools.partial(
        sagemaker.describe_inference_component, InferenceComponentName=component_name
    )
    what = f"inference component {component_name}"
    status_key = "InferenceComponentStatus"
    description = until_in_service(describe, status_key, what, COMPONENT_FAILED, out, clock)
    serving = description.get("Specification", {}).get("ModelName")
    rolled_back = expected_model and serving != expected_model
    if description["InferenceComponentStatus"] in COMPONENT_FAILED or rolled_back:
        reason = description.get("FailureReason", "SageMaker gave no reason")
        outcome = (
            f"its update to {expected_model} failed and SageMaker rolled back to {serving}"
            if rolled_back and description["InferenceComponentStatus"] not in COMPONENT_FAILED
            else "failed"
        )
        raise DeployFailed(
            f"inference component {component_name}: {outcome}. FailureReason: {reason} "
            + where_logs_are(region, endpoint_name)
        )
    return description


def is_not_found(error: ClientError) -> bool:
    """SageMaker says "Could not find" in a ValidationException for a missing resource."""
    code = error.response.get("Error", {}).get("Code", "")
    message = error.response.get("Error", {}).get("Message", "")
    return code in ("ValidationException", "ResourceNotFound") and (
        "Could not find" in message or "does not exist" in message or code == "ResourceNotFound"
    )


def wait_until_gone(
    describe: Callable[[], dict[str, Any]], what: str, out: TextIO, clock: Clock
) -> None:
    """Describe until SageMaker no longer finds the resource (deletes are not instant)."""
    start = clock.now()
    while True:
        try:
            describe()
        except ClientError as error:
            if is_not_found(error):
                out.write(f"[{elapsed(clock.now() - start)}] {what}: deleted\n")
                return
            raise
        if clock.now() - start > MAX_WAIT_SECONDS:
            raise DeployFailed(f"{what} is still there after {elapsed(clock.now() - start)}.")
        clock.sleep(clock.poll_seconds)


# A training or transform job's end states.
JOB_DONE = frozenset({"Completed", "Failed", "Stopped"})


def poll_job(
    describe: Callable[[], dict[str, Any]],
    status_key: str,
    line_of: Callable[[dict[str, Any]], str],
    out: TextIO,
    clock: Clock,
) -> dict[str, Any]:
    """Describe the job until it ends, printing `line_of(description)` each time it changes,
    with the time since the start; the last description."""
    start = clock.now()
    last = None
    while True:
        description = describe()
        line = line_of(description)
        if line != last:
            out.write(f"[{elapsed(clock.now() - start)}] {line}\n")
            out.flush()
            last = line
        if description[status_key] in JOB_DONE:
            return description
        clock.sleep(clock.poll_seconds)


def completed(description: dict[str, Any], status_key: str, job: str, log_stream: str) -> None:
    """DeployFailed with SageMaker's reason and where the log is, unless the job completed.
    `job` names it ("training job NAME"); `log_stream` is its CloudWatch group and stream."""
    status = description[status_key]
    if status != "Completed":
        reason = description.get("FailureReason", "SageMaker gave no reason")
        raise DeployFailed(
            f"{job} is {status}. FailureReason: {reason} The log is in CloudWatch log group "
            f"{log_stream}."
        )
