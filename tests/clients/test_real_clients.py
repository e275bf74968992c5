"""The client libraries people already use, each at a pinned current release in an
environment of its own, unchanged, against the real container: through the local SageMaker
Runtime for the SageMaker clients, on /v1 for the OpenAI SDK. Every client that can be
compared returns the same greedy text, sync and streamed."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.support.client_envs import CLIENTS as CLIENTS_DIR
from tests.support.client_envs import LOCAL_CREDENTIALS, client_python, run_calls
from tests.support.local_runtime import local_runtime

MAX_TOKENS = 24
PROMPT = "def fibonacci(n):"
ENDPOINT = "my-endpoint"
# Known upstream bugs no container can fix: the case, the release, what it does.
UPSTREAM = {
    "Endpoint.invoke_with_response_stream": "sagemaker 3.27.0: Endpoint.invoke_with_response_"
    "stream's transform() calls .get() on botocore's EventStream (AttributeError) before a "
    "byte is read, against any endpoint",
}


@pytest.fixture(scope="module")
def runtime_url(peagle):
    with local_runtime(peagle.url) as url:
        yield url


@pytest.fixture(scope="module")
def greedy(peagle) -> dict[str, str]:
    """What the engine itself says to the chat and to the bare prompt (TGI's inputs)."""
    chat = httpx.post(
        f"{peagle.url}/invocations",
        json={
            "messages": [{"role": "user", "content": PROMPT}],
            "max_tokens": MAX_TOKENS,
            "temperature": 0,
        },
        timeout=120,
    ).json()["choices"][0]["message"]["content"]
    completion = httpx.post(
        f"{peagle.url}/invocations",
        json={"prompt": PROMPT, "max_tokens": MAX_TOKENS, "temperature": 0},
        timeout=120,
    ).json()["choices"][0]["text"]
    return {"chat": chat, "prompt": completion}


def check(results: dict, expected: dict[str, str]) -> None:
    """Every case returned its expected text; a known upstream bug fails as recorded."""
    assert set(results) == set(expected), results.keys()
    upstream = []
    for case, text in expected.items():
        result = results[case]
        if case in UPSTREAM:
            assert "error" in result, f"{case} works now: drop it from UPSTREAM ({result})"
            upstream.append(f"{case}: {UPSTREAM[case]}")
            continue
        assert "text" in result, f"{case}: {result.get('trace') or result}"
        assert result["text"] == text, case
    if upstream:
        pytest.xfail("; ".join(upstream))


# Each client's script, its environment, whether it calls the local runtime or the
# container's /v1, and its cases with the greedy text each must return: the chat's, or the
# bare prompt's (TGI's inputs).
CLIENTS = {
    "litellm": (
        "litellm-langchain",
        "litellm_calls.py",
        "runtime",
        {
            "sagemaker_chat": "chat",
            "sagemaker_chat stream": "chat",
            "sagemaker": "prompt",
            # LiteLLM drops a stream's leading whitespace-only chunk on this route.
            "sagemaker stream": "prompt, its leading whitespace dropped",
        },
    ),
    "langchain": (
        "litellm-langchain",
        "langchain_calls.py",
        "runtime",
        {
            "ChatSagemakerEndpoint": "chat",
            "ChatSagemakerEndpoint stream": "chat",
            "SagemakerEndpoint": "prompt",
            "SagemakerEndpoint stream": "prompt",
            "SagemakerEndpoint stream, no stream in body": "prompt",
        },
    ),
    "sagemaker sdk v2": (
        "sagemaker-v2",
        "sagemaker_v2_calls.py",
        "runtime",
        {"Predictor bytes": "chat", "Predictor JSON": "chat", "predict_stream": "chat"},
    ),
    "sagemaker sdk v3": (
        "sagemaker-v3",
        "sagemaker_v3_calls.py",
        "runtime",
        {"Endpoint.invoke": "chat", "Endpoint.invoke_with_response_stream": "chat"},
    ),
    "openai sdk": (
        "openai",
        "openai_calls.py",
        "container",
        {"chat": "chat", "chat stream": "chat"},
    ),
}


@pytest.mark.parametrize("client", list(CLIENTS))
def test_the_client_returns_the_greedy_text_sync_and_streamed(client, peagle, runtime_url, greedy):
    env, script, target, cases = CLIENTS[client]
    url = runtime_url if target == "runtime" else peagle.url
    results = run_calls(env, script, url, ENDPOINT, MAX_TOKENS)
    texts = {**greedy, "prompt, its leading whitespace dropped": greedy["prompt"].lstrip()}
    check(results, {case: texts[kind] for case, kind in cases.items()})


# The snippets a reader copies (docs/clients.md), run as they are in each client's own
# environment: section heading to environment, and the answers each prints.
CLIENTS_DOC = Path(__file__).parents[2] / "docs" / "clients.md"
DOC_SECTIONS = {
    "LiteLLM": ("litellm-langchain", ("chat", "prompt")),
    "LangChain": ("litellm-langchain", ("chat", "prompt")),
    "SageMaker Python SDK v2": ("sagemaker-v2", ("chat",)),
    "SageMaker Python SDK v3": ("sagemaker-v3", ("chat",)),
    "OpenAI Python SDK": ("openai", ("chat",)),
}
DOC_PROMPT = "What is deep learning?"


def doc_sections() -> dict[str, tuple[str, str, str]]:
    """Title to (the package and release its heading names, its Python code)."""
    sections = {}
    for section in CLIENTS_DOC.read_text().split("\n## ")[1:]:
        heading, _, body = section.partition("\n")
        code = "\n".join(re.findall(r"```python\n(.*?)```", body, flags=re.DOTALL))
        if named := re.fullmatch(r"(.*) \((\S+) (\S+)\)", heading):
            title, package, version = named.groups()
            sections[title] = (package, version, code)
    return sections


def frozen_version(env: str, package: str) -> str:
    text = (CLIENTS_DIR / "requirements" / f"{env}.txt").read_text()
    return re.search(rf"^{re.escape(package)}==(\S+)$", text, flags=re.MULTILINE).group(1)


@pytest.fixture(scope="module")
def doc_greedy(peagle) -> dict[str, str]:
    messages = [{"role": "user", "content": DOC_PROMPT}]
    chat = httpx.post(
        f"{peagle.url}/invocations",
        json={"messages": messages, "max_tokens": 32, "temperature": 0},
        timeout=120,
    ).json()["choices"][0]["message"]["content"]
    prompt = httpx.post(
        f"{peagle.url}/invocations",
        json={"prompt": DOC_PROMPT, "max_tokens": 32, "temperature": 0},
        timeout=120,
    ).json()["choices"][0]["text"]
    return {"chat": chat, "prompt": prompt}


@pytest.mark.parametrize("section", list(DOC_SECTIONS))
def test_the_documented_snippet_runs_unchanged(section, peagle, runtime_url, doc_greedy):
    env, answers = DOC_SECTIONS[section]
    package, version, code = doc_sections()[section]
    assert version == frozen_version(env, package), "the heading names another release"
    code = code.replace("http://127.0.0.1:8081", runtime_url)
    code = code.replace("http://localhost:8080", peagle.url)
    ran = subprocess.run(
        [str(client_python(env)), "-c", code],
        env={**os.environ, **LOCAL_CREDENTIALS},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    for answer in answers:
        assert doc_greedy[answer] in ran.stdout, (answer, ran.stdout[-2000:])
