"""`compare` on a real endpoint: both variants' figures over the last minutes, from CloudWatch.

The container writes its figures per minute (EMF, dimensions EndpointName and VariantName);
SageMaker writes ModelLatency per variant, shadow included. Each figure is the mean of the
window's one-minute values, and its noise the standard error across those minutes.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from deploy import names
from deploy.alarms import variant_dimensions
from deploy.calls import Call, send
from deploy.clients import Connection
from deploy.comparison import Comparison, Figure, Row, series_figure
from deploy.failures import UsageError
from deploy.shadow_variant import Live, read_live
from serving import cloudwatch as cw
from serving import paths
from serving.variables import HEAD_VERSION_VAR, SPECULATIVE_CONFIG_VAR

PERIOD_SECONDS = 60
SAGEMAKER_NAMESPACE = "AWS/SageMaker"
MODEL_LATENCY = "ModelLatency"  # microseconds


def head_of(live: Live, variant: dict[str, Any]) -> tuple[str, int]:
    """What a variant serves, for the table's header, and its K."""
    container = live.model_of(variant)["PrimaryContainer"]
    environment = container.get("Environment", {})
    spec = json.loads(environment.get(SPECULATIVE_CONFIG_VAR, "{}"))
    k = int(spec.get("num_speculative_tokens", 0))
    heads = [
        source["S3DataSource"]["S3Uri"]
        for source in container.get("AdditionalModelDataSources", [])
        if source.get("ChannelName") == paths.DRAFTER_CHANNEL
    ]
    version = environment.get(HEAD_VERSION_VAR, "unversioned")
    return (
        f"variant {variant['VariantName']}, head {heads[0] if heads else '?'} "
        f"(version {version}), K={k}",
        k,
    )


def queries(endpoint_name: str, variant_name: str, prefix: str, positions: int) -> list[dict]:
    dimensions = variant_dimensions(endpoint_name, variant_name)

    def query(query_id: str, namespace: str, metric: str, stat: str) -> dict:
        return {
            "Id": f"{prefix}_{query_id}",
            "MetricStat": {
                "Metric": {"Namespace": namespace, "MetricName": metric, "Dimensions": dimensions},
                "Period": PERIOD_SECONDS,
                "Stat": stat,
            },
            "ReturnData": True,
        }

    return [
        query("length", cw.NAMESPACE, cw.MEAN_ACCEPTANCE_LENGTH, "Average"),
        *[
            query(f"position{k}", cw.NAMESPACE, cw.position_metric(k), "Average")
            for k in range(1, positions + 1)
        ],
        query("tokens", cw.NAMESPACE, cw.OUTPUT_TOKENS_PER_SECOND, "Average"),
        query("latency", SAGEMAKER_NAMESPACE, MODEL_LATENCY, "Average"),
        query("requests", cw.NAMESPACE, cw.REQUESTS, "Sum"),
    ]


def metric_data(endpoint_name: str, live: Live, positions: int, start: datetime, end: datetime):
    assert live.shadow is not None
    return Call(
        "cloudwatch",
        "GetMetricData",
        {
            "MetricDataQueries": [
                *queries(endpoint_name, live.production["VariantName"], "p", positions),
                *queries(endpoint_name, live.shadow["VariantName"], "s", positions),
            ],
            "StartTime": start,
            "EndTime": end,
            "ScanBy": "TimestampAscending",
        },
    )


def values_by_id(connection: Connection, call: Call) -> dict[str, list[float]]:
    found: dict[str, list[float]] = {}
    params = dict(call.params)
    while True:
        answer = send(connection.client, Call(call.service, call.operation, params))
        for result in answer.get("MetricDataResults", []):
            found.setdefault(result["Id"], []).extend(result.get("Values", []))
        if not answer.get("NextToken"):
            return found
        params["NextToken"] = answer["NextToken"]


def side(values: dict[str, list[float]], prefix: str, row: str) -> Figure:
    series = values.get(f"{prefix}_{row}", [])
    if row == "requests":
        return Figure(sum(series)) if series else Figure(0.0)
    figure = series_figure(series)
    if row == "latency":  # microseconds to milliseconds
        return Figure(figure.mean / 1000, None if figure.noise is None else figure.noise / 1000)
    return figure


def from_cloudwatch(
    connection: Connection, endpoint_name: str, minutes: int, now: datetime | None = None
) -> Comparison:
    live = read_live(connection, endpoint_name, in_service=False)
    if live.shadow is None:
        raise UsageError(
            f"endpoint {endpoint_name} has no shadow variant to compare; add one with "
            "`shadow --name ... --head-uri ...`."
        )
    production, production_k = head_of(live, live.production)
    shadow, shadow_k = head_of(live, live.shadow)
    positions = max(production_k, shadow_k)
    end = (now or datetime.now(UTC)).replace(second=0, microsecond=0)
    start = end - timedelta(minutes=minutes)
    values = values_by_id(connection, metric_data(endpoint_name, live, positions, start, end))

    def row(label: str, key: str, digits: int = 2, higher: bool | None = True) -> Row:
        return Row(label, side(values, "p", key), side(values, "s", key), digits, higher)

    rows = [
        row("mean acceptance length", "length"),
        *[row(f"acceptance at position {k}", f"position{k}", 3) for k in range(1, positions + 1)],
        row("output tokens/s per instance", "tokens", 1),
        row("model latency, mean (ms)", "latency", 1, False),
        row("requests", "requests", 0, None),
    ]
    window = (
        f"{start:%Y-%m-%d %H:%M} to {end:%H:%M} UTC ({minutes} one-minute values per figure "
        f"at most), endpoint {endpoint_name} in {connection.region}; "
        f"log group {names.log_group(endpoint_name)}"
    )
    return Comparison(window, production, shadow, rows)
