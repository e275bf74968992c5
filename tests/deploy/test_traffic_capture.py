"""deploy --data-capture and --tracing: the endpoint config's DataCaptureConfig and
TracingConfig (botocore 1.44.18), sent as botocore's shapes (a Stubber checks every parameter
of the calls, botocore their shapes) and printed by the dry run as the model accepts them; the
two together, and values SageMaker would refuse, refused before any call."""

from __future__ import annotations

import copy
import dataclasses

import pytest

from deploy import calls, requests
from deploy.calls import Call, operation_model
from deploy.s3 import S3Prefix
from deploy.traffic_capture import JSON_CONTENT_TYPES, DataCapture, Tracing
from tests.deploy.test_endpoint_rollout import PLAIN_CONFIG
from tests.support.cli import fails, run_cli
from tests.support.deploy import (
    deploy_argv,
    deploy_cli,
    parse_json_stream,
)
from tests.support.rollout import ARGS, DEPLOYED, deploys

CAPTURE = ("--data-capture", "s3://models/captures/")
TRACING = ("--tracing", "5")
CAPTURED = {
    "EnableCapture": True,
    "InitialSamplingPercentage": 100,
    # Without the slash: SageMaker writes /<endpoint>/<variant>/yyyy/mm/dd/hh/ under it.
    "DestinationS3Uri": "s3://models/captures",
    "CaptureOptions": [{"CaptureMode": "Input"}, {"CaptureMode": "Output"}],
    "CaptureContentTypeHeader": {"JsonContentTypes": list(JSON_CONTENT_TYPES)},
}
TRACED = {"EnableTracing": True, "InitialSamplingPercentage": 5}


def call_of(printed: dict) -> Call:
    return Call(printed["service"], printed["operation"], printed["parameters"])


def config_with(**members: dict) -> dict:
    return {**copy.deepcopy(PLAIN_CONFIG), **members}


def test_data_capture_reaches_the_endpoint_config(fixed_version) -> None:
    deploys(list(CAPTURE), config_with(DataCaptureConfig=CAPTURED))


def test_capture_percent_samples(fixed_version) -> None:
    sampled = {**CAPTURED, "InitialSamplingPercentage": 20}
    deploys([*CAPTURE, "--capture-percent", "20%"], config_with(DataCaptureConfig=sampled))


def test_tracing_reaches_the_endpoint_config(fixed_version) -> None:
    deploys(list(TRACING), config_with(TracingConfig=TRACED))


def test_tracing_with_its_s3_uri_and_key(fixed_version) -> None:
    options = [*TRACING, "--tracing-s3-uri", "s3://models/traces/", "--tracing-kms-key",
               "alias/traces"]  # fmt: skip
    traced = {
        **TRACED,
        "LargePayloadDeliveryS3Uri": "s3://models/traces",
        "KmsKeyId": "alias/traces",
    }
    deploys(options, config_with(TracingConfig=traced))


@pytest.mark.parametrize("update", [(), ("--update",)], ids=["new", "update"])
@pytest.mark.parametrize(
    "options, member, expected",
    [
        (CAPTURE, "DataCaptureConfig", CAPTURED),
        (TRACING, "TracingConfig", TRACED),
    ],
    ids=["data-capture", "tracing"],
)
def test_the_dry_run_prints_a_config_the_model_accepts(update, options, member, expected) -> None:
    code, out, err = run_cli(deploy_cli, deploy_argv(*ARGS, *options, *update, "--dry-run"))
    assert code == 0, err
    printed = [call_of(call) for call in parse_json_stream(out)]
    [config] = [call for call in printed if call.operation == "CreateEndpointConfig"]
    assert config.params[member] == expected
    other = ({"DataCaptureConfig", "TracingConfig"} - {member}).pop()
    assert other not in config.params
    assert calls.problems(printed) == []


def test_the_model_knows_tracing_and_holds_its_bounds() -> None:
    """The lock's botocore has TracingConfig (1.44.18 added it), and its bounds reach the
    check every request goes through."""
    members = operation_model("sagemaker", "CreateEndpointConfig").input_shape.members
    assert {"DataCaptureConfig", "TracingConfig"} <= set(members)
    over = dataclasses.replace(DEPLOYED, tracing=Tracing(101))
    found = calls.problems([requests.create_endpoint_config(over)])
    assert found == [
        "CreateEndpointConfig.TracingConfig.InitialSamplingPercentage is 101; "
        "SamplingPercentage allows at most 100."
    ]
    under = dataclasses.replace(DEPLOYED, data_capture=DataCapture(S3Prefix("models", ""), -1))
    [problem] = calls.problems([requests.create_endpoint_config(under)])
    assert "DataCaptureConfig.InitialSamplingPercentage is -1" in problem


def test_captured_content_types_are_the_containers() -> None:
    """Every body the container reads or writes is captured as text: JSON, JSON Lines, and
    a stream's event stream."""
    from capture.sagemaker_capture import SSE_CONTENT_TYPE
    from serving.invocations import JSON_MEDIA_TYPES
    from serving.transform import ANSWER_MEDIA_TYPE, JSONLINES_MEDIA_TYPES

    served = {*JSON_MEDIA_TYPES, *JSONLINES_MEDIA_TYPES, ANSWER_MEDIA_TYPE, SSE_CONTENT_TYPE}
    assert set(JSON_CONTENT_TYPES) == served
    assert len(JSON_CONTENT_TYPES) == len(served)


def test_data_capture_and_tracing_together_are_refused_before_any_call() -> None:
    # No --dry-run: deploy_cli's connection fails the test if the command reaches for AWS.
    fails(
        deploy_cli,
        deploy_argv(*ARGS, *CAPTURE, *TRACING),
        "--data-capture and --tracing do not go together",
        "python -m capture export",
    )


@pytest.mark.parametrize(
    "options, fragments",
    [
        (("--data-capture", "https://models.s3.amazonaws.com/captures/"), ("not an S3 prefix",)),
        (("--data-capture", "s3://models/captures"), ("must end in a single /",)),
        ((*TRACING, "--tracing-s3-uri", "models/traces/"), ("--tracing-s3-uri", "S3 prefix")),
        (("--capture-percent", "10"), ("--capture-percent", "only with --data-capture")),
        (("--tracing-s3-uri", "s3://models/t/"), ("--tracing-s3-uri takes effect", "--tracing")),
        ((*TRACING, "--tracing-kms-key", "alias/t"), ("--tracing-kms-key", "--tracing-s3-uri")),
    ],
)
def test_settings_sagemaker_would_refuse_are_refused_first(options, fragments) -> None:
    fails(deploy_cli, deploy_argv(*ARGS, *options), *fragments)


@pytest.mark.parametrize(
    "options",
    [
        ("--tracing", "101"),
        ("--tracing", "-5"),
        ("--tracing", "ten"),
        (*CAPTURE, "--capture-percent", "150%"),
    ],
)
def test_a_percentage_outside_0_to_100_is_refused(capsys, options) -> None:
    code, out, _ = run_cli(deploy_cli, deploy_argv(*ARGS, *options))
    assert code == 2 and not out
    assert "is not a percentage; give e.g. 10%" in capsys.readouterr().err
