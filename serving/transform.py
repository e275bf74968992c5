"""Batch Transform: a body of JSON Lines in, one answer line per record out, in input order.

A transform job with `SplitType=Line` and `BatchStrategy=MultiRecord` posts many records in
one `/invocations` body, one JSON document per line, and assembles the answer line by line
(`AssembleWith=Line`), so line N of the answer must be record N's. The records go to the
engine at once, so its continuous batching does the work one request per record would leave
undone. Each record is answered in its own schema (chat, completion, TGI), a record that
cannot be answered gets an error line of its own (OpenAI's error shape, with its status),
and the others are answered: one bad record costs one line, never the mini-batch.

A body is read as records when its Content-Type is a JSON Lines type, or, in a transform job
(`SAGEMAKER_BATCH`), when it is not one JSON document but several lines. A JSON body
outside a transform job stays one request, so a real-time client's malformed JSON still
gets its 400.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from serving import access, invocations
from serving.answers import without_null_usage
from serving.engine_client import EngineError
from serving.errors import RequestRefused, engine_error, error_body
from serving.exchange import Answer, Exchanges
from serving.headers import RawHeaders, to_engine_as_json
from serving.json_text import json_bytes
from serving.metrics import FrontMetrics
from serving.record import RequestRecord
from serving.tgi import whole_answer

JSONLINES_MEDIA_TYPES = {
    "application/jsonlines",
    "application/x-jsonlines",
    "application/jsonl",
    "application/x-ndjson",
}
ANSWER_MEDIA_TYPE = "application/jsonlines"
# Records of one body in flight at once: vLLM's usual batch limit (max_num_seqs 256), and
# the rest wait their turn, so a 100 MB body of short records does not open a connection
# per record. Several bodies in flight (MaxConcurrentTransforms) add to it.
RECORDS_IN_FLIGHT = 256
NO_STREAM = (
    "'stream' is not available for a record of a transform; each record is answered whole, "
    "on its own line. Leave 'stream' out."
)
NO_RECORDS = "the JSON Lines body holds no records; send one JSON payload per line."
# What /execution-parameters says when the job names nothing (see docs/batch-transform.md):
# a few bodies in flight, so the engine starts a mini-batch's records while the slowest
# records of the one before still run.
DEFAULT_MAX_CONCURRENT_TRANSFORMS = 4
# SageMaker's spelling in /execution-parameters (and the SDK's local mode accepts no
# other) for the SAGEMAKER_BATCH_STRATEGY values the service sets.
STRATEGY_NAMES = {"MULTI_RECORD": "MultiRecord", "SINGLE_RECORD": "SingleRecord"}


def media_type(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def is_jsonlines(content_type: str | None) -> bool:
    return media_type(content_type) in JSONLINES_MEDIA_TYPES


class Records(Sequence[bytes]):
    """A body's records, each cut out of the body only when it is answered: a 100 MiB body
    is held once, plus the records in flight."""

    def __init__(self, body: bytes, spans: list[tuple[int, int]]):
        self.body = body
        self.spans = spans

    def __len__(self) -> int:
        return len(self.spans)

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return [self[position] for position in range(*index.indices(len(self)))]
        start, end = self.spans[index]
        return bytes(self.body[start:end])


WHITESPACE = b" \t\r\n\f\v"


def line_spans(body: bytes) -> list[tuple[int, int]]:
    """(start, end) of each non-blank line, its surrounding whitespace left out."""
    spans = []
    position, size = 0, len(body)
    while position < size:
        end = body.find(b"\n", position)
        end = size if end < 0 else end
        start, stop = position, end
        while start < stop and body[start] in WHITESPACE:
            start += 1
        while stop > start and body[stop - 1] in WHITESPACE:
            stop -= 1
        if start < stop:
            spans.append((start, stop))
        position = end + 1
    return spans


def records_of(body: bytes) -> Records | None:
    """The body's records when it is several JSON lines, else None (one JSON document, or a
    single line: the one-request path answers it, with its own errors)."""
    spans = line_spans(body)
    if len(spans) < 2:
        return None
    try:
        json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return Records(body, spans)
    return None  # one document written over several lines


def split(body: bytes, jsonlines: bool, batch_mode: bool) -> Records | None:
    """The records to answer line by line (a body of a JSON Lines type, or several JSON
    lines in a transform job), or None for a one-request body."""
    if jsonlines:
        return Records(body, line_spans(body))
    if batch_mode:
        return records_of(body)
    return None


def error_line(status: int, message: str, error_type: str | None = None) -> dict[str, Any]:
    return error_body(status, message, error_type)


Prepare = Callable[[bytes], Awaitable[invocations.Prepared]]


def answer_of(prepared: invocations.Prepared, answer: Answer, body: bytes) -> tuple[int, dict]:
    """One record's status and answer line from the engine's answer, in the record's own
    schema."""
    if answer.status != 200:
        return answer.status, engine_error(answer.status, body)
    parsed = answer.parsed
    if parsed is None:
        try:
            parsed = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError):
            parsed = None
    if not isinstance(parsed, dict):
        return 502, error_line(502, "the engine's answer to this record was not JSON.")
    if prepared.tgi is not None:
        return 200, json.loads(whole_answer(prepared.tgi, parsed))
    return 200, without_null_usage(parsed) or parsed


@dataclass(frozen=True)
class RecordRoad:
    """Batch Transform's road to the engine: each record of a mini-batch an exchange of its
    own, with its own request id (the body's, with the record's number), access line and
    capture, as an HTTP request has."""

    exchanges: Exchanges
    prepare: Prepare
    metrics: FrontMetrics
    unavailable: Callable[[], str]  # why the engine dropped a request

    async def answer_all(
        self,
        batch: RequestRecord,
        client_headers: RawHeaders,
        records: Sequence[bytes],
        in_flight: int = RECORDS_IN_FLIGHT,
    ) -> bytes:
        """Every record answered, at most `in_flight` at once; the lines in input order."""
        slots = asyncio.Semaphore(in_flight)

        async def one(index: int) -> dict[str, Any]:
            async with slots:  # a record is cut out of the body only once its turn has come
                request_id = b"%s-%d" % (batch.request_id, index)
                record = RequestRecord(request_id, batch.route, time.time(), time.perf_counter())
                status, line = await self.answer(record, client_headers, records[index])
                access.write(
                    self.metrics, record, "POST", batch.route.label, access.TRANSFORM_RECORD,
                    status, record_number=index,
                )  # fmt: skip
                return line

        answers = await asyncio.gather(*(one(index) for index in range(len(records))))
        return b"".join(json_bytes(answer) + b"\n" for answer in answers)

    async def answer(
        self, record: RequestRecord, client_headers: RawHeaders, content: bytes
    ) -> tuple[int, dict[str, Any]]:
        """One record's status and answer line."""
        try:
            prepared = await self.prepare(content)
        except RequestRefused as refused:
            return refused.status, error_line(refused.status, refused.message)
        if prepared.stream:
            return 400, error_line(400, NO_STREAM)
        headers = to_engine_as_json(client_headers, record.request_id)
        try:
            answer = await self.exchanges.send(
                record, "POST", invocations.ENGINE_PATH.encode(), prepared.content, headers
            )
            try:
                body = await answer.read()
            finally:
                answer.close()
        except EngineError:
            return 503, error_line(503, self.unavailable(), "EngineUnavailable")
        return answer_of(prepared, answer, body)


def execution_parameters(
    max_concurrent_transforms: int | None, strategy: str | None, max_payload_mb: float
) -> dict[str, Any]:
    """GET /execution-parameters: what the job should send, the job's own values first."""
    return {
        "MaxConcurrentTransforms": max_concurrent_transforms or DEFAULT_MAX_CONCURRENT_TRANSFORMS,
        "BatchStrategy": STRATEGY_NAMES[strategy or "MULTI_RECORD"],
        "MaxPayloadInMB": max(1, int(max_payload_mb)),
    }
