"""`engine`: configurations side by side in one process, the engine alone
(bench/engine_side_by_side.py)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from bench.commands.common import (
    add_local_args,
    add_out_dir,
    add_prompt_args,
    drafter_of,
    int_list,
    payloads_of,
    settings_of,
)

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
    parser.add_argument("--rounds", type=int, default=4, help="default 4")
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
    from bench.configuration import local_engine_settings, parse_configuration
    from bench.report import write_json

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

    from bench.engine_side_by_side import engine_kwargs, prompt_token_ids, side_by_side, table

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
