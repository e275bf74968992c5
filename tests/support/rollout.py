"""What every deploy rollout test expects: the endpoint not found yet, the CreateModel
request with its exact parameters, and the command line's sizing and environment options."""

from __future__ import annotations

from botocore.stub import ANY

from deploy.plan import Plan
from deploy.s3 import parse_prefix
from deploy.sizing import size_for
from tests.support.cli import run_cli
from tests.support.deploy import (
    ACCOUNT_ARN,
    ENDPOINT,
    HEAD_URI,
    IMAGE,
    ROLE,
    SPEC,
    TARGET_URI,
    VERSIONED,
    WHEN,
    Stubbed,
    client_error,
    deploy_argv,
    deploy_cli,
    endpoint,
)

NOT_FOUND = client_error("ValidationException", 'Could not find endpoint "qwen-peagle".')


def data_source(uri: str) -> dict:
    return {"S3Uri": uri, "S3DataType": "S3Prefix", "CompressionType": "None"}


CREATE_MODEL = {
    "ModelName": VERSIONED,
    "PrimaryContainer": {
        "Image": IMAGE,
        "ModelDataSource": {"S3DataSource": data_source(TARGET_URI)},
        "AdditionalModelDataSources": [
            {"ChannelName": "eagle", "S3DataSource": data_source(HEAD_URI)}
        ],
        "Environment": {
            "SM_VLLM_SPECULATIVE_CONFIG": SPEC,
            "SERVING_ENDPOINT_NAME": ENDPOINT,
            "SERVING_VARIANT_NAME": "AllTraffic",
            "SERVING_HEAD_VERSION": VERSIONED.removeprefix(ENDPOINT + "-"),
            "SM_VLLM_MAX_MODEL_LEN": "32768",
        },
    },
    "ExecutionRoleArn": ROLE,
}
ARGS = (
    "--model-gb", "31",
    "--env", "SM_VLLM_MAX_MODEL_LEN=32768",
    # An AMI with driver 550 runs an image on the CUDA 12.9 base.
    "--image-cuda", "12.9",
    "--inference-ami-version", "al2-ami-sagemaker-inference-gpu-3-1",
)  # fmt: skip


# The guard on an existing endpoint: its CloudWatch history, the alarms, their deletion.
HEAD_DIMENSIONS = [
    {"Name": "EndpointName", "Value": ENDPOINT},
    {"Name": "HeadVersion", "Value": VERSIONED.removeprefix(ENDPOINT + "-")},
    {"Name": "VariantName", "Value": "AllTraffic"},
]
# What every new endpoint config asks of SageMaker's scraper of /metrics (deploy/routing.py).
DETAILED_METRICS = {"EnableDetailedObservability": True, "MetricPublishFrequencyInSeconds": 60}
ACCEPTANCE_ALARM = f"{VERSIONED}-acceptance"
ERRORS_ALARM = f"{VERSIONED}-errors"


def expect_history(cloudwatch, averages: list[float]) -> None:
    """GetMetricStatistics: the production variant's last hour of MeanAcceptanceLength."""
    cloudwatch.add_response(
        "get_metric_statistics",
        {
            "Label": "MeanAcceptanceLength",
            "Datapoints": [{"Average": value, "Timestamp": WHEN} for value in averages],
        },
        {
            "Namespace": "SageMaker/vLLM-PEagle",
            "MetricName": "MeanAcceptanceLength",
            "Dimensions": [
                {"Name": "EndpointName", "Value": ENDPOINT},
                {"Name": "VariantName", "Value": "AllTraffic"},
            ],
            "StartTime": ANY,
            "EndTime": ANY,
            "Period": 3600,
            "Statistics": ["Average"],
        },
    )


def expect_alarm(cloudwatch, name: str, metric: str, **settings) -> None:
    cloudwatch.add_response(
        "put_metric_alarm",
        {},
        {
            "AlarmName": name,
            "AlarmDescription": ANY,
            "Namespace": "SageMaker/vLLM-PEagle",
            "MetricName": metric,
            "Dimensions": HEAD_DIMENSIONS,
            "Period": 60,
            "TreatMissingData": "notBreaching",
            **settings,
        },
    )


def expect_errors_alarm(cloudwatch) -> None:
    expect_alarm(
        cloudwatch,
        ERRORS_ALARM,
        "Errors",
        Statistic="Sum",
        EvaluationPeriods=1,
        DatapointsToAlarm=1,
        Threshold=0.0,
        ComparisonOperator="GreaterThanThreshold",
    )


def expect_acceptance_alarm(cloudwatch, threshold: float) -> None:
    expect_alarm(
        cloudwatch,
        ACCEPTANCE_ALARM,
        "MeanAcceptanceLength",
        Statistic="Average",
        EvaluationPeriods=3,
        DatapointsToAlarm=2,
        Threshold=threshold,
        ComparisonOperator="LessThanThreshold",
    )


def expect_alarms_deleted(cloudwatch, names: list[str]) -> None:
    cloudwatch.add_response("delete_alarms", {}, {"AlarmNames": names})


def rollback_config(names: list[str], routing: dict, timeout: int = 3630) -> dict:
    return {
        "BlueGreenUpdatePolicy": {
            "TrafficRoutingConfiguration": routing,
            "TerminationWaitInSeconds": 0,
            # 920 s download + 910 s start-up + two 600 s bakes + 600 s
            "MaximumExecutionTimeoutInSeconds": timeout,
        },
        "AutoRollbackConfiguration": {"Alarms": [{"AlarmName": name} for name in names]},
    }


# The plan behind CREATE_MODEL: what deploy decides for ARGS.
DEPLOYED = Plan(
    endpoint_name=ENDPOINT,
    version=VERSIONED.removeprefix(ENDPOINT + "-"),
    image_uri=IMAGE,
    role_arn=ROLE,
    target=parse_prefix("--target-uri", TARGET_URI),
    head=parse_prefix("--head-uri", HEAD_URI),
    num_speculative_tokens=7,
    instance_type="ml.g7e.2xlarge",
    sizing=size_for(31 * 10**9, "ml.g7e.2xlarge"),
)


def deploys(options: list[str], expected_config: dict) -> None:
    """A new endpoint deployed with `options` (after ARGS), its CreateEndpointConfig exactly
    `expected_config`: every call stubbed, every parameter checked."""
    stubbed = Stubbed()
    sagemaker = stubbed.sagemaker
    sagemaker.add_client_error("describe_endpoint", **NOT_FOUND)
    sagemaker.add_response("create_model", {"ModelArn": f"{ACCOUNT_ARN}:model/x"}, CREATE_MODEL)
    sagemaker.add_response(
        "create_endpoint_config", {"EndpointConfigArn": f"{ACCOUNT_ARN}:ec/x"}, expected_config
    )
    sagemaker.add_response(
        "create_endpoint",
        {"EndpointArn": f"{ACCOUNT_ARN}:endpoint/{ENDPOINT}"},
        {"EndpointName": ENDPOINT, "EndpointConfigName": VERSIONED},
    )
    sagemaker.add_response("describe_endpoint", endpoint("InService"), {"EndpointName": ENDPOINT})
    code, _, err = run_cli(deploy_cli, deploy_argv(*ARGS, *options), connect_to=stubbed.connect)
    assert code == 0, err
    stubbed.assert_done()
