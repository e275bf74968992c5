"""Relay one HTTP request to the engine and its answer back, streaming as it comes.

A client that goes away closes the engine connection, which makes vLLM abort the request.
An engine that goes away turns into a JSON error (or an error event mid-stream).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator

import httpx
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from serving.bodies import CLIENT_CLOSED
from serving.errors import AnswerCut, error_response, sse_error
from serving.headers import RawHeaders, to_client
from serving.logs import printable

log = logging.getLogger("serving.relay")

ENGINE_GONE = "the engine is not answering (it may have stopped); retry on another instance."
# The engine listens on a Unix socket only; HTTP needs a host name all the same.
ENGINE_BASE_URL = "http://engine"


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
    """The front's one HTTP client to the engine, over the engine's private Unix socket."""

    def __init__(self, socket_path: str, max_connections: int):
        limits = httpx.Limits(
            max_connections=max_connections, max_keepalive_connections=max_connections
        )
        self.client = httpx.AsyncClient(
            base_url=ENGINE_BASE_URL,
            transport=httpx.AsyncHTTPTransport(uds=socket_path, limits=limits),
            timeout=httpx.Timeout(connect=5.0, read=None, write=30.0, pool=5.0),
        )

    async def aclose(self) -> None:
        await self.client.aclose()

    async def forward(
        self,
        request: Request,
        target: bytes,
        content: bytes,
        headers: RawHeaders,
    ) -> Response:
        """Send `target` (raw path and query, never decoded) to the engine; relay its answer."""
        url = httpx.URL(ENGINE_BASE_URL, raw_path=target)
        upstream_request = self.client.build_request(
            request.method, url, content=content, headers=headers
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
            log.info("client disconnected; request to %s aborted", printable(target))
            return Response(status_code=CLIENT_CLOSED)
        try:
            upstream = sending.result()
        except httpx.HTTPError as error:
            log.warning("engine request to %s failed: %r", printable(target), error)
            return error_response(503, ENGINE_GONE, "EngineUnavailable", {"Retry-After": "5"})
        response = StreamingResponse(
            self._body(upstream, request.scope.setdefault("state", {})),
            status_code=upstream.status_code,
        )
        response.raw_headers = to_client(upstream.headers.raw)
        return response

    async def _body(self, upstream: httpx.Response, state: dict) -> AsyncIterator[bytes]:
        content_type = upstream.headers.get("content-type", "")
        usage = UsageWatcher(content_type)
        try:
            async for chunk in upstream.aiter_raw():
                usage.feed(chunk)
                yield chunk
            usage.finish()
            if usage.completion_tokens is not None:
                state["completion_tokens"] = usage.completion_tokens
        except httpx.HTTPError as error:
            log.warning("engine answer broke off: %r", error)
            if not content_type.startswith("text/event-stream"):
                # Ending the body cleanly would hand the client a cut answer as a success.
                raise AnswerCut(ENGINE_GONE) from None
            yield sse_error(503, ENGINE_GONE, "EngineUnavailable")
        finally:
            await upstream.aclose()

    async def get_text(self, path: str) -> str | None:
        try:
            response = await self.client.get(path, timeout=5.0)
        except httpx.HTTPError:
            return None
        return response.text if response.status_code == 200 else None
