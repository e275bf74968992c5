"""The deploy subcommand's sequence: which requests, in which order, with which waits.

A new endpoint: model, endpoint config, endpoint, wait. An existing one (a re-run): a new
model and endpoint config under this run's timestamp, the alarms that guard the new head
(alarms.py), then a blue/green UpdateEndpoint with a canary, which SageMaker rolls back when
an alarm fires. With an inference component, the endpoint only reserves the instances: a
re-run on an existing endpoint creates the new model and rolls the component onto it
(UpdateInferenceComponent, a rolling update with the same alarms), leaving the instances as
they are. Autoscaling goes on last, since SageMaker registers only a resource that is in
service. The alarms are deleted once the update has ended either way.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TextIO

from botocore.exceptions import ClientError

from deploy import alarms, requests, scaling
from deploy.calls import Call, send
from deploy.clients import Connection
from deploy.failures import DeployFailed
from deploy.plan import Plan
from deploy.waiting import Clock, is_not_found, wait_for_component, wait_for_endpoint


@dataclass(frozen=True)
class WaitForEndpoint:
    updating: bool


@dataclass(frozen=True)
class WaitForComponent:
    pass


@dataclass(frozen=True)
class WakeUp:
    """An asynchronous endpoint scaled to zero: the step policy that adds an instance, then
    the alarm on the queue that calls it (the alarm needs the policy's ARN)."""


# What the dry run prints for the policy's ARN, which only the real call returns.
POLICY_ARN_PLACEHOLDER = "<PolicyARN returned by the PutScalingPolicy above>"

Step = Call | WaitForEndpoint | WaitForComponent | WakeUp


@dataclass(frozen=True)
class Existing:
    """What is already there, found by Describe calls before the first change."""

    endpoint: bool = False
    component: bool = False
    # (resource id, dimension) of scalable targets on the variant, which UpdateEndpoint refuses
    scaled_variant: tuple[tuple[str, str], ...] = ()
    # The new head's acceptance floor (--min-acceptance, else from the current head's history)
    min_acceptance: float | None = None


def guard_calls(plan: Plan, existing: Existing) -> list[Call]:
    return [
        alarms.put_alarm(plan, alarm)
        for alarm in alarms.guard_alarms(plan, existing.min_acceptance)
    ]


def alarm_names(calls: list[Step]) -> list[str]:
    return [
        step.params["AlarmName"]
        for step in calls
        if isinstance(step, Call) and step.operation == "PutMetricAlarm"
    ]


def steps(plan: Plan, existing: Existing) -> list[Step]:
    model = [requests.create_model(plan)]
    scale: list[Step] = (
        [scaling.register_scalable_target(plan), scaling.put_scaling_policy(plan)]
        if plan.autoscaling is not None
        else []
    )
    if plan.asynchronous is not None and plan.asynchronous.scale_to_zero:
        scale.append(WakeUp())
    if plan.component is None:
        if not existing.endpoint:
            return [
                *model,
                requests.create_endpoint_config(plan),
                requests.create_endpoint(plan),
                WaitForEndpoint(updating=False),
                *scale,
            ]
        guard = guard_calls(plan, existing)
        return [
            *model,
            requests.create_endpoint_config(plan),
            *[scaling.deregister_scalable_target(*target) for target in existing.scaled_variant],
            *guard,
            requests.update_endpoint(plan, alarm_names(guard)),
            WaitForEndpoint(updating=True),
            *scale,
        ]
    endpoint: list[Step] = []
    if not existing.endpoint:
        endpoint = [
            requests.create_endpoint_config(plan),
            requests.create_endpoint(plan),
            WaitForEndpoint(updating=False),
        ]
    if not existing.component:
        return [
            *model,
            *endpoint,
            requests.create_inference_component(plan),
            WaitForComponent(),
            *scale,
        ]
    guard = guard_calls(plan, existing)
    update = requests.update_inference_component(plan, alarm_names(guard))
    return [*model, *guard, update, WaitForComponent(), *scale]


def calls_of(plan: Plan, planned: list[Step]) -> list[Call]:
    """The requests among the steps, the wake-up's two included (its alarm with a stand-in
    for the policy ARN), for printing and checking."""
    found: list[Call] = []
    for step in planned:
        if isinstance(step, Call):
            found.append(step)
        elif isinstance(step, WakeUp):
            found += [
                scaling.wake_up_policy(plan),
                scaling.wake_up_alarm(plan, POLICY_ARN_PLACEHOLDER),
            ]
    return found


def every_call(plan: Plan) -> list[Call]:
    """The calls of both a first deployment and a re-run, for checking before any call."""
    found = []
    for existing in (Existing(), Existing(endpoint=True, component=True, min_acceptance=1.0)):
        found += calls_of(plan, steps(plan, existing))
    return found


def exists(describe: Any, **params: str) -> bool:
    try:
        describe(**params)
    except ClientError as error:
        if is_not_found(error):
            return False
        raise
    return True


def acceptance_floor(plan: Plan, connection: Connection, out: TextIO) -> float | None:
    """--min-acceptance, else 0.9 x the current head's over the last hour (None: no history)."""
    if plan.guard.min_acceptance is not None:
        return plan.guard.min_acceptance
    answer = send(
        connection.client, alarms.current_acceptance(plan.endpoint_name, datetime.now(UTC))
    )
    floor, note = alarms.acceptance_floor(answer)
    out.write(note + "\n")
    return floor


def find_existing(plan: Plan, connection: Connection, out: TextIO) -> Existing:
    sagemaker = connection.client(requests.SAGEMAKER)
    endpoint = exists(sagemaker.describe_endpoint, EndpointName=plan.endpoint_name)
    if not endpoint:
        return Existing()
    if plan.component is not None:
        component = exists(
            sagemaker.describe_inference_component, InferenceComponentName=plan.component.name
        )
        floor = acceptance_floor(plan, connection, out) if component else None
        return Existing(endpoint=True, component=component, min_acceptance=floor)
    resource_id = scaling.variant_resource_id(plan.endpoint_name)
    described = send(connection.client, scaling.describe_scalable_targets([resource_id]))
    scaled = tuple(
        (target["ResourceId"], target["ScalableDimension"])
        for target in described.get("ScalableTargets", [])
    )
    floor = acceptance_floor(plan, connection, out)
    return Existing(endpoint=True, scaled_variant=scaled, min_acceptance=floor)


def describe_step(call: Call) -> str:
    params = call.params
    name = next(
        (
            params[key]
            for key in (
                "ModelName",
                "EndpointConfigName",
                "InferenceComponentName",
                "ResourceId",
                "AlarmName",
            )
            if key in params
        ),
        params.get("EndpointName", ""),
    )
    if call.operation in ("CreateEndpoint", "UpdateEndpoint"):
        name = f"{params['EndpointName']} with {params['EndpointConfigName']}"
    return f"{call.operation} {name}"


def run(plan: Plan, existing: Existing, connection: Connection, out: TextIO, clock: Clock) -> None:
    """Send each step's request, waiting where a step says so; DeployFailed on failure, with
    the alarms that fired when SageMaker rolled the update back."""
    planned = steps(plan, existing)
    guard = alarm_names(planned)
    try:
        run_steps(plan, planned, connection, out, clock)
    except DeployFailed as failure:
        if not guard:
            raise
        report = alarms.fired(send(connection.client, alarms.describe_alarms(guard)))
        raise DeployFailed(" ".join([str(failure), *report])) from None
    finally:
        if guard:
            out.write(f"DeleteAlarms {', '.join(guard)}\n")
            send(connection.client, alarms.delete_alarms(guard))


def run_steps(
    plan: Plan, planned: list[Step], connection: Connection, out: TextIO, clock: Clock
) -> None:
    sagemaker = connection.client(requests.SAGEMAKER)
    for step in planned:
        if isinstance(step, Call):
            out.write(describe_step(step) + "\n")
            send(connection.client, step)
        elif isinstance(step, WakeUp):
            policy = scaling.wake_up_policy(plan)
            out.write(f"{describe_step(policy)} (step scaling: wake up)\n")
            arn = send(connection.client, policy)["PolicyARN"]
            alarm = scaling.wake_up_alarm(plan, arn)
            out.write(describe_step(alarm) + "\n")
            send(connection.client, alarm)
        elif isinstance(step, WaitForEndpoint):
            expected = plan.endpoint_config_name if step.updating else None
            wait_for_endpoint(
                sagemaker, plan.endpoint_name, connection.region, out, clock, expected
            )
        else:
            assert plan.component is not None
            wait_for_component(
                sagemaker,
                plan.component.name,
                plan.endpoint_name,
                connection.region,
                out,
                clock,
                plan.model_name,
            )
