"""Containers measured side by side: all up together, the same requests sent to each in
turn, round after round, so a noisy machine weighs on all alike, and each figure taken as the
median over the rounds (the loop is `bench.compare`'s). `compare` measures its variants this
way; the sweep, its configurations; crossover, each K.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from statistics import median
from typing import Any

from bench.compare import compare_async
from bench.configuration import LocalContainer, up_together
from bench.run import run_level, warm_up
from bench.targets import UrlTarget

# The figures compared, and their titles.
FIGURES = {
    "output_tokens_per_s": "tok/s",
    "ttft_ms_p50": "TTFT p50 ms",
    "latency_ms_p50": "latency p50 ms",
    "latency_ms_p99": "latency p99 ms",
}


async def measure_rounds(
    targets: Mapping[str, UrlTarget],
    payloads: Sequence[dict[str, Any]],
    levels: Sequence[int],
    rounds: int,
) -> dict[str, dict[int, list[dict[str, Any]]]]:
    """Every level on every variant, `rounds` times, in rotation."""
    for target in targets.values():
        await warm_up(target, payloads)

    async def one(name: str, level: int, round_number: int) -> dict[str, Any]:
        label = f"round {round_number + 1} {name} "
        return await run_level(targets[name], payloads, level, label=label)

    return await compare_async(one, list(targets), levels, rounds)


def measure_side_by_side(
    containers: Mapping[str, LocalContainer],
    payloads: Sequence[dict[str, Any]],
    levels: Sequence[int],
    rounds: int,
) -> dict[str, dict[int, list[dict[str, Any]]]]:
    """Start every container (`up_together`), measure them all in interleaved rounds, stop
    them all."""
    with up_together(containers):

        async def all_of_them() -> dict[str, dict[int, list[dict[str, Any]]]]:
            targets = {
                name: UrlTarget(container.url, max_connections=max(levels) + 8)
                for name, container in containers.items()
            }
            try:
                return await measure_rounds(targets, payloads, levels, rounds)
            finally:
                for target in targets.values():
                    await target.aclose()

        return asyncio.run(all_of_them())


def medians(measured: dict[str, dict[int, list[dict[str, Any]]]]) -> dict[str, dict[int, dict]]:
    """Per variant and level, the median of each figure over the rounds, and the requests
    that failed in all of them."""
    return {
        name: {
            level: {
                **{
                    figure: median(values)
                    if (values := [run[figure] for run in runs if run[figure] is not None])
                    else None
                    for figure in FIGURES
                },
                "failed": sum(run["failed"] for run in runs),
                "errors": sorted({error for run in runs for error in run["errors"]})[:3],
            }
            for level, runs in by_level.items()
        }
        for name, by_level in measured.items()
    }


def failures(summary: dict[str, dict[int, dict]]) -> list[str]:
    """A line per variant and level whose requests failed, with the first errors."""
    return [
        f"{name} at c={level}: {figures['failed']} requests failed: {'; '.join(figures['errors'])}"
        for name, by_level in summary.items()
        for level, figures in by_level.items()
        if figures["failed"]
    ]


def failures_note(summary: dict[str, dict[int, dict]]) -> str:
    """A paragraph naming the requests that failed, for a report; empty when none did."""
    if not (problems := failures(summary)):
        return ""
    return "\n\nRequests failed, so the figures above leave them out:\n" + "\n".join(
        f"- {problem}" for problem in problems
    )
