"""The plain OpenAI SDK on LiteLLM's proxy, which turns each call into a `sagemaker_chat/`
InvokeEndpoint call: chat, tools under each tool_choice and response_format json_schema, whole and
streamed (streamed calls put together from their deltas, as the SDK's users do), and the container's
speculation counts (CustomAttributes, metrics). The first argument is the proxy's URL, the second
the proxy's model name for whole answers (its streamed twin is that name plus `-stream`,
tests/clients/test_litellm_proxy.py); the key is OPENAI_API_KEY, the
proxy's master key, as a user of the SDK sets it."""

from __future__ import annotations

import json

import openai
from common import ENDPOINT, MAX_TOKENS, MESSAGES, RUNTIME_URL, TOOL_QUESTION, WEATHER_TOOL, report

api = openai.OpenAI(base_url=f"{RUNTIME_URL}/v1", max_retries=0, timeout=120)
TOOL_MESSAGES = [{"role": "user", "content": TOOL_QUESTION}]
NAMED = {"type": "function", "function": {"name": "get_weather"}}
JSON_MESSAGES = [{"role": "user", "content": "Which city is sunny today? Answer in JSON."}]
CITY = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "enum": ["Paris", "Tokyo", "Lima"]},
        "sunny": {"type": "boolean"},
    },
    "required": ["city", "sunny"],
    "additionalProperties": False,
}
JSON_SCHEMA = {
    "type": "json_schema",
    "json_schema": {"name": "city", "schema": CITY, "strict": True},
}


def ask(messages: list, stream: bool, **fields) -> tuple[str | None, list]:
    """(content, the calls as (name, arguments JSON text)), whole or joined from the deltas."""
    answer = api.chat.completions.create(
        model=f"{ENDPOINT}-stream" if stream else ENDPOINT, messages=messages,
        max_tokens=MAX_TOKENS, temperature=0, stream=stream, **fields,
    )  # fmt: skip
    if not stream:
        message = answer.choices[0].message
        calls = [[call.function.name, call.function.arguments] for call in message.tool_calls or []]
        return message.content, calls
    content, pieces = "", {}
    for chunk in answer:
        for choice in chunk.choices:
            content += choice.delta.content or ""
            for piece in choice.delta.tool_calls or []:
                call = pieces.setdefault(piece.index, ["", ""])
                call[0] += piece.function.name or "" if piece.function else ""
                call[1] += piece.function.arguments or "" if piece.function else ""
    return content, [call for _, call in sorted(pieces.items())]


def chat(stream: bool) -> str:
    return ask(MESSAGES, stream)[0]


def tools(tool_choice, stream: bool) -> str:
    """The calls, each (name, parsed arguments), and the words beside them."""
    content, calls = ask(TOOL_MESSAGES, stream, tools=[WEATHER_TOOL], tool_choice=tool_choice)
    parsed = [[name, json.loads(arguments)] for name, arguments in calls]
    return json.dumps({"calls": parsed, "content": content or None})


def structured(stream: bool) -> str:
    return ask(JSON_MESSAGES, stream, response_format=JSON_SCHEMA)[0]


def custom_attributes() -> str:
    """The endpoint's CustomAttributes (the container's speculation counts), which the proxy
    hands on as an `llm_provider-` header of a whole answer."""
    raw = api.chat.completions.with_raw_response.create(
        model=ENDPOINT, messages=MESSAGES, max_tokens=MAX_TOKENS, temperature=0
    )
    return raw.headers.get("llm_provider-x-amzn-sagemaker-custom-attributes", "")


def metrics(stream: bool) -> str:
    """The container's `metrics.speculative_decoding`: in a whole answer's body, or in the
    stream's usage chunk (asked for with include_usage)."""
    fields = {"model": ENDPOINT, "messages": MESSAGES, "max_tokens": MAX_TOKENS, "temperature": 0}
    if not stream:
        raw = api.chat.completions.with_raw_response.create(**fields)
        return json.dumps(
            (raw.http_response.json().get("metrics") or {}).get("speculative_decoding")
        )
    fields["model"] = f"{ENDPOINT}-stream"
    answer = api.chat.completions.create(
        **fields, stream=True, stream_options={"include_usage": True}
    )
    found = [chunk.model_extra.get("metrics") for chunk in answer if chunk.model_extra]
    found = [
        each["speculative_decoding"] for each in found if each and each.get("speculative_decoding")
    ]
    if not found:
        raise LookupError("no chunk of the stream carries metrics.speculative_decoding")
    return json.dumps(found[-1])


report(
    {
        "chat": lambda: chat(False),
        "chat stream": lambda: chat(True),
        "tools auto": lambda: tools("auto", False),
        "tools auto stream": lambda: tools("auto", True),
        "tools required": lambda: tools("required", False),
        "tools required stream": lambda: tools("required", True),
        "tools named": lambda: tools(NAMED, False),
        "tools named stream": lambda: tools(NAMED, True),
        "json_schema": lambda: structured(False),
        "json_schema stream": lambda: structured(True),
        "custom attributes": custom_attributes,
        "metrics": lambda: metrics(False),
        "metrics stream": lambda: metrics(True),
    }
)
