"""What the front reads off the engine's answers: the usage (the completion's token count),
and the request's own speculation (vLLM's per-request acceptance), for the access log and for
response headers a client reads without parsing the body.

A JSON answer carries both at its end. A stream carries them in its final usage chunk,
which the engine sends when the client asks (`stream_options.include_usage`): not by
default, since clients that read `choices[0]` of every chunk break on a chunk without one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from serving import sse
from serving.headers import RawHeaders

# SageMaker hands a client only this one of the container's headers (as CustomAttributes).
CUSTOM_ATTRIBUTES = b"x-amzn-sagemaker-custom-attributes"
HEADER_PREFIX = b"x-speculation-"


@dataclass(frozen=True)
class Speculation:
    """One request's speculative decoding, as vLLM's `metrics.speculative_decoding` gives it."""

    mean_acceptance_length: float
    draft_tokens: int
    accepted_tokens: int

    @classmethod
    def from_answer(cls, answer: dict) -> Speculation | None:
        metrics = answer.get("metrics")
        stats = metrics.get("speculative_decoding") if isinstance(metrics, dict) else None
        if not isinstance(stats, dict):
            return None
        try:
            return cls(
                float(stats["mean_acceptance_length"]),
                int(stats["num_draft_tokens"]),
                int(stats["num_accepted_draft_tokens"]),
            )
        except (KeyError, TypeError, ValueError):
            return None

    def record(self) -> dict[str, float | int]:
        return {
            "mean_acceptance_length": self.mean_acceptance_length,
            "num_draft_tokens": self.draft_tokens,
            "num_accepted_draft_tokens": self.accepted_tokens,
        }

    def fields(self) -> dict[str, str]:
        return {
            "mean-acceptance-length": f"{self.mean_acceptance_length:.2f}",
            "draft-tokens": str(self.draft_tokens),
            "accepted-tokens": str(self.accepted_tokens),
        }

    def headers(self) -> RawHeaders:
        """`x-speculation-*` for direct clients; the same as SageMaker custom attributes."""
        fields = self.fields()
        named = [(HEADER_PREFIX + name.encode(), value.encode()) for name, value in fields.items()]
        attributes = ",".join(f"speculation-{name}={value}" for name, value in fields.items())
        return [*named, (CUSTOM_ATTRIBUTES, attributes.encode())]


def without_null_usage(answer: dict) -> dict | None:
    """The answer with its `usage` entries that are null left out, or None when it has none.

    vLLM's whole chat answers carry `"completion_tokens_details": null` unless a reasoning
    parser runs. A null says nothing, and Strands Agents' SageMaker model (1.62) passes
    `usage` as keyword arguments to a class that knows only the token counts and
    `prompt_tokens_details`, so that key alone fails the agent's call. Its streams are fine:
    vLLM leaves nulls out of stream chunks.
    """
    usage = answer.get("usage")
    if not isinstance(usage, dict) or None not in usage.values():
        return None
    kept = {key: value for key, value in usage.items() if value is not None}
    return {**answer, "usage": kept}


def with_speculation(headers: RawHeaders, speculation: Speculation | None) -> RawHeaders:
    """The answer's headers plus the speculation ones; custom attributes the engine set stay."""
    if speculation is None:
        return headers
    ours = speculation.headers()
    attributes = dict(ours)[CUSTOM_ATTRIBUTES]
    merged = [
        (name, value + b"," + attributes if name == CUSTOM_ATTRIBUTES else value)
        for name, value in headers
    ]
    has_attributes = any(name == CUSTOM_ATTRIBUTES for name, _ in headers)
    return merged + [pair for pair in ours if pair[0] != CUSTOM_ATTRIBUTES or not has_attributes]


class AnswerWatcher:
    """Reads usage and speculation off an answer as it passes, JSON or server-sent events.

    A JSON answer is parsed once, here, when it fits the buffer (`answer` then holds it for
    the capture writer); larger ones are not buffered for it.
    """

    MAX_BUFFER = 1 << 20

    def __init__(self, content_type: str):
        self.is_json = content_type.startswith("application/json")
        self.is_stream = content_type.startswith("text/event-stream")
        self.buffer = bytearray()
        self.too_large = False  # a JSON answer past MAX_BUFFER is not read at all
        self.events = sse.EventSplitter(max_pending=self.MAX_BUFFER)
        self.answer: dict | None = None
        self.usage: dict | None = None
        self.completion_tokens: int | None = None
        self.speculation: Speculation | None = None

    def feed(self, chunk: bytes) -> None:
        if self.is_json and not self.too_large:
            if len(self.buffer) + len(chunk) > self.MAX_BUFFER:
                self.too_large = True
                self.buffer.clear()
            else:
                self.buffer += chunk
        elif self.is_stream:
            self._take_events(self.events.feed(chunk))

    def finish(self) -> None:
        if self.is_json and self.buffer:
            try:
                answer = json.loads(self.buffer)
            except ValueError:
                return
            if isinstance(answer, dict):
                self.answer = answer
                self._take(answer)
        elif self.is_stream:
            self._take_events(self.events.finish())

    def _take_events(self, events: list[bytes]) -> None:
        # Only the final usage chunk matters.
        for event in events:
            if b'"completion_tokens"' in event:
                for chunk in sse.chunks_of(sse.event_data(event) or ""):
                    self._take(chunk)

    def _take(self, answer: dict) -> None:
        usage = answer.get("usage")
        if isinstance(usage, dict):
            self.usage = usage
            if isinstance(usage.get("completion_tokens"), int):
                self.completion_tokens = usage["completion_tokens"]
        self.speculation = Speculation.from_answer(answer) or self.speculation
