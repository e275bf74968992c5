"""Capture (opt-in): sampled requests and their final answers, one JSON line each, for
training a head on the endpoint's own traffic.

Written off the request path: a request only hands its bytes to a bounded queue, and one
thread parses, serialises and writes. When that thread falls behind, records are dropped
and counted, never queued without bound. A file is rotated before a line would take it
past its size, so every file, rotated or not, holds whole JSON lines only.
"""

from __future__ import annotations

import json
import logging
import queue
import random
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter

from serving import sse
from serving.bidi_frames import ROUTE as BIDI_ROUTE
from serving.json_text import COMPACT, json_bytes

log = logging.getLogger("serving.capture")

# Routes that take chat requests, the work a head is trained on: a Batch Transform record
# comes by /invocations, a request of a bidirectional-stream session by its own route.
# /invocations also takes completion payloads: only bodies that mention "messages" are
# chosen (see Capture.wants), and the writer still skips one that mentions "messages"
# without being a chat request.
CAPTURED_ROUTES = {"/invocations", "/v1/chat/completions", BIDI_ROUTE}
QUEUE_RECORDS = 1024
# An answer larger than this is not kept for capture (it would be held in memory).
MAX_ANSWER_BYTES = 8 << 20


@dataclass
class CapturedExchange:
    """One captured request, as its exchange with the engine saw it: the raw bytes, parsed
    later by the writer."""

    request_id: str
    route: str
    status: int
    request: bytes
    answer: bytes
    streamed: bool
    started: float  # time.time()
    latency_ms: float
    speculation: dict | None
    # A JSON answer the relay already parsed (for its headers), so it is not parsed twice.
    parsed_answer: dict | None = None


def record(exchange: CapturedExchange) -> dict | None:
    """The JSON line for an exchange, or None if its request is not a JSON chat request or
    its answer is not JSON."""
    try:
        request = json.loads(exchange.request)
    except ValueError:
        return None
    if not isinstance(request, dict) or not isinstance(request.get("messages"), list):
        return None
    if exchange.streamed:
        answer = sse.reassemble_sse(exchange.answer)
    elif exchange.parsed_answer is not None:
        answer = exchange.parsed_answer
    else:
        try:
            answer = json.loads(exchange.answer)
        except ValueError:
            answer = None
    if not isinstance(answer, dict):
        return None
    return {
        "request_id": exchange.request_id,
        "time": datetime.fromtimestamp(exchange.started, UTC).isoformat(timespec="milliseconds"),
        "route": exchange.route,
        "status": exchange.status,
        "request": request,
        "response": answer,
        "timings": {"latency_ms": round(exchange.latency_ms, 1)},
        "speculation": exchange.speculation,
    }


class RotatingFile:
    """capture-<start>-<n>.jsonl files in a directory, each at most `max_bytes` (one line
    larger than that gets a file of its own)."""

    def __init__(self, directory: Path, max_bytes: int):
        self.directory = directory
        self.max_bytes = max_bytes
        self.prefix = f"capture-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S')}"
        self.number = 0
        self.file = None
        self.size = 0

    def write(self, line: bytes) -> None:
        if self.file is None or (self.size and self.size + len(line) > self.max_bytes):
            self.rotate()
        self.file.write(line)
        self.file.flush()
        self.size += len(line)

    def rotate(self) -> None:
        self.close()
        self.number += 1
        path = self.directory / f"{self.prefix}-{self.number:05d}.jsonl"
        self.file = open(path, "ab")  # noqa: SIM115 - held open across writes
        self.size = path.stat().st_size

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None


class Capture:
    def __init__(self, directory: Path, sample: float, max_file_bytes: int):
        self.sample = sample
        self.output = RotatingFile(directory, max_file_bytes)
        self.queue: queue.Queue[CapturedExchange | None] = queue.Queue(QUEUE_RECORDS)
        self.registry = CollectorRegistry()
        self.records = Counter(
            "serving_capture_records",
            "Requests chosen for capture, by outcome (written; dropped: the writer was "
            "behind; skipped: not a JSON chat request and answer, or too large; failed: "
            "the write failed).",
            ["outcome"],
            registry=self.registry,
        )
        self.thread = threading.Thread(target=self._write_all, name="capture", daemon=True)

    def wants(self, route: str, request_body: bytes) -> bool:
        """Whether to capture a request: a captured route, a body that may be a chat request
        (the writer checks properly; this spares it, and the queue, the completion payloads),
        then the sample draw, last, so the odds for a chat request are `sample`."""
        return (
            route in CAPTURED_ROUTES
            and b'"messages"' in request_body
            and random.random() < self.sample
        )

    def offer(self, exchange: CapturedExchange) -> None:
        """Hand an exchange to the writer; never blocks."""
        try:
            self.queue.put_nowait(exchange)
        except queue.Full:
            self.records.labels("dropped").inc()

    def skip(self) -> None:
        self.records.labels("skipped").inc()

    def start(self) -> None:
        self.thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        """Write what is queued (for up to `timeout`), then close the file."""
        try:
            self.queue.put(None, timeout=timeout)
        except queue.Full:
            return
        self.thread.join(timeout)

    def _write_all(self) -> None:
        try:
            while (exchange := self.queue.get()) is not None:
                self._write(exchange)
        finally:
            self.output.close()

    def _write(self, exchange: CapturedExchange) -> None:
        line = record(exchange)
        if line is None:
            self.records.labels("skipped").inc()
            return
        data = json_bytes(line, COMPACT) + b"\n"
        try:
            self.output.write(data)
        except OSError as error:
            self.records.labels("failed").inc()
            log.warning("capture write failed: %s", error.strerror or error)
            return
        self.records.labels("written").inc()
