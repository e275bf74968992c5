"""What /invocations accepts: a JSON body, routed to vLLM's chat or completion API."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request

# vLLM's own /invocations takes both payload kinds and applies SageMaker's session
# (X-Amzn-SageMaker-Session-Id) and adapter (X-Amzn-SageMaker-Adapter-Identifier) rules.
ENGINE_PATH = "/invocations"
# Keys that mark a payload vLLM's /invocations accepts: chat, completion, session control.
PAYLOAD_KEYS = ("messages", "prompt", "requestType")
JSON_MEDIA_TYPES = {"application/json", "text/json"}


class PayloadError(Exception):
    def __init__(self, status: int, message: str):
        self.status = status
        self.message = message
        super().__init__(message)


def check_content_type(content_type: str | None) -> None:
    """Absent means JSON (curl and boto3 users often leave it out); anything else must be JSON."""
    if not content_type:
        return
    media_type = content_type.split(";", 1)[0].strip().lower()
    if media_type in JSON_MEDIA_TYPES or media_type.endswith("+json") or media_type == "*/*":
        return
    raise PayloadError(
        415,
        f"Content-Type {media_type!r} is not supported; send the payload as application/json.",
    )


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refused with 413 as soon as it is known to exceed `limit` bytes."""
    declared = request.headers.get("content-length")
    too_large = PayloadError(
        413,
        f"payload is larger than the {limit / 1024 / 1024:g} MB limit "
        "(SAGEMAKER_MAX_PAYLOAD_IN_MB); send a smaller request.",
    )
    if declared and declared.isdigit() and int(declared) > limit:
        raise too_large
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_large
        chunks.append(chunk)
    return b"".join(chunks)


def parse_json_object(body: bytes) -> dict[str, Any]:
    try:
        payload = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise PayloadError(400, f"request body is not valid JSON: {error}.") from None
    if not isinstance(payload, dict):
        raise PayloadError(
            400, f"request body is a JSON {type(payload).__name__}; send a JSON object."
        )
    return payload


def route(payload: dict[str, Any], served_model_name: str) -> tuple[str, dict[str, Any]]:
    """The engine path for a payload, and the payload with `model` filled in."""
    if not any(key in payload for key in PAYLOAD_KEYS):
        raise PayloadError(
            400,
            "payload has neither 'messages' nor 'prompt'; send an OpenAI chat-completion payload "
            '({"messages": [{"role": "user", "content": "..."}]}) or a completion payload '
            '({"prompt": "..."}).',
        )
    if "requestType" not in payload and not payload.get("model"):
        payload = {**payload, "model": served_model_name}
    return ENGINE_PATH, payload
