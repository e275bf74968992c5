"""One exchange as a training conversation in the OpenAI chat form, the answer last: text,
tool calls, tool results and reasoning."""

from __future__ import annotations

import json
from typing import Any

import pytest

from capture.conversations import conversation_of
from capture.types import Exchange, Skip, Skipped
from tests.support.capture import chat_answer, chat_request

ANSWER = {"role": "assistant", "content": "Learning with deep networks."}


def conversation(request: dict[str, Any], response: dict[str, Any] | None = None, **options):
    return conversation_of(Exchange(request, response or chat_answer()), **options)


def skip_reason(request: dict[str, Any], response: dict[str, Any] | None = None) -> Skip:
    with pytest.raises(Skipped) as skipped:
        conversation(request, response)
    return skipped.value.reason


def with_messages(*messages: dict[str, Any]) -> dict[str, Any]:
    return {"messages": list(messages), "temperature": 0.3}


def test_messages_then_answer() -> None:
    request = with_messages(
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi", "name": "ana"},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "What is deep learning?"},
    )
    assert conversation(request).messages == (
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "What is deep learning?"},
        ANSWER,
    )


def test_text_parts_are_joined_with_newlines() -> None:
    parts = [
        {"type": "text", "text": "Summarise:"},
        "a bare string part",
        {"type": "text", "text": "x"},
    ]
    found = conversation(with_messages({"role": "user", "content": parts}))
    assert found.messages[0] == {"role": "user", "content": "Summarise:\na bare string part\nx"}


def test_parts_in_the_answer_too() -> None:
    answer = chat_answer([{"type": "text", "text": "Deep"}, {"type": "text", "text": "nets"}])
    assert conversation(chat_request(), answer).answer == "Deep\nnets"


@pytest.mark.parametrize(
    "part",
    [
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
        {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
        {"type": "file", "file": {"file_id": "file-1"}},
    ],
)
def test_non_text_part(part: dict[str, Any]) -> None:
    content = [{"type": "text", "text": "What is this?"}, part]
    assert skip_reason(with_messages({"role": "user", "content": content})) is Skip.NON_TEXT_CONTENT


def test_developer_is_a_system_message() -> None:
    found = conversation(with_messages({"role": "developer", "content": "Be brief."}))
    assert found.messages[0] == {"role": "system", "content": "Be brief."}


CALL = {
    "id": "chatcmpl-tool-1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
}


def test_an_agent_session_is_kept_whole() -> None:
    """A call, its result, and the answer that called the next tool: every turn is kept, in
    the OpenAI chat form, with the request's tools."""
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]
    request = {
        **with_messages(
            {"role": "user", "content": "Weather in Paris, then Lima?"},
            {"role": "assistant", "content": None, "tool_calls": [CALL]},
            {"role": "tool", "tool_call_id": "chatcmpl-tool-1", "content": '{"sky": "clear"}'},
        ),
        "tools": tools,
        "tool_choice": "required",
    }
    lima = {**CALL, "id": "chatcmpl-tool-2"}
    lima["function"] = {"name": "get_weather", "arguments": '{"city": "Lima"}'}
    found = conversation(request, chat_answer(None, tool_calls=[lima]))
    assert found.messages == (
        {"role": "user", "content": "Weather in Paris, then Lima?"},
        {"role": "assistant", "content": "", "tool_calls": [CALL]},
        {"role": "tool", "content": '{"sky": "clear"}', "tool_call_id": "chatcmpl-tool-1"},
        {"role": "assistant", "content": "", "tool_calls": [lima]},
    )
    assert found.tools == tuple(tools)
    assert found.answer == 'get_weather{"city": "Lima"}'


def test_the_same_session_with_other_call_ids_is_a_duplicate() -> None:
    def session(call_id: str):
        call = {**CALL, "id": call_id}
        return conversation(
            with_messages({"role": "user", "content": "Paris?"}),
            chat_answer(None, tool_calls=[call]),
        )

    assert session("call-1").key() == session("call-2").key()
    assert session("call-1").messages[-1]["tool_calls"][0]["id"] == "call-1"


def test_legacy_function_calls_become_tool_calls() -> None:
    request = with_messages(
        {"role": "user", "content": "Paris?"},
        {"role": "assistant", "content": None, "function_call": CALL["function"]},
        {"role": "function", "name": "get_weather", "content": "clear"},
    )
    found = conversation(request)
    assert found.messages[1] == {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"type": "function", "function": CALL["function"]}],
    }
    assert found.messages[2] == {"role": "tool", "content": "clear", "name": "get_weather"}


def test_secrets_in_tool_arguments_and_results_are_redacted() -> None:
    secret_call = {
        **CALL,
        "function": {"name": "deploy", "arguments": '{"region": "eu", "api_key": "sk-live-1"}'},
    }
    request = with_messages(
        {"role": "user", "content": "Deploy."},
        {"role": "assistant", "content": None, "tool_calls": [secret_call]},
        {"role": "tool", "tool_call_id": "1", "content": '{"ok": true, "session_token": "t-9"}'},
    )
    answer = chat_answer(None, tool_calls=[secret_call])
    found = conversation(request, answer)
    text = repr(found.messages)
    assert "sk-live-1" not in text and "t-9" not in text
    assert json.loads(found.messages[-1]["tool_calls"][0]["function"]["arguments"]) == {
        "region": "eu",
        "api_key": "***",
    }
    assert json.loads(found.messages[2]["content"]) == {"ok": True, "session_token": "***"}


def test_reasoning_is_kept_on_every_assistant_turn() -> None:
    request = with_messages(
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello.", "reasoning": "Greet back."},
        {"role": "user", "content": "Bye"},
    )
    found = conversation(request)
    assert found.messages[1] == {
        "role": "assistant",
        "content": "Hello.",
        "reasoning_content": "Greet back.",
    }


def test_reasoning_sent_back_as_blocks_is_kept_as_its_text() -> None:
    # SageMaker's Data Capture holds the request as the client sent it, blocks and all.
    blocks = [{"type": "thinking", "thinking": "Greet back.", "signature": "c2ln"}]
    request = with_messages(
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello.", "reasoning": blocks},
        {"role": "user", "content": "Bye"},
    )
    assert conversation(request).messages[1]["reasoning_content"] == "Greet back."


@pytest.mark.parametrize(
    "call",
    [{"id": "call-1"}, {"type": "function", "function": {"arguments": "{}"}}, "get_weather"],
)
def test_a_call_without_a_function_name_is_not_chat(call: Any) -> None:
    request = with_messages({"role": "assistant", "content": None, "tool_calls": [call]})
    assert skip_reason(request) is Skip.NOT_CHAT


def test_unknown_role() -> None:
    assert skip_reason(with_messages({"role": "narrator", "content": "Once"})) is Skip.UNKNOWN_ROLE


@pytest.mark.parametrize(
    "request_body",
    [
        {"inputs": "What is deep learning?", "parameters": {"max_new_tokens": 64}},
        {"prompt": "What is deep learning?", "max_tokens": 64},
        {"messages": []},
        {"messages": "What is deep learning?"},
        {"messages": ["What is deep learning?"]},
    ],
)
def test_not_a_chat_request(request_body: dict[str, Any]) -> None:
    assert skip_reason(request_body) is Skip.NOT_CHAT


@pytest.mark.parametrize(
    "response",
    [
        {"object": "text_completion", "choices": [{"text": "Deep nets."}]},
        {"choices": []},
        {"predictions": [0.1]},
    ],
)
def test_not_a_chat_answer(response: dict[str, Any]) -> None:
    assert skip_reason(chat_request(), response) is Skip.NOT_CHAT


@pytest.mark.parametrize("content", [None, "", "  \n"])
def test_no_assistant_text(content: str | None) -> None:
    assert skip_reason(chat_request(), chat_answer(content)) is Skip.NO_ANSWER


def test_answer_that_is_an_error() -> None:
    answer = {**chat_answer("partial"), "error": {"message": "engine died"}}
    assert skip_reason(chat_request(), answer) is Skip.ERROR_STATUS


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_answer_keeps_the_reasoning(field: str) -> None:
    found = conversation(chat_request(), chat_answer("42.", **{field: "6 times 7."}))
    assert found.messages[-1] == {
        "role": "assistant",
        "content": "42.",
        "reasoning_content": "6 times 7.",
    }
    assert found.chars == len("What is deep learning?") + len("42.") + len("6 times 7.")


def test_system_prompt_added_only_where_none() -> None:
    plain = conversation(chat_request(), system="You are a helpful assistant.")
    assert plain.messages[0] == {"role": "system", "content": "You are a helpful assistant."}
    own = with_messages({"role": "user", "content": "Hi"}, {"role": "system", "content": "Mine"})
    kept = conversation(own, system="You are a helpful assistant.")
    assert [m["content"] for m in kept.messages[:2]] == ["Hi", "Mine"]


def test_continued_final_message_is_one_answer() -> None:
    request = with_messages(
        {"role": "user", "content": "Count to three."},
        {"role": "assistant", "content": "One, "},
    )
    request["continue_final_message"] = True
    found = conversation(request, chat_answer("two, three."))
    assert found.messages == (
        {"role": "user", "content": "Count to three."},
        {"role": "assistant", "content": "One, two, three."},
    )


def test_tools_are_kept() -> None:
    tools = [{"type": "function", "function": {"name": "add", "parameters": {}}}]
    assert conversation(chat_request(tools=tools)).tools == tuple(tools)


def test_key_ignores_json_spelling_and_sampling() -> None:
    first = conversation({"messages": [{"content": "Hi", "role": "user"}], "temperature": 0})
    second = conversation({"temperature": 1, "messages": [{"role": "user", "content": "Hi"}]})
    assert first.key() == second.key()
    other = conversation({"messages": [{"role": "user", "content": "Hi"}]}, chat_answer("Yo."))
    assert other.key() != first.key()
