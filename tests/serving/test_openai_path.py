"""The OpenAI API as SageMaker's OpenAI path forwards it: `/v1/chat/completions` and
`/v1/completions` with `model` as the client wrote it (absent, "", the endpoint's name, a
framework's made-up name), streamed and not, with tools, structured outputs, a prompt cache
key and the prefix-aware routing header. The one served model answers every one of them with
the same greedy tokens, and says in `model` that it did; an adapter named in SageMaker's
header that is not loaded stays vLLM's 404 (serving/served_models.py)."""

from __future__ import annotations

import json

import httpx
import jsonschema
import pytest

from tests.support.schemas import CITY, WEATHER

# The names SageMaker forwards: AWS's own sample sends "", LiteLLM and the frameworks send
# the endpoint's name or whatever their user typed, some send none.
NAMES = {"absent": None, "empty": "", "endpoint": "my-endpoint", "made-up": "gpt-4o"}
CHAT = {
    "messages": [{"role": "user", "content": "What is deep learning?"}],
    "max_tokens": 12,
    "temperature": 0,
}
COMPLETION = {"prompt": "Deep learning is", "max_tokens": 12, "temperature": 0}
ROUTES = {"/v1/chat/completions": CHAT, "/v1/completions": COMPLETION}


def named(body: dict, name: str | None) -> dict:
    return dict(body) if name is None else {**body, "model": name}


def text_of(answer: dict) -> str:
    choice = answer["choices"][0]
    return choice["message"]["content"] if "message" in choice else choice["text"]


@pytest.fixture(scope="module")
def served(peagle) -> str:
    return httpx.get(f"{peagle.url}/v1/models", timeout=30).json()["data"][0]["id"]


@pytest.mark.parametrize("route", ROUTES)
def test_any_model_name_is_answered_by_the_served_model(client: httpx.Client, served, route):
    base = ROUTES[route]
    expected = client.post(route, json=named(base, served))
    assert expected.status_code == 200, expected.text
    for case, name in NAMES.items():
        answer = client.post(route, json=named(base, name))
        assert answer.status_code == 200, (case, answer.text)
        assert answer.json()["model"] == served, case
        assert text_of(answer.json()) == text_of(expected.json()), case


@pytest.mark.parametrize("route", ROUTES)
def test_any_model_name_streams_the_same_tokens(client: httpx.Client, served, route):
    base = ROUTES[route]
    whole = text_of(client.post(route, json=named(base, served)).json())
    for case, name in NAMES.items():
        body = {**named(base, name), "stream": True}
        with client.stream("POST", route, json=body) as answer:
            assert answer.status_code == 200, (case, answer.read())
            events = [line[6:] for line in answer.iter_lines() if line.startswith("data: ")]
        assert events[-1] == "[DONE]", case
        chunks = [json.loads(event) for event in events[:-1]]
        assert all(chunk["model"] == served for chunk in chunks), case
        pieces = [
            choice.get("delta", {}).get("content") or choice.get("text") or ""
            for chunk in chunks
            for choice in chunk["choices"]
        ]
        assert "".join(pieces) == whole, case


def test_a_named_tool_call_under_a_made_up_model(client: httpx.Client, served):
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}
    body = {
        "model": "gpt-4o",
        "messages": [{"role": "user", "content": "What is the weather in Paris?"}],
        "tools": [tool],
        "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
        "max_tokens": 64,
        "temperature": 0,
    }
    answer = client.post("/v1/chat/completions", json=body)
    assert answer.status_code == 200, answer.text
    assert answer.json()["model"] == served
    (call,) = answer.json()["choices"][0]["message"]["tool_calls"]
    assert call["function"]["name"] == "get_weather"
    jsonschema.validate(json.loads(call["function"]["arguments"]), WEATHER)


def test_structured_output_under_the_endpoints_name(client: httpx.Client, served):
    body = {
        **CHAT,
        "model": "my-endpoint",
        "max_tokens": 48,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "city", "schema": CITY, "strict": True},
        },
    }
    answer = client.post("/v1/chat/completions", json=body)
    assert answer.status_code == 200, answer.text
    assert answer.json()["model"] == served
    jsonschema.validate(json.loads(text_of(answer.json())), CITY)


def test_a_prompt_cache_key_and_the_prefix_aware_header_change_nothing(client: httpx.Client):
    """Routing hints for SageMaker's prefix-aware router: accepted, and the answer is the one
    given without them (the engine's prefix cache is shared, not salted per key)."""
    plain = client.post("/v1/chat/completions", json={**CHAT, "model": ""})
    hinted = client.post(
        "/v1/chat/completions",
        json={**CHAT, "model": "", "prompt_cache_key": "tenant-7"},
        headers={"X-Amzn-SageMaker-Prefix-Aware-Id": "tenant-7"},
    )
    assert plain.status_code == hinted.status_code == 200, hinted.text
    assert text_of(hinted.json()) == text_of(plain.json())


@pytest.mark.parametrize("route", ["/invocations", "/v1/chat/completions"])
def test_an_adapter_that_is_not_loaded_is_404_not_the_base_model(client: httpx.Client, route):
    answer = client.post(
        route,
        json={**CHAT, "model": "gpt-4o"},
        headers={"X-Amzn-SageMaker-Adapter-Identifier": "adapter-zq7"},
    )
    assert answer.status_code == 404, answer.text
    assert answer.json()["error"]["message"] == "The model `adapter-zq7` does not exist."
