"""Load that walks a K-by-batch-size schedule's ranges: requests started a little apart with
different lengths, so the batch grows one request at a time and shrinks again while they run
(tests/serving/test_speculation_schedule.py, tests/serving/test_cpu_async_scheduling.py)."""

from __future__ import annotations

import threading
import time

import httpx

from tests.support.interrupts import retried

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
# schedule is crossed both ways while requests are running. The first must still run when
# the last starts (1.05 s later): at K=7 the trained pair wrote 64 tokens in 0.83 s.
STAGGER_SECONDS = 0.15
FIRST_TOKENS = 192
# A machine that holds the client's CPU while the engine answers starts the requests too far
# apart for the batch to grow (CI, 2026-12-07: 3 at once, the client held 3.2 s): the load is
# sent again, up to this many times in all.
ATTEMPTS = 3


def payload(index: int) -> dict:
    return {
        "prompt": PROMPTS[index],
        "max_tokens": FIRST_TOKENS + 16 * index,
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
        # Each waits for its own moment: a thread the machine starts late delays no other.
        time.sleep(max(0.0, start + index * STAGGER_SECONDS - time.monotonic()))
        began = time.monotonic()
        try:
            answers[index] = tokens(url, payload(index))
        except BaseException as failure:  # the main thread raises it, with the answer's text
            failures.append(failure)
        spans[index] = (began, time.monotonic())

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(PROMPTS))]
    start = time.monotonic() + 0.5  # every thread started by then, on a machine not held
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    return answers, spans


def most_at_once(spans: list[tuple[float, float]]) -> int:
    return max(sum(start <= moment < end for start, end in spans) for moment, _ in spans)


def reaching(url: str, batch: int) -> list[list[int] | None]:
    """The answers of a staggered load whose requests ran `batch` at once at some moment."""
    reached: list[list[list[int] | None]] = []

    def attempt() -> str | None:
        answers, spans = staggered(url)
        if most_at_once(spans) >= batch:
            reached.append(answers)
            return None
        return f"at most {most_at_once(spans)} of {len(spans)} requests ran at once; spans {spans}"

    retried("the staggered load", attempt, ATTEMPTS, f"it never ran {batch} requests at once")
    return reached[0]


def assert_greedy_answers_equal_across_the_schedule(engine, plain, schedule: list) -> None:
    """The staggered load on `engine` (a K schedule), each answer against the target alone
    (`plain`), and no engine restart meanwhile."""
    restarts = engine.metric("serving_engine_restarts_total")
    # It means something only if the batch went past the last range's start.
    answers = reaching(engine.url, schedule[-1][0])
    for index, answer in enumerate(answers):
        assert answer == tokens(plain.url, payload(index)), f"prompt {index} differs"
    assert engine.metric("serving_engine_restarts_total") == restarts
