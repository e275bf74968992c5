"""LiteLLM's `sagemaker_chat/` route with `tools`, through the local runtime: the call, whole
and streamed (the stream rebuilt with `litellm.stream_chunk_builder`), and the round trip that
sends the tool's answer back."""

from __future__ import annotations

import json

import litellm
from common import (
    ENDPOINT,
    MAX_TOKENS,
    RUNTIME_URL,
    TOOL_QUESTION,
    WEATHER_TOOL,
    outcome,
    report,
    weather,
)  # fmt: skip

INVOKE = f"{RUNTIME_URL}/endpoints/{ENDPOINT}/invocations"
STREAM = f"{INVOKE}-response-stream"
MESSAGES = [{"role": "user", "content": TOOL_QUESTION}]


def ask(messages: list, tool_choice, stream: bool):
    answer = litellm.completion(
        model=f"sagemaker_chat/{ENDPOINT}", messages=messages, tools=[WEATHER_TOOL],
        tool_choice=tool_choice, max_tokens=MAX_TOKENS, temperature=0, stream=stream,
        sagemaker_base_url=STREAM if stream else INVOKE,
    )  # fmt: skip
    if stream:
        answer = litellm.stream_chunk_builder(list(answer), messages=messages)
    message = answer.choices[0].message
    raw = message.tool_calls or []
    calls = [[call.function.name, json.loads(call.function.arguments)] for call in raw]
    return calls, message.content, raw


def once(tool_choice, stream: bool) -> str:
    calls, content, _ = ask(MESSAGES, tool_choice, stream)
    return outcome(calls, content)


def round_trip(stream: bool) -> str:
    calls, _, raw = ask(MESSAGES, "required", stream)
    assistant = {"role": "assistant", "content": None, "tool_calls": [
        {"id": call.id, "type": "function",
         "function": {"name": call.function.name, "arguments": call.function.arguments}}
        for call in raw
    ]}  # fmt: skip
    results = [
        {"role": "tool", "tool_call_id": call.id, "content": weather(**arguments)}
        for call, (_, arguments) in zip(raw, calls, strict=True)
    ]
    then, content, _ = ask([*MESSAGES, assistant, *results], "auto", stream)
    return outcome(calls, content, then=then)


report(
    {
        "sagemaker_chat auto": lambda: once("auto", False),
        "sagemaker_chat auto stream": lambda: once("auto", True),
        "sagemaker_chat required": lambda: once("required", False),
        "sagemaker_chat required stream": lambda: once("required", True),
        "sagemaker_chat round trip": lambda: round_trip(False),
        "sagemaker_chat round trip stream": lambda: round_trip(True),
    }
)
