"""Asynchronous Inference, here: boto3's invoke_endpoint_async against the local runtime in
front of the real P-EAGLE container, the payload and answer in moto's S3; and `deploy invoke
--async` on the same path."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import httpx
import pytest
from moto.server import ThreadedMotoServer

from deploy.clients import Connection
from deploy.waiting import Clock
from local_runtime.async_inference import AsyncInvocations
from local_runtime.runtime_routes import Runtime, create_app
from tests.support.cli import run_cli
from tests.support.in_process import serving
from tests.support.local_runtime import local_client, runtime_client

CHAT = {
    "messages": [{"role": "user", "content": "def fibonacci(n):"}],
    "max_tokens": 16,
    "temperature": 0,
}
BUCKET = "async-demo"


@pytest.fixture(scope="module")
def s3() -> Iterator:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    client = local_client("s3", f"http://{host}:{port}")
    client.create_bucket(Bucket=BUCKET)
    yield client
    for item in client.list_objects_v2(Bucket=BUCKET).get("Contents", []):
        client.delete_object(Bucket=BUCKET, Key=item["Key"])
    client.delete_bucket(Bucket=BUCKET)
    server.stop()


@pytest.fixture(scope="module")
def runtime_url(peagle, s3) -> Iterator[str]:
    runtime = Runtime(peagle.url)
    invocations = AsyncInvocations(runtime, s3, f"s3://{BUCKET}/answers/")
    with serving(create_app(runtime, invocations)) as url:
        yield url


def wait_for(s3, uri: str, seconds: float = 120) -> bytes | None:
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            return s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        except s3.exceptions.NoSuchKey:
            time.sleep(0.2)
    return None


def test_an_async_request_lands_in_s3_as_the_same_answer(peagle, s3, runtime_url):
    expected = httpx.post(f"{peagle.url}/invocations", json=CHAT, timeout=120).json()
    s3.put_object(Bucket=BUCKET, Key="in/one.json", Body=json.dumps(CHAT).encode())
    answer = runtime_client(runtime_url).invoke_endpoint_async(
        EndpointName="demo",
        ContentType="application/json",
        InputLocation=f"s3://{BUCKET}/in/one.json",
        InferenceId="order-1",
    )
    assert answer["ResponseMetadata"]["HTTPStatusCode"] == 202
    assert answer["OutputLocation"] == f"s3://{BUCKET}/answers/order-1.out"
    body = wait_for(s3, answer["OutputLocation"])
    assert body is not None, "no answer in S3"
    got = json.loads(body)
    assert got["choices"][0]["message"] == expected["choices"][0]["message"]
    assert "speculative_decoding" in got["metrics"]  # the request's own acceptance


def test_a_bad_payload_lands_at_the_failure_location(s3, runtime_url):
    s3.put_object(Bucket=BUCKET, Key="in/bad.json", Body=b"this is not json")
    answer = runtime_client(runtime_url).invoke_endpoint_async(
        EndpointName="demo",
        ContentType="application/json",
        InputLocation=f"s3://{BUCKET}/in/bad.json",
    )
    body = wait_for(s3, answer["FailureLocation"])
    assert body is not None
    assert json.loads(body)["error"]["code"] == 400
    assert wait_for(s3, answer["OutputLocation"], seconds=1) is None


def test_deploy_invoke_async_uploads_waits_and_prints_the_answer(peagle, s3, runtime_url, tmp_path):
    from deploy.__main__ import run

    expected = httpx.post(f"{peagle.url}/invocations", json=CHAT, timeout=120).json()
    payload = tmp_path / "chat.json"
    payload.write_text(json.dumps(CHAT))
    connection = Connection(
        session=None,
        region="us-east-1",
        made={"s3": s3, "sagemaker-runtime": runtime_client(runtime_url)},
    )
    code, out, err = run_cli(
        run,
        ["invoke", "--name", "demo", "--payload", str(payload), "--async",
         "--input-uri", f"s3://{BUCKET}/requests/", "--wait-seconds", "120",
         "--poll-seconds", "0.2"],
        connect_to=lambda profile, region, url: connection,
        clock=Clock(poll_seconds=0.2),
    )  # fmt: skip
    assert code == 0, err
    assert f"s3://{BUCKET}/requests/" in out
    assert out.rstrip().endswith(expected["choices"][0]["message"]["content"].rstrip())
