"""Error answers in the OpenAI shape vLLM uses, so clients parse ours and the engine's alike."""

from __future__ import annotations

import json
from http import HTTPStatus

from starlette.responses import JSONResponse


def error_body(status: int, message: str, error_type: str | None = None) -> dict:
    return {
        "error": {
            "message": message,
            "type": error_type or HTTPStatus(status).phrase.replace(" ", ""),
            "param": None,
            "code": status,
        }
    }


def error_response(
    status: int, message: str, error_type: str | None = None, headers: dict | None = None
) -> JSONResponse:
    return JSONResponse(
        error_body(status, message, error_type), status_code=status, headers=headers
    )


def sse_error(status: int, message: str, error_type: str | None = None) -> bytes:
    """An error as one server-sent event, for a stream whose 200 was already sent."""
    return f"data: {json.dumps(error_body(status, message, error_type))}\n\n".encode()
