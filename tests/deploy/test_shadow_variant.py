"""shadow, promote and compare against botocore Stubbers: the live endpoint read, every
request with its exact parameters (checked against botocore's model before it is sent), and
the comparison table from CloudWatch's answer."""

from __future__ import annotations

import copy
import json

from botocore.stub import ANY

from tests.support.cli import run_cli
from tests.support.deploy import (
    ACCOUNT_ARN,
    ENDPOINT,
    VERSION,
    VERSIONED,
    WHEN,
    Stubbed,
    deploy_cli,
    endpoint,
    parse_json_stream,
)
from tests.support.rollout import CREATE_MODEL, data_source

LIVE = "qwen-peagle-20250101000000"
SHADOW_MODEL = "qwen-peagle-20250301000000"
NEW_HEAD = "s3://my-bucket/qwen/eagle-v2/"
PRODUCTION_VARIANT = {
    "VariantName": "AllTraffic",
    "ModelName": LIVE,
    "InstanceType": "ml.g7e.2xlarge",
    "InitialInstanceCount": 1,
    "InitialVariantWeight": 1.0,
    "ContainerStartupHealthCheckTimeoutInSeconds": 910,
    "ModelDataDownloadTimeoutInSeconds": 920,
    "InferenceAmiVersion": "al2-ami-sagemaker-inference-gpu-3-1",
}


def described_model(name: str, variant: str, head_uri: str, head_version: str, k: int = 7):
    container = copy.deepcopy(CREATE_MODEL["PrimaryContainer"])
    container["AdditionalModelDataSources"][0]["S3DataSource"] = data_source(head_uri)
    environment = container["Environment"]
    environment["SERVING_VARIANT_NAME"] = variant
    environment["SERVING_HEAD_VERSION"] = head_version
    spec = json.loads(environment["SM_VLLM_SPECULATIVE_CONFIG"])
    environment["SM_VLLM_SPECULATIVE_CONFIG"] = json.dumps({**spec, "num_speculative_tokens": k})
    return {
        "ModelName": name,
        "ModelArn": f"{ACCOUNT_ARN}:model/{name}",
        "PrimaryContainer": container,
        "ExecutionRoleArn": CREATE_MODEL["ExecutionRoleArn"],
        "CreationTime": WHEN,
    }


def shadow_variant(weight: float = 0.5) -> dict:
    return {
        **PRODUCTION_VARIANT,
        "VariantName": "Shadow",
        "ModelName": SHADOW_MODEL,
        "InitialVariantWeight": weight,
    }


def expect_live(stubbed: Stubbed, with_shadow: bool, status: str = "InService") -> None:
    """DescribeEndpoint, DescribeEndpointConfig and each variant's DescribeModel."""
    sagemaker = stubbed.sagemaker
    sagemaker.add_response("describe_endpoint", endpoint(status, LIVE), {"EndpointName": ENDPOINT})
    config = {
        "EndpointConfigName": LIVE,
        "EndpointConfigArn": f"{ACCOUNT_ARN}:endpoint-config/{LIVE}",
        "ProductionVariants": [PRODUCTION_VARIANT],
        "CreationTime": WHEN,
    }
    if with_shadow:
        config["ShadowProductionVariants"] = [shadow_variant()]
    sagemaker.add_response("describe_endpoint_config", config, {"EndpointConfigName": LIVE})
    sagemaker.add_response(
        "describe_model",
        described_model(LIVE, "AllTraffic", "s3://my-bucket/qwen/eagle/", "20250101000000"),
        {"ModelName": LIVE},
    )
    if with_shadow:
        sagemaker.add_response(
            "describe_model",
            described_model(SHADOW_MODEL, "Shadow", NEW_HEAD, "20250301000000", k=11),
            {"ModelName": SHADOW_MODEL},
        )


def expect_update(stubbed: Stubbed) -> None:
    sagemaker = stubbed.sagemaker
    sagemaker.add_response(
        "update_endpoint",
        {"EndpointArn": f"{ACCOUNT_ARN}:endpoint/{ENDPOINT}"},
        {"EndpointName": ENDPOINT, "EndpointConfigName": VERSIONED},
    )
    sagemaker.add_response("describe_endpoint", endpoint("Updating", LIVE))
    sagemaker.add_response("describe_endpoint", endpoint("InService", VERSIONED))


def test_shadow_adds_the_new_head_beside_production(fixed_version) -> None:
    stubbed = Stubbed()
    expect_live(stubbed, with_shadow=False)
    shadow_model = described_model(VERSIONED, "Shadow", NEW_HEAD, VERSION, k=11)
    del shadow_model["ModelArn"], shadow_model["CreationTime"]
    stubbed.sagemaker.add_response(
        "create_model", {"ModelArn": f"{ACCOUNT_ARN}:model/x"}, shadow_model
    )
    stubbed.sagemaker.add_response(
        "create_endpoint_config",
        {"EndpointConfigArn": f"{ACCOUNT_ARN}:endpoint-config/x"},
        {
            "EndpointConfigName": VERSIONED,
            "ProductionVariants": [PRODUCTION_VARIANT],
            # Half of production's weight: half of the live requests are copied to it.
            "ShadowProductionVariants": [
                {**shadow_variant(0.5), "ModelName": VERSIONED},
            ],
        },
    )
    expect_update(stubbed)

    code, out, err = run_cli(
        deploy_cli,
        ["shadow", "--name", ENDPOINT, "--head-uri", NEW_HEAD, "--k", "11", "--sample", "50%"],
        connect_to=stubbed.connect,
    )

    assert code == 0, err
    stubbed.assert_done()
    assert f"endpoint {ENDPOINT} is in service on {VERSIONED}" in out


def test_a_second_shadow_is_refused_before_any_change(fixed_version) -> None:
    stubbed = Stubbed()
    expect_live(stubbed, with_shadow=True)

    code, _, err = run_cli(
        deploy_cli,
        ["shadow", "--name", ENDPOINT, "--head-uri", NEW_HEAD],
        connect_to=stubbed.connect,
    )

    assert code == 2
    stubbed.assert_done()  # read only: no CreateModel, no UpdateEndpoint was queued or sent
    assert f"already has a shadow variant (model {SHADOW_MODEL})" in err
    assert "`promote` it or `shadow --remove` it first" in err


def test_shadow_remove_keeps_production_as_it_is(fixed_version) -> None:
    stubbed = Stubbed()
    expect_live(stubbed, with_shadow=True)
    stubbed.sagemaker.add_response(
        "create_endpoint_config",
        {"EndpointConfigArn": f"{ACCOUNT_ARN}:endpoint-config/x"},
        {"EndpointConfigName": VERSIONED, "ProductionVariants": [PRODUCTION_VARIANT]},
    )
    expect_update(stubbed)

    code, _, err = run_cli(
        deploy_cli, ["shadow", "--name", ENDPOINT, "--remove"], connect_to=stubbed.connect
    )

    assert code == 0, err
    stubbed.assert_done()


def test_promote_serves_the_shadows_head_and_k_in_production(fixed_version) -> None:
    stubbed = Stubbed()
    expect_live(stubbed, with_shadow=True)
    # The shadow's model, now named as the production variant, keeping its head version.
    promoted = described_model(VERSIONED, "AllTraffic", NEW_HEAD, "20250301000000", k=11)
    del promoted["ModelArn"], promoted["CreationTime"]
    stubbed.sagemaker.add_response("create_model", {"ModelArn": f"{ACCOUNT_ARN}:model/x"}, promoted)
    stubbed.sagemaker.add_response(
        "create_endpoint_config",
        {"EndpointConfigArn": f"{ACCOUNT_ARN}:endpoint-config/x"},
        {
            "EndpointConfigName": VERSIONED,
            "ProductionVariants": [{**PRODUCTION_VARIANT, "ModelName": VERSIONED}],
        },
    )
    expect_update(stubbed)

    code, _, err = run_cli(deploy_cli, ["promote", "--name", ENDPOINT], connect_to=stubbed.connect)

    assert code == 0, err
    stubbed.assert_done()


def test_promote_without_a_shadow_says_how_to_add_one(fixed_version) -> None:
    stubbed = Stubbed()
    expect_live(stubbed, with_shadow=False)

    code, _, err = run_cli(deploy_cli, ["promote", "--name", ENDPOINT], connect_to=stubbed.connect)

    assert code == 2
    assert "no shadow variant to promote; add one with `shadow --head-uri ...`" in err


def test_shadow_dry_run_reads_the_endpoint_and_prints_the_changes(fixed_version) -> None:
    stubbed = Stubbed()
    expect_live(stubbed, with_shadow=False)

    code, out, err = run_cli(
        deploy_cli,
        ["shadow", "--name", ENDPOINT, "--head-uri", NEW_HEAD, "--dry-run"],
        connect_to=stubbed.connect,
    )

    assert code == 0, err
    stubbed.assert_done()  # only the Describe calls were answered, and nothing else was sent
    printed = parse_json_stream(out)
    assert [call["operation"] for call in printed] == [
        "CreateModel",
        "CreateEndpointConfig",
        "UpdateEndpoint",
    ]
    shadow = printed[1]["parameters"]["ShadowProductionVariants"][0]
    assert (shadow["VariantName"], shadow["InitialVariantWeight"]) == ("Shadow", 0.5)
    assert "changed nothing" in err


def test_shadow_on_an_inference_component_endpoint_is_refused(fixed_version) -> None:
    stubbed = Stubbed()
    stubbed.sagemaker.add_response("describe_endpoint", endpoint("InService", LIVE))
    variant = {key: value for key, value in PRODUCTION_VARIANT.items() if key != "ModelName"}
    stubbed.sagemaker.add_response(
        "describe_endpoint_config",
        {
            "EndpointConfigName": LIVE,
            "EndpointConfigArn": f"{ACCOUNT_ARN}:endpoint-config/x",
            "ProductionVariants": [variant],
            "CreationTime": WHEN,
        },
    )

    code, _, err = run_cli(
        deploy_cli,
        ["shadow", "--name", ENDPOINT, "--head-uri", NEW_HEAD],
        connect_to=stubbed.connect,
    )

    assert code == 2
    assert "hosts its model as an inference component" in err


def results(prefix: str, length: list[float], positions: list[list[float]], latency: float):
    found = [{"Id": f"{prefix}_length", "Values": length}]
    found += [
        {"Id": f"{prefix}_position{k}", "Values": values}
        for k, values in enumerate(positions, start=1)
    ]
    found += [
        {"Id": f"{prefix}_tokens", "Values": [40.0, 42.0, 41.0]},
        {"Id": f"{prefix}_latency", "Values": [latency * 1000] * 3},
        {"Id": f"{prefix}_requests", "Values": [20.0, 22.0, 21.0]},
    ]
    return [{**result, "StatusCode": "Complete", "Timestamps": [WHEN] * len(result["Values"])}
            for result in found]  # fmt: skip


def test_compare_reads_both_variants_from_cloudwatch_and_tells_them_apart(fixed_version) -> None:
    stubbed = Stubbed()
    expect_live(stubbed, with_shadow=True)
    good = results("p", [3.4, 3.6, 3.5], [[0.9, 0.92, 0.91]] * 11, latency=800.0)
    bad = results("s", [1.02, 1.0, 1.01], [[0.01, 0.0, 0.02]] * 11, latency=1500.0)
    stubbed.cloudwatch.add_response(
        "get_metric_data",
        {"MetricDataResults": good + bad},
        {
            "MetricDataQueries": ANY,
            "StartTime": ANY,
            "EndTime": ANY,
            "ScanBy": "TimestampAscending",
        },
    )

    code, out, err = run_cli(
        deploy_cli, ["compare", "--name", ENDPOINT, "--minutes", "30"], connect_to=stubbed.connect
    )

    assert code == 0, err
    stubbed.assert_done()
    rows = {line.split("|")[1].strip(): line for line in out.splitlines() if line.startswith("|")}
    # K=7 in production and 11 in the shadow: positions up to 11.
    assert "acceptance at position 11" in rows
    length = [cell.strip() for cell in rows["mean acceptance length"].split("|")[1:-1]]
    assert length[1].startswith("3.50 ± ") and length[2].startswith("1.01 ± ")
    assert length[3] == f"{1.01 / 3.5:.3f}" and length[4] == "yes: shadow worse"
    assert "yes: shadow worse" in rows["model latency, mean (ms)"]
    assert "worse (mean acceptance length, beyond the noise): do not promote it" in out
    assert "head s3://my-bucket/qwen/eagle-v2/ (version 20250301000000), K=11" in out
