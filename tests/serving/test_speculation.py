"""Speculation is lossless: greedy output with P-EAGLE equals the target's own output; with the
trained demo pairs, P-EAGLE's drafts are also accepted."""

from __future__ import annotations

import httpx
import pytest

from tests.support.containers import TRAINED
from workloads.prompts import humaneval_prompts, payload_for

PROMPTS = [
    "def fibonacci(n):",
    "What is deep learning?",
    "import os\nimport sys\n\n",
    "class Stack:\n    def __init__(self):",
    "The quick brown fox",
    "for i in range(10):",
]


# The README's first request after `make serve`.
README_REQUEST = {
    "messages": [{"role": "user", "content": "What is deep learning?"}],
    "max_tokens": 32,
    "temperature": 0,
}


def greedy_tokens(url: str, prompt: str, **sampling) -> list[int]:
    payload = {
        "prompt": prompt,
        "max_tokens": 64,
        "temperature": 0,
        "ignore_eos": True,
        "return_token_ids": True,
    } | sampling
    response = httpx.post(f"{url}/invocations", json=payload, timeout=120)
    assert response.status_code == 200, response.text
    tokens = response.json()["choices"][0]["token_ids"]
    assert len(tokens) == 64
    return tokens


@pytest.mark.parametrize("prompt", PROMPTS)
def test_greedy_tokens_identical_with_and_without_p_eagle(peagle, plain, prompt):
    drafts_before = peagle.metric("vllm:spec_decode_num_drafts_total")
    with_p_eagle = greedy_tokens(peagle.url, prompt)
    assert peagle.metric("vllm:spec_decode_num_drafts_total") > drafts_before
    assert with_p_eagle == greedy_tokens(plain.url, prompt)


# The sampling settings clients send, each through the rejection sampler's constraints
# (min_p and logit_bias vLLM refuses under speculation, a 400 that says so).
SAMPLED = {
    "top-k": {"temperature": 0.8, "top_k": 5},
    "top-p": {"temperature": 0.8, "top_p": 0.9},
    "top-k-and-top-p": {"temperature": 0.8, "top_k": 5, "top_p": 0.9},
}


@pytest.mark.parametrize("sampling", SAMPLED.values(), ids=SAMPLED)
def test_a_sampled_request_is_answered_with_p_eagle_on(peagle, sampling):
    """A top-k sample once ended the engine at its first step (vllm_patches/top_k_of_no_rows):
    each setting is answered, twice, and the engine is still up."""
    payload = {"messages": [{"role": "user", "content": "Name a colour."}], "max_tokens": 16}
    for seed in (1, 2):
        response = httpx.post(
            f"{peagle.url}/invocations", json=payload | sampling | {"seed": seed}, timeout=120
        )
        assert response.status_code == 200, response.text
        assert response.json()["usage"]["completion_tokens"] > 0
    assert peagle.ping() == 200


def test_sampling_from_the_top_token_alone_answers_what_greedy_decoding_does(peagle):
    """top_k=1 leaves one token to draw: with P-EAGLE's drafts verified against it, the answer
    is the greedy one, token for token."""
    greedy = greedy_tokens(peagle.url, PROMPTS[0])
    assert greedy_tokens(peagle.url, PROMPTS[0], temperature=1.0, top_k=1, seed=3) == greedy


def test_plain_container_does_not_speculate(plain):
    greedy_tokens(plain.url, PROMPTS[0])
    assert plain.metric("vllm:spec_decode_num_drafts_total") == 0


def acceptance_on_code_prompts(container) -> float:
    """Mean acceptance length over 4 HumanEval prompts, 64 greedy tokens each, from the
    engine's counters."""
    drafts = container.metric("vllm:spec_decode_num_drafts_total")
    accepted = container.metric("vllm:spec_decode_num_accepted_tokens_total")
    for prompt in humaneval_prompts()[:4]:
        payload = payload_for(prompt, "chat") | {"max_tokens": 64, "temperature": 0}
        response = httpx.post(f"{container.url}/invocations", json=payload, timeout=120)
        assert response.status_code == 200, response.text
    drafts = container.metric("vllm:spec_decode_num_drafts_total") - drafts
    accepted = container.metric("vllm:spec_decode_num_accepted_tokens_total") - accepted
    assert drafts > 0
    return 1 + accepted / drafts


def test_trained_p_eagle_head_gets_its_drafts_accepted(peagle):
    """What the trained pair is for: on code prompts, P-EAGLE at K=3 has most of its drafts
    accepted (the random pair accepts none: mean acceptance length 1.0)."""
    if not TRAINED:
        pytest.skip("the trained pair is not built here (make trained-model); make test builds it")
    assert acceptance_on_code_prompts(peagle) >= 1.5


def test_the_quick_pair_make_serve_builds_first_gets_its_drafts_accepted(quick):
    """A newcomer's first `make serve` serves the quick pair: P-EAGLE at K=3 has its drafts
    accepted, well above a random head's 1.0, on the README's first request (prose, which the
    code-trained pair drafts worst: 1.63 on the shipped pair, 2026-12-01) and on code prompts
    (what it was trained for)."""
    response = httpx.post(f"{quick.url}/invocations", json=README_REQUEST, timeout=120)
    assert response.status_code == 200, response.text
    length = response.headers.get("x-speculation-mean-acceptance-length")
    assert length is not None, f"no speculation in the answer: {response.text}"
    code = acceptance_on_code_prompts(quick)
    assert float(length) >= 1.3 and code >= 2, (float(length), code)
