"""Relay one HTTP request to the engine and its answer back, streaming as it comes (the
exchange itself, watched, recorded and captured: serving/exchange.py).

A client that goes away closes the engine connection, which makes vLLM abort the request.
An engine that goes away turns into a JSON error (or an error event mid-stream).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable
from typing import TypeVar

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from serving.answers import AnswerWatcher, with_speculation, without_null_usage
from serving.bodies import CLIENT_CLOSED
from serving.engine_client import EngineError
from serving.errors import AnswerCut, error_response, sse_error
from serving.exchange import Answer, Exchanges
from serving.headers import RawHeaders, to_client
from serving.json_text import json_bytes
from serving.logs import printable
from serving.record import record_of
from serving.tgi import TgiAnswer, stream_events, whole_answer

T = TypeVar("T")

log = logging.getLogger("serving.relay")

ENGINE_GONE = "the engine is not answering (it may have stopped); retry on another instance."


async def wait_for_disconnect(request: Request) -> None:
    """Return when the client disconnects. Only call once the body has been read."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


async def unless_client_leaves(request: Request, work: Awaitable[T]) -> asyncio.Future[T] | None:
    """`work` run to its end, done; or None when the client left first, `work` cancelled
    (cancelling the engine's request closes its connection, and vLLM aborts the generation)."""
    working = asyncio.ensure_future(work)
    disconnected = asyncio.ensure_future(wait_for_disconnect(request))
    try:
        await asyncio.wait({working, disconnected}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        disconnected.cancel()
    if working.done():
        return working
    working.cancel()
    await asyncio.gather(working, return_exceptions=True)
    return None


def is_small_json(answer: Answer) -> bool:
    """A JSON answer of known length that fits the watcher's buffer (vLLM's non-streamed ones)."""
    length = answer.header("content-length")
    return answer.is_json and length.isdigit() and int(length) <= AnswerWatcher.MAX_BUFFER


class Relay:
    """HTTP's road to the engine: one request's exchange, its answer written back as it comes."""

    def __init__(self, exchanges: Exchanges):
        self.exchanges = exchanges
        self.client = exchanges.client

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
        record = record_of(request.scope)
        sending = await unless_client_leaves(
            request, self.exchanges.send(record, request.method, target, content, headers)
        )
        if sending is None:
            log.info("client disconnected; request to %s aborted", printable(target))
            return Response(status_code=CLIENT_CLOSED)
        try:
            answer = sending.result()
        except EngineError as error:
            log.warning("engine request to %s failed: %s", printable(target), error)
            return self.engine_gone()
        tgi = tgi if answer.status == 200 else None
        if is_small_json(answer) or (tgi is not None and not tgi.stream):
            return await self._whole(answer, tgi)
        body = self._body(answer)
        if tgi is not None and answer.is_stream:
            body = stream_events(body, tgi)
        response = StreamingResponse(body, status_code=answer.status)
        response.raw_headers = to_client(answer.raw_headers)
        return response

    async def _whole(self, answer: Answer, tgi: TgiAnswer | None = None) -> Response:
        """A small JSON answer read whole, so what it says can go in the headers too."""
        try:
            body = await answer.read()
        except EngineError as error:
            log.warning("engine answer broke off: %s", error)
            return self.engine_gone()
        finally:
            answer.close()
        if tgi is not None and answer.parsed is not None:
            body = whole_answer(tgi, answer.parsed)
        elif answer.parsed is not None and (tidy := without_null_usage(answer.parsed)):
            body = json_bytes(tidy)
        # Clients that read answers line by line (LangChain's SagemakerEndpoint) wait for a
        # newline that vLLM's JSON never ends with.
        body = body if body.endswith(b"\n") else body + b"\n"
        response = Response(body, status_code=answer.status)
        headers = with_speculation(to_client(answer.raw_headers), answer.speculation)
        response.raw_headers = [*headers, (b"content-length", b"%d" % len(body))]
        return response

    async def _body(self, answer: Answer) -> AsyncIterator[bytes]:
        last = b"\n"
        try:
            async for chunk in answer.chunks():
                last = chunk or last
                yield chunk
            if answer.is_json and not last.endswith(b"\n"):
                yield b"\n"  # as for a whole JSON answer (a large one comes this way)
        except EngineError as error:
            log.warning("engine answer broke off: %s", error)
            if not answer.is_stream:
                # Ending the body cleanly would hand the client a cut answer as a success.
                raise AnswerCut(self.why_gone()) from None
            yield sse_error(503, self.why_gone(), "EngineUnavailable")
        finally:
            answer.close()

    def why_gone(self) -> str:
        """Why the engine dropped a request, when the front knows (a stall, a restart)."""
        return self.client.unavailable or ENGINE_GONE

    def engine_gone(self) -> Response:
        """The answer for a request the engine dropped."""
        return error_response(503, self.why_gone(), "EngineUnavailable", {"Retry-After": "5"})
