"""The front's own Prometheus metrics, served after the engine's on /metrics."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)


class FrontMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "serving_requests",
            "Requests answered by the front, by route and status code.",
            ["route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "serving_request_duration_seconds",
            "Time from request start to the last byte of the answer.",
            ["route"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.in_flight = Gauge(
            "serving_requests_in_flight",
            "Requests being served now.",
            registry=self.registry,
        )
        self.rejected = Counter(
            "serving_requests_rejected",
            "Requests refused before reaching the engine, by reason.",
            ["reason"],
            registry=self.registry,
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)
