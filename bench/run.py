"""The concurrency sweep: every prompt at each concurrency level, one level after another."""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import httpx
from tqdm import tqdm

from bench import plots, report
from bench.acceptance import acceptance_length, acceptance_per_position, read_counters
from bench.client import RequestResult
from bench.options import add_levels_command, sampled_payloads, serving_target, settings_of
from bench.stats import summarize
from bench.targets import Target, make_target

DEFAULT_CONCURRENCY = (1, 4, 8, 32)
Prompt = TypeVar("Prompt")
WARM_UP_CONCURRENCY = 4


async def run_batch(
    target: Target,
    payloads: Sequence[dict[str, Any]],
    concurrency: int,
    progress: tqdm | None = None,
) -> tuple[list[RequestResult], float]:
    """Send every payload with at most `concurrency` in flight; the results and wall time."""
    queue: asyncio.Queue[tuple[int, dict[str, Any]]] = asyncio.Queue()
    for item in enumerate(payloads):
        queue.put_nowait(item)
    results: list[RequestResult | None] = [None] * len(payloads)

    async def worker() -> None:
        while not queue.empty():
            index, payload = queue.get_nowait()
            results[index] = await target.send(payload)
            if progress is not None:
                progress.update(1)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(min(concurrency, len(payloads)))))
    return [result for result in results if result is not None], time.perf_counter() - started


def requests_for_level(payloads: Sequence[Prompt], concurrency: int) -> list[Prompt]:
    """Every prompt once, repeated round-robin if needed so that the level is reached."""
    count = max(len(payloads), concurrency)
    return [payloads[index % len(payloads)] for index in range(count)]


async def run_level(
    target: Target,
    payloads: Sequence[dict[str, Any]],
    concurrency: int,
    label: str = "",
    show_progress: bool = True,
) -> dict[str, Any]:
    batch = requests_for_level(payloads, concurrency)
    async with httpx.AsyncClient() as scraper:
        before = await read_counters(scraper, target.metrics_url)
        with tqdm(
            total=len(batch),
            desc=f"{label}c={concurrency}",
            unit="req",
            disable=not show_progress,
            leave=False,
        ) as progress:
            results, wall = await run_batch(target, batch, concurrency, progress)
        after = await read_counters(scraper, target.metrics_url)
    return summarize(
        results,
        wall,
        concurrency,
        acceptance_length(before, after),
        acceptance_per_position(before, after),
    )


async def warm_up(target: Target, payloads: Sequence[dict[str, Any]]) -> None:
    """Every prompt once, one token each, before measuring: the first level then does not pay
    for lazy start-up work, and every level (and tool) finds the prompts in vLLM's prefix
    cache alike, instead of only the first one paying for full prefills."""
    priming = [
        {key: value for key, value in payload.items() if key != "stream_options"}
        | {"max_tokens": 1, "stream": False}
        for payload in payloads
    ]
    results, _ = await run_batch(target, priming, WARM_UP_CONCURRENCY)
    failed = [result for result in results if not result.ok]
    if failed:
        raise SystemExit(
            f"warm-up requests to {target.name} failed ({failed[0].status}): {failed[0].error}"
        )


async def run_sweep(
    target: Target,
    payloads: Sequence[dict[str, Any]],
    levels: Sequence[int] = DEFAULT_CONCURRENCY,
    label: str = "",
    show_progress: bool = True,
) -> list[dict[str, Any]]:
    if not payloads:
        raise SystemExit("no prompts to send.")
    await warm_up(target, payloads)
    return [
        await run_level(target, payloads, concurrency, label, show_progress)
        for concurrency in levels
    ]


def add_parser(commands: Any) -> None:
    parser = add_levels_command(
        commands,
        "run",
        command,
        "concurrency sweep against one target",
        list(DEFAULT_CONCURRENCY),
        sagemaker=True,
    )
    parser.add_argument("--name", default="bench", help="file name stem of the results")


def command(args: argparse.Namespace) -> int:
    payloads = sampled_payloads(args)
    with serving_target(args) as (url, _):

        async def sweep() -> list[dict[str, Any]]:
            target = make_target(
                url,
                args.endpoint_name,
                args.region,
                max(args.concurrency) + 8,
                endpoint_url=args.endpoint_url,
            )
            try:
                return await run_sweep(target, payloads, args.concurrency)
            finally:
                await target.aclose()

        levels = asyncio.run(sweep())
    table = write_run(args.out_dir, args.name, levels, {"settings": settings_of(args)})
    print(table)
    print(f"\nwrote {args.out_dir}/{args.name}.json, .md and .png")
    return 0


def write_run(
    out_dir: Path, name: str, levels: Sequence[report.Level], meta: dict[str, Any]
) -> str:
    """One target's sweep: JSON, markdown and PNG in out_dir; returns the markdown table."""
    table = report.levels_table(levels)
    report.write_json(out_dir / f"{name}.json", {**meta, "levels": list(levels)})
    (out_dir / f"{name}.md").write_text(f"# {name}\n\n{table}\n")
    plots.throughput({name: levels}, out_dir / f"{name}.png", f"{name}: output tokens/s")
    return table
