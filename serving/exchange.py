"""One exchange with the engine, whichever road the request came by.

A prepared body goes to the engine; its answer is watched as it passes (the completion's
token count, the request's speculation), the request's record is filled in from it when the
answer ends, and the exchange is offered to capture. The HTTP relay (serving/relay.py), the
bidirectional stream (serving/bidi_session.py) and Batch Transform's records
(serving/transform.py) all send through here, so a request on any of them is counted, logged
and captured alike; each road only writes the answer its own way.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

from serving.answers import AnswerWatcher, Speculation
from serving.capture import MAX_ANSWER_BYTES, Capture, CapturedExchange
from serving.engine_client import EngineAnswer, EngineClient
from serving.headers import RawHeaders
from serving.record import RequestRecord
from serving.served_models import ADAPTER_ROUTES, NotServed, ServedModels


class Answer:
    """The engine's answer to one exchange: read it whole or as it comes, once. When it has
    been read to its end, what it said is in the request's record and capture has it."""

    def __init__(
        self,
        upstream: EngineAnswer | NotServed,
        record: RequestRecord,
        capture: Capture | None = None,
        request: bytes = b"",
    ):
        self.upstream = upstream
        self.record = record
        self.status = upstream.status
        self.raw_headers: RawHeaders = upstream.raw_headers
        self.content_type = upstream.header("content-type")
        self.watcher = AnswerWatcher(self.content_type)
        # Set only when this exchange was chosen for capture: the body the engine got, and
        # its answer's chunks as they come (dropped when they grow past what capture keeps;
        # joined once, at the end, so a whole answer is never copied).
        self.capture = capture
        self.request = request
        self.kept: list[bytes] | None = [] if capture is not None else None
        self.kept_bytes = 0

    def header(self, name: str) -> str:
        return self.upstream.header(name)

    @property
    def is_json(self) -> bool:
        return self.watcher.is_json

    @property
    def is_stream(self) -> bool:
        return self.watcher.is_stream

    @property
    def parsed(self) -> dict | None:
        """A whole JSON answer, parsed once (None for a stream, or one too large to buffer)."""
        return self.watcher.answer

    @property
    def speculation(self) -> Speculation | None:
        return self.watcher.speculation

    @property
    def usage(self) -> dict | None:
        return self.watcher.usage

    async def read(self) -> bytes:
        """The whole body (raises EngineError when the engine breaks it off)."""
        body = await self.upstream.read()
        self._feed(body)
        self._finish()
        return body

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives (raises EngineError when the engine breaks it off)."""
        feed = self.watcher.feed if self.kept is None else self._feed  # per chunk: kept lean
        async for chunk in self.upstream.chunks():
            feed(chunk)
            yield chunk
        self._finish()

    def close(self) -> None:
        self.upstream.close()

    def _feed(self, chunk: bytes) -> None:
        self.watcher.feed(chunk)
        if self.kept is None:
            return
        self.kept_bytes += len(chunk)
        if self.kept_bytes <= MAX_ANSWER_BYTES:
            self.kept.append(chunk)
        else:
            self.kept = None
            self.capture.skip()

    def _finish(self) -> None:
        watcher, record = self.watcher, self.record
        watcher.finish()
        if watcher.completion_tokens is not None:
            record.completion_tokens = watcher.completion_tokens
        if watcher.speculation is not None:
            record.speculation = watcher.speculation
        if self.kept is not None:
            self.capture.offer(self._captured(b"".join(self.kept)))
            self.kept = None

    def _captured(self, answer: bytes) -> CapturedExchange:
        record, speculation = self.record, self.watcher.speculation
        return CapturedExchange(
            request_id=record.request_id.decode("utf-8", errors="replace"),
            route=record.route.label,
            status=self.status,
            request=self.request,
            answer=answer,
            streamed=self.watcher.is_stream,
            started=record.started_wall,
            latency_ms=(time.perf_counter() - record.started) * 1000,
            speculation=None if speculation is None else speculation.record(),
            parsed_answer=self.watcher.answer,
        )


class Exchanges:
    """The front's exchanges with the engine: its one client, the names it serves, and
    capture when it is on."""

    def __init__(self, client: EngineClient, capture: Capture | None = None):
        self.client = client
        self.capture = capture
        self.models = ServedModels(client)

    async def send(
        self,
        record: RequestRecord,
        method: str,
        target: bytes,
        content: bytes,
        headers: RawHeaders,
    ) -> Answer:
        """Send the request; its answer once the status and headers are in (raises
        EngineError when the engine is not there). An adapter the request names that is not
        loaded is answered as the engine answers a model it does not serve."""
        if (missing := await self.models.missing_adapter(headers)) is not None:
            return Answer(NotServed(missing), record)
        adapters = target.startswith(ADAPTER_ROUTES)
        upstream = await self.client.send(method, target, content, headers, watched=not adapters)
        if adapters:
            self.models.forget()
        if self._chooses(record, upstream.status, content):
            return Answer(upstream, record, self.capture, content)
        return Answer(upstream, record)

    def _chooses(self, record: RequestRecord, status: int, content: bytes) -> bool:
        route = record.route
        return (
            self.capture is not None
            and status == 200
            and route is not None
            and self.capture.wants(route.label, content)
        )
