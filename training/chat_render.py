"""A captured conversation as the target's chat template renders it for serving: the tokens
the head will be asked to draft.

A chat is one line of `python -m capture export`'s train.openai.jsonl: {"messages": [...],
"tools": [...]}. vLLM's chat route renders a request by passing its `tools` to the template
and by turning each assistant tool call's `arguments` from the JSON text of the OpenAI form
into an object first (vllm/renderers/chat_utils.py, `_postprocess_messages`: "tool-use chat
templates expect them" so); the template then writes the call in the model's own syntax
(`<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, `<|call|>`, ...). Rendering a
captured session the same way gives the same text the target produced and read.
"""

from __future__ import annotations

import copy
import json
from typing import Any

Chat = dict[str, Any]  # {"messages": [...], "tools": [...] (optional)}


def template_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages as vLLM hands them to the template: call arguments as objects."""
    messages = copy.deepcopy(messages)
    for message in messages:
        for call in message.get("tool_calls") or ():
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict) and isinstance(function.get("arguments"), str):
                try:
                    function["arguments"] = json.loads(function["arguments"])
                except ValueError:
                    pass  # not JSON: the template gets the text, as vLLM would refuse it
    return messages


def token_ids(encoded: Any) -> list[int]:
    # transformers 5 returns a BatchEncoding from apply_chat_template(tokenize=True).
    return list(encoded["input_ids"] if hasattr(encoded, "keys") else encoded)


def render_ids(
    tokenizer: Any,
    messages: list[dict[str, Any]],
    tools: list[Any] | None,
    add_generation_prompt: bool = False,
) -> list[int]:
    """The token ids of `messages` (with `tools`) rendered by the target's chat template."""
    return token_ids(
        tokenizer.apply_chat_template(
            template_messages(messages),
            tools=tools or None,
            add_generation_prompt=add_generation_prompt,
            tokenize=True,
        )
    )


def messages_of(chat: Chat) -> list[dict[str, Any]]:
    return chat["messages"]


def tools_of(chat: Chat) -> list[Any] | None:
    tools = chat.get("tools")
    return tools if isinstance(tools, list) and tools else None
