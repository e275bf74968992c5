"""The container's own capture records, one JSON object per line:

    {"request_id": "...", "time": "2026-11-23T16:20:01.123Z", "route": "/invocations",
     "status": 200, "request": {chat-completion request body},
     "response": {chat.completion; a streamed answer already reassembled into this shape},
     "timings": {"latency_ms": 12.3}, "speculation": {"mean_acceptance_length": 2.9} or null}

Only the request and the response reach the training set.
"""

from __future__ import annotations

from typing import Any

from capture.types import Exchange, Skip, Skipped

OK = 200


def is_container_capture(record: dict[str, Any]) -> bool:
    return "request" in record and "response" in record


def exchange_of(record: dict[str, Any]) -> Exchange:
    if record.get("status") != OK:
        raise Skipped(Skip.ERROR_STATUS)
    request, response = record["request"], record["response"]
    if not isinstance(request, dict):
        raise Skipped(Skip.NOT_CHAT)
    if not isinstance(response, dict):
        raise Skipped(Skip.MISSING_PAYLOAD)
    return Exchange(request, response)
