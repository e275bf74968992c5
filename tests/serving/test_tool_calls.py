"""Tool calls through the front with P-EAGLE on, on the demo target, whose chat template writes
them Hermes-style and which learned to (model_data_sources/tool_use.py): the container chose
the hermes parser by itself, every tool_choice works on /invocations and /v1, auto makes real
calls, streamed calls reassemble into the same calls as the whole answer, arguments follow
the function's schema, and greedy calls equal the target's alone (no speculation)."""

from __future__ import annotations

import json

import httpx
import jsonschema
import pytest

from tests.support.schemas import WEATHER

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city now.",
            "parameters": WEATHER,
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "description": "The local time in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "enum": ["Paris", "Tokyo", "Lima"]}},
                "required": ["city"],
                "additionalProperties": False,
            },
        },
    },
]
SCHEMAS = {tool["function"]["name"]: tool["function"]["parameters"] for tool in TOOLS}
NAMED = {"type": "function", "function": {"name": "get_weather"}}
CHOICES = {"named": NAMED, "required": "required", "auto": "auto", "none": "none"}
ROUTES = ("/invocations", "/v1/chat/completions")


def request(tool_choice, **fields) -> dict:
    return {
        "messages": [{"role": "user", "content": "What is the weather in Paris?"}],
        "tools": TOOLS,
        "tool_choice": tool_choice,
        "max_tokens": 96,
        "temperature": 0,
        **fields,
    }


def whole(container, route: str, body: dict) -> dict:
    answer = httpx.post(f"{container.url}{route}", json=body, timeout=120)
    assert answer.status_code == 200, answer.text
    return answer.json()["choices"][0]["message"]


def streamed(container, route: str, body: dict) -> dict:
    """The streamed deltas put together as the client libraries do: content joined, each
    tool call's name and argument pieces joined by its index."""
    content, calls = "", {}
    with httpx.stream(
        "POST", f"{container.url}{route}", json={**body, "stream": True}, timeout=120
    ) as answer:
        assert answer.status_code == 200, answer.read()
        for line in answer.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[len("data: ") :])
            assert "error" not in chunk, chunk
            for choice in chunk["choices"]:
                delta = choice["delta"]
                content += delta.get("content") or ""
                for piece in delta.get("tool_calls") or []:
                    call = calls.setdefault(piece["index"], {"name": "", "arguments": ""})
                    function = piece.get("function") or {}
                    call["name"] += function.get("name") or ""
                    call["arguments"] += function.get("arguments") or ""
    return {"content": content or None, "calls": [calls[index] for index in sorted(calls)]}


def calls_of(message: dict) -> list[dict]:
    return [
        {"name": call["function"]["name"], "arguments": call["function"]["arguments"]}
        for call in message.get("tool_calls") or []
    ]


def parsed(calls: list[dict]) -> list[tuple[str, object]]:
    return [(call["name"], json.loads(call["arguments"])) for call in calls]


def assert_valid(calls: list[dict]) -> None:
    for call in calls:
        jsonschema.validate(json.loads(call["arguments"]), SCHEMAS[call["name"]])


@pytest.mark.parametrize("route", ROUTES)
def test_a_named_tool_is_called_with_arguments_that_follow_its_schema(peagle, route):
    message = whole(peagle, route, request(NAMED))
    calls = calls_of(message)
    assert [call["name"] for call in calls] == ["get_weather"], message
    assert_valid(calls)


@pytest.mark.parametrize("route", ROUTES)
def test_required_calls_at_least_one_tool_with_valid_arguments(peagle, route):
    calls = calls_of(whole(peagle, route, request("required")))
    assert calls and {call["name"] for call in calls} <= set(SCHEMAS)
    assert_valid(calls)


@pytest.mark.parametrize("route", ROUTES)
def test_auto_makes_a_real_call_that_the_parser_finds(peagle, route):
    # The demo target writes `<tool_call>` by itself; the parser takes it out of the text.
    # Which of the two tools a 16-layer toy picks for the question is its own (the shipped
    # pair calls get_time): a call is a call of an offered tool with arguments its schema takes.
    message = whole(peagle, route, request("auto"))
    calls = calls_of(message)
    assert calls and {call["name"] for call in calls} <= set(SCHEMAS), message
    assert_valid(calls)
    assert "<tool_call>" not in (message.get("content") or "")


def test_none_answers_in_text_without_calls(peagle):
    message = whole(peagle, "/invocations", request("none"))
    assert not message.get("tool_calls") and message["content"]


@pytest.mark.parametrize("choice", list(CHOICES))
def test_streamed_calls_reassemble_into_the_whole_answers_calls(peagle, choice):
    body = request(CHOICES[choice])
    message = whole(peagle, "/invocations", body)
    # The same calls and arguments; a stream carries the model's own spacing of the JSON,
    # which vLLM re-serialises in a whole answer.
    assert parsed(streamed(peagle, "/invocations", body)["calls"]) == parsed(calls_of(message))


@pytest.mark.parametrize("choice", list(CHOICES))
def test_p_eagle_calls_the_same_tools_as_the_target_alone(peagle, plain, choice):
    body = request(CHOICES[choice])
    assert calls_of(whole(peagle, "/invocations", body)) == calls_of(
        whole(plain, "/invocations", body)
    )


def test_a_conversation_with_a_tool_result_is_answered(peagle):
    call = {"id": "call-1", "type": "function", "function": {
        "name": "get_weather", "arguments": '{"city": "Paris", "unit": "celsius"}'}}  # fmt: skip
    messages = [
        {"role": "user", "content": "What is the weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call-1", "content": '{"sky": "clear", "temp": 21}'},
    ]
    message = whole(peagle, "/invocations", {**request("auto"), "messages": messages})
    # The demo target read the tool's answer and answers in words.
    assert message["content"] and not message.get("tool_calls"), message


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"tools": "get_weather"}, "'tools' must be a list"),
        ({"tools": [{"type": "function"}]}, "'tools[0]'"),
        ({"tools": [{"function": {"name": "f", "parameters": 3}}]}, "'tools[0].function.param"),
        ({"tool_choice": {"type": "function", "function": {"name": "nowhere"}}}, "'nowhere'"),
        ({"tool_choice": "sometimes"}, "'tool_choice' must be"),
    ],
)
def test_a_malformed_tool_request_is_a_400_that_names_the_field(peagle, fields, words):
    answer = httpx.post(f"{peagle.url}/invocations", json={**request("auto"), **fields}, timeout=60)
    assert answer.status_code == 400, answer.text
    assert words in answer.json()["error"]["message"]
    assert "Traceback" not in answer.text


def test_the_container_says_which_parser_it_chose_and_why(peagle, plain):
    for container in (peagle, plain):
        assert "tool calls parsed by hermes: its chat template writes '<tool_call>'" in (
            container.log_text()
        )
