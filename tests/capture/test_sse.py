"""reassemble_sse: a vLLM chat stream back into the chat.completion it streamed."""

from __future__ import annotations

import ast
import json
import random
import sys
from pathlib import Path

import pytest

from serving import sse as streams
from serving.sse import reassemble_sse
from tests.support.capture import METRICS, USAGE, chunk, vllm_stream

PIECES = ["Deep", " learning", " stacks", " layers: é, 🙂."]


def test_vllm_stream_becomes_one_answer() -> None:
    answer = reassemble_sse(vllm_stream(PIECES))
    assert answer is not None
    assert answer["object"] == "chat.completion"
    assert answer["id"] == "chatcmpl-1" and answer["model"] == "/opt/ml/model"
    [choice] = answer["choices"]
    assert choice["message"] == {"role": "assistant", "content": "".join(PIECES)}
    assert choice["finish_reason"] == "stop"
    assert answer["usage"] == USAGE
    assert answer["metrics"] == METRICS


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("size", [1, 2, 7, 64])
def test_a_stream_read_in_pieces_splits_into_the_events_it_holds_whole(
    newline: str, size: int
) -> None:
    body = vllm_stream(PIECES, newline=newline)
    data = body.encode() if isinstance(body, str) else body
    whole = streams.EventSplitter()
    expected = whole.feed(data) + whole.finish()
    pieces = streams.EventSplitter()
    events = [e for i in range(0, len(data), size) for e in pieces.feed(data[i : i + size])]
    assert events + pieces.finish() == expected
    assert [streams.event_data(event) for event in expected][-1] == "[DONE]"
    assert len(expected) == len(PIECES) + 3  # role, the pieces, usage, [DONE]


def test_any_split_of_any_stream_gives_the_events_of_the_whole() -> None:
    generator = random.Random(7)
    for _ in range(2000):
        data = bytes(generator.choice(b"ab\r\n") for _ in range(generator.randrange(40)))
        lf = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        *expected, rest = lf.split(b"\n\n")
        splitter, events, start = streams.EventSplitter(), [], 0
        while start < len(data):
            size = generator.randrange(1, 6)
            events += splitter.feed(data[start : start + size])
            start += size
        tail = splitter.finish()
        if data.endswith(b"\r") and rest == b"":
            # The final CR was held as maybe half of a CRLF: its event is the stream's last.
            expected, rest = expected[:-1], expected[-1] if expected else b""
        assert events == expected, data
        assert tail == ([rest.rstrip(b"\n")] if rest.rstrip(b"\n") else []), data


def test_an_event_past_max_pending_is_dropped_and_the_next_one_kept() -> None:
    splitter = streams.EventSplitter(max_pending=100)
    events = splitter.feed(b"data: " + b"x" * 60)
    events += splitter.feed(b"x" * 60 + b"\n")
    events += splitter.feed(b"x" * 60 + b"\n\ndata: 1\n\ndata: 2")
    assert events == [b"data: 1"]
    assert splitter.finish() == [b"data: 2"]


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
def test_other_line_endings(newline: str) -> None:
    answer = reassemble_sse(vllm_stream(PIECES, newline=newline))
    assert answer is not None and answer["choices"][0]["message"]["content"] == "".join(PIECES)


def test_comments_and_event_fields_are_ignored() -> None:
    body = b": keep-alive\n\nevent: message\n" + vllm_stream(PIECES)
    answer = reassemble_sse(body)
    assert answer is not None and answer["choices"][0]["message"]["content"] == "".join(PIECES)


def test_one_event_over_several_data_lines() -> None:
    text = json.dumps(chunk({"content": "whole"}, "stop"), indent=1)
    body = "\n".join(f"data: {line}" for line in text.splitlines()) + "\n\ndata: [DONE]\n\n"
    answer = reassemble_sse(body.encode())
    assert answer is not None and answer["choices"][0]["message"]["content"] == "whole"


def test_chunks_without_blank_lines_between_them() -> None:
    lines = [f"data: {json.dumps(chunk({'content': piece}))}" for piece in PIECES]
    answer = reassemble_sse(("\n".join(lines) + "\ndata: [DONE]\n").encode())
    assert answer is not None and answer["choices"][0]["message"]["content"] == "".join(PIECES)


def test_only_the_first_choice_is_kept() -> None:
    both = chunk({"content": "first"})
    both["choices"].append({"index": 1, "delta": {"content": "second"}, "finish_reason": None})
    answer = reassemble_sse(f"data: {json.dumps(both)}\n\ndata: [DONE]\n\n".encode())
    assert answer is not None and answer["choices"][0]["message"]["content"] == "first"


def test_stream_cut_short_keeps_what_arrived() -> None:
    body = vllm_stream(PIECES, done=False)
    cut = body[: body.index(b'"stop"') - 40]  # inside the last content chunk
    answer = reassemble_sse(cut)
    assert answer is not None
    assert answer["choices"][0]["message"]["content"] == "".join(PIECES[:-1])
    assert answer["choices"][0]["finish_reason"] is None
    assert "usage" not in answer


def test_error_event_is_kept() -> None:
    body = vllm_stream(["Deep"], done=False) + b'data: {"error": {"message": "boom"}}\n\n'
    answer = reassemble_sse(body)
    assert answer is not None and answer["error"] == {"message": "boom"}
    assert answer["choices"][0]["message"]["content"] == "Deep"


def test_reasoning_under_either_name() -> None:
    chunks = [
        chunk({"role": "assistant", "reasoning_content": "Think"}),
        chunk({"reasoning": "ing."}),
        chunk({"content": "Answer."}, "stop"),
    ]
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    answer = reassemble_sse(body.encode())
    assert answer is not None
    message = answer["choices"][0]["message"]
    assert message == {"role": "assistant", "content": "Answer.", "reasoning": "Thinking."}


def test_tool_call_arguments_are_joined() -> None:
    call = {"index": 0, "id": "call-1", "type": "function", "function": {"name": "f"}}
    chunks = [
        chunk({"role": "assistant", "tool_calls": [call]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"x": '}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]}, "tool_calls"),
    ]
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    answer = reassemble_sse(body.encode())
    assert answer is not None
    message = answer["choices"][0]["message"]
    assert message["content"] is None
    assert message["tool_calls"] == [
        {"id": "call-1", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}}
    ]
    assert answer["choices"][0]["finish_reason"] == "tool_calls"


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"data: [DONE]\n\n",
        json.dumps({"choices": [{"message": {"content": "a whole JSON answer"}}]}).encode(),
        b"data: not json\n\n",
        b'data: ["a list"]\n\n',
        b"\xff\xfe\x00garbage",
    ],
)
def test_no_chat_chunks_is_none(body: bytes) -> None:
    assert reassemble_sse(body) is None


def test_standard_library_only() -> None:
    """The container's capture writer can share this module; the image has no laptop extras."""
    tree = ast.parse(Path(streams.__file__).read_text())
    imported = {
        name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for name in (
            [alias.name for alias in node.names]
            if isinstance(node, ast.Import)
            else [node.module or ""]
        )
    }
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}, imported
