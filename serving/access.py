"""The access log: one line for each request on every road to the engine (an HTTP request,
a request of a bidirectional-stream session, a Batch Transform record), with the tokens and
acceptance its exchange recorded, and the request counted in the front's metrics."""

from __future__ import annotations

import logging
import time

from serving.logs import FIELDS, printable
from serving.metrics import FrontMetrics
from serving.record import RequestRecord

log = logging.getLogger("serving.access")

# The route label a Batch Transform record is counted and logged under: the mini-batch it
# came in is counted under /invocations already.
TRANSFORM_RECORD = "/invocations:record"


def write(
    metrics: FrontMetrics,
    record: RequestRecord,
    method: str,
    path: str | bytes,  # as the client sent it: made printable here
    label: str,
    status: int | str,
    **more: object,
) -> None:
    """Count the request and write its access line (`more`: fields of its road's own)."""
    elapsed = time.perf_counter() - record.started
    metrics.requests.labels(label, str(status)).inc()
    metrics.latency.labels(label).observe(elapsed)
    tokens = record.completion_tokens
    speculation = record.speculation
    acceptance = None if speculation is None else speculation.mean_acceptance_length
    fields = {
        "request_id": printable(record.request_id),
        "method": method,
        "path": printable(path),
        "route": label,
        "status": status,
        "latency_ms": round(elapsed * 1000, 1),
        "completion_tokens": tokens,
        "mean_acceptance_length": acceptance,
        "draft_tokens": None if speculation is None else speculation.draft_tokens,
        "accepted_tokens": None if speculation is None else speculation.accepted_tokens,
        **more,
    }
    log.info(
        "%s %s %s %s %.1fms tokens=%s acceptance=%s",
        fields["request_id"],
        method,
        fields["path"],
        status,
        elapsed * 1000,
        "-" if tokens is None else tokens,
        "-" if acceptance is None else f"{acceptance:.2f}",
        extra={FIELDS: fields},
    )
