"""`shadow`: rehearse a head rollout locally (good head in production, random head as the
shadow, compare's verdict), then the production path's latency with a shadow attached."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from bench import report
from bench.commands.common import (
    add_local_command,
    add_prompt_args,
    configuration_of,
    sampled_payloads,
)

HELP = (
    "head rollout rehearsal: a random head (or --shadow-opt-ml-root's) as the shadow, compare, "
    "and the shadow's cost"
)


def add_parser(commands: Any) -> None:
    parser = add_local_command(commands, "shadow", command, HELP)
    add_prompt_args(parser, max_tokens=64)
    parser.add_argument("--requests", type=int, default=64, help="rehearsal requests (%(default)s)")
    parser.add_argument(
        "--sample", type=int, default=50, help="percent mirrored to the shadow (%(default)s)"
    )
    parser.add_argument(
        "--overhead-prompts", type=int, default=32, help="prompts per overhead round (%(default)s)"
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=4,
        help="alternating rounds (%(default)s; 0 leaves the shadow's cost out)",
    )
    parser.add_argument(
        "--shadow-opt-ml-root",
        type=Path,
        help="a model tree whose head is the shadow (e.g. a retrained head: make "
        "retrain-agent-demo's build/retrain-agent/opt_ml); default a random head",
    )


def command(args: argparse.Namespace) -> int:
    from bench.shadow import measure

    # Whole answers (the runtime mirrors InvokeEndpoint), ended by their grammar where the
    # workload has one: an agent turn's call ends it, and tokens forced past it are not traffic.
    payloads = sampled_payloads(args, stream=False)
    rehearsal = [payloads[index % len(payloads)] for index in range(args.requests)]
    overhead = payloads[: args.overhead_prompts]
    configuration = configuration_of(args)
    result = measure(
        configuration,
        args.opt_ml_root.absolute(),
        rehearsal,
        overhead,
        args.out_dir,
        args.sample,
        args.rounds,
        args.shadow_opt_ml_root.absolute() if args.shadow_opt_ml_root else None,
    )
    report.write_json(args.out_dir / "shadow.json", result)
    rehearsed = result["rehearsal"]
    lines = [
        f"rehearsal: {rehearsed['requests']} requests through the local runtime, "
        f"{rehearsed['shadow']['mirrored']} mirrored to the shadow "
        f"({rehearsed['shadow']['failed']} failed); production's answers identical to the "
        f"container's own: {rehearsed['answers_identical']}/{rehearsed['requests']}",
        "",
        rehearsed["comparison"],
        "| shadow attached | requests per path | latency p50 ms (no shadow / shadow) | "
        "added p50 ms | latency p99 ms (no shadow / shadow) | added p99 ms |",
        "|---|---|---|---|---|---|",
    ]
    labels = {
        "standin": "stand-in (the runtime's own cost)",
        "engine": "the shadow's engine on the same cores",
    }
    for name, label in labels.items():
        if name not in result["overhead"]:
            continue
        figures = result["overhead"][name]
        plain, shadowed = figures["direct"], figures["front"]
        lines.append(
            f"| {label} | {plain['completed']} | "
            f"{plain['latency_ms_p50']:.1f} / {shadowed['latency_ms_p50']:.1f} | "
            f"{figures['added_latency_ms_p50']:+.2f} | "
            f"{plain['latency_ms_p99']:.1f} / {shadowed['latency_ms_p99']:.1f} | "
            f"{figures['added_latency_ms_p99']:+.2f} |"
        )
    text = "\n".join(lines)
    (args.out_dir / "shadow.md").write_text(f"# Head rollout rehearsal\n\n{text}\n")
    print(text)
    return 0
