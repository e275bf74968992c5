"""The local runtime's shadow container (local_runtime/shadow.py) end to end: boto3 through the
runtime, a stand-in container as production and a recording one as the shadow, all in this
process. No vLLM."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from harness.serving_container import free_port
from local_runtime.__main__ import parse_args, runtime_from
from local_runtime.runtime_routes import MAX_BODY_BYTES
from local_runtime.shadow import Shadow
from tests.support.in_process import serving
from tests.support.local_runtime import local_runtime, runtime_client
from tests.support.scripted_container import standin
from tests.support.stalls import WATCH
from tests.support.standin_container import EVENTS, answer, invocations, read_body
from tests.support.standin_container import app as standin_app

# The longest a held shadow holds, and a test waits for the counters: a bound, not a pace.
PATIENCE_SECONDS = 30.0


class ShadowContainer:
    """The stand-in container as a shadow that records each /invocations it gets (headers and
    body, as they arrived), and can answer every call with one error `status`, or hold its
    answers until `release` is set."""

    def __init__(self, status: int | None = None, held: bool = False):
        self.status = status
        self.release = threading.Event()
        if not held:
            self.release.set()
        self.received: list[tuple[dict[str, str], bytes]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != "/invocations":
            await standin_app(scope, receive, send)
            return
        body = await read_body(receive)
        headers = {name.decode(): value.decode() for name, value in scope["headers"]}
        self.received.append((headers, body))
        # Held for the test's patience in the machine's running time: a hold of the test
        # between its calls and its look at the counters must not release the shadow.
        began = time.monotonic()
        while not self.release.is_set() and WATCH.since(began) < PATIENCE_SECONDS:
            await asyncio.sleep(0.05)
        if self.status is not None:
            await answer(send, self.status, b'{"error": "shadow"}', b"application/json")
        else:
            await invocations(scope, replay(body), send)

    def bodies(self) -> list[bytes]:
        return [body for _, body in self.received]


def replay(body: bytes) -> Callable[[], Any]:
    """An ASGI receive that hands over a body already read."""

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


@pytest.fixture(scope="module")
def production() -> Iterator[str]:
    with standin() as url:
        yield url


def shadow_counters(runtime_url: str) -> dict[str, Any]:
    return httpx.get(f"{runtime_url}/shadow").json()


def wait_for(runtime_url: str, done: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """The runtime's shadow counters once `done` says so (mirrors finish in the background)."""
    deadline = time.monotonic() + PATIENCE_SECONDS
    while not done(counters := shadow_counters(runtime_url)):
        assert time.monotonic() < deadline, f"still {counters}"
        time.sleep(0.02)
    return counters


def invoke(client, body: bytes) -> tuple[bytes, str, str, str]:
    """What the client reads of an answer, less the request id that differs per call."""
    answer = client.invoke_endpoint(
        EndpointName="demo", ContentType="application/json", CustomAttributes="a=1", Body=body
    )
    return (
        answer["Body"].read(),
        answer["ContentType"],
        answer["CustomAttributes"],
        answer["InvokedProductionVariant"],
    )


def stream(client, body: bytes) -> tuple[list[bytes], str, str]:
    response = client.invoke_endpoint_with_response_stream(
        EndpointName="demo", Accept="text/event-stream", CustomAttributes="a=1", Body=body
    )
    parts = [event["PayloadPart"]["Bytes"] for event in response["Body"]]
    return parts, response["ContentType"], response["CustomAttributes"]


def model_error(client, body: bytes) -> tuple[int, int, str]:
    with pytest.raises(client.exceptions.ModelError) as raised:
        client.invoke_endpoint(EndpointName="demo", Body=body)
    error = raised.value.response
    return (
        error["ResponseMetadata"]["HTTPStatusCode"],
        error["OriginalStatusCode"],
        error["OriginalMessage"],
    )


def calls_of_each_kind(runtime_url: str) -> list[object]:
    """Three calls a client makes, an answer, a stream and a model error, as it sees them."""
    client = runtime_client(runtime_url)
    return [
        invoke(client, b'{"echo": true}'),
        stream(client, b'{"stream": true}'),
        model_error(client, b'{"status": 400}'),
    ]


@pytest.fixture(scope="module")
def without_shadow(production: str) -> list[object]:
    with local_runtime(production) as url:
        return calls_of_each_kind(url)


def test_half_of_64_calls_are_mirrored_exactly_and_production_answers_as_without(production):
    bodies = [json.dumps({"echo": True, "n": n}).encode() for n in range(64)]
    with local_runtime(production) as url:
        client = runtime_client(url)
        alone = [invoke(client, body) for body in bodies]
    shadow = ShadowContainer()
    with (
        serving(shadow) as shadow_url,
        local_runtime(production, shadow_url=shadow_url, shadow_sample=50) as url,
    ):
        client = runtime_client(url)
        answers = [invoke(client, body) for body in bodies]
        # A mirror leaves in_flight a moment after it counts: wait for both.
        counters = wait_for(
            url, lambda counters: counters["mirrored"] == 32 and not counters["in_flight"]
        )
    assert answers == alone
    assert counters == {
        "url": shadow_url,
        "sample_percent": 50,
        "offered": 64,
        "mirrored": 32,
        "dropped": 0,
        "failed": 0,
        "answered": 32,
        "in_flight": 0,
    }
    # Every second call, byte for byte the body production got, with production's headers.
    assert sorted(shadow.bodies(), key=lambda body: json.loads(body)["n"]) == bodies[1::2]
    shadow_headers, body = shadow.received[0]
    production_headers = json.loads(answers[json.loads(body)["n"]][0])["headers"]
    del shadow_headers["host"], production_headers["host"]
    assert shadow_headers == production_headers


def test_a_slow_shadow_does_not_hold_production_answers(production, without_shadow):
    shadow = ShadowContainer(held=True)
    with (
        serving(shadow) as shadow_url,
        local_runtime(production, shadow_url=shadow_url, shadow_sample=100) as url,
    ):
        answers = calls_of_each_kind(url)
        # Production has answered all three while the shadow has answered none.
        during = shadow_counters(url)
        shadow.release.set()
        after = wait_for(url, lambda counters: counters["in_flight"] == 0)
    assert answers == without_shadow
    assert (during["mirrored"], during["in_flight"], during["answered"]) == (3, 3, 0)
    # The shadow answers the model error's call with its 400 as production does.
    assert (after["answered"], after["failed"]) == (2, 1)


def test_mirrors_beyond_max_in_flight_are_dropped_and_counted(production):
    shadow = ShadowContainer(held=True)
    with serving(shadow) as shadow_url:
        mirror = Shadow(shadow_url, 100, max_in_flight=2)
        with local_runtime(production, shadow=mirror) as url:
            client = runtime_client(url)
            for n in range(5):
                invoke(client, json.dumps({"n": n}).encode())
            during = shadow_counters(url)
            shadow.release.set()
            after = wait_for(url, lambda counters: counters["answered"] == 2)
    assert (during["offered"], during["mirrored"], during["dropped"]) == (5, 2, 3)
    assert after["failed"] == 0
    assert shadow.bodies() == [b'{"n": 0}', b'{"n": 1}']


def test_a_shadow_that_is_down_changes_nothing_and_counts_as_failed(production, without_shadow):
    down = f"http://127.0.0.1:{free_port()}"
    with local_runtime(production, shadow_url=down, shadow_sample=100) as url:
        answers = calls_of_each_kind(url)
        counters = wait_for(url, lambda counters: counters["failed"] == 3)
    assert answers == without_shadow
    assert (counters["mirrored"], counters["answered"]) == (3, 0)


def test_a_shadow_answering_400_changes_nothing_and_logs_the_status(
    production, without_shadow, caplog
):
    caplog.set_level(logging.INFO, logger="local_runtime.shadow")
    shadow = ShadowContainer(status=400)
    with (
        serving(shadow) as shadow_url,
        local_runtime(production, shadow_url=shadow_url, shadow_sample=100) as url,
    ):
        answers = calls_of_each_kind(url)
        counters = wait_for(url, lambda counters: counters["failed"] == 3)
    assert answers == without_shadow
    assert counters["answered"] == 0
    failures = [
        record.getMessage() for record in caplog.records if "status 400" in record.getMessage()
    ]
    assert len(failures) == 3 and shadow_url in failures[0]


def test_streamed_calls_are_mirrored_and_the_stream_is_unchanged(production, without_shadow):
    shadow = ShadowContainer()
    body = json.dumps({"stream": True, "pause": 0.01}).encode()
    with (
        serving(shadow) as shadow_url,
        local_runtime(production, shadow_url=shadow_url, shadow_sample=100) as url,
    ):
        parts = stream(runtime_client(url), body)
        counters = wait_for(url, lambda counters: counters["answered"] == 1)
    assert parts == without_shadow[1] and b"".join(parts[0]) == b"".join(EVENTS)
    assert counters["failed"] == 0
    ((headers, received),) = shadow.received
    assert received == body
    # The stream's Accept reaches the shadow as production gets it: as Accept.
    assert headers["accept"] == "text/event-stream"


def test_sample_0_mirrors_nothing(production, without_shadow):
    shadow = ShadowContainer()
    with (
        serving(shadow) as shadow_url,
        local_runtime(production, shadow_url=shadow_url, shadow_sample=0) as url,
    ):
        answers = calls_of_each_kind(url)
        counters = shadow_counters(url)
    assert answers == without_shadow
    assert (counters["offered"], counters["mirrored"]) == (3, 0)
    assert shadow.received == []


def test_calls_the_runtime_refuses_never_reach_the_shadow(production):
    shadow = ShadowContainer()
    with (
        serving(shadow) as shadow_url,
        local_runtime(production, shadow_url=shadow_url, shadow_sample=100) as url,
    ):
        client = runtime_client(url)
        with pytest.raises(client.exceptions.ValidationError):
            client.invoke_endpoint(EndpointName="demo", Body=b"{}", CustomAttributes="a" * 1025)
        with pytest.raises(client.exceptions.ValidationError):
            client.invoke_endpoint_with_response_stream(
                EndpointName="demo", Body=b" " * (MAX_BODY_BYTES + 1)
            )
        counters = shadow_counters(url)
    assert (counters["offered"], counters["mirrored"]) == (0, 0)
    assert shadow.received == []


def test_shadow_counters_are_404_without_a_shadow(production):
    with local_runtime(production) as url:
        answer = httpx.get(f"{url}/shadow")
    assert answer.status_code == 404
    assert "--shadow-container-url" in answer.json()["Message"]


def test_the_command_line_makes_the_shadow():
    shadow_url = "http://127.0.0.1:9"
    assert runtime_from(parse_args([])).shadow is None
    shadow = runtime_from(parse_args(["--shadow-container-url", shadow_url])).shadow
    assert (shadow.url, shadow.sample_percent) == (shadow_url, 50)
    argv = ["--shadow-container-url", shadow_url, "--shadow-sample", "12.5"]
    assert runtime_from(parse_args(argv)).shadow.sample_percent == 12.5


@pytest.mark.parametrize(
    ("argv", "fragments"),
    [
        (["--shadow-container-url", "http://127.0.0.1:9", "--shadow-sample", "150"], ["150"]),
        (["--shadow-container-url", "http://127.0.0.1:9", "--shadow-sample", "half"], ["half"]),
        (["--shadow-sample", "25"], ["--shadow-container-url"]),
    ],
)
def test_the_command_line_refuses_a_bad_shadow_sample(argv, fragments, capsys):
    with pytest.raises(SystemExit) as exited:
        parse_args(argv)
    assert exited.value.code == 2
    error = capsys.readouterr().err.splitlines()[-1]
    assert "--shadow-sample" in error and all(fragment in error for fragment in fragments)
