"""Every deploy test runs with dummy AWS credentials and no profile, so nothing reaches AWS."""

from __future__ import annotations

import pytest
from moto.server import ThreadedMotoServer

from deploy import names
from tests.support.deploy import VERSION


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
