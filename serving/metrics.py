"""The front's own Prometheus metrics, and gauges derived from vLLM's spec-decode counters.

/metrics serves the engine's text first, then these. The derived gauges are computed at
scrape time from the engine's cumulative counters, so they are lifetime averages; take
rates of vLLM's counters in PromQL for windows.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterator, Mapping
from typing import Any, NamedTuple

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from serving.variables import BATCH_SCHEDULE_KEY

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
DRAFTS = "vllm:spec_decode_num_drafts"
DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens"
ACCEPTED = "vllm:spec_decode_num_accepted_tokens"
ACCEPTED_PER_POSITION = "vllm:spec_decode_num_accepted_tokens_per_pos"
# Draft tokens at each position (vllm_patches/draft_tokens_per_position.py): what makes
# per-position acceptance right, and shows which K was drafted, when K changes between steps.
DRAFTED_PER_POSITION = "vllm:spec_decode_num_draft_tokens_per_pos"
PER_POSITION = (ACCEPTED_PER_POSITION, DRAFTED_PER_POSITION)

SPEC_DECODE_COUNTERS = (DRAFTS, DRAFT_TOKENS, ACCEPTED)
ENGINE_UP = "serving_engine_metrics_up"


def metric_total(text: str, name: str, labels: Mapping[str, str] | None = None) -> float:
    """Sum of the samples named `name` whose labels include `labels`, over all label sets; 0
    when there are none. A counter answers to its samples' name (`x_total`) and to its family's
    (`x`, the parser's name for it): either sums its `_total` samples, never `x_created`."""
    wanted = (labels or {}).items()
    total = 0.0
    for family in text_string_to_metric_families(text):
        counter = family.type == "counter" and family.name == name
        for sample in family.samples:
            if sample.name == name or (counter and sample.name == name + "_total"):
                if wanted <= sample.labels.items():
                    total += sample.value
    return total


class SpecDecodeTotals(NamedTuple):
    totals: dict[str, float]  # counter name -> total over engines and labels
    accepted_by_position: dict[int, float]  # vLLM's 0-based position -> accepted tokens
    drafted_by_position: dict[int, float]  # vLLM's 0-based position -> draft tokens


def spec_decode_totals(
    engine_text: str, counters: Collection[str] = SPEC_DECODE_COUNTERS
) -> SpecDecodeTotals:
    """Totals of the named counters (summed over engines and labels; the spec-decode ones
    unless told), and accepted and draft tokens by draft position, in one pass."""
    totals: dict[str, float] = defaultdict(float)
    by_position: dict[str, dict[int, float]] = {name: defaultdict(float) for name in PER_POSITION}
    for family in text_string_to_metric_families(engine_text):
        if family.name not in counters and family.name not in by_position:
            continue
        for sample in family.samples:
            if not sample.name.endswith("_total"):
                continue
            if family.name in by_position:
                if (position := sample.labels.get("position", "")).isdigit():
                    by_position[family.name][int(position)] += sample.value
            else:
                totals[family.name] += sample.value
    return SpecDecodeTotals(
        totals, by_position[ACCEPTED_PER_POSITION], by_position[DRAFTED_PER_POSITION]
    )


def position_rates(
    accepted_by_position: Mapping[int, float],
    drafted_by_position: Mapping[int, float],
    drafts: float,
) -> dict[int, float]:
    """Acceptance at each draft position (0-based): accepted there / drafted there. Without
    vLLM's drafted counter (an unpatched vLLM), accepted there / all drafts, which is the same
    only while every draft has the same K."""
    rates = {}
    for position, accepted in accepted_by_position.items():
        drafted = drafted_by_position.get(position, drafts) if drafted_by_position else drafts
        rates[position] = accepted / drafted if drafted > 0 else 0.0
    return rates


def drafts_by_k(drafted_by_position: Mapping[int, float]) -> dict[int, float]:
    """Drafts of exactly k tokens, k from 1: those that reached position k-1 but not k. With
    a batch-size schedule this is which K the engine drafted (steps with K=0 draft nothing
    and are not counted)."""
    positions = sorted(drafted_by_position)
    return {
        position + 1: drafted_by_position[position] - drafted_by_position.get(position + 1, 0.0)
        for position in positions
    }


class EngineUpCollector(Collector):
    """Prometheus's `up`, for the engine's part of a scrape: a missing vLLM series then reads
    as "not scraped", not as a value that dropped to nothing."""

    def __init__(self, up: bool):
        self.up = up

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield GaugeMetricFamily(
            ENGINE_UP,
            "1 if this scrape carries the engine's metrics, 0 if the engine was not ready "
            "or did not answer within the front's timeout.",
            value=1.0 if self.up else 0.0,
        )


class SpecDecodeCollector(Collector):
    """Acceptance gauges from the engine text of the current scrape."""

    def __init__(self, engine_text: str):
        self.engine_text = engine_text

    def collect(self) -> Iterator[GaugeMetricFamily]:
        totals, accepted_by_position, drafted_by_position = spec_decode_totals(self.engine_text)
        drafts, draft_tokens = totals.get(DRAFTS, 0.0), totals.get(DRAFT_TOKENS, 0.0)
        accepted = totals.get(ACCEPTED, 0.0)
        if not drafts:
            return
        yield GaugeMetricFamily(
            "serving_spec_decode_acceptance_rate",
            "Accepted draft tokens / proposed draft tokens, since the engine started.",
            value=accepted / draft_tokens if draft_tokens else 0.0,
        )
        yield GaugeMetricFamily(
            "serving_spec_decode_mean_acceptance_length",
            "Tokens emitted per target pass: 1 + accepted draft tokens / drafts.",
            value=1.0 + accepted / drafts,
        )
        per_position = GaugeMetricFamily(
            "serving_spec_decode_position_acceptance_rate",
            "Share of the draft tokens at this position (0-based) that were accepted.",
            labels=["position"],
        )
        rates = position_rates(accepted_by_position, drafted_by_position, drafts)
        for position in sorted(rates):
            per_position.add_metric([str(position)], rates[position])
        yield per_position
        if drafted_by_position:
            by_k = GaugeMetricFamily(
                "serving_spec_decode_drafts_by_k",
                "Drafts of exactly k tokens since the engine started: the K in use, which a "
                "batch-size schedule changes from step to step.",
                labels=["k"],
            )
            for k, count in sorted(drafts_by_k(drafted_by_position).items()):
                by_k.add_metric([str(k)], count)
            yield by_k


class FrontMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "serving_requests",
            "Requests answered by the front, by route and status code.",
            ["route", "status"],
            registry=self.registry,
        )
        self.latency = self.route_histogram(
            "serving_request_duration_seconds",
            "Time from request start to the last byte of the answer.",
        )
        self.first_byte = self.route_histogram(
            "serving_stream_first_byte_seconds",
            "Time from request start to the first event of a streamed answer.",
        )
        self.in_flight = Gauge(
            "serving_requests_in_flight",
            "Requests being served now.",
            registry=self.registry,
        )
        self.rejected = Counter(
            "serving_requests_rejected",
            "Requests refused before reaching the engine, by reason "
            "(overload answers 429; loading, restarting, draining and dead answer 503).",
            ["reason"],
            registry=self.registry,
        )
        self.engine_restarts = Counter(
            "serving_engine_restarts",
            "Engine restarts in place, by reason (exit: it ended; stall: it stopped making "
            "progress).",
            ["reason"],
            registry=self.registry,
        )
        self.engine_stalls = Counter(
            "serving_engine_stalls",
            "Times the engine had work and made no progress for SERVING_ENGINE_STALL_SECONDS.",
            registry=self.registry,
        )

        self.sessions_open = Gauge(
            "serving_bidi_sessions_open",
            "Bidirectional-stream sessions (/invocations-bidirectional-stream) open now.",
            registry=self.registry,
        )
        self.frames = Counter(
            "serving_bidi_frames",
            "Frames of bidirectional-stream sessions, by direction (in: from clients, out: to "
            "them).",
            ["direction"],
            registry=self.registry,
        )
        self.cancels = Counter(
            "serving_bidi_cancels",
            "Requests of bidirectional-stream sessions stopped by a cancel frame.",
            registry=self.registry,
        )
        self.configured_k = Gauge(
            "serving_spec_decode_k",
            "Draft tokens the engine proposes a step at each range of batch sizes ('all' "
            "without a schedule; 0: no drafts there), as configured at start-up.",
            ["batch_sizes"],
            registry=self.registry,
        )

    def speculation(self, config: Mapping[str, Any] | None) -> None:
        """The K in force, from the speculative config the engine was started with."""
        if not config or "num_speculative_tokens" not in config:
            return
        schedule = config.get(BATCH_SCHEDULE_KEY)
        if not schedule:
            self.configured_k.labels("all").set(config["num_speculative_tokens"])
            return
        for first, last, k in schedule:
            self.configured_k.labels(f"{first}-{last}").set(k)

    def route_histogram(self, name: str, documentation: str) -> Histogram:
        return Histogram(
            name, documentation, ["route"], buckets=LATENCY_BUCKETS, registry=self.registry
        )

    def render(self, engine_text: str | None) -> bytes:
        """The front's metrics, whether this scrape carries the engine's (None: it did not
        answer, or is not ready), and the gauges derived from them."""
        derived = CollectorRegistry()
        derived.register(EngineUpCollector(engine_text is not None))
        derived.register(SpecDecodeCollector(engine_text or ""))
        return generate_latest(self.registry) + generate_latest(derived)
