"""Fidelity of constrained answers: does an answer under a grammar say what the model says
freely, for as long as what it says freely is valid?

The probes are tool-use requests of the kind the demo target learned (model_data_sources/
tool_use.py, a seed of their own). Each prompt is rendered as the chat route renders it
(training/chat_render.py: the target's template with the tools) and answered freely by the
completions route, greedy: no grammar at all. Where the free answer opens a call in the
target's own syntax (`<tool_call>\n{"name": ...`), the same prompt is answered again under
each grammar:
- `auto`, `named`, `required`: the chat route with the tools and that `tool_choice` (under
  --tool-strict-level parameter every call is held to its schema, `auto` too; `named` names
  the function the free answer called, when it is one offered);
- `json_schema`: the completions route, the prompt followed by the free answer's opening
  `<tool_call>` line, under `structured_outputs.json` = a call's schema (any offered
  function's {"name", "arguments"}).
The free call's JSON is valid up to some character: the longest prefix valid for the call's
schema with any spacing (JSON allows whitespace between tokens; compiled here with xgrammar).
A constrained answer *follows* the free one when it equals it up to there (for `auto`, over
every call the free answer made, one per line; `required` ends after one call in vLLM 0.32),
and is *equal* when the free calls are valid whole and the constrained answer is the same,
byte for byte. Greedy
decoding under a grammar that allows what the model prefers must do both; a grammar that
forbids the model's spacing parts from it at its first separator.

The demo target's free calls are rarely valid whole for the tools' schemas (a function that
is not offered, a value outside an enum): they show "follows". One more kind shows "equal":
- `call_shape`: the completions route as `json_schema`, under the schema of any call
  ({"name": a string, "arguments": an object}), for which the free calls are valid whole.

And what a `response_format` request asks: JSON questions (a question a tool could serve, no
tools, "Answer in JSON."; model_data_sources/tool_use.py, the same seed), each answered freely
by the completions route and again by the chat route under
- `response_format`: its strict json_schema (the tool's parameters, closed);
- `json_object`: any JSON object.
Where the free answer is valid for the schema whole, the constrained one must be the same.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

SEED = 515151
COUNT = 24
MAX_TOKENS = 96
CALL_KINDS = ("auto", "named", "required", "json_schema", "call_shape")
JSON_KINDS = ("response_format", "json_object")
KINDS = CALL_KINDS + JSON_KINDS
ANY_OBJECT = {"type": "object"}
# Any call: what a JSON-schema request for "a function call" asks, without the tools' enums.
CALL_SHAPE = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "arguments": {"type": "object"}},
    "required": ["name", "arguments"],
    "additionalProperties": False,
}
OPENING, CLOSING = "<tool_call>\n", "\n</tool_call>"


@dataclass
class Tally:
    """One kind's counts, and where each constrained answer left a valid free one."""

    probes: int = 0
    follows: int = 0
    whole: int = 0  # free calls valid whole
    equal: int = 0
    departures: list[str] = field(default_factory=list)

    def add(self, free: str, valid: int, complete: bool, constrained: str) -> None:
        """`free` is valid up to `valid` characters (all of it and `complete`: valid whole)."""
        self.probes += 1
        if constrained[:valid] == free[:valid]:
            self.follows += 1
        else:
            self.departures.append(described(free, constrained))
        if complete:
            self.whole += 1
            self.equal += constrained == free


@dataclass(frozen=True)
class Free:
    """A free answer's calls: the tokens up to the first call's JSON, the first call's JSON,
    and the text of every call from there (`call}\n</tool_call>\n<tool_call>\n{...`)."""

    opening_ids: list[int]
    call: str
    calls: str
    boundaries: tuple[int, ...]  # where the free answer's tokens end in `calls`

    def token_boundary(self, valid: int) -> int:
        return last_boundary(self.boundaries, valid)


def last_boundary(boundaries: Sequence[int], valid: int) -> int:
    """A valid prefix cut back to the free answer's last whole token in it: a grammar admits
    whole tokens, so a token the prefix ends inside is one it must refuse."""
    return max(boundary for boundary in boundaries if boundary <= valid)


def probes(count: int) -> list[tuple[list[dict], list[dict]]]:
    from model_data_sources.tool_use import openings
    from workloads.structured import CODE

    return openings(SEED, count, CODE)


def json_probes(count: int) -> list[tuple[list[dict], dict]]:
    from model_data_sources.tool_use import json_questions

    return json_questions(SEED, count)


def envelope(tool: dict) -> dict:
    """A call of `tool` as the target writes it: {"name": ..., "arguments": {...}}."""
    function = tool["function"]
    return {
        "type": "object",
        "properties": {
            "name": {"const": function["name"]},
            "arguments": function.get("parameters") or {"type": "object"},
        },
        "required": ["name", "arguments"],
        "additionalProperties": False,
    }


def call_schema(tools: Sequence[dict], name: str | None = None) -> dict:
    """A call of any tool offered (or of the one named)."""
    chosen = [tool for tool in tools if name is None or tool["function"]["name"] == name]
    return {"anyOf": [envelope(tool) for tool in chosen]}


def first_difference(free: str, constrained: str) -> int:
    for index, (a, b) in enumerate(zip(free, constrained, strict=False)):
        if a != b:
            return index
    return min(len(free), len(constrained))


def described(free: str, constrained: str) -> str:
    """Both texts around where they part."""
    at = first_difference(free, constrained)
    window = slice(max(0, at - 24), at + 16)
    return f"free {free[window]!r} / constrained {constrained[window]!r}"


class Grammar:
    """What is valid for a JSON schema, whatever its spacing: xgrammar's grammar of the schema
    with any whitespace between tokens (JSON allows it), not the container's."""

    def __init__(self, tokenizer: Any):
        import xgrammar as xgr

        self.xgr = xgr
        info = xgr.TokenizerInfo.from_huggingface(
            tokenizer, stop_token_ids=[tokenizer.eos_token_id]
        )
        self.compiler = xgr.GrammarCompiler(info, max_threads=1)
        self.stop = tokenizer.eos_token_id

    def valid_prefix(self, schema: dict, text: str) -> tuple[int, bool]:
        """How many characters of `text` the schema's grammar accepts, and whether it
        accepts all of it as a whole answer."""
        matcher = self.xgr.GrammarMatcher(
            self.compiler.compile_json_schema(json.dumps(schema), any_whitespace=True)
        )
        for index, character in enumerate(text):
            if not matcher.accept_string(character):
                return index, False
        return len(text), matcher.accept_token(self.stop)


class Prober:
    """Free and constrained answers from one container (its front's /v1 routes)."""

    def __init__(self, url: str, tokenizer: Any, max_tokens: int = MAX_TOKENS):
        self.url = url.rstrip("/")
        self.http = httpx.Client(timeout=600)
        self.tokenizer = tokenizer
        self.grammar = Grammar(tokenizer)
        self.max_tokens = max_tokens

    def post(self, route: str, body: dict) -> dict:
        body = {**body, "temperature": 0, "max_tokens": self.max_tokens, "return_token_ids": True}
        answer = self.http.post(f"{self.url}/v1/{route}", json=body)
        answer.raise_for_status()
        return answer.json()["choices"][0]

    def answer_ids(self, choice: dict) -> list[int]:
        """The answer's token ids, without the stop token that ended it."""
        ids = choice["token_ids"]
        return ids[:-1] if ids and ids[-1] == self.tokenizer.eos_token_id else ids

    def text(self, choice: dict) -> str:
        return self.tokenizer.decode(self.answer_ids(choice))

    def free(self, prompt_ids: list[int]) -> Free | None:
        """The free answer's call, if it opens with one."""
        choice = self.post("completions", {"prompt": prompt_ids})
        ids = choice["token_ids"]
        opening = next(
            (n for n in range(1, len(ids)) if self.tokenizer.decode(ids[:n]) == OPENING), None
        )
        if opening is None:
            return None
        rest_ids = ids[opening:]
        rest = self.text({"token_ids": rest_ids})
        return Free(ids[:opening], call_text(rest), rest.rstrip(), self.boundaries(rest_ids))

    def boundaries(self, ids: list[int]) -> tuple[int, ...]:
        """Where each of the tokens `ids` ends in their text."""
        return tuple(len(self.tokenizer.decode(ids[:n])) for n in range(len(ids) + 1))

    def measure(self, count: int) -> tuple[dict[str, Tally], int]:
        """Each kind's tally over `count` probes of each set, and how many free answers
        opened a call."""
        tallies = {kind: Tally() for kind in KINDS}
        calls = self.measure_calls(count, tallies)
        self.measure_json(count, tallies)
        return tallies, calls

    def measure_json(self, count: int, tallies: dict[str, Tally]) -> None:
        """JSON questions, free and under a response_format."""
        from training.chat_render import render_ids
        from workloads.structured import response_format

        for messages, schema in json_probes(count):
            prompt_ids = render_ids(self.tokenizer, messages, None, add_generation_prompt=True)
            ids = self.answer_ids(self.post("completions", {"prompt": prompt_ids}))
            free = self.tokenizer.decode(ids).rstrip()
            boundaries = self.boundaries(ids)
            for kind in JSON_KINDS:
                body = {"messages": messages, "response_format": response_format(kind, schema)}
                constrained = self.text(self.post("chat/completions", body)).rstrip()
                valid, complete = self.valid_prefix(
                    ANY_OBJECT if kind == "json_object" else schema, free
                )
                tallies[kind].add(free, last_boundary(boundaries, valid), complete, constrained)

    def measure_calls(self, count: int, tallies: dict[str, Tally]) -> int:
        """Tool-use openings, free and under each grammar: how many free answers opened a
        call."""
        from training.chat_render import render_ids

        calls = 0
        for messages, tools in probes(count):
            prompt_ids = render_ids(self.tokenizer, messages, tools, add_generation_prompt=True)
            free = self.free(prompt_ids)
            if free is None:
                continue
            calls += 1
            schema = call_schema(tools)
            valid, complete = self.grammar.valid_prefix(schema, free.call)
            # auto may make several calls: it answers for every call. vLLM's required ends
            # after the first (its Hermes-style tag joins calls with no separator, and the
            # templates write a newline), so it answers for one, as named does.
            every, whole = self.valid_calls(schema, free.calls)
            choices: dict[str, Any] = {"auto": "auto", "required": "required"}
            name = named_in(free.call, tools)
            if name is not None:
                choices["named"] = {"type": "function", "function": {"name": name}}
            for kind, choice in choices.items():
                body = {"messages": messages, "tools": tools, "tool_choice": choice}
                answer = self.text(self.post("chat/completions", body)).rstrip()
                answer = answer.removeprefix(OPENING) if answer.startswith(OPENING) else answer
                if kind in ("named", "required"):  # one call
                    tallies[kind].add(
                        free.call, free.token_boundary(valid), complete, call_text(answer)
                    )
                else:
                    tallies[kind].add(free.calls, free.token_boundary(every), whole, answer)
            for kind, json_schema in (("json_schema", schema), ("call_shape", CALL_SHAPE)):
                body = {
                    "prompt": prompt_ids + free.opening_ids,
                    "structured_outputs": {"json": json_schema},
                }
                constrained = self.text(self.post("completions", body)).rstrip()
                if kind == "call_shape":
                    valid, complete = self.valid_prefix(json_schema, free.call)
                tallies[kind].add(free.call, free.token_boundary(valid), complete, constrained)
        return calls

    def valid_calls(self, schema: dict, calls: str) -> tuple[int, bool]:
        """How much of a run of calls (the first's opening line cut off) is valid: each call's
        JSON for the schema, its closing tag, and a newline and the next opening line."""
        at = 0
        while True:
            raw = calls[at:].split(CLOSING, 1)[0]
            valid, complete = self.valid_prefix(schema, raw.rstrip())
            if not complete:
                return at + valid, False
            at += len(raw) + len(CLOSING)
            if calls[at:] == "":
                return at, True
            if not calls[at:].startswith("\n" + OPENING):
                return at, False
            at += 1 + len(OPENING)

    def valid_prefix(self, schema: dict, text: str) -> tuple[int, bool]:
        return self.grammar.valid_prefix(schema, text)

    def close(self) -> None:
        self.http.close()


def call_text(text: str) -> str:
    """A call's JSON: the text up to the call's closing tag (or all of it)."""
    return text.split(CLOSING, 1)[0].rstrip()


def named_in(call: str, tools: Sequence[dict]) -> str | None:
    """The offered function a call names, read from its opening (the rest may be invalid)."""
    for tool in tools:
        name = tool["function"]["name"]
        if call.startswith(json.dumps({"name": name})[:-1]):
            return name
    return None
