"""The alarms that guard a new head, as requests: built from the names the container writes its
CloudWatch metrics under (serving/cloudwatch.py), so they watch exactly those figures.

During a blue/green or rolling update both fleets share the variant's name; the new fleet is
told apart by the HeadVersion dimension its model's environment carries. SageMaker watches
the alarms while the canary bakes and rolls back when one fires.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from deploy import names
from deploy.calls import Call
from deploy.plan import DEFAULT_ACCEPTANCE_FLOOR, Plan
from serving import cloudwatch as cw

CLOUDWATCH = "cloudwatch"
# The container writes one EMF line a minute (SERVING_EMF_INTERVAL_SECONDS=60).
PERIOD_SECONDS = 60
# Two low minutes out of three: one slow minute of a cold cache is not a bad head.
ACCEPTANCE_PERIODS, ACCEPTANCE_DATAPOINTS = 3, 2
HISTORY = timedelta(hours=1)


@dataclass(frozen=True)
class Alarm:
    name: str
    metric: str
    statistic: str
    comparison: str
    threshold: float
    periods: int
    datapoints: int

    def what(self) -> str:
        relation = "below" if self.comparison == "LessThanThreshold" else "above"
        return f"{self.metric} ({self.statistic}) {relation} {self.threshold:g}"


def dimensions(named: dict[str, str]) -> list[dict[str, str]]:
    """CloudWatch's Dimensions, in the EMF line's order (its dimension sets are sorted)."""
    return [{"Name": name, "Value": named[name]} for name in sorted(named)]


def head_dimensions(endpoint_name: str, head_version: str) -> list[dict[str, str]]:
    """The new fleet's dimension set, as the container's EMF line names it."""
    return dimensions(
        {
            cw.ENDPOINT_DIMENSION: endpoint_name,
            cw.VARIANT_DIMENSION: names.VARIANT_NAME,
            cw.HEAD_VERSION_DIMENSION: head_version,
        }
    )


def variant_dimensions(endpoint_name: str, variant_name: str) -> list[dict[str, str]]:
    return dimensions({cw.ENDPOINT_DIMENSION: endpoint_name, cw.VARIANT_DIMENSION: variant_name})


def guard_alarms(plan: Plan, min_acceptance: float | None) -> list[Alarm]:
    """The errors alarm always; the acceptance one when there is a floor to hold."""
    stem = names.with_suffix(plan.endpoint_name, f"-{plan.head_version}")
    guard = [
        Alarm(f"{stem}-errors", cw.ERRORS, "Sum", "GreaterThanThreshold", 0.0, 1, 1),
    ]
    if min_acceptance is not None:
        guard.insert(
            0,
            Alarm(
                f"{stem}-acceptance",
                cw.MEAN_ACCEPTANCE_LENGTH,
                "Average",
                "LessThanThreshold",
                round(min_acceptance, 3),
                ACCEPTANCE_PERIODS,
                ACCEPTANCE_DATAPOINTS,
            ),
        )
    return guard


ALARM_KINDS = ("acceptance", "errors")


def is_guard_alarm(endpoint_name: str, alarm_name: str) -> bool:
    """Whether `alarm_name` is one of the alarms a deploy of `endpoint_name` creates."""
    stem, _, kind = alarm_name.rpartition("-")
    return kind in ALARM_KINDS and names.is_versioned_name(endpoint_name, stem)


def put_alarm(plan: Plan, alarm: Alarm) -> Call:
    return Call(
        CLOUDWATCH,
        "PutMetricAlarm",
        {
            "AlarmName": alarm.name,
            "AlarmDescription": (
                f"Rolls {plan.endpoint_name} back off head {plan.head_version} "
                f"({plan.head.uri}) when its {alarm.what()}."
            ),
            "Namespace": cw.NAMESPACE,
            "MetricName": alarm.metric,
            "Dimensions": head_dimensions(plan.endpoint_name, plan.head_version),
            "Statistic": alarm.statistic,
            "Period": PERIOD_SECONDS,
            "EvaluationPeriods": alarm.periods,
            "DatapointsToAlarm": alarm.datapoints,
            "Threshold": alarm.threshold,
            "ComparisonOperator": alarm.comparison,
            # No traffic on the new fleet is no evidence against it.
            "TreatMissingData": "notBreaching",
        },
    )


def describe_alarms(alarm_names: list[str]) -> Call:
    return Call(CLOUDWATCH, "DescribeAlarms", {"AlarmNames": alarm_names})


def delete_alarms(alarm_names: list[str]) -> Call:
    return Call(CLOUDWATCH, "DeleteAlarms", {"AlarmNames": alarm_names})


def current_acceptance(endpoint_name: str, now: datetime) -> Call:
    """The production variant's mean acceptance length over the last hour, all heads."""
    return Call(
        CLOUDWATCH,
        "GetMetricStatistics",
        {
            "Namespace": cw.NAMESPACE,
            "MetricName": cw.MEAN_ACCEPTANCE_LENGTH,
            "Dimensions": variant_dimensions(endpoint_name, names.VARIANT_NAME),
            "StartTime": now - HISTORY,
            "EndTime": now,
            "Period": int(HISTORY.total_seconds()),
            "Statistics": ["Average"],
        },
    )


def acceptance_floor(answer: dict[str, Any]) -> tuple[float | None, str]:
    """The default floor from GetMetricStatistics' answer, and a sentence saying where from."""
    points = [point["Average"] for point in answer.get("Datapoints", []) if "Average" in point]
    if not points:
        return None, (
            "no acceptance recorded for the current head in the last hour: no acceptance "
            "alarm (pass --min-acceptance to set one); the errors alarm still guards"
        )
    current = sum(points) / len(points)
    floor = DEFAULT_ACCEPTANCE_FLOOR * current
    return floor, (
        f"the current head's mean acceptance length over the last hour is {current:.2f}: "
        f"the new head must hold {floor:.2f} ({DEFAULT_ACCEPTANCE_FLOOR:g} x)"
    )


def fired(answer: dict[str, Any]) -> list[str]:
    """DescribeAlarms' answer as sentences: each alarm in ALARM, with what it saw."""
    return [
        f"alarm {alarm['AlarmName']} fired: {alarm.get('StateReason', 'no reason given')}"
        for alarm in answer.get("MetricAlarms", [])
        if alarm.get("StateValue") == "ALARM"
    ]
