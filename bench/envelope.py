"""The crossover: which K is fastest at each load, and the batch-size schedule that follows it.

No speculation and P-EAGLE at each K are measured side by side in interleaved rounds at each
concurrency (bench/side_by_side.py). At each level the envelope is the configuration with the
highest median output tokens/s, where a K must beat no speculation by `min_gain` to count (a
win inside the rounds' noise is not worth drafting for). The schedule gives each level's
winning K to the batch sizes nearest it (ranges split at the geometric midpoint between
levels, since loads are compared in ratios), K=0 where no speculation wins, and runs its last
range to max_num_seqs. Concurrency stands in for the batch size: each client has one request
in the engine at a time.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from statistics import median
from typing import Any

from bench import plots

DEFAULT_K = (1, 2, 3, 5, 7)
DEFAULT_CONCURRENCY = (1, 2, 4, 8, 16, 32, 64)
DEFAULT_MIN_GAIN = 0.03
# vLLM's largest default max_num_seqs; serving/preflight/batch_schedule.py asks a schedule
# to reach it unless SM_VLLM_MAX_NUM_SEQS is set.
DEFAULT_MAX_NUM_SEQS = 1024
NONE_NAME = "none"
SCHEDULE_NAME = "schedule"


def name_of(k: int) -> str:
    return NONE_NAME if k == 0 else f"peagle-k{k}"


def envelope(
    tokens_per_s: Mapping[int, Mapping[int, float | None]], min_gain: float = DEFAULT_MIN_GAIN
) -> dict[int, int]:
    """Per level, the fastest K (0: no speculation). `tokens_per_s[k][level]` are medians."""
    levels = sorted({level for by_level in tokens_per_s.values() for level in by_level})
    best = {}
    for level in levels:
        baseline = tokens_per_s.get(0, {}).get(level) or 0.0
        choice, fastest = 0, baseline * (1 + min_gain)
        for k, by_level in sorted(tokens_per_s.items()):
            value = by_level.get(level)
            if k > 0 and value is not None and value > fastest:
                choice, fastest = k, value
        best[level] = choice
    return best


def schedule(best: Mapping[int, int], max_num_seqs: int) -> list[list[int]]:
    """Inclusive [start, end, K] ranges from batch size 1 to max_num_seqs, adjacent ranges of
    one K merged."""
    levels = sorted(best)
    ranges: list[list[int]] = []
    start = 1
    for index, level in enumerate(levels):
        if index + 1 < len(levels):
            end = max(level, min(levels[index + 1] - 1, math.isqrt(level * levels[index + 1])))
        else:
            end = max(level, max_num_seqs)
        end = min(end, max_num_seqs)
        if start > end:
            continue
        if ranges and ranges[-1][2] == best[level]:
            ranges[-1][1] = end
        else:
            ranges.append([start, end, best[level]])
        start = end + 1
    if ranges and ranges[-1][1] < max_num_seqs:
        ranges[-1][1] = max_num_seqs
    return ranges


def speculative_config(ranges: Sequence[Sequence[int]]) -> dict[str, Any] | None:
    """What to deploy as SM_VLLM_SPECULATIVE_CONFIG; None when no speculation wins anywhere.
    One K everywhere needs no schedule."""
    largest = max(k for _, _, k in ranges)
    if largest == 0:
        return None
    config: dict[str, Any] = {
        "method": "eagle3",
        "num_speculative_tokens": largest,
        "parallel_drafting": True,
    }
    if len({k for _, _, k in ranges}) > 1:
        config["num_speculative_tokens_per_batch_size"] = [list(entry) for entry in ranges]
    return config


def table(
    tokens_per_s: Mapping[int, Mapping[int, float | None]],
    spread: Mapping[int, Mapping[int, tuple[float, float]]],
    best: Mapping[int, int],
) -> str:
    """Median tok/s per K and level, each as a ratio of no speculation's with its range over
    the rounds; the envelope's choice in bold."""
    levels = sorted(best)
    lines = [
        "| K | " + " | ".join(f"c={level}" for level in levels) + " |",
        "|---|" + "---|" * len(levels),
    ]
    for k in sorted(tokens_per_s):
        cells = []
        for level in levels:
            value = tokens_per_s[k].get(level)
            baseline = tokens_per_s.get(0, {}).get(level)
            if value is None:
                cells.append("-")
                continue
            cell = f"{value:.1f}"
            if k and baseline:
                low, high = spread[k][level]
                cell += f" ({value / baseline:.2f}x, {low:.2f}-{high:.2f})"
            cells.append(f"**{cell}**" if best[level] == k else cell)
        lines.append(f"| {name_of(k)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def ratio_spread(
    measured: Mapping[int, Mapping[int, Sequence[float]]],
) -> dict[int, dict[int, tuple[float, float]]]:
    """Per K and level, the lowest and highest round's tok/s over no speculation's in the same
    round."""
    spread: dict[int, dict[int, tuple[float, float]]] = {}
    baseline = measured.get(0, {})
    for k, by_level in measured.items():
        spread[k] = {}
        for level, rounds in by_level.items():
            ratios = [
                value / base
                for value, base in zip(rounds, baseline.get(level, ()), strict=False)
                if base
            ]
            spread[k][level] = (min(ratios), max(ratios)) if ratios else (math.nan, math.nan)
    return spread


def verification_table(
    rounds: Mapping[str, Mapping[int, Sequence[float]]], fixed: Sequence[str]
) -> str:
    """Median tok/s of no speculation, each fixed K the schedule uses and the schedule, per
    level; the schedule's ratio to no speculation and to the best fixed K at that level (by
    median), each with the range over the rounds."""
    levels = sorted(rounds[SCHEDULE_NAME])

    def ratio(level: int, other: str) -> str:
        pairs = zip(rounds[SCHEDULE_NAME][level], rounds[other][level], strict=False)
        ratios = [mine / theirs for mine, theirs in pairs if theirs]
        if not ratios:
            return "-"
        return f"{median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})"

    names = [NONE_NAME, *fixed]
    lines = [
        "| c | "
        + " | ".join(f"{name} tok/s" for name in names)
        + f" | schedule tok/s | schedule / {NONE_NAME} | schedule / best fixed K |",
        "|---|" + "---|" * (len(names) + 3),
    ]
    for level in levels:
        cells = [f"{median(rounds[name][level]):.1f}" for name in names]
        cells.append(f"{median(rounds[SCHEDULE_NAME][level]):.1f}")
        best = max(fixed, key=lambda name: median(rounds[name][level]))
        lines.append(
            f"| {level} | " + " | ".join(cells) + f" | {ratio(level, NONE_NAME)} | "
            f"{ratio(level, best)} ({best}) |"
        )
    return "\n".join(lines)


def plot(
    tokens_per_s: Mapping[int, Mapping[int, float | None]], best: Mapping[int, int], path: Path
) -> None:
    """tok/s against concurrency per K, and the envelope the schedule follows."""
    with plots.figure(path, "Output tokens/s by K and concurrency, and the envelope") as axes:
        for k, by_level in sorted(tokens_per_s.items()):
            points = sorted((level, v) for level, v in by_level.items() if v is not None)
            axes.plot([c for c, _ in points], [v for _, v in points], marker="o", label=name_of(k))
        levels = sorted(best)
        hull = [tokens_per_s[best[level]][level] or 0.0 for level in levels]
        axes.plot(levels, hull, color="black", linewidth=3, alpha=0.35, label="envelope")
        axes.set_xscale("log", base=2)
        axes.set_xticks(levels, [str(level) for level in levels])
        axes.set_xlabel("concurrency (batch size)")
        axes.set_ylabel("output tokens/s")
        axes.legend(fontsize="small")
