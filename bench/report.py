"""Results out: JSON and markdown tables (SageMaker's columns; the brief's comparison shape;
acceptance per draft position); the charts are bench/plots.py's."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

Level = dict[str, Any]

# (key in a level summary, column title, format)
COLUMNS = (
    ("concurrency", "concurrency", "{:d}"),
    ("completed", "requests", "{:d}"),
    ("ttft_ms_mean", "TTFT mean (ms)", "{:.1f}"),
    ("ttft_ms_p99", "TTFT p99 (ms)", "{:.1f}"),
    ("tpot_ms_mean", "TPOT mean (ms)", "{:.2f}"),
    ("tpot_ms_p99", "TPOT p99 (ms)", "{:.2f}"),
    ("itl_ms_mean", "ITL mean (ms)", "{:.2f}"),
    ("itl_ms_p99", "ITL p99 (ms)", "{:.2f}"),
    ("request_throughput", "req/s", "{:.2f}"),
    ("output_tokens_per_s", "output tok/s", "{:.1f}"),
    ("output_tokens_per_s_per_request", "tok/s per request", "{:.1f}"),
    ("acceptance_length", "acceptance length", "{:.2f}"),
    ("ran_to_max_tokens", "ran to max_tokens", "{:d}"),
)


def cell(value: Any, fmt: str) -> str:
    return "-" if value is None else fmt.format(value)


def markdown(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def levels_table(levels: Sequence[Level]) -> str:
    """One row per concurrency level, SageMaker's benchmark columns."""
    return markdown(
        [title for _, title, _ in COLUMNS],
        [[cell(level.get(key), fmt) for key, _, fmt in COLUMNS] for level in levels],
    )


def throughput_at(levels: Sequence[Level], concurrency: int) -> float | None:
    for level in levels:
        if level["concurrency"] == concurrency and level["completed"]:
            return level["output_tokens_per_s"]
    return None


def best(
    runs: Mapping[str, Sequence[Level]],
    configurations: Mapping[str, dict[str, Any]],
    method: str,
    concurrency: int,
) -> tuple[float, int | None] | None:
    """The highest output tok/s among configurations of `method`, and its K."""
    candidates = [
        (value, configurations[name].get("k"))
        for name, levels in runs.items()
        if configurations[name]["method"] == method
        and (value := throughput_at(levels, concurrency)) is not None
    ]
    return max(candidates, key=lambda candidate: candidate[0]) if candidates else None


def ratio(numerator: tuple[float, Any] | None, denominator: tuple[float, Any] | None) -> str:
    if not numerator or not denominator or not denominator[0]:
        return "-"
    return f"{numerator[0] / denominator[0]:.2f}x"


def with_k(entry: tuple[float, int | None] | None) -> str:
    if entry is None:
        return "-"
    value, k = entry
    return f"{value:,.1f}" + (f" (K={k})" if k else "")


def comparison_table(
    runs: Mapping[str, Sequence[Level]], configurations: Mapping[str, dict[str, Any]]
) -> str:
    """The brief's shape: best P-EAGLE, best EAGLE-3, none, and the two ratios, per level."""
    levels = sorted({level["concurrency"] for run in runs.values() for level in run})
    rows = []
    for concurrency in levels:
        peagle = best(runs, configurations, "peagle", concurrency)
        eagle3 = best(runs, configurations, "eagle3", concurrency)
        plain = best(runs, configurations, "none", concurrency)
        rows.append(
            [
                str(concurrency),
                with_k(peagle),
                with_k(eagle3),
                with_k(plain),
                ratio(peagle, eagle3),
                ratio(peagle, plain),
            ]
        )
    headers = [
        "concurrency",
        "P-EAGLE best",
        "EAGLE-3 best",
        "no speculation",
        "P-EAGLE / EAGLE-3",
        "P-EAGLE / none",
    ]
    return markdown(headers, rows)


METHOD_TITLES = {"peagle": "P-EAGLE", "eagle3": "EAGLE-3", "none": "no speculation"}


def side_by_side_table(
    measured: Mapping[str, Mapping[int, Sequence[Level]]],
    summary: Mapping[str, Mapping[int, Mapping[str, Any]]],
    finalists: Mapping[str, str],
) -> str:
    """Per level, each method's finalist: its median output tok/s over the interleaved rounds
    (`summary`, from side_by_side.medians), and P-EAGLE's ratio to each other one, of the
    medians and its range over the rounds (`measured`)."""
    methods = [method for method in METHOD_TITLES if method in measured]
    others = [other for other in ("eagle3", "none") if {"peagle", other} <= measured.keys()]
    levels = sorted({concurrency for by_level in measured.values() for concurrency in by_level})
    rows = []
    for concurrency in levels:
        medians = {
            method: summary[method][concurrency]["output_tokens_per_s"] for method in methods
        }
        row = [str(concurrency)]
        row += [f"{medians[method]:,.1f}" if medians[method] else "-" for method in methods]
        for other in others:
            rounds = [
                ours["output_tokens_per_s"] / theirs["output_tokens_per_s"]
                for ours, theirs in zip(
                    measured["peagle"][concurrency], measured[other][concurrency], strict=False
                )
                if ours["output_tokens_per_s"] and theirs["output_tokens_per_s"]
            ]
            if not rounds or not medians["peagle"] or not medians[other]:
                row.append("-")
                continue
            middle = medians["peagle"] / medians[other]
            row.append(f"{middle:.2f}x ({min(rounds):.2f}-{max(rounds):.2f})")
        rows.append(row)
    headers = ["concurrency"]
    headers += [f"{METHOD_TITLES[method]} ({finalists[method]})" for method in methods]
    headers += [f"P-EAGLE / {METHOD_TITLES[other]} (rounds)" for other in others]
    return markdown(headers, rows)


def configurations_table(runs: Mapping[str, Sequence[Level]]) -> str:
    """Output tok/s (acceptance length) for every configuration at every level."""

    def throughput(level: Level) -> str:
        if not level["completed"]:
            return "-"
        acceptance = level.get("acceptance_length")
        return f"{level['output_tokens_per_s']:.1f}" + (
            f" ({acceptance:.2f})" if acceptance is not None else ""
        )

    levels, rows = level_grid(runs, throughput)
    return markdown(["configuration"] + [f"c={c} tok/s (acc. len)" for c in levels], rows)


def level_grid(
    runs: Mapping[str, Sequence[Level]], cell_of: Callable[[Level], str]
) -> tuple[list[int], list[list[str]]]:
    """Every level any configuration measured, and a row per configuration: its name, then
    `cell_of` its level at each (or "-" where it has none)."""
    levels = sorted({level["concurrency"] for run in runs.values() for level in run})
    rows = []
    for name, run in runs.items():
        by_level = {level["concurrency"]: level for level in reversed(run)}  # the first
        rows.append([name] + [cell_of(by_level[c]) if c in by_level else "-" for c in levels])
    return levels, rows


def positions_table(runs: Mapping[str, Sequence[Level]]) -> str:
    """Acceptance rate at each draft position, one row per speculative configuration and level."""
    rows = [
        (name, level["concurrency"], rates)
        for name, run in runs.items()
        for level in run
        if (rates := level.get("acceptance_per_position"))
    ]
    if not rows:
        return "No configuration drafted tokens."
    depth = max(len(rates) for _, _, rates in rows)
    return markdown(
        ["configuration", "concurrency"] + [f"pos. {position}" for position in range(1, depth + 1)],
        [
            [name, str(concurrency)]
            + [f"{rate:.2f}" for rate in rates]
            + ["-"] * (depth - len(rates))
            for name, concurrency, rates in rows
        ],
    )


def agreement_table(runs: Mapping[str, Sequence[Level]]) -> str:
    """Whether each prompt's greedy answer is the same in every configuration: per level, and
    over all levels together (the first answer to each prompt at each level)."""
    answers: dict[int, dict[str, list[str]]] = {}
    for name, run in runs.items():
        for level in run:
            if level.get("output_digests"):
                answers.setdefault(level["concurrency"], {})[name] = level["output_digests"]
    if not answers or all(len(by_name) < 2 for by_name in answers.values()):
        return "Fewer than two configurations answered: nothing to compare."
    prompts = min(len(d) for by_name in answers.values() for d in by_name.values())
    groups = {f"c={c}": by_name for c, by_name in sorted(answers.items())}
    groups["all levels"] = {
        f"{name} c={c}": digests[:prompts]
        for c, by_name in sorted(answers.items())
        for name, digests in by_name.items()
    }
    rows = []
    for label, by_name in groups.items():
        (reference_name, reference), *_ = by_name.items()
        differing: set[int] = set()
        where, failed = [], []
        for name, digests in by_name.items():
            lost = {index for index, digest in enumerate(digests[: len(reference)]) if not digest}
            # Only two answers can differ: a failed request is the failing side's, not a
            # difference of everyone else's from it.
            changed = {
                index
                for index, (ours, theirs) in enumerate(zip(reference, digests, strict=False))
                if ours and theirs and ours != theirs
            }
            differing |= lost | changed
            where += [name] if changed else []
            failed += [name] if lost else []
        cell = f"{', '.join(where)} (against {reference_name})" if where else ""
        cell += ("; " if cell else "") + (f"failed: {', '.join(failed)}" if failed else "")
        rows.append(
            [
                label,
                str(len(by_name)),
                f"{len(reference) - len(differing)} of {len(reference)}",
                ", ".join(str(index + 1) for index in sorted(differing)) or "-",
                cell or "-",
            ]
        )
    return markdown(
        ["level", "configurations", "answers identical", "requests that differ", "which differ"],
        rows,
    )


def endings_table(runs: Mapping[str, Sequence[Level]]) -> str | None:
    """Per configuration and level, the answers that ran to max_tokens (did not end); None when
    no answer ended anywhere (ignore_eos: every answer is cut by design)."""
    measured = [level for run in runs.values() for level in run if "ran_to_max_tokens" in level]
    if not any(level["ran_to_max_tokens"] < level["completed"] for level in measured):
        return None

    def cut(level: Level) -> str:
        count = level.get("ran_to_max_tokens")
        return "-" if count is None else f"{count} of {level['completed']}"

    levels, rows = level_grid(runs, cut)
    return markdown(["configuration"] + [f"c={c}" for c in levels], rows)


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")
