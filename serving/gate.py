"""The request gate: admission (state and concurrency), in-flight count, access log.

Pure ASGI so that it spans a streamed answer to its last byte: the in-flight count is
what the SIGTERM drain waits on.
"""

from __future__ import annotations

import logging
import time
import uuid

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from serving.errors import error_response
from serving.lifecycle import Lifecycle, Status
from serving.logs import FIELDS
from serving.metrics import FrontMetrics

log = logging.getLogger("serving.access")

INFERENCE_ID_HEADER = b"x-amzn-sagemaker-inference-id"
GATED_PREFIXES = ("/invocations", "/v1/")
NOT_SERVING = {
    Status.LOADING: ("the model is still loading; retry shortly.", "10"),
    Status.DRAINING: ("the container is shutting down; retry on another instance.", "5"),
    Status.DEAD: ("the engine has stopped; retry on another instance.", "5"),
}


def route_label(path: str) -> str:
    return "/v1" if path.startswith("/v1/") else path


class RequestGate:
    def __init__(
        self, app: ASGIApp, lifecycle: Lifecycle, max_in_flight: int, metrics: FrontMetrics
    ):
        self.app = app
        self.lifecycle = lifecycle
        self.max_in_flight = max_in_flight
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        headers = dict(scope["headers"])
        request_id = headers.get(INFERENCE_ID_HEADER, b"").decode() or uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = request_id
        started = time.perf_counter()
        status_seen = 500
        streaming = False
        first_byte_seen = False

        async def send_with_status(message: Message) -> None:
            nonlocal status_seen, streaming, first_byte_seen
            if message["type"] == "http.response.start":
                status_seen = message["status"]
                content_type = dict(message.get("headers", [])).get(b"content-type", b"")
                streaming = content_type.startswith(b"text/event-stream")
            elif streaming and not first_byte_seen and message.get("body"):
                first_byte_seen = True
                self.metrics.first_byte.labels(route_label(path)).observe(
                    time.perf_counter() - started
                )
            await send(message)

        gated = path.startswith(GATED_PREFIXES)
        try:
            if not gated:
                await self.app(scope, receive, send_with_status)
                return
            refusal = self.refusal()
            if refusal is not None:
                await refusal(scope, receive, send_with_status)
                return
            self.lifecycle.in_flight += 1
            self.metrics.in_flight.inc()
            try:
                await self.app(scope, receive, send_with_status)
            finally:
                self.lifecycle.in_flight -= 1
                self.metrics.in_flight.dec()
        finally:
            elapsed = time.perf_counter() - started
            if path not in ("/ping", "/metrics"):
                label = route_label(path)
                self.metrics.requests.labels(label, str(status_seen)).inc()
                self.metrics.latency.labels(label).observe(elapsed)
                tokens = scope["state"].get("completion_tokens")
                fields = {
                    "request_id": request_id,
                    "method": scope["method"],
                    "path": path,
                    "status": status_seen,
                    "latency_ms": round(elapsed * 1000, 1),
                    "completion_tokens": tokens,
                }
                log.info(
                    "%s %s %s %d %.1fms tokens=%s",
                    request_id,
                    scope["method"],
                    path,
                    status_seen,
                    elapsed * 1000,
                    "-" if tokens is None else tokens,
                    extra={FIELDS: fields},
                )

    def refusal(self):
        status = self.lifecycle.status
        if status in NOT_SERVING:
            message, retry_after = NOT_SERVING[status]
            self.metrics.rejected.labels(status.value).inc()
            return error_response(503, message, "ServiceUnavailable", {"Retry-After": retry_after})
        if self.lifecycle.in_flight >= self.max_in_flight:
            self.metrics.rejected.labels("overload").inc()
            return error_response(
                429,
                f"{self.max_in_flight} requests are already in flight (MAX_CONCURRENT_REQUESTS); "
                "retry shortly.",
                "TooManyRequests",
                {"Retry-After": "1"},
            )
        return None
