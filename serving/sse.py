"""An OpenAI chat stream (server-sent events) back into the one answer it streamed.

vLLM streams `data: {chat.completion.chunk}` events, each closed by a blank line, and ends
with `data: [DONE]`. Reassembly joins choice 0's deltas in order. The id, model and created
come from the first chunk, finish_reason from the last chunk that sets one, and usage and
`metrics` (vLLM's per-request speculation) from the final chunk that carries them.

Standard library only: the container's capture writer and the laptop's `capture export`
(which reads SageMaker's Data Capture too) share it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

DONE = "[DONE]"


class EventSplitter:
    """A byte stream read in pieces of any size, split into its events (each closed by a
    blank line). Lines may end in LF, CRLF or CR, and a piece may end anywhere, even
    between CR and LF. Each piece is looked at once, so a long event costs linear time.
    An unfinished event longer than `max_pending` is dropped, up to its blank line."""

    def __init__(self, max_pending: int | None = None):
        self.pending = bytearray()  # line ends already made LF
        self.held_cr = False  # the last piece ended in CR, maybe half of CRLF
        self.dropping = False
        self.max_pending = max_pending

    def feed(self, piece: bytes) -> list[bytes]:
        """The events this piece completes, every line end made LF."""
        if self.held_cr:
            piece = b"\r" + piece
        self.held_cr = piece.endswith(b"\r")
        piece = piece.removesuffix(b"\r") if self.held_cr else piece
        search_from = max(len(self.pending) - 1, 0)  # a blank line may straddle the pieces
        self.pending += piece.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        events, begin = [], 0
        while (end := self.pending.find(b"\n\n", max(search_from, begin))) != -1:
            if not self.dropping:
                events.append(bytes(self.pending[begin:end]))
            self.dropping = False
            begin = end + 2
        del self.pending[:begin]
        if self.max_pending is not None and len(self.pending) > self.max_pending:
            self.pending.clear()
            self.dropping = True
        return events

    def finish(self) -> list[bytes]:
        """The last event, when the stream ended without its blank line."""
        rest = bytes(self.pending).rstrip(b"\n")
        dropping = self.dropping
        self.pending, self.held_cr, self.dropping = bytearray(), False, False
        return [rest] if rest and not dropping else []


class DataSplitter:
    """The `data:` values of the events in a byte stream cut anywhere (SageMaker's
    PayloadParts split events, and even characters, wherever they fall)."""

    def __init__(self, max_pending: int | None = None):
        self.events = EventSplitter(max_pending)

    def feed(self, piece: bytes) -> list[str]:
        return data_of(self.events.feed(piece))

    def finish(self) -> list[str]:
        """The last event's data, when the stream ended without its blank line."""
        return data_of(self.events.finish())


async def payloads(chunks: AsyncIterator[bytes]) -> AsyncIterator[str]:
    """The `data:` values of a byte stream read as it comes."""
    splitter = DataSplitter()
    async for chunk in chunks:
        for data in splitter.feed(chunk):
            yield data
    for data in splitter.finish():
        yield data


def data_of(events: list[bytes]) -> list[str]:
    return [data for event in events if (data := event_data(event)) is not None]


def event_data(event: bytes) -> str | None:
    """An event's data: its `data:` lines joined by newlines; None when it has none."""
    lines = [
        line[5:].removeprefix(b" ").decode("utf-8", errors="replace")
        for line in event.split(b"\n")
        if line[:5] == b"data:"
    ]
    return "\n".join(lines) if lines else None


def chunks_of(payload: str) -> list[dict[str, Any]]:
    """The JSON objects in one event's data. An event whose lines are each a whole chunk
    (a sender that left out the blank lines) yields them one by one; anything else, none."""
    if payload.strip() == DONE:
        return []
    for pieces in ([payload], payload.split("\n")):
        try:
            parsed = [json.loads(piece) for piece in pieces if piece.strip() != DONE]
        except ValueError:
            continue
        return [chunk for chunk in parsed if isinstance(chunk, dict)]
    return []


class Reassembly:
    """The answer so far, chunk by chunk."""

    def __init__(self) -> None:
        self.first: dict[str, Any] | None = None
        self.role = "assistant"
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.tool_calls: dict[int, dict[str, Any]] = {}
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] | None = None
        self.metrics: dict[str, Any] | None = None
        self.error: Any = None

    def add(self, chunk: dict[str, Any]) -> None:
        if "error" in chunk and "choices" not in chunk:
            self.error = chunk["error"]
            return
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            return
        if self.first is None:
            self.first = chunk
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        if isinstance(chunk.get("metrics"), dict):
            self.metrics = chunk["metrics"]
        for choice in choices:
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                self.add_choice(choice)

    def add_choice(self, choice: dict[str, Any]) -> None:
        self.finish_reason = choice.get("finish_reason") or self.finish_reason
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            return
        if isinstance(delta.get("role"), str):
            self.role = delta["role"]
        if isinstance(delta.get("content"), str):
            self.content.append(delta["content"])
        # vLLM has named the reasoning field both ways.
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(reasoning, str):
            self.reasoning.append(reasoning)
        calls = delta.get("tool_calls")
        for call in calls if isinstance(calls, list) else []:
            if isinstance(call, dict):
                self.add_tool_call(call)

    def add_tool_call(self, call: dict[str, Any]) -> None:
        """Each call streams its id, type and name once, and its arguments in pieces."""
        index = call.get("index", 0)
        whole = self.tool_calls.setdefault(
            index if isinstance(index, int) else 0,
            {"id": None, "type": "function", "function": {"name": None, "arguments": ""}},
        )
        whole["id"] = call.get("id") or whole["id"]
        whole["type"] = call.get("type") or whole["type"]
        function = call.get("function")
        if isinstance(function, dict):
            whole["function"]["name"] = function.get("name") or whole["function"]["name"]
            arguments = function.get("arguments")
            whole["function"]["arguments"] += arguments if isinstance(arguments, str) else ""

    def answer(self) -> dict[str, Any] | None:
        if self.first is None and self.error is None:
            return None
        first = self.first or {}
        message: dict[str, Any] = {
            "role": self.role,
            "content": "".join(self.content) if self.content else None,
        }
        if self.reasoning:
            # Named as vLLM 0.32 names it in a whole answer, whichever name the deltas used.
            message["reasoning"] = "".join(self.reasoning)
        if self.tool_calls:
            message["tool_calls"] = [self.tool_calls[index] for index in sorted(self.tool_calls)]
        answer: dict[str, Any] = {
            "id": first.get("id"),
            "object": "chat.completion",
            "created": first.get("created"),
            "model": first.get("model"),
            "choices": [{"index": 0, "message": message, "finish_reason": self.finish_reason}],
        }
        for name, value in (("usage", self.usage), ("metrics", self.metrics)):
            if value is not None:
                answer[name] = value
        if self.error is not None:
            answer["error"] = self.error
        return answer


def reassemble_sse(data: bytes | str) -> dict[str, Any] | None:
    """The chat.completion a stream of chat.completion.chunk events adds up to; None when
    the data holds no chat chunk (and no error event). A stream cut short still gives what
    arrived, with finish_reason None; an error event is kept as the answer's "error"."""
    splitter = EventSplitter()
    events = splitter.feed(data.encode() if isinstance(data, str) else data) + splitter.finish()
    reassembly = Reassembly()
    for event in events:
        for chunk in chunks_of(event_data(event) or ""):
            reassembly.add(chunk)
    return reassembly.answer()
