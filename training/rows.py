"""Training rows from captured conversations: one row per assistant turn, the conversation up
to and including it tokenized with the target's own chat template and the request's tools, as
vLLM rendered it for serving (chat_render.py), the loss on the answer's tokens only. An agent
session's turns that call tools are rows too: the calls are what the head will draft. Rows
come in the format speculators' prepare-data passes through as it is (`input_ids`,
`loss_mask`), so no render server is needed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from training.chat_render import Chat, render_ids, tools_of
from training.contract import ContractError


@dataclass(frozen=True)
class Row:
    input_ids: list[int]
    loss_mask: list[int]

    def record(self) -> dict[str, list[int]]:
        return {"input_ids": self.input_ids, "loss_mask": self.loss_mask}


def conversations(channel: Path) -> Iterator[Chat]:
    """Every JSONL line of the channel with `messages` (capture export's train.openai.jsonl,
    or any file of OpenAI chat records), with its `tools` when it has them."""
    files = sorted(channel.glob("*.jsonl"))
    if not files:
        raise ContractError(
            f"the {channel.name} channel ({channel}) has no .jsonl file; give it the output "
            "of `python -m capture export` (train.openai.jsonl)."
        )
    for path in files:
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                raise ContractError(f"{path.name} line {number} is not JSON.") from None
            messages = record.get("messages") if isinstance(record, dict) else None
            if isinstance(messages, list) and messages:
                tools = tools_of(record)
                yield {"messages": messages, **({"tools": tools} if tools else {})}


def rows_of(tokenizer: Any, chat: Chat, max_length: int) -> Iterator[Row]:
    messages, tools = chat["messages"], tools_of(chat)
    for turn, message in enumerate(messages):
        if message.get("role") != "assistant" or turn == 0:
            continue
        prompt = render_ids(tokenizer, messages[:turn], tools, add_generation_prompt=True)
        whole = render_ids(tokenizer, messages[: turn + 1], tools)
        if whole[: len(prompt)] != prompt or len(whole) <= len(prompt):
            continue  # a template that rewrites earlier turns: no clean answer span
        whole = whole[:max_length]
        answer_tokens = len(whole) - len(prompt)
        if answer_tokens > 0:
            yield Row(whole, [0] * len(prompt) + [1] * answer_tokens)


def is_held_out(chat: Chat, fraction: float, seed: int) -> bool:
    """A stable split by the conversation's messages: the same rows are held out on a retry."""
    text = json.dumps(chat["messages"], sort_keys=True)
    digest = hashlib.sha256(f"{seed}:{text}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


@dataclass(frozen=True)
class Split:
    train: list[Chat]  # conversations to learn from
    held_out: list[Chat]  # conversations whose prompts measure acceptance


def split(channel: Path, fraction: float, seed: int) -> Split:
    train: list[Chat] = []
    held_out: list[Chat] = []
    for chat in conversations(channel):
        (held_out if is_held_out(chat, fraction, seed) else train).append(chat)
    return Split(train, held_out)


def tokenized(tokenizer: Any, conversations: list[Chat], max_length: int) -> list[Row]:
    """Rows of the conversations' own answers."""
    return [row for chat in conversations for row in rows_of(tokenizer, chat, max_length)]


def no_rows(train_dir: Path) -> ContractError:
    return ContractError(
        f"the train channel ({train_dir}) gave no conversation with an assistant answer "
        "to learn from; export captured traffic that has answers."
    )


def write_rows(rows: list[Row], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row.record()) + "\n" for row in rows))
    return path
