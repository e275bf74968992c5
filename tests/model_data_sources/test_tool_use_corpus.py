"""The agent prompts the demo heads learn from (model_data_sources/tool_use.py, grammar.py): a
JSON question's answer is decoded under the grammar the container's vLLM serves it with, and
the heads learn the tokens that grammar let through."""

from __future__ import annotations

import json
import random
import re

import jsonschema
import pytest
import torch
from tqdm import tqdm
from transformers import AutoTokenizer, LlamaForCausalLM

from harness.locations import RANDOM_DEMO_ROOT
from model_data_sources import tool_use
from model_data_sources.grammar import compile_schemas, constrained_labels, generate_constrained
from serving.engine_args.agents import JSON_MAX_WHITESPACE
from tests.support.schemas import CITY


def test_json_questions_ask_for_json_with_a_closed_schema():
    rng = random.Random(11)
    for _ in range(200):
        (message,), schema = tool_use.json_question(rng)
        assert message["role"] == "user" and message["content"].endswith(tool_use.JSON_ASKS)
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert set(schema["required"]) <= schema["properties"].keys()


@pytest.mark.engine  # the trained pair's target
def test_answers_follow_the_served_grammar_and_label_the_heads_with_its_choices():
    """The target's answer under the grammar is JSON with at most the container's bound of
    whitespace in each gap (as vLLM compiles it with max_whitespace_cnt), follows the schema
    and ends with the stop token; the
    heads' label after each answer position is the token the grammar let through, where the
    target's free choice differs."""
    model_dir = RANDOM_DEMO_ROOT / "model"
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    target = LlamaForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    (question, _), *_ = tool_use.json_prompts(5, 1)
    prompt = tokenizer(question, add_special_tokens=False)["input_ids"]
    (grammar,) = compile_schemas(tokenizer, target.config.vocab_size, [CITY])
    with tqdm(total=1, disable=True) as progress:
        (sequence,) = generate_constrained(target, [prompt], [grammar], 192, progress)
    answer = sequence[len(prompt) :]
    assert answer[-1] == tokenizer.eos_token_id
    text = tokenizer.decode(answer[:-1])
    parsed = json.loads(text)
    jsonschema.validate(parsed, CITY)
    between = re.sub(r'"(?:[^"\\]|\\.)*"', '""', text)
    assert max(map(len, re.findall(r"\s+", between)), default=0) <= JSON_MAX_WHITESPACE, text

    with torch.no_grad():
        free = target(input_ids=torch.tensor([sequence])).logits.argmax(-1)[0]
    labels = free.clone()
    constrained_labels(labels, sequence, len(prompt))
    assert labels[len(prompt) - 1 : len(sequence) - 1].tolist() == answer
    assert labels[: len(prompt) - 1].tolist() == free[: len(prompt) - 1].tolist()
    # A random target's free choice is not JSON: the grammar overrode it somewhere.
    assert free[len(prompt) - 1 : len(sequence) - 1].tolist() != answer
