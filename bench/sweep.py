"""The configuration sweep: a local container per speculation setting, restarted each time,
the concurrency sweep against it, and the brief's comparison table at the end."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench import plots, report
from bench.configuration import LocalContainer
from bench.options import (
    add_command,
    add_local_args,
    add_rounds,
    drafter_of,
    int_list,
    sampled_payloads,
    settings_of,
)
from bench.run import DEFAULT_CONCURRENCY, run_sweep
from bench.side_by_side import failures_note, measure_side_by_side, medians
from bench.targets import UrlTarget
from harness.configurations import Configuration, parse_configuration
from harness.paths import EAGLE3_CHANNEL
from serving import paths

# The trained demo heads are declared for 8 draft positions; deeper heads take --k.
DEFAULT_K = (3, 5, 7)
POSITIONS_NOTE = (
    "Share of drafts whose token at each position was accepted during the level (vLLM's"
    " accepted-per-position counter over its drafts counter); position 1 follows the last"
    " real token.\n\n"
)

# Interleaved rounds of the finalists; 0 leaves that stage out.
DEFAULT_ROUNDS = 3
SIDE_BY_SIDE_NOTE = (
    "Each method's best K over all levels (its tok/s as a share of the method's best at each"
    " level, summed), all up together and measured in interleaved rounds: median tok/s, and"
    " P-EAGLE's ratios with their range over the rounds. Quote these ratios: the tables below"
    " measure one configuration after another, so the machine's drift between them lands in"
    " their ratios.\n\n"
)

AGREEMENT_NOTE = (
    "Speculation is lossless: with greedy sampling each prompt's answer should be the same"
    " in every configuration. Each answer's text is compared by its SHA-256; a failed request"
    " counts as differing. On a CPU, batches of other sizes may round differently, so a level"
    " can differ from another where configurations agree within a level.\n\n"
)
ENDINGS_NOTE = (
    "Answers whose finish reason was `length`: cut at max_tokens rather than ended by the"
    " model or its grammar. Each is a run to the limit (a number or a string the model never"
    " closes, or text longer than the limit) and adds its tokens to the figures above.\n\n"
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


def finalists(
    runs: Mapping[str, Sequence[dict[str, Any]]], described: Mapping[str, dict[str, Any]]
) -> dict[str, str]:
    """Per method, the configuration that did best over all levels: the highest sum of its
    tok/s as a share of its method's best at each level."""
    levels = sorted({level["concurrency"] for run in runs.values() for level in run})
    chosen = {}
    for method in report.METHOD_TITLES:
        names = [name for name in runs if described[name]["method"] == method]
        tops = {
            concurrency: max(
                (report.throughput_at(runs[name], concurrency) or 0.0 for name in names),
                default=0.0,
            )
            for concurrency in levels
        }
        if names:
            chosen[method] = best_of(names, runs, tops)
    return chosen


def best_of(
    names: Sequence[str], runs: Mapping[str, Sequence[dict[str, Any]]], tops: Mapping[int, float]
) -> str:
    """The configuration among `names` with the highest share_of_best."""
    shares = {name: share_of_best(runs[name], tops) for name in names}
    return max(shares, key=shares.__getitem__)


def share_of_best(levels: Sequence[dict[str, Any]], tops: Mapping[int, float]) -> float:
    """The sum over levels of a configuration's tok/s as a share of the best at that level."""
    return sum(
        (report.throughput_at(levels, concurrency) or 0.0) / top
        for concurrency, top in tops.items()
        if top
    )


def run_finalists(
    chosen: Mapping[str, str],
    configurations: Sequence[Configuration],
    payloads: Sequence[dict[str, Any]],
    levels: Sequence[int],
    rounds: int,
    opt_ml_root: Path,
    out_dir: Path,
    enforce_eager: bool,
) -> dict[str, dict[int, list[dict[str, Any]]]]:
    """The finalists up together, measured in interleaved rounds; keyed by method."""
    by_name = {configuration.name: configuration for configuration in configurations}
    containers = {
        method: LocalContainer(
            by_name[name],
            opt_ml_root=opt_ml_root,
            log_path=out_dir / "logs" / f"finalist-{name}.log",
            enforce_eager=enforce_eager,
        )
        for method, name in chosen.items()
    }
    print(f"\n## Side by side: {', '.join(chosen.values())}, {rounds} rounds\n", flush=True)
    return measure_side_by_side(containers, payloads, levels, rounds)


def run_configurations(
    configurations: Sequence[Configuration],
    payloads: Sequence[dict[str, Any]],
    levels: Sequence[int],
    opt_ml_root: Path,
    out_dir: Path,
    settings: dict[str, Any],
    port: int | None = None,
    enforce_eager: bool = True,
    rounds: int = DEFAULT_ROUNDS,
) -> str:
    """Every configuration in turn, then each method's finalist side by side; writes
    sweep.json, sweep.md, sweep.png and sweep-positions.png; returns the markdown report."""
    runs: dict[str, list[dict[str, Any]]] = {}
    described = {configuration.name: configuration.describe() for configuration in configurations}
    document: dict[str, Any] = {"settings": settings, "configurations": described, "runs": runs}
    started = time.monotonic()
    for configuration in configurations:
        levels_measured, ready_after = measure(
            configuration, payloads, levels, opt_ml_root, out_dir, port, enforce_eager
        )
        runs[configuration.name] = levels_measured
        described[configuration.name]["ready_after_s"] = ready_after
        print(f"\n## {configuration.name}\n\n{report.levels_table(levels_measured)}\n", flush=True)
        # Written after each configuration, so a long sweep that fails keeps what it measured.
        report.write_json(out_dir / "sweep.json", document)
    chosen = finalists(runs, described)
    if rounds and len(chosen) > 1:
        measured = run_finalists(
            chosen, configurations, payloads, levels, rounds, opt_ml_root, out_dir, enforce_eager
        )
        document["side_by_side"] = {
            "rounds": rounds,
            "finalists": chosen,
            "medians": medians(measured),
            "runs": measured,
        }
        report.write_json(out_dir / "sweep.json", document)
    minutes = (time.monotonic() - started) / 60
    return write_report(out_dir, runs, described, minutes, document.get("side_by_side"))


def write_report(
    out_dir: Path,
    runs: Mapping[str, Sequence[dict[str, Any]]],
    described: Mapping[str, dict[str, Any]],
    minutes: float,
    side_by_side: Mapping[str, Any] | None = None,
) -> str:
    """sweep.md, sweep.png and sweep-positions.png from the measured runs (and the finalists'
    interleaved rounds, when there are any); returns the markdown report."""
    text = ""
    if side_by_side:
        text += (
            f"## Side by side: the best of each method, {side_by_side['rounds']} rounds\n\n"
            + SIDE_BY_SIDE_NOTE
            + report.side_by_side_table(
                side_by_side["runs"], side_by_side["medians"], side_by_side["finalists"]
            )
            + failures_note(side_by_side["medians"])
            + "\n\n"
        )
    text += (
        "## Output tokens/s: best of each method, one configuration after another\n\n"
        + report.comparison_table(runs, described)
        + "\n\n## Every configuration: output tokens/s (mean acceptance length)\n\n"
        + report.configurations_table(runs)
        + "\n\n## Acceptance per draft position\n\n"
        + POSITIONS_NOTE
        + report.positions_table(runs)
        + "\n\n## Greedy answers across configurations\n\n"
        + AGREEMENT_NOTE
        + report.agreement_table(runs)
    )
    endings = report.endings_table(runs)
    if endings:
        text += "\n\n## Answers that ran to max_tokens\n\n" + ENDINGS_NOTE + endings
    text += f"\n\nSweep took {minutes:.1f} min.\n"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "sweep.md").write_text("# Configuration sweep\n\n" + text)
    plots.throughput(runs, out_dir / "sweep.png", "output tokens/s by configuration")
    plots.positions(runs, out_dir / "sweep-positions.png", "acceptance rate by draft position")
    return text


def add_parser(commands: Any) -> None:
    parser = add_command(
        commands, "sweep", command, "every speculation configuration on local containers"
    )
    add_local_args(parser.add_argument_group("local containers"))
    parser.add_argument(
        "--eagle3-drafter",
        type=Path,
        help="head for the sequential EAGLE-3 runs (default: the eagle3 channel when there is"
        " one, else --drafter)",
    )
    parser.add_argument(
        "--k", type=int_list, default=list(DEFAULT_K), help="draft lengths, default 3,5,7"
    )
    parser.add_argument("--configs", help="instead of the default set: e.g. none,eagle3:3,peagle:7")
    add_rounds(
        parser,
        DEFAULT_ROUNDS,
        "interleaved rounds of each method's best K, all up together, after the sweep; 0 leaves"
        " them out",
    )
    parser.add_argument(
        "--concurrency",
        type=int_list,
        default=list(DEFAULT_CONCURRENCY),
        help="levels, default 1,4,8,32",
    )


def command(args: argparse.Namespace) -> int:
    drafter = drafter_of(args)
    eagle3_drafter = args.eagle3_drafter or paths.channel_dir(args.opt_ml_root, EAGLE3_CHANNEL)
    eagle3_drafter = eagle3_drafter.absolute() if eagle3_drafter.is_dir() else None
    if args.configs:
        configurations = [
            parse_configuration(
                text, eagle3_drafter or drafter if text.startswith("eagle3") else drafter
            )
            for text in args.configs.split(",")
        ]
    else:
        configurations = default_configurations(drafter, eagle3_drafter, args.k)
    if eagle3_drafter is None and any(c.method == "eagle3" for c in configurations):
        print(
            f"no EAGLE-3 head in {args.opt_ml_root} (channel {EAGLE3_CHANNEL}): the EAGLE-3 runs"
            " draft with the P-EAGLE head, one token per pass. make bench-model builds the"
            " trained pair with one, in build/opt_ml_bench.",
            file=sys.stderr,
        )
    text = run_configurations(
        configurations,
        sampled_payloads(args),
        args.concurrency,
        args.opt_ml_root.absolute(),
        args.out_dir,
        settings_of(args),
        port=args.port,
        enforce_eager=args.enforce_eager,
        rounds=args.rounds,
    )
    print(text)
    print(f"wrote {args.out_dir}/sweep.json, sweep.md, sweep.png and sweep-positions.png")
    return 0
