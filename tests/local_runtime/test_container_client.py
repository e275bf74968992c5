"""The local runtime's own HTTP client to the container (local_runtime/container.py), against
a stand-in container and scripted sockets: no vLLM."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator

import pytest

from harness.serving_container import free_port
from local_runtime.container import ContainerClient, ContainerError
from tests.support.scripted_container import ok, scripted_container, standin

JSON = {"content-type": "application/json"}


@pytest.fixture(scope="module")
def container_url() -> Iterator[str]:
    with standin() as url:
        yield url


def test_connections_are_kept_alive_and_reused(container_url: str):
    async def calls() -> None:
        client = ContainerClient(container_url, connect_timeout=2)
        first = await client.fetch("POST", "/invocations", JSON, b"{}")
        (connection,) = client.idle
        second = await client.fetch("POST", "/invocations", JSON, b"{}")
        assert client.idle == [connection]
        assert first.status == second.status == 200
        assert json.loads(second.body)["choices"]
        client.close()

    asyncio.run(calls())


def test_a_connection_closed_while_idle_is_replaced():
    # The container's keep-alive timeout: it closes the connection between two calls.
    def one_answer_per_connection(
        connection: socket.socket, number: int, request_number: int, request: bytes
    ) -> bool:
        connection.sendall(ok(b'{"n": %d}' % number))
        return False

    async def calls(url: str) -> list[bytes]:
        client = ContainerClient(url, connect_timeout=2)
        first = await client.fetch("POST", "/invocations", JSON, b"{}")
        await asyncio.sleep(0.1)  # the close reaches the idle connection
        second = await client.fetch("POST", "/invocations", JSON, b"{}")
        client.close()
        return [first.body, second.body]

    with scripted_container(one_answer_per_connection) as (url, accepted):
        assert asyncio.run(calls(url)) == [b'{"n": 1}', b'{"n": 2}']
    assert accepted == [2]


def test_a_request_racing_the_containers_close_goes_again_on_a_new_connection():
    # The container takes the second request on a kept-alive connection, then closes it
    # unanswered, as one closing for its keep-alive timeout at that moment does.
    def close_on_second_request(
        connection: socket.socket, number: int, request_number: int, request: bytes
    ) -> bool:
        if request_number > 1:
            return False
        connection.sendall(ok(b'{"n": %d}' % number))
        return True

    async def calls(url: str) -> list[bytes]:
        client = ContainerClient(url, connect_timeout=2)
        first = await client.fetch("POST", "/invocations", JSON, b"{}")
        second = await client.fetch("POST", "/invocations", JSON, b"{}")
        client.close()
        return [first.body, second.body]

    with scripted_container(close_on_second_request) as (url, accepted):
        assert asyncio.run(calls(url)) == [b'{"n": 1}', b'{"n": 2}']
    assert accepted == [2]


def test_a_new_connection_closed_unanswered_is_a_container_error():
    def hang_up(
        connection: socket.socket, number: int, request_number: int, request: bytes
    ) -> bool:
        return False

    async def call(url: str) -> None:
        client = ContainerClient(url, connect_timeout=2)
        with pytest.raises(ContainerError, match="closed the connection"):
            await client.fetch("POST", "/invocations", JSON, b"{}")
        assert client.idle == []

    with scripted_container(hang_up) as (url, _):
        asyncio.run(call(url))


def test_a_container_that_is_down_is_a_container_error():
    async def call() -> None:
        client = ContainerClient(f"http://127.0.0.1:{free_port()}", connect_timeout=2)
        with pytest.raises(ContainerError, match="cannot connect"):
            await client.fetch("GET", "/ping", {})

    asyncio.run(call())


def test_chunked_bodies_come_chunk_by_chunk_and_unsized_ones_until_the_close():
    answers = {
        # Chunk extensions and trailers, as HTTP/1.1 allows.
        1: b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5;ext=1\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nTrailer: x\r\n\r\n",
        2: b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end",
    }

    def scripted(
        connection: socket.socket, number: int, request_number: int, request: bytes
    ) -> bool:
        connection.sendall(answers[number])
        return number == 1

    async def calls(url: str) -> None:
        client = ContainerClient(url, connect_timeout=2)
        streamed = await client.stream("/invocations", JSON, b"{}", read_timeout=5)
        assert [chunk async for chunk in streamed.chunks()] == [b"hello", b" ", b"world"]
        streamed.close()
        assert len(client.idle) == 1  # read to its end: kept
        client.idle.pop().close()
        whole = await client.fetch("POST", "/invocations", JSON, b"{}")
        assert whole.body == b"until the end"
        assert client.idle == []  # the body ended with the connection

    with scripted_container(scripted) as (url, _):
        asyncio.run(calls(url))


def test_a_connection_idle_past_the_pools_limit_is_not_offered(container_url: str, monkeypatch):
    # The pool lets a connection go well before the container's keep-alive would close it,
    # so no call is written on one the container is closing.
    monkeypatch.setattr("local_runtime.container.MAX_IDLE_SECONDS", 0.05)

    async def calls() -> None:
        client = ContainerClient(container_url, connect_timeout=2)
        await client.fetch("POST", "/invocations", JSON, b"{}")
        (first,) = client.idle
        await client.fetch("POST", "/invocations", JSON, b"{}")
        assert client.idle == [first]  # within the limit: the same connection
        await asyncio.sleep(0.1)
        await client.fetch("POST", "/invocations", JSON, b"{}")
        (second,) = client.idle
        assert second is not first and first.writer.is_closing()
        client.close()

    asyncio.run(calls())
