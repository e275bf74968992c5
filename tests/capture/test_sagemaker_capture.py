"""SageMaker Data Capture lines, written as SageMaker writes them: JSON and BASE64 encodings,
whole JSON answers, text/event-stream answers and JSON Lines bodies (an exchange per record),
and the lines that cannot be used."""

from __future__ import annotations

import base64
import json

import pytest

from capture.sagemaker_capture import exchange_of, exchanges_of
from capture.types import Skip, Skipped
from tests.support.capture import (
    METRICS,
    capture_entry,
    chat_answer,
    chat_request,
    sagemaker_line,
    vllm_stream,
)

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


def test_json_lines_types_are_the_containers() -> None:
    from capture.sagemaker_capture import JSONLINES_CONTENT_TYPES
    from serving.transform import JSONLINES_MEDIA_TYPES

    assert JSONLINES_CONTENT_TYPES == JSONLINES_MEDIA_TYPES


def jsonlines_line(requests: list[bytes], answers: list[bytes], encoding: str = "JSON") -> str:
    """A Data Capture line of a JSON Lines body and the container's answer to it."""
    body, answer = b"\n".join(requests) + b"\n", b"\n".join(answers) + b"\n"
    record = {
        "captureData": {
            "endpointInput": capture_entry(body, "INPUT", "application/jsonlines", encoding),
            "endpointOutput": capture_entry(answer, "OUTPUT", "application/jsonlines", encoding),
        },
        "eventMetadata": {"eventId": "e", "inferenceTime": "2026-12-07T14:00:01Z"},
        "eventVersion": "0",
    }
    return json.dumps(record, separators=(",", ":"))


ERROR_LINE = b'{"error": {"message": "overloaded", "type": "EngineUnavailable", "code": 503}}'


@pytest.mark.parametrize("encoding", ["JSON", "BASE64"])
def test_a_json_lines_body_holds_an_exchange_per_record(encoding: str) -> None:
    questions = [chat_request("One?"), chat_request("Two?"), chat_request("Three?")]
    requests = [json.dumps(question).encode() for question in questions] + [b"not json"]
    answers = [json.dumps(chat_answer("1.")).encode(), ERROR_LINE]
    answers += [json.dumps(chat_answer("3.")).encode(), ERROR_LINE]
    found = exchanges_of(json.loads(jsonlines_line(requests, answers, encoding)))
    assert [item.request for item in found[:3]] == questions
    assert found[0].response == chat_answer("1.")
    assert found[1].response["error"]["code"] == 503  # the export counts it as error_status
    assert isinstance(found[3], Skipped) and found[3].reason is Skip.NOT_CHAT


def test_a_json_lines_body_without_an_answer_per_record() -> None:
    requests = [json.dumps(chat_request(q)).encode() for q in ("One?", "Two?")]
    cut_short = jsonlines_line(requests, [json.dumps(chat_answer()).encode()])
    assert skip_reason_of(cut_short) is Skip.MISSING_PAYLOAD
    refused_whole = jsonlines_line(requests, [ERROR_LINE])
    assert skip_reason_of(refused_whole) is Skip.ERROR_STATUS


def skip_reason_of(line: str) -> Skip:
    with pytest.raises(Skipped) as skipped:
        exchanges_of(json.loads(line))
    return skipped.value.reason


def test_a_one_request_line_is_one_exchange() -> None:
    [found] = exchanges_of(json.loads(sagemaker_line(chat_request(), chat_answer())))
    assert found == exchange(sagemaker_line(chat_request(), chat_answer()))
