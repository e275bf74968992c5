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


# From this declared size on, a body is read into one buffer rather than joined from chunks.
PREALLOCATED_BYTES = 1024 * 1024


async def next_chunk(stream, idle_seconds: float) -> bytes | None:
    """The next piece of the body, None at its end; 408 or 499 as read_body says."""
    try:
        async with asyncio.timeout(idle_seconds):
            return await anext(stream)
    except StopAsyncIteration:
        return None
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


async def read_into(request: Request, length: int, idle_seconds: float) -> bytes:
    buffer = bytearray(length)
    view = memoryview(buffer)
    size = 0
    stream = request.stream().__aiter__()
    while (chunk := await next_chunk(stream, idle_seconds)) is not None:
        if size + len(chunk) > length:
            raise RequestRefused(
                400, "the request body is longer than its Content-Length; send the length it has."
            )
        view[size : size + len(chunk)] = chunk
        size += len(chunk)
    view.release()
    if size < length:
        del buffer[size:]
    return buffer  # type: ignore[return-value]  # bytes-like: json, slicing, aiohttp take it


async def read_body(request: Request, limit: int, idle_seconds: float) -> bytes:
    """The whole body: 413 as soon as it is known to exceed `limit` bytes, 408 when the
    client sends nothing for `idle_seconds`, 499 when it goes away mid-upload.

    A large body of declared length is written into one buffer of that size as it arrives
    (a bytearray, which every reader of the body takes as bytes), so it is never held twice:
    joining its chunks at the end would need the chunks and the joined copy at once, twice
    the body (a 100 MiB transform body: 198 MiB of the front's memory, against about 100)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise too_large(limit)
    if declared.isdigit() and int(declared) >= PREALLOCATED_BYTES:
        return await read_into(request, int(declared), idle_seconds)
    chunks: list[bytes] = []
    size = 0
    stream = request.stream().__aiter__()
    while (chunk := await next_chunk(stream, idle_seconds)) is not None:
        size += len(chunk)
        if size > limit:
            raise too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)
