"""Reasoning a client sends back on its assistant turns (serving/reasoning.py), on both roads
a chat request takes to the engine, without an engine: /invocations (invocations.prepare,
which Batch Transform records and bidirectional-stream requests go through too) and
/v1/chat/completions (PayloadParser.relayed_chat; SageMaker's OpenAI path ends there).

vLLM 0.32 takes a string under `reasoning` or `reasoning_content` and passes a list of
blocks on to the chat template as it came, which refuses it (a 400: "'list object' has no
attribute 'strip'" from a Qwen3-style template, "1 validation error for Message" from
GPT-OSS's harmony rendering); tests/serving/test_reasoning_engine.py shows it on an engine.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from serving.invocations import prepare
from serving.payload_parser import INLINE_PARSE_BYTES, PayloadParser

CALL = {
    "id": "call-1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
}
# The reasoning of one turn as each client keeps it, and the text the engine gets.
SHAPES = {
    "a list of text blocks": (
        [{"type": "text", "text": "Ask the tool."}, {"type": "text", "text": "Then answer."}],
        "Ask the tool.\nThen answer.",
    ),
    "Anthropic's thinking blocks, a redacted one among them": (
        [
            {"type": "thinking", "thinking": "Ask the tool.", "signature": "c2lnbmVk"},
            {"type": "redacted_thinking", "data": "ZW5jcnlwdGVk"},
        ],
        "Ask the tool.",
    ),
    "Bedrock's reasoning content": (
        [{"reasoningContent": {"reasoningText": {"text": "Ask the tool.", "signature": "c2ln"}}}],
        "Ask the tool.",
    ),
    "an OpenAI Responses reasoning item": (
        [{"type": "reasoning", "summary": [{"type": "summary_text", "text": "Ask the tool."}]}],
        "Ask the tool.",
    ),
    "one block": ({"type": "text", "text": "Ask the tool."}, "Ask the tool."),
    "a list of strings": (["Ask the tool.", "Then answer."], "Ask the tool.\nThen answer."),
}


def conversation(**reasoning) -> list[dict]:
    """An agent's next request: the question, its tool-calling turn with `reasoning`, and
    the tool's result."""
    return [
        {"role": "user", "content": "What is the weather in Paris?"},
        {"role": "assistant", "content": "Checking.", "tool_calls": [CALL], **reasoning},
        {"role": "tool", "tool_call_id": "call-1", "content": "Sunny, 21 C."},
    ]


def body_of(messages: list[dict], **fields) -> bytes:
    return json.dumps({"messages": messages, "max_tokens": 8, **fields}).encode()


def on_invocations(body: bytes) -> dict:
    return json.loads(prepare(body, "served").content)


def on_chat_completions(body: bytes, parser: PayloadParser | None = None) -> bytes:
    return asyncio.run((parser or PayloadParser("served")).relayed_chat(body))


@pytest.mark.parametrize("name", ["reasoning", "reasoning_content"])
@pytest.mark.parametrize("shape", list(SHAPES))
def test_blocks_sent_back_reach_the_engine_as_one_string(shape, name):
    blocks, text = SHAPES[shape]
    body = body_of(conversation(**{name: blocks}))
    expected = conversation(reasoning=text)
    for sent in (on_invocations(body), json.loads(on_chat_completions(body))):
        # The turn keeps its content and calls; the other turns are as they came.
        assert sent["messages"] == expected
        assert sent["max_tokens"] == 8
    assert on_invocations(body)["model"] == "served"


def test_a_model_the_client_named_is_kept():
    body = body_of(conversation(reasoning=[{"type": "text", "text": "Hm."}]), model="mine")
    assert on_invocations(body)["model"] == "mine"


def test_reasoning_under_both_names_is_vllms_choice_reasoning():
    # vLLM keeps `reasoning` and drops `reasoning_content` when both are set.
    body = body_of(conversation(reasoning=["Ask the tool."], reasoning_content="Other."))
    assert on_invocations(body)["messages"] == conversation(reasoning="Ask the tool.")


def test_blocks_without_text_leave_no_reasoning_and_keep_the_content():
    body = body_of(conversation(reasoning_content=[{"type": "redacted_thinking", "data": "eA=="}]))
    assert on_invocations(body)["messages"] == conversation()


def test_strings_reach_the_engine_as_they_came():
    # vLLM takes them itself: no parse on /v1, and /invocations only fills in the model.
    for fields in ({"reasoning": "Ask."}, {"reasoning_content": "Ask."}, {"reasoning": None}):
        body = body_of(conversation(**fields))
        assert on_chat_completions(body) is body
        assert prepare(body, "served").content.endswith(body[1:])


def test_a_big_body_is_rewritten_in_the_worker_as_a_small_one_is_here():
    padding = "x" * INLINE_PARSE_BYTES
    body = body_of([{"role": "system", "content": padding}, *conversation(reasoning=["Ask."])])
    parser = PayloadParser("served")
    parser.start()
    try:
        rewritten = on_chat_completions(body, parser)
    finally:
        parser.stop()
    assert rewritten == on_chat_completions(body)
    assert json.loads(rewritten)["messages"][2]["reasoning"] == "Ask."
