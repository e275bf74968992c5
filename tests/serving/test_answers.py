"""Per-request speculation read off the engine's answers: in the JSON answer and the final
stream chunk, as headers a client reads without the body, and in the access log."""

from __future__ import annotations

import json

import httpx
import pytest

from serving.answers import CUSTOM_ATTRIBUTES, AnswerWatcher, Speculation, with_speculation
from tests.support.containers import TRAINED

STATS = {
    "mean_acceptance_length": 2.5,
    "draft_acceptance_rate": 0.5,
    "acceptance_histogram": [1, 0, 1, 0],
    "num_spec_steps": 2,
    "num_accepted_draft_tokens": 3,
    "num_draft_tokens": 6,
    "num_spec_tokens": 3,
}
CODE = {
    "messages": [{"role": "user", "content": "def fibonacci(n):"}],
    "max_tokens": 48,
    "temperature": 0,
}


def test_a_stream_event_split_across_reads_is_found():
    final = b'data: {"choices":[],"usage":{"completion_tokens":9},"metrics":'
    final += json.dumps({"speculative_decoding": STATS}).encode() + b"}\n\n"
    stream = b'data: {"choices":[{"delta":{"content":"x"}}]}\n\n' + final + b"data: [DONE]\n\n"
    watcher = AnswerWatcher("text/event-stream; charset=utf-8")
    for start in range(0, len(stream), 7):
        watcher.feed(stream[start : start + 7])
    watcher.finish()
    assert watcher.completion_tokens == 9
    assert watcher.speculation == Speculation(2.5, 6, 3)


def test_a_json_answer_past_the_buffer_is_not_read_from_its_pieces():
    watcher = AnswerWatcher("application/json")
    watcher.feed(b'{"usage": {"completion_tokens": 1')
    watcher.feed(b" " * AnswerWatcher.MAX_BUFFER)
    watcher.feed(b"}}")
    watcher.finish()
    assert watcher.answer is None and watcher.completion_tokens is None


def test_the_usage_chunk_is_found_after_an_event_too_long_to_keep():
    final = b'data: {"choices":[],"usage":{"completion_tokens":9}}\n\n'
    watcher = AnswerWatcher("text/event-stream")
    watcher.feed(b"data: " + b"x" * (AnswerWatcher.MAX_BUFFER + 10))
    watcher.feed(b"\n\n" + final)
    watcher.finish()
    assert watcher.completion_tokens == 9


def test_custom_attributes_the_engine_set_are_kept_and_extended():
    headers = [(b"content-type", b"application/json"), (CUSTOM_ATTRIBUTES, b"theirs=1")]
    merged = dict(with_speculation(headers, Speculation(2.5, 6, 3)))
    assert merged[CUSTOM_ATTRIBUTES] == (
        b"theirs=1,speculation-mean-acceptance-length=2.50,"
        b"speculation-draft-tokens=6,speculation-accepted-tokens=3"
    )
    assert merged[b"x-speculation-draft-tokens"] == b"6"


def test_answers_without_speculation_stay_as_they_are():
    watcher = AnswerWatcher("application/json")
    watcher.feed(b'{"usage": {"completion_tokens": 4}, "metrics": {"speculative_decoding": null}}')
    watcher.finish()
    assert watcher.speculation is None
    assert with_speculation([(b"a", b"b")], watcher.speculation) == [(b"a", b"b")]


def test_the_json_answer_and_its_headers_carry_the_requests_acceptance(client: httpx.Client):
    response = client.post("/invocations", json=CODE)
    assert response.status_code == 200, response.text
    stats = response.json()["metrics"]["speculative_decoding"]
    assert stats["num_draft_tokens"] > 0
    assert stats["num_draft_tokens"] == 3 * stats["num_spec_steps"]
    headers = response.headers
    assert int(headers["x-speculation-draft-tokens"]) == stats["num_draft_tokens"]
    assert int(headers["x-speculation-accepted-tokens"]) == stats["num_accepted_draft_tokens"]
    length = float(headers["x-speculation-mean-acceptance-length"])
    assert length == pytest.approx(stats["mean_acceptance_length"], abs=0.005)
    if TRAINED:  # the trained head gets drafts accepted on code; the random one does not
        assert length >= 1.5
    assert "speculation-draft-tokens=" in headers["x-amzn-sagemaker-custom-attributes"]


def test_the_final_stream_chunk_carries_the_requests_acceptance(client: httpx.Client):
    events = []
    payload = {**CODE, "stream": True, "stream_options": {"include_usage": True}}
    with client.stream("POST", "/v1/chat/completions", json=payload) as response:
        assert response.status_code == 200
        assert "x-speculation-draft-tokens" not in response.headers  # sent before it is known
        events = [line[6:] for line in response.iter_lines() if line.startswith("data: {")]
    final = json.loads(events[-1])
    assert final["choices"] == []
    assert final["usage"]["completion_tokens"] > 0
    assert final["metrics"]["speculative_decoding"]["num_draft_tokens"] > 0


def test_the_access_log_line_carries_the_acceptance(peagle, client: httpx.Client):
    inference_id = "acceptance-in-the-log"
    response = client.post(
        "/invocations", json=CODE, headers={"X-Amzn-SageMaker-Inference-Id": inference_id}
    )
    length = response.headers["x-speculation-mean-acceptance-length"]
    access = f"{inference_id} POST /invocations 200"
    lines = [line for line in peagle.log_once(access).splitlines() if access in line]
    assert f"acceptance={length}" in lines[-1]


def test_a_container_without_speculation_adds_no_speculation_headers(plain):
    response = httpx.post(f"{plain.url}/invocations", json=CODE, timeout=120)
    assert response.status_code == 200
    assert not [name for name in response.headers if name.startswith("x-speculation-")]
    assert "x-amzn-sagemaker-custom-attributes" not in response.headers


def test_a_whole_answers_usage_carries_no_nulls(client: httpx.Client):
    # vLLM writes "completion_tokens_details": null; Strands Agents' SageMaker model fails on
    # any usage key it does not know (tests/clients/test_agent_clients.py runs it).
    answer = client.post("/invocations", json=CODE).json()
    usage = answer["usage"]
    assert None not in usage.values(), usage
    assert usage["completion_tokens"] == 48 or answer["choices"][0]["finish_reason"] == "stop"
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert answer["metrics"]["speculative_decoding"]["num_draft_tokens"] > 0
