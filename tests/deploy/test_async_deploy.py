"""`deploy --async` (and `--scale-to-zero`): the endpoint config's AsyncInferenceConfig, the
container's body limit raised, the backlog policy down to zero and the alarm that wakes it."""

from __future__ import annotations

from botocore.stub import ANY

from tests.support.cli import fails, run_cli
from tests.support.deploy import (
    ACCOUNT_ARN,
    ENDPOINT,
    Stubbed,
    deploy_argv,
    deploy_cli,
    endpoint,
    parse_json_stream,
)
from tests.support.rollout import ARGS, NOT_FOUND

ASYNC = ("--async", "--async-output-uri", "s3://models/async/")
POLICY_ARN = "arn:aws:autoscaling:us-west-2:123456789012:scalingPolicy:1234:resource/wake"


def test_dry_run_of_an_async_endpoint_scaled_to_zero():
    code, out, err = run_cli(
        deploy_cli,
        deploy_argv(*ARGS, *ASYNC, "--scale-to-zero", "--max-capacity", "2",
                    "--sns-error-topic", "arn:aws:sns:us-west-2:123456789012:errors",
                    "--max-concurrent-invocations", "8", "--dry-run"),
    )  # fmt: skip
    assert code == 0, err
    calls = parse_json_stream(out)
    assert [call["operation"] for call in calls] == [
        "CreateModel",
        "CreateEndpointConfig",
        "CreateEndpoint",
        "RegisterScalableTarget",
        "PutScalingPolicy",
        "PutScalingPolicy",
        "PutMetricAlarm",
    ]
    environment = calls[0]["parameters"]["PrimaryContainer"]["Environment"]
    assert environment["SAGEMAKER_MAX_PAYLOAD_IN_MB"] == "1024"  # async payloads, up to 1 GB
    config = calls[1]["parameters"]["AsyncInferenceConfig"]
    assert config == {
        "OutputConfig": {
            "S3OutputPath": "s3://models/async/",
            "S3FailurePath": "s3://models/async/failures/",
            "NotificationConfig": {"ErrorTopic": "arn:aws:sns:us-west-2:123456789012:errors"},
        },
        "ClientConfig": {"MaxConcurrentInvocationsPerInstance": 8},
    }
    target = calls[3]["parameters"]
    assert (target["MinCapacity"], target["MaxCapacity"]) == (0, 2)
    tracking = calls[4]["parameters"]["TargetTrackingScalingPolicyConfiguration"]
    assert tracking["CustomizedMetricSpecification"]["MetricName"] == (
        "ApproximateBacklogSizePerInstance"
    )
    assert tracking["TargetValue"] == 5.0
    assert calls[5]["parameters"]["PolicyType"] == "StepScaling"
    alarm = calls[6]["parameters"]
    assert alarm["MetricName"] == "HasBacklogWithoutCapacity"
    assert alarm["Dimensions"] == [{"Name": "EndpointName", "Value": ENDPOINT}]


def test_async_options_are_checked_before_any_call():
    fails(deploy_cli, deploy_argv(*ARGS, "--scale-to-zero", "--dry-run"), "--scale-to-zero",
          "only with --async")  # fmt: skip
    fails(deploy_cli, deploy_argv(*ARGS, "--async", "--dry-run"), "--async-output-uri")
    fails(
        deploy_cli,
        deploy_argv(*ARGS, *ASYNC, "--inference-component", "--dry-run"),
        "--async and --inference-component",
    )
    scaled = ("--autoscale", "--min-capacity", "1", "--max-capacity", "2", "--target-value", "3")
    fails(deploy_cli, deploy_argv(*ARGS, *scaled, "--metric", "backlog", "--dry-run"), "--async")


def test_the_wake_up_alarm_calls_the_policy_the_service_returned(fixed_version):
    stubbed = Stubbed()
    sagemaker = stubbed.sagemaker
    sagemaker.add_client_error(
        "describe_endpoint", **NOT_FOUND, expected_params={"EndpointName": ENDPOINT}
    )
    sagemaker.add_response("create_model", {"ModelArn": f"{ACCOUNT_ARN}:model/x"}, None)
    sagemaker.add_response(
        "create_endpoint_config", {"EndpointConfigArn": f"{ACCOUNT_ARN}:ec/x"}, None
    )
    sagemaker.add_response(
        "create_endpoint", {"EndpointArn": f"{ACCOUNT_ARN}:endpoint/{ENDPOINT}"}, None
    )
    sagemaker.add_response("describe_endpoint", endpoint("InService"), {"EndpointName": ENDPOINT})
    autoscaling = stubbed.autoscaling
    autoscaling.add_response("register_scalable_target", {}, None)
    autoscaling.add_response("put_scaling_policy", {"PolicyARN": "tracking", "Alarms": []}, None)
    autoscaling.add_response("put_scaling_policy", {"PolicyARN": POLICY_ARN, "Alarms": []}, None)
    # The alarm's shape is the dry run's (above); here: it calls the policy just made.
    alarm_keys = ("AlarmName", "AlarmDescription", "MetricName", "Namespace", "Dimensions",
                  "Statistic", "Period", "EvaluationPeriods", "Threshold",
                  "ComparisonOperator", "TreatMissingData")  # fmt: skip
    stubbed.cloudwatch.add_response(
        "put_metric_alarm", {}, {**dict.fromkeys(alarm_keys, ANY), "AlarmActions": [POLICY_ARN]}
    )
    code, out, err = run_cli(
        deploy_cli, deploy_argv(*ARGS, *ASYNC, "--scale-to-zero"), connect_to=stubbed.connect
    )
    assert code == 0, err
    stubbed.assert_done()
    assert "wake up" in out
