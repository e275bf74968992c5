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
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
from tqdm import tqdm

from bench.container import Configuration, LocalContainer
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
    body = answer.json()
    stats = body["metrics"]["speculative_decoding"]
    return (
        stats["num_draft_tokens"],
        stats["num_accepted_draft_tokens"],
        body["usage"]["completion_tokens"],
    )


def compare(
    configuration: Configuration,
    heads: dict[str, Path],
    workloads: dict[str, list[str]],
    out: Path,
) -> dict[str, dict[str, dict[str, float]]]:
    """Every request to every head's container in turn (c=1): mean acceptance length and
    output tokens/s per head and workload."""
    containers = {
        name: LocalContainer(
            replace(configuration, drafter=paths.channel_dir(opt_ml)),
            opt_ml,
            log_path=out / f"compare-{name}.log",
        )
        for name, opt_ml in heads.items()
    }
    totals = {
        head: {workload: [0, 0, 0, 0.0] for workload in workloads} for head in containers
    }  # draft, accepted, tokens, seconds
    try:
        for container in containers.values():
            container.start()
        for container in containers.values():
            container.wait_ready()
        requests = [(workload, prompt) for workload, items in workloads.items() for prompt in items]
        with tqdm(total=len(requests) * len(containers), desc="compare ", unit="req") as progress:
            for workload, prompt in requests:
                for name, container in containers.items():
                    began = time.perf_counter()
                    answer = httpx.post(
                        f"{container.url}/invocations", json=chat(prompt), timeout=120
                    )
                    elapsed = time.perf_counter() - began
                    answer.raise_for_status()
                    draft, accepted, tokens = speculation_of(answer)
                    total = totals[name][workload]
                    total[0] += draft
                    total[1] += accepted
                    total[2] += tokens
                    total[3] += elapsed
                    progress.update(1)
    finally:
        for container in containers.values():
            container.stop()
    k = configuration.k or 1
    return {
        head: {
            workload: {
                # 1 + accepted per verify step; each step drafts K tokens.
                "mean_acceptance_length": round(1 + accepted / (draft / k), 3) if draft else 1.0,
                "output_tokens_per_s": round(tokens / seconds, 1),
            }
            for workload, (draft, accepted, tokens, seconds) in by_workload.items()
        }
        for head, by_workload in totals.items()
    }


def workloads_for(held_out: list[str], code_prompts: int) -> dict[str, list[str]]:
    return {
        "prose (held out)": held_out,
        "humaneval": [CODE_INSTRUCTION + prompt for prompt in humaneval_prompts()[:code_prompts]],
    }


def run_loop(configuration: Configuration, opt_ml: Path, out: Path, code_prompts: int) -> dict:
    from capture.export import Options, export
    from model_data_sources.finetune import finetune

    started = time.monotonic()
    prompts = prose_prompts()
    captured, held_out = prompts[:CAPTURED_PROMPTS], prompts[CAPTURED_PROMPTS:]
    capture_dir = capture(configuration, opt_ml, out, captured)
    summary = export(Options(inputs=(capture_dir,), out_dir=out / "train"))
    print(summary.line(out / "train"))
    tuned = out / "opt_ml"
    tuning = finetune(opt_ml, out / "train" / "train.openai.jsonl", tuned)
    figures = compare(
        configuration,
        {"base": opt_ml, "fine-tuned": tuned},
        workloads_for(held_out, code_prompts),
        out,
    )
    return {
        "configuration": configuration.describe(),
        "captured_requests": len(captured),
        "training_set": summary.written,
        "fine_tune": tuning,
        "side_by_side": figures,
        "seconds": round(time.monotonic() - started, 1),
    }


def table(result: dict) -> str:
    figures = result["side_by_side"]
    lines = [
        "| workload | head | mean acceptance length | output tok/s |",
        "|---|---|---|---|",
    ]
    for workload in figures["base"]:
        for head in figures:
            row = figures[head][workload]
            lines.append(
                f"| {workload} | {head} | {row['mean_acceptance_length']} | "
                f"{row['output_tokens_per_s']} |"
            )
    base, tuned = figures["base"], figures["fine-tuned"]
    for workload in base:
        ratio = tuned[workload]["mean_acceptance_length"] / base[workload]["mean_acceptance_length"]
        lines.append(f"\n{workload}: fine-tuned / base acceptance length {ratio:.2f}x")
    return "\n".join(lines)


def write(result: dict, out: Path) -> None:
    (out / "retrain.json").write_text(json.dumps(result, indent=2) + "\n")
    (out / "retrain.md").write_text(table(result) + "\n")
