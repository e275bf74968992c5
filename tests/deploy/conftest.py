"""Every deploy test runs with dummy AWS credentials and no profile, so nothing reaches AWS."""

from __future__ import annotations

import pytest

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
