"""Per concurrency level: SageMaker's columns from a list of RequestResults."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from statistics import fmean
from typing import Any

from bench.client import RequestResult


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear-interpolated percentile (numpy's default), q in 0..100."""
    if not values:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def mean(values: Sequence[float]) -> float | None:
    return fmean(values) if values else None


def ms(value: float | None) -> float | None:
    return None if value is None else value * 1000


def summarize(
    results: Sequence[RequestResult],
    wall_seconds: float,
    concurrency: int,
    acceptance_length: float | None,
    acceptance_per_position: list[float] | None = None,
) -> dict[str, Any]:
    ok = [result for result in results if result.ok]
    ttfts = [result.ttft for result in ok if result.ttft is not None]
    tpots = [tpot for result in ok if (tpot := result.tpot) is not None]
    itls = [gap for result in ok for gap in result.itl]
    latencies = [result.latency for result in ok]
    rates = [rate for result in ok if (rate := result.tokens_per_second) is not None]
    output_tokens = sum(result.output_tokens for result in ok)
    return {
        "concurrency": concurrency,
        "requests": len(results),
        "completed": len(ok),
        "failed": len(results) - len(ok),
        "errors": sorted({result.error for result in results if result.error})[:5],
        "duration_s": wall_seconds,
        "output_tokens": output_tokens,
        # Answers that did not end: cut at max_tokens (all of them under ignore_eos).
        "ran_to_max_tokens": sum(result.finish_reason == "length" for result in ok),
        "ttft_ms_mean": ms(mean(ttfts)),
        "ttft_ms_p50": ms(percentile(ttfts, 50)),
        "ttft_ms_p99": ms(percentile(ttfts, 99)),
        "tpot_ms_mean": ms(mean(tpots)),
        "tpot_ms_p99": ms(percentile(tpots, 99)),
        "itl_ms_mean": ms(mean(itls)),
        "itl_ms_p99": ms(percentile(itls, 99)),
        "latency_ms_p50": ms(percentile(latencies, 50)),
        "latency_ms_p99": ms(percentile(latencies, 99)),
        "request_throughput": len(ok) / wall_seconds if wall_seconds > 0 else 0.0,
        "output_tokens_per_s": output_tokens / wall_seconds if wall_seconds > 0 else 0.0,
        "output_tokens_per_s_per_request": mean(rates),
        "acceptance_length": acceptance_length,
        "acceptance_per_position": acceptance_per_position,
        # Per request, in the order sent; "" for a failed one.
        "output_digests": [digest(result.text) if result.ok else "" for result in results],
    }


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]
