"""Headers: odd bytes never make a 500, the engine sees what the client sent, and answers
carry one Date and one Server."""

from __future__ import annotations

import json

from serving.headers import to_client, to_engine
from tests.support.raw_http import (
    body_of,
    connect,
    exchange,
    get,
    header_values,
    read_one,
    status_of,
)

CHAT = json.dumps({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}).encode()


def post_chat(url: str, headers: bytes) -> bytes:
    return exchange(
        url,
        b"POST /invocations HTTP/1.1\r\nHost: front\r\nContent-Type: application/json\r\n"
        + headers
        + b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(CHAT)
        + CHAT,
    )


def test_repeated_request_headers_stay_repeated():
    sent = [(b"X-Tag", b"a"), (b"x-tag", b"b"), (b"Accept", b"*/*")]
    assert to_engine(sent, b"id-1") == [
        (b"x-tag", b"a"),
        (b"x-tag", b"b"),
        (b"accept", b"*/*"),
        (b"x-request-id", b"id-1"),
    ]


def test_headers_named_in_connection_and_hop_by_hop_ones_are_dropped():
    sent = [
        (b"Connection", b"keep-alive, X-Hop-Secret"),
        (b"X-Hop-Secret", b"1"),
        (b"Keep-Alive", b"timeout=5"),
        (b"Transfer-Encoding", b"chunked"),
        (b"X-Request-Id", b"spoofed"),
        (b"X-Amzn-SageMaker-Custom-Attributes", b"k=v"),
    ]
    assert to_engine(sent, b"ours") == [
        (b"x-amzn-sagemaker-custom-attributes", b"k=v"),
        (b"x-request-id", b"ours"),
    ]


def test_engine_date_and_server_are_left_to_the_front():
    answer = [(b"date", b"x"), (b"server", b"uvicorn"), (b"content-type", b"application/json")]
    assert to_client(answer) == [(b"content-type", b"application/json")]


def test_utf8_header_bytes_are_served_and_reach_the_engine_unchanged(peagle):
    inference_id = b"caf\xc3\xa9-\xe2\x98\x83-id"
    answer = post_chat(
        peagle.url,
        b"X-Amzn-SageMaker-Inference-Id: " + inference_id + b"\r\n"
        b"X-Amzn-SageMaker-Custom-Attributes: note=\xe2\x98\x83\r\n"
        b"X-Amzn-SageMaker-Target-Variant: variant-\xc3\xa9\r\n",
    )
    assert status_of(answer) == 200, answer[:400]
    # vLLM names the request with the id it received and echoes it: the bytes came through.
    assert header_values(answer, b"x-request-id") == [inference_id]


def test_header_bytes_that_are_not_utf8_are_refused_naming_the_header(peagle):
    for header in (
        b"X-Amzn-SageMaker-Inference-Id: caf\xe9-\xff-id\r\n",
        b"X-Amzn-SageMaker-Custom-Attributes: note=\xfe\r\n",
    ):
        answer = post_chat(peagle.url, header)
        assert status_of(answer) == 400, (header, answer[:300])
        message = json.loads(body_of(answer))["error"]["message"]
        name = header.split(b":")[0].decode().lower()
        assert name in message.lower() and "UTF-8" in message, message


def test_a_bad_header_is_refused_before_the_body_is_read(peagle):
    """As on the engine routes: the client that announced a body and sent a little of it
    gets its 400 while the rest is still unsent, not a 408 once the front has waited for it
    (the answer is read without waiting for the connection to close)."""
    with connect(peagle.url, timeout=30) as sock:
        sock.sendall(
            b"POST /invocations HTTP/1.1\r\nHost: front\r\nContent-Type: application/json\r\n"
            b"X-Amzn-SageMaker-Custom-Attributes: note=\xfe\r\n"
            b"Content-Length: 5000000\r\n\r\n" + CHAT[:10]
        )
        answer = read_one(sock)
    assert status_of(answer) == 400, answer[:300]
    assert "x-amzn-sagemaker-custom-attributes" in json.loads(body_of(answer))["error"]["message"]


def test_control_bytes_in_headers_are_refused_with_a_4xx(peagle):
    for header in (
        b"X-Amzn-SageMaker-Inference-Id: a\x01b\r\n",
        b"X-Amzn-SageMaker-Custom-Attributes: a\x00b\r\n",
        b"X-Amzn-SageMaker-Target-Variant: \x7f\r\n",
        b"X-Amzn-SageMaker-Custom-Attributes: a\x1bb\r\n",
    ):
        status = status_of(post_chat(peagle.url, header))
        assert 400 <= status < 500, header


def test_odd_paths_are_json_4xx_never_500(peagle):
    for path in (b"/v1/%00", b"/%00", b"/v1/models%zz", b"/v1/%ff%fe", b"/invocations%00"):
        answer = get(peagle.url, path)
        assert 400 <= status_of(answer) < 500, (path, answer[:200])
        assert "error" in json.loads(body_of(answer))


def test_requests_the_http_parser_refuses_get_a_json_400(peagle):
    for request in (
        b"GET /a b HTTP/1.1\r\nHost: front\r\n\r\n",  # a space in the URL
        b"GET /\x00 HTTP/1.1\r\nHost: front\r\n\r\n",  # a raw NUL in the URL
        b"GET /ping HTTP/1.1\r\nHost: front\r\nno colon here\r\n\r\n",
        b"POST /invocations HTTP/1.1\r\nHost: front\r\nContent-Length: x\r\n\r\n",
    ):
        answer = exchange(peagle.url, request)
        assert status_of(answer) == 400, (request, answer[:300])
        assert header_values(answer, b"content-type") == [b"application/json"]
        assert "could not be parsed" in json.loads(body_of(answer))["error"]["message"]
        assert len(header_values(answer, b"date")) == 1


def test_answers_carry_one_date_and_one_server_header(peagle):
    answers = [
        post_chat(peagle.url, b""),
        get(peagle.url, b"/v1/models"),
        get(peagle.url, b"/ping"),
    ]
    for answer in answers:
        assert status_of(answer) == 200
        assert len(header_values(answer, b"date")) == 1
        assert len(header_values(answer, b"server")) == 1


def test_no_traceback_in_the_log_after_odd_input(peagle):
    start = len(peagle.log_text())
    test_odd_paths_are_json_4xx_never_500(peagle)
    test_control_bytes_in_headers_are_refused_with_a_4xx(peagle)
    test_utf8_header_bytes_are_served_and_reach_the_engine_unchanged(peagle)
    test_header_bytes_that_are_not_utf8_are_refused_naming_the_header(peagle)
    test_requests_the_http_parser_refuses_get_a_json_400(peagle)
    written = peagle.log_once("-\\xff-id POST /invocations")[start:]
    assert "Traceback" not in written
    assert " 500 " not in written
