"""The TGI / LMI payload on /invocations: `{"inputs": ..., "parameters": {...}}`.

It is the de-facto schema of SageMaker LLM endpoints (Hugging Face TGI, DJL LMI), and what
LiteLLM's `sagemaker/` route and every client written for those containers send. The front
turns it into a vLLM completion request and the engine's answer back into TGI's: a list of
`{"generated_text": ...}` (with `details` when asked), or TGI's stream of token events.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from serving.errors import RequestRefused
from serving.json_text import json_bytes
from serving.sse import DataSplitter

log = logging.getLogger("serving.tgi")

# TGI's own default when a request names no max_new_tokens.
DEFAULT_MAX_NEW_TOKENS = 100
# TGI parameters with a vLLM completion field of the same meaning.
SAME_MEANING = {
    "max_new_tokens": "max_tokens",
    "top_p": "top_p",
    "top_k": "top_k",
    "repetition_penalty": "repetition_penalty",
    "seed": "seed",
    "stop": "stop",
    "frequency_penalty": "frequency_penalty",
    "presence_penalty": "presence_penalty",
}
# Read here rather than passed on.
OURS = {"temperature", "do_sample", "return_full_text", "details", "grammar"}
# TGI's grammar types and vLLM's structured_outputs field for each.
GRAMMARS = {"json": "json", "regex": "regex"}
# Unused parameter names already logged.
REPORTED: set[str] = set()
# vLLM's finish reasons in TGI's words; a stop string vLLM names in `stop_reason`.
FINISH_REASONS = {"length": "length", "stop": "eos_token", "abort": "length"}


def is_tgi(payload: dict[str, Any]) -> bool:
    return "inputs" in payload


@dataclass(frozen=True)
class TgiAnswer:
    """What the answer needs from the request to be written as TGI writes it."""

    stream: bool
    details: bool
    seed: int | None
    # The prompts, when return_full_text asks for them in front of the generated text.
    prefixes: tuple[str, ...] | None


def parameters_of(payload: dict[str, Any]) -> dict[str, Any]:
    parameters = payload.get("parameters", {})
    if not isinstance(parameters, dict):
        raise RequestRefused(400, "'parameters' must be a JSON object of generation settings.")
    return parameters


def inputs_of(payload: dict[str, Any]) -> list[str]:
    inputs = payload["inputs"]
    if inputs == "" or (isinstance(inputs, list) and "" in inputs):
        # vLLM refuses an empty prompt only once a stream has begun (a 200, then an error).
        raise RequestRefused(400, "'inputs' is empty; send the text to continue.")
    if isinstance(inputs, str):
        return [inputs]
    if isinstance(inputs, list) and inputs and all(isinstance(item, str) for item in inputs):
        return inputs
    raise RequestRefused(
        400, "'inputs' must be a string, or a non-empty list of strings for a batch."
    )


def structured_outputs(parameters: dict[str, Any]) -> dict[str, Any] | None:
    """TGI's `grammar` ({"type": "json", "value": schema} or {"type": "regex", "value":
    pattern}) as vLLM's structured_outputs; None without one."""
    grammar = parameters.get("grammar")
    if grammar is None:
        return None
    kind = grammar.get("type") if isinstance(grammar, dict) else None
    if not isinstance(kind, str) or kind not in GRAMMARS:
        raise RequestRefused(
            400,
            '\'parameters.grammar\' must be an object with "type": "json" (and a JSON '
            'schema as "value") or "type": "regex" (and a pattern as "value").',
        )
    value = grammar.get("value")
    if kind == "json" and isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise RequestRefused(
                400, "'parameters.grammar.value' of type json must be a JSON schema."
            ) from None
    if (kind == "json" and not isinstance(value, dict)) or (
        kind == "regex" and not (isinstance(value, str) and value)
    ):
        wanted = "a JSON schema object" if kind == "json" else "a non-empty pattern string"
        raise RequestRefused(400, f"'parameters.grammar.value' of type {kind} must be {wanted}.")
    return {GRAMMARS[kind]: value}


def sampling(parameters: dict[str, Any]) -> bool:
    """TGI samples when asked to, or when any sampling setting is given; else it is greedy."""
    return bool(
        parameters.get("do_sample")
        or parameters.get("temperature") not in (None, 1, 1.0)
        or parameters.get("top_k") not in (None, 0)
        or parameters.get("top_p") not in (None, 1, 1.0)
    )


def completion_request(
    payload: dict[str, Any], served_model_name: str
) -> tuple[dict[str, Any], TgiAnswer]:
    """The vLLM completion request for a TGI payload, and what its answer needs."""
    prompts = inputs_of(payload)
    parameters = parameters_of(payload)
    stream = payload.get("stream") is True
    if stream and len(prompts) > 1:
        raise RequestRefused(400, "a batch of 'inputs' cannot be streamed; send one string.")
    request: dict[str, Any] = {
        "model": payload.get("model") or served_model_name,
        "prompt": prompts[0] if isinstance(payload["inputs"], str) else prompts,
        "max_tokens": DEFAULT_MAX_NEW_TOKENS,
        "stream": stream,
        # TGI's token events carry the token's id.
        "return_token_ids": True,
    }
    for name, value in parameters.items():
        if name in SAME_MEANING and value is not None:
            request[SAME_MEANING[name]] = value
        elif name not in OURS and name not in REPORTED:
            # Once per name: a client sends the same keys with every request.
            REPORTED.add(name)
            log.info("TGI parameter %r is not used by this container; ignored", name[:64])
    if (constraint := structured_outputs(parameters)) is not None:
        request["structured_outputs"] = constraint
    if sampling(parameters):
        request["temperature"] = parameters.get("temperature", 1.0)
    else:
        request["temperature"] = 0.0
    if stream:
        # The last event names the number of generated tokens, as TGI's does.
        request["stream_options"] = {"include_usage": True}
    answer = TgiAnswer(
        stream=stream,
        details=parameters.get("details") is True,
        seed=parameters.get("seed"),
        prefixes=tuple(prompts) if parameters.get("return_full_text") is True else None,
    )
    return request, answer


def finish_reason(choice: dict[str, Any]) -> str:
    if isinstance(choice.get("stop_reason"), str):
        return "stop_sequence"
    return FINISH_REASONS.get(choice.get("finish_reason") or "", "length")


def details(answer: TgiAnswer, choice: dict[str, Any], tokens: int | None) -> dict[str, Any]:
    return {
        "finish_reason": finish_reason(choice),
        "generated_tokens": tokens,
        "seed": answer.seed,
    }


def whole_answer(answer: TgiAnswer, completion: dict[str, Any]) -> bytes:
    """A vLLM completion answer written as TGI's `[{"generated_text": ...}, ...]`."""
    choices = sorted(completion.get("choices") or [], key=lambda choice: choice.get("index", 0))
    usage = completion.get("usage") or {}
    results = []
    for index, choice in enumerate(choices):
        text = choice.get("text") or ""
        if answer.prefixes is not None:
            text = answer.prefixes[index] + text
        result: dict[str, Any] = {"generated_text": text}
        if answer.details:
            tokens = usage.get("completion_tokens") if len(choices) == 1 else None
            result["details"] = details(answer, choice, tokens)
        results.append(result)
    return json_bytes(results) + b"\n"


def first_id(choice: dict[str, Any]) -> int:
    ids = choice.get("token_ids")
    return ids[0] if isinstance(ids, list) and ids and isinstance(ids[0], int) else 0


class TgiStream:
    """vLLM's completion stream (its SSE `data:` payloads) as TGI's token events."""

    def __init__(self, answer: TgiAnswer):
        self.answer = answer
        self.text: list[str] = []
        self.index = 0
        self.finished: dict[str, Any] | None = None

    def event(self, data: str) -> bytes:
        """The TGI events for one engine event (none for the usage and [DONE] ones)."""
        if data.strip() == "[DONE]":
            return b""
        try:
            chunk = json.loads(data)
        except ValueError:
            return b""
        if not isinstance(chunk, dict):
            return b""
        if "error" in chunk:
            return b"data:" + json_bytes(chunk) + b"\n\n"
        events = b""
        for choice in chunk.get("choices") or []:
            text = choice.get("text") or ""
            self.text.append(text)
            if choice.get("finish_reason") is not None:
                # Held back until the usage chunk says how many tokens there were.
                self.finished = choice
            elif text:
                events += self.token_event(text, first_id(choice), None, None)
        usage = chunk.get("usage")
        if isinstance(usage, dict) and self.finished is not None:
            events += self.last_event(usage.get("completion_tokens"))
        return events

    def finish(self) -> bytes:
        """The last event, if the usage chunk never came."""
        return self.last_event(None) if self.finished is not None else b""

    def last_event(self, tokens: int | None) -> bytes:
        assert self.finished is not None
        choice, self.finished = self.finished, None
        generated = "".join(self.text)
        if self.answer.prefixes is not None:
            generated = self.answer.prefixes[0] + generated
        detail = details(self.answer, choice, tokens)
        return self.token_event(choice.get("text") or "", first_id(choice), generated, detail)

    def token_event(
        self, text: str, token_id: int, generated: str | None, detail: dict | None
    ) -> bytes:
        """One TGI event; a chunk of several accepted draft tokens is one event."""
        self.index += 1
        event = {
            "index": self.index,
            "token": {"id": token_id, "text": text, "logprob": None, "special": False},
            "generated_text": generated,
            "details": detail,
        }
        return b"data:" + json_bytes(event) + b"\n\n"


async def stream_events(chunks: AsyncIterator[bytes], answer: TgiAnswer) -> AsyncIterator[bytes]:
    """The engine's completion stream, cut anywhere, as TGI's token events (those each chunk
    completes, together; an engine error event passes as it is). Every road that streams TGI
    writes it with this."""
    stream, splitter = TgiStream(answer), DataSplitter()
    async for chunk in chunks:
        if events := b"".join(stream.event(data) for data in splitter.feed(chunk)):
            yield events
    if events := b"".join(stream.event(data) for data in splitter.finish()) + stream.finish():
        yield events
