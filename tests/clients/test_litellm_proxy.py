"""Frameworks that speak only the OpenAI API reach a SageMaker endpoint through LiteLLM's proxy
(`sagemaker_chat/<endpoint>` models): the proxy at the release the suite pins, in its own
environment, in front of the local SageMaker Runtime and the real container with P-EAGLE on, and
the plain OpenAI SDK calling the proxy's /v1. Chat, tool calls under each tool_choice and
response_format json_schema, whole and streamed, answer what the container's own /v1 answers to
the same greedy request, and P-EAGLE's counts come back; what stops at the proxy fails as
recorded (docs/clients.md, the LiteLLM proxy section)."""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import time
from pathlib import Path

import httpx
import jsonschema
import pytest
import yaml

from harness.serving_container import free_port
from tests.support.client_envs import LOCAL_CREDENTIALS, client_python, run_calls
from tests.support.local_runtime import local_runtime
from tests.support.schemas import CITY

ENDPOINT = "my-endpoint"
MODEL = "demo"  # the proxy's name for the endpoint; MODEL-stream is its streamed twin
MAX_TOKENS = 96  # tool_choice "required" writes two calls; 64 cuts the second short
# What tests/clients/calls/litellm_proxy_calls.py asks (its prompts, common.py's tool), so
# the container can be asked the same.
PROMPT = [{"role": "user", "content": "def fibonacci(n):"}]
TOOL_PROMPT = [{"role": "user", "content": "What is the weather in Paris?"}]
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city now.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "enum": ["Paris", "Tokyo", "Lima"]},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city", "unit"],
        },
    },
}
TOOL_CHOICES = {
    "auto": "auto",
    "required": "required",
    "named": {"type": "function", "function": {"name": "get_weather"}},
}
JSON_PROMPT = [{"role": "user", "content": "Which city is sunny today? Answer in JSON."}]
JSON_SCHEMA = {
    "type": "json_schema",
    "json_schema": {"name": "city", "schema": CITY, "strict": True},
}
# The container's CustomAttributes on an answer it drafted for (serving/answers.py).
SPECULATION = (
    r"speculation-mean-acceptance-length=\d+\.\d\d,"
    r"speculation-draft-tokens=(?P<drafted>\d+),speculation-accepted-tokens=(?P<accepted>\d+)"
)
# What does not pass through the proxy, found in LiteLLM's own source: the case, why, and the
# error it must still end in (another error is a new failure). An entry that starts passing
# fails: drop it then.
UPSTREAM = {
    "metrics stream": (
        "litellm 1.110.2 builds every streamed chunk anew (litellm_core_utils/streaming_handler"
        ".py, CustomStreamWrapper.chunk_creator and model_response_creator) and carries over "
        "only the deltas, usage and provider_specific_fields, so the `metrics` of the "
        "container's usage chunk stop at the proxy; whole answers keep them, and CustomAttributes",
        "LookupError",
    ),
}


def proxy_config(runtime_url: str) -> dict:
    """The proxy's config: the endpoint under MODEL, and under MODEL-stream for streamed calls;
    credentials from the environment (LOCAL_CREDENTIALS here, a role on AWS).
    LiteLLM 1.110.2 sends to `sagemaker_base_url` as it is, streamed or not, so the local
    runtime needs a name per route; against a real endpoint one entry with no
    sagemaker_base_url serves both (llms/sagemaker/chat/transformation.py, get_complete_url)."""
    invoke = f"{runtime_url}/endpoints/{ENDPOINT}/invocations"
    routes = {MODEL: invoke, f"{MODEL}-stream": f"{invoke}-response-stream"}
    return {
        "model_list": [
            {
                "model_name": name,
                "litellm_params": {
                    "model": f"sagemaker_chat/{ENDPOINT}",
                    "sagemaker_base_url": url,
                    "aws_region_name": "us-east-1",
                },
            }
            for name, url in routes.items()
        ],
        "general_settings": {"master_key": "os.environ/LITELLM_MASTER_KEY"},
    }


def wait_ready(proxy: subprocess.Popen, url: str, log: Path, limit: float = 120) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        assert proxy.poll() is None, (
            f"the proxy exited {proxy.returncode}:\n{log.read_text()[-3000:]}"
        )
        try:
            if httpx.get(f"{url}/health/readiness", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"the proxy was not ready in {limit:.0f} s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def proxy(peagle, tmp_path_factory):
    """LiteLLM's proxy in front of the local runtime to the P-EAGLE container: (URL, key)."""
    python = client_python("litellm-proxy")
    folder = tmp_path_factory.mktemp("litellm-proxy")
    key = f"sk-{secrets.token_hex(16)}"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with local_runtime(peagle.url) as runtime_url:
        config = folder / "config.yaml"
        config.write_text(yaml.safe_dump(proxy_config(runtime_url), sort_keys=False))
        log = folder / "proxy.log"
        argv = [str(python), "-m", "litellm.proxy.proxy_cli", "--config", str(config)]
        argv += ["--port", str(port), "--host", "127.0.0.1"]
        env = {**os.environ, **LOCAL_CREDENTIALS, "LITELLM_MASTER_KEY": key}
        with log.open("wb") as output:
            # Its own folder: the proxy reads a .env from where it starts.
            process = subprocess.Popen(argv, cwd=folder, env=env, stdout=output, stderr=output)
        try:
            wait_ready(process, url, log)
            yield url, key
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=15)


def container_answer(http: httpx.Client, model: str, messages: list, **fields) -> dict:
    body = {"model": model, "messages": messages, "max_tokens": MAX_TOKENS, "temperature": 0}
    answer = http.post("/v1/chat/completions", json={**body, **fields})
    assert answer.status_code == 200, answer.text
    return answer.json()["choices"][0]["message"]


def container_stream_metrics(http: httpx.Client, model: str) -> dict | None:
    """The speculation counts in the container's own stream, asked for with include_usage."""
    body = {"model": model, "messages": PROMPT, "max_tokens": MAX_TOKENS, "temperature": 0}
    body |= {"stream": True, "stream_options": {"include_usage": True}}
    found = None
    with http.stream("POST", "/v1/chat/completions", json=body) as answer:
        for line in answer.iter_lines():
            if line.startswith("data: {"):
                chunk = json.loads(line.removeprefix("data: "))
                found = (chunk.get("metrics") or {}).get("speculative_decoding") or found
    return found


@pytest.fixture(scope="module")
def expected(peagle) -> dict[str, object]:
    """What the container's own /v1 answers to each case's request, greedy and whole."""
    with httpx.Client(base_url=peagle.url, timeout=120) as http:
        model = http.get("/v1/models").json()["data"][0]["id"]
        found: dict[str, object] = {"chat": container_answer(http, model, PROMPT)["content"]}
        for name, choice in TOOL_CHOICES.items():
            message = container_answer(
                http, model, TOOL_PROMPT, tools=[WEATHER_TOOL], tool_choice=choice
            )
            calls = [
                [call["function"]["name"], json.loads(call["function"]["arguments"])]
                for call in message.get("tool_calls") or []
            ]
            found[f"tools {name}"] = {"calls": calls, "content": message["content"] or None}
        text = container_answer(http, model, JSON_PROMPT, response_format=JSON_SCHEMA)["content"]
        found["json_schema"] = json.loads(text)
        # The stream's counts are there to pass on (UPSTREAM's "metrics stream").
        assert container_stream_metrics(http, model), "the container's stream has no metrics"
    return found


# Each case is asked whole and streamed; "custom attributes" only whole (a stream has none).
KINDS = ["chat", *(f"tools {name}" for name in TOOL_CHOICES), "json_schema", "metrics"]


def check(case: str, text: str, expected: dict[str, object]) -> None:
    """One case's answer through the proxy against the container's own."""
    kind = case.removesuffix(" stream")
    if kind == "custom attributes":
        # P-EAGLE's counts for this answer, as boto3's CustomAttributes would show them.
        counts = re.fullmatch(SPECULATION, text)
        assert counts, (case, text)
        assert 0 <= int(counts["accepted"]) <= int(counts["drafted"]), (case, text)
    elif kind == "metrics":
        # vLLM's per-request speculation, as the container's own answer carries it.
        stats = json.loads(text)
        assert isinstance(stats, dict), (case, text)
        assert 0 <= stats["num_accepted_draft_tokens"] <= stats["num_draft_tokens"], stats
        assert stats["mean_acceptance_length"] >= 1, stats
    elif kind == "chat":
        assert text == expected[kind], case
    elif kind.startswith("tools "):
        answer = json.loads(text)
        assert answer["calls"], (case, answer)  # the demo target calls the tool
        assert answer == expected[kind], case
    else:
        answer = json.loads(text)
        jsonschema.validate(answer, CITY)
        assert answer == expected[kind], case


@pytest.fixture(scope="module")
def results(proxy) -> dict[str, dict]:
    """Every case of the calls script, run once through the proxy."""
    url, key = proxy
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", key)  # the SDK's own variable, as a user sets it
        found = run_calls("litellm-proxy", "litellm_proxy_calls.py", url, MODEL, MAX_TOKENS)
    asked_both_ways = {f"{kind}{way}" for kind in KINDS for way in ("", " stream")}
    assert set(found) == asked_both_ways | {"custom attributes"}, sorted(found)
    return found


def test_the_openai_sdk_through_litellms_proxy_gets_the_containers_answers(results, expected):
    for case, result in results.items():
        if case not in UPSTREAM:
            assert "text" in result, f"{case}: {result.get('trace') or result}"
            check(case, result["text"], expected)


def test_what_does_not_pass_through_the_proxy_fails_as_recorded(results):
    for case, (_, error) in UPSTREAM.items():
        assert "error" in results[case], f"{case} passes now: drop it from UPSTREAM"
        assert error in results[case]["error"], (case, results[case])
    pytest.xfail("; ".join(f"{case}: {why}" for case, (why, _) in UPSTREAM.items()))


# The section of docs/clients.md that shows this: its local config is the one written here, its
# real-endpoint config the same bar sagemaker_base_url, and its snippet runs through the proxy.
CLIENTS_DOC = Path(__file__).parents[2] / "docs" / "clients.md"
DOC_HEADING = "## Older OpenAI SDKs and clients without bearer tokens: LiteLLM's proxy\n"
DOC_MODEL = "qwen3-coder-peagle"


def doc_section() -> str:
    return CLIENTS_DOC.read_text().split(DOC_HEADING, 1)[1].split("\n## ", 1)[0]


def test_the_documented_configs_are_the_ones_tested():
    local, real = proxy_config("http://127.0.0.1:8081"), proxy_config("unused")
    for entry in real["model_list"]:
        entry["litellm_params"].pop("sagemaker_base_url")
        entry["litellm_params"]["model"] = f"sagemaker_chat/{DOC_MODEL}"
        entry["model_name"] = DOC_MODEL
    real["model_list"] = real["model_list"][:1]  # one entry serves both routes
    configs = [
        yaml.safe_load(code) for code in re.findall(r"```yaml\n(.*?)```", doc_section(), re.S)
    ]
    assert configs == [real, local]


def test_the_documented_snippet_runs_through_the_proxy(proxy, peagle):
    url, key = proxy
    code = "\n".join(re.findall(r"```python\n(.*?)```", doc_section(), flags=re.S))
    code = code.replace("http://127.0.0.1:4000", url).replace(DOC_MODEL, MODEL)
    ran = subprocess.run(
        [str(client_python("litellm-proxy")), "-c", code],
        env={**os.environ, "LITELLM_MASTER_KEY": key},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    messages = [{"role": "user", "content": "What is deep learning?"}]
    body = {"messages": messages, "max_tokens": 32, "temperature": 0}
    greedy = httpx.post(f"{peagle.url}/invocations", json=body, timeout=120).json()
    assert ran.stdout == greedy["choices"][0]["message"]["content"] + "\n"
