"""Capture: sampled requests and their answers written as JSON lines off the request path,
rotated into complete files, dropped and counted when the writer falls behind."""

from __future__ import annotations

import json
import random
import socket
import time
from pathlib import Path

import httpx

from serving import exit_codes
from serving.capture import QUEUE_RECORDS, Capture, CapturedExchange, RotatingFile, record
from tests.support.containers import CAPTURE_DIR

CHAT = {
    "messages": [{"role": "user", "content": "def reverse(s):"}],
    "max_tokens": 24,
    "temperature": 0,
}


def exchange(answer: bytes, streamed: bool = False, request: bytes = b"{}") -> CapturedExchange:
    return CapturedExchange("id", "/invocations", 200, request, answer, streamed, 0.0, 1.0, None)


def lines_of(directory: Path) -> list[dict]:
    return [
        json.loads(line)
        for path in sorted(directory.glob("capture-*.jsonl"))
        for line in path.read_text().splitlines()
    ]


def test_files_rotate_before_a_line_would_pass_the_limit_and_hold_whole_lines(tmp_path: Path):
    output = RotatingFile(tmp_path, max_bytes=100)
    for number in range(20):
        output.write(json.dumps({"n": number, "pad": "x" * 30}).encode() + b"\n")
    output.close()
    files = sorted(tmp_path.glob("capture-*.jsonl"))
    assert len(files) > 5
    assert all(path.stat().st_size <= 100 for path in files)
    numbers = [json.loads(line)["n"] for path in files for line in path.read_text().splitlines()]
    assert numbers == list(range(20))


def test_a_writer_that_falls_behind_drops_and_counts_instead_of_queueing(tmp_path: Path):
    # The writer thread is not started: the one real way to hold it behind the requests.
    capture = Capture(tmp_path, 1.0, 1 << 20)
    for _ in range(QUEUE_RECORDS + 5):
        capture.offer(exchange(b"{}"))
    assert capture.records.labels("dropped")._value.get() == 5
    assert capture.queue.qsize() == QUEUE_RECORDS


def test_only_chat_looking_bodies_on_captured_routes_are_chosen(tmp_path: Path):
    chat, completion = json.dumps(CHAT).encode(), b'{"prompt": "def f(", "max_tokens": 4}'
    always = Capture(tmp_path, 1.0, 1 << 20)
    assert always.wants("/invocations", chat)
    assert always.wants("/v1/chat/completions", chat)
    assert not always.wants("/invocations", completion)
    assert not always.wants("/v1/completions", chat)
    assert not Capture(tmp_path, 0.0, 1 << 20).wants("/invocations", chat)


def test_a_stream_is_captured_as_the_answer_it_spelled_out():
    stream = (
        b'data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{"role":"assistant"}}]}\n\n'
        b'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n'
        b'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"lo"},'
        b'"finish_reason":"stop"}]}\n\n'
        b'data: {"id":"c1","choices":[],"usage":{"completion_tokens":2}}\n\n'
        b"data: [DONE]\n\n"
    )
    line = record(exchange(stream, streamed=True, request=json.dumps(CHAT).encode()))
    assert line["response"]["choices"][0]["message"] == {"role": "assistant", "content": "Hello"}
    assert line["response"]["choices"][0]["finish_reason"] == "stop"
    assert line["response"]["usage"] == {"completion_tokens": 2}
    assert line["request"] == CHAT


def test_only_chat_requests_are_captured_and_a_parsed_answer_is_not_parsed_again():
    answer = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "x"}}]}
    chat = record(exchange(b"", request=json.dumps(CHAT).encode()))
    assert chat is None  # an answer that is not JSON
    chat = CapturedExchange("id", "/invocations", 200, json.dumps(CHAT).encode(), b"", False,
                            0.0, 1.0, None, parsed_answer=answer)  # fmt: skip
    assert record(chat)["response"] == answer
    completion = json.dumps({"prompt": "def f(", "max_tokens": 4}).encode()
    assert record(exchange(json.dumps(answer).encode(), request=completion)) is None


def test_the_container_captures_json_and_streamed_answers_with_their_acceptance(peagle):
    ids = {"capture-json": False, "capture-stream": True}
    answers = {}
    # A completion payload, sent first: the one writer has passed it by when the others are in.
    completion = {"prompt": "def reverse(s):", "max_tokens": 4, "temperature": 0}
    response = httpx.post(
        f"{peagle.url}/invocations", json=completion, timeout=120,
        headers={"X-Amzn-SageMaker-Inference-Id": "capture-completion"},
    )  # fmt: skip
    assert response.status_code == 200, response.text
    for inference_id, stream in ids.items():
        headers = {"X-Amzn-SageMaker-Inference-Id": inference_id}
        if stream:
            with httpx.stream(
                "POST", f"{peagle.url}/invocations",
                json={**CHAT, "stream": True, "stream_options": {"include_usage": True}},
                headers=headers, timeout=120,
            ) as response:  # fmt: skip
                events = [line[6:] for line in response.iter_lines() if line[6:7] == "{"]
            answers[inference_id] = "".join(
                (json.loads(event)["choices"] or [{}])[0].get("delta", {}).get("content") or ""
                for event in events
            )
        else:
            response = httpx.post(
                f"{peagle.url}/invocations", json=CHAT, headers=headers, timeout=120
            )
            answers[inference_id] = response.json()["choices"][0]["message"]["content"]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        captured = {line["request_id"]: line for line in lines_of(CAPTURE_DIR)}
        if all(inference_id in captured for inference_id in ids):
            break
        time.sleep(0.2)
    for inference_id in ids:
        line = captured[inference_id]
        assert line["request"]["messages"] == CHAT["messages"]
        message = line["response"]["choices"][0]["message"]
        assert message["content"] == answers[inference_id]
        assert line["speculation"]["num_draft_tokens"] > 0
        assert line["timings"]["latency_ms"] > 0
    assert "capture-completion" not in captured
    metrics = httpx.get(f"{peagle.url}/metrics", timeout=10).text
    assert 'serving_capture_records_total{outcome="written"}' in metrics


def test_an_unwritable_capture_directory_exits_2_before_the_engine_starts(demo_root):
    from tests.support.containers import demo_env, serve_until_exit

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    env = demo_env(SAGEMAKER_BIND_TO_PORT=str(port), SERVING_CAPTURE_DIR="/etc/hostname/capture")
    result = serve_until_exit(env)
    assert result.returncode == exit_codes.BAD_CONFIG
    assert "SERVING_CAPTURE_DIR" in result.stdout
    assert "starting engine" not in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


def test_an_agent_session_is_captured_and_exported_as_the_tokens_the_target_served(
    peagle, tmp_path
):
    """Two turns of an agent loop (a named call, then its result and the next answer, streamed)
    captured, exported, and rendered for training: each turn's prompt is the token sequence
    vLLM itself rendered for it (its /tokenize), and the answer after it is the text the target
    generated, the call in the target's own syntax."""
    from transformers import AutoTokenizer

    from capture.export import Options, export
    from serving.sse import reassemble_sse
    from tests.support.containers import DEMO_ROOT
    from training.chat_render import render_ids
    from workloads.agent import sessions, tool_result

    session = next(s for s in sessions(707070, 12) if isinstance(s.first_choice, dict))
    tokenizer = AutoTokenizer.from_pretrained(DEMO_ROOT / "model")
    first = {
        "messages": session.messages, "tools": session.tools,
        "tool_choice": session.first_choice, "max_tokens": 48, "temperature": 0,
        "return_token_ids": True,
    }  # fmt: skip
    headers = {"X-Amzn-SageMaker-Inference-Id": "agent-turn-1"}
    answer = httpx.post(f"{peagle.url}/invocations", json=first, headers=headers, timeout=120)
    assert answer.status_code == 200, answer.text
    choice = answer.json()["choices"][0]
    (call,) = choice["message"]["tool_calls"]
    result = tool_result(call["function"]["name"], random.Random(1))
    history = [
        *session.messages,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call["id"], "content": result},
    ]
    second = {**first, "messages": history, "tool_choice": "auto", "stream": True}
    headers = {"X-Amzn-SageMaker-Inference-Id": "agent-turn-2"}
    with httpx.stream(
        "POST", f"{peagle.url}/invocations", json=second, headers=headers, timeout=120
    ) as streamed:
        assert streamed.status_code == 200
        second_answer = reassemble_sse(streamed.read())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        captured = {line["request_id"]: line for line in lines_of(CAPTURE_DIR)}
        if {"agent-turn-1", "agent-turn-2"} <= set(captured):
            break
        time.sleep(0.2)
    records = tmp_path / "captured.jsonl"
    records.write_text(
        "".join(json.dumps(captured[name]) + "\n" for name in ("agent-turn-1", "agent-turn-2"))
    )
    summary = export(Options(inputs=(records,), out_dir=tmp_path / "train"))
    assert (summary.written, summary.skipped.total()) == (2, 0)
    exported = [
        json.loads(line)
        for line in (tmp_path / "train" / "train.openai.jsonl").read_text().splitlines()
    ]
    assert exported[0]["tools"] == session.tools
    assert (
        exported[0]["messages"][-1]["tool_calls"][0]["function"]["name"] == call["function"]["name"]
    )
    assert [message["role"] for message in exported[1]["messages"][-3:-1]] == ["assistant", "tool"]
    engine = httpx.Client(
        transport=httpx.HTTPTransport(uds=str(peagle.engine_socket())), base_url="http://engine"
    )
    for chat in exported:
        messages, tools = chat["messages"], chat["tools"]
        prompt = render_ids(tokenizer, messages[:-1], tools, add_generation_prompt=True)
        served = engine.post(
            "/tokenize",
            json={"messages": messages[:-1], "tools": tools, "add_generation_prompt": True},
        ).json()["tokens"]
        assert prompt == served
    # The first answer, a call, rendered back is the text the target generated (tokenized as
    # the next turn's prompt tokenizes it: a generation need not be the canonical tokens).
    whole = render_ids(tokenizer, exported[0]["messages"], exported[0]["tools"])
    prompt = render_ids(tokenizer, exported[0]["messages"][:-1], exported[0]["tools"], True)
    assert whole[: len(prompt)] == prompt
    rendered = tokenizer.decode(whole[len(prompt) :])
    assert rendered.startswith(tokenizer.decode(choice["token_ids"])), rendered
    assert second_answer is not None


def test_a_lone_surrogate_in_a_request_is_captured_and_the_writer_goes_on(tmp_path: Path):
    # `"\ud800"` is valid JSON for a str UTF-8 cannot encode: the writer thread died on it,
    # and nothing was captured after.
    capture = Capture(tmp_path, 1.0, 1 << 20)
    capture.start()
    odd = b'{"messages": [{"role": "user", "content": "a \\ud800 b"}], "max_tokens": 4}'
    answer = json.dumps({"choices": [{"message": {"content": "ok"}}]}).encode()
    capture.offer(exchange(answer, request=odd))
    capture.offer(exchange(answer, request=json.dumps(CHAT).encode()))
    capture.stop()
    lines = lines_of(tmp_path)
    assert len(lines) == 2
    # The client's escape, read back as the same string.
    assert lines[0]["request"]["messages"][0]["content"] == "a \ud800 b"
