"""boto3 sessions and clients, and the two things every real call needs: credentials and a
region, checked before the first call so their absence is a sentence rather than a
traceback from deep inside botocore."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import ProfileNotFound

from deploy.failures import UsageError

RETRIES = Config(retries={"mode": "standard", "max_attempts": 5})


@dataclass
class Connection:
    """The region, and one client per service, made on first use."""

    session: Any
    region: str
    endpoint_url: str | None = None
    config: Config = RETRIES
    made: dict[str, Any] = field(default_factory=dict)

    def client(self, service: str) -> Any:
        if service not in self.made:
            self.made[service] = self.session.client(
                service, region_name=self.region, endpoint_url=self.endpoint_url, config=self.config
            )
        return self.made[service]


# connect, or a stand-in for it (tests): (profile, region, endpoint URL) in, a Connection out.
Connect = Callable[[str | None, str | None, str | None], Connection]


def connect(profile: str | None, region: str | None, endpoint_url: str | None) -> Connection:
    """A Connection, or UsageError naming what is missing and how to give it."""
    try:
        session = boto3.Session(profile_name=profile, region_name=region)
    except ProfileNotFound:
        raise UsageError(
            f"--profile {profile!r} is not in your AWS config; use one of "
            f"{', '.join(boto3.Session().available_profiles) or 'none configured'}, or leave "
            "it out to use the default credentials."
        ) from None
    problems = []
    if session.region_name is None:
        problems.append(
            "no AWS region: pass --region (e.g. --region us-west-2), set AWS_REGION, or set "
            "region in your AWS profile."
        )
    if session.get_credentials() is None:
        problems.append(
            "no AWS credentials found; run `aws configure` or `aws sso login`, set "
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or pass --profile. (--dry-run needs "
            "none.)"
        )
    if problems:
        raise UsageError(problems)
    return Connection(session, session.region_name, endpoint_url)
