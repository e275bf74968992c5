"""The SageMaker Python SDK v3: `Endpoint.invoke` and `invoke_with_response_stream`, pointed
at the local runtime by AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME, as boto3 reads it."""

from __future__ import annotations

import json
import os

from common import ENDPOINT, MAX_TOKENS, MESSAGES, RUNTIME_URL, chat_stream_text, report

os.environ["AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME"] = RUNTIME_URL

from sagemaker.core.resources import Endpoint  # noqa: E402

PAYLOAD = {"messages": MESSAGES, "max_tokens": MAX_TOKENS, "temperature": 0}
endpoint = Endpoint(endpoint_name=ENDPOINT)


def invoke() -> str:
    answer = endpoint.invoke(body=json.dumps(PAYLOAD), content_type="application/json")
    body = answer.body
    body = body.read() if hasattr(body, "read") else body
    return json.loads(body)["choices"][0]["message"]["content"]


def streamed() -> str:
    answer = endpoint.invoke_with_response_stream(
        body=json.dumps({**PAYLOAD, "stream": True}), content_type="application/json"
    )
    raw = b""
    for event in answer.body:
        part = event.get("PayloadPart") if isinstance(event, dict) else None
        raw += part["Bytes"] if part else b""
    return chat_stream_text(raw)


report({"Endpoint.invoke": invoke, "Endpoint.invoke_with_response_stream": streamed})
