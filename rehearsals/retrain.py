"""The retraining loop, shown on the demo pair: a workload is captured through the running
container, exported as a training set, the head fine-tuned on it, and both heads measured
side by side on held-out requests of that workload and on HumanEval. Two workloads:
- `prose`: questions the head was not trained on, one request each;
- `agent`: multi-turn sessions with tools (workloads/agent.py): calls, their results, the next
  call or the answer, every turn captured (capture export keeps the tool calls and results).

Acceptance comes from each answer's own speculation (vLLM's per-request metrics), so the
two heads are compared on exactly the same requests, sent to both containers in turn; the
acceptance at each draft position from vLLM's counters around each measurement.
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from tqdm import tqdm

from bench.configuration import LocalContainer
from bench.options import add_local_command, add_rounds, configuration_of
from harness.configurations import FIXED_DEFAULT, Configuration
from rehearsals.heads_side_by_side import (
    NO_SPECULATION,
    Workload,
    compare,
    round_range,
    send_prompt,
    table_with_rows,
    workloads_for,
)
from serving import paths
from workloads import agent
from workloads.prompts import prose_prompts

CAPTURED_PROMPTS = 112  # of the 144 prose questions; the other 32 are held out
CAPTURED_SESSIONS = 144  # agent sessions captured; HELD_OUT_SESSIONS others measure
HELD_OUT_SESSIONS = 32
CAPTURE_CLIENTS = 4
WORKLOADS = ("prose", "agent")


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


def table(result: dict) -> str:
    lines, by_key, cells = table_with_rows(result["side_by_side"], "fine-tuned")
    for workload, concurrency in cells:
        tuned = by_key[workload, concurrency, "fine-tuned"]
        base = by_key[workload, concurrency, "base"]
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


def write(result: dict, out: Path) -> None:
    (out / "retrain.json").write_text(json.dumps(result, indent=2) + "\n")
    (out / "retrain.md").write_text(table(result) + "\n")


HELP = (
    "the retraining loop on the demo pair: capture a workload (prose requests, or agent "
    "sessions with tools), export, fine-tune the P-EAGLE head, then both heads side by side "
    "on held-out requests of that workload and HumanEval"
)


def add_parser(commands: Any) -> None:
    parser = add_local_command(commands, "retrain", command, HELP, config=FIXED_DEFAULT)
    parser.set_defaults(config="peagle:7", out_dir=Path("build/retrain"))
    parser.add_argument(
        "--code-prompts", type=int, default=32, help="HumanEval prompts in the comparison"
    )
    parser.add_argument(
        "--workload",
        choices=("prose", "agent"),
        default="prose",
        help="what is captured and held out: prose questions, or multi-turn agent sessions "
        "with tools (workloads/agent.py) (default prose)",
    )
    add_rounds(parser, 1, "interleaved rounds of the comparison, every container in turn")
    parser.add_argument(
        "--fine-tuned",
        type=Path,
        help="an /opt/ml tree a run of the loop wrote (OUT_DIR/opt_ml): compare its head only, "
        "without capturing and fine-tuning again",
    )


def command(args: argparse.Namespace) -> int:

    configuration = configuration_of(args)
    if configuration.method != "peagle":
        raise SystemExit(
            f"--config {configuration.name}: the loop retrains a P-EAGLE head; use peagle:K."
        )
    if args.rounds < 1:
        raise SystemExit(f"--rounds {args.rounds}: give 1 or more.")
    if args.fine_tuned and not paths.channel_dir(args.fine_tuned).is_dir():
        raise SystemExit(
            f"--fine-tuned {args.fine_tuned}: not an /opt/ml tree with a head; give the opt_ml "
            "folder a run of the loop wrote (its --out-dir's opt_ml)."
        )
    args.out_dir.mkdir(parents=True, exist_ok=True)
    result = run_loop(
        configuration,
        args.opt_ml_root.absolute(),
        args.out_dir.absolute(),
        args.code_prompts,
        args.workload,
        rounds=args.rounds,
        fine_tuned=args.fine_tuned.absolute() if args.fine_tuned else None,
    )
    write(result, args.out_dir)
    print(table(result))
    print(f"whole loop {result['seconds']} s; figures in {args.out_dir / 'retrain.json'}")
    return 0
