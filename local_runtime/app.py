"""The runtime's two routes, InvokeEndpoint and InvokeEndpointWithResponseStream, relayed to
the container's /invocations as SageMaker relays them. Any endpoint name reaches the one
container."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from local_runtime import event_stream
from local_runtime.errors import (
    CONTAINER_NAME,
    LOCAL_ACCOUNT,
    TIMED_OUT,
    model_error,
    validation_error,
)
from local_runtime.headers import CUSTOM_ATTRIBUTES_MAX, to_client, to_container

log = logging.getLogger("local_runtime")
# SageMaker's limits: the request body, the time to answer, and the /ping timeout.
MAX_BODY_BYTES = 6 * 1024 * 1024
INVOKE_TIMEOUT_SECONDS = 60.0
PING_TIMEOUT_SECONDS = 2.0


class Runtime:
    """The container behind the runtime. Like an endpoint, it is in service from the first
    /ping 200 on; before that, invocations are refused as SageMaker refuses them."""

    def __init__(
        self,
        container_url: str,
        invoke_timeout: float = INVOKE_TIMEOUT_SECONDS,
        part_bytes: int | None = None,
    ):
        self.invoke_timeout = invoke_timeout
        # SageMaker does not align PayloadParts with the container's events; cutting parts
        # to this size shows whether a client copes (None: one part per container chunk).
        self.part_bytes = part_bytes
        self.http = httpx.AsyncClient(
            base_url=container_url,
            timeout=httpx.Timeout(invoke_timeout, connect=PING_TIMEOUT_SECONDS),
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=64),
        )
        self.in_service = False

    async def check_in_service(self) -> bool:
        if not self.in_service:
            try:
                ping = await self.http.get("/ping", timeout=PING_TIMEOUT_SECONDS)
                self.in_service = ping.status_code == 200
            except httpx.HTTPError:
                pass
        return self.in_service

    async def aclose(self) -> None:
        await self.http.aclose()


async def refusal(runtime: Runtime, request: Request, request_id: str) -> Response | None:
    """SageMaker's checks before the container sees the request."""
    name = request.path_params["endpoint_name"]
    if len(request.headers.get("x-amzn-sagemaker-custom-attributes", "")) > CUSTOM_ATTRIBUTES_MAX:
        return validation_error(
            "1 validation error detected: Value at 'customAttributes' failed to satisfy "
            f"constraint: Member must have length less than or equal to {CUSTOM_ATTRIBUTES_MAX}",
            request_id,
        )
    if not await runtime.check_in_service():
        log.info("%s: the container's /ping has not answered 200 yet", name)
        return validation_error(
            f"Endpoint {name} of account {LOCAL_ACCOUNT} not found.", request_id
        )
    return None


async def read_limited(request: Request) -> bytes | None:
    """The body, or None once it is over SageMaker's limit."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        return None
    body = await request.body()
    return body if len(body) <= MAX_BODY_BYTES else None


def too_large(request_id: str) -> Response:
    return validation_error(
        f"Request payload is larger than the {MAX_BODY_BYTES // (1024 * 1024)} MB limit "
        "of InvokeEndpoint; send a smaller request.",
        request_id,
    )


def original_message(response: httpx.Response) -> str:
    return response.content.decode(errors="replace")


def create_app(runtime: Runtime) -> Starlette:
    async def invoke(request: Request) -> Response:
        request_id = str(uuid.uuid4())
        name = request.path_params["endpoint_name"]
        started = time.monotonic()
        body = await read_limited(request)
        if body is None:
            return too_large(request_id)
        if (refused := await refusal(runtime, request, request_id)) is not None:
            return refused
        try:
            async with asyncio.timeout(runtime.invoke_timeout):
                answer = await runtime.http.post(
                    "/invocations", content=body, headers=to_container(request.headers, False)
                )
        except TimeoutError:
            return model_error(name, 0, TIMED_OUT, request_id)
        except httpx.HTTPError as error:
            return model_error(name, 0, container_failed(error), request_id)
        log.info(
            "%s invocations %d %.1f ms",
            name,
            answer.status_code,
            1000 * (time.monotonic() - started),
        )
        if answer.status_code >= 400:
            return model_error(name, answer.status_code, original_message(answer), request_id)
        headers = to_client(answer.headers, request.headers, request_id)
        return Response(
            answer.content,
            status_code=200,
            headers=headers,
            media_type=answer.headers.get("content-type"),
        )

    async def invoke_stream(request: Request) -> Response:
        request_id = str(uuid.uuid4())
        name = request.path_params["endpoint_name"]
        body = await read_limited(request)
        if body is None:
            return too_large(request_id)
        if (refused := await refusal(runtime, request, request_id)) is not None:
            return refused
        upstream_request = runtime.http.build_request(
            "POST", "/invocations", content=body, headers=to_container(request.headers, True)
        )
        try:
            async with asyncio.timeout(runtime.invoke_timeout):
                upstream = await runtime.http.send(upstream_request, stream=True)
        except TimeoutError:
            return model_error(name, 0, TIMED_OUT, request_id)
        except httpx.HTTPError as error:
            return model_error(name, 0, container_failed(error), request_id)
        if upstream.status_code >= 400:
            await upstream.aread()
            await upstream.aclose()
            return model_error(name, upstream.status_code, original_message(upstream), request_id)
        headers = to_client(upstream.headers, request.headers, request_id)
        headers["X-Amzn-SageMaker-Content-Type"] = upstream.headers.get(
            "content-type", "application/octet-stream"
        )
        return StreamingResponse(
            payload_parts(upstream, name, runtime.part_bytes),
            headers=headers,
            media_type=event_stream.CONTENT_TYPE,
        )

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        yield
        await runtime.aclose()

    routes = [
        Route("/endpoints/{endpoint_name}/invocations", invoke, methods=["POST"]),
        Route(
            "/endpoints/{endpoint_name}/invocations-response-stream",
            invoke_stream,
            methods=["POST"],
        ),
    ]
    return Starlette(routes=routes, lifespan=lifespan)


async def payload_parts(
    upstream: httpx.Response, endpoint_name: str, part_bytes: int | None
) -> AsyncIterator[bytes]:
    """One PayloadPart per chunk as the container sent it (or per `part_bytes` of it); a
    broken stream ends in a ModelStreamError frame, which boto3 raises from the client's
    loop."""
    try:
        async for chunk in upstream.aiter_raw():
            step = part_bytes or len(chunk)
            for start in range(0, len(chunk), step or 1):
                yield event_stream.payload_part(chunk[start : start + step])
    except httpx.HTTPError as error:
        log.info("%s: the container's stream broke: %s", endpoint_name, error)
        yield event_stream.stream_exception(
            "ModelStreamError", container_failed(error), error_code="StreamBroken"
        )
    finally:
        await upstream.aclose()


def container_failed(error: httpx.HTTPError) -> str:
    detail = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    return (
        f"The connection to container {CONTAINER_NAME} failed ({detail}); see the container's log."
    )
