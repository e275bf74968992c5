"""The inference AMI decides the host's NVIDIA driver: `deploy` chooses one whose driver runs
the image's CUDA release, and refuses an explicit one whose driver does not."""

from __future__ import annotations

import pytest

from deploy.inputs import sagemaker_enum
from deploy.plan import DEFAULT_IMAGE_CUDA
from serving.preflight.cuda_driver import AMI_DRIVERS
from tests.support.cli import fails, run_cli
from tests.support.deploy import deploy_argv, deploy_cli, parse_json_stream

DRY = ("--model-gb", "31", "--dry-run")


def endpoint_config_ami(*extra: str) -> str | None:
    code, out, err = run_cli(deploy_cli, deploy_argv(*DRY, *extra))
    assert code == 0, err
    (config,) = [r for r in parse_json_stream(out) if r["operation"] == "CreateEndpointConfig"]
    return config["parameters"]["ProductionVariants"][0].get("InferenceAmiVersion")


def test_the_default_image_gets_the_ami_with_driver_580():
    assert DEFAULT_IMAGE_CUDA == "13.0"
    assert endpoint_config_ami() == "al2023-ami-sagemaker-inference-gpu-4-1"


def test_an_image_on_cuda_12_9_gets_the_newest_ami():
    assert endpoint_config_ami("--image-cuda", "12.9") == "al2023-ami-sagemaker-inference-gpu-4-1"


@pytest.mark.parametrize(
    "ami", ["al2-ami-sagemaker-inference-gpu-3-1", "al2-ami-sagemaker-inference-gpu-2"]
)
def test_an_ami_whose_driver_is_too_old_for_the_image_is_refused(ami):
    fails(
        deploy_cli,
        deploy_argv(*DRY, "--inference-ami-version", ami),
        f"--inference-ami-version {ami} carries NVIDIA driver",
        "needs driver 580.65.6 or newer",
        "al2023-ami-sagemaker-inference-gpu-4-1",
        "v0.32.0-cu129",
    )


def test_the_same_ami_is_taken_for_an_image_it_can_run():
    ami = "al2-ami-sagemaker-inference-gpu-3-1"
    assert endpoint_config_ami("--image-cuda", "12.9", "--inference-ami-version", ami) == ami


def test_the_driver_table_names_only_amis_botocore_knows():
    assert set(AMI_DRIVERS) <= set(sagemaker_enum("ProductionVariantInferenceAmiVersion"))
