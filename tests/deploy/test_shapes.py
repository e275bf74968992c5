"""deploy.shapes: what botocore does not check (enum, max, pattern, bounds), checked."""

from __future__ import annotations

import botocore.session
import pytest

from deploy import calls, rollout, shapes
from deploy.calls import Call
from deploy.plan import DEFAULT_INSTANCE_TYPE, Autoscaling, Component, Plan
from deploy.s3 import S3Prefix
from deploy.sizing import size_for
from tests.support.deploy import IMAGE, ROLE, VERSION


def plan(**changes) -> Plan:
    values = dict(
        endpoint_name="qwen-peagle",
        version=VERSION,
        image_uri=IMAGE,
        role_arn=ROLE,
        target=S3Prefix("my-bucket", "qwen/model/"),
        head=S3Prefix("my-bucket", "qwen/eagle/"),
        num_speculative_tokens=7,
        instance_type=DEFAULT_INSTANCE_TYPE,
        sizing=size_for(31 * 10**9, DEFAULT_INSTANCE_TYPE),
    )
    values.update(changes)
    return Plan(**values)


def problems_of(call: Call) -> list[str]:
    return calls.problems([call])


def test_every_request_deploy_builds_passes() -> None:
    scaled = plan(
        component=Component("qwen-peagle-ic", 1, 16384, 1),
        autoscaling=Autoscaling(0, 4, 8.0, "concurrency"),
    )
    for each in (plan(), scaled, plan(autoscaling=Autoscaling(1, 2, 100.0, "invocations"))):
        assert calls.problems(rollout.every_call(each)) == []


def test_made_up_instance_type_fails() -> None:
    call = rollout.steps(plan(instance_type="ml.g7e.3xlarge"), rollout.Existing())[1]
    found = problems_of(call)
    assert len(found) == 1
    assert "CreateEndpointConfig.ProductionVariants[0].InstanceType" in found[0]
    assert "ml.g7e.2xlarge" in found[0]  # the nearest real ones are suggested


def test_64_character_name_fails() -> None:
    call = Call(
        "sagemaker", "CreateEndpoint", {"EndpointName": "a" * 64, "EndpointConfigName": "b"}
    )
    found = problems_of(call)
    # The pattern's {0,62} says the same thing a second way.
    assert (
        found[0] == "CreateEndpoint.EndpointName has 64 characters; EndpointName allows at most 63."
    )
    assert len(found) == 2 and "pattern" in found[1]


def test_channel_name_with_a_space_fails() -> None:
    params = dict(rollout.steps(plan(), rollout.Existing())[0].params)
    container = dict(params["PrimaryContainer"])
    container["AdditionalModelDataSources"] = [
        {**container["AdditionalModelDataSources"][0], "ChannelName": "ea gle"}
    ]
    found = problems_of(Call("sagemaker", "CreateModel", {**params, "PrimaryContainer": container}))
    assert len(found) == 1
    assert "AdditionalModelDataSources[0].ChannelName is 'ea gle'" in found[0]
    assert "pattern" in found[0]


def test_unknown_and_missing_members_and_bounds() -> None:
    found = problems_of(
        Call(
            "sagemaker",
            "CreateEndpointConfig",
            {
                "EndpointConfigName": "c",
                "ProductionVariants": [
                    {
                        "VariantName": "AllTraffic",
                        "InstanceType": "ml.g7e.2xlarge",
                        "VolumeSizeInGb": 10,
                        "ContainerStartupHealthCheckTimeoutInSeconds": 3601,
                        "RoutingConfig": {},
                    }
                ],
            },
        )
    )
    assert any("unknown member VolumeSizeInGb" in f and "VolumeSizeInGB" in f for f in found)
    assert any("ContainerStartupHealthCheckTimeoutInSeconds is 3601" in f for f in found)
    assert any("RoutingConfig has no RoutingStrategy" in f for f in found)
    assert len(found) == 3


def test_list_and_map_sizes() -> None:
    environment = {f"SM_VLLM_X{i}": "1" for i in range(101)}
    params = dict(rollout.steps(plan(), rollout.Existing())[0].params)
    params["PrimaryContainer"] = {**params["PrimaryContainer"], "Environment": environment}
    found = problems_of(Call("sagemaker", "CreateModel", params))
    assert found == [
        "CreateModel.PrimaryContainer.Environment has 101 entries; EnvironmentMap allows at most "
        "100."
    ]


def test_autoscaling_enums_come_from_botocore() -> None:
    found = problems_of(
        Call(
            "application-autoscaling",
            "RegisterScalableTarget",
            {
                "ServiceNamespace": "sagemaker",
                "ResourceId": "endpoint/x/variant/AllTraffic",
                "ScalableDimension": "sagemaker:variant:DesiredCopyCount",
            },
        )
    )
    assert len(found) == 1 and "ScalableDimension" in found[0]


@pytest.mark.parametrize(
    ("pattern", "good", "bad"),
    [
        (r"\p{Print}+", "policy name-1", "tab\there"),
        (r"[\u0020-\uD7FF\uE000-\uFFFD\uD800\uDC00-\uDBFF\uDFFF\r\n\t]*", "a/b😀", "\x01"),
    ],
)
def test_java_patterns_are_translated(pattern: str, good: str, bad: str) -> None:
    regex = shapes.compiled(pattern)
    assert regex is not None
    assert regex.fullmatch(good) and not regex.fullmatch(bad)


def test_every_pattern_deploy_meets_compiles() -> None:
    """No pattern on the requests deploy sends is skipped as untranslatable."""
    session = botocore.session.get_session()
    seen: set[str] = set()

    def walk(shape) -> None:
        if shape.name in seen:
            return
        seen.add(shape.name)
        pattern = shape.metadata.get("pattern")
        if pattern and shape.name not in ("TagKey", "TagValue"):  # deploy sends no tags
            assert shapes.compiled(pattern) is not None, (shape.name, pattern)
        for member in getattr(shape, "members", {}).values():
            walk(member)
        for part in ("member", "key", "value"):
            if hasattr(shape, part):
                walk(getattr(shape, part))

    every = rollout.every_call(
        plan(
            component=Component("c", 1, 1024, 1), autoscaling=Autoscaling(1, 2, 1.0, "concurrency")
        )
    ) + rollout.every_call(plan(autoscaling=Autoscaling(1, 2, 1.0, "invocations")))
    for call in every:
        model = session.get_service_model(call.service).operation_model(call.operation)
        walk(model.input_shape)
