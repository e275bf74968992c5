"""Relaying: a client that goes away aborts its generation in vLLM."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import httpx
import pytest

from tests.support.stalls import WATCH

RUNNING = "vllm:num_requests_running"
GENERATED = "vllm:generation_tokens"
LONG = {"prompt": "class Parser:", "max_tokens": 1800, "ignore_eos": True}
ATTEMPTS = 3


def wait_idle(container) -> None:
    """Until vLLM runs nothing (within a minute of running time)."""
    began = time.monotonic()
    while container.metric(RUNNING) != 0:
        assert WATCH.since(began) < 60, "vLLM still generates after 60 s"
        time.sleep(0.05)


def assert_aborted(container, leave: Callable[[], None]) -> None:
    """`leave` is a client that goes away mid-answer. Passes once vLLM, idle again, stopped
    short of the answer's 1,800 tokens: an abort, not a generation run to its end (vLLM 0.32
    counts no aborts of its own). An attempt that ran to its end while the machine held a CPU
    (tests/support/stalls.py) proves nothing: the client's close or the front's abort may
    have waited in the held run queue while vLLM generated on, so it is made again. One that
    ran to its end while the machine ran throughout fails."""
    held = []
    for _ in range(ATTEMPTS):
        wait_idle(container)
        before = container.metric(GENERATED)
        began = time.monotonic()
        leave()
        wait_idle(container)
        tokens = container.metric(GENERATED) - before
        assert tokens > 0, "nothing was generated"
        if tokens < LONG["max_tokens"]:
            return
        stalled = WATCH.stalled(began, time.monotonic())
        assert stalled > 0, f"all {tokens:.0f} tokens were generated though the machine ran"
        held.append(round(stalled, 1))
    pytest.fail(f"every attempt ran to its end, each with a CPU held (for {held} s)")


def test_disconnect_mid_stream_aborts_the_generation(peagle):
    def leave() -> None:
        body = {**LONG, "stream": True}
        with (
            httpx.Client(timeout=60) as http,
            http.stream("POST", f"{peagle.url}/invocations", json=body) as answer,
        ):
            lines = answer.iter_lines()
            # Three events: vLLM is generating. Leaving the block closes the connection.
            for _ in range(3):
                assert next(line for line in lines if line.startswith("data: "))

    assert_aborted(peagle, leave)


def test_disconnect_mid_request_aborts_the_generation(peagle):
    def leave() -> None:
        try:
            # The client gives up (and closes the connection) while vLLM is still generating.
            answer = httpx.post(
                f"{peagle.url}/invocations", json=LONG, timeout=httpx.Timeout(5, read=1.5)
            )
        except httpx.ReadTimeout:
            return
        # Whole before the client could leave: only a test process kept from running for the
        # whole generation sees that, and assert_aborted tells it by the holds.
        assert answer.status_code == 200, answer.text[:400]

    assert_aborted(peagle, leave)


def test_disconnect_mid_body_of_records_aborts_every_record(peagle):
    """A Batch Transform job that gives up on a body (its invocation timeout) closes the
    connection: all the body's records stop. Three records of 1,800 tokens run together, so
    fewer than 1,800 tokens in all means each one stopped short."""
    body = "\n".join(json.dumps({**LONG, "prompt": f"class Parser{n}:"}) for n in range(3))

    def leave() -> None:
        try:
            answer = httpx.post(
                f"{peagle.url}/invocations",
                content=body,
                headers={"Content-Type": "application/jsonlines"},
                timeout=httpx.Timeout(5, read=1.5),
            )
        except httpx.ReadTimeout:
            return
        assert answer.status_code == 200, answer.text[:400]

    assert_aborted(peagle, leave)
