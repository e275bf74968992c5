"""Error answers in the OpenAI shape vLLM uses, so clients parse ours and the engine's alike."""

from __future__ import annotations

import json
from http import HTTPStatus

from starlette.responses import JSONResponse


def status_type(status: int) -> str:
    """`NotFound` for 404; statuses outside the standard list (nginx's 499) get a generic name."""
    try:
        return HTTPStatus(status).phrase.replace(" ", "")
    except ValueError:
        return "ClientClosedRequest" if status == 499 else "Error"


def error_body(status: int, message: str, error_type: str | None = None) -> dict:
    return {
        "error": {
            "message": message,
            "type": error_type or status_type(status),
            "param": None,
            "code": status,
        }
    }


def engine_error(status: int, body: bytes) -> dict:
    """The engine's error answer in the OpenAI shape: as it came when it has that shape (vLLM's
    do), else its message, or its first 512 bytes, wrapped in it. The one reading of an engine
    error, for every road that writes one its own way."""
    try:
        parsed = json.loads(body)
    except ValueError:
        parsed = None
    error = parsed.get("error", parsed) if isinstance(parsed, dict) else None
    if isinstance(error, dict) and error.get("message"):
        if error is parsed:  # vLLM's older shape: the error's fields at the top
            return error_body(status, str(error["message"]), error.get("type"))
        return parsed
    text = body[:512].decode(errors="replace").strip()
    return error_body(status, text or f"the engine answered {status}.")


class JsonAnswer(JSONResponse):
    """A JSON answer of the front's own, ending in a newline like vLLM's relayed ones: clients
    that read answers line by line (LangChain's SagemakerEndpoint) wait for one forever."""

    def render(self, content: object) -> bytes:
        # Starlette's rendering; a message may quote a client's value, lone surrogates and
        # all, which UTF-8 writes only as the escape the client sent (serving/json_text.py).
        text = json.dumps(content, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        return text.encode("utf-8", "backslashreplace") + b"\n"


def error_response(
    status: int, message: str, error_type: str | None = None, headers: dict | None = None
) -> JSONResponse:
    return JsonAnswer(error_body(status, message, error_type), status_code=status, headers=headers)


def sse_error(status: int, message: str, error_type: str | None = None) -> bytes:
    """An error as one server-sent event, for a stream whose 200 was already sent."""
    return f"data: {json.dumps(error_body(status, message, error_type))}\n\n".encode()


class RequestRefused(Exception):
    """A request the front answers itself: `status` and `message` are the client's answer."""

    def __init__(self, status: int, message: str):
        self.status = status
        self.message = message
        super().__init__(message)


class AnswerCut(Exception):
    """The engine's answer broke off after its status line was sent to the client.

    The only honest thing left is to abort the client's connection, so that a cut
    answer never reads as a complete one.
    """
