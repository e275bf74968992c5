"""`bench scrape`: what SageMaker's scraping of /metrics costs the serving (detailed
observability, `deploy --metrics-frequency`): N clients (32 by default) for T seconds, with
/metrics scraped every second from a process of its own and without, in ABBA order (each
leads as often); the scrape's latency and the load's completed requests per second side by
side, each round's ratio and their median. The goal: scrape p99 under 50 ms, throughput
within noise of no scraper.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
from typing import Any

from bench import report
from bench.compare import compare
from bench.load import run_load
from bench.options import add_command, add_rounds, add_target_args, payloads_of, serving_target
from bench.report import markdown

VARIANTS = ("scraped", "not scraped")
SCRAPE_INTERVAL_SECONDS = 1.0
SCRAPE_GOAL_P99_MS = 50.0


def summary(measured: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    scraped, alone = measured["scraped"], measured["not scraped"]
    ratios = [
        with_["completed_per_s"] / without["completed_per_s"]
        for with_, without in zip(scraped, alone, strict=True)
        if without["completed_per_s"]
    ]
    p99 = max((round_["scrape_ms_p99"] for round_ in scraped), default=None)
    return {
        "throughput_ratios": ratios,
        "throughput_ratio_median": statistics.median(ratios) if ratios else None,
        "scrape_ms_p50_median": statistics.median(r["scrape_ms_p50"] for r in scraped),
        "scrape_ms_p99_worst": p99,
        "scrape_failures": [round_["scrape_failures"] for round_ in scraped],
        "scrape_goal_met": p99 is not None and p99 < SCRAPE_GOAL_P99_MS,
        "lost": sum(r["lost"] for rounds in measured.values() for r in rounds),
    }


def table(measured: dict[str, list[dict[str, Any]]]) -> str:
    rows = []
    for name in VARIANTS:
        for number, round_ in enumerate(measured[name]):
            scrape = (
                f"{round_['scrape_ms_p50']:.1f} / {round_['scrape_ms_p99']:.1f}"
                if name == "scraped"
                else "-"
            )
            rows.append([
                name, str(number), f"{round_['completed_per_s']:.2f}", scrape,
                f"{round_['ping_ms_p99']:.1f}", str(round_["lost"]),
            ])  # fmt: skip
    headers = ["variant", "round", "completed/s", "scrape ms p50 / p99", "ping ms p99", "lost"]
    return markdown(headers, rows)


def add_parser(commands: Any) -> None:
    parser = add_command(commands, "scrape", command, "the cost of scraping /metrics", 64)
    add_target_args(parser)
    parser.add_argument("--clients", type=int, default=32, help="default 32")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds a turn, default 60")
    add_rounds(parser, 2, "ABBA rounds of scraped and not")


def command(args: argparse.Namespace) -> int:
    payloads = payloads_of(args)
    with serving_target(args) as (url, _):

        def measure(variant: str, _level: int, _round: int) -> dict[str, Any]:
            interval = SCRAPE_INTERVAL_SECONDS if variant == "scraped" else None
            print(f"{variant}: {args.clients} clients for {args.duration:.0f} s ...", flush=True)
            return asyncio.run(
                run_load(
                    url, payloads, args.clients, args.duration, max_tokens=args.max_tokens,
                    scrape_interval=interval,
                )
            )  # fmt: skip

        measured = compare(measure, VARIANTS, [args.clients], args.rounds, order="abba")
    by_variant = {name: levels[args.clients] for name, levels in measured.items()}
    result = {"clients": args.clients, "rounds": by_variant, **summary(by_variant)}
    report.write_json(args.out_dir / "scrape.json", result)
    print(table(by_variant))
    ratio = result["throughput_ratio_median"]
    print(
        f"\nthroughput scraped / not: {ratio:.3f} (median of {len(result['throughput_ratios'])} "
        f"rounds); scrape p99 {result['scrape_ms_p99_worst']:.1f} ms, goal under "
        f"{SCRAPE_GOAL_P99_MS:.0f} ms: {'met' if result['scrape_goal_met'] else 'NOT met'}"
    )
    print(f"\nwrote {args.out_dir}/scrape.json")
    return 0 if result["lost"] == 0 else 1
