"""The trainer renders a conversation as the endpoint served it: on a target whose ChatML
template has no tool syntax (the real pair's SmolLM2-135M-Instruct), the head learns an agent
session's call and its answer after the tool's result in the tools section and `<tool_call>`
layout the container serves (serving/engine_args/chatml_tools.py), and a chat without tools
in the very tokens the target's own template gives."""

from __future__ import annotations

import pytest

from harness.locations import REAL_ROOT
from tests.serving.test_chatml_tools import TOOL
from training.chat_render import served_chat_template, serving_tokenizer
from training.rows import rows_of

TARGET = REAL_ROOT / "model"
TOOLS = [TOOL]
SESSION = {
    "tools": TOOLS,
    "messages": [
        {"role": "user", "content": "Is it raining in Lisbon?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Lisbon"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"conditions": "light rain"}'},
        {"role": "assistant", "content": "Yes, there is light rain in Lisbon."},
    ],
}
CHAT = {
    "messages": [
        {"role": "user", "content": "What is deep learning?"},
        {"role": "assistant", "content": "Deep learning trains layered neural networks."},
    ]
}

pytestmark = pytest.mark.skipif(
    not (TARGET / "tokenizer.json").is_file(),
    reason="the real pair is not built here (make real-model); make test builds it",
)


def learned(tokenizer, chat) -> list[tuple[str, str]]:
    """Each row as (what the head reads before the answer, the answer it learns)."""
    texts = []
    for row in rows_of(tokenizer, chat, max_length=4096):
        start = row.loss_mask.index(1)
        texts.append(
            (tokenizer.decode(row.input_ids[:start]), tokenizer.decode(row.input_ids[start:]))
        )
    return texts


def test_an_agent_sessions_call_and_answer_are_learned_as_the_endpoint_serves_them() -> None:
    assert served_chat_template(TARGET) is not None  # the container writes one for it
    (call_prompt, call), (answer_prompt, answer) = learned(serving_tokenizer(TARGET), SESSION)
    # The tools are shown, and the call is written in the syntax the hermes parser reads.
    assert "<tools>" in call_prompt and '"name": "get_weather"' in call_prompt
    assert call.startswith("<tool_call>\n") and '"city": "Lisbon"' in call
    assert "</tool_call>" in call
    # The answer after the tool's result, which reaches the model in a user turn.
    assert "<tool_response>\n" in answer_prompt and "light rain" in answer_prompt
    assert answer.startswith("Yes, there is light rain in Lisbon.")


def test_a_chat_without_tools_is_learned_in_the_targets_own_tokens() -> None:
    from transformers import AutoTokenizer

    own = AutoTokenizer.from_pretrained(TARGET)
    served = serving_tokenizer(TARGET)
    assert [r.record() for r in rows_of(served, CHAT, 4096)] == [
        r.record() for r in rows_of(own, CHAT, 4096)
    ]
