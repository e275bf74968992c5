"""`crossover`: no speculation and P-EAGLE at each K, side by side at each concurrency, on
local containers or SageMaker endpoints; the envelope, the schedule that follows it, and the
SM_VLLM_SPECULATIVE_CONFIG to deploy (bench/envelope.py)."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from statistics import median
from typing import Any

from bench import envelope
from bench.configuration import trained_depth
from bench.envelope import (
    DEFAULT_CONCURRENCY,
    DEFAULT_K,
    DEFAULT_MAX_NUM_SEQS,
    DEFAULT_MIN_GAIN,
    NONE_NAME,
    SCHEDULE_NAME,
    name_of,
    verification_table,
)
from bench.options import (
    add_command,
    add_local_args,
    add_rounds,
    drafter_of,
    int_list,
    local_container,
    sampled_payloads,
    settings_of,
)
from bench.report import write_json
from bench.side_by_side import measure_rounds, measure_side_by_side
from bench.targets import SageMakerTarget
from harness.configurations import Configuration
from serving.variables import BATCH_SCHEDULE_KEY

HELP = (
    "no speculation and P-EAGLE at each K, side by side at each concurrency: the fastest K per "
    "load, the batch-size schedule that follows it, and the SM_VLLM_SPECULATIVE_CONFIG to deploy"
)


def add_parser(commands: Any) -> None:
    parser = add_command(commands, "crossover", command, HELP, max_tokens=64)
    parser.add_argument(
        "--k",
        type=int_list,
        help="draft lengths (default 1,2,3,5,7 up to the head's trained depth)",
    )
    parser.add_argument(
        "--concurrency",
        type=int_list,
        default=list(DEFAULT_CONCURRENCY),
        help="levels, default 1,2,4,8,16,32,64",
    )
    add_rounds(parser, 2)
    parser.add_argument(
        "--min-gain",
        type=float,
        default=DEFAULT_MIN_GAIN,
        help="how much faster than no speculation a K must be to be chosen (default "
        "%(default)s: 3%%)",
    )
    parser.add_argument(
        "--max-num-seqs",
        type=int,
        default=DEFAULT_MAX_NUM_SEQS,
        help="where the schedule's last range ends: the endpoint's SM_VLLM_MAX_NUM_SEQS "
        "(default %(default)s, vLLM's largest default)",
    )
    parser.add_argument(
        "--verify",
        action="store_true",
        help="local containers: then measure the schedule it chose side by side with no "
        "speculation and with each K it uses alone, at the same levels",
    )
    parser.add_argument(
        "--verify-config",
        type=Path,
        metavar="FILE",
        help="only verify this speculative-config.json (from an earlier run), measuring "
        "nothing else",
    )
    endpoints = parser.add_argument_group("SageMaker endpoints instead of local containers")
    endpoints.add_argument(
        "--endpoint",
        action="append",
        default=[],
        metavar="K=NAME",
        help="an endpoint serving the same head at K (0: no speculation); one per K, repeat",
    )
    endpoints.add_argument("--region", help="AWS region of the endpoints")
    endpoints.add_argument("--endpoint-url", help="SageMaker Runtime's URL (default: AWS's)")
    add_local_args(parser.add_argument_group("local containers"))


def parse_endpoints(items: list[str]) -> dict[int, str]:
    endpoints = {}
    for item in items:
        k, separator, name = item.partition("=")
        if not separator or not k.isdigit() or not name:
            raise SystemExit(f"--endpoint {item!r} is not K=NAME; e.g. --endpoint 3=qwen-k3.")
        endpoints[int(k)] = name
    if 0 not in endpoints:
        raise SystemExit("--endpoint: give the endpoint without speculation too, as 0=NAME.")
    return endpoints


def measure_endpoints(
    endpoints: dict[int, str], args: argparse.Namespace, payloads: list[dict[str, Any]]
) -> dict[str, dict[int, list[dict[str, Any]]]]:

    async def all_of_them() -> dict[str, dict[int, list[dict[str, Any]]]]:
        targets = {
            name_of(k): SageMakerTarget(
                name, args.region, max(args.concurrency) + 8, args.endpoint_url
            )
            for k, name in sorted(endpoints.items())
        }
        try:
            return await measure_rounds(targets, payloads, args.concurrency, args.rounds)
        finally:
            for target in targets.values():
                await target.aclose()

    return asyncio.run(all_of_them())


def measure_local(
    ks: list[int], args: argparse.Namespace, payloads: list[dict[str, Any]]
) -> dict[str, dict[int, list[dict[str, Any]]]]:

    drafter = drafter_of(args)
    containers = {
        name_of(k): local_container(
            args,
            Configuration("peagle", k, drafter) if k else Configuration("none"),
            f"crossover-{name_of(k)}",
        )
        for k in [0, *ks]
    }
    return measure_side_by_side(containers, payloads, args.concurrency, args.rounds)


def verify_locally(
    config: dict[str, Any], args: argparse.Namespace, payloads: list[dict[str, Any]]
) -> str:
    """The schedule against no speculation and each K it uses alone, side by side."""

    largest = config["num_speculative_tokens"]
    used = sorted({k for _, _, k in config.get(BATCH_SCHEDULE_KEY) or [] if k} | {largest})
    drafter = drafter_of(args)
    # Every variant batches as many requests as the schedule's container does.
    shared = {}
    if args.max_num_seqs != DEFAULT_MAX_NUM_SEQS:
        shared["SM_VLLM_MAX_NUM_SEQS"] = str(args.max_num_seqs)
    # The schedule's container serves the configuration file as it is, the head named in it.
    scheduled = json.dumps({**config, "model": str(drafter)})
    variants = {
        NONE_NAME: (Configuration("none"), shared),
        **{name_of(k): (Configuration("peagle", k, drafter), shared) for k in used},
        SCHEDULE_NAME: (
            Configuration("peagle", largest, drafter),
            {**shared, "SM_VLLM_SPECULATIVE_CONFIG": scheduled},
        ),
    }
    containers = {
        name: local_container(args, configuration, f"verify-{name}", extra)
        for name, (configuration, extra) in variants.items()
    }
    measured = measure_side_by_side(containers, payloads, args.concurrency, args.rounds)
    rounds = {
        name: {level: [run["output_tokens_per_s"] for run in runs] for level, runs in by.items()}
        for name, by in measured.items()
    }
    return verification_table(rounds, [name_of(k) for k in used])


def verify_only(args: argparse.Namespace) -> int:
    """--verify-config FILE: the schedule in FILE, side by side, and nothing else."""
    try:
        config = json.loads(args.verify_config.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise SystemExit(f"--verify-config {args.verify_config}: {error}") from None
    if not isinstance(config, dict) or BATCH_SCHEDULE_KEY not in config:
        raise SystemExit(
            f"--verify-config {args.verify_config} has no {BATCH_SCHEDULE_KEY}; give the "
            "speculative-config.json a crossover run wrote."
        )
    text = (
        "# The schedule against no speculation and each K it uses alone, side by side\n\n"
        f"Schedule: {json.dumps(config[BATCH_SCHEDULE_KEY])}, {args.rounds} interleaved "
        "rounds\n\n" + verify_locally(config, args, sampled_payloads(args))
    )
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "verify.md").write_text(text + "\n")
    print(text)
    print(f"\nwrote {args.out_dir}/verify.md")
    return 0


def command(args: argparse.Namespace) -> int:
    if args.verify_config is not None:
        return verify_only(args)

    endpoints = parse_endpoints(args.endpoint) if args.endpoint else None
    if endpoints:
        ks = sorted(k for k in endpoints if k)
    else:
        depth = trained_depth(drafter_of(args))
        ks = args.k or [k for k in DEFAULT_K if depth is None or k <= depth]
        if depth is not None and (too_deep := [k for k in ks if k > depth]):
            raise SystemExit(f"--k {too_deep}: the head was trained for K up to {depth}.")
    payloads = sampled_payloads(args)
    if endpoints:
        measured = measure_endpoints(endpoints, args, payloads)
    else:
        measured = measure_local(ks, args, payloads)
    rounds = {
        k: {
            level: [run["output_tokens_per_s"] for run in runs]
            for level, runs in measured[name_of(k)].items()
        }
        for k in [0, *ks]
    }
    tokens_per_s = {
        k: {level: median(values) if values else None for level, values in by_level.items()}
        for k, by_level in rounds.items()
    }
    best = envelope.envelope(tokens_per_s, args.min_gain)
    ranges = envelope.schedule(best, args.max_num_seqs)
    config = envelope.speculative_config(ranges)
    out = args.out_dir
    envelope.plot(tokens_per_s, best, out / "crossover.png")
    write_json(
        out / "crossover.json",
        {
            "settings": settings_of(args),
            "tokens_per_s_rounds": rounds,
            "envelope": best,
            "schedule": ranges,
            "speculative_config": config,
        },
    )
    deploy_text = json.dumps(config) if config else None
    (out / "speculative-config.json").write_text(json.dumps(config, indent=2) + "\n")
    text = "\n\n".join(
        [
            f"# Crossover: median output tokens/s over {args.rounds} interleaved rounds, and "
            "each K against no speculation (range over the rounds); the envelope in bold",
            envelope.table(tokens_per_s, envelope.ratio_spread(rounds), best),
            "Envelope: "
            + ", ".join(f"c={level} {name_of(k)}" for level, k in sorted(best.items())),
            "Schedule (batch sizes, K): " + json.dumps(ranges),
            (
                f"Deploy with SM_VLLM_SPECULATIVE_CONFIG='{deploy_text}'"
                + (
                    f" and SM_VLLM_MAX_NUM_SEQS={args.max_num_seqs}"
                    if args.max_num_seqs != DEFAULT_MAX_NUM_SEQS
                    else ""
                )
                + f", or `sagemaker-peagle-deploy deploy --speculative-config "
                f"{out / 'speculative-config.json'}`."
                if config
                else "No K beat no speculation by the margin at any level: deploy without "
                "speculation here, or train a head with higher acceptance."
            ),
        ]
    )
    if args.verify and endpoints:
        text += "\n\n--verify measures local containers; deploy the schedule and compare there."
    elif args.verify and config and BATCH_SCHEDULE_KEY in config:
        text += (
            "\n\n## The schedule against no speculation and each K it uses alone, side by side"
            "\n\n" + verify_locally(config, args, payloads)
        )
    (out / "crossover.md").write_text(text + "\n")
    print(text)
    print(f"\nwrote {out}/crossover.md, crossover.json, crossover.png and speculative-config.json")
    return 0
