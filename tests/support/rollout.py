"""What every deploy rollout test expects: the endpoint not found yet, the CreateModel
request with its exact parameters, and the command line's sizing and environment options."""

from __future__ import annotations

from tests.support.deploy import (
    ENDPOINT,
    HEAD_URI,
    IMAGE,
    ROLE,
    SPEC,
    TARGET_URI,
    VERSIONED,
    client_error,
)

NOT_FOUND = client_error("ValidationException", 'Could not find endpoint "qwen-peagle".')


def data_source(uri: str) -> dict:
    return {"S3Uri": uri, "S3DataType": "S3Prefix", "CompressionType": "None"}


CREATE_MODEL = {
    "ModelName": VERSIONED,
    "PrimaryContainer": {
        "Image": IMAGE,
        "ModelDataSource": {"S3DataSource": data_source(TARGET_URI)},
        "AdditionalModelDataSources": [
            {"ChannelName": "eagle", "S3DataSource": data_source(HEAD_URI)}
        ],
        "Environment": {
            "SM_VLLM_SPECULATIVE_CONFIG": SPEC,
            "SERVING_ENDPOINT_NAME": ENDPOINT,
            "SERVING_VARIANT_NAME": "AllTraffic",
            "SM_VLLM_MAX_MODEL_LEN": "32768",
        },
    },
    "ExecutionRoleArn": ROLE,
}
ARGS = (
    "--model-gb", "31",
    "--env", "SM_VLLM_MAX_MODEL_LEN=32768",
    # An AMI with driver 550 runs an image on the CUDA 12.9 base.
    "--image-cuda", "12.9",
    "--inference-ami-version", "al2-ami-sagemaker-inference-gpu-3-1",
)  # fmt: skip
