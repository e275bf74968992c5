"""The real pair's prompt bank: broad, never asking the same thing twice, and apart from the
held-out sets measured from elsewhere (HumanEval, the everyday questions)."""

from __future__ import annotations

from collections import Counter

from model_data_sources.smollm2 import prompt_bank, prompts
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
