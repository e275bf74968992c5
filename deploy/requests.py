"""The SageMaker requests one Plan implies, as pure functions: Plan in, Call out (its scaling
requests are deploy/scaling.py's).

Two ways to host the model: the endpoint config's variant names the model (the plain way),
or the variant only reserves instances and an inference component places the model on them
(its compute, copies and start-up limits are its own, and it can scale to zero).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from deploy import names
from deploy.calls import Call
from deploy.plan import AsyncInference, Plan
from deploy.s3 import S3Prefix
from serving import paths
from serving.variables import (
    BATCH_SCHEDULE_KEY,
    ENDPOINT_NAME_VAR,
    HEAD_VERSION_VAR,
    MAX_PAYLOAD_VAR,
    SPECULATIVE_CONFIG_VAR,
    VARIANT_NAME_VAR,
)

SAGEMAKER = "sagemaker"
HEAD_MOUNT = str(paths.channel_dir(paths.DEFAULT_OPT_ML_ROOT))
# The async limits: a payload of up to 1 GB, read from S3 and posted to /invocations.
ASYNC_MAX_PAYLOAD_MB = "1024"


def speculative_config(
    num_speculative_tokens: int, batch_schedule: Sequence[Sequence[int]] | None = None
) -> dict[str, Any]:
    """P-EAGLE in vLLM: EAGLE-3 with parallel drafting, the head from the eagle channel, and
    K by batch size when a schedule is given."""
    config: dict[str, Any] = {
        "model": HEAD_MOUNT,
        "method": "eagle3",
        "num_speculative_tokens": num_speculative_tokens,
        "parallel_drafting": True,
    }
    if batch_schedule:
        config[BATCH_SCHEDULE_KEY] = [list(entry) for entry in batch_schedule]
    return config


def environment(plan: Plan) -> dict[str, str]:
    return {
        SPECULATIVE_CONFIG_VAR: json.dumps(
            speculative_config(plan.num_speculative_tokens, plan.batch_schedule)
        ),
        # SageMaker does not tell a container its endpoint: the CloudWatch metrics the
        # container writes (EMF) carry these as dimensions.
        ENDPOINT_NAME_VAR: plan.endpoint_name,
        VARIANT_NAME_VAR: names.VARIANT_NAME,
        HEAD_VERSION_VAR: plan.head_version,
        **({MAX_PAYLOAD_VAR: ASYNC_MAX_PAYLOAD_MB} if plan.asynchronous is not None else {}),
        **plan.extra_environment,
    }


def s3_data_source(prefix: S3Prefix) -> dict[str, Any]:
    # Uncompressed: SageMaker copies the files as they are, no tar.gz to build or unpack.
    return {"S3Uri": prefix.uri, "S3DataType": "S3Prefix", "CompressionType": "None"}


def model_call(model_name: str, role_arn: str, **container: Any) -> Call:
    """CreateModel of one container (its PrimaryContainer's fields)."""
    return Call(
        SAGEMAKER,
        "CreateModel",
        {"ModelName": model_name, "PrimaryContainer": container, "ExecutionRoleArn": role_arn},
    )


def create_model(plan: Plan) -> Call:
    return model_call(
        plan.model_name,
        plan.role_arn,
        Image=plan.image_uri,
        ModelDataSource={"S3DataSource": s3_data_source(plan.target)},
        AdditionalModelDataSources=[
            {"ChannelName": paths.DRAFTER_CHANNEL, "S3DataSource": s3_data_source(plan.head)}
        ],
        Environment=environment(plan),
    )


def production_variant(plan: Plan) -> dict[str, Any]:
    variant: dict[str, Any] = {
        "VariantName": names.VARIANT_NAME,
        "InstanceType": plan.instance_type,
        "InitialInstanceCount": plan.instance_count,
        "RoutingConfig": plan.routing.request(),
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
        "MetricsConfig": plan.observability.request(),
    }
    if plan.component is not None:
        # No model in the variant, so SageMaker takes the role from the config.
        params["ExecutionRoleArn"] = plan.role_arn
    if plan.asynchronous is not None:
        params["AsyncInferenceConfig"] = async_inference_config(plan.asynchronous)
    if plan.data_capture is not None:
        params["DataCaptureConfig"] = plan.data_capture.request()
    if plan.tracing is not None:
        params["TracingConfig"] = plan.tracing.request()
    return Call(SAGEMAKER, "CreateEndpointConfig", params)


def async_inference_config(asynchronous: AsyncInference) -> dict[str, Any]:
    output: dict[str, Any] = {
        "S3OutputPath": asynchronous.output.uri,
        "S3FailurePath": asynchronous.failure.uri,
    }
    topics = {
        "SuccessTopic": asynchronous.success_topic,
        "ErrorTopic": asynchronous.error_topic,
    }
    if any(topics.values()):
        output["NotificationConfig"] = {key: value for key, value in topics.items() if value}
    config: dict[str, Any] = {"OutputConfig": output}
    if asynchronous.max_concurrent_invocations is not None:
        config["ClientConfig"] = {
            "MaxConcurrentInvocationsPerInstance": asynchronous.max_concurrent_invocations
        }
    return config


def create_endpoint(plan: Plan) -> Call:
    return Call(
        SAGEMAKER,
        "CreateEndpoint",
        {"EndpointName": plan.endpoint_name, "EndpointConfigName": plan.endpoint_config_name},
    )


def canary_instances(plan: Plan) -> int | None:
    """Instances of the new fleet that take traffic first; None when the fleet is too small
    for a canary (SageMaker allows at most half of it), and all of it bakes at once."""
    instances = max(1, math.ceil(plan.instance_count * plan.guard.canary_percent / 100))
    return instances if 2 * instances <= plan.instance_count else None


def update_timeout_seconds(plan: Plan) -> int:
    """Room for the new fleet to download and start, then bake twice (canary, then the rest);
    within SageMaker's 600..28800 s."""
    needed = plan.sizing.download_seconds + plan.sizing.startup_seconds
    return min(28800, max(600, needed + 2 * plan.guard.bake_seconds + 600))


def rollback(alarm_names: list[str]) -> dict[str, Any]:
    return {"Alarms": [{"AlarmName": name} for name in alarm_names]}


def update_endpoint(plan: Plan, alarm_names: list[str]) -> Call:
    """Blue/green: the new fleet starts beside the old, takes a canary share of the traffic
    and bakes while SageMaker watches the alarms, then takes the rest; an alarm rolls the
    traffic back to the old fleet."""
    canary = canary_instances(plan)
    routing: dict[str, Any] = {
        "Type": "CANARY" if canary is not None else "ALL_AT_ONCE",
        "WaitIntervalInSeconds": plan.guard.bake_seconds,
    }
    if canary is not None:
        routing["CanarySize"] = {"Type": "INSTANCE_COUNT", "Value": canary}
    return Call(
        SAGEMAKER,
        "UpdateEndpoint",
        {
            "EndpointName": plan.endpoint_name,
            "EndpointConfigName": plan.endpoint_config_name,
            "DeploymentConfig": {
                "BlueGreenUpdatePolicy": {
                    "TrafficRoutingConfiguration": routing,
                    "TerminationWaitInSeconds": 0,
                    "MaximumExecutionTimeoutInSeconds": update_timeout_seconds(plan),
                },
                "AutoRollbackConfiguration": rollback(alarm_names),
            },
        },
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


def update_inference_component(plan: Plan, alarm_names: list[str]) -> Call:
    """A rolling update: a canary share of the copies moves first and bakes while SageMaker
    watches the alarms; an alarm moves every copy back at once."""
    assert plan.component is not None
    return Call(
        SAGEMAKER,
        "UpdateInferenceComponent",
        {
            **component_settings(plan),
            "DeploymentConfig": {
                "RollingUpdatePolicy": {
                    "MaximumBatchSize": {
                        "Type": "CAPACITY_PERCENT",
                        "Value": plan.guard.canary_percent,
                    },
                    "WaitIntervalInSeconds": plan.guard.bake_seconds,
                    "MaximumExecutionTimeoutInSeconds": update_timeout_seconds(plan),
                    "RollbackMaximumBatchSize": {"Type": "CAPACITY_PERCENT", "Value": 100},
                },
                "AutoRollbackConfiguration": rollback(alarm_names),
            },
        },
    )
