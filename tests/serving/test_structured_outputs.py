"""Structured outputs that end, with P-EAGLE on: response_format (json_schema, json_object),
vLLM's structured_outputs (regex, choice, grammar) and TGI's `parameters.grammar`, streamed
or not, parse and follow their constraint, and finish before max_tokens (the container's
xgrammar bounds the whitespace between JSON tokens; a tiny model otherwise writes newlines
until the limit); and a constrained answer says what the target says freely, for as long as
that is valid (`python -m bench fidelity`)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import httpx
import jsonschema
import pytest

from serving.engine_args.agents import JSON_MAX_WHITESPACE
from serving.errors import RequestRefused
from serving.tgi import completion_request
from tests.support.schemas import CITY

PROMPT = [{"role": "user", "content": "Which city is sunny today? Answer in JSON."}]
MAX_TOKENS = 200
JSON_SCHEMA = {
    "type": "json_schema",
    "json_schema": {"name": "city", "schema": CITY, "strict": True},
}
CODE = r"def [a-z_]{1,12}\(\):"


def longest_gap(text: str) -> int:
    """The longest run of whitespace between the JSON's tokens (inside a string any text goes)."""
    between = re.sub(r'"(?:[^"\\]|\\.)*("|$)', '""', text)
    return max((len(run) for run in re.findall(r"\s+", between)), default=0)


def chat(container, stream: bool = False, **fields) -> tuple[str, str]:
    """The answer's text and finish reason, streamed or not."""
    body = {"messages": PROMPT, "max_tokens": MAX_TOKENS, "temperature": 0, **fields}
    if not stream:
        answer = httpx.post(f"{container.url}/invocations", json=body, timeout=120)
        assert answer.status_code == 200, answer.text
        choice = answer.json()["choices"][0]
        return choice["message"]["content"], choice["finish_reason"]
    text, finish = "", None
    with httpx.stream(
        "POST", f"{container.url}/invocations", json={**body, "stream": True}, timeout=120
    ) as answer:
        assert answer.status_code == 200, answer.read()
        for line in answer.iter_lines():
            if line.startswith("data: {"):
                for choice in json.loads(line[len("data: ") :])["choices"]:
                    text += choice["delta"].get("content") or ""
                    finish = choice.get("finish_reason") or finish
    return text, finish


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_json_schema_answer_parses_follows_the_schema_and_ends(peagle, stream):
    text, finish = chat(peagle, stream, response_format=JSON_SCHEMA)
    assert finish == "stop", text[-200:]
    jsonschema.validate(json.loads(text), CITY)
    assert longest_gap(text) <= JSON_MAX_WHITESPACE, text


def test_streamed_and_whole_json_answers_are_the_same_and_equal_the_targets(peagle, plain):
    whole, _ = chat(peagle, response_format=JSON_SCHEMA)
    assert chat(peagle, True, response_format=JSON_SCHEMA)[0] == whole
    assert chat(plain, response_format=JSON_SCHEMA)[0] == whole


def test_a_json_object_answer_is_json_without_runs_of_whitespace(peagle):
    # No schema bounds an object, so a model may never close it (the demo target writes
    # digits for ever): what json_object guarantees is JSON, here with bounded whitespace.
    text, _ = chat(peagle, response_format={"type": "json_object"}, max_tokens=64)
    assert text.lstrip().startswith("{") and longest_gap(text) <= JSON_MAX_WHITESPACE, text


def test_a_constrained_call_says_what_the_target_says_freely_while_that_is_valid(peagle, tmp_path):
    """The target's free tool calls (completions route, no grammar) against the same prompts
    under each grammar: tool_choice auto, named and required, and JSON schemas; and its free
    answers to JSON questions against the same questions under a response_format. Each follows
    the free answer byte for byte up to where the free one leaves the schema, and equals it
    where it is valid whole (any call's shape, the JSON answers); with vLLM's
    disable_any_whitespace the JSON schemas part from it at the first `": "`."""
    from tests.support.containers import DEMO_ROOT

    # The fidelity study, run as a reader runs it against this container: its command line.
    argv = [sys.executable, "-m", "bench", "fidelity", "--url", peagle.url, "--num-probes", "4"]
    argv += ["--max-tokens", "64", "--opt-ml-root", str(DEMO_ROOT), "--out-dir", str(tmp_path)]
    subprocess.run(argv, check=True, capture_output=True, timeout=600)
    probed = json.loads((tmp_path / "fidelity.json").read_text())["results"]["as served"]
    calls, tallies = probed.pop("calls"), probed
    assert set(tallies) == {"auto", "named", "required", "json_schema", "call_shape"} | {
        "response_format",
        "json_object",
    }
    assert calls >= 3
    for kind, tally in tallies.items():
        assert tally["follows"] == tally["probes"], (kind, tally["departures"])
        assert tally["equal"] == tally["whole"], (kind, tally["departures"])
    assert tallies["json_schema"]["probes"] == tallies["call_shape"]["probes"] == calls
    # How many free answers are valid whole is the toy's own (none of the shipped pair's 4:
    # its free calls on these long schemas lose their JSON); following them is the container's.
    assert tallies["response_format"]["probes"] == tallies["json_object"]["probes"] == 4


@pytest.mark.parametrize(
    ("constraint", "check"),
    [
        ({"regex": CODE}, lambda text: re.fullmatch(CODE, text)),
        ({"choice": ["Paris", "Tokyo", "Lima"]}, lambda text: text in ("Paris", "Tokyo", "Lima")),
        ({"grammar": 'root ::= "yes" | "no"'}, lambda text: text in ("yes", "no")),
        ({"json": CITY}, lambda text: jsonschema.validate(json.loads(text), CITY) is None),
    ],
    ids=["regex", "choice", "grammar", "json"],
)
def test_vllms_structured_outputs_hold(peagle, constraint, check):
    text, finish = chat(peagle, structured_outputs=constraint)
    assert finish == "stop" and check(text), text[-200:]


def tgi(container, grammar: dict, stream: bool = False) -> str:
    body = {"inputs": "The weather in Paris:", "parameters": {"max_new_tokens": MAX_TOKENS,
            "grammar": grammar}, "stream": stream}  # fmt: skip
    answer = httpx.post(f"{container.url}/invocations", json=body, timeout=120)
    assert answer.status_code == 200, answer.text
    if not stream:
        return answer.json()[0]["generated_text"]
    events = [json.loads(line[5:]) for line in answer.text.splitlines() if line.startswith("data:")]
    return events[-1]["generated_text"]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_tgi_grammar_json_and_regex_hold(peagle, stream):
    jsonschema.validate(json.loads(tgi(peagle, {"type": "json", "value": CITY}, stream)), CITY)
    # TGI clients often send the schema as a string.
    as_string = {"type": "json", "value": json.dumps(CITY)}
    jsonschema.validate(json.loads(tgi(peagle, as_string, stream)), CITY)
    assert re.fullmatch(CODE, tgi(peagle, {"type": "regex", "value": CODE}, stream))


@pytest.mark.parametrize(
    ("grammar", "words"),
    [
        ("json", "'parameters.grammar' must be an object"),
        ({"type": "ebnf", "value": "x"}, "'parameters.grammar' must be an object"),
        ({"type": "json", "value": "{not json"}, "must be a JSON schema"),
        ({"type": "json", "value": 3}, "a JSON schema object"),
        ({"type": "regex", "value": ""}, "a non-empty pattern string"),
    ],
)
def test_a_bad_tgi_grammar_is_refused_with_the_field(grammar, words):
    with pytest.raises(RequestRefused) as refused:
        completion_request({"inputs": "x", "parameters": {"grammar": grammar}}, "m")
    assert refused.value.status == 400 and words in refused.value.message


@pytest.mark.parametrize(
    ("response_format", "words"),
    [
        ({"type": "json_schema"}, 'needs "json_schema"'),
        ({"type": "xml"}, "'response_format' must be"),
        ("json", "'response_format' must be"),
    ],
)
def test_a_malformed_response_format_is_a_400_that_names_the_field(peagle, response_format, words):
    body = {"messages": PROMPT, "max_tokens": 8, "response_format": response_format}
    answer = httpx.post(f"{peagle.url}/invocations", json=body, timeout=60)
    assert answer.status_code == 400, answer.text
    assert words in answer.json()["error"]["message"]
    assert "Traceback" not in answer.text
