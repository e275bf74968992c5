"""The real pair's prompt bank: broad, never asking the same thing twice, and apart from the
held-out sets measured from elsewhere (HumanEval, the everyday questions); agents' sessions
among them, answered by the real target as the endpoint answers them."""

from __future__ import annotations

import hashlib
import json
import lzma
from collections import Counter

import jsonschema
import pytest

from model_data_sources.smollm2 import answer_bank, prompt_bank, prompts, tool_sessions
from workloads.prompts import everyday_questions, humaneval_prompts


def test_the_bank_is_ten_times_the_first_recipes_prompts_in_every_kind() -> None:
    bank = prompt_bank.conversations()
    assert len(bank) >= 10 * len(prompts.conversations())
    kinds = Counter(conversation["kind"] for conversation in bank)
    assert set(kinds) == set(prompt_bank.COUNTS)
    assert min(kinds.values()) >= 200
    turns = [len(c["messages"]) for c in bank if c["kind"] == "multi_turn"]
    assert set(turns) == {3, 5}  # one or two follow-ups, each answer left to the target


def test_no_first_question_is_asked_twice_and_none_is_held_out_from_elsewhere() -> None:
    firsts = [c["messages"][0]["content"] for c in prompt_bank.conversations()]
    repeated = [text for text, count in Counter(firsts).items() if count > 1]
    assert not repeated
    text = "\n".join(firsts)
    assert not [question for question in everyday_questions() if question in text]
    assert not [prompt for prompt in humaneval_prompts() if prompt.strip() in text]


def test_agents_sessions_offer_the_tool_they_need_in_the_shapes_agents_send() -> None:
    sessions = [c for c in prompt_bank.conversations() if c["kind"] == "tools"]
    shapes = Counter(session["shape"] for session in sessions)
    for shape, share in tool_sessions.SHAPES.items():
        assert abs(shapes[shape] - share * len(sessions)) <= 1, shapes
    for session in sessions:
        offered = [tool["function"]["name"] for tool in session["tools"]]
        assert len(set(offered)) == len(offered) and 1 <= len(offered) <= 4
        if session["shape"] == "named":
            assert session["tool_choice"]["function"]["name"] in offered
        else:
            assert session["tool_choice"] == session["shape"]
    for tool in tool_sessions.TOOLS.values():
        jsonschema.Draft202012Validator.check_schema(tool["function"]["parameters"])


def test_a_tool_answers_the_same_call_the_same_way() -> None:
    weather = tool_sessions.result("get_weather", {"city": "Oslo", "unit": "fahrenheit"})
    assert weather == tool_sessions.result("get_weather", {"unit": "fahrenheit", "city": "Oslo"})
    assert weather["city"] == "Oslo" and weather["unit"] == "fahrenheit"
    assert tool_sessions.result("calculate", {"expression": "(12 + 7) * 3"})["result"] == 57
    assert "error" in tool_sessions.result("calculate", {"expression": "__import__('os')"})


def session_of(shape: str) -> dict:
    sessions = [c for c in prompt_bank.conversations() if c["kind"] == "tools"]
    return next(c for c in sessions if c["shape"] == shape)


@pytest.mark.parametrize("shape", ["named", "required"])
def test_the_real_target_answers_an_agents_session_as_the_endpoint_does(real, shape) -> None:
    """Through the container `make serve` runs: a named call ends the session; a required
    call gets the tool's result back and the target's answer to it."""
    session = session_of(shape)
    record = answer_bank.answered(f"{real.url}/v1/chat/completions", session)
    assert record["tools"] == session["tools"] and record["kind"] == "tools"
    call = record["messages"][1]
    if not call.get("tool_calls"):  # the answer ran to max_tokens inside the call
        assert record["finish"] == ["length"], record
        return
    (made,) = call["tool_calls"]
    schema = next(
        tool["function"]["parameters"]
        for tool in session["tools"]
        if tool["function"]["name"] == made["function"]["name"]
    )
    jsonschema.validate(json.loads(made["function"]["arguments"]), schema)
    if shape == "named":
        assert made["function"]["name"] == session["tool_choice"]["function"]["name"]
        assert len(record["messages"]) == 2 and record["finish"] == ["stop"]
    else:
        result, answer = record["messages"][2:]
        assert result["role"] == "tool" and result["tool_call_id"] == made["id"] == "call_1"
        assert answer["role"] == "assistant" and len(record["finish"]) == 2


def test_the_answers_kept_in_the_repository_answer_what_the_bank_asks() -> None:
    """Each shipped shard is the file its manifest entry names, and answers, in order, the
    conversations the bank asks in that place: a change to the bank's order would train
    heads on answers to other questions."""
    bank = prompt_bank.conversations()
    manifest = answer_bank.read_manifest()
    assert answer_bank.stale_shards(bank, manifest) == []
    asked = answer_bank.shards(bank)
    for name, figures in manifest["shards"].items():
        path = answer_bank.ANSWERS / name
        assert hashlib.sha256(path.read_bytes()).hexdigest() == figures["sha256"], name
        answered = [json.loads(line) for line in lzma.decompress(path.read_bytes()).splitlines()]
        questions = asked[int(name.split("-")[1].split(".")[0])]
        assert len(answered) == figures["conversations"] == len(questions), name
        for question, answer in zip(questions, answered, strict=True):
            users = [m for m in answer["messages"] if m["role"] in ("system", "user")]
            assert users == [m for m in question["messages"] if m["role"] in ("system", "user")]
            assert answer["messages"][-1]["role"] == "assistant", name


def test_the_first_shards_answered_hold_the_kinds_an_endpoint_serves() -> None:
    """The bank keeps each kind together; answered in answer_order, the first eight shards
    (under an hour of answering on two cores) already hold most kinds, agents' sessions
    among them, and every shard comes once."""
    asked = answer_bank.shards(prompt_bank.conversations())
    order = answer_bank.answer_order(len(asked))
    assert sorted(order) == list(range(len(asked)))
    kinds = Counter(c["kind"] for index in order[:8] for c in asked[index])
    assert {"chat", "code", "json", "tools"} <= set(kinds)
    assert max(kinds.values()) <= 0.4 * sum(kinds.values())
