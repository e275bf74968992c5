"""The HTTP front: SageMaker's routes, and the engine's OpenAI API relayed. Routes only."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from starlette.responses import JSONResponse, Response

from serving import invocations
from serving.errors import error_response
from serving.gate import RequestGate
from serving.lifecycle import Lifecycle
from serving.metrics import FrontMetrics
from serving.relay import Relay, end_to_end
from serving.settings import Settings

log = logging.getLogger("serving.app")
PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"


def upstream_headers(request: Request) -> dict[str, str]:
    headers = end_to_end(request.headers)
    # SageMaker's inference id (or ours) names the request in vLLM too.
    headers["x-request-id"] = request.scope["state"]["request_id"]
    return headers


def create_app(settings: Settings, lifecycle: Lifecycle, relay: Relay) -> FastAPI:
    metrics = FrontMetrics()

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        lifecycle.start(relay.client)
        try:
            yield
        finally:
            await lifecycle.stop()
            await relay.aclose()

    app = FastAPI(
        title="vLLM P-EAGLE SageMaker front",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )

    @app.api_route("/ping", methods=["GET", "POST"])
    async def ping() -> Response:
        status = lifecycle.status.value
        return JSONResponse({"status": status}, status_code=200 if lifecycle.ready else 503)

    @app.post("/invocations")
    async def invoke(request: Request) -> Response:
        try:
            invocations.check_content_type(request.headers.get("content-type"))
            body = await invocations.read_body(request, settings.max_payload_bytes)
            payload = invocations.parse_json_object(body)
            path, payload = invocations.route(payload, settings.served_model_name)
        except invocations.PayloadError as error:
            return error_response(error.status, error.message)
        if settings.log_bodies:
            log.info(
                "%s request body: %s",
                request.scope["state"]["request_id"],
                body.decode(errors="replace"),
            )
        headers = upstream_headers(request)
        headers["content-type"] = "application/json"
        return await relay.forward(request, "POST", path, json.dumps(payload).encode(), headers)

    @app.api_route("/v1/{path:path}", methods=["GET", "POST", "PUT", "DELETE", "PATCH"])
    async def openai_api(path: str, request: Request) -> Response:
        try:
            body = await invocations.read_body(request, settings.max_payload_bytes)
        except invocations.PayloadError as error:
            return error_response(error.status, error.message)
        return await relay.forward(
            request, request.method, f"/v1/{path}", body, upstream_headers(request)
        )

    @app.get("/metrics")
    async def prometheus_metrics() -> Response:
        engine_text = await relay.get_text("/metrics") if lifecycle.ready else None
        body = (engine_text or "").encode() + metrics.render(engine_text or "")
        return Response(body, media_type=PROMETHEUS_TEXT)

    app.add_middleware(
        RequestGate,
        lifecycle=lifecycle,
        max_in_flight=settings.max_concurrent_requests,
        metrics=metrics,
    )
    return app
