"""The request gate: 503 while not serving, 429 past the concurrency limit, the access log."""

from __future__ import annotations

import threading
import time

import httpx

from tests.conftest import LOADING_PROBE, PEAGLE_MAX_CONCURRENT

LONG_STREAM = {"prompt": "def main():", "max_tokens": 1500, "ignore_eos": True, "stream": True}


def test_invocations_while_loading_get_a_503_json_error(peagle):
    status, body = peagle.loading_invocation
    assert status == 503
    assert "loading" in body["error"]["message"]


def test_past_the_limit_requests_get_429_at_once_and_the_rest_complete(peagle):
    admitted = threading.Barrier(PEAGLE_MAX_CONCURRENT + 1, timeout=60)
    release = threading.Event()
    outcomes: list[str] = []

    def hold_a_stream():
        with httpx.Client(timeout=60) as http:
            with http.stream("POST", f"{peagle.url}/invocations", json=LONG_STREAM) as response:
                lines = response.iter_lines()
                next(line for line in lines if line.startswith("data: "))
                admitted.wait()
                release.wait(60)
                outcomes.append(str(response.status_code))
        # Leaving the block closes the stream: the front aborts it in vLLM.

    threads = [threading.Thread(target=hold_a_stream) for _ in range(PEAGLE_MAX_CONCURRENT)]
    for thread in threads:
        thread.start()
    try:
        admitted.wait()
        began = time.monotonic()
        refused = httpx.post(f"{peagle.url}/invocations", json=LOADING_PROBE, timeout=10)
        took = time.monotonic() - began
        assert refused.status_code == 429, refused.text
        assert refused.headers["retry-after"]
        assert "MAX_CONCURRENT_REQUESTS" in refused.json()["error"]["message"]
        assert took < 0.5
        assert httpx.get(f"{peagle.url}/ping").status_code == 200
    finally:
        release.set()
        for thread in threads:
            thread.join(60)
    assert outcomes == ["200"] * PEAGLE_MAX_CONCURRENT
    # Capacity is back once they are gone.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        answer = httpx.post(f"{peagle.url}/invocations", json=LOADING_PROBE, timeout=30)
        if answer.status_code == 200:
            break
        time.sleep(0.1)
    assert answer.status_code == 200


def test_bodies_are_not_logged_by_default(client: httpx.Client, peagle):
    marker = "zebra-quartz-5531"
    payload = {"messages": [{"role": "user", "content": marker}], "max_tokens": 4}
    headers = {"X-Amzn-SageMaker-Inference-Id": "no-bodies-check"}
    assert client.post("/invocations", json=payload, headers=headers).status_code == 200
    log = peagle.log_once("no-bodies-check POST /invocations 200")
    assert "no-bodies-check POST /invocations 200" in log
    assert marker not in log
