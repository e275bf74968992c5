"""Relay one HTTP request to the engine and its answer back, streaming as it comes.

A client that goes away closes the engine connection, which makes vLLM abort the request.
An engine that goes away turns into a JSON error (or an error event mid-stream).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Mapping

import httpx
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from serving.errors import error_response, sse_error

log = logging.getLogger("serving.relay")

# RFC 9110 hop-by-hop headers, plus those the HTTP layers recompute on each hop.
HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "trailers",
    "transfer-encoding",
    "upgrade",
    "host",
    "content-length",
}
ENGINE_GONE = "the engine is not answering (it may have stopped); retry on another instance."


def end_to_end(headers: Mapping[str, str]) -> dict[str, str]:
    return {name: value for name, value in headers.items() if name.lower() not in HOP_BY_HOP}


async def wait_for_disconnect(request: Request) -> None:
    """Return when the client disconnects. Only call once the body has been read."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


class UsageWatcher:
    """Finds `usage.completion_tokens` in a relayed answer, for the access log.

    A JSON answer carries it at the end; a stream only when the client asked for
    stream_options.include_usage. Large answers are not buffered for it.
    """

    MAX_BUFFER = 1 << 20

    def __init__(self, content_type: str):
        self.is_json = content_type.startswith("application/json")
        self.is_stream = content_type.startswith("text/event-stream")
        self.buffer = bytearray()
        self.completion_tokens: int | None = None

    def feed(self, chunk: bytes) -> None:
        if self.is_json and len(self.buffer) + len(chunk) <= self.MAX_BUFFER:
            self.buffer += chunk
        elif self.is_stream and b'"completion_tokens"' in chunk:
            for line in chunk.split(b"\n"):
                if line.startswith(b"data: {") and b'"completion_tokens"' in line:
                    self._take(line[len(b"data: ") :])

    def _take(self, raw: bytes) -> None:
        try:
            usage = json.loads(raw).get("usage") or {}
        except (ValueError, AttributeError):
            return
        if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
            self.completion_tokens = usage["completion_tokens"]

    def finish(self) -> None:
        if self.is_json and self.buffer:
            self._take(bytes(self.buffer))


class Relay:
    def __init__(self, engine_url: str, max_connections: int):
        self.engine_url = engine_url
        self.client = httpx.AsyncClient(
            base_url=engine_url,
            timeout=httpx.Timeout(connect=5.0, read=None, write=30.0, pool=5.0),
            limits=httpx.Limits(
                max_connections=max_connections, max_keepalive_connections=max_connections
            ),
        )

    async def aclose(self) -> None:
        await self.client.aclose()

    async def forward(
        self,
        request: Request,
        method: str,
        path: str,
        content: bytes,
        headers: Mapping[str, str],
    ) -> Response:
        upstream_request = self.client.build_request(
            method, path, params=request.query_params, content=content, headers=headers
        )
        sending = asyncio.ensure_future(self.client.send(upstream_request, stream=True))
        disconnected = asyncio.ensure_future(wait_for_disconnect(request))
        try:
            await asyncio.wait({sending, disconnected}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            disconnected.cancel()
        if not sending.done():
            # The client left while vLLM was still working: cancelling closes the connection,
            # and vLLM aborts the generation.
            sending.cancel()
            await asyncio.gather(sending, return_exceptions=True)
            log.info("client disconnected; request to %s aborted", path)
            return Response(status_code=499)
        try:
            upstream = sending.result()
        except httpx.HTTPError as error:
            log.warning("engine request to %s failed: %r", path, error)
            return error_response(503, ENGINE_GONE, "EngineUnavailable", {"Retry-After": "5"})
        return StreamingResponse(
            self._body(upstream, request.scope.setdefault("state", {})),
            status_code=upstream.status_code,
            headers=end_to_end(upstream.headers),
        )

    async def _body(self, upstream: httpx.Response, state: dict) -> AsyncIterator[bytes]:
        usage = UsageWatcher(upstream.headers.get("content-type", ""))
        try:
            async for chunk in upstream.aiter_raw():
                usage.feed(chunk)
                yield chunk
            usage.finish()
            if usage.completion_tokens is not None:
                state["completion_tokens"] = usage.completion_tokens
        except httpx.HTTPError as error:
            log.warning("engine stream broke: %r", error)
            if upstream.headers.get("content-type", "").startswith("text/event-stream"):
                yield sse_error(503, ENGINE_GONE, "EngineUnavailable")
        finally:
            await upstream.aclose()

    async def get_text(self, path: str) -> str | None:
        try:
            response = await self.client.get(path, timeout=5.0)
        except httpx.HTTPError:
            return None
        return response.text if response.status_code == 200 else None
