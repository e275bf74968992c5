"""The HTTP front: SageMaker's routes and the engine's allow-listed OpenAI API. Handlers only.

Which route a request names, and which methods it takes, is `routes.py`'s table, matched
once by the gate; `routes.Router` answers 404 and 405 from that match and calls these
(`Front`'s methods). What reaches the engine goes by one of three roads, each a writer on one
exchange (serving/exchange.py): HTTP (serving/relay.py), a Batch Transform's records
(serving/transform.py) and the bidirectional stream (serving/bidi_session.py).
"""

from __future__ import annotations

import asyncio
import logging

from prometheus_client import generate_latest
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket

from serving import bidi_frames, invocations, transform
from serving.bidi_session import Session, SessionParts
from serving.bodies import CLIENT_CLOSED, read_body
from serving.capture import Capture
from serving.chat_fields import check_relayed_chat
from serving.emf import EmfReporter
from serving.errors import JsonAnswer, RequestRefused, error_response
from serving.gate import NOT_SERVING, RequestGate, request_id
from serving.headers import to_engine, value_problem
from serving.lifecycle import Lifecycle, Status
from serving.logs import printable
from serving.metrics import FrontMetrics
from serving.payload_parser import PayloadParser
from serving.record import record_of
from serving.relay import Relay, unless_client_leaves
from serving.routes import FRONT_ROUTES, Handler, Router, raw_path
from serving.settings import Settings

log = logging.getLogger("serving.app")
PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"
# States in which a new bidirectional-stream session is refused (503): the container is
# going away. A loading or restarting engine takes sessions; their requests wait for /ping.
CLOSED = (Status.DRAINING, Status.DEAD)
SHUTTING_DOWN = "the container is shutting down; send the request again on another instance."
# The engine route whose chat payloads the front reads (chat_fields.check_relayed_chat, and
# reasoning sent back: serving/reasoning.py).
OPENAI_CHAT_PATH = b"/v1/chat/completions"


def engine_headers(request: Request, replace: dict[bytes, bytes] | None = None):
    """The client's headers for the engine, with `replace` overriding same-named ones."""
    replace = replace or {}
    headers = [pair for pair in request.scope["headers"] if pair[0].lower() not in replace]
    return to_engine(headers, record_of(request.scope).request_id) + list(replace.items())


def bad_header(connection: Request | WebSocket) -> Response | None:
    for name, value in connection.scope["headers"]:
        if (problem := value_problem(value)) is not None:
            return error_response(400, f"header {printable(name)!s} {problem}.")
    return None


def refused(error: RequestRefused) -> Response:
    # A stalled upload's connection is closed; the rest of a refused large one is read and
    # dropped by the protocol (serving/http_wire.py), so a client still sending reads the 413.
    stalled = error.status == 408
    return error_response(
        error.status, error.message, headers={"Connection": "close"} if stalled else None
    )


class Front:
    """The front's handlers, one method a route (`routes.Router` calls them), over the parts
    they share. `create_app` builds it and puts the gate before it."""

    def __init__(
        self, settings: Settings, lifecycle: Lifecycle, relay: Relay, capture: Capture | None
    ):
        self.settings = settings
        self.lifecycle = lifecycle
        self.relay = relay
        self.capture = capture
        self.metrics = FrontMetrics()
        self.metrics.speculation(settings.speculative_config)
        self.parser = PayloadParser(settings.served_model_name, settings.auto_tool_choice_refusal)
        self.records = transform.RecordRoad(
            relay.exchanges, self.parser.prepare, self.metrics, relay.why_gone
        )
        self.sessions: set[Session] = set()
        self.gate = RequestGate(
            Router(
                self.handlers(), self.engine_route, self.startup, self.shutdown,
                {bidi_frames.ROUTE: self.bidirectional_stream},
            ),
            lifecycle=lifecycle,
            max_in_flight=settings.max_concurrent_requests,
            metrics=self.metrics,
        )  # fmt: skip
        self.session_parts = SessionParts(
            self.parser, relay.exchanges, self.gate, self.metrics, settings.max_payload_bytes,
            relay.why_gone,
        )  # fmt: skip
        self.reporter = EmfReporter(
            settings.emf_interval_seconds,
            self.metrics,
            self.engine_metrics,
            lambda: self.gate.in_flight,
            settings.metric_dimensions,
        )

    def handlers(self) -> dict[str, Handler]:
        handlers = {
            "/ping": self.ping,
            "/invocations": self.invoke,
            "/metrics": self.prometheus_metrics,
            "/execution-parameters": self.execution_parameters,
            bidi_frames.ROUTE: self.bidirectional_stream_http,
        }
        assert handlers.keys() == FRONT_ROUTES.keys(), "every front route needs its handler"
        return handlers

    def startup(self) -> None:
        self.lifecycle.start(
            in_flight=lambda: self.gate.in_flight, metrics=self.metrics, drained=self.end_sessions
        )
        self.parser.start()
        self.reporter.start()
        if self.capture is not None:
            self.capture.start()

    async def shutdown(self) -> None:
        await self.reporter.stop()
        if self.capture is not None:
            self.capture.stop()
        await self.lifecycle.stop()
        await self.relay.aclose()
        self.parser.stop()

    async def engine_metrics(self) -> str | None:
        return await self.relay.client.get_text("/metrics") if self.lifecycle.ready else None

    async def ping(self, _: Request) -> Response:
        status = 200 if self.lifecycle.ready else 503
        return JsonAnswer({"status": self.lifecycle.status.value}, status_code=status)

    async def invoke(self, request: Request) -> Response:
        """/invocations: one request (OpenAI chat or completion, or TGI), or a Batch
        Transform's JSON Lines records."""
        # The headers first, as on the engine routes: a bad one costs no read of the body.
        if (refusal := bad_header(request)) is not None:
            return refusal
        settings = self.settings
        content_type = request.headers.get("content-type")
        jsonlines = transform.is_jsonlines(content_type)
        try:
            if not jsonlines:
                invocations.check_content_type(content_type)
            body = await read_body(
                request, settings.max_payload_bytes, settings.body_timeout_seconds
            )
            records = transform.split(body, jsonlines, settings.batch)
            if records is not None:
                if not records:
                    raise RequestRefused(400, transform.NO_RECORDS)
                return await self.invoke_records(request, records)
            prepared = await self.parser.prepare(body)
        except RequestRefused as error:
            return refused(error)
        if settings.log_bodies:
            log.info(
                "%s request body: %s",
                printable(record_of(request.scope).request_id),
                printable(body.decode(errors="replace")),
            )
        headers = engine_headers(request, {b"content-type": b"application/json"})
        return await self.relay.forward(
            request, invocations.ENGINE_PATH.encode(), prepared.content, headers, prepared.tgi
        )

    async def invoke_records(self, request: Request, records: transform.Records) -> Response:
        """A transform's mini-batch: every record answered, one line each, in order (its
        headers checked by invoke)."""
        # The job giving up on this mini-batch stops its records' generations too.
        answering = await unless_client_leaves(
            request,
            self.records.answer_all(record_of(request.scope), request.scope["headers"], records),
        )
        if answering is None:
            return Response(status_code=CLIENT_CLOSED)
        return Response(answering.result(), media_type=transform.ANSWER_MEDIA_TYPE)

    async def execution_parameters(self, _: Request) -> Response:
        settings = self.settings
        return JsonAnswer(
            transform.execution_parameters(
                settings.max_concurrent_transforms,
                settings.batch_strategy,
                settings.max_payload_mb,
            )
        )

    async def engine_route(self, request: Request) -> Response:
        """A route of the engine's allow-listed OpenAI API, relayed as it came."""
        if (refusal := bad_header(request)) is not None:
            return refusal
        try:
            body = await read_body(
                request, self.settings.max_payload_bytes, self.settings.body_timeout_seconds
            )
            invocations.check_engine_limits(body)
            path = raw_path(request.scope)
            if path == OPENAI_CHAT_PATH:
                check_relayed_chat(body, self.settings.auto_tool_choice_refusal)
        except RequestRefused as error:
            return refused(error)
        if path == OPENAI_CHAT_PATH:
            body = await self.parser.relayed_chat(body)
        query = request.scope.get("query_string", b"")
        target = path + b"?" + query if query else path
        return await self.relay.forward(request, target, body, engine_headers(request))

    async def bidirectional_stream_http(self, _: Request) -> Response:
        return error_response(
            426,
            f"{bidi_frames.ROUTE} is a WebSocket; open it with a WebSocket client (an Upgrade "
            "request), as SageMaker's InvokeEndpointWithBidirectionalStream does.",
            headers={"Upgrade": "websocket", "Connection": "Upgrade"},
        )

    async def bidirectional_stream(self, scope: Scope, receive: Receive, send: Send) -> None:
        websocket = WebSocket(scope, receive, send)
        status = self.lifecycle.status
        if status in CLOSED:
            message, retry = NOT_SERVING[status]
            denial = error_response(503, message, "ServiceUnavailable", {"Retry-After": retry})
            await websocket.send_denial_response(denial)
            return
        if (refusal := bad_header(websocket)) is not None:
            await websocket.send_denial_response(refusal)
            return
        session = Session(websocket, self.session_parts, request_id(scope["headers"]))
        self.sessions.add(session)
        try:
            await session.run()
        finally:
            self.sessions.discard(session)

    async def end_sessions(self) -> None:
        """The drain is over: what is still in flight on a session gets an error frame, and
        every session closes."""
        await asyncio.gather(
            *(session.end(503, SHUTTING_DOWN, "ServiceUnavailable") for session in self.sessions)
        )

    async def prometheus_metrics(self, _: Request) -> Response:
        engine_text = await self.engine_metrics()
        body = (engine_text or "").encode() + self.metrics.render(engine_text)
        if self.capture is not None:
            body += generate_latest(self.capture.registry)
        return Response(body, media_type=PROMETHEUS_TEXT)


def create_app(
    settings: Settings, lifecycle: Lifecycle, relay: Relay, capture: Capture | None
) -> ASGIApp:
    """The front as uvicorn serves it: the gate, then the router, then the handlers."""
    return Front(settings, lifecycle, relay, capture).gate
