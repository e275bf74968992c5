"""One exchange as a training conversation: the request's messages, then the answer.

Messages are reduced to what a chat template renders, in the OpenAI chat form: a role
(system, user, assistant or tool) and text; an assistant's tool calls (`tool_calls`, each
`{"id", "type": "function", "function": {"name", "arguments"}}`) and reasoning
(`reasoning_content`); a tool result's `tool_call_id` and `name`. Content given as parts is
joined with newlines, as vLLM joins text parts for the chat template; a part that is not text
(an image, audio, a file) makes the record unusable. A "developer" message is the newer name
for a system one; the legacy `function_call` and "function" role become a tool call and a
tool result.

Secrets in tool arguments and tool results follow the container's redaction rules
(serving/secrets.py): the value of a secret-named JSON key (`api_key`, `token`, `password`,
...) is written as `***`, so a captured call never puts a credential into a training set.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from capture.types import Exchange, Skip, Skipped
from serving.reasoning import text_of as reasoning_text
from serving.secrets import redact_json_text

ROLES = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
    "function": "tool",
}
TEXT_PART = "text"
# Fields a message keeps besides role and content; ids are kept but not part of its identity.
TOOL_RESULT_FIELDS = ("tool_call_id", "name")
IDS = ("id", "tool_call_id")


@dataclass(frozen=True)
class Conversation:
    """The prompt's messages and the answer, in the OpenAI chat form (see the module's
    docstring). `tools` are the request's tool definitions."""

    messages: tuple[dict[str, Any], ...]
    tools: tuple[Any, ...] = ()

    @property
    def answer(self) -> str:
        """The answer's text and its tool calls, as the length filters count them."""
        return said_in(self.messages[-1])

    @property
    def chars(self) -> int:
        """The conversation's length: every message's text, calls and reasoning."""
        return sum(
            len(said_in(message)) + len(message.get("reasoning_content", ""))
            for message in self.messages
        )

    def key(self) -> str:
        """Equal for the same messages, answer and tools, however the JSON was spelled and
        whatever ids the calls were given. Skipped (bad_encoding) for text UTF-8 cannot hold,
        which could not be written."""
        canonical = json.dumps(
            {"messages": [without_ids(message) for message in self.messages], "tools": self.tools},
            sort_keys=True,
            ensure_ascii=False,
            separators=(",", ":"),
        )
        try:
            return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
        except UnicodeEncodeError:  # a lone surrogate, escaped in the captured JSON
            raise Skipped(Skip.BAD_ENCODING) from None


def said_in(message: dict[str, Any]) -> str:
    """What a message says: its text, and each call's name and arguments."""
    return message["content"] + "".join(
        call["function"]["name"] + call["function"]["arguments"]
        for call in message.get("tool_calls", ())
    )


def without_ids(message: dict[str, Any]) -> dict[str, Any]:
    kept = {key: value for key, value in message.items() if key not in IDS}
    if "tool_calls" in kept:
        kept["tool_calls"] = [without_ids(call) for call in kept["tool_calls"]]
    return kept


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


def arguments_text(arguments: Any) -> str:
    """A call's arguments as the JSON text the OpenAI form carries, secrets redacted."""
    if isinstance(arguments, dict):
        arguments = json.dumps(arguments, ensure_ascii=False)
    if not isinstance(arguments, str):
        raise Skipped(Skip.NOT_CHAT)
    return redact_json_text(arguments)


def tool_call(call: Any) -> dict[str, Any]:
    if not isinstance(call, dict) or call.get("type", "function") != "function":
        raise Skipped(Skip.NOT_CHAT)
    function = call.get("function")
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise Skipped(Skip.NOT_CHAT)
    kept: dict[str, Any] = {} if call.get("id") is None else {"id": str(call["id"])}
    arguments = arguments_text(function.get("arguments", "{}"))
    return {
        **kept,
        "type": "function",
        "function": {"name": function["name"], "arguments": arguments},
    }


def tool_calls_of(message: dict[str, Any]) -> list[dict[str, Any]]:
    """An assistant message's tool calls, the legacy `function_call` among them."""
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise Skipped(Skip.NOT_CHAT)
    legacy = message.get("function_call")
    if legacy:
        calls = [*calls, {"type": "function", "function": legacy}]
    return [tool_call(call) for call in calls]


def reasoning_of(message: dict[str, Any]) -> str | None:
    """An assistant turn's reasoning as text: a string, or the blocks some clients send back
    (SageMaker's Data Capture keeps the request as the client sent it), as the container
    joins them for the engine."""
    for name in ("reasoning_content", "reasoning"):
        if text := reasoning_text(message.get(name)):
            return text
    return None


def chat_message(message: Any) -> dict[str, Any]:
    """One message of the request (or the answer) in the OpenAI chat form."""
    if not isinstance(message, dict):
        raise Skipped(Skip.NOT_CHAT)
    role = message.get("role")
    if not isinstance(role, str) or role not in ROLES:
        raise Skipped(Skip.UNKNOWN_ROLE)
    role = ROLES[role]
    kept: dict[str, Any] = {"role": role, "content": text_of(message.get("content"))}
    if role == "tool":
        kept["content"] = redact_json_text(kept["content"])
        kept.update(
            {key: str(message[key]) for key in TOOL_RESULT_FIELDS if message.get(key) is not None}
        )
    elif role == "assistant":
        calls = tool_calls_of(message)
        if calls:
            kept["tool_calls"] = calls
        reasoning = reasoning_of(message)
        if reasoning is not None:
            kept["reasoning_content"] = reasoning
    return kept


def answer_message(response: dict[str, Any]) -> dict[str, Any]:
    """The assistant message of choice 0: its text, tool calls and reasoning."""
    if response.get("error"):
        raise Skipped(Skip.ERROR_STATUS)
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices:
        raise Skipped(Skip.NOT_CHAT)
    message = choices[0].get("message") if isinstance(choices[0], dict) else None
    if not isinstance(message, dict):
        raise Skipped(Skip.NOT_CHAT)
    answer = chat_message({**message, "role": "assistant"})
    if not answer["content"].strip() and "tool_calls" not in answer:
        raise Skipped(Skip.NO_ANSWER)
    return answer


def conversation_of(exchange: Exchange, system: str | None = None) -> Conversation:
    """The training conversation in one exchange; `system` is put first when the request
    has no system message."""
    request = exchange.request
    raw_messages = request.get("messages")
    if not isinstance(raw_messages, list) or not raw_messages:
        raise Skipped(Skip.NOT_CHAT)
    messages = [chat_message(message) for message in raw_messages]
    answer = answer_message(exchange.response)
    if (
        request.get("continue_final_message")
        and messages[-1]["role"] == "assistant"
        and "tool_calls" not in messages[-1]
    ):
        # The target continued the last assistant message rather than starting a new one.
        answer = {**answer, "content": messages.pop()["content"] + answer["content"]}
    if system and not any(message["role"] == "system" for message in messages):
        messages.insert(0, {"role": "system", "content": system})
    tools = request.get("tools")
    return Conversation(tuple([*messages, answer]), tuple(tools) if isinstance(tools, list) else ())
