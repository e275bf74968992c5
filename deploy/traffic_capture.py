"""What SageMaker keeps of the endpoint's requests and answers, as botocore 1.44.18's
endpoint config takes it: `--data-capture` (`DataCaptureConfig`) or `--tracing`
(`TracingConfig`), never both.

- Data capture writes a sample of the requests and answers to S3, one JSON line per
  invocation under `<uri>/<endpoint>/<variant>/yyyy/mm/dd/hh/`: what `python -m capture
  export` turns into a training set for a head trained on your own traffic.
- Tracing sends a sample of them to CloudWatch Logs (`/aws/sagemaker/Endpoints/<name>/traces`),
  payloads over 512 KiB cut short unless an S3 URI takes them whole: what SageMaker's Model
  Monitor configs evaluate.

botocore's model says tracing does not go with data capture, serverless variants or
multi-model endpoints; deploy makes neither of the last two.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deploy.s3 import S3Prefix

# The bodies the container reads and writes, captured as text (encoding JSON) rather than
# base64: JSON requests and answers (serving/invocations.py JSON_MEDIA_TYPES), a
# "stream": true answer through InvokeEndpoint, and JSON Lines bodies and their answers
# (serving/transform.py JSONLINES_MEDIA_TYPES). Kept here, not imported, so deploy does not
# load the front; tests/deploy/test_traffic_capture.py holds them to the container's.
JSON_CONTENT_TYPES = (
    "application/json",
    "text/json",
    "text/event-stream",
    "application/jsonlines",
    "application/x-jsonlines",
    "application/jsonl",
    "application/x-ndjson",
)
# Every request, by default: a head learns from the traffic it sees, and a 1% sample of a
# quiet endpoint is little to train on. Lower it with --capture-percent on a busy one.
DEFAULT_CAPTURE_PERCENT = 100


def location(prefix: S3Prefix) -> str:
    """An S3 prefix as SageMaker takes a destination: without the trailing slash, since it
    writes its own `/<endpoint>/...` (or object names) under it."""
    return prefix.uri.rstrip("/")


@dataclass(frozen=True)
class DataCapture:
    """Requests and answers to S3 (for `python -m capture export` and head training)."""

    destination: S3Prefix
    percent: int = DEFAULT_CAPTURE_PERCENT

    def request(self) -> dict[str, Any]:
        """The endpoint config's DataCaptureConfig: both sides of each sampled invocation."""
        return {
            "EnableCapture": True,
            "InitialSamplingPercentage": self.percent,
            "DestinationS3Uri": location(self.destination),
            "CaptureOptions": [{"CaptureMode": "Input"}, {"CaptureMode": "Output"}],
            "CaptureContentTypeHeader": {"JsonContentTypes": list(JSON_CONTENT_TYPES)},
        }


@dataclass(frozen=True)
class Tracing:
    """Requests and answers to CloudWatch Logs (for Model Monitor configs)."""

    percent: int
    # Where payloads over 512 KiB go whole; without it they are cut short in the trace.
    large_payloads: S3Prefix | None = None
    kms_key: str | None = None  # encrypts what goes to large_payloads

    def request(self) -> dict[str, Any]:
        """The endpoint config's TracingConfig."""
        config: dict[str, Any] = {"EnableTracing": True, "InitialSamplingPercentage": self.percent}
        if self.large_payloads is not None:
            config["LargePayloadDeliveryS3Uri"] = location(self.large_payloads)
        if self.kms_key is not None:
            config["KmsKeyId"] = self.kms_key
        return config
