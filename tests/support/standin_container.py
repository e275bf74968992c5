"""A stand-in for the container, for measuring and testing the local runtime without vLLM.

It answers GET /ping 200 and POST /invocations with a fixed chat completion (or, for a body
with "stream": true, a few SSE events ending in [DONE]), as fast as uvicorn can, so that what
`python -m bench overhead --url STANDIN --runtime-url RUNTIME` measures is the runtime.
A body may steer it, for tests: {"sleep": seconds} answers late, {"status": 400} answers that
error, {"echo": true} answers the request headers it got, and {"stream": true, "pause": seconds}
waits between events.

    python -m tests.support.standin_container --port 8090
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

import uvicorn

ANSWER = json.dumps(
    {
        "id": "chatcmpl-standin",
        "object": "chat.completion",
        "model": "standin",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "def add(a, b):\n    return a + b"},
                "finish_reason": "length",
            }
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 16, "total_tokens": 28},
    }
).encode()
EVENTS = [
    b'data: {"choices": [{"index": 0, "delta": {"content": "def "}}]}\n\n',
    b'data: {"choices": [{"index": 0, "delta": {"content": "add"}}]}\n\n',
    b"data: [DONE]\n\n",
]
# What the real container puts in its answers' custom attributes.
CUSTOM_ATTRIBUTES = b"speculation-draft-tokens=12,speculation-accepted-tokens=9"

Scope = dict[str, Any]


async def read_body(receive: Any) -> bytes:
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body


async def answer(send: Any, status: int, body: bytes, content_type: bytes) -> None:
    headers = [
        (b"content-type", content_type),
        (b"content-length", str(len(body)).encode()),
        (b"x-amzn-sagemaker-custom-attributes", CUSTOM_ATTRIBUTES),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def stream(send: Any, pause: float) -> None:
    headers = [
        (b"content-type", b"text/event-stream"),
        (b"x-amzn-sagemaker-custom-attributes", CUSTOM_ATTRIBUTES),
    ]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    for event in EVENTS:
        await send({"type": "http.response.body", "body": event, "more_body": True})
        await asyncio.sleep(pause)
    await send({"type": "http.response.body", "body": b""})


async def invocations(scope: Scope, receive: Any, send: Any) -> None:
    body = await read_body(receive)
    try:
        request = json.loads(body)
    except ValueError:
        await answer(send, 400, b'{"error": "not valid JSON"}', b"application/json")
        return
    steer = request if isinstance(request, dict) else {}
    if steer.get("sleep"):
        await asyncio.sleep(float(steer["sleep"]))
    if steer.get("status"):
        await answer(send, int(steer["status"]), b'{"error": "asked for"}', b"application/json")
    elif steer.get("echo"):
        headers = {name.decode(): value.decode() for name, value in scope["headers"]}
        await answer(send, 200, json.dumps({"headers": headers}).encode(), b"application/json")
    elif steer.get("stream"):
        await stream(send, float(steer.get("pause", 0)))
    else:
        await answer(send, 200, ANSWER, b"application/json")


async def app(scope: Scope, receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    if scope["path"] == "/ping":
        await answer(send, 200, b"{}", b"application/json")
    elif scope["path"] == "/invocations" and scope["method"] == "POST":
        await invocations(scope, receive, send)
    else:
        await answer(send, 404, b'{"error": "not found"}', b"application/json")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8090)
    args = parser.parse_args()
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
