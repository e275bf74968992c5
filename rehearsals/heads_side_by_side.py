"""Heads side by side: each on its own container of one configuration, all up together, the
same held-out requests sent to each in turn, round after round; acceptance from each answer's
own speculation (vLLM's per-request metrics) and, per draft position, from vLLM's counters
around each measurement. The retraining loop and the training-image demo compare their heads
with it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
from tqdm import tqdm

from bench.acceptance import acceptance_per_position, parse_counters
from bench.compare import compare as side_by_side
from bench.configuration import LocalContainer, up_together
from harness.configurations import Configuration, parse_configuration
from serving import paths
from workloads import agent
from workloads.prompts import CODE_INSTRUCTION, humaneval_prompts

MAX_TOKENS = 64


NO_SPECULATION = "no speculation"


# One item of a workload sent, its answers back (a session's several).
Send = Callable[[httpx.Client, Any], list[dict]]


def chat(prompt: str) -> dict[str, Any]:
    return {
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": MAX_TOKENS,
        "temperature": 0,
    }


def send_prompt(http: httpx.Client, prompt: str) -> list[dict]:
    answer = http.post("/invocations", json=chat(prompt))
    answer.raise_for_status()
    return [answer.json()]


@dataclass(frozen=True)
class Workload:
    name: str
    captured: Sequence[Any]
    held_out: Sequence[Any]
    send: Send


def measure(
    url: str, items: Sequence[Any], send: Send, concurrency: int, progress: tqdm
) -> dict[str, Any]:
    """The items with `concurrency` clients: acceptance from the answers and, per draft
    position, from vLLM's counters around the run; output tokens/s."""
    with httpx.Client(base_url=url, timeout=120) as http, ThreadPoolExecutor(concurrency) as pool:

        def one(item: Any) -> tuple[int, int, int]:
            counts = agent.speculation(send(http, item))
            progress.update(1)
            return counts

        before = parse_counters(http.get("/metrics").text)
        began = time.perf_counter()
        results = list(pool.map(one, items))
        seconds = time.perf_counter() - began
        after = parse_counters(http.get("/metrics").text)
    draft, accepted, tokens = (sum(column) for column in zip(*results, strict=True))
    by_position = acceptance_per_position(before, after) or []
    return {
        "draft": draft,
        "accepted": accepted,
        "tokens": tokens,
        "seconds": seconds,
        "by_position": by_position,
    }


def row(workload: str, concurrency: int, head: str, counts: dict[str, Any], k: int) -> dict:
    steps = counts["draft"] / k  # each verify step drafts K tokens
    length = 1 + counts["accepted"] / steps if steps else 1.0
    return {
        "workload": workload,
        "concurrency": concurrency,
        "head": head,
        "mean_acceptance_length": round(length, 3),
        "acceptance_per_position": [round(rate, 3) for rate in counts["by_position"]],
        "output_tokens_per_s": round(counts["tokens"] / counts["seconds"], 1),
        "rounds_tokens_per_s": [
            round(speed, 1)
            for speed in counts.get("rounds_tokens_per_s", [counts["tokens"] / counts["seconds"]])
        ],
    }


def compare(
    configuration: Configuration,
    heads: dict[str, Path],
    workloads: dict[str, tuple[Sequence[Any], Send]],
    out: Path,
    concurrencies: tuple[int, ...] = (1, 4),
    no_speculation: bool = False,
    rounds: int = 1,
) -> list[dict]:
    """Each workload at each concurrency on each head's container in turn, all containers up
    together, `rounds` times interleaved: one row per (workload, concurrency, head); with
    `no_speculation`, the target alone beside them (head NO_SPECULATION), for P-EAGLE /
    none."""
    containers = {
        name: LocalContainer(
            replace(configuration, drafter=paths.channel_dir(opt_ml)),
            opt_ml,
            log_path=out / f"compare-{name}.log",
        )
        for name, opt_ml in heads.items()
    }
    if no_speculation:
        first = next(iter(heads.values()))
        none = parse_configuration("none", paths.channel_dir(first))
        containers[NO_SPECULATION] = LocalContainer(none, first, log_path=out / "compare-none.log")
    levels = [(concurrency, workload) for concurrency in concurrencies for workload in workloads]
    total = sum(len(workloads[workload][0]) for _, workload in levels) * len(containers) * rounds
    with up_together(containers), tqdm(total=total, desc="compare ", unit="req") as progress:

        def one(name: str, level: tuple[int, str], round_number: int) -> dict[str, Any]:
            concurrency, workload = level
            items, send = workloads[workload]
            return measure(containers[name].url, items, send, concurrency, progress)

        # A B B A, so that each head leads as often.
        measured = side_by_side(one, list(containers), levels, rounds, order="abba")
    runs = {
        (workload, concurrency, name): measured[name][(concurrency, workload)]
        for concurrency, workload in levels
        for name in containers
    }
    k = configuration.k or 1
    return [
        row(workload, concurrency, name, merged(counts), k)
        for (workload, concurrency, name), counts in runs.items()
    ]


def merged(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """One configuration's rounds as one measurement, keeping each round's tok/s: the
    counts summed, the acceptance per position averaged (greedy: the same answers)."""
    positions = [counts["by_position"] for counts in rounds if counts["by_position"]]
    return {
        **{key: sum(counts[key] for counts in rounds) for key in ("draft", "accepted", "tokens")},
        "seconds": sum(counts["seconds"] for counts in rounds),
        "by_position": [sum(column) / len(column) for column in zip(*positions, strict=True)],
        "rounds_tokens_per_s": [counts["tokens"] / counts["seconds"] for counts in rounds],
    }


def workloads_for(load: Workload, code_prompts: int) -> dict[str, tuple[Sequence[Any], Send]]:
    code = [CODE_INSTRUCTION + prompt for prompt in humaneval_prompts()[:code_prompts]]
    return {f"{load.name} (held out)": (load.held_out, load.send), "humaneval": (code, send_prompt)}


def side_by_side_table(rows: list[dict]) -> list[str]:
    """compare's rows as a markdown table, one line per (workload, concurrency, head)."""
    lines = [
        "| workload | c | head | mean acceptance length | accepted at positions 1..K "
        "| output tok/s |",
        "|---|---|---|---|---|---|",
    ]
    return lines + [
        f"| {row['workload']} | {row['concurrency']} | {row['head']} | "
        f"{row['mean_acceptance_length']} | "
        f"{', '.join(f'{rate:.2f}' for rate in row.get('acceptance_per_position', []))} | "
        f"{row['output_tokens_per_s']} |"
        for row in rows
    ]


Rows = dict[tuple[str, int, str], dict]


def table_with_rows(rows: list[dict], head: str) -> tuple[list[str], Rows, list[tuple[str, int]]]:
    """compare's rows as a table (then a blank line), the rows keyed by (workload,
    concurrency, head), and the (workload, concurrency) pairs `head` was measured at."""
    by_key = {(row["workload"], row["concurrency"], row["head"]): row for row in rows}
    cells = [(workload, concurrency) for workload, concurrency, name in by_key if name == head]
    return [*side_by_side_table(rows), ""], by_key, cells


def round_range(row: dict, none: dict) -> str:
    """' (rounds A-B)': the ratio of each interleaved round, when there were several."""
    ratios = [
        speed / alone
        for speed, alone in zip(
            row.get("rounds_tokens_per_s", []), none.get("rounds_tokens_per_s", []), strict=False
        )
    ]
    return f" (rounds {min(ratios):.2f}-{max(ratios):.2f})" if len(ratios) > 1 else ""
