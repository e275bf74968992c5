"""The retraining loop, shown on the demo pair: a workload the head was not trained on
(prose questions) is captured through the running container, exported as a training set,
the head fine-tuned on it, and both heads measured side by side on held-out requests of
that workload and on HumanEval.

Acceptance comes from each answer's own speculation (vLLM's per-request metrics), so the
two heads are compared on exactly the same requests, sent to both containers in turn.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
from tqdm import tqdm

from bench.configuration import Configuration, LocalContainer
from bench.prompts import CODE_INSTRUCTION, humaneval_prompts, prose_prompts
from serving import paths

CAPTURED_PROMPTS = 112  # of the 144 prose questions; the other 32 are held out
MAX_TOKENS = 64
CAPTURE_CLIENTS = 4


def chat(prompt: str) -> dict[str, Any]:
    return {
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": MAX_TOKENS,
        "temperature": 0,
    }


def capture(configuration: Configuration, opt_ml: Path, out: Path, prompts: list[str]) -> Path:
    """Serve `prompts` through a container with capture on; return the capture directory."""
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
            tqdm(total=len(prompts), desc="capture ", unit="req") as progress,
        ):

            def send(prompt: str) -> None:
                http.post("/invocations", json=chat(prompt)).raise_for_status()
                progress.update(1)

            list(pool.map(send, prompts))
    finally:
        container.stop()
    return directory


def speculation_of(answer: httpx.Response) -> tuple[int, int, int]:
    """(draft tokens, accepted draft tokens, completion tokens) of one answer."""
    answer.raise_for_status()
    body = answer.json()
    stats = body["metrics"]["speculative_decoding"]
    tokens = body["usage"]["completion_tokens"]
    return stats["num_draft_tokens"], stats["num_accepted_draft_tokens"], tokens


def measure(url: str, prompts: list[str], concurrency: int, progress: tqdm) -> dict[str, float]:
    """The prompts with `concurrency` clients: acceptance from the answers, output tokens/s."""
    with httpx.Client(base_url=url, timeout=120) as http, ThreadPoolExecutor(concurrency) as pool:

        def send(prompt: str) -> tuple[int, int, int]:
            counts = speculation_of(http.post("/invocations", json=chat(prompt)))
            progress.update(1)
            return counts

        began = time.perf_counter()
        results = list(pool.map(send, prompts))
        seconds = time.perf_counter() - began
    draft, accepted, tokens = (sum(column) for column in zip(*results, strict=True))
    return {"draft": draft, "accepted": accepted, "tokens": tokens, "seconds": seconds}


def row(workload: str, concurrency: int, head: str, counts: dict[str, float], k: int) -> dict:
    steps = counts["draft"] / k  # each verify step drafts K tokens
    length = 1 + counts["accepted"] / steps if steps else 1.0
    return {
        "workload": workload,
        "concurrency": concurrency,
        "head": head,
        "mean_acceptance_length": round(length, 3),
        "output_tokens_per_s": round(counts["tokens"] / counts["seconds"], 1),
    }


def compare(
    configuration: Configuration,
    heads: dict[str, Path],
    workloads: dict[str, list[str]],
    out: Path,
    concurrencies: tuple[int, ...] = (1, 4),
) -> list[dict]:
    """Each workload at each concurrency on each head's container in turn, both containers
    up together: one row per (workload, concurrency, head)."""
    containers = {
        name: LocalContainer(
            replace(configuration, drafter=paths.channel_dir(opt_ml)),
            opt_ml,
            log_path=out / f"compare-{name}.log",
        )
        for name, opt_ml in heads.items()
    }
    rows = []
    total = sum(map(len, workloads.values())) * len(containers) * len(concurrencies)
    k = configuration.k or 1
    try:
        for container in containers.values():
            container.start()
        for container in containers.values():
            container.wait_ready()
        with tqdm(total=total, desc="compare ", unit="req") as progress:
            for concurrency in concurrencies:
                for workload, prompts in workloads.items():
                    for name, container in containers.items():
                        counts = measure(container.url, prompts, concurrency, progress)
                        rows.append(row(workload, concurrency, name, counts, k))
    finally:
        for container in containers.values():
            container.stop()
    return rows


def workloads_for(held_out: list[str], code_prompts: int) -> dict[str, list[str]]:
    return {
        "prose (held out)": held_out,
        "humaneval": [CODE_INSTRUCTION + prompt for prompt in humaneval_prompts()[:code_prompts]],
    }


@dataclass(frozen=True)
class Loop:
    """The loop's first half: the prose workload captured and exported, the head fine-tuned."""

    captured: list[str]
    held_out: list[str]
    training_set: Path  # the export's train.openai.jsonl
    written: int
    tuned: Path  # an /opt/ml tree: the demo target and the fine-tuned head
    tuning: dict


def capture_and_export(
    configuration: Configuration, opt_ml: Path, out: Path, prompts: list[str]
) -> tuple[Path, int]:
    """`prompts` served with capture on and exported: the training set and its size."""
    from capture.export import Options, export

    summary = export(
        Options(inputs=(capture(configuration, opt_ml, out, prompts),), out_dir=out / "train")
    )
    print(summary.line(out / "train"), flush=True)
    return out / "train" / "train.openai.jsonl", summary.written


def capture_and_finetune(configuration: Configuration, opt_ml: Path, out: Path) -> Loop:
    from model_data_sources.finetune import finetune

    prompts = prose_prompts()
    captured, held_out = prompts[:CAPTURED_PROMPTS], prompts[CAPTURED_PROMPTS:]
    training_set, written = capture_and_export(configuration, opt_ml, out, captured)
    tuned = out / "opt_ml"
    tuning = finetune(opt_ml, training_set, tuned)
    return Loop(captured, held_out, training_set, written, tuned, tuning)


def run_loop(configuration: Configuration, opt_ml: Path, out: Path, code_prompts: int) -> dict:
    started = time.monotonic()
    loop = capture_and_finetune(configuration, opt_ml, out)
    figures = compare(
        configuration,
        {"base": opt_ml, "fine-tuned": loop.tuned},
        workloads_for(loop.held_out, code_prompts),
        out,
    )
    return {
        "configuration": configuration.describe(),
        "captured_requests": len(loop.captured),
        "training_set": loop.written,
        "fine_tune": loop.tuning,
        "side_by_side": figures,
        "seconds": round(time.monotonic() - started, 1),
    }


def side_by_side_table(rows: list[dict]) -> list[str]:
    """compare's rows as a markdown table, one line per (workload, concurrency, head)."""
    lines = [
        "| workload | c | head | mean acceptance length | output tok/s |",
        "|---|---|---|---|---|",
    ]
    return lines + [
        f"| {row['workload']} | {row['concurrency']} | {row['head']} | "
        f"{row['mean_acceptance_length']} | {row['output_tokens_per_s']} |"
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
        lines.append(
            f"- {workload}, c={concurrency}: fine-tuned / base acceptance length {length:.2f}x, "
            f"output tok/s {speed:.2f}x"
        )
    return "\n".join(lines)


def write(result: dict, out: Path) -> None:
    (out / "retrain.json").write_text(json.dumps(result, indent=2) + "\n")
    (out / "retrain.md").write_text(table(result) + "\n")
