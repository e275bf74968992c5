"""The delete subcommand: an endpoint and everything deploy made for it, whatever is left.

Found first, then deleted in the order SageMaker allows: a guarded update's alarms left
behind (NAME-<timestamp>-acceptance/-errors), scaling policies and scalable
targets (they hold the resources), inference components (waited out, since the endpoint
cannot go while it hosts them), the endpoint, then every endpoint config and model of the
form NAME-<timestamp> (one per deploy run) plus those the endpoint and its components named.
Anything already gone is reported and skipped, so a half-finished delete can be re-run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TextIO

from botocore import xform_name
from botocore.exceptions import ClientError

from deploy import alarms, names, requests, scaling
from deploy.calls import Call, send
from deploy.clients import Connection
from deploy.waiting import Clock, is_not_found, wait_until_gone

SAGEMAKER = requests.SAGEMAKER
AUTOSCALING = scaling.AUTOSCALING
GONE_CODES = frozenset({"ObjectNotFoundException"})


@dataclass
class Inventory:
    """What exists for one endpoint name."""

    endpoint: bool = False
    components: list[str] = field(default_factory=list)
    # (resource id, dimension, [policy names])
    scalable_targets: list[tuple[str, str, list[str]]] = field(default_factory=list)
    endpoint_configs: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    # A guarded update's alarms, left behind when its command was stopped mid-wait
    alarms: list[str] = field(default_factory=list)


def list_components(endpoint_name: str) -> Call:
    return Call(SAGEMAKER, "ListInferenceComponents", {"EndpointNameEquals": endpoint_name})


def list_endpoint_configs(endpoint_name: str) -> Call:
    return Call(SAGEMAKER, "ListEndpointConfigs", {"NameContains": endpoint_name})


def list_models(endpoint_name: str) -> Call:
    return Call(SAGEMAKER, "ListModels", {"NameContains": endpoint_name})


def list_alarms(endpoint_name: str) -> Call:
    return Call(alarms.CLOUDWATCH, "DescribeAlarms", {"AlarmNamePrefix": f"{endpoint_name}-"})


def discovery_calls(endpoint_name: str, resource_ids: list[str]) -> list[Call]:
    """The read requests that find the resources (the dry run prints them)."""
    return [
        Call(SAGEMAKER, "DescribeEndpoint", {"EndpointName": endpoint_name}),
        list_components(endpoint_name),
        scaling.describe_scalable_targets(resource_ids),
        list_endpoint_configs(endpoint_name),
        list_models(endpoint_name),
        list_alarms(endpoint_name),
    ]


def assumed_inventory(endpoint_name: str) -> Inventory:
    """What the dry run can name without calls: deploy's fixed names only."""
    component = names.component_name(endpoint_name)
    return Inventory(
        endpoint=True,
        components=[component],
        scalable_targets=[
            (scaling.variant_resource_id(endpoint_name), scaling.VARIANT_DIMENSION, []),
            (scaling.component_resource_id(component), scaling.COMPONENT_DIMENSION, []),
        ],
    )


def delete_calls(endpoint_name: str, inventory: Inventory) -> list[Call]:
    found: list[Call] = []
    if inventory.alarms:
        found.append(alarms.delete_alarms(inventory.alarms))
    for resource_id, dimension, policies in inventory.scalable_targets:
        target = {"ServiceNamespace": SAGEMAKER, "ResourceId": resource_id}
        for policy in policies:
            found.append(
                Call(
                    AUTOSCALING,
                    "DeleteScalingPolicy",
                    {"PolicyName": policy, **target, "ScalableDimension": dimension},
                )
            )
        found.append(scaling.deregister_scalable_target(resource_id, dimension))
    found += [
        Call(SAGEMAKER, "DeleteInferenceComponent", {"InferenceComponentName": component})
        for component in inventory.components
    ]
    if inventory.endpoint:
        found.append(Call(SAGEMAKER, "DeleteEndpoint", {"EndpointName": endpoint_name}))
    found += [
        Call(SAGEMAKER, "DeleteEndpointConfig", {"EndpointConfigName": config})
        for config in inventory.endpoint_configs
    ]
    found += [Call(SAGEMAKER, "DeleteModel", {"ModelName": model}) for model in inventory.models]
    return found


def pages(connection: Connection, call: Call, key: str) -> list[dict[str, Any]]:
    client = connection.client(call.service)
    paginator = client.get_paginator(xform_name(call.operation))
    return [item for page in paginator.paginate(**call.params) for item in page.get(key, [])]


def discover(endpoint_name: str, connection: Connection) -> Inventory:
    sagemaker = connection.client(SAGEMAKER)
    inventory = Inventory()
    configs: set[str] = set()
    models: set[str] = set()
    variants: list[str] = []
    try:
        endpoint = sagemaker.describe_endpoint(EndpointName=endpoint_name)
    except ClientError as error:
        if not is_not_found(error):
            raise
    else:
        inventory.endpoint = True
        configs.add(endpoint["EndpointConfigName"])
        variants = [variant["VariantName"] for variant in endpoint.get("ProductionVariants", [])]
        try:
            config = sagemaker.describe_endpoint_config(
                EndpointConfigName=endpoint["EndpointConfigName"]
            )
            models |= {v["ModelName"] for v in config["ProductionVariants"] if v.get("ModelName")}
        except ClientError as error:
            if not is_not_found(error):
                raise
    components = pages(connection, list_components(endpoint_name), "InferenceComponents")
    inventory.components = sorted(c["InferenceComponentName"] for c in components)
    for component in inventory.components:
        described = sagemaker.describe_inference_component(InferenceComponentName=component)
        model = described.get("Specification", {}).get("ModelName")
        if model:
            models.add(model)
    resource_ids = [f"endpoint/{endpoint_name}/variant/{variant}" for variant in variants] + [
        scaling.component_resource_id(component) for component in inventory.components
    ]
    if resource_ids:
        inventory.scalable_targets = scalable_targets(connection, resource_ids)
    configs |= {
        item["EndpointConfigName"]
        for item in pages(connection, list_endpoint_configs(endpoint_name), "EndpointConfigs")
        if names.is_versioned_name(endpoint_name, item["EndpointConfigName"])
    }
    models |= {
        item["ModelName"]
        for item in pages(connection, list_models(endpoint_name), "Models")
        if names.is_versioned_name(endpoint_name, item["ModelName"])
    }
    inventory.endpoint_configs = sorted(configs)
    inventory.models = sorted(models)
    inventory.alarms = sorted(
        alarm["AlarmName"]
        for alarm in pages(connection, list_alarms(endpoint_name), "MetricAlarms")
        if alarms.is_guard_alarm(endpoint_name, alarm["AlarmName"])
    )
    return inventory


def scalable_targets(
    connection: Connection, resource_ids: list[str]
) -> list[tuple[str, str, list[str]]]:
    autoscaling = connection.client(AUTOSCALING)
    described = send(connection.client, scaling.describe_scalable_targets(resource_ids))
    found = []
    for target in described.get("ScalableTargets", []):
        policies = autoscaling.describe_scaling_policies(
            ServiceNamespace=SAGEMAKER,
            ResourceId=target["ResourceId"],
            ScalableDimension=target["ScalableDimension"],
        )
        found.append(
            (
                target["ResourceId"],
                target["ScalableDimension"],
                [policy["PolicyName"] for policy in policies.get("ScalingPolicies", [])],
            )
        )
    return found


def is_gone(error: ClientError) -> bool:
    return is_not_found(error) or error.response.get("Error", {}).get("Code") in GONE_CODES


def describe_deletion(call: Call) -> str:
    if call.service == AUTOSCALING:
        policy = call.params.get("PolicyName")
        return f"{call.operation} {policy + ' on ' if policy else ''}{call.params['ResourceId']}"
    if call.operation == "DeleteAlarms":
        return f"DeleteAlarms {', '.join(call.params['AlarmNames'])}"
    return f"{call.operation} {next(iter(call.params.values()))}"


def delete(endpoint_name: str, connection: Connection, out: TextIO, clock: Clock) -> Inventory:
    """Delete what `discover` finds; each call printed, each one already gone tolerated."""
    inventory = discover(endpoint_name, connection)
    sagemaker = connection.client(SAGEMAKER)
    calls = delete_calls(endpoint_name, inventory)
    if not calls:
        out.write(f"nothing to delete: no endpoint, config or model named {endpoint_name}\n")
    for call in calls:
        label = describe_deletion(call)
        try:
            send(connection.client, call)
        except ClientError as error:
            if not is_gone(error):
                raise
            out.write(f"{label}: already gone\n")
            continue
        out.write(label + "\n")
        if call.operation == "DeleteInferenceComponent":
            component = call.params["InferenceComponentName"]
            wait_until_gone(
                lambda n=component: sagemaker.describe_inference_component(
                    InferenceComponentName=n
                ),
                f"inference component {component}",
                out,
                clock,
            )
    return inventory
