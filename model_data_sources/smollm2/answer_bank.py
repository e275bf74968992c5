"""The real target's answers to the prompt bank (prompt_bank.py), kept in the repository as
data, so that no machine answers them twice: each conversation with the target's own
answers, greedy, in the OpenAI chat format a training job's train channel takes
(`{"messages": [...], "tools": [...] (agents' sessions), "kind": ...}`), in shards of
SHARD_SIZE conversations, `answers/shard-NNN.jsonl.xz`. The target answers through vLLM with
the serving container's chat template and agent flags (training/regenerate.py), so an agent's
session is written as the endpoint writes it.

    python -m model_data_sources.smollm2 answer-bank [--shards N] [--concurrency C]

answers the next N shards not yet in the repository, in answer_order (vLLM serving the target
on loopback, C conversations at once, as an endpoint would be asked). A shard in progress
keeps its answers under the work folder, one line per conversation as it is answered, so a
stopped run goes on where it stopped; a finished shard is written to the repository (commit
it) with its figures in answers/manifest.json.
"""

from __future__ import annotations

import hashlib
import json
import lzma
import math
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from model_data_sources.smollm2 import prompt_bank, tool_sessions

ANSWERS = Path(__file__).parent / "answers"
MANIFEST = ANSWERS / "manifest.json"
SHARD_SIZE = 500
MAX_ANSWER_TOKENS = 256
REQUEST_SECONDS = 600
STRIDE = 7  # answer_order's step: about a quarter of the bank's 30 shards


def log(message: str) -> None:
    print(f"[answer bank] {message}", flush=True)


def answer_order(count: int) -> list[int]:
    """The order the bank's `count` shards are answered in: every STRIDE-th round the bank.
    The bank keeps each kind's conversations together, so shards in a row are one kind; taken
    this way the first eight answered hold chat, code, JSON, rewriting and agents' sessions."""
    stride = next(s for s in range(STRIDE, STRIDE + count + 1) if math.gcd(s, count) == 1)
    return [(i * stride) % count for i in range(count)]


def shard_name(index: int) -> str:
    return f"shard-{index:03d}.jsonl.xz"


def shards(bank: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    return [bank[start : start + SHARD_SIZE] for start in range(0, len(bank), SHARD_SIZE)]


def prompts_hash(conversations: list[dict[str, Any]]) -> str:
    """What a shard asks: its conversations as the bank writes them."""
    text = "".join(json.dumps(c) + "\n" for c in conversations)
    return hashlib.sha256(text.encode()).hexdigest()


def stale_shards(bank: list[dict[str, Any]], manifest: dict[str, Any]) -> list[str]:
    """The shipped shards whose prompts the bank does not ask any more (in that place)."""
    asked = {shard_name(i): prompts_hash(shard) for i, shard in enumerate(shards(bank))}
    return [
        name
        for name, figures in sorted(manifest["shards"].items())
        if asked.get(name) != figures["prompts"]
    ]


def read_manifest() -> dict[str, Any]:
    return json.loads(MANIFEST.read_text()) if MANIFEST.is_file() else {"shards": {}}


def chat(
    endpoint: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    tool_choice: Any = None,
) -> tuple[dict[str, Any], str, int]:
    """The target's greedy answer: its assistant message (the text, or the tool calls, each
    given the id `call_N`, N counting the conversation's calls), why it stopped, its tokens."""
    body: dict[str, Any] = {"messages": messages, "max_tokens": MAX_ANSWER_TOKENS, "temperature": 0}
    if tools:
        body |= {"tools": tools, "tool_choice": tool_choice or "auto"}
    request = urllib.request.Request(
        endpoint, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=REQUEST_SECONDS) as response:
        answer = json.loads(response.read())
    choice = answer["choices"][0]
    message: dict[str, Any] = {"role": "assistant", "content": choice["message"]["content"] or ""}
    calls = choice["message"].get("tool_calls") or []
    if calls:
        made = sum(len(m.get("tool_calls") or ()) for m in messages)
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": f"call_{made + n}", "type": "function", "function": call["function"]}
                for n, call in enumerate(calls, start=1)
            ],
        }
    return message, choice["finish_reason"], answer["usage"]["completion_tokens"]


def tool_results(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The tools' answers to the message's calls, as an agent sends them back."""
    results = []
    for call in message.get("tool_calls") or ():
        try:
            arguments = json.loads(call["function"]["arguments"])
        except (TypeError, ValueError):
            arguments = {}
        output = tool_sessions.result(
            call["function"]["name"], arguments if isinstance(arguments, dict) else {}
        )
        results.append({"role": "tool", "tool_call_id": call["id"], "content": json.dumps(output)})
    return results


def answered(endpoint: str, conversation: dict[str, Any]) -> dict[str, Any]:
    """The conversation with each assistant turn written by the target, one after another.
    An agent's session (tool_sessions.py): the target's answer under its `tool_choice`, then,
    unless the function was named (structured output: the call is the answer), the tools'
    results and the target's answer to them under `auto`."""
    messages: list[dict[str, Any]] = []
    finishes, tokens = [], 0
    tools = conversation.get("tools")
    asked = [m for m in conversation["messages"] if m["role"] != "assistant"]
    for message in asked:
        messages.append(message)
        answer, finish, count = chat(endpoint, messages, tools, conversation.get("tool_choice"))
        messages.append(answer)
        finishes.append(finish)
        tokens += count
    if tools and conversation.get("shape") != "named" and (results := tool_results(messages[-1])):
        messages += results
        answer, finish, count = chat(endpoint, messages, tools, "auto")
        messages.append(answer)
        finishes.append(finish)
        tokens += count
    kind = conversation["kind"]
    record = {"kind": kind, "messages": messages, "finish": finishes, "tokens": tokens}
    return record | ({"tools": tools} if tools else {})


def answer_shard(
    endpoint: str, conversations: list[dict[str, Any]], progress: Path, concurrency: int
) -> list[dict[str, Any]]:
    """Every conversation of the shard answered; those in `progress` already are kept."""
    done: dict[int, dict[str, Any]] = {}
    if progress.is_file():
        for line in progress.read_text().splitlines():
            record = json.loads(line)
            done[record["index"]] = record["conversation"]
    todo = [i for i in range(len(conversations)) if i not in done]
    lock = threading.Lock()
    started, tokens = time.monotonic(), 0

    def one(index: int) -> None:
        nonlocal tokens
        result = answered(endpoint, conversations[index])
        with lock:
            done[index] = result
            tokens += result["tokens"]
            with progress.open("a") as out:
                out.write(json.dumps({"index": index, "conversation": result}) + "\n")
            if len(done) % 50 == 0:
                rate = tokens / (time.monotonic() - started)
                log(f"{len(done)}/{len(conversations)} answered, {rate:.0f} answer tok/s")

    with ThreadPoolExecutor(concurrency) as pool:
        for future in [pool.submit(one, index) for index in todo]:
            future.result()
    return [done[i] for i in range(len(conversations))]


def write_shard(
    index: int, asked: list[dict[str, Any]], conversations: list[dict[str, Any]], figures: dict
) -> None:
    ANSWERS.mkdir(exist_ok=True)
    kept = ("kind", "tools", "messages", "finish")
    text = "".join(json.dumps({k: c[k] for k in kept if k in c}) + "\n" for c in conversations)
    path = ANSWERS / shard_name(index)
    path.write_bytes(lzma.compress(text.encode(), preset=9 | lzma.PRESET_EXTREME))
    manifest = read_manifest()
    manifest["shards"][path.name] = {
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "prompts": prompts_hash(asked),
        **figures,
    }
    MANIFEST.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def read_shards(names: list[str] | None = None) -> list[dict[str, Any]]:
    """The answered conversations the repository holds (those of the shards `names`, or every
    one), shard by shard."""
    conversations = []
    for name in sorted(read_manifest()["shards"]) if names is None else names:
        text = lzma.decompress((ANSWERS / name).read_bytes()).decode()
        conversations += [json.loads(line) for line in text.splitlines() if line]
    return conversations


def run(target: Path, work: Path, count: int, concurrency: int, dtype: str) -> None:
    from training.regenerate import vllm_server

    bank = prompt_bank.conversations()
    manifest = read_manifest()
    stale = stale_shards(bank, manifest)
    if stale:
        raise SystemExit(
            f"the prompt bank (prompt_bank.py) no longer asks what {', '.join(stale)} answer; "
            "keep its order (new prompts go at its end), or delete those shards to answer them "
            "again"
        )
    manifest["max_answer_tokens"] = MAX_ANSWER_TOKENS
    manifest["dtype"] = dtype
    MANIFEST.parent.mkdir(exist_ok=True)
    MANIFEST.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    order = answer_order(len(shards(bank)))
    pending = [i for i in order if shard_name(i) not in manifest["shards"]]
    if not pending:
        log(f"every shard of the bank is answered ({len(bank)} conversations)")
        return
    work.mkdir(parents=True, exist_ok=True)
    with vllm_server(target, work / "vllm.log", dtype) as endpoint:
        for index in pending[:count]:
            conversations = shards(bank)[index]
            log(f"shard {index}: {len(conversations)} conversations, {concurrency} at once")
            clock = work / f"shard-{index:03d}.seconds"  # time spent on it, over every run
            spent = float(clock.read_text()) if clock.is_file() else 0.0
            started = time.monotonic()
            try:
                done = answer_shard(
                    endpoint, conversations, work / f"shard-{index:03d}.jsonl", concurrency
                )
            finally:
                clock.write_text(str(spent + time.monotonic() - started))
            seconds = float(clock.read_text())
            tokens = sum(c["tokens"] for c in done)
            figures = {
                "conversations": len(done),
                "answers": sum(len(c["finish"]) for c in done),
                "answer_tokens": tokens,
                "at_limit": sum(f == "length" for c in done for f in c["finish"]),
                "seconds": round(seconds, 1),
                "concurrency": concurrency,
            }
            write_shard(index, conversations, done, figures)
            log(f"shard {index} written: {tokens} answer tokens in {seconds:.0f} s")
