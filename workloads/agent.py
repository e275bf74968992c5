"""The agent workload: multi-turn sessions with tools, as an agent framework drives them.

A session opens with a tool-use request of the kind the demo target learned
(model_data_sources/tool_use.py, a seed of its own): one or two tools offered, a request one of
them serves. Each turn is a chat request with the tools; when the answer calls tools, their
results (drawn as the corpus draws them) go back as `tool` messages after the assistant's
calls, and the next turn asks again, until the answer is text or the session has made
MAX_TURNS requests. The first turn's `tool_choice` rotates through auto, required and the
named tool; later turns are auto, as agent loops send them. Every request of a session is
one answer's speculation: acceptance comes from vLLM's per-request metrics.

Sessions are drawn from SEED; held-out sessions for evaluation from HELD_OUT_SEED, so a head
retrained on captured sessions is measured on sessions it never saw.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

import httpx

SEED = 707070
HELD_OUT_SEED = 717171
MAX_TURNS = 3
COUNT = 96  # the load benchmarks' turns
MAX_TOKENS = 64
FIRST_CHOICES = ("auto", "required", "named")


@dataclass(frozen=True)
class Session:
    messages: list[dict]  # the opening: up to the first assistant turn
    tools: list[dict]
    first_choice: Any  # the first turn's tool_choice
    seed: int  # the tool results' draws


def sessions(seed: int, count: int) -> list[Session]:
    """`count` sessions: the corpus's conversations cut where the assistant first speaks (as
    tool_use.openings cuts them), the first turn's tool_choice rotating; `named` names the
    tool the request is about (auto for a question no tool serves)."""
    from model_data_sources.tool_use import conversation
    from workloads.structured import CODE

    rng = random.Random(seed)
    drawn = []
    for index in range(count):
        messages, tools = conversation(rng, rng.choice(CODE))
        first = next(i for i, message in enumerate(messages) if message["role"] == "assistant")
        calls = messages[first].get("tool_calls") or []
        choice: Any = FIRST_CHOICES[index % len(FIRST_CHOICES)]
        if choice == "named":
            name = calls[0]["function"]["name"] if calls else None
            choice = {"type": "function", "function": {"name": name}} if name else "auto"
        elif choice == "required" and not calls:
            choice = "auto"
        drawn.append(Session(messages[:first], tools, choice, seed * 1000 + index))
    return drawn


def tool_result(name: str, rng: random.Random) -> str:
    from model_data_sources.tool_use import TOOLS, result

    answered = result(rng)
    tool = next((tool for tool in TOOLS if tool.name == name), None)
    if tool is None:
        return json.dumps({"error": f"no tool {name}"})
    return json.dumps({key: answered[key] for key in answered if "{" + key + "}" in tool.answer})


def body(session: Session, messages: list[dict], turn: int) -> dict[str, Any]:
    return {
        "messages": messages,
        "tools": session.tools,
        "tool_choice": session.first_choice if turn == 0 else "auto",
        "max_tokens": MAX_TOKENS,
        "temperature": 0,
    }


def run_session(http: httpx.Client, session: Session, path: str = "/invocations") -> list[dict]:
    """The session's answers, turn by turn (each the chat.completion the container gave)."""
    rng = random.Random(session.seed)
    messages = list(session.messages)
    answers = []
    for turn in range(MAX_TURNS):
        answer = http.post(path, json=body(session, messages, turn))
        answer.raise_for_status()
        answers.append(answer.json())
        message = answers[-1]["choices"][0]["message"]
        calls = message.get("tool_calls") or []
        if not calls:
            break
        messages.append(
            {"role": "assistant", "content": message.get("content"), "tool_calls": calls}
        )
        for call in calls:
            result = tool_result(call["function"]["name"], rng)
            messages.append({"role": "tool", "tool_call_id": call.get("id", ""), "content": result})
    return answers


def speculation(answers: list[dict]) -> tuple[int, int, int]:
    """(draft tokens, accepted draft tokens, completion tokens) over a session's answers."""
    draft = accepted = tokens = 0
    for answer in answers:
        stats = (answer.get("metrics") or {}).get("speculative_decoding") or {}
        draft += stats.get("num_draft_tokens", 0)
        accepted += stats.get("num_accepted_draft_tokens", 0)
        tokens += answer["usage"]["completion_tokens"]
    return draft, accepted, tokens


def with_call_ids(messages: list[dict], session: int) -> list[dict]:
    """The corpus's conversation with the ids the OpenAI API requires: each call an `id`, each
    result the `tool_call_id` of the call it answers, in order."""
    named: list[dict] = []
    pending: list[str] = []
    made = 0
    for message in messages:
        if message.get("tool_calls"):
            calls = []
            for call in message["tool_calls"]:
                call_id = f"call_{session}_{made}"
                made += 1
                pending.append(call_id)
                calls.append({"id": call_id, **call})
            message = {**message, "tool_calls": calls}
        elif message["role"] == "tool" and pending:
            message = {**message, "tool_call_id": pending.pop(0)}
        named.append(message)
    return named


def agent_payloads(count: int | None = None) -> list[dict[str, Any]]:
    """The load benchmarks' agent workload: the sessions' turns replayed as recorded ones are,
    each turn a request carrying the session so far (the user's request, the corpus's call and
    its result), so every turn can be sent on its own and the configurations compared on the
    same requests: the first turn with its rotating tool_choice, the turns after a result with
    auto (the answer in words, or the next call). HELD_OUT_SEED's sessions, `count` turns."""
    from model_data_sources.tool_use import conversation
    from workloads.structured import CODE

    rng = random.Random(HELD_OUT_SEED)
    payloads: list[dict[str, Any]] = []
    index = 0
    while len(payloads) < (count or COUNT):
        messages, tools = conversation(rng, rng.choice(CODE))
        turns = [i for i, message in enumerate(messages) if message["role"] == "assistant"]
        calls = messages[turns[0]].get("tool_calls") or []
        choice: Any = FIRST_CHOICES[index % len(FIRST_CHOICES)]
        if choice == "named" and calls:
            choice = {"type": "function", "function": {"name": calls[0]["function"]["name"]}}
        elif choice != "auto" and not calls:
            choice = "auto"
        messages = with_call_ids(messages, index)
        for number, turn in enumerate(turns):
            payloads.append({
                "messages": messages[:turn],
                "tools": tools,
                "tool_choice": choice if number == 0 else "auto",
            })  # fmt: skip
        index += 1
    return payloads[: count or COUNT]
