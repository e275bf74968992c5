"""Speculation figures from vLLM's spec-decode counters, read before and after a run: the mean
acceptance length and the acceptance rate at each draft position."""

from __future__ import annotations

from dataclasses import dataclass, field

import httpx

from serving import metrics
from serving.emf import changes


@dataclass(frozen=True)
class SpecCounters:
    drafts: float
    draft_tokens: float
    accepted: float
    # vLLM's 0-based position label -> accepted tokens at that position, summed over engines.
    accepted_by_position: dict[int, float] = field(default_factory=dict)
    # The same for draft tokens: fewer at the later positions when K changes between steps.
    drafted_by_position: dict[int, float] = field(default_factory=dict)


def parse_counters(text: str) -> SpecCounters:
    totals, accepted_by_position, drafted_by_position = metrics.spec_decode_totals(text)
    return SpecCounters(
        drafts=totals.get(metrics.DRAFTS, 0.0),
        draft_tokens=totals.get(metrics.DRAFT_TOKENS, 0.0),
        accepted=totals.get(metrics.ACCEPTED, 0.0),
        accepted_by_position=dict(accepted_by_position),
        drafted_by_position=dict(drafted_by_position),
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
    if before is None or after is None or (drafts := after.drafts - before.drafts) <= 0:
        return None
    return 1.0 + (after.accepted - before.accepted) / drafts


def acceptance_per_position(
    before: SpecCounters | None, after: SpecCounters | None
) -> list[float] | None:
    """Share of the draft tokens at position 1..K that were accepted, in position order.

    vLLM counts a position only when every earlier one was accepted too, so the rates fall
    with position; with one K throughout they sum to the acceptance length minus 1. None when
    the counters are unreachable, nothing was drafted, or vLLM exports no per-position
    counter."""
    if before is None or after is None or (drafts := after.drafts - before.drafts) <= 0:
        return None
    if not after.accepted_by_position:
        return None
    rates = metrics.position_rates(
        changes(after.accepted_by_position, before.accepted_by_position),
        changes(after.drafted_by_position, before.drafted_by_position),
        drafts,
    )
    return [rates[position] for position in sorted(rates)]
