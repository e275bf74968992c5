"""The structured workload: what agents send. Tool-use requests of the kind the demo target
learned (model_data_sources/tool_use.py, drawn with a seed of their own), in turn with
`tool_choice` auto, with `required`, and without tools a question answered in JSON under a
strict `response_format` json_schema (the tool's parameters; the heads learned such answers
under the same grammar, model_data_sources/grammar.py). Every answer is bound by a grammar, so
drafts the grammar forbids are rejected: the workload shows what that does to acceptance.

The `json` workload is its answers without tools, for a target whose template writes no tool
calls (the real pair: the container refuses tools for it): the same JSON questions, in turn
under the strict json_schema and under `json_object`.

Answers end where the grammar or the model ends them (no ignore_eos: past the end of a
structure the grammar allows nothing but EOS), so the runs are compared on the same greedy
answers, not on a fixed length.
"""

from __future__ import annotations

from typing import Any

SEED = 424242
COUNT = 96
KINDS = ("auto", "required", "json_schema")
# Code questions answered without a call, as the corpus has them: the bench's own instruction.
CODE = [("Complete the following Python function.\n\ndef add(a, b):\n", "```python\n```")]


def structured_payloads(num_prompts: int | None = None) -> list[dict[str, Any]]:
    from model_data_sources.tool_use import json_questions, openings

    count = num_prompts or COUNT
    questions = json_questions(SEED, count)
    payloads = []
    for index, (messages, tools) in enumerate(openings(SEED, count, CODE)):
        kind = KINDS[index % len(KINDS)]
        if kind == "json_schema":
            messages, schema = questions[index]
            payloads.append({"messages": messages, "response_format": json_schema_format(schema)})
        else:
            payloads.append({"messages": messages, "tools": tools, "tool_choice": kind})
    return payloads


def json_payloads(num_prompts: int | None = None) -> list[dict[str, Any]]:
    from model_data_sources.tool_use import json_questions

    kinds = ("json_schema", "json_object")
    return [
        {"messages": messages, "response_format": response_format(kinds[index % 2], schema)}
        for index, (messages, schema) in enumerate(json_questions(SEED, num_prompts or COUNT))
    ]


def response_format(kind: str, schema: dict) -> dict:
    """`json_object`, or else the strict json_schema of `schema`."""
    return {"type": "json_object"} if kind == "json_object" else json_schema_format(schema)


def json_schema_format(schema: dict) -> dict:
    """A strict `response_format` for answers of `schema`."""
    return {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema,
            "strict": True}}  # fmt: skip
