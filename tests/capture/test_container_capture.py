"""The container's own capture records: only 200s with a request and an answer are used."""

from __future__ import annotations

import json

import pytest

from capture.container_capture import exchange_of
from capture.types import Skip, Skipped
from tests.support.capture import chat_answer, chat_request, container_line


def test_answered_record() -> None:
    found = exchange_of(json.loads(container_line(chat_request(stream=True), chat_answer())))
    assert found.request == chat_request(stream=True)
    assert found.response == chat_answer()


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (container_line(chat_request(), {"error": {"message": "busy"}}, status=503), "error"),
        (container_line(chat_request(), chat_answer(), status=400), "error"),
        (container_line(chat_request(), None), "missing"),
    ],
)
def test_unusable_record(line: str, reason: str) -> None:
    expected = Skip.ERROR_STATUS if reason == "error" else Skip.MISSING_PAYLOAD
    with pytest.raises(Skipped) as skipped:
        exchange_of(json.loads(line))
    assert skipped.value.reason is expected


def test_request_that_is_not_an_object() -> None:
    record = json.loads(container_line(chat_request(), chat_answer()))
    record["request"] = "What is deep learning?"
    with pytest.raises(Skipped) as skipped:
        exchange_of(record)
    assert skipped.value.reason is Skip.NOT_CHAT
