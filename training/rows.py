"""Training rows from captured conversations: one row per assistant turn, the conversation up
to and including it tokenized with the target's own chat template, the loss on the answer's
tokens only. Rows come in the format speculators' prepare-data passes through as it is
(`input_ids`, `loss_mask`), so no render server is needed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from training.contract import ContractError


@dataclass(frozen=True)
class Row:
    input_ids: list[int]
    loss_mask: list[int]

    def record(self) -> dict[str, list[int]]:
        return {"input_ids": self.input_ids, "loss_mask": self.loss_mask}


def conversations(channel: Path) -> Iterator[list[dict[str, Any]]]:
    """The `messages` of every JSONL line in the channel (capture export's train.openai.jsonl,
    or any file of OpenAI chat records)."""
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
                yield messages


def token_ids(encoded: Any) -> list[int]:
    # transformers 5 returns a BatchEncoding from apply_chat_template(tokenize=True).
    return list(encoded["input_ids"] if hasattr(encoded, "keys") else encoded)


def rows_of(tokenizer: Any, messages: list[dict[str, Any]], max_length: int) -> Iterator[Row]:
    for turn, message in enumerate(messages):
        if message.get("role") != "assistant" or turn == 0:
            continue
        prompt = token_ids(
            tokenizer.apply_chat_template(
                messages[:turn], add_generation_prompt=True, tokenize=True
            )
        )
        whole = token_ids(tokenizer.apply_chat_template(messages[: turn + 1], tokenize=True))
        if whole[: len(prompt)] != prompt or len(whole) <= len(prompt):
            continue  # a template that rewrites earlier turns: no clean answer span
        whole = whole[:max_length]
        answer_tokens = len(whole) - len(prompt)
        if answer_tokens > 0:
            yield Row(whole, [0] * len(prompt) + [1] * answer_tokens)


def is_held_out(messages: list[dict[str, Any]], fraction: float, seed: int) -> bool:
    """A stable split by the conversation's content: the same rows are held out on a retry."""
    digest = hashlib.sha256(f"{seed}:{json.dumps(messages, sort_keys=True)}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


@dataclass(frozen=True)
class Split:
    train: list[list[dict[str, Any]]]  # conversations to learn from
    held_out: list[list[dict[str, Any]]]  # conversations whose prompts measure acceptance


def split(channel: Path, fraction: float, seed: int) -> Split:
    train: list[list[dict[str, Any]]] = []
    held_out: list[list[dict[str, Any]]] = []
    for messages in conversations(channel):
        (held_out if is_held_out(messages, fraction, seed) else train).append(messages)
    return Split(train, held_out)


def tokenized(
    tokenizer: Any, conversations: list[list[dict[str, Any]]], max_length: int
) -> list[Row]:
    """Rows of the conversations' own answers."""
    return [row for messages in conversations for row in rows_of(tokenizer, messages, max_length)]


def no_rows(train_dir: Path) -> ContractError:
    return ContractError(
        f"the train channel ({train_dir}) gave no conversation with an assistant answer "
        "to learn from; export captured traffic that has answers."
    )


def write_rows(rows: list[Row], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row.record()) + "\n" for row in rows))
    return path
