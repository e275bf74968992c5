"""What a GPU check's runs found, and what it makes of them: each configuration's outcome
(greedy answers, speculation counters from /metrics, the tool call, what vLLM ran with), the
Markdown report, and the verdict (gpu_check/image_check.py runs them)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

METRIC_LINE = re.compile(r"^(vllm:spec_decode_[a-z_]+)(\{[^}]*\})?\s+([0-9.eE+-]+)$")


@dataclass
class Outcome:
    name: str
    config: dict[str, Any] | None
    cold_start_seconds: float = 0.0
    answers: dict[tuple[int, int], str] = field(default_factory=dict)  # (level, prompt) -> text
    metrics: dict[str, float] = field(default_factory=dict)
    tool_call: str = ""
    engine_mode: str = ""
    error: str = ""


def spec_metrics(text: str) -> dict[str, float]:
    """Drafts, draft tokens, accepted tokens, and draft tokens per position."""
    found: dict[str, float] = {}
    for line in text.splitlines():
        match = METRIC_LINE.match(line)
        if not match or not match.group(1).endswith("_total"):
            continue
        name, labels, value = match.groups()
        position = re.search(r'position="(\d+)"', labels or "")
        key = name.removeprefix("vllm:spec_decode_").removesuffix("_total")
        if position:
            key += f"[{position.group(1)}]"
        found[key] = found.get(key, 0.0) + float(value)
    return found


def engine_mode(log: str) -> str:
    """What vLLM says it runs with: asynchronous scheduling (vLLM logs only when it turns it
    off; the CPU test switch says so itself), compilation, CUDA graphs."""
    said = []
    kept = re.search(r"asynchronous scheduling (on|off), as vLLM chose it", log)
    turned_off = re.search(r"[Aa]sync(hronous)? scheduling (is disabled|will be disabled)", log)
    if kept:
        said.append(f"async scheduling {kept.group(1)} (CPU test switch)")
    elif turned_off:
        said.append("async scheduling OFF (vLLM turned it off; see the log)")
    else:
        said.append("async scheduling on (vLLM's default; nothing turned it off)")
    for pattern, label in (
        (r"enforce_eager=(True|False)", "enforce_eager={}"),
        (r"cudagraph_mode[\"']?[:=]\s*<?([A-Za-z_.]+)", "cudagraph_mode={}"),
        (r"Graph capturing finished in ([0-9.]+ secs)", "graphs captured in {}"),
        (r"torch\.compile takes ([0-9.]+ s)", "torch.compile {}"),
    ):
        match = re.search(pattern, log)
        if match:
            said.append(label.format(match.group(1)))
    return ", ".join(said) or "not found in the log"


def report(outcomes: list[Outcome], kernels: str, header: str) -> str:
    reference = outcomes[0]
    lines = [
        header, "",
        "| configuration | cold start | greedy answers = none | drafts | acceptance length "
        "| positions drafted | tool call (grammar) | engine |",
        "|---|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    for outcome in outcomes:
        if outcome.error:
            lines.append(
                f"| {outcome.name} | {outcome.cold_start_seconds:.0f} s | FAILED | | | | | |"
            )
            continue
        same = sum(reference.answers.get(key) == text for key, text in outcome.answers.items())
        drafts = outcome.metrics.get("num_drafts", 0.0)
        accepted = outcome.metrics.get("num_accepted_tokens", 0.0)
        acceptance = f"{1 + accepted / drafts:.2f}" if drafts else "-"
        positions = sorted(
            (int(k[len("num_draft_tokens_per_pos[") : -1]), int(v))
            for k, v in outcome.metrics.items()
            if k.startswith("num_draft_tokens_per_pos[") and v
        )
        drafted = ", ".join(f"{p}:{n}" for p, n in positions) or "-"
        lines.append(
            f"| {outcome.name} | {outcome.cold_start_seconds:.0f} s "
            f"| {same}/{len(outcome.answers)} | {drafts:.0f} | {acceptance} | {drafted} "
            f"| {outcome.tool_call} | {outcome.engine_mode} |"
        )
    for outcome in outcomes:
        if outcome.error:
            lines += ["", f"**{outcome.name} failed:**", "```", outcome.error, "```"]
        differing = [k for k, t in outcome.answers.items() if reference.answers.get(k) != t]
        for level, index in differing[:3]:
            lines.append(
                f"- {outcome.name}, {level} clients, prompt {index}: "
                f"{outcome.answers[(level, index)]!r} vs none {reference.answers[(level, index)]!r}"
            )
    lines += ["", kernels]
    return "\n".join(lines)


def verdict(outcomes: list[Outcome], kernels_exit: int) -> bool:
    reference = outcomes[0]
    for outcome in outcomes:
        if outcome.error or not outcome.tool_call.startswith("valid"):
            return False
        if any(reference.answers.get(k) != t for k, t in outcome.answers.items()):
            return False
    speculating = outcomes[1:]
    return kernels_exit == 0 and all(o.metrics.get("num_drafts", 0) > 0 for o in speculating)
