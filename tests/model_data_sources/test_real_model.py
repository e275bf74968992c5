"""The real pair (`make real-model`): SmolLM2-135M-Instruct and its shipped P-EAGLE head, what
`make serve` serves. What only a real model can show, and a toy never does: an English answer
to the README's curl, drafts accepted on real text at the level the heads' manifest records,
and JSON answers under a grammar that say what the model says freely."""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from model_data_sources.smollm2 import recipe, shipped_heads
from tests.support.containers import REAL_K

README_CURL = {
    "messages": [{"role": "user", "content": "What is deep learning?"}],
    "max_tokens": 32,
    "temperature": 0,
}
COMMON_WORDS = {"the", "a", "of", "and", "is", "that", "to", "in", "it", "as", "on", "from"}
HELD_OUT_CHATS = 12
MAX_TOKENS = 64
# The recorded figure is vLLM's offline run over every held-out chat prompt, 96 tokens each;
# this drafts fewer prompts and shorter answers through the container.
RECORDED_SHARE = 0.8
JSON_PROBES = [
    f"Extract the name, age and city from this text as a JSON object, and write nothing "
    f"else: {name} is a {age}-year-old {job} who lives in {city}."
    for name, age, city, job in (
        ("Maria Lopez", 34, "Madrid", "engineer"),
        ("Kofi Mensah", 29, "Accra", "teacher"),
        ("Ingrid Berg", 47, "Bergen", "pilot"),
        ("Ravi Patel", 61, "Pune", "farmer"),
        ("Lena Vogel", 38, "Graz", "chemist"),
        ("Tom Baker", 55, "Cardiff", "plumber"),
    )
]


def chat(real, body: dict) -> httpx.Response:
    response = httpx.post(f"{real.url}/invocations", json=body, timeout=300)
    assert response.status_code == 200, response.text
    return response


def test_the_readmes_curl_gets_an_english_answer_with_drafts_accepted(real):
    response = chat(real, README_CURL)
    text = response.json()["choices"][0]["message"]["content"]
    words = re.findall(r"[a-z]+", text.lower())
    assert "learning" in words, text
    assert len(COMMON_WORDS & set(words)) >= 3, text
    assert float(response.headers["x-speculation-mean-acceptance-length"]) > 1.5, text


def test_drafts_are_accepted_on_held_out_chat_at_the_level_the_manifest_records(real):
    """Chat prompts no head saw (the recipe's held-out split), drafted through the container
    at the K the manifest records a figure for."""
    recorded = shipped_heads.manifest()["heads"]["eagle"]["held_out"][str(REAL_K)]["chat"]
    prompts = recipe.held_out_sets(recipe.split())["chat"][:HELD_OUT_CHATS]
    bodies = [{**prompt, "max_tokens": MAX_TOKENS, "temperature": 0} for prompt in prompts]
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda body: chat(real, body), bodies))
    drafted = sum(int(answer.headers["x-speculation-draft-tokens"]) for answer in answers)
    accepted = sum(int(answer.headers["x-speculation-accepted-tokens"]) for answer in answers)
    length = 1 + accepted / (drafted / REAL_K)
    assert length >= RECORDED_SHARE * recorded["mean_acceptance_length"], (
        f"acceptance length {length:.2f} on {len(prompts)} held-out chat prompts; the manifest "
        f"records {recorded['mean_acceptance_length']:.2f}"
    )


def as_object(text: str) -> dict | None:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def test_a_json_answer_under_the_grammar_is_the_free_answer_wherever_that_is_valid(real):
    """Greedy decoding under `json_object` may only forbid what is not JSON: where the model's
    free answer is a JSON object, the constrained one is the same text."""
    compared = 0
    for prompt in JSON_PROBES:
        body = {"messages": [{"role": "user", "content": prompt}], "max_tokens": 96}
        body["temperature"] = 0
        free = chat(real, body).json()["choices"][0]["message"]["content"]
        constrained_body = {**body, "response_format": {"type": "json_object"}}
        constrained = chat(real, constrained_body).json()["choices"][0]["message"]["content"]
        if as_object(free.strip()) is not None:
            compared += 1
            assert constrained.strip() == free.strip(), prompt
    if compared < 3:
        pytest.fail(f"only {compared} of {len(JSON_PROBES)} free answers were JSON objects")
