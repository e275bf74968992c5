"""deploy's guard on an existing endpoint, from its dry run: the canary SageMaker can take
for the fleet's size, the alarms on the new head's own series, and the options' limits."""

from __future__ import annotations

import pytest

from tests.support.cli import run_cli
from tests.support.deploy import deploy_argv, deploy_cli, parse_json_stream
from tests.support.rollout import ARGS


def update_dry_run(*extra: str) -> tuple[list[dict], str]:
    code, out, err = run_cli(deploy_cli, deploy_argv(*ARGS, "--dry-run", "--update", *extra))
    assert code == 0, err
    return parse_json_stream(out), err


def call(printed: list[dict], operation: str) -> list[dict]:
    return [entry["parameters"] for entry in printed if entry["operation"] == operation]


@pytest.mark.parametrize(
    ("instances", "canary", "expected"),
    [
        ("4", "10%", {"Type": "CANARY", "CanarySize": {"Type": "INSTANCE_COUNT", "Value": 1}}),
        ("4", "50%", {"Type": "CANARY", "CanarySize": {"Type": "INSTANCE_COUNT", "Value": 2}}),
        # One instance is more than half of a one-instance fleet: all of it bakes at once.
        ("1", "10%", {"Type": "ALL_AT_ONCE"}),
        # 30% of 3 rounds up to one instance; 34% of 3 to two, more than half: all at once.
        ("3", "30%", {"Type": "CANARY", "CanarySize": {"Type": "INSTANCE_COUNT", "Value": 1}}),
        ("3", "34%", {"Type": "ALL_AT_ONCE"}),
    ],
)
def test_the_canary_is_what_sagemaker_allows_for_the_fleet(instances, canary, expected) -> None:
    printed, _ = update_dry_run("--instance-count", instances, "--canary", canary, "--bake", "300")
    (update,) = call(printed, "UpdateEndpoint")
    routing = update["DeploymentConfig"]["BlueGreenUpdatePolicy"]["TrafficRoutingConfiguration"]
    assert routing == {**expected, "WaitIntervalInSeconds": 300}


def test_the_alarms_watch_the_new_heads_series_and_roll_back_the_update() -> None:
    printed, err = update_dry_run("--min-acceptance", "3.2")
    alarms = call(printed, "PutMetricAlarm")
    assert [alarm["MetricName"] for alarm in alarms] == ["MeanAcceptanceLength", "Errors"]
    acceptance = alarms[0]
    assert (acceptance["Threshold"], acceptance["ComparisonOperator"]) == (3.2, "LessThanThreshold")
    version = {d["Name"]: d["Value"] for d in acceptance["Dimensions"]}["HeadVersion"]
    (model,) = call(printed, "CreateModel")
    # The new fleet's containers write the very head version the alarms watch.
    assert model["PrimaryContainer"]["Environment"]["SERVING_HEAD_VERSION"] == version
    (update,) = call(printed, "UpdateEndpoint")
    rollback = update["DeploymentConfig"]["AutoRollbackConfiguration"]["Alarms"]
    assert [entry["AlarmName"] for entry in rollback] == [alarm["AlarmName"] for alarm in alarms]
    assert "The alarms are deleted once the update ends" in err


def test_without_a_floor_the_dry_run_shows_the_errors_alarm_and_says_why() -> None:
    printed, err = update_dry_run()
    assert [alarm["MetricName"] for alarm in call(printed, "PutMetricAlarm")] == ["Errors"]
    assert "reads the current head's acceptance over the last hour" in err


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (("--canary", "60%"), "--canary 60% is outside 1..50%"),
        (("--canary", "0"), "--canary 0% is outside 1..50%"),
        (("--canary", "3%", "--inference-component"), "--canary 3% is below 5%"),
        (("--bake", "4000"), "--bake 4000 is outside 0..3600 seconds"),
        (("--min-acceptance", "0.8"), "--min-acceptance 0.8 is below 1"),
    ],
)
def test_guard_options_outside_sagemakers_limits_are_refused(options, message) -> None:
    code, _, err = run_cli(deploy_cli, deploy_argv(*ARGS, "--dry-run", *options))
    assert code == 2
    assert message in err


def test_a_canary_that_is_not_a_percentage_is_an_argparse_error(capsys) -> None:
    code, _, _ = run_cli(deploy_cli, deploy_argv(*ARGS, "--dry-run", "--canary", "ten"))
    assert code == 2
    assert "--canary: 'ten' is not a percentage" in capsys.readouterr().err
