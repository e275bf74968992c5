"""The command line: bad input is a sentence and exit 2 before any call; --dry-run prints
readable JSON and needs no credentials."""

from __future__ import annotations

import json

import pytest

from deploy.clients import connect
from tests.support.cli import fails, run_cli
from tests.support.deploy import ROLE, deploy_argv, deploy_cli, fake_pair, parse_json_stream

DRY = ("--model-gb", "31", "--dry-run")


def replace(argv: list[str], option: str, value: str) -> list[str]:
    changed = list(argv)
    changed[changed.index(option) + 1] = value
    return changed


def test_role_that_is_not_a_role_arn() -> None:
    argv = replace(deploy_argv("--model-gb", "31"), "--role", "SageMakerExecutionRole")
    fails(
        deploy_cli, argv, "--role 'SageMakerExecutionRole' is not an IAM role ARN", "arn:aws:iam::"
    )


@pytest.mark.parametrize(
    ("uri", "fragment"),
    [
        ("s3://my-bucket/qwen/model", "must end in a single /; write s3://my-bucket/qwen/model/"),
        ("https://my-bucket.s3.amazonaws.com/qwen/", "is not an S3 prefix"),
        ("s3://My_Bucket/qwen/", "is not an S3 prefix"),
    ],
)
def test_s3_uri_that_is_not_a_prefix(uri: str, fragment: str) -> None:
    fails(
        deploy_cli,
        replace(deploy_argv("--model-gb", "31"), "--target-uri", uri),
        "--target-uri",
        fragment,
    )


def test_name_over_63_characters() -> None:
    fails(
        deploy_cli,
        deploy_argv("--model-gb", "31", name="q" * 64),
        "--name",
        "64 characters",
        "at most 63",
    )


@pytest.mark.parametrize("name", ["qwen_peagle", "qwen.peagle", "qwen peagle", "qwen-"])
def test_name_with_bad_characters(name: str) -> None:
    fails(
        deploy_cli,
        deploy_argv("--model-gb", "31", name=name),
        "--name",
        "characters SageMaker does not allow",
    )


def test_instance_type_sagemaker_does_not_list() -> None:
    fails(
        deploy_cli,
        deploy_argv("--model-gb", "31", "--instance-type", "ml.g7e.3xlarge"),
        "--instance-type 'ml.g7e.3xlarge' is not an instance type SageMaker lists",
        "ml.g7e.2xlarge",
    )


def test_unknown_ami_version() -> None:
    fails(
        deploy_cli,
        deploy_argv("--model-gb", "31", "--inference-ami-version", "al2-gpu-9"),
        "--inference-ami-version 'al2-gpu-9'",
    )


@pytest.mark.parametrize(
    ("pair", "fragment"),
    [
        ("HF_TOKEN=x", "--env HF_TOKEN is not read by the container"),
        ("SM_VLLM_SPECULATIVE_CONFIG={}", "built by this command from --k"),
        ("SM_VLLM_ENFORCE_EAGER=maybe", "SM_VLLM_ENFORCE_EAGER='maybe' is not true or false"),
        ("SM_VLLM_MAX_MODEL_LEN", "is not NAME=value"),
    ],
)
def test_environment_the_container_would_not_take(pair: str, fragment: str) -> None:
    fails(deploy_cli, deploy_argv("--model-gb", "31", "--env", pair), fragment)


def test_k_above_the_heads_trained_positions(tmp_path) -> None:
    target, head = fake_pair(tmp_path, trained_positions=8)
    fails(
        deploy_cli,
        deploy_argv("--target-dir", str(target), "--head-dir", str(head), "--k", "9"),
        "--k 9",
        "trained for 8 parallel positions",
        "set it to 8 or less",
    )


def test_k_within_the_trained_positions_passes_and_sizes_from_the_dirs(tmp_path) -> None:
    target, head = fake_pair(tmp_path, trained_positions=8)
    code, out, err = run_cli(
        deploy_cli, deploy_argv("--target-dir", str(target), "--head-dir", str(head), "--dry-run")
    )
    assert code == 0, err
    assert "model 0.0 GB" in err
    # Host checks (shared memory, CPU preload) describe this machine, not the endpoint.
    assert "shm" not in err and "LD_PRELOAD" not in err


def test_every_problem_is_reported_at_once() -> None:
    err = fails(
        deploy_cli,
        replace(deploy_argv("--instance-type", "ml.fake.xlarge", name="bad_name"), "--role", "r"),
        "--role",
    )
    assert "--name" in err and "--instance-type" in err
    assert "--dry-run" not in err  # sizing comes after the inputs are right


def test_no_credentials(monkeypatch) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    fails(
        deploy_cli,
        deploy_argv("--model-gb", "31"),
        "no AWS credentials",
        "aws configure",
        connect_to=connect,
    )


def test_no_region(monkeypatch) -> None:
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    fails(
        deploy_cli,
        ["status", "--name", "qwen-peagle"],
        "no AWS region",
        "--region",
        connect_to=connect,
    )


def test_autoscaling_options_need_each_other() -> None:
    fails(
        deploy_cli,
        deploy_argv("--model-gb", "31", "--autoscale"),
        "--autoscale needs --min-capacity",
    )
    fails(
        deploy_cli, deploy_argv("--model-gb", "31", "--max-capacity", "2"), "only with --autoscale"
    )
    fails(
        deploy_cli,
        deploy_argv(
            *"--model-gb 31 --autoscale --min-capacity 0 --max-capacity 2 --target-value 4".split()
        ),
        "only inference components scale to zero",
    )


def test_dry_run_without_a_size_asks_for_one() -> None:
    fails(deploy_cli, deploy_argv("--dry-run"), "--dry-run makes no calls", "--model-gb")


def test_dry_run_prints_readable_json_and_needs_no_credentials(monkeypatch) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    code, out, err = run_cli(
        deploy_cli,
        deploy_argv(
            *DRY,
            "--k",
            "5",
            "--inference-component",
            "--autoscale",
            "--min-capacity",
            "1",
            "--max-capacity",
            "2",
            "--target-value",
            "4",
        ),  # fmt: skip
        connect_to=connect,
    )
    assert code == 0, err
    requests = parse_json_stream(out)
    assert [(r["service"], r["operation"]) for r in requests] == [
        ("sagemaker", "CreateModel"),
        ("sagemaker", "CreateEndpointConfig"),
        ("sagemaker", "CreateEndpoint"),
        ("sagemaker", "CreateInferenceComponent"),
        ("application-autoscaling", "RegisterScalableTarget"),
        ("application-autoscaling", "PutScalingPolicy"),
    ]
    model = requests[0]["parameters"]
    assert model["ExecutionRoleArn"] == ROLE
    speculation = json.loads(model["PrimaryContainer"]["Environment"]["SM_VLLM_SPECULATIVE_CONFIG"])
    assert speculation == {
        "model": "/opt/ml/additional-model-data-sources/eagle",
        "method": "eagle3",
        "num_speculative_tokens": 5,
        "parallel_drafting": True,
    }
    assert out.startswith("{\n  ")  # indented for a person, not one long line
    assert "dry run: nothing sent" in err


def test_delete_dry_run() -> None:
    code, out, err = run_cli(deploy_cli, ["delete", "--name", "qwen-peagle", "--dry-run"])
    assert code == 0, err
    operations = [r["operation"] for r in parse_json_stream(out)]
    assert operations[:6] == [
        "DescribeEndpoint",
        "ListInferenceComponents",
        "DescribeScalableTargets",
        "ListEndpointConfigs",
        "ListModels",
        "DescribeAlarms",
    ]
    assert operations[6:] == [
        "DeregisterScalableTarget",
        "DeregisterScalableTarget",
        "DeleteInferenceComponent",
        "DeleteEndpoint",
    ]


def test_help_exits_zero(capsys) -> None:
    code, _, _ = run_cli(deploy_cli, ["deploy", "--help"])
    assert code == 0
    assert "--inference-component" in capsys.readouterr().out


def test_imports_nothing_heavy() -> None:
    import subprocess
    import sys

    code = (
        "import sys, deploy.__main__, deploy.upload;"
        "heavy = {'torch', 'vllm', 'transformers'} & set(sys.modules); assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


SCHEDULE = [[1, 4, 7], [5, 22, 3], [23, 1024, 0]]


def test_speculative_config_from_crossover_deploys_k_by_batch_size(tmp_path, monkeypatch) -> None:
    """The file `bench crossover` writes goes into the model's SM_VLLM_SPECULATIVE_CONFIG."""
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    crossover = tmp_path / "speculative-config.json"
    crossover.write_text(
        json.dumps(
            {
                "method": "eagle3",
                "num_speculative_tokens": 7,
                "parallel_drafting": True,
                "num_speculative_tokens_per_batch_size": SCHEDULE,
            }
        )  # fmt: skip
    )
    code, out, err = run_cli(
        deploy_cli, deploy_argv(*DRY, "--speculative-config", str(crossover)), connect_to=connect
    )
    assert code == 0, err
    model = parse_json_stream(out)[0]["parameters"]
    speculation = json.loads(model["PrimaryContainer"]["Environment"]["SM_VLLM_SPECULATIVE_CONFIG"])
    assert speculation["num_speculative_tokens"] == 7
    assert speculation["num_speculative_tokens_per_batch_size"] == SCHEDULE
    assert speculation["model"] == "/opt/ml/additional-model-data-sources/eagle"


def test_speculative_config_problems_are_named(tmp_path) -> None:
    missing = tmp_path / "nowhere.json"
    fails(deploy_cli, deploy_argv(*DRY, "--speculative-config", str(missing)), "cannot read")
    no_speculation = tmp_path / "none.json"
    no_speculation.write_text("null\n")
    fails(
        deploy_cli,
        deploy_argv(*DRY, "--speculative-config", str(no_speculation)),
        "no num_speculative_tokens",
    )
    both = tmp_path / "k.json"
    both.write_text(json.dumps({"num_speculative_tokens": 3}))
    fails(
        deploy_cli,
        deploy_argv(*DRY, "--k", "3", "--speculative-config", str(both)),
        "--k and --speculative-config",
    )


def test_a_schedule_the_head_cannot_serve_is_refused_before_any_call(tmp_path) -> None:
    """deploy's preflight of --target-dir and --head-dir checks the schedule as the
    container would (serving/preflight/batch_schedule.py)."""
    target, head = fake_pair(tmp_path)
    crossover = tmp_path / "speculative-config.json"
    crossover.write_text(
        json.dumps(
            {"num_speculative_tokens": 7, "num_speculative_tokens_per_batch_size": [[2, 1024, 7]]}
        )  # fmt: skip
    )
    fails(
        deploy_cli,
        deploy_argv(
            "--dry-run",
            "--target-dir",
            str(target),
            "--head-dir",
            str(head),
            "--speculative-config",
            str(crossover),
        ),  # fmt: skip
        "entry 0 [2, 1024, 7]",
        "start at batch size 1",
    )
