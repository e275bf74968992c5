"""Request bodies: a client that leaves mid-upload, one that stalls, and big bodies."""

from __future__ import annotations

import http.client
import json
import time

import pytest
import requests

from serving.invocations import prepare
from tests.support.raw_http import body_of, connect, read_all, status_of
from tests.support.stalls import WATCH

HEAD = (
    b"POST /invocations HTTP/1.1\r\nHost: front\r\nContent-Type: application/json\r\n"
    b"X-Amzn-SageMaker-Inference-Id: %s\r\nContent-Length: 1000\r\n\r\n"
)
SERVER_ERRORS = {"route": "/invocations", "status": "500"}


def test_a_5_mb_body_gets_its_model_without_being_reencoded():
    content = "def f():\n    return 'é'\n" * 200_000
    body = json.dumps({"messages": [{"role": "user", "content": content}]}).encode()
    prepared = prepare(body, "served-model").content
    assert prepared.endswith(body[1:])
    assert json.loads(prepared)["model"] == "served-model"


def test_client_leaving_mid_upload_is_a_499_without_traceback(peagle):
    start = len(peagle.log_text())
    before = peagle.metric("serving_requests_total", labels=SERVER_ERRORS)
    with connect(peagle.url) as sock:
        sock.sendall(HEAD % b"left-mid-upload" + b'{"messages": [')
        time.sleep(0.5)
    written = peagle.log_once("left-mid-upload POST /invocations 499")[start:]
    assert "left-mid-upload POST /invocations 499" in written
    assert "Traceback" not in written
    assert peagle.metric("serving_requests_total", labels=SERVER_ERRORS) == before


def test_a_stalled_upload_gets_a_408_and_frees_its_slot(plain):
    # The plain container sets SERVING_BODY_TIMEOUT_SECONDS=3.
    began = time.monotonic()
    with connect(plain.url, timeout=30) as sock:
        sock.sendall(HEAD % b"stalled-upload" + b'{"messages": [')
        answer = read_all(sock)
    ended = time.monotonic()
    assert status_of(answer) == 408
    assert "SERVING_BODY_TIMEOUT_SECONDS" in json.loads(body_of(answer))["error"]["message"]
    # Not before its 3 s limit; after it, within 22 s of the machine running.
    assert ended - began >= 3
    assert WATCH.running(began, ended) < 25
    assert plain.metric("serving_requests_in_flight") == 0


@pytest.mark.parametrize("megabytes", [7, 64])
def test_a_client_sending_its_whole_body_first_reads_the_413(peagle, megabytes):
    """http.client and requests send the whole body before they read: the front answers at
    once and drops the rest as it comes, so they read the 413 and not a reset connection."""
    body = b'{"messages": [{"role": "user", "content": "' + b"x" * (megabytes << 20) + b'"}]}'
    connection = http.client.HTTPConnection("127.0.0.1", peagle.port, timeout=60)
    connection.request("POST", "/invocations", body, {"Content-Type": "application/json"})
    answer = connection.getresponse()
    assert answer.status == 413
    assert "SAGEMAKER_MAX_PAYLOAD_IN_MB" in json.loads(answer.read())["error"]["message"]
    # The connection is still good for the next request.
    connection.request("GET", "/ping")
    assert connection.getresponse().status == 200
    connection.close()
    answer = requests.post(
        f"{peagle.url}/invocations",
        data=body,
        headers={"Content-Type": "application/json"},
        timeout=60,
    )
    assert answer.status_code == 413
    assert answer.text.endswith("\n") and "6 MB" in answer.json()["error"]["message"]
