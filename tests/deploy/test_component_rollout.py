"""The deploy command end to end against botocore Stubbers, on the inference-component
path: every request with its exact parameters, in order, for a new component with
autoscaling and for an update that fails."""

from __future__ import annotations

from tests.support.cli import run_cli
from tests.support.deploy import (
    ACCOUNT_ARN,
    ENDPOINT,
    ROLE,
    VERSIONED,
    Stubbed,
    component,
    deploy_argv,
    deploy_cli,
    endpoint,
)
from tests.support.rollout import (
    ARGS,
    CREATE_MODEL,
    DETAILED_METRICS,
    ERRORS_ALARM,
    NOT_FOUND,
    expect_alarms_deleted,
    expect_errors_alarm,
    expect_history,
)


def specification(memory_mb: int) -> dict:
    """The component's specification as deploy sends it for the 31 GB pair."""
    return {
        "ModelName": VERSIONED,
        "StartupParameters": {
            "ModelDataDownloadTimeoutInSeconds": 920,
            "ContainerStartupHealthCheckTimeoutInSeconds": 910,
        },
        "ComputeResourceRequirements": {
            "NumberOfAcceleratorDevicesRequired": 1,
            "MinMemoryRequiredInMb": memory_mb,
        },
    }


def test_inference_component_with_autoscaling(fixed_version) -> None:
    stubbed = Stubbed()
    sagemaker, autoscaling = stubbed.sagemaker, stubbed.autoscaling
    sagemaker.add_client_error("describe_endpoint", **NOT_FOUND)
    sagemaker.add_response("create_model", {"ModelArn": f"{ACCOUNT_ARN}:model/x"}, CREATE_MODEL)
    sagemaker.add_response(
        "create_endpoint_config",
        {"EndpointConfigArn": f"{ACCOUNT_ARN}:ec/x"},
        {
            "EndpointConfigName": VERSIONED,
            "ProductionVariants": [
                {
                    "VariantName": "AllTraffic",
                    "InstanceType": "ml.g7e.2xlarge",
                    "InitialInstanceCount": 1,
                    "RoutingConfig": {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"},
                    "ManagedInstanceScaling": {
                        "Status": "ENABLED",
                        "MinInstanceCount": 1,
                        "MaxInstanceCount": 4,
                    },
                    "InferenceAmiVersion": "al2-ami-sagemaker-inference-gpu-3-1",
                }
            ],
            "ExecutionRoleArn": ROLE,
            "MetricsConfig": DETAILED_METRICS,
        },
    )
    sagemaker.add_response(
        "create_endpoint",
        {"EndpointArn": f"{ACCOUNT_ARN}:endpoint/{ENDPOINT}"},
        {"EndpointName": ENDPOINT, "EndpointConfigName": VERSIONED},
    )
    sagemaker.add_response("describe_endpoint", endpoint("InService"))
    sagemaker.add_response(
        "create_inference_component",
        {"InferenceComponentArn": f"{ACCOUNT_ARN}:inference-component/qwen-peagle-ic"},
        {
            "InferenceComponentName": "qwen-peagle-ic",
            "EndpointName": ENDPOINT,
            "VariantName": "AllTraffic",
            "Specification": specification(memory_mb=32768),
            "RuntimeConfig": {"CopyCount": 2},
        },
    )
    for status in ("Creating", "InService"):
        sagemaker.add_response(
            "describe_inference_component",
            component(status),
            {"InferenceComponentName": "qwen-peagle-ic"},
        )
    target = {
        "ServiceNamespace": "sagemaker",
        "ResourceId": "inference-component/qwen-peagle-ic",
        "ScalableDimension": "sagemaker:inference-component:DesiredCopyCount",
    }
    autoscaling.add_response(
        "register_scalable_target", {}, {**target, "MinCapacity": 0, "MaxCapacity": 4}
    )
    autoscaling.add_response(
        "put_scaling_policy",
        {"PolicyARN": "arn:aws:autoscaling:us-west-2:123456789012:scalingPolicy:x"},
        {
            **target,
            "PolicyName": "qwen-peagle-ic-concurrency",
            "PolicyType": "TargetTrackingScaling",
            "TargetTrackingScalingPolicyConfiguration": {
                "TargetValue": 8.0,
                "PredefinedMetricSpecification": {
                    "PredefinedMetricType": (
                        "SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution"
                    )
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
            "--inference-component",
            "--memory-mb",
            "32768",
            "--copies",
            "2",
            "--autoscale",
            "--min-capacity",
            "0",
            "--max-capacity",
            "4",
            "--target-value",
            "8",
        ),  # fmt: skip
        connect_to=stubbed.connect,
    )

    assert code == 0, err
    stubbed.assert_done()
    assert "inference component qwen-peagle-ic: Creating" in out
    assert "inference component qwen-peagle-ic: InService" in out
    assert "/endpoints/qwen-peagle/inference-components/qwen-peagle-ic/openai/v1," in out


def test_existing_component_is_updated(fixed_version) -> None:
    stubbed = Stubbed()
    sagemaker = stubbed.sagemaker
    sagemaker.add_response("describe_endpoint", endpoint("InService", "qwen-peagle-20250101000000"))
    sagemaker.add_response(
        "describe_inference_component",
        component("InService"),
        {"InferenceComponentName": "qwen-peagle-ic"},
    )
    expect_history(stubbed.cloudwatch, [])
    sagemaker.add_response("create_model", {"ModelArn": f"{ACCOUNT_ARN}:model/x"}, CREATE_MODEL)
    expect_errors_alarm(stubbed.cloudwatch)
    sagemaker.add_response(
        "update_inference_component",
        {"InferenceComponentArn": f"{ACCOUNT_ARN}:inference-component/qwen-peagle-ic"},
        {
            "InferenceComponentName": "qwen-peagle-ic",
            "Specification": specification(memory_mb=16384),
            "RuntimeConfig": {"CopyCount": 1},
            # A tenth of the copies first, watched for 600 s; a rollback moves all back.
            "DeploymentConfig": {
                "RollingUpdatePolicy": {
                    "MaximumBatchSize": {"Type": "CAPACITY_PERCENT", "Value": 10},
                    "WaitIntervalInSeconds": 600,
                    "MaximumExecutionTimeoutInSeconds": 3630,
                    "RollbackMaximumBatchSize": {"Type": "CAPACITY_PERCENT", "Value": 100},
                },
                "AutoRollbackConfiguration": {"Alarms": [{"AlarmName": ERRORS_ALARM}]},
            },
        },
    )
    sagemaker.add_response("describe_inference_component", component("Updating"))
    sagemaker.add_response(
        "describe_inference_component",
        component("Failed", FailureReason="CUDA out of memory while loading the drafter."),
    )

    stubbed.cloudwatch.add_response("describe_alarms", {"MetricAlarms": []})
    expect_alarms_deleted(stubbed.cloudwatch, [ERRORS_ALARM])

    code, out, err = run_cli(
        deploy_cli,
        deploy_argv(*ARGS, "--inference-component"),
        connect_to=stubbed.connect,
    )

    assert code == 1
    stubbed.assert_done()
    assert "inference component qwen-peagle-ic: Updating" in out
    assert "CUDA out of memory while loading the drafter." in err
    assert "CloudWatch log group /aws/sagemaker/Endpoints/qwen-peagle" in err
