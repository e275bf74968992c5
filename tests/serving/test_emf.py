"""CloudWatch without an agent: EMF lines on stdout, valid by the specification, carrying
the interval's speculation and traffic."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import httpx
import jsonschema

from deploy import alarms, cloudwatch_figures
from deploy.alarms import guard_alarms
from serving.emf import Totals, document
from tests.support.containers import TRAINED
from tests.support.rollout import DEPLOYED

SCHEMA = json.loads((Path(__file__).parents[1] / "data" / "emf-schema.json").read_text())
CODE = {
    "messages": [{"role": "user", "content": "def is_prime(n):"}],
    "max_tokens": 48,
    "temperature": 0,
}


def check_emf(line: dict) -> None:
    """The schema, plus the spec's rule that every reference names a root member: metrics
    a number (or at most 100 numbers), dimensions a string."""
    jsonschema.validate(line, SCHEMA)
    for directive in line["_aws"]["CloudWatchMetrics"]:
        for metric in directive["Metrics"]:
            value = line[metric["Name"]]
            assert isinstance(value, int | float) and not isinstance(value, bool), metric
        for dimension_set in directive["Dimensions"]:
            for name in dimension_set:
                assert isinstance(line[name], str), name


def emf_lines(log: str) -> list[dict]:
    return [json.loads(line) for line in log.splitlines() if line.startswith('{"_aws"')]


def test_an_interval_with_drafts_reports_acceptance_per_position():
    before = Totals(
        drafts=10, draft_tokens=30, accepted=15, accepted_by_position={0: 8, 1: 5, 2: 2}
    )
    now = Totals(
        drafts=20,
        draft_tokens=60,
        accepted=35,
        accepted_by_position={0: 18, 1: 12, 2: 5},
        generation_tokens=200,
        requests=4,
        errors=1,
        overloaded=2,
    )
    line = document(before, now, 10.0, 3, {"EndpointName": "e", "VariantName": "v"}, 1)
    check_emf(line)
    assert line["AcceptanceRate"] == round(20 / 30, 6)
    assert line["MeanAcceptanceLength"] == 3.0
    assert [line[f"AcceptanceRatePosition{p}"] for p in (1, 2, 3)] == [1.0, 0.7, 0.3]
    assert line["OutputTokensPerSecond"] == 20.0
    assert (line["Requests"], line["Errors"], line["Throttled"], line["InFlight"]) == (4, 1, 2, 3)
    assert line["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["EndpointName", "VariantName"]]


def test_when_k_changes_between_steps_each_position_is_rated_on_its_own_drafts():
    """A batch-size schedule mixes K: over the interval 6 drafts of K=3 and 4 of K=1. Position
    2 and 3 were drafted 6 times, not 10: their rates are over those 6, and the line counts the
    drafts of each K."""
    before = Totals(drafts=0, draft_tokens=0, accepted=0)
    now = Totals(
        drafts=10,
        draft_tokens=22,
        accepted=12,
        accepted_by_position={0: 8, 1: 3, 2: 1},
        drafted_by_position={0: 10, 1: 6, 2: 6},
    )
    line = document(before, now, 10.0, 0, {"EndpointName": "e", "VariantName": "v"}, 1)
    check_emf(line)
    assert [line[f"AcceptanceRatePosition{p}"] for p in (1, 2, 3)] == [0.8, 0.5, round(1 / 6, 6)]
    assert (line["DraftsWithK1"], line["DraftsWithK2"], line["DraftsWithK3"]) == (4, 0, 6)
    assert line["MeanAcceptanceLength"] == 1 + 12 / 10


def test_a_head_version_adds_a_dimension_set_and_keeps_the_variants():
    dimensions = {"EndpointName": "e", "VariantName": "v", "HeadVersion": "20250601120000"}
    line = document(Totals(), Totals(requests=1), 60.0, 0, dimensions, 1)
    check_emf(line)
    # The variant's series go on across head changes; the head's own tell fleets apart.
    assert line["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [
        ["EndpointName", "VariantName"],
        ["EndpointName", "HeadVersion", "VariantName"],
    ]
    assert line["HeadVersion"] == "20250601120000"


def test_an_interval_without_drafts_reports_no_acceptance():
    line = document(Totals(), Totals(requests=1), 60.0, 0, {}, 1)
    check_emf(line)
    assert "AcceptanceRate" not in line
    assert line["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [[]]


def test_the_container_writes_valid_emf_lines_with_the_intervals_speculation(peagle):
    # The peagle container writes a line every 2 s (SERVING_EMF_INTERVAL_SECONDS=2).
    start = len(peagle.log_text())
    answer = httpx.post(f"{peagle.url}/invocations", json=CODE, timeout=120)
    assert answer.status_code == 200
    deadline = time.monotonic() + 20
    lines: list[dict] = []
    while time.monotonic() < deadline and not any(line["Requests"] for line in lines):
        time.sleep(0.5)
        lines = emf_lines(peagle.log_text()[start:])
    assert lines, "no EMF line within 20 s"
    for line in lines:
        check_emf(line)
    busy = [line for line in lines if line["Requests"] >= 1]
    assert busy, lines
    if any("MeanAcceptanceLength" in line for line in lines):
        with_drafts = [line for line in lines if "MeanAcceptanceLength" in line]
        assert all(line["MeanAcceptanceLength"] >= 1.0 for line in with_drafts)
        assert all("AcceptanceRatePosition1" in line for line in with_drafts)
        if TRAINED:
            assert max(line["MeanAcceptanceLength"] for line in with_drafts) >= 1.5
    else:
        raise AssertionError(f"no interval carried the request's drafts: {lines}")
    assert sum(line["OutputTokensPerSecond"] for line in lines) > 0


def test_interval_zero_writes_no_emf_line(plain):
    # The plain container runs with SERVING_EMF_INTERVAL_SECONDS=0; it has served requests
    # for the whole session by the time this runs, which would be many lines at 60 s.
    assert httpx.post(f"{plain.url}/invocations", json=CODE, timeout=120).status_code == 200
    assert emf_lines(plain.log_text()) == []


def test_deploys_alarms_and_comparison_watch_what_the_container_writes(peagle):
    """The alarms deploy creates and the series compare reads, against a real EMF line of a
    container with the environment deploy gives a model: same namespace, a metric the line
    carries, and exactly one of its dimension sets with the same values."""
    start = len(peagle.log_text())
    assert httpx.post(f"{peagle.url}/invocations", json=CODE, timeout=120).status_code == 200
    deadline = time.monotonic() + 20
    lines: list[dict] = []
    while time.monotonic() < deadline and not any("MeanAcceptanceLength" in x for x in lines):
        time.sleep(0.5)
        lines = emf_lines(peagle.log_text()[start:])
    line = next(line for line in lines if "MeanAcceptanceLength" in line)
    directive = line["_aws"]["CloudWatchMetrics"][0]
    written = {metric["Name"] for metric in directive["Metrics"]}
    series = {
        frozenset((name, line[name]) for name in dimension_set)
        for dimension_set in directive["Dimensions"]
    }
    plan = replace(DEPLOYED, endpoint_name=line["EndpointName"], version=line["HeadVersion"])
    watched = [alarms.put_alarm(plan, alarm).params for alarm in guard_alarms(plan, 2.5)]
    queries = cloudwatch_figures.queries(plan.endpoint_name, "AllTraffic", "p", positions=3)
    watched += [
        {**query["MetricStat"]["Metric"], "Statistic": query["MetricStat"]["Stat"]}
        for query in queries
        if query["MetricStat"]["Metric"]["Namespace"] == directive["Namespace"]
    ]
    assert len(watched) == 2 + 6  # both alarms; length, 3 positions, tokens/s, requests
    for params in watched:
        assert params["Namespace"] == directive["Namespace"]
        assert params["MetricName"] in written, params["MetricName"]
        dimensions = frozenset((d["Name"], d["Value"]) for d in params["Dimensions"])
        assert dimensions in series, (dimensions, series)
        # Ratios average over the interval lines; counts add up.
        expected = "Sum" if params["MetricName"] in ("Errors", "Requests") else "Average"
        assert params["Statistic"] == expected
