"""The few raw ASGI steps the runtime's routes take instead of Starlette's Request and Response:
on a call that the container answers in a millisecond, building those objects cost a visible
share of what the runtime adds."""

from __future__ import annotations

from collections.abc import Mapping

from starlette.requests import ClientDisconnect
from starlette.types import Receive, Scope, Send


def request_headers(scope: Scope) -> dict[str, str]:
    """Names lower-case (ASGI's), the first value of a repeated header, as Starlette's
    `Headers.get` gives it."""
    headers: dict[str, str] = {}
    for name, value in scope["headers"]:
        headers.setdefault(name.decode("latin-1"), value.decode("latin-1"))
    return headers


async def read_body(receive: Receive, limit: int) -> bytes | None:
    """The whole request body, or None when it is over `limit` bytes (read to its end all the
    same, so the connection stays usable for the client's next call). ClientDisconnect when
    the client goes away before the end."""
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect
        part = message.get("body", b"")
        size += len(part)
        if size <= limit:
            parts.append(part)
        if not message.get("more_body", False):
            break
    return b"".join(parts) if size <= limit else None


async def send_answer(
    send: Send, headers: Mapping[str, str], body: bytes, content_type: str | None
) -> None:
    """A 200 answer with `body`, its Content-Type passed on as the container gave it."""
    raw = raw_headers(headers)
    raw.append((b"content-length", str(len(body)).encode()))
    if content_type is not None:
        raw.append((b"content-type", content_type.encode("latin-1")))
    await send({"type": "http.response.start", "status": 200, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def raw_headers(headers: Mapping[str, str]) -> list[tuple[bytes, bytes]]:
    """ASGI's form: names lower-case, both as bytes."""
    return [
        (name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers.items()
    ]
