"""The request gate: 503 while not serving, 429 past the concurrency limit, the access log."""

from __future__ import annotations

import json
import time

import httpx

from tests.support.containers import LOADING_PROBE, PEAGLE_MAX_CONCURRENT
from tests.support.raw_http import connect, read_all, status_of
from tests.support.stalls import WATCH


def test_invocations_while_loading_get_a_503_json_error(peagle):
    status, body = peagle.loading_invocation
    assert status == 503
    assert "loading" in body["error"]["message"]


def test_past_the_limit_requests_get_429_at_once_and_the_rest_complete(peagle):
    # Each held request is admitted (it counts against the limit from its first byte) and
    # cannot finish: its client has sent only part of the body. Nothing depends on speed.
    body = json.dumps(LOADING_PROBE).encode()
    held = []
    for index in range(PEAGLE_MAX_CONCURRENT):
        sock = connect(peagle.url)
        sock.sendall(
            b"POST /invocations HTTP/1.1\r\nHost: front\r\nContent-Type: application/json\r\n"
            b"X-Amzn-SageMaker-Inference-Id: held-%d\r\n"
            % index
            + b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body)
            + body[:5]
        )
        held.append(sock)
    try:
        deadline = time.monotonic() + 30
        while peagle.metric("serving_requests_in_flight") < PEAGLE_MAX_CONCURRENT:
            assert time.monotonic() < deadline, "the held requests were not all admitted"
            time.sleep(0.05)
        began = time.monotonic()
        refused = httpx.post(f"{peagle.url}/invocations", json=LOADING_PROBE, timeout=10)
        refused_after = WATCH.since(began)
        assert refused.status_code == 429, refused.text
        assert refused.headers["retry-after"]
        assert "MAX_CONCURRENT_REQUESTS" in refused.json()["error"]["message"]
        assert refused_after < 2.0
        assert peagle.ping() == 200
        for sock in held:
            sock.sendall(body[5:])
        answers = [read_all(sock) for sock in held]
    finally:
        for sock in held:
            sock.close()
    assert [status_of(answer) for answer in answers] == [200] * PEAGLE_MAX_CONCURRENT
    # Capacity is back once they are gone.
    answer = httpx.post(f"{peagle.url}/invocations", json=LOADING_PROBE, timeout=60)
    assert answer.status_code == 200


def test_bodies_are_not_logged_by_default(client: httpx.Client, peagle):
    marker = "zebra-quartz-5531"
    payload = {"messages": [{"role": "user", "content": marker}], "max_tokens": 4}
    headers = {"X-Amzn-SageMaker-Inference-Id": "no-bodies-check"}
    assert client.post("/invocations", json=payload, headers=headers).status_code == 200
    log = peagle.log_once("no-bodies-check POST /invocations 200")
    assert "no-bodies-check POST /invocations 200" in log
    assert marker not in log
