"""SageMaker's bearer tokens, checked as the service checks them, for the OpenAI path.

A token is `sagemaker-api-key-` and the base64 of a SigV4-presigned URL for the action
`CallWithBearerToken` on sagemaker.amazonaws.com, `&Version=1` appended: what the SageMaker
Python SDK v3's `sagemaker.core.token_generator.generate_token` makes from the caller's AWS
credentials, valid for its `X-Amz-Expires` seconds (at most 12 hours). The service verifies
the signature with the caller's secret; here the runtime knows the secrets of the access keys
it was given (its own AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or the suite's `local`
pair) and re-signs the same request with botocore's own SigV4 query signer.

The service's exact answers to a bad token are not published (read on 2026-12-03: AWS's
OpenAI-compatible endpoint guide, the SDK v3, gateways that call it); these are OpenAI's
shapes, so OpenAI clients raise their own errors: 401 (`AuthenticationError`) for a missing,
malformed or expired token, 403 (`PermissionDeniedError`) for one whose key or signature the
runtime does not accept.
"""

from __future__ import annotations

import base64
import binascii
import calendar
import hmac
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

from botocore.auth import SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

PREFIX = "sagemaker-api-key-"
HOST = "sagemaker.amazonaws.com"
ACTION = "CallWithBearerToken"
SERVICE = "sagemaker"
VERSION_SUFFIX = "&Version=1"
LONGEST_SECONDS = 12 * 3600
# The suite's clients sign with these (tests/support/client_envs.py LOCAL_CREDENTIALS).
LOCAL_KEYS = {"local": "local"}


@dataclass(frozen=True)
class Refused:
    status: int
    code: str
    message: str


def missing() -> Refused:
    return Refused(
        401,
        "invalid_api_key",
        "No bearer token: send 'Authorization: Bearer sagemaker-api-key-...', made by the "
        "SageMaker Python SDK's sagemaker.core.token_generator.generate_token().",
    )


def malformed(why: str) -> Refused:
    return Refused(401, "invalid_api_key", f"The bearer token is malformed: {why}.")


@dataclass(frozen=True)
class Token:
    """A decoded token's parts: the presigned URL's query."""

    access_key: str
    date: str
    region: str
    amz_date: str
    expires: int
    signature: str
    session_token: str | None

    @classmethod
    def parse(cls, token: str) -> Token | Refused:
        if not token.startswith(PREFIX):
            return malformed(f"it does not start with {PREFIX!r}")
        try:
            url = base64.b64decode(token[len(PREFIX) :], validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return malformed("what follows the prefix is not base64 of a URL")
        if not url.endswith(VERSION_SUFFIX):
            return malformed("it is not a version 1 token")
        parts = urlsplit("https://" + url.removesuffix(VERSION_SUFFIX))
        query = {key: values[0] for key, values in parse_qs(parts.query).items()}
        if parts.netloc != HOST or query.get("Action") != ACTION:
            return malformed(f"it does not sign {ACTION} on {HOST}")
        credential = query.get("X-Amz-Credential", "").split("/")
        try:
            expires = int(query["X-Amz-Expires"])
            amz_date, signature = query["X-Amz-Date"], query["X-Amz-Signature"]
        except (KeyError, ValueError):
            return malformed("its signature's date, lifetime or value is missing")
        if len(credential) != 5 or credential[3] != SERVICE or credential[4] != "aws4_request":
            return malformed("its credential scope is not SageMaker's")
        return cls(
            credential[0], credential[1], credential[2], amz_date, expires, signature,
            query.get("X-Amz-Security-Token"),
        )  # fmt: skip

    def signed_at(self) -> float | None:
        try:
            return calendar.timegm(time.strptime(self.amz_date, "%Y%m%dT%H%M%SZ"))
        except ValueError:
            return None

    def expected_signature(self, secret: str) -> str:
        """The signature botocore's SigV4 query signer gives this request with `secret`."""
        request = AWSRequest(
            method="POST", url=f"https://{HOST}/", headers={"host": HOST},
            params={"Action": ACTION},
        )  # fmt: skip
        credentials = Credentials(self.access_key, secret, self.session_token)
        auth = SigV4QueryAuth(credentials, SERVICE, self.region, expires=self.expires)
        request.context["timestamp"] = self.amz_date
        auth._modify_request_before_signing(request)
        canonical = auth.canonical_request(request)
        return auth.signature(auth.string_to_sign(request, canonical), request)


class BearerTokens:
    """The runtime's check of the Authorization header: None when the call may go on."""

    def __init__(self, keys: Mapping[str, str], now: Callable[[], float] = time.time):
        self.keys = dict(keys)
        self.now = now

    def check(self, authorization: str | None) -> Refused | None:
        scheme, _, token = (authorization or "").strip().partition(" ")
        if not authorization:
            return missing()
        if scheme.lower() != "bearer" or not token.strip():
            return malformed("the Authorization header is not 'Bearer <token>'")
        parsed = Token.parse(token.strip())
        if isinstance(parsed, Refused):
            return parsed
        signed_at = parsed.signed_at()
        if signed_at is None or not 0 < parsed.expires <= LONGEST_SECONDS:
            return malformed("its date or lifetime (1 s to 12 h) is out of range")
        if self.now() > signed_at + parsed.expires:
            ended = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(signed_at + parsed.expires))
            return Refused(
                401, "expired_api_key", f"The bearer token expired at {ended}; make a new one."
            )
        secret = self.keys.get(parsed.access_key)
        if secret is None or not hmac.compare_digest(
            parsed.expected_signature(secret), parsed.signature
        ):
            return Refused(
                403,
                "invalid_api_key",
                "The bearer token's signature does not match: sign it with credentials "
                "this runtime knows.",
            )
        return None
