"""`compare` against two local containers (the local runtime's production and shadow): each
container's /metrics, counted since it started.

The engine's counters give acceptance per draft position. A draft's accepted length L is at
least k exactly when position k was accepted, so its mean is the sum of the positions' rates
and its variance sum((2k - 1) p_k) - (sum p_k)^2. Drafts of one request move together, so
the standard errors count requests, not drafts: wider, and honest.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

import httpx
from prometheus_client.parser import text_string_to_metric_families

from deploy.comparison import MISSING, Comparison, Figure, Row
from deploy.failures import DeployFailed
from serving.metrics import DRAFTS, spec_decode_totals

LATENCY = "vllm:e2e_request_latency_seconds"
GENERATION_TOKENS = "vllm:request_generation_tokens"


@dataclass
class Counts:
    """One container's cumulative counters."""

    drafts: float = 0.0
    accepted_by_position: dict[int, float] = field(default_factory=dict)  # from 1
    requests: float = 0.0
    latency_sum: float = 0.0
    latency_buckets: list[tuple[float, float]] = field(default_factory=list)  # (le, count)
    generation_tokens: float = 0.0


def since(now: Counts, before: Counts) -> Counts:
    """The counts of the window between two scrapes of one container."""
    before_buckets = dict(before.latency_buckets)
    return Counts(
        drafts=now.drafts - before.drafts,
        accepted_by_position={
            k: value - before.accepted_by_position.get(k, 0.0)
            for k, value in now.accepted_by_position.items()
        },
        requests=now.requests - before.requests,
        latency_sum=now.latency_sum - before.latency_sum,
        latency_buckets=[
            (upper, count - before_buckets.get(upper, 0.0)) for upper, count in now.latency_buckets
        ],
        generation_tokens=now.generation_tokens - before.generation_tokens,
    )


def counts(text: str) -> Counts:
    """The spec-decode counters as the front reads them (serving.metrics), and vLLM's
    request latency histogram and generated tokens."""
    totals, by_position, _ = spec_decode_totals(text, (DRAFTS,))
    found = Counts(
        drafts=totals.get(DRAFTS, 0.0),
        # vLLM counts positions from 0; the figures name them from 1.
        accepted_by_position={position + 1: value for position, value in by_position.items()},
    )
    buckets: dict[float, float] = defaultdict(float)
    for family in text_string_to_metric_families(text):
        if family.name not in (LATENCY, GENERATION_TOKENS):
            continue
        for sample in family.samples:
            name, value = sample.name, sample.value
            if family.name == GENERATION_TOKENS:
                found.generation_tokens += value if name.endswith("_sum") else 0.0
            elif name.endswith("_count"):
                found.requests += value
            elif name.endswith("_sum"):
                found.latency_sum += value
            elif name.endswith("_bucket"):
                buckets[float(sample.labels["le"])] += value
    found.latency_buckets = sorted(buckets.items())
    return found


def scrape(url: str) -> Counts:
    try:
        answer = httpx.get(f"{url.rstrip('/')}/metrics", timeout=10)
    except httpx.HTTPError as error:
        raise DeployFailed(f"could not read {url}/metrics: {error}; is the container up?") from None
    if answer.status_code != 200:
        raise DeployFailed(f"{url}/metrics answered {answer.status_code}; is it ready?")
    return counts(answer.text)


def position_rates(found: Counts) -> dict[int, float]:
    if not found.drafts:
        return {}
    return {
        k: found.accepted_by_position.get(k, 0.0) / found.drafts for k in found.accepted_by_position
    }


def acceptance_length(found: Counts) -> Figure:
    rates = position_rates(found)
    if not found.drafts or not found.requests:
        return MISSING
    mean = sum(rates.values())
    second_moment = sum((2 * k - 1) * rate for k, rate in rates.items())
    variance = max(0.0, second_moment - mean**2)
    return Figure(1.0 + mean, math.sqrt(variance / found.requests))


def position_figure(found: Counts, position: int) -> Figure:
    rates = position_rates(found)
    if position not in rates or not found.requests:
        return MISSING
    rate = rates[position]
    return Figure(rate, math.sqrt(rate * (1 - rate) / found.requests))


def latency_ms(found: Counts) -> Figure:
    """Mean end-to-end latency; its spread from the histogram's buckets (each bucket's
    requests at its middle)."""
    if not found.requests:
        return MISSING
    mean = found.latency_sum / found.requests
    variance, below, lower = 0.0, 0.0, 0.0
    for upper, cumulative in found.latency_buckets:
        in_bucket = cumulative - below
        middle = lower if math.isinf(upper) else (lower + upper) / 2
        variance += in_bucket * (middle - mean) ** 2
        below, lower = cumulative, upper if not math.isinf(upper) else lower
    variance /= max(1.0, found.requests - 1)
    return Figure(1000 * mean, 1000 * math.sqrt(variance / found.requests))


def tokens_per_second(found: Counts, latency: Figure) -> Figure:
    """Output tokens per second of a request's life; its noise follows the latency's."""
    if not found.latency_sum or latency.noise is None:
        return MISSING
    value = found.generation_tokens / found.latency_sum
    return Figure(value, value * latency.noise / latency.mean)


def comparison(
    production: Counts, shadow: Counts, production_url: str, shadow_url: str
) -> Comparison:
    positions = sorted(set(production.accepted_by_position) | set(shadow.accepted_by_position))
    latencies = (latency_ms(production), latency_ms(shadow))
    rows = [
        Row("mean acceptance length", acceptance_length(production), acceptance_length(shadow)),
        *[
            Row(
                f"acceptance at position {k}",
                position_figure(production, k),
                position_figure(shadow, k),
                3,
            )
            for k in positions
        ],
        Row(
            "output tokens/s per request",
            tokens_per_second(production, latencies[0]),
            tokens_per_second(shadow, latencies[1]),
            1,
        ),
        Row("latency, mean (ms)", *latencies, 1, higher_is_better=False),
        Row("requests", Figure(production.requests), Figure(shadow.requests), 0, None),
    ]
    return Comparison(
        "since each container started",
        production_url,
        shadow_url,
        rows,
    )


def local(production_url: str, shadow_url: str) -> Comparison:
    return comparison(scrape(production_url), scrape(shadow_url), production_url, shadow_url)
