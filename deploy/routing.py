"""How the endpoint spreads requests over its instances (or a component's copies), and what
SageMaker scrapes from each container: `--routing` and `--metrics-frequency` as
botocore's `ProductionVariantRoutingConfig` and `MetricsConfig` (botocore 1.44.18).

When each strategy pays (docs/sagemaker.md#routing-and-metrics): least-outstanding (the
default) for mixed traffic; prefix-aware when many requests share a long prompt prefix (a few
tenants' system prompts, an agent's tool list), since the instance that served a prefix holds
its KV blocks in vLLM's prefix cache and skips their prefill; kv-aware for the same traffic
when SageMaker can see each container's cache; random where requests are alike and short.

Prefix-aware and kv-aware routing pay only where the containers keep prefixes cached, so
they refuse an --env that turns vLLM's prefix caching off.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

STRATEGIES = {
    "least-outstanding": "LEAST_OUTSTANDING_REQUESTS",
    "random": "RANDOM",
    "prefix-aware": "PREFIX_AWARE",
    "kv-aware": "KV_AWARE",
}
CACHING = ("prefix-aware", "kv-aware")
# botocore's bounds: PrefixLength in characters of the messages' text on the OpenAI path,
# in bytes of the body on InvokeEndpoint; ConcurrencyThreshold per instance or copy.
PREFIX_LENGTH_RANGE = (1024, 65536)
CONCURRENCY_RANGE = (1, 1024)
DEFAULT_PREFIX_LENGTH = 2048
DEFAULT_CONCURRENCY_THRESHOLD = 32
# What SageMaker takes for MetricPublishFrequencyInSeconds.
FREQUENCIES = (10, 30, 60, 120, 180, 240, 300)
DEFAULT_FREQUENCY = 60
PREFIX_CACHING_VAR = "SM_VLLM_ENABLE_PREFIX_CACHING"


@dataclass(frozen=True)
class Routing:
    strategy: str = "least-outstanding"
    prefix_length: int = DEFAULT_PREFIX_LENGTH
    concurrency_threshold: int = DEFAULT_CONCURRENCY_THRESHOLD

    def request(self) -> dict[str, Any]:
        """The variant's RoutingConfig."""
        config: dict[str, Any] = {"RoutingStrategy": STRATEGIES[self.strategy]}
        if self.strategy == "prefix-aware":
            config["PrefixAwareRoutingConfig"] = {
                "PrefixLength": self.prefix_length,
                "ConcurrencyThreshold": self.concurrency_threshold,
            }
        return config


@dataclass(frozen=True)
class Observability:
    """SageMaker's detailed observability: the container's /metrics scraped and published
    to CloudWatch every `frequency_seconds` (None: off)."""

    frequency_seconds: int | None = DEFAULT_FREQUENCY

    def request(self) -> dict[str, Any]:
        """The endpoint config's MetricsConfig."""
        if self.frequency_seconds is None:
            return {"EnableDetailedObservability": False}
        return {
            "EnableDetailedObservability": True,
            "MetricPublishFrequencyInSeconds": self.frequency_seconds,
        }


def add_options(deploy: argparse.ArgumentParser) -> None:
    group = deploy.add_argument_group("routing and metrics")
    group.add_argument(
        "--routing", choices=STRATEGIES, default="least-outstanding",
        help="how the endpoint picks an instance (or copy) for each request (%(default)s)",
    )  # fmt: skip
    group.add_argument(
        "--prefix-length", type=int, default=DEFAULT_PREFIX_LENGTH,
        help="prefix-aware: characters (OpenAI path) or body bytes that name a prefix "
        "(%(default)s; 1024..65536)",
    )  # fmt: skip
    group.add_argument(
        "--concurrency-threshold", type=int, default=DEFAULT_CONCURRENCY_THRESHOLD,
        help="prefix-aware: requests in flight on an instance (or copy) before its prefixes "
        "go elsewhere (%(default)s; 1..1024)",
    )  # fmt: skip
    group.add_argument(
        "--metrics-frequency", type=int, default=DEFAULT_FREQUENCY, metavar="SECONDS",
        help="how often SageMaker scrapes /metrics into CloudWatch (%(default)s; one of "
        f"{', '.join(map(str, FREQUENCIES))}; 0 turns detailed observability off)",
    )  # fmt: skip


def routing_of(
    args: argparse.Namespace, environment: dict[str, str], problems: list[str]
) -> Routing:
    low, high = PREFIX_LENGTH_RANGE
    if not low <= args.prefix_length <= high:
        problems.append(f"--prefix-length {args.prefix_length} is outside {low}..{high}.")
    low, high = CONCURRENCY_RANGE
    if not low <= args.concurrency_threshold <= high:
        problems.append(
            f"--concurrency-threshold {args.concurrency_threshold} is outside {low}..{high}."
        )
    caching = environment.get(PREFIX_CACHING_VAR, "true").strip().lower()
    if args.routing in CACHING and caching in ("false", "0", "no", "off"):
        problems.append(
            f"--routing {args.routing} pays only where the container keeps prefixes cached, "
            f"and --env {PREFIX_CACHING_VAR}={environment[PREFIX_CACHING_VAR]} turns that off; "
            "drop that --env, or route with --routing least-outstanding."
        )
    return Routing(args.routing, args.prefix_length, args.concurrency_threshold)


def observability_of(args: argparse.Namespace, problems: list[str]) -> Observability:
    if args.metrics_frequency == 0:
        return Observability(None)
    if args.metrics_frequency not in FREQUENCIES:
        problems.append(
            f"--metrics-frequency {args.metrics_frequency} is not one SageMaker takes; use one "
            f"of {', '.join(map(str, FREQUENCIES))}, or 0 to turn detailed observability off."
        )
    return Observability(args.metrics_frequency)
