"""The two files a conversation is written to, one JSON object a line.

`train.openai.jsonl`: {"messages": [{"role": ..., "content": ...}, ...], "tools": [...]}, the
OpenAI chat format, which SageMaker's speculative-decoding optimization job also reads: an
assistant's `tool_calls` (arguments as JSON text) and `reasoning_content`, a tool result's
`tool_call_id`. Rendered with the target's chat template (training/chat_render.py), it is
the text the target was served.
`train.sharegpt.jsonl`: {"conversations": [{"from": "system"|"human"|"gpt", "value": ...}]},
the ShareGPT format the `speculators` data-generation scripts read (they map human to user
and gpt to assistant), as does SageMaker's optimization job. Agent turns take the ShareGPT
convention of the tool-use datasets (LLaMA-Factory's): an assistant's calls are a
"function_call" turn whose value is the call as JSON ({"name", "arguments"}, a list when it
made several), after a "gpt" turn for any text it said first; a tool result is an
"observation" turn.
Both carry the request's "tools" when it had any, and each assistant's "reasoning_content".
"""

from __future__ import annotations

import json
from typing import Any

from capture.conversations import Conversation

OPENAI_FILE = "train.openai.jsonl"
SHAREGPT_FILE = "train.sharegpt.jsonl"
SHAREGPT_ROLES = {"system": "system", "user": "human", "assistant": "gpt", "tool": "observation"}
FUNCTION_CALL = "function_call"


def openai_record(conversation: Conversation) -> dict[str, Any]:
    record: dict[str, Any] = {"messages": [dict(message) for message in conversation.messages]}
    if conversation.tools:
        record["tools"] = list(conversation.tools)
    return record


def sharegpt_turns(message: dict[str, Any]) -> list[dict[str, str]]:
    """One message's turns: text, then the calls it made."""
    calls = message.get("tool_calls")
    turns = []
    if message["content"] or not calls:
        turns.append({"from": SHAREGPT_ROLES[message["role"]], "value": message["content"]})
    if calls:
        called = [call_value(call) for call in calls]
        value = called[0] if len(called) == 1 else called
        turns.append({"from": FUNCTION_CALL, "value": json.dumps(value, ensure_ascii=False)})
    if "reasoning_content" in message:
        turns[0]["reasoning_content"] = message["reasoning_content"]
    return turns


def call_value(call: dict[str, Any]) -> dict[str, Any]:
    """A call as the ShareGPT tool-use datasets write it: arguments as an object."""
    arguments = call["function"]["arguments"]
    try:
        arguments = json.loads(arguments)
    except ValueError:
        pass  # not JSON: kept as the text the model wrote
    return {"name": call["function"]["name"], "arguments": arguments}


def sharegpt_record(conversation: Conversation) -> dict[str, Any]:
    record: dict[str, Any] = {
        "conversations": [
            turn for message in conversation.messages for turn in sharegpt_turns(message)
        ]
    }
    if conversation.tools:
        record["tools"] = list(conversation.tools)
    return record


def json_line(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False) + "\n"
