"""One request, timed token by token: the SSE stream (or JSON body) in, a RequestResult out.

The timing rules follow `vllm bench serve`: every chunk that carries choices is an arrival,
TTFT is the first arrival, ITL the gaps between arrivals (a chunk may carry several tokens
when speculation accepts drafts), TPOT the decode time over the tokens after the first.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from serving.sse import DONE, DataSplitter


@dataclass
class RequestResult:
    status: int = 0  # HTTP status; 0 when no answer came at all
    error: str = ""
    complete: bool = False  # the whole answer arrived ([DONE], or a full JSON body)
    ttft: float | None = None  # seconds from send to first token
    latency: float = 0.0  # seconds from send to the end of the answer
    arrivals: list[float] = field(default_factory=list)  # seconds from send, per token chunk
    output_tokens: int = 0
    timed_out: bool = False  # the client gave up waiting: a hang, not an answer
    text: str = ""  # the answer's text: greedy answers must not depend on the configuration
    finish_reason: str = ""  # the first choice's: "length" is an answer cut at max_tokens

    @property
    def ok(self) -> bool:
        return self.status == 200 and self.complete and not self.error

    @property
    def itl(self) -> list[float]:
        pairs = zip(self.arrivals, self.arrivals[1:], strict=False)
        return [later - earlier for earlier, later in pairs]

    @property
    def tpot(self) -> float | None:
        if self.ttft is None or self.output_tokens < 2 or not self.arrivals:
            return None
        return (self.arrivals[-1] - self.ttft) / (self.output_tokens - 1)

    @property
    def tokens_per_second(self) -> float | None:
        return (
            self.output_tokens / self.latency if self.latency > 0 and self.output_tokens else None
        )


class StreamTimer:
    """Feeds on the raw bytes of an SSE answer as they arrive; fills a RequestResult."""

    def __init__(self, started: float):
        self.started = started
        self.result = RequestResult(status=200)
        self._events = DataSplitter()

    def feed(self, chunk: bytes, now: float) -> None:
        for data in self._events.feed(chunk):
            self._on_data(data, now)

    def _on_data(self, data: str, now: float) -> None:
        if data.strip() == DONE:
            self.result.complete = True
            return
        try:
            message = json.loads(data)
        except json.JSONDecodeError:
            self.result.error = f"unreadable stream event: {data[:200]}"
            return
        if "error" in message:
            self.result.error = json.dumps(message["error"])[:500]
            return
        if message.get("choices"):
            elapsed = now - self.started
            if self.result.ttft is None:
                self.result.ttft = elapsed
            self.result.arrivals.append(elapsed)
            choice = message["choices"][0]
            self.result.text += choice_text(choice, "delta")
            self.result.finish_reason = finish_reason(choice) or self.result.finish_reason
        usage = message.get("usage")
        if usage and usage.get("completion_tokens") is not None:
            self.result.output_tokens = int(usage["completion_tokens"])

    def finish(self, now: float) -> RequestResult:
        result = self.result
        result.latency = now - self.started
        if not result.output_tokens:
            # No usage block (stream_options not honoured): one token per arrival.
            result.output_tokens = len(result.arrivals)
        return result


def choice_text(choice: Any, part: str) -> str:
    """A choice's text: a chat choice's `delta` (streamed) or `message` content with its tool
    calls' names and arguments after it, or a completion choice's `text`."""
    if not isinstance(choice, dict):
        return ""
    if part not in choice:
        text = choice.get("text")
        return text if isinstance(text, str) else ""
    message = choice.get(part) or {}
    content = message.get("content")
    text = content if isinstance(content, str) else ""
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {} if isinstance(call, dict) else {}
        text += "".join(v for v in (function.get("name"), function.get("arguments")) if v)
    return text


def finish_reason(choice: Any) -> str:
    reason = choice.get("finish_reason") if isinstance(choice, dict) else None
    return reason if isinstance(reason, str) else ""


def json_result(status: int, body: bytes, started: float, now: float) -> RequestResult:
    """A non-streamed answer: the whole body is the first (and last) token."""
    result = RequestResult(status=status, latency=now - started)
    try:
        message: Any = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        result.error = f"answer is not JSON: {body[:200]!r}"
        return result
    if status != 200 or not isinstance(message, dict):
        result.error = body[:500].decode(errors="replace")
        return result
    if "error" in message or not message.get("choices"):
        result.error = json.dumps(message.get("error", message))[:500]
        return result
    result.complete = True
    result.ttft = result.latency
    result.arrivals = [result.latency]
    choice = message["choices"][0]
    result.text = choice_text(choice, "message")
    result.finish_reason = finish_reason(choice)
    result.output_tokens = int((message.get("usage") or {}).get("completion_tokens") or 0)
    return result


async def send(
    http: httpx.AsyncClient,
    url: str,
    payload: dict[str, Any],
    headers: dict[str, str] | None = None,
) -> RequestResult:
    """POST one payload; never raises for HTTP or transport trouble, records it instead."""
    started = time.perf_counter()
    try:
        async with http.stream("POST", url, json=payload, headers=headers) as response:
            streamed = response.headers.get("content-type", "").startswith("text/event-stream")
            if response.status_code == 200 and streamed:
                timer = StreamTimer(started)
                async for chunk in response.aiter_bytes():
                    timer.feed(chunk, time.perf_counter())
                return timer.finish(time.perf_counter())
            body = await response.aread()
            return json_result(response.status_code, body, started, time.perf_counter())
    except httpx.HTTPError as error:
        return RequestResult(
            error=f"{type(error).__name__}: {error}",
            latency=time.perf_counter() - started,
            timed_out=isinstance(error, httpx.TimeoutException),
        )
