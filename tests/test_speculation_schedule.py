"""K that follows the batch size (`num_speculative_tokens_per_batch_size`) with P-EAGLE: the
engine drafts the schedule's K for each step, and greedy answers stay those of the target
alone while requests run across every range of the schedule (vllm_patches/
parallel_drafting_dynamic_k.py; without it the first step below the largest K crashed the
engine: "shape '[-1, 3]' is invalid for input of size 133")."""

from __future__ import annotations

import threading
import time

import httpx

from tests.support.containers import SCHEDULED_CONFIG

SCHEDULE = SCHEDULED_CONFIG["num_speculative_tokens_per_batch_size"]
LARGEST_K = SCHEDULED_CONFIG["num_speculative_tokens"]
PROMPTS = [
    "def fibonacci(n):",
    "import os\nimport sys\n\n",
    "class Stack:\n    def __init__(self):",
    "for i in range(10):",
    "def read_config(path):",
    "The quick brown fox",
    "def parse_args(argv):",
    "import json\n\n",
]
# Requests start a little apart and ask for different lengths, so the batch grows one request
# at a time to all of them and shrinks again as the shorter ones end: every range of the
# schedule is crossed both ways while requests are running.
STAGGER_SECONDS = 0.15


def payload(index: int) -> dict:
    return {
        "prompt": PROMPTS[index],
        "max_tokens": 64 + 16 * index,
        "temperature": 0,
        "ignore_eos": True,
        "return_token_ids": True,
    }


def tokens(url: str, body: dict) -> list[int]:
    response = httpx.post(f"{url}/invocations", json=body, timeout=300)
    assert response.status_code == 200, response.text
    return response.json()["choices"][0]["token_ids"]


def staggered(url: str) -> tuple[list[list[int] | None], list[tuple[float, float]]]:
    """Every payload, each started STAGGER_SECONDS after the one before; the answers' tokens
    and when each request ran (client clock)."""
    answers: list[list[int] | None] = [None] * len(PROMPTS)
    spans = [(0.0, 0.0)] * len(PROMPTS)
    failures: list[BaseException] = []

    def send(index: int) -> None:
        began = time.monotonic()
        try:
            answers[index] = tokens(url, payload(index))
        except BaseException as failure:  # the main thread raises it, with the answer's text
            failures.append(failure)
        spans[index] = (began, time.monotonic())

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(PROMPTS))]
    for thread in threads:
        thread.start()
        time.sleep(STAGGER_SECONDS)
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    return answers, spans


def most_at_once(spans: list[tuple[float, float]]) -> int:
    return max(sum(start <= moment < end for start, end in spans) for moment, _ in spans)


def test_greedy_answers_equal_the_targets_across_every_range_of_the_schedule(scheduled, plain):
    restarts = scheduled.metric("serving_engine_restarts_total")
    answers, spans = staggered(scheduled.url)
    # The test means something only if the batch went past the last range's start.
    assert most_at_once(spans) >= SCHEDULE[-1][0], spans
    for index, answer in enumerate(answers):
        assert answer == tokens(plain.url, payload(index)), f"prompt {index} differs"
    assert scheduled.metric("serving_engine_restarts_total") == restarts


def test_one_request_alone_drafts_the_largest_k(scheduled):
    drafts = scheduled.metric("vllm:spec_decode_num_drafts_total")
    drafted = scheduled.metric("vllm:spec_decode_num_draft_tokens_total")
    tokens(scheduled.url, payload(0))
    drafts = scheduled.metric("vllm:spec_decode_num_drafts_total") - drafts
    drafted = scheduled.metric("vllm:spec_decode_num_draft_tokens_total") - drafted
    assert drafts > 0
    assert drafted == LARGEST_K * drafts


def test_a_full_batch_drafts_fewer_tokens_per_step(scheduled):
    """With requests running together the schedule's smaller K (and no drafts at all from
    batch 5) take over: fewer draft tokens per drafting step than K=7 alone gives."""
    drafts = scheduled.metric("vllm:spec_decode_num_drafts_total")
    drafted = scheduled.metric("vllm:spec_decode_num_draft_tokens_total")
    staggered(scheduled.url)
    drafts = scheduled.metric("vllm:spec_decode_num_drafts_total") - drafts
    drafted = scheduled.metric("vllm:spec_decode_num_draft_tokens_total") - drafted
    assert 0 < drafted / drafts < LARGEST_K
