"""The local SageMaker Runtime served in this process, and boto3's client to it."""

from __future__ import annotations

import boto3
from botocore.config import Config

from local_runtime.runtime_routes import Runtime, create_app
from local_runtime.shadow import DEFAULT_SAMPLE_PERCENT, Shadow
from tests.support.in_process import serving


def local_runtime(
    container_url: str,
    shadow_url: str | None = None,
    shadow_sample: float = DEFAULT_SAMPLE_PERCENT,
    **options,
):
    """The runtime on a free loopback port, in this process, for the block's duration; with
    `shadow_url`, mirroring `shadow_sample` percent of the calls to that shadow container
    (`shadow=Shadow(...)` among `options` sets the rest of a shadow's options)."""
    if shadow_url is not None:
        options["shadow"] = Shadow(shadow_url, shadow_sample)
    return serving(create_app(Runtime(container_url, **options)))


def local_client(service: str, url: str):
    """boto3's client for `service` at `url`, a local stand-in (this runtime, moto's S3), with
    dummy credentials and no retries: every call reaches it exactly once."""
    return boto3.client(
        service,
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
        config=Config(retries={"total_max_attempts": 1}, read_timeout=120),
    )


def runtime_client(url: str):
    return local_client("sagemaker-runtime", url)
