"""InvokeEndpointWithBidirectionalStream through the local SageMaker Runtime, driven by AWS's
own client (`aws-sdk-sagemaker-runtime-http2`, in its own Python 3.12 environment) against
the real container: `python -m local_runtime --http2-port` as a user starts it, its HTTPS
listener bridging each HTTP/2 stream to the container's WebSocket."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from harness.serving_container import free_port
from local_runtime.http2 import CERTIFICATE_FILE
from tests.support.client_envs import run_calls

MAX_TOKENS = 24
ENDPOINT = "my-endpoint"
LONG_TOKENS = 1800  # the script's long generation, cancelled after its first chunk


@pytest.fixture(scope="module")
def http2_runtime(peagle, tmp_path_factory):
    with runtime_command(peagle.url, tmp_path_factory.mktemp("runtime-tls")) as found:
        yield found


@contextmanager
def runtime_command(container_url: str, folder: Path):
    """The runtime's command, its HTTPS URL and the certificate its clients trust."""
    port, http2_port = free_port(), free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "local_runtime",
            "--port",
            str(port),
            "--http2-port",
            str(http2_port),
            "--container-url",
            container_url,
            "--certificate-dir",
            str(folder),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, process.stdout.read()
            try:
                socket.create_connection(("127.0.0.1", http2_port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the HTTPS listener never opened"
                time.sleep(0.2)
        yield f"https://127.0.0.1:{http2_port}", folder / CERTIFICATE_FILE
    finally:
        process.terminate()
        log, _ = process.communicate(timeout=30)
    # Nothing the client did may cost the runtime a traceback (a late DATA frame on an ended
    # stream once dropped hypercorn's whole connection).
    assert "Traceback" not in log, log
    # uvicorn shuts down cleanly, then raises SIGTERM again to end as signalled.
    assert process.returncode in (0, -signal.SIGTERM), log


def client_results(url: str, certificate: Path) -> dict:
    found = run_calls(
        "sagemaker-http2",
        "sagemaker_http2_calls.py",
        url,
        ENDPOINT,
        MAX_TOKENS,
        extra_env={"LOCAL_RUNTIME_CERTIFICATE": str(certificate)},
    )
    return {
        case: json.loads(result["text"]) if "text" in result else result
        for case, result in found.items()
    }


@pytest.fixture(scope="module")
def results(http2_runtime) -> dict:
    return client_results(*http2_runtime)


@pytest.fixture(scope="module")
def greedy(peagle) -> str:
    return httpx.post(
        f"{peagle.url}/invocations",
        json={
            "messages": [{"role": "user", "content": "def fibonacci(n):"}],
            "max_tokens": MAX_TOKENS,
            "temperature": 0,
        },
        timeout=120,
    ).json()["choices"][0]["message"]["content"]


def answered(request: dict, text: str) -> None:
    """Chunks, then one `done` with its usage and speculation figures; the greedy text."""
    *chunks, done = request["types"]
    assert chunks and set(chunks) == {"chunk"} and done == "done", request["types"]
    assert request["text"] == text
    assert request["last"]["usage"]["completion_tokens"] == MAX_TOKENS
    assert request["last"]["speculation"]["num_draft_tokens"] > 0
    assert request["last"]["data_type"] == "UTF8"


def test_two_turns_on_one_stream_answer_as_invocations_does(results, greedy):
    session = results["two turns"]
    assert "error" not in session, session
    answered(session["turn-1"], greedy)
    answered(session["turn-2"], greedy)


def test_a_cancel_part_stops_the_generation_and_the_stream_serves_on(results, greedy):
    session = results["cancel"]
    assert "error" not in session, session
    long = session["long"]
    assert long["types"][-1] == "cancelled" and long["types"].count("chunk") < LONG_TOKENS
    answered(session["after"], greedy)


def test_bad_parts_get_error_frames_and_the_stream_serves_on(results, greedy):
    session = results["bad frames"]
    assert "error" not in session, session
    errors = session["null"]
    assert errors["types"] == ["error", "error"]
    assert errors["last"]["error"]["code"] == 400
    assert "binary frames" in errors["last"]["error"]["message"]
    answered(session["good"], greedy)


def test_a_container_closing_the_socket_reaches_the_client_as_model_stream_error(results):
    error = results["oversized"]["error"]
    assert error.startswith("ModelStreamError: "), error
    assert "1009" in error


def test_an_endpoint_whose_container_is_not_up_refuses_each_stream(tmp_path):
    """Before the container's first /ping 200, the call fails before the stream as
    SageMaker's does, in the client's own InputValidationError; the client's parts that race
    the refusal cost the runtime nothing."""
    with runtime_command(f"http://127.0.0.1:{free_port()}", tmp_path) as (url, certificate):
        refused = client_results(url, certificate)
    for case, result in refused.items():
        assert result.get("error", "").startswith("InputValidationError: "), (case, result)
        assert f"Endpoint {ENDPOINT} " in result["error"] and "not found" in result["error"]
