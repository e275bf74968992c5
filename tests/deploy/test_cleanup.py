"""The delete command against Stubbers: everything deploy made, found and deleted in order;
what is already gone is skipped."""

from __future__ import annotations

from tests.support.cli import run_cli
from tests.support.deploy import (
    ACCOUNT_ARN,
    WHEN,
    Stubbed,
    client_error,
    component,
    deploy_cli,
    endpoint,
)

ENDPOINT = "qwen-peagle"
CURRENT = "qwen-peagle-20250601120000"
OLD = "qwen-peagle-20250101000000"
IC_RESOURCE = "inference-component/qwen-peagle-ic"
VARIANT_RESOURCE = "endpoint/qwen-peagle/variant/AllTraffic"
GONE = client_error("ValidationException", "Could not find model.")


def test_delete_everything(tmp_path) -> None:
    stubbed = Stubbed()
    sagemaker, autoscaling = stubbed.sagemaker, stubbed.autoscaling
    sagemaker.add_response(
        "describe_endpoint",
        endpoint(
            "InService",
            CURRENT,
            ProductionVariants=[{"VariantName": "AllTraffic", "CurrentInstanceCount": 1}],
        ),
        {"EndpointName": ENDPOINT},
    )
    sagemaker.add_response(
        "describe_endpoint_config",
        {
            "EndpointConfigName": CURRENT,
            "EndpointConfigArn": f"{ACCOUNT_ARN}:endpoint-config/x",
            "ProductionVariants": [{"VariantName": "AllTraffic", "InstanceType": "ml.g7e.2xlarge"}],
            "CreationTime": WHEN,
        },
        {"EndpointConfigName": CURRENT},
    )
    sagemaker.add_response(
        "list_inference_components",
        {
            "InferenceComponents": [
                {
                    "InferenceComponentName": "qwen-peagle-ic",
                    "InferenceComponentArn": f"{ACCOUNT_ARN}:inference-component/qwen-peagle-ic",
                    "EndpointName": ENDPOINT,
                    "EndpointArn": f"{ACCOUNT_ARN}:endpoint/{ENDPOINT}",
                    "VariantName": "AllTraffic",
                    "CreationTime": WHEN,
                    "LastModifiedTime": WHEN,
                }
            ]
        },
        {"EndpointNameEquals": ENDPOINT},
    )
    sagemaker.add_response(
        "describe_inference_component",
        component("InService", Specification={"ModelName": CURRENT}),
        {"InferenceComponentName": "qwen-peagle-ic"},
    )
    target = {
        "ServiceNamespace": "sagemaker",
        "ResourceId": IC_RESOURCE,
        "ScalableDimension": "sagemaker:inference-component:DesiredCopyCount",
    }
    autoscaling.add_response(
        "describe_scalable_targets",
        {
            "ScalableTargets": [
                {
                    **target,
                    "MinCapacity": 0,
                    "MaxCapacity": 4,
                    "RoleARN": "arn:aws:iam::123456789012:role/x",
                    "CreationTime": WHEN,
                }
            ]
        },
        {"ServiceNamespace": "sagemaker", "ResourceIds": [VARIANT_RESOURCE, IC_RESOURCE]},
    )
    autoscaling.add_response(
        "describe_scaling_policies",
        {
            "ScalingPolicies": [
                {
                    **target,
                    "PolicyARN": "arn:aws:autoscaling:x",
                    "PolicyName": "qwen-peagle-ic-concurrency",
                    "PolicyType": "TargetTrackingScaling",
                    "CreationTime": WHEN,
                }
            ]
        },
        target,
    )
    sagemaker.add_response(
        "list_endpoint_configs",
        {
            "EndpointConfigs": [
                {
                    "EndpointConfigName": name,
                    "EndpointConfigArn": f"{ACCOUNT_ARN}:endpoint-config/x",
                    "CreationTime": WHEN,
                }
                for name in (CURRENT, OLD, "qwen-peagle-other")  # the last is someone else's
            ]
        },
        {"NameContains": ENDPOINT},
    )
    sagemaker.add_response(
        "list_models",
        {
            "Models": [
                {"ModelName": name, "ModelArn": f"{ACCOUNT_ARN}:model/x", "CreationTime": WHEN}
                for name in (CURRENT, OLD, "qwen-peagle-2-20250101000000")
            ]
        },
        {"NameContains": ENDPOINT},
    )
    # A guarded update stopped mid-wait leaves its alarms; someone else's alarm stays.
    left = f"{CURRENT}-acceptance"
    stubbed.cloudwatch.add_response(
        "describe_alarms",
        {"MetricAlarms": [{"AlarmName": left}, {"AlarmName": "qwen-peagle-p99-latency"}]},
        {"AlarmNamePrefix": "qwen-peagle-"},
    )
    stubbed.cloudwatch.add_response("delete_alarms", {}, {"AlarmNames": [left]})
    autoscaling.add_response(
        "delete_scaling_policy", {}, {**target, "PolicyName": "qwen-peagle-ic-concurrency"}
    )
    autoscaling.add_response("deregister_scalable_target", {}, target)
    sagemaker.add_response(
        "delete_inference_component", {}, {"InferenceComponentName": "qwen-peagle-ic"}
    )
    sagemaker.add_response("describe_inference_component", component("Deleting"))
    sagemaker.add_client_error(
        "describe_inference_component",
        service_error_code="ValidationException",
        service_message="Could not find inference component qwen-peagle-ic.",
    )
    sagemaker.add_response("delete_endpoint", {}, {"EndpointName": ENDPOINT})
    sagemaker.add_response("delete_endpoint_config", {}, {"EndpointConfigName": OLD})
    sagemaker.add_response("delete_endpoint_config", {}, {"EndpointConfigName": CURRENT})
    sagemaker.add_client_error("delete_model", **GONE, expected_params={"ModelName": OLD})
    sagemaker.add_response("delete_model", {}, {"ModelName": CURRENT})

    code, out, err = run_cli(deploy_cli, ["delete", "--name", ENDPOINT], connect_to=stubbed.connect)

    assert code == 0, err
    stubbed.assert_done()
    assert out.splitlines() == [
        f"DeleteAlarms {left}",
        "DeleteScalingPolicy qwen-peagle-ic-concurrency on inference-component/qwen-peagle-ic",
        "DeregisterScalableTarget inference-component/qwen-peagle-ic",
        "DeleteInferenceComponent qwen-peagle-ic",
        "[0:30] inference component qwen-peagle-ic: deleted",
        "DeleteEndpoint qwen-peagle",
        f"DeleteEndpointConfig {OLD}",
        f"DeleteEndpointConfig {CURRENT}",
        f"DeleteModel {OLD}: already gone",
        f"DeleteModel {CURRENT}",
    ]


def test_delete_when_the_endpoint_is_already_gone() -> None:
    stubbed = Stubbed()
    sagemaker = stubbed.sagemaker
    sagemaker.add_client_error(
        "describe_endpoint", "ValidationException", 'Could not find endpoint "qwen-peagle".'
    )
    sagemaker.add_response("list_inference_components", {"InferenceComponents": []})
    sagemaker.add_response(
        "list_endpoint_configs",
        {
            "EndpointConfigs": [
                {
                    "EndpointConfigName": OLD,
                    "EndpointConfigArn": f"{ACCOUNT_ARN}:endpoint-config/x",
                    "CreationTime": WHEN,
                }
            ]
        },
    )
    sagemaker.add_response("list_models", {"Models": []})
    stubbed.cloudwatch.add_response("describe_alarms", {"MetricAlarms": []})
    sagemaker.add_response("delete_endpoint_config", {}, {"EndpointConfigName": OLD})

    code, out, err = run_cli(deploy_cli, ["delete", "--name", ENDPOINT], connect_to=stubbed.connect)

    assert code == 0, err
    stubbed.assert_done()
    assert out.splitlines() == [f"DeleteEndpointConfig {OLD}"]


def test_delete_with_nothing_left() -> None:
    stubbed = Stubbed()
    sagemaker = stubbed.sagemaker
    sagemaker.add_client_error(
        "describe_endpoint", "ValidationException", "Could not find endpoint"
    )
    sagemaker.add_response("list_inference_components", {"InferenceComponents": []})
    sagemaker.add_response("list_endpoint_configs", {"EndpointConfigs": []})
    sagemaker.add_response("list_models", {"Models": []})
    stubbed.cloudwatch.add_response("describe_alarms", {"MetricAlarms": []})

    code, out, _ = run_cli(deploy_cli, ["delete", "--name", ENDPOINT], connect_to=stubbed.connect)

    assert code == 0
    assert "nothing to delete" in out
