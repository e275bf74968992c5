"""Two containers of one configuration that differ only in their environment, measured side
by side (`bench.side_by_side`): for the cost of a setting (per-request metrics, capture) as a
ratio rather than a number from another day.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.configuration import Configuration, LocalContainer
from bench.options import (
    add_local_command,
    add_prompt_args,
    add_rounds,
    configuration_of,
    int_list,
    sampled_payloads,
)
from bench.report import markdown, write_json
from bench.side_by_side import FIGURES, failures_note, measure_side_by_side, medians

VARIANTS = ("A", "B")


def parse_env(items: Sequence[str]) -> dict[str, str]:
    """KEY=VALUE arguments as a dict."""
    env = {}
    for item in items:
        key, separator, value = item.partition("=")
        if not separator or not key:
            raise SystemExit(f"{item!r} is not KEY=VALUE; give settings like SERVING_X=1.")
        env[key] = value
    return env


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
    measured = measure_side_by_side(containers, payloads, levels, rounds)
    summary = medians(measured)
    text = table(summary, env) + failures_note(summary)
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


HELP = (
    "the same configuration with two environments (--a-env, --b-env KEY=VALUE), both up "
    "together, the same requests to each in turn for --rounds rounds; medians and B / A"
)


def add_parser(commands: Any) -> None:
    parser = add_local_command(commands, "ab", command, HELP)
    add_prompt_args(parser, 64)
    parser.add_argument("--a-env", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--b-env", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--concurrency", type=int_list, default=[1, 4], help="default 1,4")
    add_rounds(parser, 4, "rounds, even so that each variant leads as often")


def command(args: argparse.Namespace) -> int:
    if args.port:
        raise SystemExit("--port: ab starts two containers, each on a free port; leave it out.")
    env = {"A": parse_env(args.a_env), "B": parse_env(args.b_env)}
    if env["A"] == env["B"]:
        raise SystemExit("--a-env and --b-env are the same; give the setting B changes.")
    text = run_ab(
        configuration_of(args),
        env,
        sampled_payloads(args),
        args.concurrency,
        args.rounds,
        args.opt_ml_root.absolute(),
        args.out_dir,
        args.enforce_eager,
    )
    print(text)
    print(f"\nwrote {args.out_dir}/ab.json and ab.md")
    return 0
