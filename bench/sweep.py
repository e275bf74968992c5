"""The configuration sweep: a local container per speculation setting, restarted each time,
the concurrency sweep against it, and the brief's comparison table at the end."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench import report
from bench.container import Configuration, LocalContainer
from bench.run import run_sweep
from bench.targets import UrlTarget

DEFAULT_K = (3, 7, 11)
POSITIONS_NOTE = (
    "Share of drafts whose token at each position was accepted during the level (vLLM's"
    " accepted-per-position counter over its drafts counter); position 1 follows the last"
    " real token.\n\n"
)


def default_configurations(
    drafter: Path | None, eagle3_drafter: Path | None, ks: Sequence[int] = DEFAULT_K
) -> list[Configuration]:
    """No speculation; EAGLE-3 sequential at each K; P-EAGLE at each K.

    The drafters are parameters: a P-EAGLE head also runs sequentially, but a real EAGLE-3
    head (another channel) is the fairer baseline when there is one."""
    return (
        [Configuration("none")]
        + [Configuration("eagle3", k, eagle3_drafter or drafter) for k in ks]
        + [Configuration("peagle", k, drafter) for k in ks]
    )


def measure(
    configuration: Configuration,
    payloads: Sequence[dict[str, Any]],
    levels: Sequence[int],
    opt_ml_root: Path,
    out_dir: Path,
    port: int | None,
    enforce_eager: bool,
) -> tuple[list[dict[str, Any]], float]:
    """Start, wait for /ping 200, run the concurrency sweep, stop; the levels and start-up time."""
    container = LocalContainer(
        configuration,
        opt_ml_root=opt_ml_root,
        log_path=out_dir / "logs" / f"{configuration.name}.log",
        enforce_eager=enforce_eager,
    )
    if port:
        container.port = port
    with container.start():
        print(f"[{configuration.name}] starting on {container.url} ...", flush=True)
        ready_after = container.wait_ready()
        print(f"[{configuration.name}] ready after {ready_after:.0f} s", flush=True)

        async def sweep() -> list[dict[str, Any]]:
            target = UrlTarget(container.url, max_connections=max(levels) + 8)
            try:
                return await run_sweep(target, payloads, levels, label=f"{configuration.name} ")
            finally:
                await target.aclose()

        levels_measured = asyncio.run(sweep())
    return levels_measured, ready_after


def run_configurations(
    configurations: Sequence[Configuration],
    payloads: Sequence[dict[str, Any]],
    levels: Sequence[int],
    opt_ml_root: Path,
    out_dir: Path,
    settings: dict[str, Any],
    port: int | None = None,
    enforce_eager: bool = True,
) -> str:
    """Every configuration in turn; writes sweep.json, sweep.md, sweep.png and
    sweep-positions.png; returns the markdown report."""
    runs: dict[str, list[dict[str, Any]]] = {}
    described = {configuration.name: configuration.describe() for configuration in configurations}
    started = time.monotonic()
    for configuration in configurations:
        levels_measured, ready_after = measure(
            configuration, payloads, levels, opt_ml_root, out_dir, port, enforce_eager
        )
        runs[configuration.name] = levels_measured
        described[configuration.name]["ready_after_s"] = ready_after
        print(f"\n## {configuration.name}\n\n{report.levels_table(levels_measured)}\n", flush=True)
        # Written after each configuration, so a long sweep that fails keeps what it measured.
        report.write_json(
            out_dir / "sweep.json",
            {"settings": settings, "configurations": described, "runs": runs},
        )
    return write_report(out_dir, runs, described, (time.monotonic() - started) / 60)


def write_report(
    out_dir: Path,
    runs: Mapping[str, Sequence[dict[str, Any]]],
    described: Mapping[str, dict[str, Any]],
    minutes: float,
) -> str:
    """sweep.md, sweep.png and sweep-positions.png from the measured runs; returns the
    markdown report."""
    text = (
        "## Output tokens/s: best of each method\n\n"
        + report.comparison_table(runs, described)
        + "\n\n## Every configuration: output tokens/s (mean acceptance length)\n\n"
        + report.configurations_table(runs)
        + "\n\n## Acceptance per draft position\n\n"
        + POSITIONS_NOTE
        + report.positions_table(runs)
        + f"\n\nSweep took {minutes:.1f} min.\n"
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "sweep.md").write_text("# Configuration sweep\n\n" + text)
    report.plot_throughput(runs, out_dir / "sweep.png", "output tokens/s by configuration")
    report.plot_positions(
        runs, out_dir / "sweep-positions.png", "acceptance rate by draft position"
    )
    return text
