"""The local runtime end to end with boto3, against a stand-in container and scripted
sockets: no vLLM."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import pytest
from botocore.exceptions import EventStreamError

from harness.serving_container import free_port
from local_runtime.runtime_routes import MAX_BODY_BYTES
from serving.sse import DataSplitter, Reassembly, chunks_of
from tests.support.local_runtime import local_runtime, runtime_client
from tests.support.scripted_container import ok, scripted_container, standin
from tests.support.standin_container import CUSTOM_ATTRIBUTES, EVENTS


@pytest.fixture(scope="module")
def container_url() -> Iterator[str]:
    with standin() as url:
        yield url


@pytest.fixture(scope="module")
def runtime(container_url: str):
    with local_runtime(container_url) as url:
        yield runtime_client(url)


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


# A stream as vLLM 0.32 writes it with a reasoning parser on: a role chunk, the reasoning in
# `delta.reasoning`, then the answer. Its text holds characters of two, three and four UTF-8
# bytes; written here because the demo engine cannot be made to write one (its greedy answers
# to prompts full of é and ï are ASCII). tests/serving/test_reasoning_engine.py takes a real
# engine's reasoning through the same runtime.
REASONING = ["Il fait 21 °C à Paris", " → beau temps 🙂"]


def reasoning_stream() -> bytes:
    head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "demo"}
    deltas = [{"role": "assistant", "content": ""}] + [{"reasoning": text} for text in REASONING]
    deltas.append({"content": "Sunny."})
    chunks = [{**head, "choices": [{"index": 0, "delta": delta}]} for delta in deltas]
    events = [b"data: " + json.dumps(chunk, ensure_ascii=False).encode() for chunk in chunks]
    return b"\n\n".join([*events, b"data: [DONE]", b""])


def test_reasoning_cut_mid_character_across_payload_parts_reaches_the_client_whole():
    stream = reasoning_stream()

    def answer(connection: socket.socket, number: int, request_number: int, request: bytes) -> bool:
        if request.startswith(b"GET /ping"):
            connection.sendall(ok())
        else:
            connection.sendall(ok(stream, b"Content-Type: text/event-stream\r\n"))
        return True

    with scripted_container(answer) as (container, _):
        with local_runtime(container, part_bytes=3) as url:
            response = runtime_client(url).invoke_endpoint_with_response_stream(
                EndpointName="demo", Body=json.dumps({"stream": True})
            )
            parts = [event["PayloadPart"]["Bytes"] for event in response["Body"]]
    assert b"".join(parts) == stream
    # Parts end mid-character: a client that decodes each part alone fails on these.
    assert any(not utf8(part) for part in parts)
    # Bytes joined until an event ends, as boto3 users (and serving.sse) read them.
    splitter, reassembly = DataSplitter(), Reassembly()
    for part in parts:
        for data in splitter.feed(part):
            for chunk in chunks_of(data):
                reassembly.add(chunk)
    message = reassembly.answer()["choices"][0]["message"]
    assert (message["reasoning"], message["content"]) == ("".join(REASONING), "Sunny.")


def utf8(part: bytes) -> bool:
    try:
        part.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
