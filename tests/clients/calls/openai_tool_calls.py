"""The OpenAI SDK with `tools` on the container's /v1: each tool_choice, whole and streamed
(the streamed calls put together from their deltas, as the SDK's users do), and the round trip
that sends the tool's answer back. The first argument is the container's URL."""

from __future__ import annotations

import json

import openai
from common import MAX_TOKENS, RUNTIME_URL, TOOL_QUESTION, WEATHER_TOOL, outcome, report, weather

api = openai.OpenAI(base_url=f"{RUNTIME_URL}/v1", api_key="unused", max_retries=0)
MODEL = api.models.list().data[0].id
MESSAGES = [{"role": "user", "content": TOOL_QUESTION}]
NAMED = {"type": "function", "function": {"name": "get_weather"}}


def ask(messages: list, tool_choice, stream: bool) -> tuple[list, str | None, list]:
    """(calls as (name, arguments), content, the raw calls to send back)."""
    answer = api.chat.completions.create(
        model=MODEL, messages=messages, tools=[WEATHER_TOOL], tool_choice=tool_choice,
        max_tokens=MAX_TOKENS, temperature=0, stream=stream,
    )  # fmt: skip
    if not stream:
        message = answer.choices[0].message
        raw = [call.model_dump() for call in message.tool_calls or []]
        return calls_of(raw), message.content, raw
    content, pieces = "", {}
    for chunk in answer:
        for choice in chunk.choices:
            content += choice.delta.content or ""
            for piece in choice.delta.tool_calls or []:
                call = pieces.setdefault(piece.index, {"id": "", "name": "", "arguments": ""})
                call["id"] += piece.id or ""
                call["name"] += piece.function.name or "" if piece.function else ""
                call["arguments"] += piece.function.arguments or "" if piece.function else ""
    raw = [
        {"id": call["id"], "type": "function",
         "function": {"name": call["name"], "arguments": call["arguments"]}}
        for _, call in sorted(pieces.items())
    ]  # fmt: skip
    return calls_of(raw), content, raw


def calls_of(raw: list) -> list:
    return [[call["function"]["name"], json.loads(call["function"]["arguments"])] for call in raw]


def once(tool_choice, stream: bool) -> str:
    calls, content, _ = ask(MESSAGES, tool_choice, stream)
    return outcome(calls, content)


def round_trip(stream: bool) -> str:
    """The call, the tool's answer sent back, and what the model says then."""
    calls, _, raw = ask(MESSAGES, "required", stream)
    results = [
        {"role": "tool", "tool_call_id": call["id"], "content": weather(**arguments)}
        for call, (_, arguments) in zip(raw, calls, strict=True)
    ]
    messages = [*MESSAGES, {"role": "assistant", "content": None, "tool_calls": raw}, *results]
    then, content, _ = ask(messages, "auto", stream)
    return outcome(calls, content, then=then)


report(
    {
        "auto": lambda: once("auto", False),
        "auto stream": lambda: once("auto", True),
        "required": lambda: once("required", False),
        "required stream": lambda: once("required", True),
        "named": lambda: once(NAMED, False),
        "named stream": lambda: once(NAMED, True),
        "round trip": lambda: round_trip(False),
        "round trip stream": lambda: round_trip(True),
    }
)
