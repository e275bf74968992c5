"""A captured conversation as the target's chat template renders it for serving: the tokens
the head will be asked to draft.

A chat is one line of `python -m capture export`'s train.openai.jsonl: {"messages": [...],
"tools": [...]}. vLLM's chat route renders a request by passing its `tools` to the template
and by turning each assistant tool call's `arguments` from the JSON text of the OpenAI form
into an object first (vllm/renderers/chat_utils.py, `_postprocess_messages`: "tool-use chat
templates expect them" so); the template then writes the call in the model's own syntax
(`<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, `<|call|>`, ...). Rendering a
captured session the same way gives the same text the target produced and read.

The template is the one the serving container gives the engine: the target's own, or, for a
ChatML template with no tool syntax, the one the container writes around it with Qwen2.5's
tools section (serving/engine_args/chatml_tools.py), which renders every chat without tools
byte for byte as the target's own does and every tool call as the endpoint served it.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
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


def served_chat_template(target: Path) -> str | None:
    """The chat template the serving container writes for `target` (its default settings),
    or None where it serves the target's own."""
    from serving.engine_args.agents import agent_flags

    return agent_flags({}, target, []).chat_template


def serving_tokenizer(target: Path) -> Any:
    """The target's tokenizer, rendering chats with the template the container serves."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(target)
    if (template := served_chat_template(target)) is not None:
        tokenizer.chat_template = template
    return tokenizer
