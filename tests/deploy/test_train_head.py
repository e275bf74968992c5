"""train-head against botocore's model: the CreateTrainingJob request exactly (Stubber), its
wait with the job's metrics, a failure's reason, local folders uploaded to S3 (moto) first,
and the options' mistakes found before any call."""

from __future__ import annotations

import json

import pytest

from deploy.clients import Connection
from deploy.training_job import METRIC_DEFINITIONS
from tests.support.cli import fails, run_cli
from tests.support.deploy import (
    ACCOUNT_ARN,
    REGION,
    ROLE,
    WHEN,
    Stubbed,
    client,
    deploy_cli,
    parse_json_stream,
)

IMAGE = "123456789012.dkr.ecr.us-west-2.amazonaws.com/sagemaker-vllm-peagle:training"
JOB = "qwen-head-20250601120000"


def argv(*extra: str) -> list[str]:
    return [
        "train-head", "--name", "qwen-head", "--image", IMAGE, "--role", ROLE,
        "--target-uri", "s3://my-bucket/qwen/model/",
        "--train-uri", "s3://my-bucket/qwen/train/",
        "--output-uri", "s3://my-bucket/qwen/training/",
        *extra,
    ]  # fmt: skip


def source(name: str, uri: str) -> dict:
    return {
        "ChannelName": name,
        "DataSource": {
            "S3DataSource": {
                "S3DataType": "S3Prefix",
                "S3Uri": uri,
                "S3DataDistributionType": "FullyReplicated",
            }
        },
        "InputMode": "File",
    }


def expected_job(**changes) -> dict:
    job = {
        "TrainingJobName": JOB,
        "AlgorithmSpecification": {
            "TrainingImage": IMAGE,
            "TrainingInputMode": "File",
            "MetricDefinitions": METRIC_DEFINITIONS,
        },
        "RoleArn": ROLE,
        "InputDataConfig": [
            source("target", "s3://my-bucket/qwen/model/"),
            source("train", "s3://my-bucket/qwen/train/"),
        ],
        "OutputDataConfig": {
            "S3OutputPath": "s3://my-bucket/qwen/training/",
            "CompressionType": "NONE",
        },
        "ResourceConfig": {
            "InstanceType": "ml.g6e.12xlarge",
            "InstanceCount": 1,
            "VolumeSizeInGB": 200,
        },
        "HyperParameters": {"num_speculative_tokens": "11", "epochs": "8"},
        "StoppingCondition": {"MaxRuntimeInSeconds": 86400},
    }
    job.update(changes)
    return job


def described(status: str, secondary: str, **extra) -> dict:
    return {
        "TrainingJobName": JOB,
        "TrainingJobArn": f"{ACCOUNT_ARN}:training-job/{JOB}",
        "TrainingJobStatus": status,
        "SecondaryStatus": secondary,
        "AlgorithmSpecification": {"TrainingImage": IMAGE, "TrainingInputMode": "File"},
        "ResourceConfig": {
            "InstanceType": "ml.g6e.12xlarge",
            "InstanceCount": 1,
            "VolumeSizeInGB": 200,
        },
        "StoppingCondition": {"MaxRuntimeInSeconds": 86400},
        "CreationTime": WHEN,
        "ModelArtifacts": {"S3ModelArtifacts": ""},
        **extra,
    }


def test_the_job_is_created_waited_on_and_names_the_head_for_deploy(fixed_version) -> None:
    stubbed = Stubbed()
    sagemaker = stubbed.sagemaker
    sagemaker.add_response(
        "create_training_job",
        {"TrainingJobArn": f"{ACCOUNT_ARN}:training-job/{JOB}"},
        expected_job(),
    )
    head = f"s3://my-bucket/qwen/training/{JOB}/output/model/"
    loss = [{"MetricName": "validation:loss", "Value": 1.25, "Timestamp": WHEN}]
    for answer in (
        described("InProgress", "Starting"),
        described("InProgress", "Training"),
        described("InProgress", "Training", FinalMetricDataList=loss),
        described("Completed", "Completed", FinalMetricDataList=loss,
                  ModelArtifacts={"S3ModelArtifacts": head}),
    ):  # fmt: skip
        sagemaker.add_response("describe_training_job", answer, {"TrainingJobName": JOB})

    code, out, err = run_cli(
        deploy_cli, argv("--k", "11", "--epochs", "8"), connect_to=stubbed.connect
    )

    assert code == 0, err
    stubbed.assert_done()
    assert f"{JOB}: InProgress (Starting)" in out
    assert f"{JOB}: InProgress (Training); validation:loss 1.25" in out
    assert f"--head-uri {head}" in out


def test_a_failed_job_exits_1_with_sagemakers_reason(fixed_version) -> None:
    stubbed = Stubbed()
    stubbed.sagemaker.add_response("create_training_job", {"TrainingJobArn": "x" * 20})
    reason = "AlgorithmError: the target channel (/opt/ml/input/data/target) has no config.json"
    stubbed.sagemaker.add_response(
        "describe_training_job", described("Failed", "Failed", FailureReason=reason)
    )

    code, _, err = run_cli(deploy_cli, argv(), connect_to=stubbed.connect)

    assert code == 1
    assert reason in err and "/aws/sagemaker/TrainingJobs" in err


def test_spot_keeps_checkpoints_in_s3_and_may_wait_for_capacity(fixed_version) -> None:
    code, out, err = run_cli(deploy_cli, argv("--spot", "--max-hours", "2", "--dry-run"))

    assert code == 0, err
    (request,) = parse_json_stream(out)
    job = request["parameters"]
    assert job["EnableManagedSpotTraining"] is True
    assert job["StoppingCondition"] == {"MaxRuntimeInSeconds": 7200, "MaxWaitTimeInSeconds": 14400}
    assert job["CheckpointConfig"] == {
        "S3Uri": f"s3://my-bucket/qwen/training/{JOB}/checkpoints/",
        "LocalPath": "/opt/ml/checkpoints",
    }
    assert f"s3://my-bucket/qwen/training/{JOB}/output/model/ (deploy's --head-uri)" in err


def test_a_start_head_and_its_replay_set_are_channels_of_their_own(fixed_version) -> None:
    options = argv(
        "--head-uri", "s3://my-bucket/qwen/eagle/", "--replay-uri", "s3://my-bucket/qwen/replay/",
        "--hyperparameter", "keep_start_head=0.4", "--dry-run",
    )  # fmt: skip

    code, out, err = run_cli(deploy_cli, options)

    assert code == 0, err
    (request,) = parse_json_stream(out)
    assert request["parameters"]["InputDataConfig"] == [
        source("target", "s3://my-bucket/qwen/model/"),
        source("train", "s3://my-bucket/qwen/train/"),
        source("eagle", "s3://my-bucket/qwen/eagle/"),
        source("replay", "s3://my-bucket/qwen/replay/"),
    ]
    assert request["parameters"]["HyperParameters"] == {"keep_start_head": "0.4"}


def test_local_folders_are_uploaded_first(fixed_version, s3_url, tmp_path) -> None:
    s3 = client("s3", endpoint_url=s3_url)
    s3.create_bucket(Bucket="work", CreateBucketConfiguration={"LocationConstraint": REGION})
    train, replay = tmp_path / "export", tmp_path / "earlier"
    chat = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}
    for folder in (train, replay):
        folder.mkdir()
        (folder / "train.openai.jsonl").write_text(json.dumps(chat) + "\n")
    stubbed = Stubbed(services=("sagemaker",))
    stubbed.connection = Connection(
        session=None, region=REGION, made={"sagemaker": client_of(stubbed), "s3": s3}
    )
    stubbed.sagemaker.add_response(
        "create_training_job",
        {"TrainingJobArn": "x" * 20},
        expected_job(
            InputDataConfig=[
                source("target", "s3://my-bucket/qwen/model/"),
                source("train", "s3://work/qwen/train/"),
                source("replay", "s3://work/qwen/replay/"),
            ],
            OutputDataConfig={
                "S3OutputPath": "s3://work/qwen/training/",
                "CompressionType": "NONE",
            },
            HyperParameters={},
        ),
    )
    stubbed.sagemaker.add_response("describe_training_job", described("Completed", "Completed"))
    options = [
        "train-head", "--name", "qwen-head", "--image", IMAGE, "--role", ROLE,
        "--target-uri", "s3://my-bucket/qwen/model/", "--train-dir", str(train),
        "--replay-dir", str(replay), "--s3-uri", "s3://work/qwen/",
    ]  # fmt: skip

    code, out, err = run_cli(deploy_cli, options, connect_to=stubbed.connect)

    assert code == 0, err
    stubbed.assert_done()
    for folder in ("train", "replay"):
        assert f"s3://work/qwen/{folder}/: 1 uploaded, 0 unchanged" in out
        stored = s3.get_object(Bucket="work", Key=f"qwen/{folder}/train.openai.jsonl")
        assert json.loads(stored["Body"].read()) == chat


def client_of(stubbed: Stubbed):
    return stubbed.connection.made["sagemaker"]


@pytest.mark.parametrize(
    ("extra", "fragments"),
    [
        (("--hyperparameter", "epoch=3"), ("epoch", "which the trainer does not know")),
        (("--k", "0"), ("num_speculative_tokens='0' is outside 1..32",)),
        (("--instance-type", "ml.g6e.12xlarg"), ("is not a training type", "ml.g6e.12xlarge")),
        (("--train-dir", "/nowhere"), ("give --train-uri or --train-dir, not both",)),
        (("--max-hours", "0"), ("--max-hours 0 is outside",)),
    ],
)
def test_mistakes_are_found_before_any_call(extra, fragments) -> None:
    fails(deploy_cli, argv(*extra), *fragments)


def test_a_local_folder_needs_a_prefix_to_go_to() -> None:
    options = [
        "train-head", "--name", "qwen-head", "--image", IMAGE, "--role", ROLE,
        "--target-uri", "s3://my-bucket/qwen/model/", "--train-dir", "/tmp",
        "--output-uri", "s3://my-bucket/qwen/training/",
    ]  # fmt: skip
    fails(deploy_cli, options, "--train-dir needs --s3-uri")
