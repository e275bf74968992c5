"""The invoke subcommand: one chat request to the endpoint, whole or streamed.

The container streams OpenAI server-sent events (`data: {...}` then a blank line, ending with
`data: [DONE]`), and SageMaker cuts that byte stream into PayloadPart events wherever it
likes: an event, a line, even a UTF-8 character can span two parts. So the bytes are
buffered and split only at blank lines, the SSE event boundary.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO

from deploy.errors import DeployFailed, UsageError
from serving.sse import DONE, DataSplitter


def chat_payload(
    prompt: str | None,
    payload_file: Path | None,
    max_tokens: int | None,
    temperature: float | None,
    stream: bool,
) -> dict[str, Any]:
    """The request body: --payload FILE as given, or a one-message chat from --prompt; the
    other options override the file's values."""
    if payload_file is not None:
        try:
            payload = json.loads(payload_file.read_text())
        except (OSError, json.JSONDecodeError) as error:
            raise UsageError(
                f"--payload {payload_file} cannot be read as JSON ({error}); pass a file "
                'holding a chat request such as {"messages": [{"role": "user", "content": '
                '"Hello"}]}.'
            ) from None
        if not isinstance(payload, dict):
            raise UsageError(
                f"--payload {payload_file} holds a JSON {type(payload).__name__}, not an "
                "object; pass a chat request object."
            )
    elif prompt is not None:
        payload = {"messages": [{"role": "user", "content": prompt}]}
    else:
        raise UsageError("invoke needs --prompt TEXT or --payload FILE; give one.")
    if max_tokens is not None:
        payload["max_tokens"] = max_tokens
    if temperature is not None:
        payload["temperature"] = temperature
    if stream:
        payload["stream"] = True
    return payload


def text_of(data: str) -> str:
    """The new text in one streamed chunk (choices[0].delta.content); DeployFailed on an
    error event."""
    chunk = json.loads(data)
    if "error" in chunk:
        raise DeployFailed(f"the endpoint streamed an error: {json.dumps(chunk['error'])}")
    choices = chunk.get("choices") or [{}]
    return choices[0].get("delta", {}).get("content") or ""


def stream_texts(events: Iterable[dict[str, Any]]) -> Iterator[str]:
    """Text pieces from invoke_endpoint_with_response_stream's event stream, in order."""
    buffer = DataSplitter()
    for event in events:
        if "PayloadPart" not in event:
            failure = event.get("ModelStreamError") or event.get("InternalStreamFailure") or event
            raise DeployFailed(f"the response stream failed: {failure}")
        for data in buffer.feed(event["PayloadPart"]["Bytes"]):
            if data.strip() == DONE:
                return
            yield text_of(data)
    for data in buffer.finish():
        if data.strip() != DONE:
            yield text_of(data)


def invoke(runtime: Any, endpoint_name: str, payload: dict[str, Any], out: TextIO) -> None:
    body = json.dumps(payload)
    if payload.get("stream"):
        response = runtime.invoke_endpoint_with_response_stream(
            EndpointName=endpoint_name,
            ContentType="application/json",
            Accept="text/event-stream",
            Body=body,
        )
        for text in stream_texts(response["Body"]):
            out.write(text)
            out.flush()
        out.write("\n")
        return
    response = runtime.invoke_endpoint(
        EndpointName=endpoint_name, ContentType="application/json", Body=body
    )
    answer = json.loads(response["Body"].read())
    choices = answer.get("choices") or []
    if not choices:
        out.write(json.dumps(answer, indent=2) + "\n")
        return
    out.write((choices[0].get("message", {}).get("content") or "") + "\n")
