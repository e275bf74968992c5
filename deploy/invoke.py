"""The invoke subcommand: one chat request to the endpoint, whole or streamed.

The container streams OpenAI server-sent events (`data: {...}` then a blank line, ending with
`data: [DONE]`), and SageMaker cuts that byte stream into PayloadPart events wherever it
likes: an event, a line, even a UTF-8 character can span two parts. So the bytes are
buffered and split only at blank lines, the SSE event boundary.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO

from botocore.exceptions import ClientError

from deploy.failures import DeployFailed, UsageError
from deploy.s3 import S3Prefix
from deploy.waiting import Clock
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


def answer_text(answer: dict[str, Any]) -> str:
    """What to print of a whole chat answer: its message, else the JSON."""
    choices = answer.get("choices") or []
    if not choices:
        return json.dumps(answer, indent=2)
    return choices[0].get("message", {}).get("content") or ""


def s3_object(uri: str) -> tuple[str, str]:
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    return bucket, key


def read_if_there(s3: Any, uri: str) -> bytes | None:
    bucket, key = s3_object(uri)
    try:
        return s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound"):
            return None
        raise


def invoke_async(
    runtime: Any,
    s3: Any,
    endpoint_name: str,
    payload: dict[str, Any],
    input_prefix: S3Prefix,
    out: TextIO,
    clock: Clock,
    wait_seconds: float,
) -> None:
    """Upload the payload, InvokeEndpointAsync, then wait for the answer (or the failure) in
    S3 and print it."""
    key = f"{input_prefix.prefix}{uuid.uuid4()}.json"
    s3.put_object(Bucket=input_prefix.bucket, Key=key, Body=json.dumps(payload).encode())
    location = f"s3://{input_prefix.bucket}/{key}"
    response = runtime.invoke_endpoint_async(
        EndpointName=endpoint_name,
        ContentType="application/json",
        InputLocation=location,
        InvocationTimeoutSeconds=int(min(max(wait_seconds, 1), 3600)),
    )
    output, failure = response["OutputLocation"], response.get("FailureLocation")
    out.write(f"queued {response.get('InferenceId', '')}: {location} -> {output}\n")
    out.flush()
    start = clock.now()
    while True:
        if (answer := read_if_there(s3, output)) is not None:
            out.write(answer_text(json.loads(answer)) + "\n")
            return
        if failure and (failed := read_if_there(s3, failure)) is not None:
            raise DeployFailed(
                f"the endpoint failed the request ({failure}): {failed.decode(errors='replace')}"
            )
        if clock.now() - start >= wait_seconds:
            raise DeployFailed(
                f"no answer at {output} after {wait_seconds:g} s; it may still come (the "
                "request stays queued), look there later."
            )
        clock.sleep(clock.poll_seconds)


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
    out.write(answer_text(json.loads(response["Body"].read())) + "\n")
