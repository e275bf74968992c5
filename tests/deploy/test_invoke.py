"""invoke: the chat payload, a whole answer, and a stream split anywhere across PayloadParts."""

from __future__ import annotations

import io
import json
import random

import pytest
from botocore.response import StreamingBody

from deploy.failures import DeployFailed, UsageError
from deploy.invoke import chat_payload, invoke, stream_texts
from serving.sse import DataSplitter
from tests.support.deploy import Stubbed, client

PIECES = ["Deep", " learning", " is", " é", "🙂", " layers."]


def sse_bytes() -> bytes:
    events = [
        "data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": piece}}]})
        for piece in PIECES
    ]
    events.insert(2, ": keep-alive comment")
    return ("\n\n".join(events) + "\n\ndata: [DONE]\n\n").encode()


def split_anywhere(blob: bytes, seed: int) -> list[dict]:
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(blob)), 25))
    parts = [blob[a:b] for a, b in zip([0, *cuts], [*cuts, len(blob)], strict=True)]
    return [{"PayloadPart": {"Bytes": part}} for part in parts]


@pytest.mark.parametrize("seed", range(20))
def test_stream_split_at_arbitrary_bytes(seed: int) -> None:
    assert "".join(stream_texts(split_anywhere(sse_bytes(), seed))) == "".join(PIECES)


def test_stream_byte_by_byte_and_crlf() -> None:
    blob = sse_bytes().replace(b"\n", b"\r\n")
    parts = [{"PayloadPart": {"Bytes": blob[i : i + 1]}} for i in range(len(blob))]
    assert "".join(stream_texts(parts)) == "".join(PIECES)


def test_last_event_without_its_blank_line() -> None:
    buffer = DataSplitter()
    assert buffer.feed(b'data: {"a": 1}') == []
    assert buffer.finish() == ['{"a": 1}']


def test_stream_error_event_and_stream_failure() -> None:
    with pytest.raises(DeployFailed, match="streamed an error"):
        list(stream_texts([{"PayloadPart": {"Bytes": b'data: {"error": {"message": "x"}}\n\n'}}]))
    with pytest.raises(DeployFailed, match="stream failed"):
        list(stream_texts([{"ModelStreamError": {"Message": "boom", "ErrorCode": "E"}}]))


def test_payload_from_prompt_and_file(tmp_path) -> None:
    assert chat_payload("hi", None, 64, 0.3, stream=True) == {
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 64,
        "temperature": 0.3,
        "stream": True,
    }
    path = tmp_path / "payload.json"
    path.write_text('{"messages": [], "max_tokens": 5}')
    assert chat_payload(None, path, None, None, stream=False) == {"messages": [], "max_tokens": 5}
    path.write_text("[1]")
    with pytest.raises(UsageError, match="not an object"):
        chat_payload(None, path, None, None, stream=False)


def test_whole_answer() -> None:
    stubbed = Stubbed(services=("sagemaker-runtime",))
    answer = json.dumps({"choices": [{"message": {"content": "Layers of neurons."}}]}).encode()
    payload = {"messages": [{"role": "user", "content": "What is deep learning?"}]}
    stubbed.stubbers["sagemaker-runtime"].add_response(
        "invoke_endpoint",
        {"Body": StreamingBody(io.BytesIO(answer), len(answer)), "ContentType": "application/json"},
        {
            "EndpointName": "qwen-peagle",
            "ContentType": "application/json",
            "Body": json.dumps(payload),
        },
    )
    out = io.StringIO()
    invoke(stubbed.connection.client("sagemaker-runtime"), "qwen-peagle", payload, out)
    assert out.getvalue() == "Layers of neurons.\n"


def test_streamed_answer_is_printed_as_it_arrives() -> None:
    runtime = client("sagemaker-runtime")
    seen: list[dict] = []

    def fake_stream(**params):
        seen.append(params)
        return {"Body": split_anywhere(sse_bytes(), seed=7)}

    runtime.invoke_endpoint_with_response_stream = fake_stream
    out = io.StringIO()
    invoke(runtime, "qwen-peagle", {"messages": [], "stream": True}, out)
    assert out.getvalue() == "".join(PIECES) + "\n"
    assert seen[0]["Accept"] == "text/event-stream"
