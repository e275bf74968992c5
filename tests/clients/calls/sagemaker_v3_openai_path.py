"""The SageMaker Python SDK v3's bearer tokens (`sagemaker.core.token_generator`) on the local
runtime's OpenAI-compatible path, called as AWS's guide calls it (plain HTTPS requests with
`Authorization: Bearer ...`): the endpoint and inference-component forms, whole and streamed,
and what a missing, malformed, expired or wrongly signed token gets. Case `token` reports a
fresh token, for the OpenAI SDK's own run (tests/clients/calls/openai_path_calls.py)."""

from __future__ import annotations

import time
from datetime import timedelta

import requests
from botocore.credentials import Credentials
from common import ENDPOINT, MAX_TOKENS, MESSAGES, RUNTIME_URL, chat_stream_text, report
from sagemaker.core.token_generator import generate_token

BASE = f"{RUNTIME_URL}/endpoints/{ENDPOINT}"
CHAT = {"model": "", "messages": MESSAGES, "max_tokens": MAX_TOKENS, "temperature": 0}


class OtherSecret:
    """Credentials of the runtime's access key with a secret it does not know."""

    def load(self) -> Credentials:
        return Credentials("local", "not-the-secret")


def post(path: str, token: str | None, stream: bool = False) -> requests.Response:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    body = {**CHAT, "stream": stream}
    return requests.post(f"{BASE}{path}", json=body, headers=headers, timeout=120)


def text(path: str, stream: bool = False) -> str:
    answer = post(path, generate_token(region="us-east-1"), stream)
    answer.raise_for_status()
    if stream:
        return chat_stream_text(answer.content)
    return answer.json()["choices"][0]["message"]["content"]


def refused(token: str | None) -> str:
    answer = post("/openai/v1/chat/completions", token)
    return f"{answer.status_code} {answer.json()['error']['code']}"


def expired() -> str:
    token = generate_token(region="us-east-1", expiry=timedelta(seconds=1))
    time.sleep(2.5)
    return refused(token)


report(
    {
        "token": lambda: generate_token(region="us-east-1"),
        "chat": lambda: text("/openai/v1/chat/completions"),
        "chat stream": lambda: text("/openai/v1/chat/completions", stream=True),
        "inference component": lambda: text(
            "/inference-components/ic-1/openai/v1/chat/completions"
        ),
        "missing token": lambda: refused(None),
        "malformed token": lambda: refused("sagemaker-api-key-not-base64!"),
        "expired token": expired,
        "wrong secret": lambda: refused(
            generate_token(region="us-east-1", aws_credentials_provider=OtherSecret())
        ),
    }
)
