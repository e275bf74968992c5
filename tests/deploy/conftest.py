"""Every deploy test runs with dummy AWS credentials and no profile, so nothing reaches AWS."""

from __future__ import annotations

import pytest
from moto.server import ThreadedMotoServer

from deploy import names
from tests.support.deploy import VERSION, client


@pytest.fixture(autouse=True)
def dummy_aws(monkeypatch, tmp_path):
    for variable in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-west-2")
    monkeypatch.delenv("AWS_REGION", raising=False)
    # No instance metadata lookups when a test removes the credentials.
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture()
def fixed_version(monkeypatch):
    monkeypatch.setattr(names, "version_now", lambda now=None: VERSION)
    return VERSION


@pytest.fixture(scope="module")
def s3_url():
    """moto's S3 (and any other service) on a loopback port, for a module's tests."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture()
def models_bucket(s3_url):
    """The bucket "models" in moto's S3, emptied and removed after the test: moto's state is
    one per process, shared by every module's server, so none may be left behind."""
    s3 = client("s3", endpoint_url=s3_url)
    s3.create_bucket(Bucket="models", CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
    yield s3
    for item in s3.list_objects_v2(Bucket="models").get("Contents", []):
        s3.delete_object(Bucket="models", Key=item["Key"])
    s3.delete_bucket(Bucket="models")
