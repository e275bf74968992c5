"""The front's client to the engine (serving/engine_client.py) meeting a connection the engine
closed: a scripted engine socket, because the real engine's race (its keep-alive running out
just as a pooled request is written) is a window of milliseconds that only a bench aims at
(`python -m harness.idle_gaps`); here it happens every time."""

from __future__ import annotations

import asyncio
import contextlib
import select
import socket
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from serving.engine import engine_environment
from serving.engine_client import (
    ENGINE_KEEP_ALIVE_SECONDS,
    ENGINE_KEEP_ALIVE_VAR,
    EngineClient,
    EngineError,
    pool_idle_seconds,
)
from serving.settings import load_settings
from tests.support.scripted_container import accept_in_background

ANSWER = b'{"ok": true}'
# What the engine does with the n-th request (from 1) on a connection: answer it, or close
# the connection under it without reading it (the peer's write or read meets a reset).
Script = Callable[[int, int], str]


def answer() -> bytes:
    return b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (
        len(ANSWER),
        ANSWER,
    )


def serve_connection(connection: socket.socket, number: int, script: Script) -> None:
    with connection:
        for request in range(1, 100):
            # Wait for the request's bytes without reading them, then decide.
            if not select.select([connection], [], [], 5)[0]:
                return
            if script(number, request) == "close":
                return  # closed with the request unread: the client's side is reset
            data = connection.recv(65536)
            if not data:
                return
            connection.sendall(answer())


@contextlib.contextmanager
def scripted_engine(script: Script) -> Iterator[tuple[str, list[int]]]:
    """A Unix socket that answers by `script`; the list counts the connections it took."""
    path = Path(tempfile.mkdtemp()) / "engine.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(8)
    accepted = [0]
    accept_in_background(
        listener, lambda connection, number: serve_connection(connection, number, script), accepted
    )
    try:
        yield str(path), accepted
    finally:
        listener.close()
        path.unlink(missing_ok=True)


async def two_requests(path: str) -> list[int | str]:
    """One request, then another on the pooled connection; each one's status or error."""
    client = EngineClient(path, max_connections=4)
    outcomes: list[int | str] = []
    try:
        for _ in range(2):
            try:
                upstream = await client.send("POST", b"/invocations", b"{}", [])
                assert await upstream.read() == ANSWER
                upstream.close()
                outcomes.append(upstream.status)
            except EngineError as error:
                outcomes.append(f"EngineError: {error}")
    finally:
        await client.aclose()
    return outcomes


def test_a_request_on_a_connection_the_engine_closed_goes_again_on_a_new_one():
    # The first connection's second request is met by a close, as when the engine's keep-alive
    # runs out as the request is written; every other request is answered.
    def closes_the_first_connection_after_one_answer(connection: int, request: int) -> str:
        return "close" if (connection, request) == (1, 2) else "answer"

    with scripted_engine(closes_the_first_connection_after_one_answer) as (path, accepted):
        assert asyncio.run(two_requests(path)) == [200, 200]
    assert accepted == [2]


def test_a_request_on_a_new_connection_is_not_sent_twice():
    # Nothing was pooled: a close under the request is the engine going away, not a keep-alive.
    with scripted_engine(lambda connection, request: "close") as (path, accepted):
        outcomes = asyncio.run(two_requests(path))
    assert all(str(outcome).startswith("EngineError") for outcome in outcomes)
    assert accepted == [2]  # one connection per request: no second try


def test_a_request_goes_again_only_once():
    # The engine answers one request and then closes every connection under its request.
    def one_answer_in_all(connection: int, request: int) -> str:
        return "answer" if (connection, request) == (1, 1) else "close"

    with scripted_engine(one_answer_in_all) as (path, accepted):
        outcomes = asyncio.run(two_requests(path))
    assert outcomes[0] == 200 and str(outcomes[1]).startswith("EngineError")
    assert accepted == [2]  # the pooled try, then one fresh one


async def unanswered_counts(path: str) -> list[int]:
    """The client's count of requests with no answer begun: while one is sent, once its
    headers are in, once its body is read; for one dropped unread; for one that fails."""
    client = EngineClient(path, max_connections=4)
    counts = []
    try:
        sending = asyncio.ensure_future(client.send("POST", b"/invocations", b"{}", []))
        await asyncio.sleep(0)
        counts.append(client.unanswered)
        upstream = await sending
        counts.append(client.unanswered)
        await upstream.read()
        counts.append(client.unanswered)
        upstream.close()
        dropped = await client.send("POST", b"/invocations", b"{}", [])
        counts.append(client.unanswered)
        del dropped  # a relay whose client left before the answer began
        counts.append(client.unanswered)
        unwatched = await client.send("POST", b"/adapters", b"{}", [], watched=False)
        counts.append(client.unanswered)
        unwatched.close()
        with contextlib.suppress(EngineError):
            await client.send("POST", b"/invocations", b"{}", [])
        counts.append(client.unanswered)
    finally:
        await client.aclose()
    return counts


def test_a_request_is_unanswered_until_its_answer_begins_and_never_after():
    # Three requests answered on the first connection; the fourth meets a close, and its
    # second try on a fresh connection does too.
    def three_answers(connection: int, request: int) -> str:
        return "answer" if (connection, request) in ((1, 1), (1, 2), (1, 3)) else "close"

    with scripted_engine(three_answers) as (path, _):
        assert asyncio.run(unanswered_counts(path)) == [1, 1, 0, 1, 0, 0, 0]


@pytest.mark.parametrize(
    "environ, engine_seconds",
    [({}, ENGINE_KEEP_ALIVE_SECONDS), ({ENGINE_KEEP_ALIVE_VAR: "8"}, 8)],
)
def test_the_pool_lets_idle_connections_go_before_the_engine_does(
    tmp_path: Path, environ, engine_seconds
):
    settings = load_settings({"OPT_ML_ROOT": str(tmp_path / "empty"), "HF_MODEL_ID": "org/m"})
    engine = engine_environment(settings, environ)
    assert engine[ENGINE_KEEP_ALIVE_VAR] == str(engine_seconds)
    assert pool_idle_seconds(engine) <= engine_seconds / 2
