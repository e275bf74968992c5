"""Reasoning on a real engine with vLLM's `qwen3` reasoning parser on and P-EAGLE drafting:
the demo target given Qwen3's thinking syntax (tests/support/thinking_target.py), in a
container of its own (host backend only: the tree is built for this module).

An agent's next request, its tool-calling turn carrying the reasoning it got as blocks, is
answered on both HTTP doors, with the blocks' text rendered by the template as a string
would be; vLLM 0.32 alone refused it with a 400 ("'list object' has no attribute 'strip'").
And the answer's reasoning (vLLM's `reasoning`; every answer of the toy is reasoning, it
never closes `</think>`) reaches the client whole on every road: /invocations and /v1 whole
and streamed, a bidirectional-stream session, a Batch Transform record, and the local
SageMaker Runtime's response stream cut into one-byte PayloadParts and its OpenAI path.
"""

from __future__ import annotations

import json

import httpx
import pytest

from harness.host import host_environment
from serving.sse import reassemble_sse
from tests.local_runtime.test_bearer import token
from tests.support.bidi import open_session, send, until_ended
from tests.support.containers import DEMO_ROOT, PEAGLE_CONFIG, Container
from tests.support.local_runtime import local_runtime, runtime_client
from tests.support.thinking_target import build_thinking_tree

pytestmark = pytest.mark.engine

ROUTES = ("/invocations", "/v1/chat/completions")
CHAT = {
    "messages": [{"role": "user", "content": "What is deep learning?"}],
    "max_tokens": 24,
    "temperature": 0,
}
CALL = {
    "id": "call-1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
}
BLOCKS = {
    "text blocks": [{"type": "text", "text": "Ask the tool, then answer."}],
    "thinking blocks": [
        {"type": "thinking", "thinking": "Ask the tool, then answer.", "signature": "c2ln"}
    ],
}


@pytest.fixture(scope="module")
def thinking(demo_root, request, tmp_path_factory):
    if request.config.getoption("--backend") == "docker":
        pytest.skip("the thinking tree is built on the host; the image mounts the demo tree")
    tree = build_thinking_tree(DEMO_ROOT, tmp_path_factory.mktemp("thinking") / "opt_ml")
    env = host_environment(
        OPT_ML_ROOT=str(tree),
        SM_VLLM_SPECULATIVE_CONFIG=json.dumps(PEAGLE_CONFIG),
        SM_VLLM_REASONING_PARSER="qwen3",
    )
    container = Container("thinking", env).start()
    try:
        container.wait_ready()
        yield container
    finally:
        container.stop()


def agent_turn(**reasoning) -> dict:
    """The agent's next request: its tool-calling turn (carrying `reasoning`) and the result."""
    return {
        "messages": [
            {"role": "user", "content": "What is the weather in Paris?"},
            {"role": "assistant", "content": "", "tool_calls": [CALL], **reasoning},
            {"role": "tool", "tool_call_id": "call-1", "content": "Sunny, 21 C."},
        ],
        "max_tokens": 8,
        "temperature": 0,
    }


def answered(container, route: str, body: dict) -> dict:
    answer = httpx.post(f"{container.url}{route}", json=body, timeout=120)
    assert answer.status_code == 200, answer.text
    return answer.json()


@pytest.mark.parametrize("name", ["reasoning", "reasoning_content"])
@pytest.mark.parametrize("blocks", list(BLOCKS))
@pytest.mark.parametrize("route", ROUTES)
def test_reasoning_sent_back_as_blocks_is_answered_as_a_string_is(thinking, route, blocks, name):
    as_string = answered(thinking, route, agent_turn(reasoning="Ask the tool, then answer."))
    as_blocks = answered(thinking, route, agent_turn(**{name: BLOCKS[blocks]}))
    without = answered(thinking, route, agent_turn())
    # The template wrote the blocks' text into the prompt, as it writes a string.
    prompt_tokens = [answer["usage"]["prompt_tokens"] for answer in (as_blocks, as_string)]
    assert prompt_tokens[0] == prompt_tokens[1] > without["usage"]["prompt_tokens"]
    assert as_blocks["choices"][0]["message"] == as_string["choices"][0]["message"]


def message_of(answer: dict) -> dict:
    return answer["choices"][0]["message"]


def streamed(container, route: str) -> dict:
    with httpx.stream(
        "POST", f"{container.url}{route}", json={**CHAT, "stream": True}, timeout=120
    ) as answer:
        assert answer.status_code == 200, answer.read()
        return message_of(reassemble_sse(answer.read()))


def test_the_reasoning_reaches_the_client_whole_on_every_road(thinking):
    reasoning = message_of(answered(thinking, "/invocations", CHAT))["reasoning"]
    assert reasoning, "the thinking target answered without reasoning"
    got = {
        f"{route} whole": message_of(answered(thinking, route, CHAT))["reasoning"]
        for route in ROUTES
    }
    got.update({f"{route} streamed": streamed(thinking, route)["reasoning"] for route in ROUTES})
    with open_session(thinking.url) as session:
        send(session, {"id": "a", **CHAT})
        frames = until_ended(session, {"a"})["a"]
    deltas = [c["delta"] for f in frames if f["type"] == "chunk" for c in f["data"]["choices"]]
    got["session"] = "".join(delta.get("reasoning") or "" for delta in deltas)
    records = (json.dumps(CHAT) + "\n") * 2
    answer = httpx.post(
        f"{thinking.url}/invocations", content=records, timeout=120,
        headers={"Content-Type": "application/jsonlines"},
    )  # fmt: skip
    lines = answer.text.splitlines()
    got["transform"] = [message_of(json.loads(line))["reasoning"] for line in lines]
    with local_runtime(thinking.url, part_bytes=1) as url:
        response = runtime_client(url).invoke_endpoint_with_response_stream(
            EndpointName="thinking", Body=json.dumps({**CHAT, "stream": True})
        )
        parts = b"".join(event["PayloadPart"]["Bytes"] for event in response["Body"])
        got["runtime streamed"] = message_of(reassemble_sse(parts))["reasoning"]
        openai_path = httpx.post(
            f"{url}/endpoints/thinking/openai/v1/chat/completions", json={**CHAT, "model": ""},
            headers={"Authorization": f"Bearer {token()}"}, timeout=120,
        )  # fmt: skip
        got["openai path"] = message_of(openai_path.json())["reasoning"]
    assert got == {
        **{road: reasoning for road in got if road != "transform"},
        "transform": [reasoning, reasoning],
    }
