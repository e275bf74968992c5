"""The deploy command sizing the model from the S3 listing when not given --model-gb,
against botocore Stubbers."""

from __future__ import annotations

from tests.support.cli import run_cli
from tests.support.deploy import Stubbed, deploy_argv, deploy_cli


def test_model_size_from_the_s3_listing(fixed_version) -> None:
    stubbed = Stubbed()
    for prefix, size in (("qwen/model/", 30 * 10**9), ("qwen/eagle/", 10**9)):
        stubbed.stubbers["s3"].add_response(
            "list_objects_v2",
            {"Contents": [{"Key": prefix + "model.safetensors", "Size": size}], "KeyCount": 1},
            {"Bucket": "my-bucket", "Prefix": prefix},
        )
    stubbed.sagemaker.add_client_error(
        "describe_endpoint", "AccessDeniedException", "not authorized to DescribeEndpoint"
    )

    code, _, err = run_cli(deploy_cli, deploy_argv(), connect_to=stubbed.connect)

    assert code == 1
    stubbed.assert_done()
    assert "model 31.0 GB: download timeout 920 s, start-up timeout 910 s" in err
