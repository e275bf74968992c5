"""What the front knows about one request as it passes: one typed record per request.

The gate makes it when the request arrives and logs it when the answer is done (a request of
a bidirectional-stream session, or a Batch Transform record, has one of its own); the
exchange (serving/exchange.py) fills in what the engine's answer said. Nothing else is kept
per request.
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.types import Scope

from serving.answers import Speculation
from serving.routes import SCOPE_KEY, Route


@dataclass(slots=True)
class RequestRecord:
    request_id: bytes
    route: Route | None
    started_wall: float  # time.time(), for the capture file
    started: float  # time.perf_counter(), for latencies
    completion_tokens: int | None = None
    speculation: Speculation | None = None


def record_of(scope: Scope) -> RequestRecord:
    return scope[SCOPE_KEY]
