"""Every road to the engine is one exchange (serving/exchange.py): a whole HTTP answer, a
Batch Transform record and a request of a bidirectional-stream session are each captured
with their acceptance and get an access line with their tokens and acceptance, alike."""

from __future__ import annotations

import json
import re
import time

import httpx

from tests.support.bidi import open_session, send, until_ended
from tests.support.containers import CAPTURE_DIR

CHAT = {
    "messages": [{"role": "user", "content": "def reverse(s):"}],
    "max_tokens": 16,
    "temperature": 0,
}
OTHER_CHAT = {**CHAT, "messages": [{"role": "user", "content": "import os"}]}


def captured(request_ids: set[str], seconds: float = 20) -> dict[str, dict]:
    """The capture lines of `request_ids`, once the writer has them all."""
    deadline = time.monotonic() + seconds
    while True:
        lines = {
            line["request_id"]: line
            for path in sorted(CAPTURE_DIR.glob("capture-*.jsonl"))
            for line in map(json.loads, path.read_text().splitlines())
            if line["request_id"] in request_ids
        }
        if lines.keys() == request_ids or time.monotonic() > deadline:
            return lines
        time.sleep(0.2)


def access_lines(container, start: int, request_ids: set[str]) -> dict[str, re.Match]:
    """The access lines of `request_ids` the container logged after `start`."""
    pattern = re.compile(
        r"serving\.access: (?P<id>\S+) (?P<method>\S+) (?P<path>\S+) (?P<status>\S+) "
        r"[\d.]+ms tokens=(?P<tokens>\S+) acceptance=(?P<acceptance>\S+)"
    )
    deadline = time.monotonic() + 10
    while True:
        found = {
            match["id"]: match
            for match in pattern.finditer(container.log_text()[start:])
            if match["id"] in request_ids
        }
        if found.keys() == request_ids or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def assert_captured_and_logged(
    line: dict, access: re.Match, sent: dict, message: dict, tokens: int
) -> None:
    """The capture line holds the request and the answer the client got; the access line,
    its tokens and acceptance; both the request's own speculation."""
    assert line["request"]["messages"] == sent["messages"]
    assert line["response"]["choices"][0]["message"]["content"] == message["content"]
    assert line["speculation"]["num_draft_tokens"] > 0
    assert access["status"] == "200"
    assert int(access["tokens"]) == tokens
    assert float(access["acceptance"]) == round(line["speculation"]["mean_acceptance_length"], 2)


def test_a_whole_http_answer_is_captured_and_logged(peagle):
    start = len(peagle.log_text())
    answer = httpx.post(
        f"{peagle.url}/invocations", json=CHAT, timeout=120,
        headers={"X-Amzn-SageMaker-Inference-Id": "road-http"},
    )  # fmt: skip
    assert answer.status_code == 200, answer.text
    body = answer.json()
    line = captured({"road-http"})["road-http"]
    access = access_lines(peagle, start, {"road-http"})["road-http"]
    assert (access["method"], access["path"]) == ("POST", "/invocations")
    assert_captured_and_logged(
        line, access, CHAT, body["choices"][0]["message"], body["usage"]["completion_tokens"]
    )


def test_each_batch_transform_record_is_captured_and_logged(peagle):
    start = len(peagle.log_text())
    records = [CHAT, OTHER_CHAT, {"messages": "not a list"}]
    answer = httpx.post(
        f"{peagle.url}/invocations",
        content=b"".join(json.dumps(record).encode() + b"\n" for record in records),
        headers={
            "Content-Type": "application/jsonlines",
            "X-Amzn-SageMaker-Inference-Id": "road-records",
        },
        timeout=300,
    )
    assert answer.status_code == 200, answer.text
    first, second, bad = map(json.loads, answer.text.splitlines())
    ids = {f"road-records-{index}" for index in range(3)}
    lines = captured(ids - {"road-records-2"})
    access = access_lines(peagle, start, ids | {"road-records"})
    for index, (sent, got) in enumerate(((CHAT, first), (OTHER_CHAT, second))):
        request_id = f"road-records-{index}"
        assert (access[request_id]["method"], access[request_id]["path"]) == (
            "POST", "/invocations"
        )  # fmt: skip
        assert_captured_and_logged(
            lines[request_id], access[request_id], sent,
            got["choices"][0]["message"], got["usage"]["completion_tokens"],
        )  # fmt: skip
    # The bad record: its own error line and access line, nothing captured.
    assert bad["error"]["code"] == 400
    assert access["road-records-2"]["status"] == "400"
    assert access["road-records-2"]["tokens"] == "-"
    assert "road-records-2" not in captured({"road-records-2"}, seconds=1)
    # The mini-batch itself is the HTTP request's line.
    assert access["road-records"]["status"] == "200"


def test_a_request_of_a_bidirectional_stream_session_is_captured_and_logged(peagle):
    start = len(peagle.log_text())
    headers = {"X-Amzn-SageMaker-Inference-Id": "road-bidi"}
    with open_session(peagle.url, additional_headers=headers) as session:
        send(session, {"id": "a", **CHAT})
        frames = until_ended(session, {"a"})["a"]
    *chunks, done = frames
    assert done["type"] == "done", done
    text = "".join(
        choice["delta"].get("content") or ""
        for frame in chunks
        for choice in frame["data"].get("choices", [])
    )
    line = captured({"road-bidi-1"})["road-bidi-1"]
    access = access_lines(peagle, start, {"road-bidi-1"})["road-bidi-1"]
    assert (access["method"], access["path"]) == ("WEBSOCKET", "/invocations-bidirectional-stream")
    assert line["route"] == "/invocations-bidirectional-stream"
    assert_captured_and_logged(
        line, access, CHAT, {"content": text}, done["usage"]["completion_tokens"]
    )
    assert line["speculation"] == done["speculation"]
