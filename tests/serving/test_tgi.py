"""TGI / LMI payloads on /invocations (`inputs`, `parameters`), answered as TGI answers,
on the real front and engine: the same greedy text as the OpenAI completion."""

from __future__ import annotations

import asyncio
import json
import logging

import httpx
import pytest

from serving.errors import RequestRefused
from serving.sse import DataSplitter
from serving.tgi import TgiAnswer, TgiStream, completion_request, stream_events

PROMPT = "def fibonacci(n):"


def tgi_events(body: bytes) -> list[dict]:
    splitter = DataSplitter()
    return [json.loads(data) for data in splitter.feed(body) + splitter.finish()]


def test_greedy_unless_sampling_is_asked_for():
    greedy, _ = completion_request({"inputs": "x", "parameters": {"max_new_tokens": 5}}, "m")
    assert greedy["temperature"] == 0.0 and greedy["max_tokens"] == 5
    sampled, _ = completion_request({"inputs": "x", "parameters": {"temperature": 0.7}}, "m")
    assert sampled["temperature"] == 0.7
    asked, _ = completion_request({"inputs": "x", "parameters": {"do_sample": True}}, "m")
    assert asked["temperature"] == 1.0


def test_unknown_parameters_are_ignored_with_a_log_line(caplog):
    caplog.set_level(logging.INFO, "serving.tgi")
    payload = {"inputs": "x", "parameters": {"sagemaker_base_url": "http://x", "watermark": True}}
    request, _ = completion_request({**payload, "sagemaker_base_url": "http://x"}, "m")
    assert "watermark" not in request and "sagemaker_base_url" not in request
    assert "'watermark' is not used" in caplog.text


@pytest.mark.parametrize(
    "payload, words",
    [
        ({"inputs": 3}, "'inputs' must be a string"),
        ({"inputs": []}, "'inputs' must be a string"),
        ({"inputs": "x", "parameters": [1]}, "'parameters' must be a JSON object"),
        ({"inputs": ["a", "b"], "stream": True}, "cannot be streamed"),
        ({"inputs": "", "stream": True}, "'inputs' is empty"),
        ({"inputs": ["a", ""]}, "'inputs' is empty"),
        # A grammar type that is no name at all (a list, an object) is refused, not a 500.
        ({"inputs": "x", "parameters": {"grammar": {"type": ["json"]}}}, "'parameters.grammar'"),
        ({"inputs": "x", "parameters": {"grammar": {"type": {}}}}, "'parameters.grammar'"),
    ],
)
def test_bad_tgi_payloads_say_what_is_wrong(payload, words):
    with pytest.raises(RequestRefused) as refused:
        completion_request(payload, "m")
    assert refused.value.status == 400 and words in refused.value.message


def test_the_last_stream_event_waits_for_the_token_count():
    stream = TgiStream(TgiAnswer(stream=True, details=False, seed=None, prefixes=None))
    first = stream.event(json.dumps({"choices": [{"text": "a", "token_ids": [7]}]}))
    last = stream.event(json.dumps({"choices": [{"text": "b", "finish_reason": "length"}]}))
    usage = stream.event(json.dumps({"choices": [], "usage": {"completion_tokens": 2}}))
    assert last == b""
    events = tgi_events(first + usage) + tgi_events(stream.event("[DONE]") + stream.finish())
    assert [event["token"]["text"] for event in events] == ["a", "b"]
    assert events[0]["token"]["id"] == 7 and events[0]["generated_text"] is None
    assert events[1]["generated_text"] == "ab"
    assert events[1]["details"]["generated_tokens"] == 2


def test_a_stream_cut_anywhere_gives_the_same_events_and_errors_pass_as_they_came():
    """The one writer of TGI's stream (HTTP and the bidirectional stream both use it)."""
    engine = (
        b"".join(
            b"data: " + json.dumps(chunk).encode() + b"\r\n\r\n"
            for chunk in (
                {"choices": [{"text": "a", "token_ids": [7]}]},
                {"choices": [{"text": "b", "finish_reason": "length"}]},
                {"choices": [], "usage": {"completion_tokens": 2}},
                {"error": {"message": "gone", "type": "InternalServerError", "code": 500}},
            )
        )
        + b"data: [DONE]\r\n\r\n"
    )

    async def rewritten(size: int) -> bytes:
        async def chunks():
            for start in range(0, len(engine), size):
                yield engine[start : start + size]

        answer = TgiAnswer(stream=True, details=False, seed=None, prefixes=None)
        return b"".join([events async for events in stream_events(chunks(), answer)])

    whole, by_byte = asyncio.run(rewritten(len(engine))), asyncio.run(rewritten(1))
    assert whole == by_byte
    events = tgi_events(whole)
    assert [event.get("generated_text") for event in events[:2]] == [None, "ab"]
    assert events[2] == {"error": {"message": "gone", "type": "InternalServerError", "code": 500}}


def completion(url: str, **fields) -> dict:
    payload = {"prompt": PROMPT, "max_tokens": 24, "temperature": 0, **fields}
    answer = httpx.post(f"{url}/invocations", json=payload, timeout=120)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_a_tgi_payload_gets_the_greedy_text_of_the_openai_completion(peagle):
    expected = completion(peagle.url)["choices"][0]["text"]
    payload = {"inputs": PROMPT, "parameters": {"max_new_tokens": 24, "details": True}}
    answer = httpx.post(f"{peagle.url}/invocations", json=payload, timeout=120)
    assert answer.status_code == 200, answer.text
    assert answer.text.endswith("\n")
    [result] = answer.json()
    assert result["generated_text"] == expected
    assert result["details"]["finish_reason"] == "length"
    assert result["details"]["generated_tokens"] == 24
    # The request's own speculation, as for chat.
    assert float(answer.headers["x-speculation-mean-acceptance-length"]) >= 1.0


def test_return_full_text_puts_the_prompt_first(peagle):
    payload = {"inputs": PROMPT, "parameters": {"max_new_tokens": 8, "return_full_text": True}}
    [result] = httpx.post(f"{peagle.url}/invocations", json=payload, timeout=120).json()
    assert result["generated_text"].startswith(PROMPT)
    assert len(result["generated_text"]) > len(PROMPT)


def test_a_batch_of_inputs_gets_one_answer_each_in_order(peagle):
    prompts = [PROMPT, "class Stack:"]
    expected = [completion(peagle.url, prompt=prompt)["choices"][0]["text"] for prompt in prompts]
    payload = {"inputs": prompts, "parameters": {"max_new_tokens": 24}}
    answer = httpx.post(f"{peagle.url}/invocations", json=payload, timeout=120)
    assert [result["generated_text"] for result in answer.json()] == expected


def test_a_tgi_stream_is_tgi_token_events_ending_with_the_whole_text(peagle):
    expected = completion(peagle.url)["choices"][0]["text"]
    payload = {"inputs": PROMPT, "parameters": {"max_new_tokens": 24}, "stream": True}
    with httpx.stream("POST", f"{peagle.url}/invocations", json=payload, timeout=120) as answer:
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("text/event-stream")
        body = answer.read()
    assert b"[DONE]" not in body
    events = tgi_events(body)
    assert all(event["generated_text"] is None for event in events[:-1])
    assert "".join(event["token"]["text"] for event in events) == expected
    assert events[-1]["generated_text"] == expected
    assert events[-1]["details"]["generated_tokens"] == 24
    assert all(isinstance(event["token"]["id"], int) for event in events)


def test_the_answer_carries_its_speculation_in_custom_attributes_as_for_chat(peagle):
    payload = {"inputs": PROMPT, "parameters": {"max_new_tokens": 16}}
    answer = httpx.post(f"{peagle.url}/invocations", json=payload, timeout=120)
    assert answer.status_code == 200, answer.text
    attributes = answer.headers["x-amzn-sagemaker-custom-attributes"]
    assert "speculation-mean-acceptance-length=" in attributes
    assert "speculation-draft-tokens=" in attributes
