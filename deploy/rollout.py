"""The deploy subcommand's sequence: which requests, in which order, with which waits.

A new endpoint: model, endpoint config, endpoint, wait. An existing one (a re-run): a new
model and endpoint config under this run's timestamp, then UpdateEndpoint, which SageMaker
rolls out without downtime. With an inference component, the endpoint only reserves the
instances: a re-run on an existing endpoint creates the new model and rolls the component
onto it (UpdateInferenceComponent), leaving the instances as they are. Autoscaling goes on
last, since SageMaker registers only a resource that is in service.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TextIO

from botocore.exceptions import ClientError

from deploy import requests
from deploy.calls import Call, send
from deploy.clients import Connection
from deploy.plan import Plan
from deploy.waiting import Clock, is_not_found, wait_for_component, wait_for_endpoint


@dataclass(frozen=True)
class WaitForEndpoint:
    updating: bool


@dataclass(frozen=True)
class WaitForComponent:
    pass


Step = Call | WaitForEndpoint | WaitForComponent


@dataclass(frozen=True)
class Existing:
    """What is already there, found by Describe calls before the first change."""

    endpoint: bool = False
    component: bool = False
    # (resource id, dimension) of scalable targets on the variant, which UpdateEndpoint refuses
    scaled_variant: tuple[tuple[str, str], ...] = ()


def steps(plan: Plan, existing: Existing) -> list[Step]:
    model = [requests.create_model(plan)]
    scaling = (
        [requests.register_scalable_target(plan), requests.put_scaling_policy(plan)]
        if plan.autoscaling is not None
        else []
    )
    if plan.component is None:
        if not existing.endpoint:
            return [
                *model,
                requests.create_endpoint_config(plan),
                requests.create_endpoint(plan),
                WaitForEndpoint(updating=False),
                *scaling,
            ]
        return [
            *model,
            requests.create_endpoint_config(plan),
            *[requests.deregister_scalable_target(*target) for target in existing.scaled_variant],
            requests.update_endpoint(plan),
            WaitForEndpoint(updating=True),
            *scaling,
        ]
    endpoint: list[Step] = []
    if not existing.endpoint:
        endpoint = [
            requests.create_endpoint_config(plan),
            requests.create_endpoint(plan),
            WaitForEndpoint(updating=False),
        ]
    component = (
        requests.update_inference_component(plan)
        if existing.component
        else requests.create_inference_component(plan)
    )
    return [*model, *endpoint, component, WaitForComponent(), *scaling]


def every_call(plan: Plan) -> list[Call]:
    """The calls of both a first deployment and a re-run, for checking before any call."""
    found = []
    for existing in (Existing(), Existing(endpoint=True, component=True)):
        found += [step for step in steps(plan, existing) if isinstance(step, Call)]
    return found


def exists(describe: Any, **params: str) -> bool:
    try:
        describe(**params)
    except ClientError as error:
        if is_not_found(error):
            return False
        raise
    return True


def find_existing(plan: Plan, connection: Connection) -> Existing:
    sagemaker = connection.client(requests.SAGEMAKER)
    endpoint = exists(sagemaker.describe_endpoint, EndpointName=plan.endpoint_name)
    if not endpoint:
        return Existing()
    if plan.component is not None:
        component = exists(
            sagemaker.describe_inference_component, InferenceComponentName=plan.component.name
        )
        return Existing(endpoint=True, component=component)
    resource_id = requests.variant_resource_id(plan.endpoint_name)
    described = send(connection.client, requests.describe_scalable_targets([resource_id]))
    scaled = tuple(
        (target["ResourceId"], target["ScalableDimension"])
        for target in described.get("ScalableTargets", [])
    )
    return Existing(endpoint=True, scaled_variant=scaled)


def describe_step(call: Call) -> str:
    params = call.params
    name = next(
        (
            params[key]
            for key in ("ModelName", "EndpointConfigName", "InferenceComponentName", "ResourceId")
            if key in params
        ),
        params.get("EndpointName", ""),
    )
    if call.operation in ("CreateEndpoint", "UpdateEndpoint"):
        name = f"{params['EndpointName']} with {params['EndpointConfigName']}"
    return f"{call.operation} {name}"


def run(plan: Plan, existing: Existing, connection: Connection, out: TextIO, clock: Clock) -> None:
    """Send each step's request, waiting where a step says so; DeployFailed on failure."""
    sagemaker = connection.client(requests.SAGEMAKER)
    for step in steps(plan, existing):
        if isinstance(step, Call):
            out.write(describe_step(step) + "\n")
            send(connection.client, step)
        elif isinstance(step, WaitForEndpoint):
            expected = plan.endpoint_config_name if step.updating else None
            wait_for_endpoint(
                sagemaker, plan.endpoint_name, connection.region, out, clock, expected
            )
        else:
            assert plan.component is not None
            wait_for_component(
                sagemaker, plan.component.name, plan.endpoint_name, connection.region, out, clock
            )
