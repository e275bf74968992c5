"""SageMaker Data Capture lines, written as SageMaker writes them: JSON and BASE64 encodings,
whole JSON answers and text/event-stream answers, and the lines that cannot be used."""

from __future__ import annotations

import base64
import json

import pytest

from capture.sagemaker_capture import exchange_of
from capture.types import Skip, Skipped
from tests.support.capture import METRICS, chat_answer, chat_request, sagemaker_line, vllm_stream

SSE = "text/event-stream"


def exchange(line: str):
    return exchange_of(json.loads(line))


def skip_reason(line: str) -> Skip:
    with pytest.raises(Skipped) as skipped:
        exchange(line)
    return skipped.value.reason


@pytest.mark.parametrize("encoding", ["JSON", "BASE64", None])
def test_json_answer_in_each_encoding(encoding: str | None) -> None:
    found = exchange(sagemaker_line(chat_request(), chat_answer(), encoding=encoding))
    assert found.request == chat_request()
    assert found.response == chat_answer()


@pytest.mark.parametrize("encoding", ["JSON", "BASE64"])
def test_event_stream_answer_is_reassembled(encoding: str) -> None:
    request = chat_request(stream=True)
    line = sagemaker_line(request, vllm_stream(["Deep", " nets."]), encoding, SSE)
    found = exchange(line)
    assert found.request == request
    assert found.response["choices"][0]["message"]["content"] == "Deep nets."
    assert found.response["metrics"] == METRICS


def test_event_stream_recognised_without_its_content_type() -> None:
    line = sagemaker_line(chat_request(), vllm_stream(["ok"]), "BASE64", "application/octet-stream")
    assert exchange(line).response["choices"][0]["message"]["content"] == "ok"


def test_content_type_with_charset() -> None:
    line = sagemaker_line(chat_request(), vllm_stream(["ok"]), "BASE64", f"{SSE}; charset=utf-8")
    assert exchange(line).response["choices"][0]["message"]["content"] == "ok"


def test_non_ascii_survives_base64() -> None:
    request = chat_request("Qu'est-ce que l'apprentissage profond ? 深度学习")
    found = exchange(sagemaker_line(request, chat_answer("Réseaux 🙂"), encoding="BASE64"))
    assert found.request == request
    assert found.response["choices"][0]["message"]["content"] == "Réseaux 🙂"


def replace_data(line: str, side: str, data: str, encoding: str = "BASE64") -> str:
    record = json.loads(line)
    record["captureData"][side].update(data=data, encoding=encoding)
    return json.dumps(record)


@pytest.mark.parametrize(
    ("side", "data", "encoding"),
    [
        ("endpointInput", "not base64 at all!", "BASE64"),
        ("endpointOutput", "eyJjaG9pY2V", "BASE64"),  # cut mid-quantum
        ("endpointInput", base64.b64encode(b"\xff\xfe{}").decode(), "BASE64"),  # not UTF-8
        ("endpointInput", "{}", "PROTOBUF"),
    ],
)
def test_undecodable_data(side: str, data: str, encoding: str) -> None:
    line = replace_data(sagemaker_line(chat_request(), chat_answer()), side, data, encoding)
    assert skip_reason(line) is Skip.BAD_ENCODING


def test_input_only_capture_has_no_answer() -> None:
    assert skip_reason(sagemaker_line(chat_request(), None)) is Skip.MISSING_PAYLOAD


@pytest.mark.parametrize("request_body", [b"5.1,3.5,1.4,0.2", b'["a", "list"]'])
def test_request_that_is_not_a_json_object(request_body: bytes) -> None:
    line = sagemaker_line(request_body, chat_answer(), encoding="BASE64")
    assert skip_reason(line) is Skip.NOT_CHAT


def test_answer_that_is_not_json() -> None:
    line = sagemaker_line(chat_request(), b"0.0254181120544672", "BASE64", "text/csv")
    assert skip_reason(line) is Skip.NOT_CHAT


def test_event_stream_without_chat_chunks() -> None:
    line = sagemaker_line(chat_request(), b'data: {"token": "hi"}\n\n', "BASE64", SSE)
    assert skip_reason(line) is Skip.NOT_CHAT


def test_capture_data_that_is_not_an_object() -> None:
    assert skip_reason(json.dumps({"captureData": "nope"})) is Skip.UNKNOWN_RECORD


def test_a_streamed_tool_call_from_data_capture_exports_as_the_call() -> None:
    """A streamed agent turn as Data Capture stores it (BASE64 event stream): the call's
    arguments, sent in pieces, come back whole, and the export keeps the call."""
    from capture.conversations import conversation_of
    from tests.support.capture import chunk

    tools = [{"type": "function", "function": {"name": "get_time", "parameters": {}}}]
    request = {**chat_request("Time in Oslo?", stream=True), "tools": tools}
    call = {"index": 0, "id": "chatcmpl-tool-9", "type": "function",
            "function": {"name": "get_time", "arguments": ""}}  # fmt: skip
    events = [
        chunk({"role": "assistant", "tool_calls": [call]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": '}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"Oslo"}'}}]}, "tool_calls"),
    ]
    body = "".join(f"data: {json.dumps(event)}\n\n" for event in events) + "data: [DONE]\n\n"
    line = sagemaker_line(request, body.encode(), "BASE64", SSE)
    conversation = conversation_of(exchange(line))
    assert conversation.tools == tuple(tools)
    assert conversation.messages[-1]["tool_calls"] == [
        {"id": "chatcmpl-tool-9", "type": "function",
         "function": {"name": "get_time", "arguments": '{"city": "Oslo"}'}}
    ]  # fmt: skip
