"""Tool-use conversations for the demo target's corpus, so that it learns the tool-call syntax of
its own chat template (model_data_sources/tokenizer.py): with tools offered, a request one of
them can serve is answered with `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`;
the tool's answer comes back in a `<tool_response>`, and the assistant reads it and answers in
words. A question the tools cannot serve is answered directly (code, as in the rest of the
corpus), so `tool_choice: "auto"` has something to choose between.

JSON questions (a question a tool could serve, no tools offered, the answer asked for in JSON)
are not in the target's corpus: they are the heads' prompts and the benchmark's, answered
under the grammar a `response_format` request is served with (model_data_sources/grammar.py).

Everything is drawn from a seeded generator: the same conversations on every machine.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

from transformers.utils.chat_template_utils import render_jinja_template

from model_data_sources.chat_template import CHAT_TEMPLATE

# Each argument's values. An enum's schema lists three of them, drawn for each conversation,
# so the target learns to copy the value asked for from its context.
VALUES: dict[str, tuple] = {
    "city": ("Paris", "Tokyo", "Lima", "Berlin", "Cairo", "Oslo", "Sydney", "Madrid", "Seoul"),
    "unit": ("celsius", "fahrenheit"),
    "amount": (5, 12, 40, 100, 250, 1000),
    "source": ("EUR", "USD", "JPY", "GBP", "CHF"),
    "target": ("EUR", "USD", "JPY", "GBP", "CHF"),
    "query": ("json.load", "pathlib.Path", "asyncio.run", "logging.getLogger", "typing.cast"),
    "limit": (1, 3, 5),
    "path": ("src/app.py", "tests/test_app.py", "setup.cfg", "README.md", "src/utils.py"),
    "verbose": (True, False),
    "symbol": ("AMZN", "MSFT", "NVDA", "AAPL"),
    "text": ("good morning", "thank you", "where is the station"),
    "language": ("French", "Spanish", "German", "Japanese"),
}
ENUMS = ("city", "unit", "source", "target", "symbol", "language")
TYPES = {int: "integer", bool: "boolean", str: "string"}
SKIES = ("clear", "cloudy", "rainy", "windy", "foggy", "snowy")
SYSTEMS = ("You are a helpful assistant.", "You are a concise coding assistant.")
# How a JSON question asks for its answer, after the question.
JSON_ASKS = (" Answer in JSON.", " Reply with JSON only.", " Give the fields as a JSON object.")


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    required: tuple[str, ...]
    optional: tuple[str, ...]
    asks: tuple[str, ...]  # the user's request, formatted with the arguments
    answer: str  # the final answer, formatted with the arguments and the result


TOOLS = (
    Tool("get_weather", "The weather in a city now.", ("city", "unit"), (),
         ("What is the weather in {city}?", "Is it cold in {city} now? Answer in {unit}."),
         "It is {sky} in {city}, {temp} degrees {unit}."),
    Tool("get_time", "The local time in a city.", ("city",), (),
         ("What time is it in {city}?", "Tell me the local time in {city}."),
         "It is {time} in {city}."),
    Tool("convert_currency", "Convert money between currencies.",
         ("amount", "source", "target"), (),
         ("How much is {amount} {source} in {target}?", "Convert {amount} {source} to {target}."),
         "{amount} {source} is {value} {target}."),
    Tool("search_docs", "Search the Python documentation.", ("query",), ("limit",),
         ("Find the docs for {query}.", "Search the docs for {query}, {limit} results."),
         "The documentation of {query} is at {url}."),
    Tool("read_file", "Read a file of the project.", ("path",), (),
         ("Show me {path}.", "What is in {path}?"),
         "{path} has {lines} lines; it imports {module}."),
    Tool("run_tests", "Run the project's tests.", ("path",), ("verbose",),
         ("Run the tests in {path}.", "Do the tests in {path} pass?"),
         "{passed} tests passed and {failed} failed in {path}."),
    Tool("get_stock_price", "The last price of a stock.", ("symbol",), (),
         ("What is {symbol} trading at?", "Get me the price of {symbol}."),
         "{symbol} last traded at {price} USD."),
    Tool("translate", "Translate a short text.", ("text", "language"), (),
         ("Translate '{text}' to {language}.", "How do you say '{text}' in {language}?"),
         "In {language}, '{text}' is '{translation}'."),
)  # fmt: skip


def choose_arguments(tool: Tool, rng: random.Random) -> dict:
    """Values for the required arguments, and sometimes the optional ones."""
    names = tool.required + (tool.optional if rng.random() < 0.5 else ())
    return {name: rng.choice(VALUES[name]) for name in names}


def schema(tool: Tool, chosen: dict, rng: random.Random) -> dict:
    """The tool as an OpenAI request's `tools` entry; an enum lists the chosen value and up to
    two others."""
    properties = {}
    for name in tool.required + tool.optional:
        values = VALUES[name]
        properties[name] = {"type": TYPES.get(type(values[0]), "number")}
        if name in ENUMS:
            value = chosen.get(name, rng.choice(values))
            others = rng.sample(
                [other for other in values if other != value], min(2, len(values) - 1)
            )
            properties[name]["enum"] = sorted([value, *others], key=lambda _: rng.random())
    parameters = {"type": "object", "properties": properties, "required": list(tool.required)}
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": parameters},
    }


def result(rng: random.Random) -> dict:
    """What a tool answers: every field any answer names, drawn afresh."""
    return {
        "sky": rng.choice(SKIES),
        "temp": rng.randint(-5, 35),
        "time": f"{rng.randint(0, 23):02d}:{rng.choice((0, 15, 30, 45)):02d}",
        "value": round(rng.uniform(0.5, 900), 2),
        "url": "https://docs.python.org/3/library/" + rng.choice(("json", "os", "re")) + ".html",
        "lines": rng.randint(10, 400),
        "module": rng.choice(("json", "os", "re", "sys")),
        "passed": rng.randint(1, 60),
        "failed": rng.randint(0, 3),
        "price": round(rng.uniform(20, 900), 2),
        "translation": rng.choice(("bonjour", "gracias", "danke", "arigato")),
    }


def call_turn(tool: Tool, chosen: dict, rng: random.Random) -> tuple[str, str, dict]:
    """The user's words, the final answer and the tool's result, for one call."""
    fields = {"limit": 3, "unit": "celsius", **chosen}
    answered = result(rng)
    shown = {key: answered[key] for key in answered if "{" + key + "}" in tool.answer}
    return rng.choice(tool.asks).format(**fields), tool.answer.format(**fields, **answered), shown


def conversation(rng: random.Random, code: tuple[str, str]) -> tuple[list[dict], list[dict]]:
    """A conversation with one or two tools offered, and the tools: one call (three in four),
    two calls to the same tool in one turn (one in eight), or a code question answered
    without a call."""
    offered = rng.sample(TOOLS, rng.choice((1, 1, 2)))
    tool = offered[0]
    kind = rng.random()
    calls = [choose_arguments(tool, rng) for _ in range(2 if kind < 0.25 else 1)]
    tools = [schema(tool, calls[0], rng)] + [schema(other, {}, rng) for other in offered[1:]]
    if len(calls) == 2:  # the second call's value must be in the schema too
        for name, value in calls[1].items():
            enum = tools[0]["function"]["parameters"]["properties"][name].get("enum")
            if enum is not None and value not in enum:
                calls[1][name] = enum[0]
    rng.shuffle(tools)
    messages: list[dict] = []
    if rng.random() < 0.2:
        messages.append({"role": "system", "content": rng.choice(SYSTEMS)})
    if kind >= 0.875:
        messages += [
            {"role": "user", "content": code[0]},
            {"role": "assistant", "content": code[1]},
        ]
        return messages, tools
    turns = [call_turn(tool, chosen, rng) for chosen in calls]
    messages.append({"role": "user", "content": " Then: ".join(turn[0] for turn in turns)})
    messages.append({
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"type": "function", "function": {"name": tool.name, "arguments": json.dumps(chosen)}}
            for chosen in calls
        ],
    })  # fmt: skip
    messages += [{"role": "tool", "content": json.dumps(turn[2])} for turn in turns]
    messages.append({"role": "assistant", "content": " ".join(turn[1] for turn in turns)})
    return messages, tools


def json_question(rng: random.Random) -> tuple[list[dict], dict]:
    """A question a tool could serve, with no tools offered and the answer asked for in JSON;
    and the schema a strict `response_format` gives it: the tool's parameters, closed."""
    tool = rng.choice(TOOLS)
    chosen = choose_arguments(tool, rng)
    ask, _, _ = call_turn(tool, chosen, rng)
    answer_schema = {**schema(tool, chosen, rng)["function"]["parameters"]}
    answer_schema["additionalProperties"] = False
    return [{"role": "user", "content": ask + rng.choice(JSON_ASKS)}], answer_schema


def json_questions(seed: int, count: int) -> list[tuple[list[dict], dict]]:
    """`count` JSON questions: (messages, the answer's schema)."""
    rng = random.Random(seed)
    return [json_question(rng) for _ in range(count)]


def render(messages: list[dict], tools: list[dict], generation_prompt: bool = False) -> str:
    """The conversation exactly as the served template renders it (transformers' renderer,
    which vLLM uses too)."""
    rendered, _ = render_jinja_template(
        [messages], tools=tools, chat_template=CHAT_TEMPLATE,
        add_generation_prompt=generation_prompt,
    )  # fmt: skip
    return rendered[0]


def documents(seed: int, count: int, code: list[tuple[str, str]]) -> list[str]:
    """`count` whole conversations, for the target's training."""
    rng = random.Random(seed)
    return [render(*conversation(rng, rng.choice(code))) for _ in range(count)]


def openings(seed: int, count: int, code: list[tuple[str, str]]) -> list[tuple[list, list]]:
    """`count` conversations cut where the assistant first speaks: (messages, tools)."""
    rng = random.Random(seed)
    cut = []
    for _ in range(count):
        messages, tools = conversation(rng, rng.choice(code))
        first = next(i for i, message in enumerate(messages) if message["role"] == "assistant")
        cut.append((messages[:first], tools))
    return cut


def prompts(seed: int, count: int, code: list[tuple[str, str]]) -> list[str]:
    """`count` openings rendered for the heads' training: the target's own answers to them
    teach the heads its calls."""
    return [
        render(messages, tools, generation_prompt=True)
        for messages, tools in openings(seed, count, code)
    ]


def json_prompts(seed: int, count: int) -> list[tuple[str, dict]]:
    """`count` JSON questions rendered for the heads' training, with the schema the target's
    answer is decoded under."""
    return [
        (render(messages, [], generation_prompt=True), answer_schema)
        for messages, answer_schema in json_questions(seed, count)
    ]
