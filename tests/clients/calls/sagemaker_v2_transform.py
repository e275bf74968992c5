"""The SageMaker Python SDK v2's local mode: `Model.transformer(instance_type="local")` runs a
Batch Transform against the image with docker compose, as a user tries a job before paying for
one. The SDK's own implementation of the batch protocol: it starts the image with `serve`,
waits for /ping, reads /execution-parameters, splits the input by line, posts each mini-batch
to /invocations and assembles the answers by line.

Arguments: one JSON object, {"image", "model_url" (file:// to a directory holding only
model.tar.gz), "input_url", "output_url", "serving_port", "environment", "content_type"}.
Prints the job's description after the marker (or the error)."""

from __future__ import annotations

import json
import os
import sys
import traceback

os.environ.setdefault("SAGEMAKER_SUPPRESS_V2_WARNING", "1")
# Dummy credentials and a region: local mode calls no AWS service for file:// data.
os.environ.update(
    AWS_ACCESS_KEY_ID="local", AWS_SECRET_ACCESS_KEY="local", AWS_DEFAULT_REGION="us-east-1"
)

from sagemaker.local import LocalSession  # noqa: E402
from sagemaker.model import Model  # noqa: E402

MARKER = "=== client results ==="
ROLE = "arn:aws:iam::111111111111:role/SageMakerRole"  # local mode assumes no role

job = json.loads(sys.argv[1])
try:
    session = LocalSession()
    # vLLM's CPU build needs more shared memory than docker's 64 MiB (the container's
    # preflight says so and stops): local mode's documented setting for container options.
    session.config = {
        "local": {
            "local_code": True,
            "serving_port": job["serving_port"],
            "container_config": {"shm_size": "1g"},
        }
    }
    model = Model(
        image_uri=job["image"],
        model_data=job["model_url"],
        role=ROLE,
        env=job["environment"],
        sagemaker_session=session,
    )
    # No strategy and no payload limit: the SDK takes both from /execution-parameters.
    transformer = model.transformer(
        instance_count=1,
        instance_type="local",
        assemble_with="Line",
        accept="application/jsonlines",
        output_path=job["output_url"],
    )
    # Local mode runs the job inside transform(); logs=False: its log is on stdout already
    # (compose's), and waiting with logs would read them from CloudWatch.
    transformer.transform(
        job["input_url"],
        content_type=job["content_type"],
        split_type="Line",
        wait=True,
        logs=False,
    )
    name = transformer.latest_transform_job.name
    described = session.sagemaker_client.describe_transform_job(name)
    result = {"description": json.loads(json.dumps(described, default=str))}
except BaseException as error:  # noqa: BLE001 - every outcome is reported
    result = {"error": f"{type(error).__name__}: {error}"[:2000], "trace": traceback.format_exc()}
print(MARKER, json.dumps(result), sep="\n")
