"""Reading a request body: a size limit, an idle limit, and a client that leaves."""

from __future__ import annotations

import asyncio

from starlette.requests import ClientDisconnect, Request

from serving.errors import RequestRefused

# nginx's code for "the client closed the request": logged and counted, never sent.
CLIENT_CLOSED = 499


def too_large(limit: int) -> RequestRefused:
    return RequestRefused(
        413,
        f"payload is larger than the {limit / 1024 / 1024:g} MB limit "
        "(SAGEMAKER_MAX_PAYLOAD_IN_MB); send a smaller request.",
    )


async def read_body(request: Request, limit: int, idle_seconds: float) -> bytes:
    """The whole body: 413 as soon as it is known to exceed `limit` bytes, 408 when the
    client sends nothing for `idle_seconds`, 499 when it goes away mid-upload."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise too_large(limit)
    chunks: list[bytes] = []
    size = 0
    stream = request.stream().__aiter__()
    while True:
        try:
            async with asyncio.timeout(idle_seconds):
                chunk = await anext(stream)
        except StopAsyncIteration:
            return b"".join(chunks)
        except TimeoutError:
            raise RequestRefused(
                408,
                f"the request body stalled: nothing arrived for {idle_seconds:g} s "
                "(SERVING_BODY_TIMEOUT_SECONDS); send the whole body promptly.",
            ) from None
        except ClientDisconnect:
            raise RequestRefused(
                CLIENT_CLOSED, "the client closed the connection mid-upload."
            ) from None
        size += len(chunk)
        if size > limit:
            raise too_large(limit)
        chunks.append(chunk)
