"""deploy --routing and --metrics-frequency: each strategy, and SageMaker's scraping of
/metrics, sent as botocore's shapes (a Stubber checks every parameter of the calls, botocore
their shapes), and the settings SageMaker would refuse refused before any call."""

from __future__ import annotations

import copy

import pytest

from tests.deploy.test_endpoint_rollout import PLAIN_CONFIG
from tests.support.cli import run_cli
from tests.support.deploy import (
    deploy_argv,
    deploy_cli,
)
from tests.support.rollout import ARGS, deploys

STRATEGIES = {
    "least-outstanding": {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"},
    "random": {"RoutingStrategy": "RANDOM"},
    "prefix-aware": {
        "RoutingStrategy": "PREFIX_AWARE",
        "PrefixAwareRoutingConfig": {"PrefixLength": 4096, "ConcurrencyThreshold": 16},
    },
    "kv-aware": {"RoutingStrategy": "KV_AWARE"},
}


def config_with(routing: dict, metrics: dict) -> dict:
    config = copy.deepcopy(PLAIN_CONFIG)
    config["ProductionVariants"][0]["RoutingConfig"] = routing
    config["MetricsConfig"] = metrics
    return config


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_each_routing_strategy_reaches_the_endpoint_config(fixed_version, strategy) -> None:
    options = ["--routing", strategy, "--metrics-frequency", "30"]
    if strategy == "prefix-aware":
        options += ["--prefix-length", "4096", "--concurrency-threshold", "16"]
    metrics = {"EnableDetailedObservability": True, "MetricPublishFrequencyInSeconds": 30}
    deploys(options, config_with(STRATEGIES[strategy], metrics))


def test_metrics_frequency_0_turns_detailed_observability_off(fixed_version) -> None:
    off = {"EnableDetailedObservability": False}
    deploys(["--metrics-frequency", "0"], config_with(STRATEGIES["least-outstanding"], off))


@pytest.mark.parametrize(
    "options, problem",
    [
        (["--metrics-frequency", "45"], "--metrics-frequency 45 is not one SageMaker takes"),
        (["--routing", "prefix-aware", "--prefix-length", "100"], "--prefix-length 100 is outside"),
        (["--concurrency-threshold", "2000"], "--concurrency-threshold 2000 is outside 1..1024"),
        (
            ["--routing", "kv-aware", "--env", "SM_VLLM_ENABLE_PREFIX_CACHING=false"],
            "pays only where the container keeps prefixes cached",
        ),
    ],
)
def test_settings_sagemaker_would_refuse_are_refused_first(options, problem) -> None:
    code, _, err = run_cli(deploy_cli, deploy_argv(*ARGS, *options))
    assert code == 2, err
    assert problem in err
