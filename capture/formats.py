"""The two files a conversation is written to, one JSON object a line.

`train.openai.jsonl`: {"messages": [{"role": ..., "content": ...}, ...]}, the OpenAI chat
format, which SageMaker's speculative-decoding optimization job also reads.
`train.sharegpt.jsonl`: {"conversations": [{"from": "system"|"human"|"gpt", "value": ...}]},
the ShareGPT format the `speculators` data-generation scripts read (they map human to user
and gpt to assistant), as does SageMaker's optimization job.
Both carry the request's "tools" when it had any, and the answer's "reasoning_content".
"""

from __future__ import annotations

import json
from typing import Any

from capture.conversations import Conversation

OPENAI_FILE = "train.openai.jsonl"
SHAREGPT_FILE = "train.sharegpt.jsonl"
SHAREGPT_ROLES = {"system": "system", "user": "human", "assistant": "gpt"}


def openai_record(conversation: Conversation) -> dict[str, Any]:
    record: dict[str, Any] = {"messages": [dict(message) for message in conversation.messages]}
    if conversation.tools:
        record["tools"] = list(conversation.tools)
    return record


def sharegpt_turn(message: dict[str, str]) -> dict[str, str]:
    turn = {"from": SHAREGPT_ROLES[message["role"]], "value": message["content"]}
    if "reasoning_content" in message:
        turn["reasoning_content"] = message["reasoning_content"]
    return turn


def sharegpt_record(conversation: Conversation) -> dict[str, Any]:
    record: dict[str, Any] = {
        "conversations": [sharegpt_turn(message) for message in conversation.messages]
    }
    if conversation.tools:
        record["tools"] = list(conversation.tools)
    return record


def json_line(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False) + "\n"
