"""The scaling requests one Plan implies (Application Auto Scaling's targets and policies, the
CloudWatch alarm that wakes an endpoint scaled to zero), as pure functions: Plan in, Call out."""

from __future__ import annotations

from typing import Any

from deploy import names
from deploy.calls import Call
from deploy.plan import Autoscaling, Plan
from deploy.requests import SAGEMAKER

AUTOSCALING = "application-autoscaling"
CLOUDWATCH = "cloudwatch"
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
# Asynchronous endpoints scale on their queue (AWS's documented pattern): the backlog per
# instance to hold, and the alarm that wakes an endpoint scaled to zero.
BACKLOG_METRIC = "ApproximateBacklogSizePerInstance"
WAKE_UP_METRIC = "HasBacklogWithoutCapacity"
VARIANT_DIMENSION = "sagemaker:variant:DesiredInstanceCount"
COMPONENT_DIMENSION = "sagemaker:inference-component:DesiredCopyCount"


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
    metric: dict[str, Any]
    if scaling.metric == "backlog":
        metric = {"CustomizedMetricSpecification": endpoint_metric(plan, BACKLOG_METRIC)}
    else:
        metric = {
            "PredefinedMetricSpecification": {"PredefinedMetricType": metrics[scaling.metric]}
        }
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
                **metric,
                "ScaleOutCooldown": SCALE_OUT_COOLDOWN_SECONDS,
                "ScaleInCooldown": SCALE_IN_COOLDOWN_SECONDS,
            },
        },
    )


def endpoint_metric(plan: Plan, name: str) -> dict[str, Any]:
    return {
        "MetricName": name,
        "Namespace": "AWS/SageMaker",
        "Dimensions": [{"Name": "EndpointName", "Value": plan.endpoint_name}],
        "Statistic": "Average",
    }


def wake_up_policy(plan: Plan) -> Call:
    """A step policy that adds one instance: target tracking alone never scales out from
    zero, since with no instance the backlog per instance is not defined."""
    resource_id, dimension, _ = scaling_target(plan)
    return Call(
        AUTOSCALING,
        "PutScalingPolicy",
        {
            "PolicyName": f"{plan.endpoint_name}-wake-up",
            "ServiceNamespace": SAGEMAKER,
            "ResourceId": resource_id,
            "ScalableDimension": dimension,
            "PolicyType": "StepScaling",
            "StepScalingPolicyConfiguration": {
                "AdjustmentType": "ChangeInCapacity",
                "MetricAggregationType": "Average",
                "Cooldown": SCALE_IN_COOLDOWN_SECONDS,
                "StepAdjustments": [{"MetricIntervalLowerBound": 0, "ScalingAdjustment": 1}],
            },
        },
    )


def wake_up_alarm(plan: Plan, policy_arn: str) -> Call:
    """HasBacklogWithoutCapacity >= 1 for a minute: the wake-up policy adds an instance."""
    metric = endpoint_metric(plan, WAKE_UP_METRIC)
    return Call(
        CLOUDWATCH,
        "PutMetricAlarm",
        {
            "AlarmName": f"{plan.endpoint_name}-has-backlog-without-capacity",
            "AlarmDescription": "Wakes the asynchronous endpoint scaled to zero when requests "
            "are queued (python -m deploy --scale-to-zero).",
            **{key: metric[key] for key in ("MetricName", "Namespace", "Dimensions", "Statistic")},
            "Period": 60,
            "EvaluationPeriods": 1,
            "Threshold": 1,
            "ComparisonOperator": "GreaterThanOrEqualToThreshold",
            "TreatMissingData": "missing",
            "AlarmActions": [policy_arn],
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
