"""The demo target's agent corpus (model_data_sources/tool_use.py): what it teaches must be what
the served grammars allow, or the target and its heads learn text the grammar refuses."""

from __future__ import annotations

import json
import random

from model_data_sources import tool_use
from model_data_sources.tool_use import json_conversation, json_openings

TYPES = {"string": str, "integer": int, "boolean": bool}


def test_json_answers_are_compact_and_follow_their_schema():
    """A `response_format` answer is written by xgrammar without free whitespace: separators
    `,` and `:`. The corpus's JSON answers are written the same way, and fit the schema the
    benchmark sends with their question."""
    rng = random.Random(11)
    for _ in range(200):
        messages, tool = json_conversation(rng)
        question, answer = messages[0]["content"], messages[1]["content"]
        assert question.endswith(tool_use.JSON_ASKS)
        parsed = json.loads(answer)
        assert answer == json.dumps(parsed, separators=(",", ":"))
        parameters = tool["function"]["parameters"]
        assert set(parameters["required"]) <= parsed.keys() <= parameters["properties"].keys()
        for name, value in parsed.items():
            schema = parameters["properties"][name]
            assert type(value) is TYPES[schema["type"]], (name, value)
            assert value in schema.get("enum", [value]), (name, value, schema)
        # Keys in the schema's order, as the grammar writes them.
        order = [name for name in parameters["properties"] if name in parsed]
        assert list(parsed) == order


def test_json_questions_offer_no_tools_and_the_corpus_mixes_them_with_calls():
    documents = tool_use.documents(5, 400, [("Complete this.\n\ndef f():\n", "```python\n```")])
    asking_json = [doc for doc in documents if "<tools>" not in doc]
    calling = [doc for doc in documents if "<tool_call>" in doc]
    assert 0.15 < len(asking_json) / len(documents) < 0.35
    assert len(calling) > len(asking_json)
    for doc in asking_json:
        answer = doc.split("<|im_start|>assistant\n")[1].removesuffix("<|im_end|>\n")
        json.loads(answer)
    opened = json_openings(3, 4)
    assert all(messages[-1]["role"] == "user" for messages, _ in opened)
