"""The request gate: the route match, the request's record, admission (state and
concurrency), the in-flight count, and the access log.

Pure ASGI so that it spans a streamed answer to its last byte: the in-flight count is
what the SIGTERM drain waits on. The gate owns that count; the lifecycle only reads it.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from serving import access, routes
from serving.errors import AnswerCut, error_response
from serving.headers import has_forbidden_bytes
from serving.lifecycle import Lifecycle, Status
from serving.metrics import FrontMetrics
from serving.record import SCOPE_KEY, RequestRecord
from serving.routes import raw_path

INFERENCE_ID_HEADER = b"x-amzn-sagemaker-inference-id"
NOT_SERVING = {
    Status.LOADING: ("the model is still loading; retry shortly.", "10"),
    Status.RESTARTING: ("the engine is restarting after a failure; retry shortly.", "10"),
    Status.DRAINING: ("the container is shutting down; retry on another instance.", "5"),
    Status.DEAD: ("the engine has stopped; retry on another instance.", "5"),
}
# The status label of an answer whose body the engine broke off (its connection is aborted).
CUT = "cut"
# Routes not worth a line per request in the access log: probes and scrapes.
QUIET = {"/ping", "/metrics"}


@dataclass(frozen=True)
class Refusal:
    status: int
    message: str
    error_type: str
    retry: str  # Retry-After, in seconds


def request_id(headers: list[tuple[bytes, bytes]]) -> bytes:
    """SageMaker's inference id when it sent a usable one, else one of ours."""
    for name, value in headers:
        if name == INFERENCE_ID_HEADER and value and not has_forbidden_bytes(value):
            return value
    return uuid.uuid4().hex.encode()


def answer_was_cut(error: BaseException) -> bool:
    if isinstance(error, BaseExceptionGroup):
        return all(answer_was_cut(inner) for inner in error.exceptions)
    return isinstance(error, AnswerCut)


class RequestGate:
    def __init__(
        self, app: ASGIApp, lifecycle: Lifecycle, max_in_flight: int, metrics: FrontMetrics
    ):
        self.app = app
        self.lifecycle = lifecycle
        self.max_in_flight = max_in_flight
        self.metrics = metrics
        self.in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # Matched once, here: the app answers and relays by this route.
        route = routes.match(raw_path(scope))
        label = route.label if route else routes.UNMATCHED
        started = time.perf_counter()
        record = RequestRecord(request_id(scope["headers"]), route, time.time(), started)
        scope[SCOPE_KEY] = record
        status_seen: int | str = 500
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
                self.metrics.first_byte.labels(label).observe(time.perf_counter() - started)
            await send(message)

        try:
            if route is None or not route.gated:
                await self.app(scope, receive, send_with_status)
                return
            refusal = self.refusal()
            if refusal is not None:
                await refusal(scope, receive, send_with_status)
                return
            self.in_flight += 1
            self.metrics.in_flight.inc()
            try:
                await self.app(scope, receive, send_with_status)
            finally:
                self.in_flight -= 1
                self.metrics.in_flight.dec()
        except BaseException as error:
            if not answer_was_cut(error):
                raise
            # Returning without finishing the body makes the server abort the connection.
            status_seen = CUT
        finally:
            if label not in QUIET:
                self.access(scope, label, record, status_seen)

    def access(self, scope: Scope, label: str, record: RequestRecord, status: int | str) -> None:
        access.write(self.metrics, record, scope["method"], raw_path(scope), label, status)

    def refusal(self):
        if (refused := self.refused()) is None:
            return None
        return error_response(
            refused.status, refused.message, refused.error_type, {"Retry-After": refused.retry}
        )

    def refused(self) -> Refusal | None:
        """Why work cannot reach the engine now (counted as rejected), or None."""
        status = self.lifecycle.status
        if status in NOT_SERVING:
            message, retry_after = NOT_SERVING[status]
            self.metrics.rejected.labels(status.value).inc()
            return Refusal(503, message, "ServiceUnavailable", retry_after)
        if self.in_flight >= self.max_in_flight:
            self.metrics.rejected.labels("overload").inc()
            return Refusal(
                429,
                f"{self.max_in_flight} requests are already in flight (MAX_CONCURRENT_REQUESTS); "
                "retry shortly.",
                "TooManyRequests",
                "1",
            )
        return None

    def admit(self) -> Refusal | None:
        """One request of a bidirectional-stream session in flight, as an HTTP request is
        while its answer lasts (the drain waits for it), unless it is refused."""
        if (refused := self.refused()) is not None:
            return refused
        self.in_flight += 1
        self.metrics.in_flight.inc()
        return None

    def release(self) -> None:
        self.in_flight -= 1
        self.metrics.in_flight.dec()
