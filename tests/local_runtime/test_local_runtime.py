"""The local SageMaker Runtime: boto3's real `sagemaker-runtime` client, unchanged, through the
runtime to the real container (trained pair, P-EAGLE on)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from botocore.eventstream import EventStreamBuffer
from botocore.exceptions import EventStreamError

from harness.serving_container import free_port
from local_runtime import event_stream
from local_runtime.runtime_routes import MAX_BODY_BYTES
from serving.sse import DataSplitter
from tests.support.local_runtime import local_runtime, runtime_client

CHAT = {
    "messages": [{"role": "user", "content": "What is deep learning?"}],
    "max_tokens": 24,
    "temperature": 0,
}


@pytest.fixture(scope="module")
def runtime_url(peagle):
    with local_runtime(peagle.url) as url:
        yield url


@pytest.fixture(scope="module")
def runtime(runtime_url):
    return runtime_client(runtime_url)


def chat_text(body: dict) -> str:
    return body["choices"][0]["message"]["content"]


def streamed_events(response) -> list[str]:
    splitter = DataSplitter()
    return [
        data for event in response["Body"] for data in splitter.feed(event["PayloadPart"]["Bytes"])
    ]


def streamed_text(events: list[str]) -> str:
    chunks = [json.loads(data) for data in events if data.strip() != "[DONE]"]
    return "".join(chunk["choices"][0]["delta"].get("content") or "" for chunk in chunks)


# The frame encoder, read back by botocore's own parser (which checks both CRCs).


def test_payload_parts_decode_with_botocores_event_stream_parser():
    frames = event_stream.payload_part(b'data: {"x": 1}\n\n') + event_stream.payload_part(b"\xff")
    parser = EventStreamBuffer()
    # Fed a byte at a time, as a network may deliver them.
    for index in range(len(frames)):
        parser.add_data(frames[index : index + 1])
    messages = list(parser)
    assert [message.payload for message in messages] == [b'data: {"x": 1}\n\n', b"\xff"]
    assert messages[0].headers == {
        ":event-type": "PayloadPart",
        ":content-type": "application/octet-stream",
        ":message-type": "event",
    }


def test_stream_exception_frames_carry_the_error_code():
    parser = EventStreamBuffer()
    parser.add_data(event_stream.stream_exception("ModelStreamError", "broke", "StreamBroken"))
    (message,) = list(parser)
    assert message.headers[":message-type"] == "exception"
    assert message.headers[":exception-type"] == "ModelStreamError"
    assert json.loads(message.payload) == {"Message": "broke", "ErrorCode": "StreamBroken"}


# boto3 against the real container.


def test_invoke_endpoint_gives_the_same_text_as_the_container(runtime, client: httpx.Client):
    direct = client.post("/invocations", json=CHAT)
    assert direct.status_code == 200, direct.text
    response = runtime.invoke_endpoint(
        EndpointName="any-name", ContentType="application/json", Body=json.dumps(CHAT)
    )
    assert response["ContentType"].startswith("application/json")
    assert response["InvokedProductionVariant"] == "AllTraffic"
    assert response["ResponseMetadata"]["RequestId"]
    assert chat_text(json.loads(response["Body"].read())) == chat_text(direct.json())


def test_stream_reassembles_into_events_ending_in_done(runtime, client: httpx.Client):
    direct = chat_text(client.post("/invocations", json=CHAT).json())
    response = runtime.invoke_endpoint_with_response_stream(
        EndpointName="any-name",
        ContentType="application/json",
        Body=json.dumps({**CHAT, "stream": True}),
    )
    assert response["ContentType"].startswith("text/event-stream")
    events = streamed_events(response)
    assert events[-1] == "[DONE]"
    assert streamed_text(events) == direct


def test_events_split_across_payload_parts_reassemble(peagle, client: httpx.Client):
    direct = chat_text(client.post("/invocations", json=CHAT).json())
    # 7-byte parts cut every event, and some characters, as SageMaker's parts may.
    with local_runtime(peagle.url, part_bytes=7) as url:
        response = runtime_client(url).invoke_endpoint_with_response_stream(
            EndpointName="split", Body=json.dumps({**CHAT, "stream": True})
        )
        parts = []
        splitter = DataSplitter()
        events = []
        for event in response["Body"]:
            parts.append(event["PayloadPart"]["Bytes"])
            events += splitter.feed(parts[-1])
    assert max(len(part) for part in parts) == 7
    assert len(parts) > 2 * len(events)
    assert events[-1] == "[DONE]"
    assert streamed_text(events) == direct


def test_a_bad_payload_raises_model_error_with_the_containers_answer(runtime):
    with pytest.raises(runtime.exceptions.ModelError) as raised:
        runtime.invoke_endpoint(EndpointName="demo", ContentType="application/json", Body=b"{")
    error = raised.value.response
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 424
    assert error["OriginalStatusCode"] == 400
    assert "not valid JSON" in json.loads(error["OriginalMessage"])["error"]["message"]
    assert error["LogStreamArn"].endswith("/aws/sagemaker/Endpoints/demo")
    assert "Received client error (400)" in error["Error"]["Message"]


def test_a_bad_stream_payload_raises_model_error_before_any_part(runtime):
    with pytest.raises(runtime.exceptions.ModelError) as raised:
        runtime.invoke_endpoint_with_response_stream(EndpointName="demo", Body=b'{"x": 1}')
    assert raised.value.response["OriginalStatusCode"] == 400


def test_a_body_over_six_megabytes_is_a_validation_error(runtime):
    with pytest.raises(runtime.exceptions.ValidationError):
        runtime.invoke_endpoint(EndpointName="demo", Body=b" " * (MAX_BODY_BYTES + 1))


def test_the_inference_id_names_the_request_in_the_answer(runtime):
    response = runtime.invoke_endpoint(
        EndpointName="demo", Body=json.dumps(CHAT), InferenceId="order-1234"
    )
    # The container names the request in vLLM with the inference id; vLLM puts it in the id.
    assert "order-1234" in json.loads(response["Body"].read())["id"]


def test_target_variant_is_reported_as_the_invoked_variant(runtime):
    response = runtime.invoke_endpoint(
        EndpointName="demo", Body=json.dumps(CHAT), TargetVariant="canary"
    )
    assert response["InvokedProductionVariant"] == "canary"


def test_an_answer_later_than_the_invoke_timeout_is_a_model_error_with_status_0(peagle):
    # Far more tokens than the trained pair makes in a second on this machine.
    slow = {**CHAT, "max_tokens": 1500, "ignore_eos": True}
    with local_runtime(peagle.url, invoke_timeout=1.0) as url:
        client = runtime_client(url)
        started = time.monotonic()
        with pytest.raises(client.exceptions.ModelError) as raised:
            client.invoke_endpoint(EndpointName="demo", Body=json.dumps(slow))
    assert time.monotonic() - started < 30
    assert raised.value.response["OriginalStatusCode"] == 0
    assert "timed out" in raised.value.response["Error"]["Message"]


def test_a_container_not_yet_answering_ping_is_refused_as_sagemaker_does():
    with local_runtime(f"http://127.0.0.1:{free_port()}") as url:
        client = runtime_client(url)
        with pytest.raises(client.exceptions.ValidationError) as raised:
            client.invoke_endpoint(EndpointName="starting", Body=json.dumps(CHAT))
    assert "Endpoint starting" in raised.value.response["Error"]["Message"]


@contextlib.contextmanager
def stream_that_breaks() -> Iterator[str]:
    """A fake container whose stream stops mid-answer. A fake because the real fault (the
    engine dying mid-stream) costs a container of its own; test_lifecycle shows the container
    side of it, this the runtime's translation."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            with connection:
                request = connection.recv(65536)
                if request.startswith(b"GET /ping"):
                    connection.sendall(
                        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"
                    )
                    continue
                connection.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                    b"Transfer-Encoding: chunked\r\n\r\n"
                    b'10\r\ndata: {"a": 1}\n\n\r\n'
                )

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        listener.close()


def test_a_stream_that_breaks_raises_model_stream_error_after_the_parts_sent():
    with stream_that_breaks() as container, local_runtime(container) as url:
        response = runtime_client(url).invoke_endpoint_with_response_stream(
            EndpointName="demo", Body=b"{}"
        )
        received = []
        with pytest.raises(EventStreamError) as raised:
            for event in response["Body"]:
                received.append(event["PayloadPart"]["Bytes"])
    assert received == [b'data: {"a": 1}\n\n']
    assert raised.value.response["Error"]["Code"] == "ModelStreamError"
    # botocore hands a stream exception's Code and Message to the client, not its ErrorCode.
    assert "connection to container primary failed" in raised.value.response["Error"]["Message"]


# The boto3 snippets a reader copies: the page the README links for trying boto3 locally.
LOCAL_RUNTIME_DOC = Path(__file__).parents[2] / "docs" / "local-runtime.md"
LOCAL_RUNTIME_SECTION = "# Try your boto3 code locally"


def documented_python() -> str:
    doc = LOCAL_RUNTIME_DOC.read_text()
    section = doc.split(LOCAL_RUNTIME_SECTION, 1)[1].split("\n## ", 1)[0]
    section = section.split("\n### ", 1)[0]
    return "\n".join(re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL))


def test_the_readmes_boto3_snippets_run_against_the_local_runtime(runtime_url, client):
    code = documented_python()
    assert "invoke_endpoint_with_response_stream" in code and "ModelError" in code
    payload = {**CHAT, "max_tokens": 64}
    direct = chat_text(client.post("/invocations", json=payload).json())
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local"}
    ran = subprocess.run(
        [sys.executable, "-c", code.replace("http://127.0.0.1:8081", runtime_url)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stderr
    printed = ran.stdout.split("\n")
    # The answer, the same answer streamed, then the error's original status.
    assert printed[0] == direct.split("\n")[0]
    assert ran.stdout.count(direct) == 2
    # (The error's body, OriginalMessage, ends in a newline as every JSON answer does.)
    assert "400" in [line for line in printed if line][-1]


def test_boto3_reads_the_acceptance_from_custom_attributes(runtime):
    # What the container puts in the answer's custom attributes is all of its headers a
    # SageMaker client ever sees.
    code = {"messages": [{"role": "user", "content": "def add(a, b):"}], "max_tokens": 32}
    answer = runtime.invoke_endpoint(
        EndpointName="peagle", ContentType="application/json", Body=json.dumps(code)
    )
    attributes = dict(pair.split("=") for pair in answer["CustomAttributes"].split(","))
    assert int(attributes["speculation-draft-tokens"]) > 0
    body = json.loads(answer["Body"].read())
    stats = body["metrics"]["speculative_decoding"]
    assert int(attributes["speculation-accepted-tokens"]) == stats["num_accepted_draft_tokens"]
