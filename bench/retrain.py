"""The retraining loop, shown on the demo pair: a workload is captured through the running
container, exported as a training set, the head fine-tuned on it, and both heads measured
side by side on held-out requests of that workload and on HumanEval. Two workloads:
- `prose`: questions the head was not trained on, one request each;
- `agent`: multi-turn sessions with tools (bench/agent.py): calls, their results, the next
  call or the answer, every turn captured (capture export keeps the tool calls and results).

Acceptance comes from each answer's own speculation (vLLM's per-request metrics), so the
two heads are compared on exactly the same requests, sent to both containers in turn; the
acceptance at each draft position from vLLM's counters around each measurement.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
from tqdm import tqdm

from bench import agent
from bench.acceptance import acceptance_per_position, parse_counters
from bench.configuration import Configuration, LocalContainer, parse_configuration
from bench.prompts import CODE_INSTRUCTION, humaneval_prompts, prose_prompts
from serving import paths

CAPTURED_PROMPTS = 112  # of the 144 prose questions; the other 32 are held out
CAPTURED_SESSIONS = 144  # agent sessions captured; HELD_OUT_SESSIONS others measure
HELD_OUT_SESSIONS = 32
MAX_TOKENS = 64
CAPTURE_CLIENTS = 4
WORKLOADS = ("prose", "agent")
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


def workload(name: str) -> Workload:
    if name == "agent":
        return Workload(
            "agent",
            agent.sessions(agent.SEED, CAPTURED_SESSIONS),
            agent.sessions(agent.HELD_OUT_SEED, HELD_OUT_SESSIONS),
            agent.run_session,
        )
    prompts = prose_prompts()
    return Workload("prose", prompts[:CAPTURED_PROMPTS], prompts[CAPTURED_PROMPTS:], send_prompt)


def capture(configuration: Configuration, opt_ml: Path, out: Path, load: Workload) -> Path:
    """Serve the workload's captured part through a container with capture on; return the
    capture directory."""
    directory = out / "capture"
    container = LocalContainer(
        configuration,
        opt_ml,
        log_path=out / "capture.log",
        extra_env={"SERVING_CAPTURE_DIR": str(directory), "SERVING_EMF_INTERVAL_SECONDS": "0"},
    )
    container.start()
    try:
        container.wait_ready()
        with (
            httpx.Client(base_url=container.url, timeout=120) as http,
            ThreadPoolExecutor(CAPTURE_CLIENTS) as pool,
            tqdm(total=len(load.captured), desc="capture ", unit="item") as progress,
        ):

            def send(item: Any) -> None:
                load.send(http, item)
                progress.update(1)

            list(pool.map(send, load.captured))
    finally:
        container.stop()
    return directory


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
    runs: dict[tuple[str, int, str], list[dict[str, Any]]] = {}
    total = (
        sum(len(items) for items, _ in workloads.values())
        * len(containers)
        * len(concurrencies)
        * rounds
    )
    try:
        for container in containers.values():
            container.start()
        for container in containers.values():
            container.wait_ready()
        with tqdm(total=total, desc="compare ", unit="req") as progress:
            for _ in range(rounds):
                for concurrency in concurrencies:
                    for workload, (items, send) in workloads.items():
                        for name, container in containers.items():
                            counts = measure(container.url, items, send, concurrency, progress)
                            runs.setdefault((workload, concurrency, name), []).append(counts)
    finally:
        for container in containers.values():
            container.stop()
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


@dataclass(frozen=True)
class Loop:
    """The loop's first half: the workload captured and exported, the head fine-tuned."""

    load: Workload
    training_set: Path  # the export's train.openai.jsonl
    written: int
    tuned: Path  # an /opt/ml tree: the demo target and the fine-tuned head
    tuning: dict


def capture_and_export(
    configuration: Configuration, opt_ml: Path, out: Path, load: Workload
) -> tuple[Path, int]:
    """The workload's captured part served with capture on and exported: the training set
    and its size."""
    from capture.export import Options, export

    summary = export(
        Options(inputs=(capture(configuration, opt_ml, out, load),), out_dir=out / "train")
    )
    print(summary.line(out / "train"), flush=True)
    return out / "train" / "train.openai.jsonl", summary.written


def capture_and_finetune(
    configuration: Configuration, opt_ml: Path, out: Path, load: Workload | None = None
) -> Loop:
    from model_data_sources.finetune import finetune

    load = load or workload("prose")
    training_set, written = capture_and_export(configuration, opt_ml, out, load)
    tuned = out / "opt_ml"
    tuning = finetune(opt_ml, training_set, tuned)
    return Loop(load, training_set, written, tuned, tuning)


def run_loop(
    configuration: Configuration,
    opt_ml: Path,
    out: Path,
    code_prompts: int,
    workload_name: str = "prose",
    rounds: int = 1,
    fine_tuned: Path | None = None,
) -> dict:
    """The loop: capture, export, fine-tune, compare. With `fine_tuned` (an /opt/ml tree a
    run of the loop wrote), only the comparison runs, against that head."""
    started = time.monotonic()
    load = workload(workload_name)
    loop = (
        Loop(load, fine_tuned, 0, fine_tuned, {})
        if fine_tuned
        else capture_and_finetune(configuration, opt_ml, out, load)
    )
    figures = compare(
        configuration,
        {"base": opt_ml, "fine-tuned": loop.tuned},
        workloads_for(loop.load, code_prompts),
        out,
        no_speculation=workload_name == "agent",
        rounds=rounds,
    )
    return {
        "configuration": configuration.describe(),
        "workload": loop.load.name,
        "captured_items": len(loop.load.captured),
        "training_set": loop.written,
        "fine_tune": loop.tuning,
        "fine_tuned_head": str(loop.tuned),
        "rounds": rounds,
        "side_by_side": figures,
        "seconds": round(time.monotonic() - started, 1),
    }


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


def table(result: dict) -> str:
    rows = result["side_by_side"]
    lines = side_by_side_table(rows)
    by_key = {(row["workload"], row["concurrency"], row["head"]): row for row in rows}
    lines.append("")
    for workload, concurrency, head in by_key:
        if head != "fine-tuned":
            continue
        tuned, base = by_key[workload, concurrency, head], by_key[workload, concurrency, "base"]
        length = tuned["mean_acceptance_length"] / base["mean_acceptance_length"]
        speed = tuned["output_tokens_per_s"] / base["output_tokens_per_s"]
        line = (
            f"- {workload}, c={concurrency}: fine-tuned / base acceptance length {length:.2f}x, "
            f"output tok/s {speed:.2f}x"
        )
        none = by_key.get((workload, concurrency, NO_SPECULATION))
        if none:
            speeds = {
                name: by_key[workload, concurrency, name]["output_tokens_per_s"]
                for name in ("base", "fine-tuned")
            }
            ratios = [
                f"{name} {speed / none['output_tokens_per_s']:.2f}x"
                + round_range(by_key[workload, concurrency, name], none)
                for name, speed in speeds.items()
            ]
            line += f"; P-EAGLE / no speculation: {', '.join(ratios)}"
        lines.append(line)
    return "\n".join(lines)


def round_range(row: dict, none: dict) -> str:
    """' (rounds A-B)': the ratio of each interleaved round, when there were several."""
    ratios = [
        speed / alone
        for speed, alone in zip(
            row.get("rounds_tokens_per_s", []), none.get("rounds_tokens_per_s", []), strict=False
        )
    ]
    return f" (rounds {min(ratios):.2f}-{max(ratios):.2f})" if len(ratios) > 1 else ""


def write(result: dict, out: Path) -> None:
    (out / "retrain.json").write_text(json.dumps(result, indent=2) + "\n")
    (out / "retrain.md").write_text(table(result) + "\n")
