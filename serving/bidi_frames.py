"""The frames of a bidirectional-stream session (`/invocations-bidirectional-stream`): what a
client's text frame asks for, and the frames the front sends back. No I/O here.

SageMaker's `InvokeEndpointWithBidirectionalStream` hands each of the client's payload parts
to the container as one WebSocket frame, and each frame the container sends back to the
client as one response payload part. On that, one session carries many requests:

- a request is a text frame holding a JSON object, the payload `/invocations` takes (OpenAI
  chat or completion, TGI), plus an `"id"` of the client's choosing (a string or a number;
  the front numbers a request that has none). Its answer streams unless it says
  `"stream": false`;
- `{"type": "cancel", "id": ...}` stops that request at once; `{"type": "cancel"}` stops
  every request in flight on the session.

Every frame the front sends is a JSON object with the request's `id` and a `type`:
- `chunk`: one event of the answer's stream (`data` is the OpenAI chunk, or TGI's token
  event), in the order the engine sent them;
- `answer`: the whole answer of a request sent with `"stream": false`;
- then exactly one of `done` (with the answer's `usage` and the request's `speculation`),
  `error` (OpenAI's error object, with the HTTP status an `/invocations` call would have
  got) or `cancelled`. A frame the front cannot read gets an `error` whose `id` is null
  when it named none.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from serving.errors import error_body
from serving.invocations import PAYLOAD_KEYS
from serving.json_text import json_text
from serving.tgi import is_tgi

ROUTE = "/invocations-bidirectional-stream"
CANCEL = "cancel"
MAX_ID_CHARS = 256

RequestId = str | int


class FrameProblem(Exception):
    """A frame the session cannot act on: answered with an error frame, the session goes on."""

    def __init__(self, message: str, request_id: RequestId | None = None, status: int = 400):
        super().__init__(message)
        self.message = message
        self.request_id = request_id
        self.status = status


@dataclass(frozen=True)
class Invoke:
    request_id: RequestId | None  # None: the session numbers it
    payload: dict[str, Any]  # without the id


@dataclass(frozen=True)
class Cancel:
    request_id: RequestId | None  # None: every request in flight


def checked_id(value: Any) -> RequestId:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise FrameProblem(
            f"'id' is a JSON {type(value).__name__}; give each request a string or a number."
        )
    if isinstance(value, str) and not 0 < len(value) <= MAX_ID_CHARS:
        raise FrameProblem(f"'id' must be 1 to {MAX_ID_CHARS} characters.")
    return value


def parse(text: str) -> Invoke | Cancel:
    """A client's text frame: a request, or a cancel."""
    try:
        frame = json.loads(text)
    except ValueError as error:
        raise FrameProblem(
            f"the frame is not JSON ({error}); send one JSON object per text frame: a request "
            'payload with an "id", or {"type": "cancel", "id": ...}.'
        ) from None
    except RecursionError:
        raise FrameProblem("the frame nests arrays and objects too deeply to be read.") from None
    if not isinstance(frame, dict):
        raise FrameProblem(f"the frame is a JSON {type(frame).__name__}; send a JSON object.")
    request_id = checked_id(frame["id"]) if "id" in frame else None
    if frame.get("type") == CANCEL:
        return Cancel(request_id)
    if "type" in frame:
        raise FrameProblem(
            f"unknown frame type {str(frame['type'])[:64]!r}; the only control frame is "
            '{"type": "cancel", "id": ...}; a request has no "type".',
            request_id,
        )
    payload = {key: value for key, value in frame.items() if key != "id"}
    return Invoke(request_id, payload)


def streamed(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload as the engine gets it on a session: streamed, with the usage chunk that
    carries the request's speculation, unless the client said `"stream": false`."""
    if payload.get("stream") is False:
        return payload
    if any(key in payload for key in PAYLOAD_KEYS):
        options = payload.get("stream_options")
        options = options if isinstance(options, dict) else {}
        return {**payload, "stream": True, "stream_options": {**options, "include_usage": True}}
    if is_tgi(payload) and isinstance(payload.get("inputs"), str):
        return {**payload, "stream": True}
    return payload  # a TGI batch answers whole; a payload of neither kind is refused later


def _frame(request_id: RequestId | None, kind: str, **fields: Any) -> str:
    return json_text({"id": request_id, "type": kind, **fields})


def _spliced(request_id: RequestId, kind: str, data: str) -> str:
    """A frame carrying the engine's JSON object as it wrote it, not parsed and rewritten;
    anything else it sent goes as a string."""
    head = json_text({"id": request_id, "type": kind})
    data = data.strip()
    if not (data.startswith("{") and data.endswith("}")):
        data = json_text(data)
    return head[:-1] + ', "data": ' + data + "}"


def chunk(request_id: RequestId, data: str) -> str:
    """One event of the answer's stream."""
    return _spliced(request_id, "chunk", data)


def answer(request_id: RequestId, data: str) -> str:
    """The whole answer of a request sent with `"stream": false`."""
    return _spliced(request_id, "answer", data)


def done(request_id: RequestId, usage: dict | None, speculation: dict | None) -> str:
    return _frame(request_id, "done", usage=usage, speculation=speculation)


def error(
    request_id: RequestId | None, status: int, message: str, error_type: str | None = None
) -> str:
    body = error_body(status, message, error_type)
    return _frame(request_id, "error", **body)


def cancelled(request_id: RequestId) -> str:
    return _frame(request_id, "cancelled")
