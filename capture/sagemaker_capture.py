"""SageMaker Data Capture records, as SageMaker writes them to S3 under
`<destination>/<endpoint>/<variant>/yyyy/mm/dd/hh/<name>.jsonl`, one line per invocation:

    {"captureData": {
        "endpointInput": {"observedContentType": "application/json", "mode": "INPUT",
                          "data": "...", "encoding": "JSON"},
        "endpointOutput": {"observedContentType": "...", "mode": "OUTPUT",
                           "data": "...", "encoding": "BASE64"}},
     "eventMetadata": {"eventId": "...", "inferenceTime": "2026-11-23T16:20:01Z",
                       "inferenceId": "..."},
     "eventVersion": "0"}

`data` is the payload text itself when the endpoint config's CaptureContentTypeHeader lists
its content type (encoding JSON, or CSV), and base64 of its bytes otherwise (BASE64, the
default). An answer is a chat.completion JSON or, when the request asked for "stream": true
through InvokeEndpoint, the whole text/event-stream body, reassembled here. AWS documents no
capture of InvokeEndpointWithResponseStream answers, and AIPerf's Data Capture loader notes
they are missing (its input may be there alone: missing_payload); the container's own capture
records those. Should such an answer appear as an event-stream body, it is read the same way.

A request of a JSON Lines type (the container's JSON Lines road, serving/transform.py) holds one
request per line, and its answer one answer line per request, in the same order: such a line
holds as many exchanges as the body held records, each read (or skipped) on its own.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from capture.types import Exchange, Skip, Skipped
from serving.sse import reassemble_sse

TEXT_ENCODINGS = ("JSON", "CSV")
SSE_CONTENT_TYPE = "text/event-stream"
# serving/transform.py JSONLINES_MEDIA_TYPES (not imported: that module loads the front);
# tests/capture/test_sagemaker_capture.py holds the two equal.
JSONLINES_CONTENT_TYPES = frozenset(
    {
        "application/jsonlines",
        "application/x-jsonlines",
        "application/jsonl",
        "application/x-ndjson",
    }
)


def is_sagemaker_capture(record: dict[str, Any]) -> bool:
    return "captureData" in record


def payload_bytes(entry: Any) -> tuple[bytes, str]:
    """One endpointInput or endpointOutput entry's payload, and its observed content type."""
    if not isinstance(entry, dict) or not isinstance(entry.get("data"), str):
        raise Skipped(Skip.MISSING_PAYLOAD)
    content_type = str(entry.get("observedContentType") or "")
    encoding = str(entry.get("encoding") or "BASE64").upper()
    if encoding in TEXT_ENCODINGS:
        try:
            return entry["data"].encode("utf-8"), content_type
        except UnicodeEncodeError:  # a lone surrogate escaped in the JSON
            raise Skipped(Skip.BAD_ENCODING) from None
    if encoding != "BASE64":
        raise Skipped(Skip.BAD_ENCODING)
    try:
        return base64.b64decode(entry["data"], validate=True), content_type
    except (binascii.Error, ValueError):
        raise Skipped(Skip.BAD_ENCODING) from None


def json_object(body: bytes) -> dict[str, Any]:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise Skipped(Skip.BAD_ENCODING) from None
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        raise Skipped(Skip.NOT_CHAT) from None
    if not isinstance(parsed, dict):
        raise Skipped(Skip.NOT_CHAT)
    return parsed


def is_event_stream(body: bytes, content_type: str) -> bool:
    # The observed type can be missing or generic; an SSE body starts with a field or comment.
    start = body.lstrip()[:6]
    return content_type.lower().startswith(SSE_CONTENT_TYPE) or start.startswith(
        (b"data:", b"event:", b":")
    )


def answer_of(body: bytes, content_type: str) -> dict[str, Any]:
    """The chat.completion an endpointOutput holds, whole or as a server-sent-event stream."""
    if not is_event_stream(body, content_type):
        return json_object(body)
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        raise Skipped(Skip.BAD_ENCODING) from None
    answer = reassemble_sse(body)
    if answer is None:
        raise Skipped(Skip.NOT_CHAT)
    return answer


def payloads(record: dict[str, Any]) -> tuple[tuple[bytes, str], tuple[bytes, str]]:
    """The request's and the answer's payload, each with its observed content type."""
    capture = record["captureData"]
    if not isinstance(capture, dict):
        raise Skipped(Skip.UNKNOWN_RECORD)
    return payload_bytes(capture.get("endpointInput")), payload_bytes(capture.get("endpointOutput"))


def exchange_of(record: dict[str, Any]) -> Exchange:
    """The one exchange of a line whose request is one JSON document."""
    (request_body, _), (response_body, content_type) = payloads(record)
    return Exchange(json_object(request_body), answer_of(response_body, content_type))


def is_jsonlines(content_type: str) -> bool:
    return content_type.split(";", 1)[0].strip().lower() in JSONLINES_CONTENT_TYPES


def body_lines(body: bytes) -> list[bytes]:
    """A JSON Lines body's records: its non-blank lines, as the container splits them."""
    return [line.strip() for line in body.split(b"\n") if line.strip()]


def is_whole_body_error(answers: list[bytes]) -> bool:
    """One error for the whole body (too large, no records), which answers no record."""
    try:
        return len(answers) == 1 and "error" in json_object(answers[0])
    except Skipped:
        return False


def exchanges_of(record: dict[str, Any]) -> list[Exchange | Skipped]:
    """Every exchange one Data Capture line holds: one, or one per record of a JSON Lines
    body, each record that cannot be used Skipped on its own."""
    (request_body, request_type), (response_body, response_type) = payloads(record)
    if not is_jsonlines(request_type):
        return [Exchange(json_object(request_body), answer_of(response_body, response_type))]
    requests, answers = body_lines(request_body), body_lines(response_body)
    if len(requests) != len(answers):
        raise Skipped(Skip.ERROR_STATUS if is_whole_body_error(answers) else Skip.MISSING_PAYLOAD)
    found: list[Exchange | Skipped] = []
    for request_line, answer_line in zip(requests, answers, strict=True):
        try:
            found.append(Exchange(json_object(request_line), json_object(answer_line)))
        except Skipped as skipped:
            found.append(skipped)
    return found
