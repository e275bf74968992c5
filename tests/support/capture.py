"""Helpers for the capture tests: chat requests and answers as vLLM gives them, and capture
lines written the way the container and SageMaker Data Capture write them."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

USAGE = {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}
METRICS = {
    "speculative_decoding": {
        "mean_acceptance_length": 2.9,
        "num_draft_tokens": 6,
        "num_accepted_draft_tokens": 4,
    }
}


def chat_request(question: str = "What is deep learning?", **extra: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": question}], "max_tokens": 64, **extra}


def chat_answer(content: str | None = "Learning with deep networks.", **message: Any) -> dict:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1795000000,
        "model": "/opt/ml/model",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, **message},
                "finish_reason": "stop",
            }
        ],
        "usage": USAGE,
    }


def chunk(delta: dict[str, Any] | None, finish_reason: str | None = None, **extra: Any) -> dict:
    choices = (
        [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
    )
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1795000000,
        "model": "/opt/ml/model",
        "choices": choices,
        **extra,
    }


def vllm_stream(pieces: list[str], newline: str = "\n", done: bool = True) -> bytes:
    """A chat stream as vLLM sends it: a role chunk, the pieces (the last one finishing),
    a usage chunk with the request's speculation metrics, then [DONE]."""
    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [
        chunk({"content": piece}, "stop" if index == len(pieces) - 1 else None)
        for index, piece in enumerate(pieces)
    ]
    chunks.append(chunk(None, usage=USAGE, metrics=METRICS))
    events = [f"data: {json.dumps(c, ensure_ascii=False)}" for c in chunks]
    if done:
        events.append("data: [DONE]")
    blank = newline * 2
    return (blank.join(events) + blank).encode("utf-8")


def capture_entry(
    payload: bytes, mode: str, content_type: str, encoding: str | None
) -> dict[str, Any]:
    entry: dict[str, Any] = {"observedContentType": content_type, "mode": mode}
    if encoding is None:
        entry["data"] = base64.b64encode(payload).decode("ascii")
    elif encoding == "BASE64":
        entry["data"] = base64.b64encode(payload).decode("ascii")
        entry["encoding"] = "BASE64"
    else:
        entry["data"] = payload.decode("utf-8")
        entry["encoding"] = encoding
    return entry


def sagemaker_line(
    request: dict[str, Any] | bytes,
    response: dict[str, Any] | bytes | None,
    encoding: str | None = "JSON",
    response_type: str = "application/json",
    event_id: str = "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
) -> str:
    """One Data Capture line, compact as SageMaker writes it. `encoding` None leaves the
    field out (base64 data). A bytes response is an SSE body unless `response_type` says."""
    request_bytes = request if isinstance(request, bytes) else json.dumps(request).encode()
    capture = {"endpointInput": capture_entry(request_bytes, "INPUT", "application/json", encoding)}
    if response is not None:
        response_bytes = response if isinstance(response, bytes) else json.dumps(response).encode()
        capture["endpointOutput"] = capture_entry(response_bytes, "OUTPUT", response_type, encoding)
    record = {
        "captureData": capture,
        "eventMetadata": {"eventId": event_id, "inferenceTime": "2026-11-23T16:20:01Z"},
        "eventVersion": "0",
    }
    return json.dumps(record, separators=(",", ":"))


def container_line(
    request: dict[str, Any], response: dict[str, Any] | None, status: int = 200
) -> str:
    record = {
        "request_id": "req-1",
        "time": "2026-11-23T16:20:01.123Z",
        "route": "/invocations",
        "status": status,
        "request": request,
        "response": response,
        "timings": {"latency_ms": 12.3},
        "speculation": {"mean_acceptance_length": 2.9} if status == 200 else None,
    }
    return json.dumps(record)


def write_lines(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
