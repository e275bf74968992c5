"""/invocations: payload limits and SageMaker's headers, on the real front and engine."""

from __future__ import annotations

import json
import socket
import time

import httpx
import pytest

from tests.support.stalls import WATCH

CHAT = {"messages": [{"role": "user", "content": "Hello"}], "max_tokens": 4}


def assert_json_error(response: httpx.Response, status: int, *words: str) -> None:
    assert response.status_code == status, response.text
    message = response.json()["error"]["message"]
    for word in words:
        assert word in message, message


def test_bad_json_is_400(client: httpx.Client):
    response = client.post(
        "/invocations", content=b'{"messages": [', headers={"content-type": "application/json"}
    )
    assert_json_error(response, 400, "not valid JSON")


def test_json_that_is_not_an_object_is_400(client: httpx.Client):
    assert_json_error(client.post("/invocations", json=["hello"]), 400, "JSON object")


def test_a_content_type_that_cannot_be_json_is_415(client: httpx.Client):
    response = client.post(
        "/invocations",
        content=b"a=1",
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert_json_error(response, 415, "application/json")


@pytest.mark.parametrize(
    "content_type",
    # The SageMaker SDK v2 Predictor without a serializer; LangChain's content handlers.
    ["application/octet-stream", "text/plain", "text/plain; charset=utf-8"],
)
def test_the_types_clients_send_by_default_are_read_as_json(client, content_type):
    response = client.post(
        "/invocations", content=json.dumps(CHAT).encode(), headers={"content-type": content_type}
    )
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"]


def test_a_body_that_is_not_json_under_a_default_type_is_400(client: httpx.Client):
    response = client.post("/invocations", content=b"hello", headers={"content-type": "text/plain"})
    assert_json_error(response, 400, "not valid JSON", "whatever the Content-Type")


def test_every_json_answer_ends_with_a_newline(client: httpx.Client):
    """LangChain's SagemakerEndpoint reads answers line by line and waits for a newline."""
    answers = {
        "chat on /invocations": client.post("/invocations", json=CHAT),
        "chat on /v1": client.post("/v1/chat/completions", json={**CHAT, "model": "ignored"}),
        "engine error": client.post("/v1/chat/completions", json={"messages": "x"}),
        "front error": client.post("/invocations", json=["not", "an", "object"]),
        "ping": client.get("/ping"),
        "no route": client.get("/no/such/route"),
    }
    for name, answer in answers.items():
        assert answer.headers["content-type"].startswith("application/json"), name
        assert answer.content.endswith(b"\n"), (name, answer.content[-80:])
        assert int(answer.headers["content-length"]) == len(answer.content), name
        answer.json()  # still one JSON document


def test_body_over_the_limit_is_413_before_it_is_sent(peagle):
    """A declared 100 MB body is refused at once: the front does not wait to read it."""
    with socket.create_connection(("127.0.0.1", peagle.port), timeout=5) as sock:
        # Headers only: no body byte is ever sent, so the answer cannot be waiting for it
        # (and the server's close finds no unread data that would reset the connection).
        sock.sendall(
            b"POST /invocations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100000000\r\n\r\n"
        )
        began = time.monotonic()
        head = ""
        while "SAGEMAKER_MAX_PAYLOAD_IN_MB" not in head and time.monotonic() - began < 5:
            chunk = sock.recv(4096).decode(errors="replace")
            if not chunk:
                break
            head += chunk
    assert head.startswith("HTTP/1.1 413"), head
    assert "SAGEMAKER_MAX_PAYLOAD_IN_MB" in head
    assert WATCH.since(began) < 2


def test_streamed_body_over_the_limit_is_413(client: httpx.Client):
    def chunks():
        for _ in range(7):
            yield b" " * (1024 * 1024)

    response = client.post(
        "/invocations", content=chunks(), headers={"content-type": "application/json"}
    )
    assert_json_error(response, 413, "6 MB")


def test_server_unaffected_after_bad_requests(client: httpx.Client):
    client.post("/invocations", content=b"{", headers={"content-type": "application/json"})
    assert client.post("/invocations", json=CHAT).status_code == 200
    assert client.get("/ping").status_code == 200


def test_inference_id_names_the_request_in_vllm_and_our_log(client: httpx.Client, peagle):
    inference_id = "inference-7f3a9c"
    response = client.post(
        "/invocations", json=CHAT, headers={"X-Amzn-SageMaker-Inference-Id": inference_id}
    )
    assert response.status_code == 200
    # vLLM names its completion after the X-Request-Id it was given, and echoes the header.
    assert inference_id in response.json()["id"]
    assert response.headers["x-request-id"] == inference_id
    line = f"{inference_id} POST /invocations 200"
    assert line in peagle.log_once(line)


def test_session_headers_go_both_ways(client: httpx.Client):
    opened = client.post("/invocations", json={"requestType": "NEW_SESSION"})
    assert opened.status_code == 200, opened.text
    # The header reads "<session id>; Expires=<time>", as SageMaker's runtime expects it.
    session = opened.headers["x-amzn-sagemaker-new-session-id"].split(";")[0].strip()
    answer = client.post(
        "/invocations", json=CHAT, headers={"X-Amzn-SageMaker-Session-Id": session}
    )
    assert answer.status_code == 200, answer.text
    closed = client.post(
        "/invocations",
        json={"requestType": "CLOSE"},
        headers={"X-Amzn-SageMaker-Session-Id": session},
    )
    assert closed.status_code == 200, closed.text
    assert closed.headers["x-amzn-sagemaker-closed-session-id"] == session
    unknown = client.post(
        "/invocations", json=CHAT, headers={"X-Amzn-SageMaker-Session-Id": session}
    )
    assert unknown.status_code >= 400


def test_custom_attributes_are_forwarded_verbatim():
    from starlette.requests import Request

    from serving.app import engine_headers
    from serving.record import SCOPE_KEY, RequestRecord

    attributes = "trace=abc,user=42;" + "x" * 1000
    scope = {
        "type": "http",
        "headers": [
            (b"x-amzn-sagemaker-custom-attributes", attributes.encode()),
            (b"x-amzn-sagemaker-target-variant", b"variant-a"),
            (b"connection", b"keep-alive"),
            (b"content-length", b"12"),
        ],
        SCOPE_KEY: RequestRecord(b"rid-1", None, 0.0, 0.0),
    }
    headers = dict(engine_headers(Request(scope)))
    assert headers[b"x-amzn-sagemaker-custom-attributes"] == attributes.encode()
    assert headers[b"x-amzn-sagemaker-target-variant"] == b"variant-a"
    assert headers[b"x-request-id"] == b"rid-1"
    assert b"connection" not in headers and b"content-length" not in headers


DEEP = b"[" * 100_000 + b"]" * 100_000


@pytest.mark.parametrize("path", ["/invocations", "/v1/chat/completions", "/v1/completions"])
def test_a_body_nested_too_deeply_to_parse_is_400(client: httpx.Client, path: str):
    # Python's JSON parser (the front's and vLLM's) raises RecursionError: a 500 before.
    response = client.post(path, content=DEEP, headers={"content-type": "application/json"})
    assert_json_error(response, 400, "nests arrays and objects too deeply")


@pytest.mark.parametrize("path", ["/invocations", "/v1/chat/completions"])
def test_a_body_with_many_brackets_nested_shallowly_is_answered(client: httpx.Client, path: str):
    parts = [{"type": "text", "text": "Hi"}] * 600  # 1,200 brackets, 4 deep
    shallow = {**CHAT, "messages": [{"role": "user", "content": parts}]}
    assert client.post(path, json=shallow).status_code == 200


def test_a_lone_surrogate_in_the_body_is_sent_on_as_the_client_wrote_it(client: httpx.Client):
    # `"\ud800"` is valid JSON for a str that UTF-8 cannot encode: a body the front rewrites
    # (TGI's, or one that names `"model": null`) failed with UnicodeEncodeError, a 500.
    for payload in (
        {"inputs": "A \\ud800 cat", "parameters": {"max_new_tokens": 2}},
        {**CHAT, "model": None, "messages": [{"role": "user", "content": "\\ud800"}]},
        {**CHAT, "model": None, "user": "\\ud800"},
    ):
        body = json.dumps(payload).replace("\\\\ud800", "\\ud800").encode()
        response = client.post(
            "/invocations", content=body, headers={"content-type": "application/json"}
        )
        assert response.status_code < 500, response.text
        assert response.json()  # whatever the engine made of it, readable JSON


@pytest.mark.parametrize("path", ["/invocations", "/v1/chat/completions"])
def test_an_integer_the_engine_cannot_carry_is_400_naming_where(client: httpx.Client, path):
    # vLLM hands the schema to its engine core as MessagePack (64-bit integers): a 500 with
    # an empty message before.
    schema = {"type": "object", "properties": {"name": {"type": "string", "x": 10**30}}}
    body = {
        **CHAT,
        "response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema": schema}},
    }
    where = "response_format.json_schema.schema.properties.name.x"
    assert_json_error(client.post(path, json=body), 400, where, "64-bit")
    # Long digits in a string, and a large integer inside the range, are the engine's to judge.
    fine = {**CHAT, "user": "1" * 40, "seed": 2**62}
    assert client.post(path, json=fine).status_code == 200


@pytest.mark.parametrize("prompt", ["", [""], []])
def test_an_empty_prompt_is_400_streamed_or_not(client: httpx.Client, prompt):
    # Streamed, vLLM sent 200 and then an error event, and logged a traceback.
    for stream in (False, True):
        body = {"prompt": prompt, "max_tokens": 4, "stream": stream}
        assert_json_error(client.post("/invocations", json=body), 400, "'prompt' is empty")
