"""The head rollout rehearsed with real containers: the trained head in production, a random
head of the same shape as the shadow, the local runtime mirroring half the calls, and
compare telling the two apart from the containers' own metrics, while production's answers
stay those of the container alone."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from deploy import container_figures
from harness.bad_heads import random_head_tree
from harness.host import host_environment
from tests.support.containers import DEMO_ROOT, PEAGLE_CONFIG, TRAINED, Container
from tests.support.local_runtime import local_runtime, runtime_client

PROMPTS = [
    "def fibonacci(n):",
    "def is_prime(n):",
    "def reverse_words(sentence):",
    "def flatten(nested):",
    "Write a haiku about the sea.",
    "def count_vowels(text):",
    "def merge_sorted(a, b):",
    "Explain what a hash map is.",
]


def chat(prompt: str) -> dict:
    return {"messages": [{"role": "user", "content": prompt}], "max_tokens": 32, "temperature": 0}


@pytest.fixture(scope="module")
def random_shadow(peagle, tmp_path_factory):
    if not TRAINED:
        pytest.skip("needs the trained demo pair (make trained-model) for a head worth keeping")
    tree = random_head_tree(DEMO_ROOT, tmp_path_factory.mktemp("random-head"))
    env = host_environment(
        OPT_ML_ROOT=str(tree),
        SM_VLLM_SPECULATIVE_CONFIG=json.dumps(PEAGLE_CONFIG),
        SERVING_VARIANT_NAME="Shadow",
        SERVING_EMF_INTERVAL_SECONDS="0",
    )
    with Container("random-shadow", env).start() as shadow:
        shadow.wait_ready()
        yield shadow


def answer_of(body: bytes) -> dict:
    """What a client reads: the choices and the usage (the id and time differ per call)."""
    answer = json.loads(body)
    return {"choices": answer["choices"], "usage": answer["usage"]}


def test_compare_tells_a_random_shadow_head_apart_and_production_is_unchanged(
    peagle, random_shadow
):
    before = container_figures.scrape(peagle.url), container_figures.scrape(random_shadow.url)
    calls = [chat(prompt) for prompt in PROMPTS * 2]
    with local_runtime(peagle.url, shadow_url=random_shadow.url, shadow_sample=50) as url:
        runtime = runtime_client(url)
        through_runtime = [
            runtime.invoke_endpoint(EndpointName="rehearsal", Body=json.dumps(call))["Body"].read()
            for call in calls
        ]
        deadline = time.monotonic() + 300
        while (counters := httpx.get(f"{url}/shadow").json())["in_flight"] and (
            time.monotonic() < deadline
        ):
            time.sleep(0.5)
    assert (counters["mirrored"], counters["answered"], counters["failed"]) == (8, 8, 0)
    direct = [httpx.post(f"{peagle.url}/invocations", json=call, timeout=120) for call in calls]
    assert [answer_of(body) for body in through_runtime] == [
        answer_of(answer.content) for answer in direct
    ]

    production = container_figures.since(container_figures.scrape(peagle.url), before[0])
    shadow = container_figures.since(container_figures.scrape(random_shadow.url), before[1])
    assert shadow.requests == 8
    table = container_figures.comparison(production, shadow, peagle.url, random_shadow.url)
    length = table.headline()
    assert length.production.mean > 1.5, table.render()
    assert length.shadow.mean < 1.1, table.render()
    assert length.verdict() == "yes: shadow worse", table.render()
    assert "do not promote it" in table.render()
