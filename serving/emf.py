"""CloudWatch without an agent: one Embedded Metric Format (EMF) line on stdout per interval.

SageMaker ships the container's stdout to CloudWatch Logs, which turns each such line into
metrics: speculation (acceptance rate, mean acceptance length, acceptance per draft
position, drafts of each K), output tokens/s, requests, errors, 429s and requests in flight,
each for the interval just ended. The counters are the engine's and the front's cumulative ones; a
line carries their change since the previous line.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from serving import cloudwatch as cw
from serving.access import TRANSFORM_RECORD
from serving.metrics import (
    ACCEPTED,
    DRAFT_TOKENS,
    DRAFTS,
    SPEC_DECODE_COUNTERS,
    FrontMetrics,
    drafts_by_k,
    position_rates,
    spec_decode_totals,
)

log = logging.getLogger("serving.emf")

GENERATION_TOKENS = "vllm:generation_tokens"
# Routes whose requests are not counted: probes and scrapes are not work for the model, and
# a Batch Transform record's mini-batch is counted already.
UNCOUNTED_ROUTES = {"/ping", "/metrics", TRANSFORM_RECORD}


@dataclass(frozen=True)
class Totals:
    """Cumulative counters at one moment."""

    drafts: float = 0.0
    draft_tokens: float = 0.0
    accepted: float = 0.0
    accepted_by_position: dict[int, float] = field(default_factory=dict)
    drafted_by_position: dict[int, float] = field(default_factory=dict)
    generation_tokens: float = 0.0
    requests: float = 0.0
    errors: float = 0.0
    overloaded: float = 0.0
    engine_restarts: float = 0.0


def engine_totals(engine_text: str) -> dict:
    totals, accepted_by_position, drafted_by_position = spec_decode_totals(
        engine_text, (*SPEC_DECODE_COUNTERS, GENERATION_TOKENS)
    )
    return {
        "drafts": totals.get(DRAFTS, 0.0),
        "draft_tokens": totals.get(DRAFT_TOKENS, 0.0),
        "accepted": totals.get(ACCEPTED, 0.0),
        "accepted_by_position": accepted_by_position,
        "drafted_by_position": drafted_by_position,
        "generation_tokens": totals.get(GENERATION_TOKENS, 0.0),
    }


def front_totals(metrics: FrontMetrics) -> dict:
    requests = errors = overloaded = 0.0
    for family in metrics.requests.collect():
        for sample in family.samples:
            if not sample.name.endswith("_total"):
                continue
            if sample.labels["route"] in UNCOUNTED_ROUTES:
                continue
            requests += sample.value
            status = sample.labels["status"]
            errors += sample.value if not status.isdigit() or int(status) >= 500 else 0
            overloaded += sample.value if status == "429" else 0
    restarts = sum(
        sample.value
        for family in metrics.engine_restarts.collect()
        for sample in family.samples
        if sample.name.endswith("_total")
    )
    return {
        "requests": requests,
        "errors": errors,
        "overloaded": overloaded,
        "engine_restarts": restarts,
    }


def since(now: float, before: float) -> float:
    """A counter's change; a restarted engine's counters start again from 0."""
    return now - before if now >= before else now


def changes(now: dict[int, float], before: dict[int, float]) -> dict[int, float]:
    """Each position's counter change over the interval."""
    return {key: since(value, before.get(key, 0.0)) for key, value in now.items()}


def document(
    before: Totals,
    now: Totals,
    seconds: float,
    in_flight: int,
    dimensions: dict[str, str],
    timestamp_ms: int,
) -> dict:
    """One EMF document for the interval from `before` to `now`."""
    values: dict[str, tuple[float, str]] = {
        cw.REQUESTS: (now.requests - before.requests, "Count"),
        cw.ERRORS: (now.errors - before.errors, "Count"),
        cw.THROTTLED: (now.overloaded - before.overloaded, "Count"),
        cw.ENGINE_RESTARTS: (now.engine_restarts - before.engine_restarts, "Count"),
        cw.IN_FLIGHT: (float(in_flight), "Count"),
        cw.OUTPUT_TOKENS_PER_SECOND: (
            since(now.generation_tokens, before.generation_tokens) / seconds
            if seconds > 0
            else 0.0,
            "Count/Second",
        ),
    }
    drafts = since(now.drafts, before.drafts)
    draft_tokens = since(now.draft_tokens, before.draft_tokens)
    if drafts > 0 and draft_tokens > 0:
        accepted = since(now.accepted, before.accepted)
        values[cw.ACCEPTANCE_RATE] = (accepted / draft_tokens, "None")
        values[cw.MEAN_ACCEPTANCE_LENGTH] = (1.0 + accepted / drafts, "None")
        accepted_by_position = changes(now.accepted_by_position, before.accepted_by_position)
        drafted_by_position = changes(now.drafted_by_position, before.drafted_by_position)
        rates = position_rates(accepted_by_position, drafted_by_position, drafts)
        for position in sorted(rates):
            # vLLM counts positions from 0; the metric names them as a person does, from 1.
            values[cw.position_metric(position + 1)] = (rates[position], "None")
        for k, count in sorted(drafts_by_k(drafted_by_position).items()):
            values[cw.drafts_with_k_metric(k)] = (count, "Count")
    return {
        "_aws": {
            "Timestamp": timestamp_ms,
            "CloudWatchMetrics": [
                {
                    "Namespace": cw.NAMESPACE,
                    "Dimensions": cw.dimension_sets(dimensions),
                    "Metrics": [{"Name": name, "Unit": unit} for name, (_, unit) in values.items()],
                }
            ],
        },
        **dimensions,
        **{name: number(value) for name, (value, _) in values.items()},
    }


def number(value: float) -> int | float:
    """Counts as integers, ratios and rates to six decimals."""
    return int(value) if float(value).is_integer() else round(value, 6)


class EmfReporter:
    """Writes one EMF line every `interval` seconds while the front runs."""

    def __init__(
        self,
        interval: float,
        metrics: FrontMetrics,
        engine_text: Callable[[], Awaitable[str | None]],
        in_flight: Callable[[], int],
        dimensions: dict[str, str],
    ):
        self.interval = interval
        self.metrics = metrics
        self.engine_text = engine_text
        self.in_flight = in_flight
        self.dimensions = dimensions
        self.task: asyncio.Task | None = None
        self.last_engine_totals = engine_totals("")

    async def totals(self) -> Totals:
        text = await self.engine_text()
        if text is not None:  # an engine too busy to answer keeps its last counts
            self.last_engine_totals = engine_totals(text)
        return Totals(**self.last_engine_totals, **front_totals(self.metrics))

    async def run(self) -> None:
        before, started = await self.totals(), time.monotonic()
        while True:
            await asyncio.sleep(self.interval)
            try:
                before, started = await self.report(before, started)
            except Exception as error:  # a metrics line is never worth the front
                log.warning("no CloudWatch metrics line this interval: %r", error)

    async def report(self, before: Totals, started: float) -> tuple[Totals, float]:
        """Write the line for the interval since `before`; return the new start."""
        now, ended = await self.totals(), time.monotonic()
        line = document(
            before,
            now,
            ended - started,
            self.in_flight(),
            self.dimensions,
            int(time.time() * 1000),
        )
        sys.stdout.write(json.dumps(line, separators=(",", ":")) + "\n")
        sys.stdout.flush()
        return now, ended

    def start(self) -> None:
        if self.interval > 0:
            self.task = asyncio.get_running_loop().create_task(self.run())

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)
