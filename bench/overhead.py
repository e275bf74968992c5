"""What the front costs: the same load straight to the engine's port and through the front,
interleaved in one run (ABBA rounds) so that drift in the machine's load hits both alike."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx

from bench import report
from bench.client import RequestResult, send
from bench.compare import compare_async
from bench.options import (
    add_levels_command,
    add_rounds,
    sampled_payloads,
    serving_target,
    settings_of,
)
from bench.report import markdown
from bench.run import requests_for_level, run_batch, warm_up
from bench.stats import ms, percentile
from bench.targets import READ_TIMEOUT_SECONDS, Target, UrlTarget
from serving.engine_client import ENGINE_ORIGIN as ENGINE_BASE_URL


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
    targets = {"direct": direct, "front": front}
    front_cpu_seconds = 0.0

    async def leg(name: str, level: int, round_number: int) -> tuple[list[RequestResult], float]:
        nonlocal front_cpu_seconds
        cpu_before = front_cpu() if front_cpu and name == "front" else 0.0
        leg_measured = await run_batch(targets[name], batch, level)
        if front_cpu and name == "front":
            front_cpu_seconds += front_cpu() - cpu_before
        return leg_measured

    measured = await compare_async(leg, list(targets), [concurrency], rounds, order="abba")
    collected = {
        name: (
            [result for results, _ in legs[concurrency] for result in results],
            sum(wall for _, wall in legs[concurrency]),
        )
        for name, legs in measured.items()
    }
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


class EngineSocketTarget:
    """vLLM itself, reached the way the front reaches it: its /invocations over a Unix socket."""

    metrics_url = None  # the spec-decode counters are read through the front

    def __init__(self, socket_path: Path, max_connections: int):
        self.name = f"unix:{socket_path}"
        self.http = httpx.AsyncClient(
            base_url=ENGINE_BASE_URL,
            transport=httpx.AsyncHTTPTransport(
                uds=str(socket_path),
                limits=httpx.Limits(
                    max_connections=max_connections, max_keepalive_connections=max_connections
                ),
            ),
            timeout=httpx.Timeout(connect=10.0, read=READ_TIMEOUT_SECONDS, write=30.0, pool=None),
        )

    async def send(self, payload: dict[str, Any]) -> RequestResult:
        return await send(self.http, f"{ENGINE_BASE_URL}/invocations", payload)

    async def aclose(self) -> None:
        await self.http.aclose()


def process_cpu(container: Any):
    """CPU seconds of the container's front process, user and system (children not counted)."""
    import psutil

    front = psutil.Process(container.process.pid)

    def seconds() -> float:
        times = front.cpu_times()
        return times.user + times.system

    return seconds


def add_parser(commands: Any) -> None:
    parser = add_levels_command(
        commands, "overhead", command, "front overhead against the bare engine", [1, 32], 64
    )
    parser.add_argument(
        "--engine-socket",
        type=Path,
        help="the engine's Unix socket behind --url (the front logs 'engine on unix:PATH')",
    )
    parser.add_argument(
        "--runtime-url",
        help="measure the local SageMaker Runtime (make local-runtime) in front of --url "
        "instead: the same requests to the container and through the runtime",
    )
    add_rounds(parser, 4, "alternating engine/front rounds per level")


def command(args: argparse.Namespace) -> int:
    # InvokeEndpoint answers whole bodies (the stream is another route, in event-stream frames).
    payloads = sampled_payloads(args, stream=not args.runtime_url)
    with serving_target(args) as (url, container):
        engine_socket = args.engine_socket or (container and container.engine_socket())
        if not engine_socket and not args.runtime_url:
            raise SystemExit(
                "the engine's socket is needed: --engine-socket PATH (the front logs "
                "'engine on unix:PATH'), or --start CONFIG."
            )

        front_cpu = None if container is None or args.runtime_url else process_cpu(container)

        async def measure() -> list[dict[str, Any]]:
            connections = max(args.concurrency) + 8
            front = UrlTarget(
                url.rstrip("/").removesuffix("/invocations") + "/invocations", connections
            )
            if args.runtime_url:
                # The legs shift one hop out: the container is the base, the runtime the extra.
                direct = front
                front = UrlTarget(
                    args.runtime_url.rstrip("/") + "/endpoints/bench/invocations", connections
                )
            else:
                direct = EngineSocketTarget(engine_socket, connections)
            try:
                return await measure_overhead(
                    direct, front, payloads, args.concurrency, args.rounds, front_cpu
                )
            finally:
                await direct.aclose()
                await front.aclose()

        results = asyncio.run(measure())
    table = overhead_table(results)
    if args.runtime_url:
        table = "engine = the container, front = the local runtime in front of it\n\n" + table
    report.write_json(
        args.out_dir / "overhead.json", {"settings": settings_of(args), "levels": results}
    )
    (args.out_dir / "overhead.md").write_text(f"# Front overhead\n\n{table}\n")
    print(table)
    print(f"\nwrote {args.out_dir}/overhead.json and overhead.md")
    return 0
