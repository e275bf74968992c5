"""Relay one HTTP request to the engine and its answer back, streaming as it comes.

A client that goes away closes the engine connection, which makes vLLM abort the request.
An engine that goes away turns into a JSON error (or an error event mid-stream).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator

import httpx
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from serving.answers import AnswerWatcher, with_speculation
from serving.bodies import CLIENT_CLOSED
from serving.capture import MAX_ANSWER_BYTES, Capture, Exchange
from serving.engine_transport import engine_transport
from serving.errors import AnswerCut, error_response, sse_error
from serving.headers import RawHeaders, to_client
from serving.logs import printable
from serving.record import RequestRecord, record_of

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


def is_small_json(upstream: httpx.Response) -> bool:
    """A JSON answer of known length that fits the watcher's buffer (vLLM's non-streamed ones)."""
    length = upstream.headers.get("content-length", "")
    return (
        upstream.headers.get("content-type", "").startswith("application/json")
        and length.isdigit()
        and int(length) <= AnswerWatcher.MAX_BUFFER
    )


def keep(watcher: AnswerWatcher, record: RequestRecord) -> None:
    """What the answer said, for the access log."""
    if watcher.completion_tokens is not None:
        record.completion_tokens = watcher.completion_tokens
    if watcher.speculation is not None:
        record.speculation = watcher.speculation


class Relay:
    """The front's one HTTP client to the engine, over the engine's private Unix socket."""

    def __init__(self, socket_path: str, max_connections: int, capture: Capture | None = None):
        self.capture = capture
        self.client = httpx.AsyncClient(
            base_url=ENGINE_BASE_URL,
            transport=engine_transport(socket_path, max_connections),
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
        record = record_of(request.scope)
        if self.wants_capture(record, upstream.status_code, content):
            record.capture_request = content
        if is_small_json(upstream):
            return await self._whole(upstream, record)
        response = StreamingResponse(self._body(upstream, record), status_code=upstream.status_code)
        response.raw_headers = to_client(upstream.headers.raw)
        return response

    async def _whole(self, upstream: httpx.Response, record: RequestRecord) -> Response:
        """A small JSON answer read whole, so what it says can go in the headers too."""
        try:
            body = b"".join([chunk async for chunk in upstream.aiter_raw()])
        except httpx.HTTPError as error:
            log.warning("engine answer broke off: %r", error)
            return error_response(503, ENGINE_GONE, "EngineUnavailable", {"Retry-After": "5"})
        finally:
            await upstream.aclose()
        watcher = AnswerWatcher(upstream.headers.get("content-type", ""))
        watcher.feed(body)
        watcher.finish()
        keep(watcher, record)
        self.offer_capture(record, upstream, body, watcher)
        # Clients that read answers line by line (LangChain's SagemakerEndpoint) wait for a
        # newline that vLLM's JSON never ends with.
        body = body if body.endswith(b"\n") else body + b"\n"
        response = Response(body, status_code=upstream.status_code)
        headers = with_speculation(to_client(upstream.headers.raw), watcher.speculation)
        response.raw_headers = [*headers, (b"content-length", b"%d" % len(body))]
        return response

    async def _body(self, upstream: httpx.Response, record: RequestRecord) -> AsyncIterator[bytes]:
        content_type = upstream.headers.get("content-type", "")
        watcher = AnswerWatcher(content_type)
        answer = bytearray() if record.capture_request is not None else None
        last = b"\n"
        try:
            async for chunk in upstream.aiter_raw():
                last = chunk or last
                watcher.feed(chunk)
                if answer is not None and len(answer) + len(chunk) <= MAX_ANSWER_BYTES:
                    answer += chunk
                elif answer is not None:
                    answer = None
                    self.capture.skip()
                yield chunk
            if watcher.is_json and not last.endswith(b"\n"):
                yield b"\n"  # as for a whole JSON answer (a large one comes this way)
            watcher.finish()
            keep(watcher, record)
            if answer is not None:
                self.offer_capture(record, upstream, bytes(answer), watcher)
        except httpx.HTTPError as error:
            log.warning("engine answer broke off: %r", error)
            if not content_type.startswith("text/event-stream"):
                # Ending the body cleanly would hand the client a cut answer as a success.
                raise AnswerCut(ENGINE_GONE) from None
            yield sse_error(503, ENGINE_GONE, "EngineUnavailable")
        finally:
            await upstream.aclose()

    def wants_capture(self, record: RequestRecord, status: int, content: bytes) -> bool:
        route = record.route
        return (
            self.capture is not None
            and status == 200
            and route is not None
            and self.capture.wants(route.label, content)
        )

    def offer_capture(
        self,
        record: RequestRecord,
        upstream: httpx.Response,
        answer: bytes,
        watcher: AnswerWatcher,
    ) -> None:
        """Hand a finished exchange to the capture writer, if it was chosen for capture."""
        if self.capture is None or record.capture_request is None or record.route is None:
            return
        speculation = watcher.speculation
        self.capture.offer(
            Exchange(
                request_id=record.request_id.decode("utf-8", errors="replace"),
                route=record.route.label,
                status=upstream.status_code,
                request=record.capture_request,
                answer=answer,
                streamed=watcher.is_stream,
                started=record.started_wall,
                latency_ms=(time.perf_counter() - record.started) * 1000,
                speculation=None if speculation is None else speculation.record(),
                parsed_answer=watcher.answer,
            )
        )

    async def get_text(self, path: str) -> str | None:
        try:
            response = await self.client.get(path, timeout=5.0)
        except httpx.HTTPError:
            return None
        return response.text if response.status_code == 200 else None
