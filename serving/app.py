"""The HTTP front: SageMaker's routes, and the engine's allow-listed OpenAI API. Routes only."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from prometheus_client import generate_latest
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse, Response

from serving import invocations
from serving.bodies import read_body
from serving.emf import EmfReporter
from serving.errors import RequestRefused, error_response
from serving.gate import RequestGate, raw_path
from serving.headers import has_forbidden_bytes, to_engine
from serving.lifecycle import Lifecycle
from serving.logs import printable
from serving.metrics import FrontMetrics
from serving.payload_parser import PayloadParser
from serving.relay import Relay
from serving.settings import Settings

log = logging.getLogger("serving.app")
PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"
ENGINE_METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH"]
NO_ROUTE = (
    "no such route; the container serves GET /ping, POST /invocations, GET /metrics "
    "and the OpenAI API under /v1 (e.g. POST /v1/chat/completions)."
)


def engine_headers(request: Request, replace: dict[bytes, bytes] | None = None):
    """The client's headers for the engine, with `replace` overriding same-named ones."""
    replace = replace or {}
    headers = [pair for pair in request.scope["headers"] if pair[0].lower() not in replace]
    return to_engine(headers, request.scope["state"]["request_id"]) + list(replace.items())


def bad_header(request: Request) -> Response | None:
    for name, value in request.scope["headers"]:
        if has_forbidden_bytes(value):
            return error_response(
                400,
                f"header {printable(name)!s} carries control characters; remove them.",
            )
    return None


def refused(error: RequestRefused) -> Response:
    # The rest of an unread body would arrive as the next request: close the connection.
    unread = error.status in (408, 413)
    return error_response(
        error.status, error.message, headers={"Connection": "close"} if unread else None
    )


def create_app(settings: Settings, lifecycle: Lifecycle, relay: Relay) -> FastAPI:
    metrics = FrontMetrics()
    parser = PayloadParser(settings.served_model_name)

    async def engine_metrics() -> str | None:
        return await relay.get_text("/metrics") if lifecycle.ready else None

    reporter = EmfReporter(
        settings.emf_interval_seconds,
        metrics,
        engine_metrics,
        lambda: lifecycle.in_flight,
        settings.metric_dimensions,
    )

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        lifecycle.start(relay.client)
        parser.start()
        reporter.start()
        if relay.capture is not None:
            relay.capture.start()
        try:
            yield
        finally:
            await reporter.stop()
            if relay.capture is not None:
                relay.capture.stop()
            await lifecycle.stop()
            await relay.aclose()
            parser.stop()

    app = FastAPI(
        title="vLLM P-EAGLE SageMaker front",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )

    @app.exception_handler(HTTPException)
    async def http_error(_: Request, error: HTTPException) -> Response:
        message = NO_ROUTE if error.status_code == 404 else str(error.detail)
        return error_response(error.status_code, message, headers=error.headers)

    @app.api_route("/ping", methods=["GET", "POST"])
    async def ping() -> Response:
        status = lifecycle.status.value
        return JSONResponse({"status": status}, status_code=200 if lifecycle.ready else 503)

    @app.post("/invocations")
    async def invoke(request: Request) -> Response:
        try:
            invocations.check_content_type(request.headers.get("content-type"))
            body = await read_body(
                request, settings.max_payload_bytes, settings.body_timeout_seconds
            )
            content = await parser.prepare(body)
        except RequestRefused as error:
            return refused(error)
        if settings.log_bodies:
            log.info(
                "%s request body: %s",
                printable(request.scope["state"]["request_id"]),
                printable(body.decode(errors="replace")),
            )
        if (refusal := bad_header(request)) is not None:
            return refusal
        headers = engine_headers(request, {b"content-type": b"application/json"})
        return await relay.forward(request, invocations.ENGINE_PATH.encode(), content, headers)

    async def engine_route(request: Request) -> Response:
        path = raw_path(request.scope)
        route = request.scope["state"]["route"]
        if route is None or not route.relayed:
            return error_response(404, NO_ROUTE)
        if request.method not in route.methods:
            allowed = ", ".join(route.methods)
            return error_response(
                405, f"{route.label} takes {allowed}.", headers={"Allow": allowed}
            )
        if (refusal := bad_header(request)) is not None:
            return refusal
        try:
            body = await read_body(
                request, settings.max_payload_bytes, settings.body_timeout_seconds
            )
        except RequestRefused as error:
            return refused(error)
        query = request.scope.get("query_string", b"")
        target = path + b"?" + query if query else path
        return await relay.forward(request, target, body, engine_headers(request))

    for prefix in ("/v1/{path:path}", "/adapters", "/adapters/{path:path}"):
        app.add_api_route(prefix, engine_route, methods=ENGINE_METHODS)

    @app.get("/metrics")
    async def prometheus_metrics() -> Response:
        engine_text = await engine_metrics()
        body = (engine_text or "").encode() + metrics.render(engine_text)
        if relay.capture is not None:
            body += generate_latest(relay.capture.registry)
        return Response(body, media_type=PROMETHEUS_TEXT)

    app.add_middleware(
        RequestGate,
        lifecycle=lifecycle,
        max_in_flight=settings.max_concurrent_requests,
        metrics=metrics,
    )
    return app
