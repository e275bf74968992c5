"""Relay one HTTP request to the engine and its answer back, streaming as it comes.

A client that goes away closes the engine connection, which makes vLLM abort the request.
An engine that goes away turns into a JSON error (or an error event mid-stream).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from serving import sse
from serving.answers import AnswerWatcher, with_speculation, without_null_usage
from serving.bodies import CLIENT_CLOSED
from serving.capture import MAX_ANSWER_BYTES, Capture, Exchange
from serving.engine_client import (
    DEFAULT_IDLE_SECONDS,
    EngineAnswer,
    EngineClient,
    EngineError,
)
from serving.errors import AnswerCut, error_response, sse_error
from serving.headers import RawHeaders, to_client
from serving.json_text import json_bytes
from serving.logs import printable
from serving.record import RequestRecord, record_of
from serving.tgi import TgiAnswer, TgiStream, whole_answer

log = logging.getLogger("serving.relay")

ENGINE_GONE = "the engine is not answering (it may have stopped); retry on another instance."


async def wait_for_disconnect(request: Request) -> None:
    """Return when the client disconnects. Only call once the body has been read."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


def is_small_json(upstream: EngineAnswer) -> bool:
    """A JSON answer of known length that fits the watcher's buffer (vLLM's non-streamed ones)."""
    length = upstream.header("content-length")
    return (
        upstream.header("content-type").startswith("application/json")
        and length.isdigit()
        and int(length) <= AnswerWatcher.MAX_BUFFER
    )


def keep(watcher: AnswerWatcher, record: RequestRecord) -> None:
    """What the answer said, for the access log."""
    if watcher.completion_tokens is not None:
        record.completion_tokens = watcher.completion_tokens
    if watcher.speculation is not None:
        record.speculation = watcher.speculation


async def as_tgi_events(body: AsyncIterator[bytes], stream: TgiStream) -> AsyncIterator[bytes]:
    """The engine's completion stream as TGI's token events."""
    splitter = sse.DataSplitter()
    async for chunk in body:
        if events := b"".join(stream.event(data) for data in splitter.feed(chunk)):
            yield events
    if events := b"".join(stream.event(data) for data in splitter.finish()) + stream.finish():
        yield events


class Relay:
    """The front's one HTTP client to the engine, over the engine's private Unix socket."""

    def __init__(
        self,
        socket_path: str,
        max_connections: int,
        idle_seconds: float = DEFAULT_IDLE_SECONDS,
        capture: Capture | None = None,
    ):
        self.capture = capture
        self.client = EngineClient(socket_path, max_connections, idle_seconds)

    async def aclose(self) -> None:
        await self.client.aclose()

    async def forward(
        self,
        request: Request,
        target: bytes,
        content: bytes,
        headers: RawHeaders,
        tgi: TgiAnswer | None = None,
    ) -> Response:
        """Send `target` (raw path and query, never decoded) to the engine; relay its answer,
        written as TGI writes it when `tgi` says how."""
        sending = asyncio.ensure_future(self.client.send(request.method, target, content, headers))
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
        except EngineError as error:
            log.warning("engine request to %s failed: %s", printable(target), error)
            return self.engine_gone()
        record = record_of(request.scope)
        if self.wants_capture(record, upstream.status, content):
            record.capture_request = content
        tgi = tgi if upstream.status == 200 else None
        if is_small_json(upstream) or (tgi is not None and not tgi.stream):
            return await self._whole(upstream, record, tgi)
        body = self._body(upstream, record)
        if tgi is not None and upstream.header("content-type").startswith("text/event-stream"):
            body = as_tgi_events(body, TgiStream(tgi))
        response = StreamingResponse(body, status_code=upstream.status)
        response.raw_headers = to_client(upstream.raw_headers)
        return response

    async def _whole(
        self, upstream: EngineAnswer, record: RequestRecord, tgi: TgiAnswer | None = None
    ) -> Response:
        """A small JSON answer read whole, so what it says can go in the headers too."""
        try:
            body = await upstream.read()
        except EngineError as error:
            log.warning("engine answer broke off: %s", error)
            return self.engine_gone()
        finally:
            upstream.close()
        watcher = AnswerWatcher(upstream.header("content-type"))
        watcher.feed(body)
        watcher.finish()
        keep(watcher, record)
        self.offer_capture(record, upstream, body, watcher)
        if tgi is not None and watcher.answer is not None:
            body = whole_answer(tgi, watcher.answer)
        elif watcher.answer is not None and (tidy := without_null_usage(watcher.answer)):
            body = json_bytes(tidy)
        # Clients that read answers line by line (LangChain's SagemakerEndpoint) wait for a
        # newline that vLLM's JSON never ends with.
        body = body if body.endswith(b"\n") else body + b"\n"
        response = Response(body, status_code=upstream.status)
        headers = with_speculation(to_client(upstream.raw_headers), watcher.speculation)
        response.raw_headers = [*headers, (b"content-length", b"%d" % len(body))]
        return response

    async def _body(self, upstream: EngineAnswer, record: RequestRecord) -> AsyncIterator[bytes]:
        content_type = upstream.header("content-type")
        watcher = AnswerWatcher(content_type)
        answer = bytearray() if record.capture_request is not None else None
        last = b"\n"
        try:
            async for chunk in upstream.chunks():
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
        except EngineError as error:
            log.warning("engine answer broke off: %s", error)
            if not content_type.startswith("text/event-stream"):
                # Ending the body cleanly would hand the client a cut answer as a success.
                raise AnswerCut(self.why_gone()) from None
            yield sse_error(503, self.why_gone(), "EngineUnavailable")
        finally:
            upstream.close()

    def why_gone(self) -> str:
        """Why the engine dropped a request, when the front knows (a stall, a restart)."""
        return self.client.unavailable or ENGINE_GONE

    def engine_gone(self) -> Response:
        """The answer for a request the engine dropped."""
        return error_response(503, self.why_gone(), "EngineUnavailable", {"Retry-After": "5"})

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
        upstream: EngineAnswer,
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
                status=upstream.status,
                request=record.capture_request,
                answer=answer,
                streamed=watcher.is_stream,
                started=record.started_wall,
                latency_ms=(time.perf_counter() - record.started) * 1000,
                speculation=None if speculation is None else speculation.record(),
                parsed_answer=watcher.answer,
            )
        )
