"""The two output formats: OpenAI messages, and ShareGPT as the speculators scripts read it."""

from __future__ import annotations

import json

from capture.conversations import Conversation
from capture.formats import json_line, openai_record, sharegpt_record

CONVERSATION = Conversation(
    (
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is deep learning?"},
        {"role": "assistant", "content": "Deep nets.", "reasoning_content": "Short answer."},
    )
)


def test_openai_messages() -> None:
    assert openai_record(CONVERSATION) == {"messages": [dict(m) for m in CONVERSATION.messages]}


def test_sharegpt_roles() -> None:
    assert sharegpt_record(CONVERSATION) == {
        "conversations": [
            {"from": "system", "value": "Be brief."},
            {"from": "human", "value": "What is deep learning?"},
            {"from": "gpt", "value": "Deep nets.", "reasoning_content": "Short answer."},
        ]
    }


def test_tools_in_both() -> None:
    tools = ({"type": "function", "function": {"name": "add"}},)
    conversation = Conversation(CONVERSATION.messages, tools)
    assert openai_record(conversation)["tools"] == list(tools)
    assert sharegpt_record(conversation)["tools"] == list(tools)
    assert "tools" not in openai_record(CONVERSATION)


def test_agent_turns_in_sharegpt_are_function_call_and_observation_turns() -> None:
    call = {"type": "function", "function": {"name": "get_time", "arguments": '{"city": "Oslo"}'}}
    conversation = Conversation(
        (
            {"role": "user", "content": "Time in Oslo and Lima?"},
            {"role": "assistant", "content": "Checking.", "tool_calls": [call]},
            {"role": "tool", "content": "09:00", "tool_call_id": "1"},
            {"role": "assistant", "content": "", "tool_calls": [call, call]},
        )
    )
    called = {"name": "get_time", "arguments": {"city": "Oslo"}}
    assert sharegpt_record(conversation)["conversations"] == [
        {"from": "human", "value": "Time in Oslo and Lima?"},
        {"from": "gpt", "value": "Checking."},
        {"from": "function_call", "value": json.dumps(called)},
        {"from": "observation", "value": "09:00"},
        {"from": "function_call", "value": json.dumps([called, called])},
    ]
    assert openai_record(conversation)["messages"][1]["tool_calls"] == [call]


def test_one_line_of_utf8_json() -> None:
    conversation = Conversation(({"role": "user", "content": "深度\n学习 🙂"},))
    line = json_line(openai_record(conversation))
    assert line.endswith("\n") and line.count("\n") == 1
    assert "深度" in line and json.loads(line) == openai_record(conversation)
