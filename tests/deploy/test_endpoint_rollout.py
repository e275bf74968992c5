"""The deploy command end to end against botocore Stubbers, on the endpoint path: every
request with its exact parameters, in order, for a new endpoint and an update, and the
failures it reports."""

from __future__ import annotations

import pytest

from tests.support.cli import run_cli
from tests.support.deploy import (
    ACCOUNT_ARN,
    ENDPOINT,
    REGION,
    VERSIONED,
    WHEN,
    FakeClock,
    Stubbed,
    deploy_argv,
    deploy_cli,
    endpoint,
)
from tests.support.rollout import (
    ACCEPTANCE_ALARM,
    ARGS,
    CREATE_MODEL,
    DETAILED_METRICS,
    ERRORS_ALARM,
    NOT_FOUND,
    expect_acceptance_alarm,
    expect_alarms_deleted,
    expect_errors_alarm,
    expect_history,
    rollback_config,
)

VARIANT_RESOURCE = "endpoint/qwen-peagle/variant/AllTraffic"
PLAIN_CONFIG = {
    "EndpointConfigName": VERSIONED,
    "ProductionVariants": [
        {
            "VariantName": "AllTraffic",
            "InstanceType": "ml.g7e.2xlarge",
            "InitialInstanceCount": 1,
            "RoutingConfig": {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"},
            "ModelName": VERSIONED,
            # 31 GB: 600 + 31e9 / 100 MB/s and 300 + 31e9 / 50 MB/s
            "ContainerStartupHealthCheckTimeoutInSeconds": 910,
            "ModelDataDownloadTimeoutInSeconds": 920,
            "InferenceAmiVersion": "al2-ami-sagemaker-inference-gpu-3-1",
        }
    ],
    "MetricsConfig": DETAILED_METRICS,
}


def expect_plain_creation(stubbed: Stubbed) -> None:
    sagemaker = stubbed.sagemaker
    sagemaker.add_response("create_model", {"ModelArn": f"{ACCOUNT_ARN}:model/x"}, CREATE_MODEL)
    sagemaker.add_response(
        "create_endpoint_config", {"EndpointConfigArn": f"{ACCOUNT_ARN}:ec/x"}, PLAIN_CONFIG
    )


def test_new_endpoint(fixed_version) -> None:
    stubbed = Stubbed()
    sagemaker = stubbed.sagemaker
    sagemaker.add_client_error(
        "describe_endpoint", **NOT_FOUND, expected_params={"EndpointName": ENDPOINT}
    )
    expect_plain_creation(stubbed)
    sagemaker.add_response(
        "create_endpoint",
        {"EndpointArn": f"{ACCOUNT_ARN}:endpoint/{ENDPOINT}"},
        {"EndpointName": ENDPOINT, "EndpointConfigName": VERSIONED},
    )
    for status in ("Creating", "Creating", "InService"):
        sagemaker.add_response("describe_endpoint", endpoint(status), {"EndpointName": ENDPOINT})

    code, out, err = run_cli(deploy_cli, deploy_argv(*ARGS), connect_to=stubbed.connect)

    assert code == 0, err
    stubbed.assert_done()
    assert "[0:00] endpoint qwen-peagle: Creating" in out
    assert "[1:00] endpoint qwen-peagle: InService" in out
    assert out.count("Creating\n") == 1  # a change is printed once, not on every poll
    # OpenAI clients are told where the endpoint's OpenAI path is, and how to get a token.
    base = f"https://runtime.sagemaker.{REGION}.amazonaws.com/endpoints/{ENDPOINT}/openai/v1"
    assert f"base_url={base}," in out
    assert f"generate_token(region='{REGION}')" in out


def test_existing_endpoint_is_rolled_with_update(fixed_version) -> None:
    stubbed = Stubbed()
    sagemaker, autoscaling = stubbed.sagemaker, stubbed.autoscaling
    sagemaker.add_response(
        "describe_endpoint",
        endpoint("InService", "qwen-peagle-20250101000000"),
        {"EndpointName": ENDPOINT},
    )
    autoscaling.add_response(
        "describe_scalable_targets",
        {
            "ScalableTargets": [
                {
                    "ServiceNamespace": "sagemaker",
                    "ResourceId": VARIANT_RESOURCE,
                    "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
                    "MinCapacity": 1,
                    "MaxCapacity": 2,
                    "RoleARN": "arn:aws:iam::123456789012:role/aws-service-role/x",
                    "CreationTime": WHEN,
                }
            ]
        },
        {"ServiceNamespace": "sagemaker", "ResourceIds": [VARIANT_RESOURCE]},
    )
    expect_plain_creation(stubbed)
    # UpdateEndpoint refuses a variant under autoscaling: deregistered first, then put back.
    target = {
        "ServiceNamespace": "sagemaker",
        "ResourceId": VARIANT_RESOURCE,
        "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
    }
    autoscaling.add_response("deregister_scalable_target", {}, target)
    # No acceptance in the last hour: only the errors alarm guards; one instance is too few
    # for a canary, so the whole new fleet bakes.
    expect_history(stubbed.cloudwatch, [])
    expect_errors_alarm(stubbed.cloudwatch)
    sagemaker.add_response(
        "update_endpoint",
        {"EndpointArn": f"{ACCOUNT_ARN}:endpoint/{ENDPOINT}"},
        {
            "EndpointName": ENDPOINT,
            "EndpointConfigName": VERSIONED,
            "DeploymentConfig": rollback_config(
                [ERRORS_ALARM], {"Type": "ALL_AT_ONCE", "WaitIntervalInSeconds": 600}
            ),
        },
    )
    expect_alarms_deleted(stubbed.cloudwatch, [ERRORS_ALARM])
    sagemaker.add_response(
        "describe_endpoint",
        endpoint("Updating", "qwen-peagle-20250101000000"),
        {"EndpointName": ENDPOINT},
    )
    sagemaker.add_response("describe_endpoint", endpoint("InService"), {"EndpointName": ENDPOINT})
    autoscaling.add_response(
        "register_scalable_target", {}, {**target, "MinCapacity": 1, "MaxCapacity": 3}
    )
    autoscaling.add_response(
        "put_scaling_policy",
        {"PolicyARN": "arn:aws:autoscaling:us-west-2:123456789012:scalingPolicy:x"},
        {
            **target,
            "PolicyName": "qwen-peagle-invocations",
            "PolicyType": "TargetTrackingScaling",
            "TargetTrackingScalingPolicyConfiguration": {
                "TargetValue": 120.0,
                "PredefinedMetricSpecification": {
                    "PredefinedMetricType": "SageMakerVariantInvocationsPerInstance"
                },
                "ScaleOutCooldown": 60,
                "ScaleInCooldown": 300,
            },
        },
    )

    code, out, err = run_cli(
        deploy_cli,
        deploy_argv(
            *ARGS,
            "--autoscale",
            "--min-capacity",
            "1",
            "--max-capacity",
            "3",
            "--target-value",
            "120",
            "--metric",
            "invocations",
        ),  # fmt: skip
        connect_to=stubbed.connect,
    )

    assert code == 0, err
    stubbed.assert_done()
    assert "exists: rolling it onto qwen-peagle-20250601120000" in out
    assert "endpoint qwen-peagle: Updating" in out
    assert "no acceptance recorded for the current head in the last hour" in out


def test_failed_update_that_rolled_back_is_a_failure(fixed_version) -> None:
    stubbed = Stubbed()
    sagemaker, cloudwatch = stubbed.sagemaker, stubbed.cloudwatch
    old = "qwen-peagle-20250101000000"
    sagemaker.add_response(
        "describe_endpoint", endpoint("InService", old), {"EndpointName": ENDPOINT}
    )
    stubbed.autoscaling.add_response("describe_scalable_targets", {"ScalableTargets": []})
    # The current head averaged 3.0 over the last hour: the new one must hold 2.7.
    expect_history(cloudwatch, [2.9, 3.1])
    expect_plain_creation(stubbed)
    expect_acceptance_alarm(cloudwatch, 2.7)
    expect_errors_alarm(cloudwatch)
    sagemaker.add_response("update_endpoint", {"EndpointArn": f"{ACCOUNT_ARN}:endpoint/x"})
    sagemaker.add_response("describe_endpoint", endpoint("Updating", old))
    sagemaker.add_response("describe_endpoint", endpoint("RollingBack", old))
    reason = "Alarm qwen-peagle-20250601120000-acceptance was triggered."
    sagemaker.add_response("describe_endpoint", endpoint("InService", old, FailureReason=reason))
    saw = (
        "Threshold Crossed: 2 out of the last 3 datapoints [1.21 (01/06/25 12:14:00), 1.18 "
        "(01/06/25 12:13:00)] were less than the threshold (2.7)."
    )
    cloudwatch.add_response(
        "describe_alarms",
        {
            "MetricAlarms": [
                {"AlarmName": ACCEPTANCE_ALARM, "StateValue": "ALARM", "StateReason": saw},
                {"AlarmName": ERRORS_ALARM, "StateValue": "OK", "StateReason": "fine"},
            ]
        },
        {"AlarmNames": [ACCEPTANCE_ALARM, ERRORS_ALARM]},
    )
    expect_alarms_deleted(cloudwatch, [ACCEPTANCE_ALARM, ERRORS_ALARM])

    code, out, err = run_cli(deploy_cli, deploy_argv(*ARGS), connect_to=stubbed.connect)

    assert code == 1
    stubbed.assert_done()
    assert "rolled back" in err and reason in err
    assert f"alarm {ACCEPTANCE_ALARM} fired: {saw}" in err
    assert ERRORS_ALARM not in err.split("FailureReason")[1]  # only the alarm that fired
    assert "/aws/sagemaker/Endpoints/qwen-peagle" in err
    assert "mean acceptance length over the last hour is 3.00" in out


@pytest.mark.parametrize("status", ["Failed", "OutOfService"])
def test_new_endpoint_failure_names_reason_and_logs(fixed_version, status) -> None:
    stubbed = Stubbed()
    sagemaker = stubbed.sagemaker
    sagemaker.add_client_error("describe_endpoint", **NOT_FOUND)
    expect_plain_creation(stubbed)
    sagemaker.add_response("create_endpoint", {"EndpointArn": f"{ACCOUNT_ARN}:endpoint/x"})
    sagemaker.add_response("describe_endpoint", endpoint("Creating"))
    sagemaker.add_response(
        "describe_endpoint", endpoint(status, FailureReason="Request to service failed.")
    )
    clock = FakeClock()

    code, out, err = run_cli(
        deploy_cli, deploy_argv(*ARGS), connect_to=stubbed.connect, clock=clock
    )

    assert code == 1
    stubbed.assert_done()
    assert f"endpoint qwen-peagle: {status}" in out
    assert "FailureReason: Request to service failed." in err
    assert "CloudWatch log group /aws/sagemaker/Endpoints/qwen-peagle" in err
    assert f"https://{REGION}.console.aws.amazon.com/sagemaker/home?region={REGION}" in err
    assert "Traceback" not in err


def test_refused_call_is_a_sentence_not_a_traceback(fixed_version) -> None:
    stubbed = Stubbed()
    stubbed.sagemaker.add_client_error("describe_endpoint", **NOT_FOUND)
    stubbed.sagemaker.add_client_error(
        "create_model",
        service_error_code="AccessDeniedException",
        service_message="User is not authorized to perform: iam:PassRole",
    )

    code, _, err = run_cli(deploy_cli, deploy_argv(*ARGS), connect_to=stubbed.connect)

    assert code == 1
    assert "CreateModel was refused: AccessDeniedException: User is not authorized" in err
    assert "Traceback" not in err
