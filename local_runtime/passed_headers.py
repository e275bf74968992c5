"""Which headers SageMaker passes between the client and the container, both ways."""

from __future__ import annotations

from collections.abc import Mapping

# Request headers SageMaker hands to the container as they came from the client.
TO_CONTAINER = (
    "content-type",
    "accept",
    "x-amzn-sagemaker-custom-attributes",
    "x-amzn-sagemaker-inference-id",
    "x-amzn-sagemaker-target-variant",
    "x-amzn-sagemaker-target-model",
    "x-amzn-sagemaker-session-id",
    "x-amzn-sagemaker-inference-component",
)
# The stream call names the client's Accept this way; the container sees it as Accept.
STREAM_ACCEPT = "x-amzn-sagemaker-accept"
# Response headers of the container that reach the client.
TO_CLIENT = (
    "x-amzn-sagemaker-custom-attributes",
    "x-amzn-sagemaker-new-session-id",
    "x-amzn-sagemaker-closed-session-id",
)
DEFAULT_VARIANT = "AllTraffic"
# SageMaker's limit on the custom attributes header.
CUSTOM_ATTRIBUTES_MAX = 1024


def to_container(client_headers: Mapping[str, str], stream: bool) -> dict[str, str]:
    headers = {name: client_headers[name] for name in TO_CONTAINER if name in client_headers}
    if stream:
        headers.pop("accept", None)
        if STREAM_ACCEPT in client_headers:
            headers["accept"] = client_headers[STREAM_ACCEPT]
    return headers


def to_client(
    container_headers: Mapping[str, str], client_headers: Mapping[str, str], request_id: str
) -> dict[str, str]:
    headers = {name: container_headers[name] for name in TO_CLIENT if name in container_headers}
    headers["x-Amzn-Invoked-Production-Variant"] = client_headers.get(
        "x-amzn-sagemaker-target-variant", DEFAULT_VARIANT
    )
    headers["x-amzn-RequestId"] = request_id
    return headers
