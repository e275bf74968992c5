"""Reasoning a client sends back on its assistant messages, in the form the engine takes.

vLLM 0.32 answers with the model's reasoning in `reasoning` (`message.reasoning` whole,
`delta.reasoning` streamed; older releases named it `reasoning_content`), and an agent sends
it back on the assistant turns of its next request. vLLM takes it there as a string under
either name (it renames `reasoning_content` to `reasoning`, and the chat template gets both).
Clients that keep reasoning as blocks send a list (`[{"type": "text", "text": ...}]`,
Anthropic's `{"type": "thinking", "thinking": ...}`, Bedrock's `{"reasoningText": {"text":
...}}`), and vLLM hands the list on as it came. A chat template that writes the reasoning as
text then fails, and vLLM answers 400 (Qwen3's: "'list object' has no attribute 'strip'",
seen on an engine); so does GPT-OSS's harmony rendering ("1 validation error for Message",
read in vLLM's source and its function run: there is no GPT-OSS here). Here the blocks' text
becomes the one string vLLM takes, under `reasoning`; the message's content is left as it is.
"""

from __future__ import annotations

import json
from typing import Any

from serving.json_text import json_bytes

NAMES = ("reasoning", "reasoning_content")  # vLLM's order: `reasoning` wins when both are set
# A body without either key needs no parse.
PROBES = (b'"reasoning"', b'"reasoning_content"')
# Where a block keeps its text, in order: a text block's, Anthropic's thinking block's, an
# OpenAI Responses reasoning item's (content, then summary), Bedrock's (nested).
TEXT_KEYS = (
    "text", "thinking", "reasoning", "reasoning_content", "content", "summary",
    "reasoningContent", "reasoningText",
)  # fmt: skip


def text_of(value: Any) -> str:
    """The text in a reasoning value: a string, a block, or a list of either (joined by
    newlines, as vLLM joins a message's text parts). Blocks without text (redacted or
    encrypted reasoning, a signature) add nothing."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(text for item in value if (text := text_of(item)))
    if isinstance(value, dict):
        for key in TEXT_KEYS:
            if text := text_of(value.get(key)):
                return text
    return ""


def message_with_text(message: Any) -> dict[str, Any] | None:
    """The message with its reasoning as one string under `reasoning`, or None when vLLM
    takes it as it is (no reasoning, or strings only)."""
    if not isinstance(message, dict):
        return None
    given = [name for name in NAMES if message.get(name) is not None]
    if all(isinstance(message[name], str) for name in given):
        return None
    changed = {key: value for key, value in message.items() if key not in NAMES}
    if text := text_of(message[given[0]]):
        changed["reasoning"] = text
    return changed


def messages_with_text(messages: Any) -> list[Any] | None:
    """The messages with every reasoning sent back as a string, or None when none needs it."""
    if not isinstance(messages, list):
        return None
    try:
        changed = [message_with_text(message) for message in messages]
    except RecursionError:  # blocks nested past what can be walked: the engine answers
        return None
    if all(message is None for message in changed):
        return None
    return [old if new is None else new for new, old in zip(changed, messages, strict=True)]


def chat_body(body: bytes) -> bytes | None:
    """A chat request body relayed as it came (/v1/chat/completions) with its reasoning sent
    back as strings; None when it needs no change. Parsed only when it names reasoning; a
    body that is not a JSON object is the engine's to refuse."""
    if not any(probe in body for probe in PROBES):
        return None
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(payload, dict):
        return None
    messages = messages_with_text(payload.get("messages"))
    return None if messages is None else json_bytes({**payload, "messages": messages})
