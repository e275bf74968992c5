"""Relaying: a client that goes away aborts its generation in vLLM."""

from __future__ import annotations

import time

import httpx
import pytest

RUNNING = "vllm:num_requests_running"
LONG = {"prompt": "class Parser:", "max_tokens": 1800, "ignore_eos": True}


def wait_for(condition, timeout: float) -> float:
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        if condition():
            return time.monotonic() - began
        time.sleep(0.05)
    raise AssertionError(f"condition not met within {timeout} s")


def test_disconnect_mid_stream_aborts_the_generation(peagle):
    with (
        httpx.Client(timeout=60) as http,
        http.stream("POST", f"{peagle.url}/invocations", json={**LONG, "stream": True}) as response,
    ):
        lines = response.iter_lines()
        for _ in range(3):
            next(line for line in lines if line.startswith("data: "))
        assert peagle.metric(RUNNING) == 1
    took = wait_for(lambda: peagle.metric(RUNNING) == 0, timeout=1.0)
    assert took < 1.0


def test_disconnect_mid_request_aborts_the_generation(peagle):
    with pytest.raises(httpx.ReadTimeout):
        # The client gives up (and closes the connection) while vLLM is still generating.
        httpx.post(f"{peagle.url}/invocations", json=LONG, timeout=httpx.Timeout(5, read=1.5))
    assert peagle.metric(RUNNING) in (0, 1)
    wait_for(lambda: peagle.metric(RUNNING) == 0, timeout=1.0)
    # vLLM counts it as aborted, not finished.
    text = httpx.get(f"{peagle.url}/metrics").text
    assert 'finished_reason="abort"' in text
