"""`transform` and `upload --pack`: Batch Transform with the target and its head in one
tarball. The dry run needs no credentials; a real run goes to moto's SageMaker and S3."""

from __future__ import annotations

import json
import tarfile

import pytest

from deploy.clients import connect
from tests.support.cli import fails, run_cli
from tests.support.deploy import IMAGE, ROLE, client, deploy_cli, parse_json_stream

MODEL_URL = "s3://models/qwen/model.tar.gz"


def transform_argv(*extra: str) -> list[str]:
    return [
        "transform",
        "--name", "nightly-eval",
        "--image", IMAGE,
        "--role", ROLE,
        "--model-url", MODEL_URL,
        "--input-uri", "s3://models/records/",
        "--output-uri", "s3://models/answers/",
        *extra,
    ]  # fmt: skip


def test_dry_run_prints_the_model_and_the_job_and_needs_no_credentials(monkeypatch):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    code, out, err = run_cli(deploy_cli, transform_argv("--join-source", "input", "--dry-run"))
    assert code == 0, err
    model, job = parse_json_stream(out)
    container = model["parameters"]["PrimaryContainer"]
    # One tarball (Batch Transform takes no ModelDataSource), the head inside it.
    assert container["ModelDataUrl"] == MODEL_URL
    assert "ModelDataSource" not in container and "AdditionalModelDataSources" not in container
    spec = json.loads(container["Environment"]["SM_VLLM_SPECULATIVE_CONFIG"])
    assert spec["model"] == "/opt/ml/model/eagle" and spec["parallel_drafting"] is True
    params = job["parameters"]
    assert params["BatchStrategy"] == "MultiRecord"
    assert params["TransformInput"]["SplitType"] == "Line"
    assert params["TransformOutput"]["AssembleWith"] == "Line"
    assert params["ModelClientConfig"]["InvocationsTimeoutInSeconds"] == 3600
    assert params["DataProcessing"] == {"JoinSource": "Input"}
    assert "MaxConcurrentTransforms" not in params  # the container's /execution-parameters
    assert "nothing sent" in err


@pytest.mark.parametrize(
    ("change", "fragments"),
    [
        (("--model-url", "s3://models/qwen/"), ("--model-url", "upload --pack")),
        (("--instance-type", "ml.g7e.2xlarge"), ("--instance-type", "transform type")),
        (("--max-payload-mb", "101"), ("--max-payload-mb 101", "1 to 100")),
        (("--invocations-timeout", "7200"), ("InvocationsTimeoutInSeconds",)),
        (("--input-uri", "s3://models/records"), ("--input-uri", "end in a single /")),
    ],
)
def test_bad_options_are_sentences_before_any_call(change, fragments):
    argv = transform_argv("--dry-run")
    option, value = change
    if option in argv:
        argv[argv.index(option) + 1] = value
    else:
        argv += [option, value]
    fails(deploy_cli, argv, *fragments)


def test_pack_upload_then_transform_against_moto(s3_url, models_bucket, tmp_path):
    s3 = models_bucket
    target, head = tmp_path / "target", tmp_path / "head"
    (target / "eagle").mkdir(parents=True)
    head.mkdir()
    (target / "config.json").write_text('{"hidden_size": 128}')
    (target / "eagle" / "stale.json").write_text("{}")  # an old head inside: replaced
    (head / "config.json").write_text('{"ptd_token_id": 4}')
    (head / "model.safetensors").write_bytes(b"\1" * 1024)
    connect_here = lambda profile, region, url: connect(None, "us-west-2", s3_url)  # noqa: E731
    code, out, err = run_cli(
        deploy_cli,
        ["upload", "--pack", "--target-dir", str(target), "--head-dir", str(head),
         "--s3-uri", "s3://models/qwen/"],
        connect_to=connect_here,
    )  # fmt: skip
    assert code == 0, err
    assert f"--model-url {MODEL_URL}" in out
    tarball = tmp_path / "model.tar.gz"
    s3.download_file("models", "qwen/model.tar.gz", str(tarball))
    with tarfile.open(tarball) as archive:
        assert sorted(archive.getnames()) == [
            "config.json",
            "eagle/config.json",
            "eagle/model.safetensors",
        ]
    # What the service writes for an input file: FILE.out, one line per record.
    answers = [{"choices": [{"text": "x"}]}, {"error": {"code": 400, "message": "bad"}}]
    s3.put_object(
        Bucket="models",
        Key="answers/records.jsonl.out",
        Body="".join(json.dumps(answer) + "\n" for answer in answers).encode(),
    )
    code, out, err = run_cli(deploy_cli, transform_argv(), connect_to=connect_here)
    assert code == 0, err
    assert "CreateTransformJob nightly-eval-" in out
    assert "Completed" in out
    assert "1 files, 2 answer lines, 1 records answered with an error line" in out
    sagemaker = client("sagemaker", endpoint_url=s3_url)
    [job] = sagemaker.list_transform_jobs()["TransformJobSummaries"]
    described = sagemaker.describe_transform_job(TransformJobName=job["TransformJobName"])
    assert described["TransformInput"]["SplitType"] == "Line"
