"""`bench compare`: containers of variants side by side (`bench.side_by_side`), each against
the first. A variant is a configuration (none, eagle3:K, peagle:K, a schedule), an
environment override of it, or both: `peagle:3`, `peagle:3+SERVING_CAPTURE_DIR=/tmp/c`,
`+VLLM_CPU_OMP_THREADS_BIND=nobind` (the default configuration with one setting changed).
For the cost of a setting, or one configuration against another, as a ratio measured in the
same minutes rather than a number from another day.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.configuration import LocalContainer, default_configuration
from bench.options import (
    add_local_command,
    add_prompt_args,
    add_rounds,
    drafter_of,
    int_list,
    sampled_payloads,
)
from bench.report import markdown, write_json
from bench.side_by_side import FIGURES, failures_note, measure_side_by_side, medians
from harness.configurations import Configuration, parse_configuration


@dataclass(frozen=True)
class Variant:
    """What one container serves: its configuration and the settings it changes."""

    text: str
    configuration: Configuration
    env: Mapping[str, str]

    def describe(self) -> dict[str, Any]:
        return {"configuration": self.configuration.describe(), "env": dict(self.env)}


def parse_variant(text: str, drafter: Path | None) -> Variant:
    """CONFIG[+KEY=VALUE...]; an empty CONFIG is the default configuration for the head."""
    config, *settings = text.split("+")
    env = {}
    for item in settings:
        key, separator, value = item.partition("=")
        if not separator or not key:
            raise SystemExit(
                f"variant {text!r}: {item!r} is not KEY=VALUE; write a variant as CONFIG or "
                "CONFIG+KEY=VALUE, e.g. peagle:3+SERVING_CAPTURE_DIR=/tmp/c."
            )
        env[key] = value
    configuration = parse_configuration(config or default_configuration(drafter), drafter)
    return Variant(text, configuration, env)


def table(summary: dict[str, dict[int, dict]], names: Sequence[str]) -> str:
    """One row per level and figure: each variant, and each against the first."""
    first, others = names[0], names[1:]
    rows = []
    for level in summary[first]:
        for figure, title in FIGURES.items():
            values = [summary[name][level][figure] for name in names]
            shown = ["n/a" if value is None else f"{value:.2f}" for value in values]
            base = values[0]
            changes = [
                f"{value / base:.3f}x ({value - base:+.2f})" if value is not None and base else "-"
                for value in values[1:]
            ]
            rows.append([str(level), title, *shown, *changes])
        failed = [str(summary[name][level]["failed"]) for name in names]
        rows.append([str(level), "failed requests", *failed, *["-"] * len(others)])
    headers = ["c", "figure", *names, *[f"{name} / {first} ({name} - {first})" for name in others]]
    return markdown(headers, rows)


def run_compare(
    variants: Sequence[Variant],
    payloads: Sequence[dict[str, Any]],
    levels: Sequence[int],
    rounds: int,
    opt_ml_root: Path,
    out_dir: Path,
    enforce_eager: bool = True,
) -> str:
    """Start them all, measure, stop them all; writes compare.json and compare.md and returns
    the table."""
    containers = {
        variant.text: LocalContainer(
            variant.configuration,
            opt_ml_root=opt_ml_root,
            log_path=out_dir / "logs" / f"compare-{number}.log",
            enforce_eager=enforce_eager,
            extra_env=variant.env,
        )
        for number, variant in enumerate(variants)
    }
    measured = measure_side_by_side(containers, payloads, levels, rounds)
    summary = medians(measured)
    text = table(summary, list(containers)) + failures_note(summary)
    write_json(
        out_dir / "compare.json",
        {
            "variants": {variant.text: variant.describe() for variant in variants},
            "rounds": rounds,
            "median": summary,
            "runs": measured,
        },
    )
    (out_dir / "compare.md").write_text(f"# Side by side, {rounds} rounds\n\n{text}\n")
    return text


HELP = (
    "containers of two or more variants (CONFIG[+KEY=VALUE...]) up together, the same requests "
    "to each in turn for --rounds rounds; medians, and each against the first"
)


def add_parser(commands: Any) -> None:
    parser = add_local_command(commands, "compare", command, HELP)
    parser.add_argument(
        "variants",
        nargs="+",
        metavar="VARIANT",
        help="a configuration (--config's vocabulary; empty for its default) and settings "
        "added with +KEY=VALUE (values without +): peagle:3 none "
        "peagle:3+SERVING_CAPTURE_DIR=/tmp/c; the first is the baseline",
    )
    add_prompt_args(parser, 64)
    parser.add_argument("--concurrency", type=int_list, default=[1, 4], help="default 1,4")
    add_rounds(parser, 4, "rounds, even so that each variant leads as often")


def command(args: argparse.Namespace) -> int:
    if args.port:
        raise SystemExit("--port: compare starts a container per variant, each on a free port.")
    if args.config:
        raise SystemExit("--config: name each variant's configuration in the variant itself.")
    drafter = drafter_of(args)
    variants = [parse_variant(text, drafter) for text in args.variants]
    served = [
        (variant.configuration.describe(), sorted(variant.env.items())) for variant in variants
    ]
    if len(variants) < 2 or any(served.count(one) > 1 for one in served):
        raise SystemExit("compare: two or more variants that differ, the first the baseline.")
    text = run_compare(
        variants,
        sampled_payloads(args),
        args.concurrency,
        args.rounds,
        args.opt_ml_root.absolute(),
        args.out_dir,
        args.enforce_eager,
    )
    print(text)
    print(f"\nwrote {args.out_dir}/compare.json and compare.md")
    return 0
