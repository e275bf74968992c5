"""PNGs: output tokens/s against concurrency, and acceptance rate against draft position, one
line per configuration."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.report import Level


@contextmanager
def figure(path: Path, title: str) -> Iterator[Any]:
    """The axes of one titled, gridded chart, saved as a PNG at `path` when the block ends."""
    import matplotlib

    matplotlib.use("Agg")  # files only; no display on a server
    from matplotlib import pyplot

    chart, axes = pyplot.subplots(figsize=(7, 4.5))
    try:
        yield axes
        axes.set_title(title)
        axes.grid(True, alpha=0.3)
        chart.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        chart.savefig(path, dpi=120)
    finally:
        pyplot.close(chart)


def throughput(runs: Mapping[str, Sequence[Level]], path: Path, title: str) -> None:
    with figure(path, title) as axes:
        for name, levels in runs.items():
            points = [(level["concurrency"], level["output_tokens_per_s"]) for level in levels]
            axes.plot([c for c, _ in points], [t for _, t in points], marker="o", label=name)
        axes.set_xscale("log", base=2)
        concurrencies = sorted({level["concurrency"] for run in runs.values() for level in run})
        axes.set_xticks(concurrencies, [str(c) for c in concurrencies])
        axes.set_xlabel("concurrency")
        axes.set_ylabel("output tokens/s")
        axes.legend(fontsize="small")


def positions(runs: Mapping[str, Sequence[Level]], path: Path, title: str) -> None:
    """Acceptance rate against draft position, one line per speculative configuration, at its
    lowest measured concurrency (the legend names it)."""
    with figure(path, title) as axes:
        depth = 0
        for name, levels in runs.items():
            if (measured := lowest_level_positions(levels)) is None:
                continue
            concurrency, rates = measured
            positions = range(1, len(rates) + 1)
            axes.plot(positions, rates, marker="o", label=f"{name} (c={concurrency})")
            depth = max(depth, len(rates))
        if depth:
            axes.set_xticks(range(1, depth + 1))
            axes.legend(fontsize="small")
        else:
            axes.text(
                0.5, 0.5, "no configuration drafted tokens", ha="center", transform=axes.transAxes
            )
        axes.set_ylim(0, 1.05)
        axes.set_xlabel("draft position")
        axes.set_ylabel("accepted / drafts")


def lowest_level_positions(levels: Sequence[Level]) -> tuple[int, list[float]] | None:
    """The acceptance rates by position at the lowest concurrency that has them, and that level."""
    measured = [level for level in levels if level.get("acceptance_per_position")]
    if not measured:
        return None
    level = min(measured, key=lambda item: item["concurrency"])
    return level["concurrency"], level["acceptance_per_position"]
