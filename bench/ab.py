"""Two containers of one configuration that differ only in their environment, measured side
by side: both up together, the same requests sent to each in turn, round after round, so a
noisy machine weighs on both alike. For the cost of a setting (per-request metrics, capture)
as a ratio rather than a number from another day.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from statistics import median
from typing import Any

from bench.container import Configuration, LocalContainer
from bench.report import markdown, write_json
from bench.run import run_level, warm_up
from bench.targets import UrlTarget

VARIANTS = ("A", "B")
# The figures compared, and their titles.
FIGURES = {
    "output_tokens_per_s": "tok/s",
    "ttft_ms_p50": "TTFT p50 ms",
    "latency_ms_p50": "latency p50 ms",
    "latency_ms_p99": "latency p99 ms",
}


def parse_env(items: Sequence[str]) -> dict[str, str]:
    """KEY=VALUE arguments as a dict."""
    env = {}
    for item in items:
        key, separator, value = item.partition("=")
        if not separator or not key:
            raise SystemExit(f"{item!r} is not KEY=VALUE; give settings like SERVING_X=1.")
        env[key] = value
    return env


async def measure_rounds(
    targets: Mapping[str, UrlTarget],
    payloads: Sequence[dict[str, Any]],
    levels: Sequence[int],
    rounds: int,
) -> dict[str, dict[int, list[dict[str, Any]]]]:
    """Every level on every variant, `rounds` times."""
    for target in targets.values():
        await warm_up(target, payloads)
    measured: dict[str, dict[int, list[dict[str, Any]]]] = {
        name: {level: [] for level in levels} for name in targets
    }
    names = list(targets)
    for round_number in range(rounds):
        for level_number, level in enumerate(levels):
            # Flipped each round and each level, so neither variant always goes first.
            flip = (round_number + level_number) % 2
            for name in names[::-1] if flip else names:
                label = f"round {round_number + 1} {name} "
                measured[name][level].append(
                    await run_level(targets[name], payloads, level, label=label)
                )
    return measured


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


def table(summary: dict[str, dict[int, dict]], env: Mapping[str, Mapping[str, str]]) -> str:
    """One row per level and figure: A, B, and B against A."""
    rows = []
    for level in summary["A"]:
        a_level, b_level = summary["A"][level], summary["B"][level]
        for figure, title in FIGURES.items():
            a, b = a_level[figure], b_level[figure]
            if a is None or b is None:
                shown = ["n/a" if value is None else f"{value:.2f}" for value in (a, b)]
                rows.append([str(level), title, *shown, "-"])
                continue
            change = f"{b / a:.3f}x ({b - a:+.2f})" if a else "-"
            rows.append([str(level), title, f"{a:.2f}", f"{b:.2f}", change])
        rows.append(
            [str(level), "failed requests", str(a_level["failed"]), str(b_level["failed"]), "-"]
        )
    header = "\n".join(
        f"- {name}: " + (" ".join(f"{k}={v}" for k, v in env[name].items()) or "(defaults)")
        for name in VARIANTS
    )
    return header + "\n\n" + markdown(["c", "figure", "A", "B", "B / A (B - A)"], rows)


def run_ab(
    configuration: Configuration,
    env: Mapping[str, Mapping[str, str]],
    payloads: Sequence[dict[str, Any]],
    levels: Sequence[int],
    rounds: int,
    opt_ml_root: Path,
    out_dir: Path,
    enforce_eager: bool = True,
) -> str:
    """Start both, measure, stop both; writes ab.json and ab.md and returns the table."""
    containers = {
        name: LocalContainer(
            configuration,
            opt_ml_root=opt_ml_root,
            log_path=out_dir / "logs" / f"ab-{name}.log",
            enforce_eager=enforce_eager,
            extra_env=env[name],
        )
        for name in VARIANTS
    }
    with contextlib.ExitStack() as stopping:
        for container in containers.values():
            # Each stopped on the way out, even when stopping another one fails.
            stopping.callback(container.stop)
            container.start()
        for name, container in containers.items():
            print(f"[{name}] ready after {container.wait_ready():.0f} s", flush=True)

        async def both() -> dict[str, dict[int, list[dict[str, Any]]]]:
            targets = {
                name: UrlTarget(container.url, max_connections=max(levels) + 8)
                for name, container in containers.items()
            }
            try:
                return await measure_rounds(targets, payloads, levels, rounds)
            finally:
                for target in targets.values():
                    await target.aclose()

        measured = asyncio.run(both())
    summary = medians(measured)
    text = table(summary, env)
    if problems := failures(summary):
        text += "\n\nRequests failed, so the figures above leave them out:\n" + "\n".join(
            f"- {problem}" for problem in problems
        )
    write_json(
        out_dir / "ab.json",
        {
            "configuration": configuration.describe(),
            "env": env,
            "rounds": rounds,
            "median": summary,
            "runs": measured,
        },
    )
    (out_dir / "ab.md").write_text(f"# A/B: {configuration.name}, {rounds} rounds\n\n{text}\n")
    return text
