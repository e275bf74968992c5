"""SageMaker's OpenAI-compatible path through the local runtime, as a user of the real SDKs
meets it: the SageMaker Python SDK v3 makes the bearer token, plain HTTPS requests and the
OpenAI SDK (unchanged, in environments of their own) call `/endpoints/<ep>/openai/v1` with
it, and the container with P-EAGLE on answers the same greedy text the target gives on
/invocations. A missing, malformed, expired or wrongly signed token is refused before the
container sees the call (local_runtime/bearer.py). Every case runs on the demo pair and on
the real pair `make serve` serves (SmolLM2-135M-Instruct, whose chat template has no tool
syntax: its forced calls and structured answers are the engine's grammar's)."""

from __future__ import annotations

import json

import httpx
import jsonschema
import pytest

from tests.support.client_envs import run_calls
from tests.support.local_runtime import local_runtime
from tests.support.schemas import CITY, WEATHER

MAX_TOKENS = 24
ENDPOINT = "my-endpoint"
PROMPT = "def fibonacci(n):"  # tests/clients/calls/common.py's


@pytest.fixture(scope="module", params=["demo pair", "real pair"])
def served(request, peagle, real):
    """The container with P-EAGLE on: the demo pair's, and the real pair's."""
    return {"demo pair": peagle, "real pair": real}[request.param]


@pytest.fixture(scope="module")
def runtime_url(served):
    with local_runtime(served.url) as url:
        yield url


@pytest.fixture(scope="module")
def greedy(served) -> str:
    body = {"messages": [{"role": "user", "content": PROMPT}], "max_tokens": MAX_TOKENS}
    answer = httpx.post(f"{served.url}/invocations", json={**body, "temperature": 0}, timeout=120)
    return answer.json()["choices"][0]["message"]["content"]


@pytest.fixture(scope="module")
def v3(runtime_url) -> dict:
    return run_calls(
        "sagemaker-v3", "sagemaker_v3_openai_path.py", runtime_url, ENDPOINT, MAX_TOKENS
    )


def text(results: dict, case: str) -> str:
    assert "text" in results[case], f"{case}: {results[case].get('trace') or results[case]}"
    return results[case]["text"]


def test_the_sdk_v3_token_opens_the_openai_path(v3, greedy):
    assert text(v3, "token").startswith("sagemaker-api-key-")
    for case in ("chat", "chat stream", "inference component"):
        assert text(v3, case) == greedy, case


def test_a_token_that_is_not_good_is_refused(v3):
    assert text(v3, "missing token") == "401 invalid_api_key"
    assert text(v3, "malformed token") == "401 invalid_api_key"
    assert text(v3, "expired token") == "401 expired_api_key"
    assert text(v3, "wrong secret") == "403 invalid_api_key"


def test_the_openai_sdk_runs_unchanged_on_it(v3, runtime_url, greedy):
    token = text(v3, "token")
    results = run_calls(
        "openai", "openai_path_calls.py", runtime_url, ENDPOINT, MAX_TOKENS,
        extra_env={"SAGEMAKER_BEARER_TOKEN": token},
    )  # fmt: skip
    assert text(results, "chat") == text(results, "chat stream") == greedy
    name, arguments = json.loads(text(results, "named tool call"))
    assert name == "get_weather"
    jsonschema.validate(arguments, WEATHER)
    jsonschema.validate(json.loads(text(results, "structured")), CITY)
    assert text(results, "not a token") == "AuthenticationError 401"


# The frameworks' cases (tests/clients/calls/openai_frameworks_calls.py, instructor_calls.py)
# by what they return: the greedy text, a call of the weather tool, or a City.
TEXT_CASES = (
    "agents text", "agents stream", "pydantic-ai text", "pydantic-ai stream", "langchain text",
    "langchain stream",
)  # fmt: skip
CALL_CASES = ("agents tool call", "langchain tool call")
OBJECT_CASES = (
    "agents structured", "pydantic-ai native output", "langchain structured",
    "instructor tools", "instructor json schema",
)  # fmt: skip


def test_openai_only_frameworks_run_unchanged_on_it(v3, runtime_url, greedy):
    """The OpenAI Agents SDK, pydantic-ai, LangChain's ChatOpenAI and instructor, pointed at
    the endpoint's OpenAI base URL with the SDK v3's token, as their users would."""
    token = {"SAGEMAKER_BEARER_TOKEN": text(v3, "token")}
    results = {
        **run_calls(
            "openai-frameworks", "openai_frameworks_calls.py", runtime_url, ENDPOINT, MAX_TOKENS,
            extra_env=token,
        ),
        **run_calls(
            "instructor", "instructor_calls.py", runtime_url, ENDPOINT, MAX_TOKENS, extra_env=token
        ),
    }  # fmt: skip
    assert set(results) == {*TEXT_CASES, *CALL_CASES, *OBJECT_CASES}
    failed = {case: result for case, result in results.items() if "text" not in result}
    assert not failed, {
        case: result.get("trace", "")[-800:] or result for case, result in failed.items()
    }
    for case in TEXT_CASES:
        assert text(results, case) == greedy, case
    for case in CALL_CASES:
        name, arguments = json.loads(text(results, case))
        assert name == "get_weather", case
        jsonschema.validate(arguments, WEATHER)
    for case in OBJECT_CASES:
        jsonschema.validate(json.loads(text(results, case)), CITY)
