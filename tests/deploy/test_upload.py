"""Upload against moto's S3 server: files land under the prefix, unchanged files are skipped,
changed ones re-sent, large ones go up in parts."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from boto3.s3.transfer import TransferConfig

from deploy.clients import connect
from deploy.s3 import S3Prefix
from deploy.upload import upload_pair
from tests.support.cli import run_cli
from tests.support.deploy import deploy_cli

MiB = 2**20
BASE = S3Prefix("models", "qwen/")
SMALL_PARTS = TransferConfig(multipart_threshold=5 * MiB, multipart_chunksize=5 * MiB)


@pytest.fixture()
def s3(models_bucket):
    return models_bucket


def make_dirs(root: Path) -> tuple[Path, Path]:
    target, head = root / "target", root / "head"
    (target / "nested").mkdir(parents=True)
    head.mkdir()
    (target / "config.json").write_text('{"hidden_size": 128}')
    (target / "nested" / "tokenizer.json").write_text("{}")
    (target / ".cache").mkdir()
    (target / ".cache" / "download.lock").write_text("")
    (head / "config.json").write_text('{"ptd_token_id": 4}')
    (head / "model.safetensors").write_bytes(b"\1" * (11 * MiB))  # three 5 MiB parts
    return target, head


def upload(s3, target: Path, head: Path):
    out, err = io.StringIO(), io.StringIO()
    outcomes = upload_pair(s3, target, head, BASE, out, err, SMALL_PARTS)
    return outcomes, out.getvalue(), err.getvalue()


def test_upload_skip_and_reupload(s3, tmp_path) -> None:
    target, head = make_dirs(tmp_path)

    first, out, _ = upload(s3, target, head)

    keys = sorted(item["Key"] for item in s3.list_objects_v2(Bucket="models")["Contents"])
    assert keys == [
        "qwen/eagle/config.json",
        "qwen/eagle/model.safetensors",
        "qwen/model/config.json",
        "qwen/model/nested/tokenizer.json",
    ]
    assert len(first["model"].uploaded) == 2 and len(first["eagle"].uploaded) == 2
    assert "--target-uri s3://models/qwen/model/ --head-uri s3://models/qwen/eagle/" in out
    big = s3.head_object(Bucket="models", Key="qwen/eagle/model.safetensors")
    assert big["ContentLength"] == 11 * MiB
    assert big["ETag"].strip('"').endswith("-3")  # sent as a three-part multipart upload

    second, out, _ = upload(s3, target, head)

    assert second["model"].uploaded == [] and second["eagle"].uploaded == []
    assert len(second["model"].skipped) == 2 and len(second["eagle"].skipped) == 2
    assert "0 uploaded, 2 unchanged" in out

    (head / "config.json").write_text('{"ptd_token_id": 5}')  # same size, new content
    third, _, _ = upload(s3, target, head)

    assert third["eagle"].uploaded == ["qwen/eagle/config.json"]
    assert third["eagle"].skipped == ["qwen/eagle/model.safetensors"]
    body = s3.get_object(Bucket="models", Key="qwen/eagle/config.json")["Body"].read()
    assert body == b'{"ptd_token_id": 5}'


def test_objects_with_no_local_file_are_warned_about(s3, tmp_path) -> None:
    target, head = make_dirs(tmp_path)
    s3.put_object(Bucket="models", Key="qwen/model/model-00001-of-00009.safetensors", Body=b"old")

    outcomes, _, err = upload(s3, target, head)

    assert outcomes["model"].extra == ["qwen/model/model-00001-of-00009.safetensors"]
    assert "SageMaker mounts them too" in err


def test_upload_command_line(s3, s3_url, tmp_path) -> None:
    target, head = make_dirs(tmp_path)
    code, out, err = run_cli(
        deploy_cli,
        [
            "upload",
            "--target-dir",
            str(target),
            "--head-dir",
            str(head),
            "--s3-uri",
            "s3://models/qwen/",
            "--endpoint-url",
            s3_url,
            "--region",
            "us-west-2",
        ],  # fmt: skip
        connect_to=connect,
    )
    assert code == 0, err
    assert "s3://models/qwen/model/: 2 uploaded, 0 unchanged" in out
