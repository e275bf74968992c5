"""Engines side by side in one process: the speed of the engine alone, without the HTTP layer.

Every configuration's vLLM engine is loaded into this process (`LLM`, with
VLLM_ENABLE_V1_MULTIPROCESSING=0 so the engine core and the worker run here too), and each
takes the same requests in turn, rounds interleaved. A level of N clients is a closed loop
driven step by step: N requests in flight, the next one added as soon as one finishes.

What this removes from `crossover --verify-config`: the front, the API server and the clients,
which share the cores with the engine and move a 64-client figure by 10-15% from one run to
the next on a 2-core machine, and the spread between processes (each engine here is
measured in the same process, in the same minutes). What it keeps: vLLM's own scheduler,
runner, drafter and KV cache, with the container's CPU settings (32-token blocks, the
demo's dtype and model length).

A burst through the HTTP layer does not reach the engine at once: the first requests are
scheduled before the rest arrive, and a schedule drafts for that first, smaller batch.
`arrive_first` models it: that many requests, one engine step, then the rest of the level.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median
from typing import Any

from bench.compare import compare
from bench.configuration import local_engine_settings
from bench.options import (
    add_local_args,
    add_out_dir,
    add_prompt_args,
    add_rounds,
    drafter_of,
    int_list,
    payloads_of,
    settings_of,
)
from bench.report import write_json
from bench.run import requests_for_level
from harness.configurations import Configuration, parse_configuration
from serving import paths
from serving.engine_args.cpu_block_size import CPU_BLOCK_SIZE

_request_ids = itertools.count()


@dataclass
class LevelRun:
    """One configuration at one level, one round."""

    tokens_per_s: float
    output_tokens: int
    steps: int
    outputs: list[tuple[int, ...]] = field(repr=False)


def engine_kwargs(
    configuration: Configuration, opt_ml_root: Path, max_num_seqs: int, enforce_eager: bool
) -> dict[str, Any]:
    """The `LLM` arguments for one configuration, as the container serves it on the CPU."""
    settings = local_engine_settings(opt_ml_root)
    kwargs: dict[str, Any] = {
        "model": str(paths.model_dir(opt_ml_root)),
        "dtype": settings["SM_VLLM_DTYPE"],
        "max_model_len": int(settings["SM_VLLM_MAX_MODEL_LEN"]),
        "block_size": CPU_BLOCK_SIZE,
        "max_num_seqs": max_num_seqs,
        "enforce_eager": enforce_eager,
        "enable_prefix_caching": True,
        "seed": 0,
    }
    speculative = configuration.speculative_config()
    if speculative is not None:
        kwargs["speculative_config"] = speculative
    return kwargs


def prompt_token_ids(tokenizer: Any, payload: dict[str, Any]) -> list[int]:
    """A chat (or completion) payload as the token ids the API server would give the engine."""
    if "messages" in payload:
        text = tokenizer.apply_chat_template(
            payload["messages"], add_generation_prompt=True, tokenize=False
        )
    else:
        text = payload["prompt"]
    return tokenizer.encode(text, add_special_tokens=False)


def closed_loop(
    engine: Any,
    prompts: Sequence[list[int]],
    concurrency: int,
    params: Any,
    arrive_first: int = 0,
    clock: Callable[[], float] = time.perf_counter,
) -> LevelRun:
    """Every prompt once with at most `concurrency` in flight, on an `LLMEngine`; with
    `arrive_first`, the level opens with that many requests for one step."""
    pending = list(enumerate(prompts))[::-1]
    ids: dict[str, int] = {}
    outputs: dict[int, tuple[int, ...]] = {}

    def add(count: int) -> None:
        for _ in range(min(count, len(pending))):
            index, token_ids = pending.pop()
            request_id = f"side-by-side-{next(_request_ids)}"
            ids[request_id] = index
            engine.add_request(request_id, {"prompt_token_ids": token_ids}, params)

    def step() -> int:
        """One engine step; how many requests it finished."""
        finished = [output for output in engine.step() if output.finished]
        for output in finished:
            outputs[ids.pop(output.request_id)] = tuple(output.outputs[0].token_ids)
        return len(finished)

    started = clock()
    steps = 0
    opening = arrive_first if 0 < arrive_first < concurrency else concurrency
    add(opening)
    if opening < concurrency:
        steps += 1
        add(concurrency - opening + step())
    while engine.has_unfinished_requests():
        steps += 1
        add(step())
    elapsed = clock() - started
    tokens = sum(len(text) for text in outputs.values())
    return LevelRun(tokens / elapsed, tokens, steps, [outputs[i] for i in sorted(outputs)])


@dataclass
class Comparison:
    """Each level's runs of each configuration, in rounds; the first configuration is the
    baseline."""

    names: list[str]
    runs: dict[int, dict[str, list[LevelRun]]]

    def ratios(self, level: int, name: str) -> list[float]:
        base = self.runs[level][self.names[0]]
        return [
            run.tokens_per_s / other.tokens_per_s
            for run, other in zip(self.runs[level][name], base, strict=True)
        ]

    def identical(self, level: int, name: str) -> tuple[int, int]:
        """(answers equal to the baseline's, answers) in the first round."""
        mine = self.runs[level][name][0].outputs
        base = self.runs[level][self.names[0]][0].outputs
        return sum(a == b for a, b in zip(mine, base, strict=True)), len(base)

    def describe(self) -> dict[str, Any]:
        return {
            str(level): {
                name: {
                    "tokens_per_s": [run.tokens_per_s for run in runs],
                    "output_tokens": [run.output_tokens for run in runs],
                    "steps": [run.steps for run in runs],
                    "ratio_to_baseline": self.ratios(level, name),
                    "identical_to_baseline": list(self.identical(level, name)),
                }
                for name, runs in by_name.items()
            }
            for level, by_name in self.runs.items()
        }


def side_by_side(
    engines: dict[str, Any],
    prompts: Sequence[list[int]],
    levels: Sequence[int],
    rounds: int,
    params: Any,
    arrive_first: int = 0,
    progress: Callable[[str], None] = lambda line: None,
) -> Comparison:
    """Each round, each level, each engine in turn, A B B A (`bench.compare`)."""

    def one(name: str, level: int, number: int) -> LevelRun:
        batch = requests_for_level(prompts, level)
        run = closed_loop(engines[name], batch, level, params, arrive_first)
        progress(f"round {number + 1}/{rounds} c={level} {name}: {run.tokens_per_s:.1f} tok/s")
        return run

    measured = compare(one, list(engines), levels, rounds, order="abba")
    runs = {level: {name: measured[name][level] for name in engines} for level in levels}
    return Comparison(list(engines), runs)


def table(comparison: Comparison) -> str:
    """Median tok/s of each configuration per level, and its ratio to the baseline's with the
    range over the rounds."""
    names = comparison.names
    lines = [
        "| c | "
        + " | ".join(f"{name} tok/s" for name in names)
        + " | "
        + " | ".join(f"{name} / {names[0]}" for name in names[1:])
        + " | tokens per step | identical |",
        "|" + "---|" * (2 + 2 * len(names)),
    ]
    for level, by_name in comparison.runs.items():
        rates = [f"{median(run.tokens_per_s for run in by_name[name]):.1f}" for name in names]
        ratios = []
        for name in names[1:]:
            values = comparison.ratios(level, name)
            ratios.append(f"{median(values):.3f}x ({min(values):.2f}-{max(values):.2f})")
        per_step = ", ".join(
            f"{median(run.output_tokens / run.steps for run in by_name[name]):.1f}"
            for name in names
        )
        same = [comparison.identical(level, name) for name in names[1:]]
        identical = ", ".join(f"{equal}/{total}" for equal, total in same)
        lines.append(
            f"| {level} | " + " | ".join(rates + ratios) + f" | {per_step} | {identical} |"
        )
    return "\n".join(lines)


HELP = (
    "configurations side by side in one process, without the HTTP layer: each one's vLLM "
    "engine loaded together, closed loops of N clients driven step by step, rounds "
    "interleaved; tok/s and each configuration's ratio to the first"
)
# No speculation, the K=0-tail schedule, and a schedule at K=0 for every batch the
# levels reach.
DEFAULT_CONFIGS = "none,peagle:7@1-16/3@17-40/0@41-1024,peagle:0@1-1023/7@1024-1024"


def add_parser(commands: Any) -> None:
    parser = commands.add_parser("engine", help=HELP, description=HELP)
    parser.set_defaults(handler=command)
    add_out_dir(parser)
    add_prompt_args(parser, 64)
    parser.add_argument(
        "--configs",
        default=DEFAULT_CONFIGS,
        help="comma-separated configurations, the first the baseline: none, eagle3:K, peagle:K "
        f"or K@START-END ranges joined by / (default {DEFAULT_CONFIGS})",
    )
    parser.add_argument("--concurrency", type=int_list, default=[1, 16, 64], help="default 1,16,64")
    add_rounds(parser, 4)
    parser.add_argument(
        "--arrive-first",
        type=int,
        default=0,
        metavar="N",
        help="open each level with N requests for one step, then the rest, as a burst reaches "
        "the engine through the API server (default 0: all at once)",
    )
    add_local_args(parser.add_argument_group("model tree"))


def command(args: argparse.Namespace) -> int:
    if args.workload != "humaneval":
        raise SystemExit(
            "--workload: engine takes HumanEval or --prompts; tools and grammars are the API "
            "server's, so measure them with crossover or sweep."
        )
    if args.rounds < 1:
        raise SystemExit("--rounds: 1 or more.")
    drafter = drafter_of(args)
    configurations = [parse_configuration(text, drafter) for text in args.configs.split(",")]
    names = [configuration.name for configuration in configurations]
    if len(configurations) < 2 or len(set(names)) < len(names):
        raise SystemExit("--configs: two or more different configurations, the first the baseline.")
    # Every engine in this process, each with the container's KV cache size.
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    os.environ["VLLM_CPU_KVCACHE_SPACE"] = local_engine_settings()["VLLM_CPU_KVCACHE_SPACE"]
    from vllm import LLM, SamplingParams

    loaded = {}
    for configuration in configurations:
        print(f"loading {configuration.name} ...", file=sys.stderr)
        loaded[configuration.name] = LLM(
            **engine_kwargs(
                configuration,
                args.opt_ml_root.absolute(),
                max(args.concurrency),
                args.enforce_eager,
            )
        )
    engines = {name: llm.llm_engine for name, llm in loaded.items()}
    tokenizer = next(iter(engines.values())).get_tokenizer()
    prompts = [prompt_token_ids(tokenizer, payload) for payload in payloads_of(args)]
    params = SamplingParams(
        temperature=args.temperature, max_tokens=args.max_tokens, ignore_eos=args.ignore_eos
    )
    # Warm-up: every prompt once, so that each engine finds them in its prefix cache, as
    # the other commands' warm-up does.
    warm_up = SamplingParams(temperature=0, max_tokens=1)
    side_by_side(engines, prompts, [max(args.concurrency)], 1, warm_up)
    comparison = side_by_side(
        engines,
        prompts,
        args.concurrency,
        args.rounds,
        params,
        args.arrive_first,
        progress=lambda line: print(line, file=sys.stderr),
    )
    text = table(comparison)
    opening = f"{args.arrive_first} requests first" if args.arrive_first else "all at once"
    heading = (
        f"# Engines side by side: {len(prompts)} prompts x {args.max_tokens} tokens, "
        f"{args.rounds} rounds, each level opening with {opening}\n\n"
    )
    write_json(
        args.out_dir / "engine.json",
        {
            "settings": settings_of(args),
            "configurations": [c.describe() for c in configurations],
            "levels": comparison.describe(),
        },
    )
    (args.out_dir / "engine.md").write_text(heading + text + "\n")
    print(text)
    print(f"\nwrote {args.out_dir}/engine.json and engine.md")
    return 0
