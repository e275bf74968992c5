"""The local runtime's check of SageMaker bearer tokens, without an engine. Tokens here are
signed as the SDK v3's generator signs them (botocore's SigV4 query signer on
CallWithBearerToken); the SDK's own tokens meet the runtime in
tests/clients/test_openai_path_clients.py."""

from __future__ import annotations

import base64

from botocore.auth import SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from local_runtime.bearer import BearerTokens, Token

KEYS = {"local": "local"}


def token(secret: str = "local", expires: int = 3600, action: str = "CallWithBearerToken") -> str:
    request = AWSRequest(
        method="POST", url="https://sagemaker.amazonaws.com/",
        headers={"host": "sagemaker.amazonaws.com"}, params={"Action": action},
    )  # fmt: skip
    SigV4QueryAuth(Credentials("local", secret), "sagemaker", "us-east-1", expires).add_auth(
        request
    )
    url = request.url.replace("https://", "") + "&Version=1"
    return "sagemaker-api-key-" + base64.b64encode(url.encode()).decode()


def bearer(value: str) -> str:
    return f"Bearer {value}"


def test_a_token_signed_with_a_known_key_is_accepted():
    assert BearerTokens(KEYS).check(bearer(token())) is None


def test_missing_and_malformed_tokens_are_401():
    tokens = BearerTokens(KEYS)
    for header in (
        None,
        "",
        "Basic abc",
        "Bearer ",
        bearer("sk-openai"),
        bearer("sagemaker-api-key-!!"),
    ):
        refused = tokens.check(header)
        assert (refused.status, refused.code) == (401, "invalid_api_key"), header
    assert "CallWithBearerToken" in tokens.check(bearer(token(action="Other"))).message


def test_an_expired_token_is_401_and_says_when_it_ended():
    signed = bearer(token(expires=60))
    at = Token.parse(signed.split()[1]).signed_at()
    assert BearerTokens(KEYS, now=lambda: at + 59).check(signed) is None
    refused = BearerTokens(KEYS, now=lambda: at + 61).check(signed)
    assert (refused.status, refused.code) == (401, "expired_api_key")
    assert "expired at" in refused.message


def test_a_wrong_secret_an_unknown_key_or_a_changed_signature_is_403():
    good = token()
    decoded = base64.b64decode(good[len("sagemaker-api-key-") :]).decode()
    changed = decoded.replace("X-Amz-Signature=", "X-Amz-Signature=0")
    tampered = "sagemaker-api-key-" + base64.b64encode(changed.encode()).decode()
    for value, keys in (
        (token(secret="other"), KEYS),
        (good, {"someone": "else"}),
        (tampered, KEYS),
    ):
        refused = BearerTokens(keys).check(bearer(value))
        assert (refused.status, refused.code) == (403, "invalid_api_key")
