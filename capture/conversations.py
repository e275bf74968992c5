"""One exchange as a training conversation: the request's messages, then the answer.

Messages are reduced to what the trainer renders: a role (system, user or assistant) and
text. Content given as parts is joined with newlines, as vLLM joins text parts for the chat
template; a part that is not text (an image, audio, a file) makes the record unusable, as do
tool messages and tool calls. A "developer" message is the newer name for a system one.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from capture.types import Exchange, Skip, Skipped

ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}
TOOL_ROLES = ("tool", "function")
TEXT_PART = "text"


@dataclass(frozen=True)
class Conversation:
    """The prompt's messages and the answer, each {"role", "content"}; the answer may also
    carry the target's "reasoning_content". `tools` are the request's tool definitions."""

    messages: tuple[dict[str, str], ...]
    tools: tuple[Any, ...] = ()

    @property
    def answer(self) -> str:
        return self.messages[-1]["content"]

    @property
    def chars(self) -> int:
        return sum(
            len(message["content"]) + len(message.get("reasoning_content", ""))
            for message in self.messages
        )

    def key(self) -> str:
        """Equal for the same messages, answer and tools, however the JSON was spelled.
        Skipped (bad_encoding) for text UTF-8 cannot hold, which could not be written."""
        canonical = json.dumps(
            {"messages": self.messages, "tools": self.tools},
            sort_keys=True,
            ensure_ascii=False,
            separators=(",", ":"),
        )
        try:
            return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
        except UnicodeEncodeError:  # a lone surrogate, escaped in the captured JSON
            raise Skipped(Skip.BAD_ENCODING) from None


def text_of(content: Any) -> str:
    """A message's content as text: a string as it is, text parts joined by newlines."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise Skipped(Skip.NOT_CHAT)
    texts = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and part.get("type") == TEXT_PART:
            if not isinstance(part.get("text"), str):
                raise Skipped(Skip.NOT_CHAT)
            texts.append(part["text"])
        else:
            raise Skipped(Skip.NON_TEXT_CONTENT)
    return "\n".join(texts)


def prompt_message(message: Any) -> dict[str, str]:
    if not isinstance(message, dict):
        raise Skipped(Skip.NOT_CHAT)
    role = message.get("role")
    if role in TOOL_ROLES or message.get("tool_calls") or message.get("function_call"):
        raise Skipped(Skip.TOOL_CALLS)
    if not isinstance(role, str) or role not in ROLES:
        raise Skipped(Skip.UNKNOWN_ROLE)
    return {"role": ROLES[role], "content": text_of(message.get("content"))}


def answer_message(response: dict[str, Any]) -> dict[str, str]:
    """The assistant message of choice 0, with its reasoning when the target gave some."""
    if response.get("error"):
        raise Skipped(Skip.ERROR_STATUS)
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices:
        raise Skipped(Skip.NOT_CHAT)
    message = choices[0].get("message") if isinstance(choices[0], dict) else None
    if not isinstance(message, dict):
        raise Skipped(Skip.NOT_CHAT)
    if message.get("tool_calls") or message.get("function_call"):
        raise Skipped(Skip.TOOL_CALLS)
    content = text_of(message.get("content"))
    if not content.strip():
        raise Skipped(Skip.NO_ANSWER)
    answer = {"role": "assistant", "content": content}
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        answer["reasoning_content"] = reasoning
    return answer


def conversation_of(exchange: Exchange, system: str | None = None) -> Conversation:
    """The training conversation in one exchange; `system` is put first when the request
    has no system message."""
    request = exchange.request
    raw_messages = request.get("messages")
    if not isinstance(raw_messages, list) or not raw_messages:
        raise Skipped(Skip.NOT_CHAT)
    messages = [prompt_message(message) for message in raw_messages]
    answer = answer_message(exchange.response)
    if request.get("continue_final_message") and messages[-1]["role"] == "assistant":
        # The target continued the last assistant message rather than starting a new one.
        answer = {**answer, "content": messages.pop()["content"] + answer["content"]}
    if system and not any(message["role"] == "system" for message in messages):
        messages.insert(0, {"role": "system", "content": system})
    tools = request.get("tools")
    return Conversation(tuple([*messages, answer]), tuple(tools) if isinstance(tools, list) else ())
