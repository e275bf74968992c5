"""The configuration sweep: a local container per speculation setting, all up together and
measured side by side in interleaved rounds (bench/compare.py's loop), each configuration's
median round in the tables, and the brief's comparison of each method's best K at the end."""

from __future__ import annotations

import argparse
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
from bench.run import DEFAULT_CONCURRENCY
from bench.side_by_side import failures_note, measure_side_by_side, medians
from harness.configurations import Configuration, parse_configuration
from harness.locations import EAGLE3_CHANNEL
from serving import paths

# The trained demo heads are declared for 8 draft positions; deeper heads take --k.
DEFAULT_K = (3, 5, 7)
POSITIONS_NOTE = (
    "Share of drafts whose token at each position was accepted during the level (vLLM's"
    " accepted-per-position counter over its drafts counter); position 1 follows the last"
    " real token.\n\n"
)

DEFAULT_ROUNDS = 3
SIDE_BY_SIDE_NOTE = (
    "Each method's best K over all levels (its tok/s as a share of the method's best at each"
    " level, summed): median tok/s over the interleaved rounds, and P-EAGLE's ratios with"
    " their range over the rounds. Every configuration was up together and got the same"
    " requests in turn, so the machine's drift weighs on all alike; the tables below show"
    " each configuration's median round.\n\n"
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


def median_round(rounds: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The round whose output tok/s is the median (the lower one of an even count): its
    figures, acceptance and answers stay one round's own."""
    ordered = sorted(rounds, key=lambda level: level["output_tokens_per_s"] or 0.0)
    return ordered[(len(ordered) - 1) // 2]


def run_configurations(
    configurations: Sequence[Configuration],
    payloads: Sequence[dict[str, Any]],
    levels: Sequence[int],
    opt_ml_root: Path,
    out_dir: Path,
    settings: dict[str, Any],
    enforce_eager: bool = True,
    rounds: int = DEFAULT_ROUNDS,
) -> str:
    """Every configuration up together, measured side by side; writes sweep.json, sweep.md,
    sweep.png and sweep-positions.png; returns the markdown report."""
    started = time.monotonic()
    containers = {
        configuration.name: LocalContainer(
            configuration,
            opt_ml_root=opt_ml_root,
            log_path=out_dir / "logs" / f"{configuration.name}.log",
            enforce_eager=enforce_eager,
        )
        for configuration in configurations
    }
    measured = measure_side_by_side(containers, payloads, levels, rounds)
    described = {configuration.name: configuration.describe() for configuration in configurations}
    runs = {
        name: [median_round(by_level[level]) for level in levels]
        for name, by_level in measured.items()
    }
    chosen = finalists(runs, described)
    side_by_side = {
        "rounds": rounds,
        "finalists": chosen,
        "medians": medians({method: measured[name] for method, name in chosen.items()}),
        "runs": {method: measured[name] for method, name in chosen.items()},
    }
    document = {
        "settings": settings,
        "configurations": described,
        "rounds": measured,
        "runs": runs,
        "side_by_side": side_by_side,
    }
    report.write_json(out_dir / "sweep.json", document)
    minutes = (time.monotonic() - started) / 60
    return write_report(
        out_dir, runs, described, minutes, side_by_side if len(chosen) > 1 else None
    )


def write_report(
    out_dir: Path,
    runs: Mapping[str, Sequence[dict[str, Any]]],
    described: Mapping[str, dict[str, Any]],
    minutes: float,
    side_by_side: Mapping[str, Any] | None = None,
) -> str:
    """sweep.md, sweep.png and sweep-positions.png from each configuration's median round and
    the finalists' rounds (when there are two methods or more); returns the markdown report."""
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
        "## Output tokens/s: best of each method, its median round\n\n"
        + report.comparison_table(runs, described)
        + "\n\n## Every configuration, its median round: output tokens/s (mean acceptance"
        " length)\n\n"
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
    add_rounds(parser, DEFAULT_ROUNDS, "interleaved rounds, every configuration up together")
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
        enforce_eager=args.enforce_eager,
        rounds=max(args.rounds, 1),
    )
    print(text)
    print(f"wrote {args.out_dir}/sweep.json, sweep.md, sweep.png and sweep-positions.png")
    return 0
