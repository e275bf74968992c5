"""The local runtime's own HTTP client to the container (local_runtime/container.py), and the
runtime end to end with boto3, against a stand-in container and scripted sockets: no vLLM."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from botocore.exceptions import EventStreamError

from harness.container import free_port
from local_runtime.app import MAX_BODY_BYTES
from local_runtime.container import ContainerClient, ContainerError
from tests.support.in_process import serving
from tests.support.local_runtime import local_runtime, runtime_client
from tests.support.standin_container import CUSTOM_ATTRIBUTES, EVENTS
from tests.support.standin_container import app as standin_app

JSON = {"content-type": "application/json"}


def standin(port: int | None = None):
    """The stand-in container on a loopback port, in this process, for the block's duration."""
    return serving(standin_app, port, log_level="error")


@pytest.fixture(scope="module")
def container_url() -> Iterator[str]:
    with standin() as url:
        yield url


@pytest.fixture(scope="module")
def runtime(container_url: str):
    with local_runtime(container_url) as url:
        yield runtime_client(url)


def read_request(connection: socket.socket) -> bytes:
    """One request off the socket, head and Content-Length body; b"" once the peer closed."""
    data = b""
    while b"\r\n\r\n" not in data:
        if not (chunk := connection.recv(65536)):
            return b""
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    length = next(
        (
            int(line.split(b":")[1])
            for line in head.lower().split(b"\r\n")
            if b"content-length" in line
        ),
        0,
    )
    while len(body) < length:
        body += connection.recv(65536)
    return head


# (the connection, its number from 1, the request's number on it from 1, the request's head)
Script = Callable[[socket.socket, int, int, bytes], bool]


@contextlib.contextmanager
def scripted_container(script: Script) -> Iterator[tuple[str, list[int]]]:
    """A socket server that hands each request to `script`, which answers or not, and says
    whether to keep the connection open. Yields the URL and a one-item list counting the
    connections accepted."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted = [0]

    def serve(connection: socket.socket, number: int) -> None:
        with connection:
            for request_number in itertools.count(1):
                request = read_request(connection)
                if not request or not script(connection, number, request_number, request):
                    return

    def accept() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            accepted[0] += 1
            threading.Thread(target=serve, args=(connection, accepted[0]), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", accepted
    finally:
        listener.close()


def ok(body: bytes = b"{}", extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (len(body), extra, body)


# The client on its own.


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


# The runtime end to end, boto3 against the stand-in.


def test_headers_reach_the_container_and_come_back(runtime):
    answer = runtime.invoke_endpoint(
        EndpointName="demo",
        ContentType="application/json",
        Accept="application/json",
        Body=json.dumps({"echo": True}),
        CustomAttributes="a=1",
        InferenceId="order-1234",
        TargetVariant="canary",
    )
    seen = json.loads(answer["Body"].read())["headers"]
    assert seen["content-type"] == "application/json"
    assert seen["accept"] == "application/json"
    assert seen["x-amzn-sagemaker-custom-attributes"] == "a=1"
    assert seen["x-amzn-sagemaker-inference-id"] == "order-1234"
    assert seen["x-amzn-sagemaker-target-variant"] == "canary"
    assert "authorization" not in seen
    assert answer["InvokedProductionVariant"] == "canary"
    assert answer["CustomAttributes"] == CUSTOM_ATTRIBUTES.decode()
    assert answer["ContentType"] == "application/json"
    assert answer["ResponseMetadata"]["RequestId"]


def test_the_stream_hands_its_accept_to_the_container_as_accept(runtime):
    response = runtime.invoke_endpoint_with_response_stream(
        EndpointName="demo",
        ContentType="application/json",
        Accept="text/event-stream",
        Body=json.dumps({"echo": True}),
    )
    body = b"".join(event["PayloadPart"]["Bytes"] for event in response["Body"])
    assert json.loads(body)["headers"]["accept"] == "text/event-stream"
    assert response["ContentType"] == "application/json"


def test_an_error_answer_is_a_model_error_with_the_original(runtime):
    with pytest.raises(runtime.exceptions.ModelError) as raised:
        runtime.invoke_endpoint(EndpointName="demo", Body=json.dumps({"status": 400}))
    error = raised.value.response
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 424
    assert error["OriginalStatusCode"] == 400
    assert error["OriginalMessage"] == '{"error": "asked for"}'
    assert error["LogStreamArn"].endswith("/aws/sagemaker/Endpoints/demo")
    with pytest.raises(runtime.exceptions.ModelError) as raised:
        runtime.invoke_endpoint_with_response_stream(
            EndpointName="demo", Body=json.dumps({"stream": True, "status": 503})
        )
    assert raised.value.response["OriginalStatusCode"] == 503
    assert "Received server error (503)" in raised.value.response["Error"]["Message"]


def test_bodies_over_six_megabytes_and_long_custom_attributes_are_validation_errors(runtime):
    for call in (runtime.invoke_endpoint, runtime.invoke_endpoint_with_response_stream):
        with pytest.raises(runtime.exceptions.ValidationError, match="6 MB"):
            call(EndpointName="demo", Body=b" " * (MAX_BODY_BYTES + 1))
    with pytest.raises(runtime.exceptions.ValidationError, match="customAttributes"):
        runtime.invoke_endpoint(EndpointName="demo", Body=b"{}", CustomAttributes="a" * 1025)
    # The connection and the runtime carry on.
    runtime.invoke_endpoint(EndpointName="demo", Body=b"{}")


def test_the_stream_comes_in_payload_parts_cut_to_part_bytes(container_url: str):
    with local_runtime(container_url, part_bytes=7) as url:
        response = runtime_client(url).invoke_endpoint_with_response_stream(
            EndpointName="demo",
            Body=json.dumps({"stream": True}),
            CustomAttributes="a=1",
        )
        parts = [event["PayloadPart"]["Bytes"] for event in response["Body"]]
    assert b"".join(parts) == b"".join(EVENTS)
    assert max(len(part) for part in parts) == 7
    assert response["ContentType"] == "text/event-stream"
    assert response["CustomAttributes"] == CUSTOM_ATTRIBUTES.decode()


def test_a_late_answer_is_a_model_error_and_does_not_answer_the_next_call(container_url: str):
    with local_runtime(container_url, invoke_timeout=0.5) as url:
        client = runtime_client(url)
        with pytest.raises(client.exceptions.ModelError) as raised:
            client.invoke_endpoint(EndpointName="demo", Body=json.dumps({"sleep": 1, "echo": 1}))
        assert raised.value.response["OriginalStatusCode"] == 0
        assert "timed out" in raised.value.response["Error"]["Message"]
        # Had the timed-out connection gone back to the pool, this would read the echo.
        time.sleep(0.7)
        answer = json.loads(client.invoke_endpoint(EndpointName="demo", Body=b"{}")["Body"].read())
        assert answer["choices"]


def test_a_stream_silent_longer_than_the_timeout_ends_in_model_stream_error(container_url: str):
    with local_runtime(container_url, invoke_timeout=0.5) as url:
        response = runtime_client(url).invoke_endpoint_with_response_stream(
            EndpointName="demo", Body=json.dumps({"stream": True, "pause": 1})
        )
        received = []
        with pytest.raises(EventStreamError) as raised:
            for event in response["Body"]:
                received.append(event["PayloadPart"]["Bytes"])
    assert received == EVENTS[:1]
    assert raised.value.response["Error"]["Code"] == "ModelStreamError"
    assert "sent nothing for 0.5 s" in raised.value.response["Error"]["Message"]


def test_a_container_that_closes_unanswered_is_a_model_error_with_status_0():
    def ping_only(
        connection: socket.socket, number: int, request_number: int, request: bytes
    ) -> bool:
        if request.startswith(b"GET /ping"):
            connection.sendall(ok())
            return True
        return False

    with scripted_container(ping_only) as (container, _), local_runtime(container) as url:
        client = runtime_client(url)
        with pytest.raises(client.exceptions.ModelError) as raised:
            client.invoke_endpoint(EndpointName="demo", Body=b"{}")
    assert raised.value.response["OriginalStatusCode"] == 0
    message = raised.value.response["Error"]["Message"]
    assert "connection to container primary failed" in message
    assert "closed the connection" in message


def test_a_container_gone_down_after_ping_is_a_model_error_with_status_0():
    port = free_port()
    with local_runtime(f"http://127.0.0.1:{port}") as url:
        client = runtime_client(url)
        with standin(port):
            client.invoke_endpoint(EndpointName="demo", Body=b"{}")
        with pytest.raises(client.exceptions.ModelError) as raised:
            client.invoke_endpoint(EndpointName="demo", Body=b"{}")
    assert raised.value.response["OriginalStatusCode"] == 0
    assert "cannot connect" in raised.value.response["Error"]["Message"]
