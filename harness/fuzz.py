"""A mutation fuzzer of the bodies the front takes, and a runner that sends them.

Every kind of request a client sends (chat and completions on /invocations and /v1, TGI's
payload, tools under each `tool_choice`, `response_format`, `structured_outputs`, streamed or
not, JSON Lines records) is a seed; each fuzzed body is a seed with one to three mutations:
a value replaced by another type or a boundary value, a key dropped or added (from the names
OpenAI's and vLLM's requests know), the JSON cut, made invalid or nested past any parser's
depth, bytes that are not UTF-8, an odd content type. The same seed number gives the same
bodies, so a failing body can be made again from the figure that reported it.

What generation a body may ask for stays bounded: the length fields (max_tokens and the like)
are only ever replaced by values the engine refuses or by small ones, never dropped, so a
fuzz run's cost is the number of its bodies and not the model's context length.

    python -m harness.fuzz --url http://127.0.0.1:8080 --bodies 10000 --seed 1
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import copy
import json
import random
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx

from harness.fuzz_seeds import SEEDS

# Fields whose value sets how long a generation runs.
LENGTHS = {"max_tokens", "max_new_tokens", "max_completion_tokens"}
# What a length field may become: refused, or small.
LENGTH_VALUES = [0, -1, 1, 2, 2**31, 2**63, 10**30, 1.5, "4", None, True, [], {}, ""]
VALUES = [
    None, True, False, 0, -1, 1, 2, 2**31 - 1, 2**31, 2**63, -(2**63), 10**30, 1e308, -1e-308,
    0.5, -0.5, "", "\u0000", " ", "x" * 5000, "null", "{}", "ünïcødé ✓", "\ud800",
    [], [None], [""], [1, 2, 3], {}, {"": None}, {"type": None}, {"x": [{}]},
]  # fmt: skip
# Field names OpenAI's and vLLM's requests know, so an added key reaches their validation.
KNOWN_KEYS = [
    "n", "best_of", "logprobs", "top_logprobs", "prompt_logprobs", "logit_bias", "stop",
    "stop_token_ids", "seed", "temperature", "top_p", "top_k", "min_p", "min_tokens",
    "repetition_penalty", "presence_penalty", "frequency_penalty", "length_penalty",
    "ignore_eos", "skip_special_tokens", "spaces_between_special_tokens", "echo", "suffix",
    "stream", "stream_options", "tools", "tool_choice", "parallel_tool_calls", "functions",
    "response_format", "structured_outputs", "guided_json", "guided_regex", "guided_choice",
    "chat_template", "chat_template_kwargs", "add_generation_prompt", "continue_final_message",
    "documents", "mm_processor_kwargs", "priority", "request_id", "cache_salt",
    "truncate_prompt_tokens", "allowed_token_ids", "bad_words", "kv_transfer_params",
    "vllm_xargs", "return_tokens_as_token_ids", "include_stop_str_in_output", "user",
    "model", "prompt_embeds", "reasoning_effort", "thinking_token_budget", "messages",
    "prompt", "inputs", "parameters", "details", "grammar", "do_sample", "return_full_text",
    "decoder_input_details", "max_tokens", "max_completion_tokens", "metadata", "store",
    "service_tier", "modalities", "audio", "prediction", "web_search_options",
]  # fmt: skip
CONTENT_TYPES = [
    "",
    "text/plain",
    "application/json; charset=latin-1",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x",
    "application/jsonlines",
    "application/octet-stream",
    "application/json\u00e9",
]


@dataclass(frozen=True)
class Case:
    number: int
    kind: str
    path: str
    content_type: str
    body: bytes
    mutation: str


def places(value: Any, trail: tuple = ()) -> Iterator[tuple]:
    """The path to every value in a JSON tree, the root first."""
    yield trail
    if isinstance(value, dict):
        for key, item in value.items():
            yield from places(item, (*trail, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from places(item, (*trail, index))


def at(tree: Any, trail: tuple) -> Any:
    for step in trail:
        tree = tree[step]
    return tree


def replaced(tree: Any, trail: tuple, value: Any) -> Any:
    if not trail:
        return value
    at(tree, trail[:-1])[trail[-1]] = value
    return tree


def mutate(tree: Any, rng: random.Random) -> tuple[Any, str]:
    """One mutation of a parsed body; the tree and what was done."""
    trails = list(places(tree))
    choice = rng.random()
    if choice < 0.55:  # a value replaced by another type or a boundary value
        trail = rng.choice(trails[1:] or trails)
        if trail and trail[-1] in LENGTHS:
            value = rng.choice(LENGTH_VALUES)
        elif trail and any(step in LENGTHS for step in trail):
            return tree, "kept a length"  # inside a length value: nothing to do
        else:
            value = copy.deepcopy(rng.choice(VALUES))
        return replaced(tree, trail, value), f"{list(trail)} = {short(value)}"
    objects = [trail for trail in trails if isinstance(at(tree, trail), dict)]
    if choice < 0.75 and objects:  # a key dropped
        trail = rng.choice(objects)
        keys = [key for key in at(tree, trail) if key not in LENGTHS]
        if keys:
            key = rng.choice(keys)
            del at(tree, trail)[key]
            return tree, f"{list(trail)} drop {key!r}"
    if objects:  # a key added
        trail = rng.choice(objects)
        key = rng.choice(KNOWN_KEYS) if rng.random() < 0.85 else f"x{rng.randrange(100)}"
        value = rng.choice(LENGTH_VALUES if key in LENGTHS else VALUES)
        at(tree, trail)[key] = copy.deepcopy(value)
        return tree, f"{list(trail)} add {key!r}: {short(value)}"
    return tree, "none"


def short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def encoded(tree: Any, content_type: str) -> bytes:
    if content_type.startswith("application/jsonlines") and isinstance(tree, list):
        return b"".join(json.dumps(record).encode() + b"\n" for record in tree)
    return json.dumps(tree).encode()


def broken_bytes(body: bytes, rng: random.Random) -> tuple[bytes, str]:
    """A body that is not the JSON it claims to be."""
    choice = rng.randrange(7)
    if choice == 0 and body:
        cut = rng.randrange(len(body))
        return body[:cut], f"cut at {cut}"
    if choice == 1:
        where = rng.randrange(len(body) + 1)
        return body[:where] + b"\xff\xfe" + body[where:], f"bytes not UTF-8 at {where}"
    if choice == 2:
        depth = rng.choice([100, 10_000, 100_000])
        return b"[" * depth + b"]" * depth, f"arrays nested {depth} deep"
    if choice == 3:
        return b"", "empty"
    if choice == 4:
        return body + b"}{", "trailing garbage"
    if choice == 5:
        return body.replace(b":", b"=", 1), "invalid JSON"
    return b"NaN" if rng.random() < 0.5 else b'{"max_tokens": NaN}', "NaN"


def cases(seed: int, count: int) -> Iterator[Case]:
    """`count` fuzzed bodies, the same for the same `seed`."""
    rng = random.Random(seed)
    for number in range(count):
        base = rng.choice(SEEDS)
        tree = copy.deepcopy(base.body)
        content_type = base.content_type
        done = []
        for _ in range(rng.choice([1, 1, 2, 3])):
            tree, what = mutate(tree, rng)
            done.append(what)
        body = encoded(tree, content_type)
        roll = rng.random()
        if roll < 0.12:
            body, what = broken_bytes(body, rng)
            done.append(what)
        elif roll < 0.2:
            content_type = rng.choice(CONTENT_TYPES)
            done.append(f"content type {content_type!r}")
        yield Case(number, base.kind, base.path, content_type, body, "; ".join(done))


@dataclass
class Outcome:
    case: Case
    status: int  # 0: no answer (the connection broke, or the read timed out)
    text: str


def headers_of(case: Case) -> dict[str, bytes]:
    """The case's Content-Type, as UTF-8 bytes (httpx writes text headers only as ASCII)."""
    return {"content-type": case.content_type.encode()} if case.content_type else {}


async def send(client: httpx.AsyncClient, case: Case) -> Outcome:
    try:
        answer = await client.post(case.path, content=case.body, headers=headers_of(case))
        return Outcome(case, answer.status_code, answer.text[:400])
    except httpx.HTTPError as error:
        return Outcome(case, 0, f"{type(error).__name__}: {error}")


async def run(url: str, seed: int, count: int, clients: int, timeout: float) -> list[Outcome]:
    """Every case of `seed`, `clients` at a time; the outcomes in case order."""
    queue = iter(cases(seed, count))
    outcomes: list[Outcome] = []
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=timeout, limits=limits) as client:

        async def worker() -> None:
            for case in queue:
                outcomes.append(await send(client, case))

        await asyncio.gather(*(worker() for _ in range(clients)))
    return sorted(outcomes, key=lambda outcome: outcome.case.number)


def by_status(outcomes: list[Outcome]) -> dict[int, int]:
    return dict(sorted(collections.Counter(outcome.status for outcome in outcomes).items()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.fuzz", description=__doc__)
    parser.add_argument("--url", default="http://127.0.0.1:8080")
    parser.add_argument("--bodies", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--out", help="a JSON Lines file of every non-2xx/4xx outcome")
    args = parser.parse_args(argv)
    began = time.monotonic()
    outcomes = asyncio.run(run(args.url, args.seed, args.bodies, args.clients, args.timeout))
    seconds = time.monotonic() - began
    counts = by_status(outcomes)
    print(f"{len(outcomes)} bodies (seed {args.seed}) in {seconds:.0f} s; by status: {counts}")
    bad = [outcome for outcome in outcomes if not 200 <= outcome.status < 500]
    by_kind = collections.Counter(outcome.case.kind for outcome in bad)
    for outcome in bad[:20]:
        case = outcome.case
        print(f"  #{case.number} {case.kind} {case.path}: {outcome.status} {outcome.text[:160]}")
        print(f"      {case.mutation}")
    if bad:
        print(f"{len(bad)} answers not 2xx or 4xx, by kind: {dict(by_kind)}")
    if args.out:
        with open(args.out, "w") as out:
            for outcome in bad:
                case = outcome.case
                row = {
                    "number": case.number,
                    "kind": case.kind,
                    "path": case.path,
                    "content_type": case.content_type,
                    "mutation": case.mutation,
                    "body": case.body[:2000].decode("utf-8", "replace"),
                    "status": outcome.status,
                    "answer": outcome.text,
                }
                out.write(json.dumps(row) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
