"""The HTTP front: SageMaker's routes and the engine's allow-listed OpenAI API. Handlers only.

Which route a request names, and which methods it takes, is `routes.py`'s table, matched
once by the gate; `routes.Router` answers 404 and 405 from that match and calls these.
"""

from __future__ import annotations

import logging

from prometheus_client import generate_latest
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp

from serving import invocations
from serving.bodies import read_body
from serving.capture import Capture
from serving.emf import EmfReporter
from serving.errors import JsonAnswer, RequestRefused, error_response
from serving.gate import RequestGate
from serving.headers import to_engine, value_problem
from serving.lifecycle import Lifecycle
from serving.logs import printable
from serving.metrics import FrontMetrics
from serving.payload_parser import PayloadParser
from serving.record import record_of
from serving.relay import Relay
from serving.routes import FRONT_ROUTES, Router, raw_path
from serving.settings import Settings

log = logging.getLogger("serving.app")
PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"


def engine_headers(request: Request, replace: dict[bytes, bytes] | None = None):
    """The client's headers for the engine, with `replace` overriding same-named ones."""
    replace = replace or {}
    headers = [pair for pair in request.scope["headers"] if pair[0].lower() not in replace]
    return to_engine(headers, record_of(request.scope).request_id) + list(replace.items())


def bad_header(request: Request) -> Response | None:
    for name, value in request.scope["headers"]:
        if (problem := value_problem(value)) is not None:
            return error_response(400, f"header {printable(name)!s} {problem}.")
    return None


def refused(error: RequestRefused) -> Response:
    # A stalled upload's connection is closed; the rest of a refused large one is read and
    # dropped by the protocol (serving/protocol.py), so a client still sending reads the 413.
    stalled = error.status == 408
    return error_response(
        error.status, error.message, headers={"Connection": "close"} if stalled else None
    )


def create_app(
    settings: Settings, lifecycle: Lifecycle, relay: Relay, capture: Capture | None
) -> ASGIApp:
    metrics = FrontMetrics()
    parser = PayloadParser(settings.served_model_name)

    async def engine_metrics() -> str | None:
        return await relay.client.get_text("/metrics") if lifecycle.ready else None

    async def ping(_: Request) -> Response:
        status = lifecycle.status.value
        return JsonAnswer({"status": status}, status_code=200 if lifecycle.ready else 503)

    async def invoke(request: Request) -> Response:
        try:
            invocations.check_content_type(request.headers.get("content-type"))
            body = await read_body(
                request, settings.max_payload_bytes, settings.body_timeout_seconds
            )
            prepared = await parser.prepare(body)
        except RequestRefused as error:
            return refused(error)
        if settings.log_bodies:
            log.info(
                "%s request body: %s",
                printable(record_of(request.scope).request_id),
                printable(body.decode(errors="replace")),
            )
        if (refusal := bad_header(request)) is not None:
            return refusal
        headers = engine_headers(request, {b"content-type": b"application/json"})
        return await relay.forward(
            request, invocations.ENGINE_PATH.encode(), prepared.content, headers, prepared.tgi
        )

    async def engine_route(request: Request) -> Response:
        if (refusal := bad_header(request)) is not None:
            return refusal
        try:
            body = await read_body(
                request, settings.max_payload_bytes, settings.body_timeout_seconds
            )
        except RequestRefused as error:
            return refused(error)
        path = raw_path(request.scope)
        query = request.scope.get("query_string", b"")
        target = path + b"?" + query if query else path
        return await relay.forward(request, target, body, engine_headers(request))

    async def prometheus_metrics(_: Request) -> Response:
        engine_text = await engine_metrics()
        body = (engine_text or "").encode() + metrics.render(engine_text)
        if capture is not None:
            body += generate_latest(capture.registry)
        return Response(body, media_type=PROMETHEUS_TEXT)

    gate: RequestGate
    reporter = EmfReporter(
        settings.emf_interval_seconds,
        metrics,
        engine_metrics,
        lambda: gate.in_flight,
        settings.metric_dimensions,
    )

    def startup() -> None:
        lifecycle.start(in_flight=lambda: gate.in_flight, metrics=metrics)
        parser.start()
        reporter.start()
        if capture is not None:
            capture.start()

    async def shutdown() -> None:
        await reporter.stop()
        if capture is not None:
            capture.stop()
        await lifecycle.stop()
        await relay.aclose()
        parser.stop()

    handlers = {"/ping": ping, "/invocations": invoke, "/metrics": prometheus_metrics}
    assert handlers.keys() == FRONT_ROUTES.keys(), "every front route needs its handler"
    front = Router(handlers, engine_route, startup, shutdown)
    gate = RequestGate(
        front,
        lifecycle=lifecycle,
        max_in_flight=settings.max_concurrent_requests,
        metrics=metrics,
    )
    return gate
