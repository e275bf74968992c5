"""Where requests go: a URL (the container's /invocations, its /v1 API, or bare vLLM), or a
SageMaker endpoint through boto3."""

from __future__ import annotations

import asyncio
import json
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

import httpx

from bench.client import RequestResult, StreamTimer, json_result, send

# Generation can take minutes under heavy load on a CPU; a request that takes longer is hung.
READ_TIMEOUT_SECONDS = 600.0


class Target(Protocol):
    name: str
    metrics_url: str | None  # Prometheus text with vLLM's spec-decode counters, if reachable

    async def send(self, payload: dict[str, Any]) -> RequestResult: ...

    async def aclose(self) -> None: ...


def split_url(url: str) -> tuple[str, str]:
    """`http://h:p`, `http://h:p/invocations` or `http://h:p/v1` -> (base, path prefix)."""
    url = url.rstrip("/")
    for suffix in ("/invocations", "/v1"):
        if url.endswith(suffix):
            return url[: -len(suffix)], suffix
    return url, "/invocations"


class UrlTarget:
    """HTTP: `/invocations` takes both payload kinds; under `/v1` the payload picks the route."""

    def __init__(
        self,
        url: str,
        max_connections: int = 256,
        read_timeout: float = READ_TIMEOUT_SECONDS,
        headers: dict[str, str] | None = None,
    ):
        self.base_url, self.prefix = split_url(url)
        self.name = f"{self.base_url}{self.prefix}"
        self.metrics_url = f"{self.base_url}/metrics"
        self.headers = headers
        self.http = httpx.AsyncClient(
            timeout=httpx.Timeout(connect=10.0, read=read_timeout, write=30.0, pool=None),
            limits=httpx.Limits(
                max_connections=max_connections, max_keepalive_connections=max_connections
            ),
        )

    def path_for(self, payload: dict[str, Any]) -> str:
        if self.prefix == "/v1":
            return "/v1/chat/completions" if "messages" in payload else "/v1/completions"
        return self.prefix

    async def send(self, payload: dict[str, Any]) -> RequestResult:
        return await send(self.http, self.base_url + self.path_for(payload), payload, self.headers)

    async def aclose(self) -> None:
        await self.http.aclose()


class SageMakerTarget:
    """A SageMaker endpoint. boto3 blocks, so each request runs in a worker thread, timing
    the stream's PayloadParts as they come off the wire."""

    metrics_url = None  # SageMaker does not expose the container's /metrics

    def __init__(
        self,
        endpoint_name: str,
        region: str | None = None,
        max_connections: int = 256,
        endpoint_url: str | None = None,
    ):
        import boto3
        from botocore.config import Config

        self.name = f"sagemaker:{endpoint_name}"
        self.endpoint_name = endpoint_name
        self.runtime = boto3.client(
            "sagemaker-runtime",
            region_name=region,
            endpoint_url=endpoint_url,
            config=Config(
                max_pool_connections=max_connections,
                read_timeout=int(READ_TIMEOUT_SECONDS),
                retries={"max_attempts": 0},
            ),
        )
        self.pool = ThreadPoolExecutor(max_workers=max_connections)

    async def send(self, payload: dict[str, Any]) -> RequestResult:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.pool, self._send_blocking, payload)

    def _send_blocking(self, payload: dict[str, Any]) -> RequestResult:
        from botocore.exceptions import BotoCoreError, ClientError

        body = json.dumps(payload).encode()
        started = time.perf_counter()
        try:
            if payload.get("stream"):
                response = self.runtime.invoke_endpoint_with_response_stream(
                    EndpointName=self.endpoint_name, Body=body, ContentType="application/json"
                )
                timer = StreamTimer(started)
                for event in response["Body"]:
                    if "PayloadPart" in event:
                        timer.feed(event["PayloadPart"]["Bytes"], time.perf_counter())
                    elif event:
                        timer.result.error = json.dumps(event, default=str)[:500]
                return timer.finish(time.perf_counter())
            response = self.runtime.invoke_endpoint(
                EndpointName=self.endpoint_name, Body=body, ContentType="application/json"
            )
            return json_result(200, response["Body"].read(), started, time.perf_counter())
        except ClientError as error:
            status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
            return RequestResult(
                status=status, error=str(error), latency=time.perf_counter() - started
            )
        except BotoCoreError as error:
            return RequestResult(error=str(error), latency=time.perf_counter() - started)

    async def aclose(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)


def make_target(
    url: str | None,
    endpoint_name: str | None,
    region: str | None,
    max_connections: int,
    endpoint_url: str | None = None,
) -> Target:
    if endpoint_name:
        return SageMakerTarget(endpoint_name, region, max_connections, endpoint_url)
    if not url:
        raise SystemExit("give a target: --url http://HOST:PORT or --endpoint-name NAME.")
    return UrlTarget(url, max_connections)
