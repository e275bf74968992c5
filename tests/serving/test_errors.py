"""The engine's error answers, read once for every road (serving/errors.py)."""

from __future__ import annotations

import json

import pytest

from serving.errors import engine_error

OPENAI = {
    "error": {
        "message": "max_tokens is too large",
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    }
}


@pytest.mark.parametrize(
    "status, body, message, error_type",
    [
        # vLLM's shape passes as it came.
        (400, json.dumps(OPENAI).encode(), "max_tokens is too large", "BadRequestError"),
        # The older shape, its fields at the top.
        (400, b'{"object": "error", "message": "bad", "type": "X"}', "bad", "X"),
        # Not JSON, or JSON without a message: the text itself, cut at 512 bytes.
        (502, b"Bad Gateway", "Bad Gateway", "BadGateway"),
        (500, b"x" * 600, "x" * 512, "InternalServerError"),
        (500, b'{"detail": "oops"}', '{"detail": "oops"}', "InternalServerError"),
        (500, b'{"error": "flat"}', '{"error": "flat"}', "InternalServerError"),
        # Nothing at all still says what happened.
        (503, b"", "the engine answered 503.", "ServiceUnavailable"),
    ],
)
def test_an_engine_error_is_always_the_openai_shape_with_a_message(
    status, body, message, error_type
):
    error = engine_error(status, body)["error"]
    assert (error["message"], error["type"]) == (message, error_type)


def test_an_openai_shaped_error_keeps_every_field():
    assert engine_error(400, json.dumps(OPENAI).encode()) == OPENAI
