"""The control-plane requests one Plan implies, as pure functions: Plan in, Call out.

Two ways to host the model: the endpoint config's variant names the model (the plain way),
or the variant only reserves instances and an inference component places the model on them
(its compute, copies and start-up limits are its own, and it can scale to zero).
"""

from __future__ import annotations

import json
from typing import Any

from deploy import names
from deploy.calls import Call
from deploy.plan import Autoscaling, Plan
from deploy.s3 import S3Prefix
from serving import paths
from serving.variables import SPECULATIVE_CONFIG_VAR

SAGEMAKER = "sagemaker"
AUTOSCALING = "application-autoscaling"
HEAD_MOUNT = str(paths.channel_dir(paths.DEFAULT_OPT_ML_ROOT))
# A new instance takes minutes to load the model: scale out after a minute of load, scale in
# only after five quiet minutes so a burst does not tear down what it just paid to start.
SCALE_OUT_COOLDOWN_SECONDS = 60
SCALE_IN_COOLDOWN_SECONDS = 300
# botocore's application-autoscaling model: MetricType and ScalableDimension values.
VARIANT_METRICS = {
    "concurrency": "SageMakerVariantConcurrentRequestsPerModelHighResolution",
    "invocations": "SageMakerVariantInvocationsPerInstance",
}
COMPONENT_METRICS = {
    "concurrency": "SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution",
    "invocations": "SageMakerInferenceComponentInvocationsPerCopy",
}
VARIANT_DIMENSION = "sagemaker:variant:DesiredInstanceCount"
COMPONENT_DIMENSION = "sagemaker:inference-component:DesiredCopyCount"


def speculative_config(num_speculative_tokens: int) -> dict[str, Any]:
    """P-EAGLE in vLLM: EAGLE-3 with parallel drafting, the head from the eagle channel."""
    return {
        "model": HEAD_MOUNT,
        "method": "eagle3",
        "num_speculative_tokens": num_speculative_tokens,
        "parallel_drafting": True,
    }


def environment(plan: Plan) -> dict[str, str]:
    return {
        SPECULATIVE_CONFIG_VAR: json.dumps(speculative_config(plan.num_speculative_tokens)),
        # SageMaker does not tell a container its endpoint: the CloudWatch metrics the
        # container writes (EMF) carry these as dimensions.
        "SERVING_ENDPOINT_NAME": plan.endpoint_name,
        "SERVING_VARIANT_NAME": names.VARIANT_NAME,
        **plan.extra_environment,
    }


def s3_data_source(prefix: S3Prefix) -> dict[str, Any]:
    # Uncompressed: SageMaker copies the files as they are, no tar.gz to build or unpack.
    return {"S3Uri": prefix.uri, "S3DataType": "S3Prefix", "CompressionType": "None"}


def create_model(plan: Plan) -> Call:
    return Call(
        SAGEMAKER,
        "CreateModel",
        {
            "ModelName": plan.model_name,
            "PrimaryContainer": {
                "Image": plan.image_uri,
                "ModelDataSource": {"S3DataSource": s3_data_source(plan.target)},
                "AdditionalModelDataSources": [
                    {
                        "ChannelName": paths.DRAFTER_CHANNEL,
                        "S3DataSource": s3_data_source(plan.head),
                    }
                ],
                "Environment": environment(plan),
            },
            "ExecutionRoleArn": plan.role_arn,
        },
    )


def production_variant(plan: Plan) -> dict[str, Any]:
    variant: dict[str, Any] = {
        "VariantName": names.VARIANT_NAME,
        "InstanceType": plan.instance_type,
        "InitialInstanceCount": plan.instance_count,
        "RoutingConfig": {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"},
    }
    if plan.component is None:
        # With inference components these limits belong to the component instead.
        variant["ModelName"] = plan.model_name
        variant["ContainerStartupHealthCheckTimeoutInSeconds"] = plan.sizing.startup_seconds
        variant["ModelDataDownloadTimeoutInSeconds"] = plan.sizing.download_seconds
    elif plan.autoscaling is not None:
        # More copies than the instances hold need more instances: let SageMaker add them.
        variant["ManagedInstanceScaling"] = {
            "Status": "ENABLED",
            "MinInstanceCount": plan.instance_count,
            "MaxInstanceCount": max(plan.instance_count, plan.autoscaling.max_capacity),
        }
    if plan.sizing.volume_gb is not None:
        variant["VolumeSizeInGB"] = plan.sizing.volume_gb
    if plan.inference_ami_version is not None:
        variant["InferenceAmiVersion"] = plan.inference_ami_version
    return variant


def create_endpoint_config(plan: Plan) -> Call:
    params: dict[str, Any] = {
        "EndpointConfigName": plan.endpoint_config_name,
        "ProductionVariants": [production_variant(plan)],
    }
    if plan.component is not None:
        # No model in the variant, so SageMaker takes the role from the config.
        params["ExecutionRoleArn"] = plan.role_arn
    return Call(SAGEMAKER, "CreateEndpointConfig", params)


def create_endpoint(plan: Plan) -> Call:
    return Call(
        SAGEMAKER,
        "CreateEndpoint",
        {"EndpointName": plan.endpoint_name, "EndpointConfigName": plan.endpoint_config_name},
    )


def update_endpoint(plan: Plan) -> Call:
    # SageMaker starts the new instances, shifts traffic, then stops the old: no downtime.
    return Call(
        SAGEMAKER,
        "UpdateEndpoint",
        {"EndpointName": plan.endpoint_name, "EndpointConfigName": plan.endpoint_config_name},
    )


def component_specification(plan: Plan) -> dict[str, Any]:
    assert plan.component is not None
    return {
        "ModelName": plan.model_name,
        "StartupParameters": {
            "ModelDataDownloadTimeoutInSeconds": plan.sizing.download_seconds,
            "ContainerStartupHealthCheckTimeoutInSeconds": plan.sizing.startup_seconds,
        },
        "ComputeResourceRequirements": {
            "NumberOfAcceleratorDevicesRequired": plan.component.accelerators,
            "MinMemoryRequiredInMb": plan.component.memory_mb,
        },
    }


def component_settings(plan: Plan) -> dict[str, Any]:
    """What creating and updating the inference component both send."""
    assert plan.component is not None
    return {
        "InferenceComponentName": plan.component.name,
        "Specification": component_specification(plan),
        "RuntimeConfig": {"CopyCount": plan.component.copies},
    }


def create_inference_component(plan: Plan) -> Call:
    assert plan.component is not None
    return Call(
        SAGEMAKER,
        "CreateInferenceComponent",
        {
            **component_settings(plan),
            "EndpointName": plan.endpoint_name,
            "VariantName": names.VARIANT_NAME,
        },
    )


def update_inference_component(plan: Plan) -> Call:
    assert plan.component is not None
    return Call(
        SAGEMAKER,
        "UpdateInferenceComponent",
        component_settings(plan),
    )


def variant_resource_id(endpoint_name: str) -> str:
    return f"endpoint/{endpoint_name}/variant/{names.VARIANT_NAME}"


def component_resource_id(component_name: str) -> str:
    return f"inference-component/{component_name}"


def scaling_target(plan: Plan) -> tuple[str, str, dict[str, str]]:
    """(resource id, scalable dimension, metric by --metric) for the plan's scaled resource."""
    if plan.component is not None:
        return component_resource_id(plan.component.name), COMPONENT_DIMENSION, COMPONENT_METRICS
    return variant_resource_id(plan.endpoint_name), VARIANT_DIMENSION, VARIANT_METRICS


def policy_name(plan: Plan, scaling: Autoscaling) -> str:
    scaled = plan.component.name if plan.component is not None else plan.endpoint_name
    return f"{scaled}-{scaling.metric}"


def register_scalable_target(plan: Plan) -> Call:
    assert plan.autoscaling is not None
    resource_id, dimension, _ = scaling_target(plan)
    return Call(
        AUTOSCALING,
        "RegisterScalableTarget",
        {
            "ServiceNamespace": SAGEMAKER,
            "ResourceId": resource_id,
            "ScalableDimension": dimension,
            "MinCapacity": plan.autoscaling.min_capacity,
            "MaxCapacity": plan.autoscaling.max_capacity,
        },
    )


def put_scaling_policy(plan: Plan) -> Call:
    scaling = plan.autoscaling
    assert scaling is not None
    resource_id, dimension, metrics = scaling_target(plan)
    return Call(
        AUTOSCALING,
        "PutScalingPolicy",
        {
            "PolicyName": policy_name(plan, scaling),
            "ServiceNamespace": SAGEMAKER,
            "ResourceId": resource_id,
            "ScalableDimension": dimension,
            "PolicyType": "TargetTrackingScaling",
            "TargetTrackingScalingPolicyConfiguration": {
                "TargetValue": scaling.target_value,
                "PredefinedMetricSpecification": {"PredefinedMetricType": metrics[scaling.metric]},
                "ScaleOutCooldown": SCALE_OUT_COOLDOWN_SECONDS,
                "ScaleInCooldown": SCALE_IN_COOLDOWN_SECONDS,
            },
        },
    )


def describe_scalable_targets(resource_ids: list[str]) -> Call:
    return Call(
        AUTOSCALING,
        "DescribeScalableTargets",
        {"ServiceNamespace": SAGEMAKER, "ResourceIds": resource_ids},
    )


def deregister_scalable_target(resource_id: str, dimension: str) -> Call:
    return Call(
        AUTOSCALING,
        "DeregisterScalableTarget",
        {"ServiceNamespace": SAGEMAKER, "ResourceId": resource_id, "ScalableDimension": dimension},
    )
