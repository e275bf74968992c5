"""Waiting: status changes printed once each with the time, a heartbeat while nothing changes,
the reason and the logs on failure."""

from __future__ import annotations

import io

import pytest

from deploy.failures import DeployFailed
from deploy.waiting import wait_for_endpoint
from tests.support.deploy import FakeClock, Stubbed, endpoint


def test_changes_heartbeats_and_failure() -> None:
    stubbed = Stubbed(services=("sagemaker",))
    statuses = ["Creating"] * 12 + ["Failed"]
    for status in statuses[:-1]:
        stubbed.sagemaker.add_response("describe_endpoint", endpoint(status))
    stubbed.sagemaker.add_response(
        "describe_endpoint",
        endpoint(
            "Failed", FailureReason="The primary container did not pass the ping health check."
        ),
    )
    out = io.StringIO()

    with pytest.raises(DeployFailed) as failed:
        wait_for_endpoint(
            stubbed.connection.client("sagemaker"), "qwen-peagle", "eu-west-1", out, FakeClock()
        )

    assert out.getvalue().splitlines() == [
        "[0:00] endpoint qwen-peagle: Creating",
        "[5:00] endpoint qwen-peagle: still Creating",
        "[6:00] endpoint qwen-peagle: Failed",
    ]
    message = str(failed.value)
    assert "did not pass the ping health check" in message
    assert "CloudWatch log group /aws/sagemaker/Endpoints/qwen-peagle" in message
    assert "https://eu-west-1.console.aws.amazon.com/cloudwatch/home?region=eu-west-1" in message
    assert "https://eu-west-1.console.aws.amazon.com/sagemaker/home?region=eu-west-1" in message
