"""The fuzzer's seeds: one valid body of every kind of request a client sends the front
(harness/fuzz.py mutates them)."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    }
]
SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 8}, "age": {"type": "integer"}},
    "required": ["name"],
}
MESSAGES = [
    {"role": "system", "content": "Answer briefly."},
    {"role": "user", "content": "What is deep learning?"},
]


@dataclass(frozen=True)
class Seed:
    kind: str
    path: str
    body: Any  # a JSON value; a list of records for JSON Lines
    content_type: str = "application/json"


def chat(**fields: Any) -> dict[str, Any]:
    return {"messages": copy.deepcopy(MESSAGES), "max_tokens": 4, **fields}


SEEDS = [
    Seed("chat", "/invocations", chat(temperature=0.3)),
    Seed("chat-stream", "/invocations", chat(stream=True, stream_options={"include_usage": True})),
    Seed("v1-chat", "/v1/chat/completions", chat(top_p=0.9, seed=1)),
    Seed("v1-chat-stream", "/v1/chat/completions", chat(stream=True)),
    Seed("completion", "/invocations", {"prompt": "Deep learning is", "max_tokens": 4}),
    Seed(
        "v1-completion",
        "/v1/completions",
        {"prompt": ["Deep learning is", "A cat"], "max_tokens": 4, "logprobs": 2, "echo": False},
    ),
    Seed(
        "tgi",
        "/invocations",
        {"inputs": "Deep learning is", "parameters": {"max_new_tokens": 4, "details": True}},
    ),
    Seed(
        "tgi-stream",
        "/invocations",
        {"inputs": "Deep learning is", "parameters": {"max_new_tokens": 4}, "stream": True},
    ),
    Seed(
        "tgi-grammar",
        "/invocations",
        {
            "inputs": "A person:",
            "parameters": {"max_new_tokens": 8, "grammar": {"type": "json", "value": SCHEMA}},
        },
    ),
    Seed("tools-auto", "/invocations", chat(tools=TOOLS, tool_choice="auto", max_tokens=8)),
    Seed(
        "tools-required",
        "/v1/chat/completions",
        chat(tools=TOOLS, tool_choice="required", max_tokens=8),
    ),
    Seed(
        "tools-named",
        "/invocations",
        chat(
            tools=TOOLS,
            tool_choice={"type": "function", "function": {"name": "get_weather"}},
            max_tokens=8,
        ),
    ),
    Seed(
        "json-schema",
        "/invocations",
        chat(
            max_tokens=8,
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "person", "schema": SCHEMA, "strict": True},
            },
        ),
    ),
    Seed("json-object", "/v1/chat/completions", chat(response_format={"type": "json_object"})),
    Seed(
        "structured-outputs",
        "/invocations",
        chat(structured_outputs={"choice": ["yes", "no"]}),
    ),
    Seed(
        "structured-regex",
        "/v1/completions",
        {"prompt": "Digits:", "max_tokens": 4, "structured_outputs": {"regex": "[0-9]{1,3}"}},
    ),
    Seed(
        "jsonlines",
        "/invocations",
        [chat(), {"prompt": "A cat", "max_tokens": 4}, {"inputs": "A dog"}],
        "application/jsonlines",
    ),
]
