"""Mean acceptance length from vLLM's spec-decode counters, read before and after a run."""

from __future__ import annotations

from dataclasses import dataclass

import httpx

DRAFTS = "vllm:spec_decode_num_drafts_total"
DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens_total"
ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"


@dataclass(frozen=True)
class SpecCounters:
    drafts: float
    draft_tokens: float
    accepted: float


def metric_sum(text: str, name: str) -> float:
    """Sum of a metric's samples over all label sets."""
    total = 0.0
    for line in text.splitlines():
        if line.startswith((name + "{", name + " ")):
            total += float(line.rsplit(" ", 1)[1])
    return total


def parse_counters(text: str) -> SpecCounters:
    return SpecCounters(
        drafts=metric_sum(text, DRAFTS),
        draft_tokens=metric_sum(text, DRAFT_TOKENS),
        accepted=metric_sum(text, ACCEPTED),
    )


async def read_counters(http: httpx.AsyncClient, metrics_url: str | None) -> SpecCounters | None:
    if not metrics_url:
        return None
    try:
        response = await http.get(metrics_url, timeout=10.0)
    except httpx.HTTPError:
        return None
    return parse_counters(response.text) if response.status_code == 200 else None


def acceptance_length(before: SpecCounters | None, after: SpecCounters | None) -> float | None:
    """1 + accepted drafts per draft: tokens produced per target forward pass.

    None when the counters are unreachable or nothing was drafted (no speculation)."""
    if before is None or after is None:
        return None
    drafts = after.drafts - before.drafts
    if drafts <= 0:
        return None
    return 1.0 + (after.accepted - before.accepted) / drafts
