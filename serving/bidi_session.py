"""One bidirectional-stream session: a WebSocket carrying many requests at once, each
answered in frames that carry its id (the frames: serving/bidi_frames.py).

Each request is a task of its own that sends the engine an `/invocations` request, as the
HTTP route does, and relays its answer as frames. Cancelling the task closes the engine
connection, and vLLM aborts the generation at once; so does a socket that closes. Frames
go out through one writer, in the order each request's task hands them over, so a
request's frames never cross each other; a client that stops reading holds its requests'
tasks back instead of filling the front's memory.

Every request counts in flight at the gate while it lasts, so the SIGTERM drain waits for
it; what is still running when the drain ends gets an error frame before the socket closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from starlette.websockets import WebSocket, WebSocketDisconnect

from serving import access, invocations, routes, sse
from serving import bidi_frames as frames
from serving.engine_client import EngineError
from serving.errors import RequestRefused, engine_error
from serving.exchange import Answer, Exchanges
from serving.gate import RequestGate
from serving.headers import to_engine_as_json
from serving.json_text import json_bytes
from serving.logs import printable
from serving.metrics import FrontMetrics
from serving.payload_parser import PayloadParser
from serving.record import RequestRecord
from serving.tgi import TgiAnswer, stream_events, whole_answer

log = logging.getLogger("serving.bidi_session")
ROUTE = routes.match(frames.ROUTE.encode())

INTERNAL = "the front failed to relay this request; it was logged. Send it again."
# Frames queued for a client beyond this many hold its requests' tasks back.
HIGH_WATER = 256
# How long the front's own close waits for the last frames to go out.
CLOSE_SECONDS = 2.0
# Handshake headers that are the WebSocket's own, not the client's request.
SOCKET_HEADERS = frozenset(
    {b"upgrade", b"connection", b"sec-websocket-key", b"sec-websocket-version",
     b"sec-websocket-extensions", b"sec-websocket-protocol", b"host"}
)  # fmt: skip


@dataclass(frozen=True)
class SessionParts:
    """What every session shares: the front's parts it sends requests through."""

    parser: PayloadParser
    exchanges: Exchanges
    gate: RequestGate
    metrics: FrontMetrics
    max_frame_bytes: int
    why_gone: Callable[[], str]  # why the engine dropped a request


class Session:
    def __init__(self, websocket: WebSocket, parts: SessionParts, session_id: bytes):
        self.socket = websocket
        self.parts = parts
        self.session_id = session_id
        self.headers = [
            (name, value)
            for name, value in websocket.scope["headers"]
            if name.lower() not in SOCKET_HEADERS
        ]
        self.tasks: dict[frames.RequestId, asyncio.Task] = {}
        self.numbers = 0  # requests sent, for ids the client left out and engine request ids
        self.outbox: asyncio.Queue[str | None] = asyncio.Queue()
        self.room = asyncio.Event()
        self.room.set()
        self.cancelled: set[frames.RequestId] = set()  # by the client's cancel frames
        self.ending: tuple[int, str, str] | None = None  # the front is closing the session
        self.writer: asyncio.Task | None = None

    async def run(self) -> None:
        """Serve the session until the client closes it (or the front does)."""
        await self.socket.accept()
        self.parts.metrics.sessions_open.inc()
        self.writer = writer = asyncio.create_task(self.write())
        try:
            while True:
                message = await self.socket.receive()
                if message["type"] == "websocket.disconnect":
                    break
                self.parts.metrics.frames.labels("in").inc()
                self.take(message)
        except WebSocketDisconnect:
            pass
        finally:
            await self.stop_all()
            writer.cancel()
            await asyncio.gather(writer, return_exceptions=True)
            self.parts.metrics.sessions_open.dec()

    async def end(self, status: int, message: str, error_type: str) -> None:
        """The front closes the session: each request still running gets an error frame,
        then the socket closes (1001, going away)."""
        self.ending = (status, message, error_type)
        await self.stop_all()
        self.outbox.put_nowait(None)
        if self.writer is not None:
            await asyncio.wait({self.writer}, timeout=CLOSE_SECONDS)

    async def stop_all(self) -> None:
        tasks = list(self.tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def write(self) -> None:
        """The one writer: frames in the order they were handed over; None closes."""
        while True:
            text = await self.outbox.get()
            if self.outbox.qsize() < HIGH_WATER:
                self.room.set()
            if text is None:
                with contextlib.suppress(Exception):
                    await self.socket.close(1001)
                return
            try:
                await self.socket.send_text(text)
            except Exception:  # the client is gone; the reader sees the disconnect
                return
            self.parts.metrics.frames.labels("out").inc()

    async def send(self, text: str) -> None:
        """Queue a frame, waiting while the client is that far behind."""
        while self.outbox.qsize() >= HIGH_WATER:
            self.room.clear()
            await self.room.wait()
        self.outbox.put_nowait(text)

    def send_now(self, text: str) -> None:
        """Queue a frame that ends a request or answers a bad one: never held back."""
        self.outbox.put_nowait(text)

    def take(self, message: dict) -> None:
        """One frame from the client."""
        text = message.get("text")
        if text is None:
            self.send_now(
                frames.error(
                    None,
                    400,
                    "binary frames are not taken; send each request as a UTF-8 text frame "
                    "holding a JSON object.",
                )
            )
            return
        size = len(text) if text.isascii() else len(text.encode())
        if size > self.parts.max_frame_bytes:
            self.send_now(
                frames.error(
                    None,
                    413,
                    f"the frame is {size} bytes, over the {self.parts.max_frame_bytes} a request "
                    "may be (SAGEMAKER_MAX_PAYLOAD_IN_MB).",
                )
            )
            return
        try:
            frame = frames.parse(text)
            if isinstance(frame, frames.Cancel):
                self.cancel(frame.request_id)
            else:
                self.invoke(frame)
        except frames.FrameProblem as problem:
            self.send_now(frames.error(problem.request_id, problem.status, problem.message))

    def cancel(self, request_id: frames.RequestId | None) -> None:
        if request_id is None:
            chosen = list(self.tasks)
        elif request_id in self.tasks:
            chosen = [request_id]
        else:
            raise frames.FrameProblem(
                f"no request {request_id!r} is in flight on this session to cancel; it ended "
                "(its last frame was sent) or was never sent.",
                request_id,
                404,
            )
        for chosen_id in chosen:
            self.cancelled.add(chosen_id)
            self.tasks[chosen_id].cancel()
            self.parts.metrics.cancels.inc()

    def invoke(self, frame: frames.Invoke) -> None:
        self.numbers += 1
        request_id = str(self.numbers) if frame.request_id is None else frame.request_id
        if request_id in self.tasks:
            raise frames.FrameProblem(
                f"request {request_id!r} is already in flight on this session; give each "
                "request an id of its own.",
                request_id,
                409,
            )
        refused = self.parts.gate.admit()
        if refused is not None:
            self.send_now(
                frames.error(request_id, refused.status, refused.message, refused.error_type)
            )
            return
        engine_id = b"%s-%d" % (self.session_id, self.numbers)
        record = RequestRecord(engine_id, ROUTE, time.time(), time.perf_counter())
        task = asyncio.create_task(self.answer(request_id, record, frame.payload))
        self.tasks[request_id] = task
        task.add_done_callback(functools.partial(self.finished, request_id, record))

    def finished(
        self, request_id: frames.RequestId, record: RequestRecord, task: asyncio.Task
    ) -> None:
        """A request's task ended: its last frame when the task could not send it (it was
        cancelled, perhaps before it ever ran), and its place in flight given back."""
        del self.tasks[request_id]
        self.parts.gate.release()
        status: int | str
        if not task.cancelled():
            if (error := task.exception()) is None:
                status = task.result()
            else:
                log.error(
                    "request %s of a session failed", printable(record.request_id), exc_info=error
                )
                status = 500
                self.send_now(frames.error(request_id, 500, INTERNAL))
        elif self.ending is not None:
            status = self.ending[0]
            self.send_now(frames.error(request_id, *self.ending))
        elif request_id in self.cancelled:
            status = "cancelled"
            self.send_now(frames.cancelled(request_id))
        else:
            status = "closed"  # the client closed the socket
        self.cancelled.discard(request_id)
        access.write(
            self.parts.metrics, record, "WEBSOCKET", frames.ROUTE, frames.ROUTE, status,
            session_request_id=str(request_id)[: frames.MAX_ID_CHARS],
        )  # fmt: skip

    async def answer(
        self, request_id: frames.RequestId, record: RequestRecord, payload: dict
    ) -> int:
        """One request: the engine's answer relayed as frames, ending in `done` or `error`;
        the HTTP status an `/invocations` call would have had."""
        try:
            body = json_bytes(frames.streamed(payload))
            prepared = await self.parts.parser.prepare(body)
        except RequestRefused as refused:
            self.send_now(frames.error(request_id, refused.status, refused.message))
            return refused.status
        headers = to_engine_as_json(self.headers, record.request_id)
        try:
            answer = await self.parts.exchanges.send(
                record, "POST", invocations.ENGINE_PATH.encode(), prepared.content, headers
            )
        except EngineError:
            return self.engine_gone(request_id)
        try:
            if answer.status != 200:
                self.send_error(request_id, answer.status, await answer.read())
                return answer.status
            if answer.is_stream:
                await self.relay_stream(request_id, answer, prepared.tgi)
            else:
                await self.relay_whole(request_id, answer, prepared.tgi)
            return 200
        except EngineError:
            return self.engine_gone(request_id)
        finally:
            answer.close()

    def send_error(self, request_id: frames.RequestId, status: int, body: bytes) -> None:
        """The engine's error answer (or error event) as the request's last frame."""
        error = engine_error(status, body)["error"]
        self.send_now(frames.error(request_id, status, str(error["message"]), error.get("type")))

    def engine_gone(self, request_id: frames.RequestId) -> int:
        self.send_now(frames.error(request_id, 503, self.parts.why_gone(), "EngineUnavailable"))
        return 503

    async def relay_stream(
        self, request_id: frames.RequestId, answer: Answer, tgi: TgiAnswer | None
    ) -> None:
        chunks = answer.chunks()
        if tgi is not None and tgi.stream:
            chunks = stream_events(chunks, tgi)
        async for data in sse.payloads(chunks):
            if data.strip() == sse.DONE:
                continue
            if data.lstrip().startswith('{"error"'):
                self.send_error(request_id, 500, data.encode())
                return
            await self.send(frames.chunk(request_id, data))
        self.send_now(self.done(request_id, answer))

    async def relay_whole(
        self, request_id: frames.RequestId, answer: Answer, tgi: TgiAnswer | None
    ) -> None:
        body = await answer.read()
        if tgi is not None and answer.parsed is not None:
            body = whole_answer(tgi, answer.parsed)
        await self.send(frames.answer(request_id, body.decode(errors="replace")))
        self.send_now(self.done(request_id, answer))

    @staticmethod
    def done(request_id: frames.RequestId, answer: Answer) -> str:
        """The request's last frame: the usage and speculation its answer carried."""
        speculation = answer.speculation
        record = None if speculation is None else speculation.record()
        return frames.done(request_id, answer.usage, record)
