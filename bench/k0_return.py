"""Coming back from K=0: how well the drafter drafts for a request that lived through steps
without drafts, against the same request drafted from its first token.

At K=0 the drafter does not run, so its KV cache holds nothing for the tokens of those steps
(vllm_patches/parallel_drafting_dynamic_k.py). When the load drops and K rises, the request
drafts with those positions missing from the drafter's attention.

One container, with a schedule that drafts only while a request is alone
(`peagle:7@1-1/0@2-1024`). Each measured prompt runs twice, greedy, with the same output:
- fresh: alone from its first token, so every step drafts;
- returned: beside a filler request of `filler_tokens`, which keeps the batch at 2 (K=0)
  for about that many of its tokens; then alone, drafting again.
The answer streams with logprobs, so each SSE event's token count is one step's output
(1 + the drafts accepted). Acceptance is taken over the same positions of the same text in
both runs: every step that starts at or after `filler_tokens + MARGIN`. Each run carries a
cache salt of its own, so no run reuses another's prefix cache (whose drafter KV a K=0
prefill never wrote either).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import mean
from typing import Any

import httpx

from bench.configuration import LocalContainer
from bench.options import add_local_command, configuration_of, payloads_of
from bench.report import write_json

# Steps after the filler's end before acceptance counts: the filler's last steps and the
# step that admits the measured request alone may straddle the boundary.
MARGIN = 8
# Windows of positions after the boundary, to show whether the drafter recovers.
WINDOW = 32


@dataclass
class Steps:
    """One streamed answer: where each step's output starts and how many tokens it has."""

    starts: list[int]
    sizes: list[int]
    text: str

    def over(self, first: int, last: int | None = None) -> tuple[int, int]:
        """(tokens, steps) of the steps starting in [first, last)."""
        chosen = [
            size
            for start, size in zip(self.starts, self.sizes, strict=True)
            if start >= first and (last is None or start < last)
        ]
        return sum(chosen), len(chosen)


def salted(payload: dict[str, Any], max_tokens: int, stream: bool) -> dict[str, Any]:
    body = {
        **payload,
        "max_tokens": max_tokens,
        "temperature": 0,
        "ignore_eos": True,
        "cache_salt": uuid.uuid4().hex,
    }
    if stream:
        body.update(stream=True, logprobs=True, top_logprobs=0)
    return body


async def streamed_steps(http: httpx.AsyncClient, url: str, body: dict[str, Any]) -> Steps:
    starts, sizes, text = [], [], []
    position = 0
    async with http.stream("POST", url, json=body) as response:
        if response.status_code != 200:
            raise RuntimeError(f"{url} answered {response.status_code}: {await response.aread()}")
        async for line in response.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            event = json.loads(line[len("data: ") :])
            for choice in event.get("choices") or []:
                tokens = len((choice.get("logprobs") or {}).get("content") or [])
                if tokens:
                    starts.append(position)
                    sizes.append(tokens)
                    position += tokens
                text.append((choice.get("delta") or {}).get("content") or "")
    return Steps(starts, sizes, "".join(text))


async def measure_prompt(
    url: str,
    payload: dict[str, Any],
    filler: dict[str, Any],
    max_tokens: int,
    filler_tokens: int,
) -> dict[str, Any]:
    invocations = f"{url}/invocations"
    async with httpx.AsyncClient(timeout=600) as http:
        fresh = await streamed_steps(http, invocations, salted(payload, max_tokens, True))
        filler_call = asyncio.create_task(
            http.post(invocations, json=salted(filler, filler_tokens, False))
        )
        returned = await streamed_steps(http, invocations, salted(payload, max_tokens, True))
        filled = await filler_call
        if filled.status_code != 200:
            raise RuntimeError(f"the filler request answered {filled.status_code}")
    boundary = filler_tokens + MARGIN
    result: dict[str, Any] = {
        "same_text": fresh.text == returned.text,
        "k0_steps_returned": sum(1 for start in returned.starts if start < filler_tokens),
        "fresh": fresh.over(boundary),
        "returned": returned.over(boundary),
        "windows": [],
    }
    for first in range(boundary, max_tokens, WINDOW):
        result["windows"].append(
            {
                "first": first,
                "fresh": fresh.over(first, first + WINDOW),
                "returned": returned.over(first, first + WINDOW),
            }
        )
    return result


def acceptance(tokens_steps: Sequence[Sequence[int]]) -> float | None:
    tokens = sum(pair[0] for pair in tokens_steps)
    steps = sum(pair[1] for pair in tokens_steps)
    return tokens / steps if steps else None


def table(results: Sequence[dict[str, Any]], filler_tokens: int) -> str:
    fresh = acceptance([r["fresh"] for r in results])
    returned = acceptance([r["returned"] for r in results])
    lines = [
        f"Acceptance length (tokens per step) over the positions from {filler_tokens + MARGIN} "
        f"on, {len(results)} prompts, the same greedy text in both runs: "
        f"{sum(r['same_text'] for r in results)} of {len(results)}.",
        "",
        "| positions | fresh | after K=0 | after / fresh |",
        "|---|---|---|---|",
    ]

    def row(name: str, a: float | None, b: float | None) -> str:
        ratio = f"{b / a:.3f}" if a and b else "-"
        return f"| {name} | {a or 0:.2f} | {b or 0:.2f} | {ratio} |"

    lines.append(row("all", fresh, returned))
    for index, window in enumerate(results[0]["windows"] if results else []):
        first = window["first"]
        a = acceptance([r["windows"][index]["fresh"] for r in results])
        b = acceptance([r["windows"][index]["returned"] for r in results])
        lines.append(row(f"{first}-{first + WINDOW - 1}", a, b))
    k0_steps = mean(r["k0_steps_returned"] for r in results) if results else 0
    lines += [
        "",
        f"A returned run took {k0_steps:.0f} steps (mean) to reach position {filler_tokens}, "
        f"beside the filler: {filler_tokens} would be every one at K=0.",
    ]
    return "\n".join(lines)


HELP = (
    "coming back from K=0: each prompt alone (drafted from its first token) and beside a "
    "filler that holds the batch at K=0 for its first tokens, greedy; acceptance over the "
    "same positions of the same text"
)
SCHEDULE = "peagle:7@1-1/0@2-1024"


def add_parser(commands: Any) -> None:
    parser = add_local_command(commands, "k0-return", command, HELP, config=SCHEDULE)
    parser.add_argument("--num-prompts", type=int, default=8, help="default 8")
    parser.add_argument("--max-tokens", type=int, default=256, help="default 256")
    parser.add_argument(
        "--filler-tokens",
        type=int,
        default=64,
        help="tokens the filler generates, so about the K=0 steps of the measured one (default 64)",
    )


def command(args: argparse.Namespace) -> int:
    if args.filler_tokens + 2 * 32 > args.max_tokens:
        raise SystemExit("--max-tokens must leave at least 64 tokens after --filler-tokens.")
    configuration = configuration_of(args)
    args.api, args.prompts, args.workload = "chat", None, "humaneval"
    payloads = payloads_of(args)
    if len(payloads) < 2:
        raise SystemExit("--num-prompts: at least 2 (one is the filler of the first).")
    container = LocalContainer(
        configuration,
        opt_ml_root=args.opt_ml_root.absolute(),
        port=args.port,
        log_path=args.out_dir / "logs" / "k0-return.log",
        enforce_eager=args.enforce_eager,
    )
    results = []
    with container.start():
        print(f"starting {configuration.name} on {container.url} ...", file=sys.stderr)
        container.wait_ready()
        for index, payload in enumerate(payloads):
            filler = payloads[(index + 1) % len(payloads)]
            results.append(
                asyncio.run(
                    measure_prompt(
                        container.url, payload, filler, args.max_tokens, args.filler_tokens
                    )
                )
            )
            print(f"prompt {index + 1}/{len(payloads)} measured", file=sys.stderr)
    text = table(results, args.filler_tokens)
    write_json(
        args.out_dir / "k0-return.json",
        {"configuration": configuration.describe(), "results": results},
    )
    (args.out_dir / "k0-return.md").write_text(
        f"# Coming back from K=0: {configuration.name}\n\n{text}\n"
    )
    print(text)
    print(f"\nwrote {args.out_dir}/k0-return.json and k0-return.md")
    return 0
