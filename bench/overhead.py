"""What the front costs: the same load straight to the engine's port and through the front,
interleaved in one run (ABBA rounds) so that drift in the machine's load hits both alike."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from bench.client import RequestResult
from bench.report import markdown
from bench.run import requests_for_level, run_batch, warm_up
from bench.stats import ms, percentile
from bench.targets import Target


def leg_summary(results: Sequence[RequestResult], wall: float) -> dict[str, Any]:
    ok = [result for result in results if result.ok]
    latencies = [result.latency for result in ok]
    ttfts = [result.ttft for result in ok if result.ttft is not None]
    return {
        "requests": len(results),
        "completed": len(ok),
        "output_tokens": sum(result.output_tokens for result in ok),
        "duration_s": wall,
        "latency_ms_p50": ms(percentile(latencies, 50)),
        "latency_ms_p99": ms(percentile(latencies, 99)),
        "ttft_ms_p50": ms(percentile(ttfts, 50)),
        "ttft_ms_p99": ms(percentile(ttfts, 99)),
        "output_tokens_per_s": sum(result.output_tokens for result in ok) / wall if wall else 0.0,
    }


async def measure_level(
    direct: Target,
    front: Target,
    payloads: Sequence[dict[str, Any]],
    concurrency: int,
    rounds: int,
    front_cpu: Callable[[], float] | None = None,
) -> dict[str, Any]:
    """`front_cpu` reads the front process's CPU seconds (its own, not its children's): what
    it spends per relayed token is the figure the machine's noise does not move."""
    batch = requests_for_level(payloads, concurrency)
    front_cpu_seconds = 0.0
    collected: dict[str, tuple[list[RequestResult], float]] = {
        "direct": ([], 0.0),
        "front": ([], 0.0),
    }
    for round_number in range(rounds):
        order = [("direct", direct), ("front", front)]
        if round_number % 2:
            order.reverse()
        for name, target in order:
            cpu_before = front_cpu() if front_cpu and name == "front" else 0.0
            results, wall = await run_batch(target, batch, concurrency)
            if front_cpu and name == "front":
                front_cpu_seconds += front_cpu() - cpu_before
            previous, previous_wall = collected[name]
            collected[name] = (previous + results, previous_wall + wall)
    direct_summary = leg_summary(*collected["direct"])
    front_summary = leg_summary(*collected["front"])

    def added(key: str) -> float | None:
        if direct_summary[key] is None or front_summary[key] is None:
            return None
        return front_summary[key] - direct_summary[key]

    throughput_ratio = (
        front_summary["output_tokens_per_s"] / direct_summary["output_tokens_per_s"]
        if direct_summary["output_tokens_per_s"]
        else None
    )
    return {
        "concurrency": concurrency,
        "rounds": rounds,
        "direct": direct_summary,
        "front": front_summary,
        "added_latency_ms_p50": added("latency_ms_p50"),
        "added_latency_ms_p99": added("latency_ms_p99"),
        "added_ttft_ms_p50": added("ttft_ms_p50"),
        "added_ttft_ms_p99": added("ttft_ms_p99"),
        "throughput_ratio": throughput_ratio,
        "front_cpu_us_per_token": (
            front_cpu_seconds * 1e6 / front_summary["output_tokens"]
            if front_cpu and front_summary["output_tokens"]
            else None
        ),
    }


async def measure_overhead(
    direct: Target,
    front: Target,
    payloads: Sequence[dict[str, Any]],
    levels: Sequence[int],
    rounds: int,
    front_cpu: Callable[[], float] | None = None,
) -> list[dict[str, Any]]:
    await warm_up(direct, payloads)
    await warm_up(front, payloads)
    return [
        await measure_level(direct, front, payloads, level, rounds, front_cpu) for level in levels
    ]


def overhead_table(results: Sequence[dict[str, Any]]) -> str:
    def number(value: float | None, fmt: str = "{:.1f}") -> str:
        return "-" if value is None else fmt.format(value)

    def pair(result: dict[str, Any], key: str) -> str:
        return f"{number(result['direct'][key])} / {number(result['front'][key])}"

    rows = [
        [
            str(result["concurrency"]),
            str(result["direct"]["completed"]),
            pair(result, "latency_ms_p50"),
            pair(result, "latency_ms_p99"),
            number(result["added_latency_ms_p50"], "{:+.2f}"),
            number(result["added_latency_ms_p99"], "{:+.2f}"),
            number(result["added_ttft_ms_p50"], "{:+.2f}"),
            number(result["added_ttft_ms_p99"], "{:+.2f}"),
            pair(result, "output_tokens_per_s"),
            number(result["throughput_ratio"], "{:.3f}"),
            number(result.get("front_cpu_us_per_token"), "{:.0f}"),
        ]
        for result in results
    ]
    headers = [
        "concurrency",
        "requests per path",
        "latency p50 ms (engine / front)",
        "latency p99 ms (engine / front)",
        "added p50 ms",
        "added p99 ms",
        "added TTFT p50 ms",
        "added TTFT p99 ms",
        "output tok/s (engine / front)",
        "throughput ratio",
        "front CPU us per token",
    ]
    return markdown(headers, rows)
