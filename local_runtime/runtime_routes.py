"""The runtime's routes: InvokeEndpoint and InvokeEndpointWithResponseStream relayed to
the container's /invocations as SageMaker relays them, and the OpenAI-compatible path with
bearer tokens (local_runtime/openai_path.py). Any endpoint name reaches the one container.
With a shadow container (local_runtime/shadow.py), a sampled share of the calls is mirrored
to it too; GET /shadow shows what was mirrored.

Both routes are raw ASGI apps under Starlette's router: the relay is the runtime's hot path,
and Starlette's Request and Response objects cost more there than the routes need."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.requests import ClientDisconnect
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from local_runtime import event_stream
from local_runtime.asgi import send_answer
from local_runtime.async_inference import AsyncInvocations
from local_runtime.bearer import LOCAL_KEYS, BearerTokens
from local_runtime.bidirectional import InvokeEndpointWithBidirectionalStream
from local_runtime.container import Answer, ContainerError, StreamedAnswer
from local_runtime.openai_path import OpenAIPath
from local_runtime.passed_headers import to_client, to_container
from local_runtime.runtime import (
    MAX_BODY_BYTES,
    Call,
    Runtime,
    container_failed,
    read_limited,
    refusal,
)
from local_runtime.runtime_errors import (
    TIMED_OUT,
    model_error,
    validation_error,
)

log = logging.getLogger("local_runtime")


def too_large(request_id: str) -> Response:
    return validation_error(
        f"Request payload is larger than the {MAX_BODY_BYTES // (1024 * 1024)} MB limit "
        "of InvokeEndpoint; send a smaller request.",
        request_id,
    )


def original_message(body: bytes) -> str:
    return body.decode(errors="replace")


class InvokeEndpoint:
    """The whole answer at once."""

    def __init__(self, runtime: Runtime):
        self.runtime = runtime

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        call = Call(scope)
        started = time.monotonic()
        try:
            answer = await self.relay(call, receive)
        except ClientDisconnect:
            return
        if isinstance(answer, Response):
            await answer(scope, receive, send)
            return
        elapsed_ms = 1000 * (time.monotonic() - started)
        if answer.status >= 400:
            message = original_message(answer.body)
            failed = model_error(call.endpoint_name, answer.status, message, call.request_id)
            await failed(scope, receive, send)
        else:
            headers = to_client(answer.headers, call.headers, call.request_id)
            await send_answer(send, headers, answer.body, answer.headers.get("content-type"))
        # Once the answer has gone: the client need not wait for the log line.
        log.info("%s invocations %d %.1f ms", call.endpoint_name, answer.status, elapsed_ms)

    async def relay(self, call: Call, receive: Receive) -> Answer | Response:
        """The container's answer, or what SageMaker answers in its place."""
        body = await read_limited(call.headers, receive)
        if body is None:
            return too_large(call.request_id)
        if (refused := await refusal(self.runtime, call)) is not None:
            return refused
        headers = to_container(call.headers, False)
        self.runtime.mirror(headers, body, False)
        try:
            async with asyncio.timeout(self.runtime.invoke_timeout):
                return await self.runtime.container.fetch("POST", "/invocations", headers, body)
        except TimeoutError:
            return model_error(call.endpoint_name, 0, TIMED_OUT, call.request_id)
        except ContainerError as error:
            return model_error(call.endpoint_name, 0, container_failed(error), call.request_id)


class InvokeEndpointWithResponseStream:
    """The answer as it comes, in event-stream PayloadParts."""

    def __init__(self, runtime: Runtime):
        self.runtime = runtime

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            answer = await self.relay(Call(scope), receive)
        except ClientDisconnect:
            return
        await answer(scope, receive, send)

    async def relay(self, call: Call, receive: Receive) -> Response:
        body = await read_limited(call.headers, receive)
        if body is None:
            return too_large(call.request_id)
        if (refused := await refusal(self.runtime, call)) is not None:
            return refused
        name = call.endpoint_name
        headers = to_container(call.headers, True)
        self.runtime.mirror(headers, body, True)
        try:
            async with asyncio.timeout(self.runtime.invoke_timeout):
                upstream = await self.runtime.container.stream(
                    "/invocations", headers, body, read_timeout=self.runtime.invoke_timeout
                )
                if upstream.status >= 400:
                    try:
                        message = original_message(await upstream.read())
                    finally:
                        upstream.close()
                    return model_error(name, upstream.status, message, call.request_id)
        except TimeoutError:
            return model_error(name, 0, TIMED_OUT, call.request_id)
        except ContainerError as error:
            return model_error(name, 0, container_failed(error), call.request_id)
        return StreamingResponse(
            payload_parts(upstream, name, self.runtime.part_bytes),
            headers=stream_headers(upstream.headers, call),
            media_type=event_stream.CONTENT_TYPE,
        )


def stream_headers(container_headers: Mapping[str, str], call: Call) -> dict[str, str]:
    headers = to_client(container_headers, call.headers, call.request_id)
    headers["X-Amzn-SageMaker-Content-Type"] = container_headers.get(
        "content-type", "application/octet-stream"
    )
    return headers


async def payload_parts(
    upstream: StreamedAnswer, endpoint_name: str, part_bytes: int | None
) -> AsyncIterator[bytes]:
    """One PayloadPart per chunk as the container sent it (or per `part_bytes` of it); a
    broken stream ends in a ModelStreamError frame, which boto3 raises from the client's
    loop."""
    try:
        async for chunk in upstream.chunks():
            step = part_bytes or len(chunk)
            for start in range(0, len(chunk), step or 1):
                yield event_stream.payload_part(chunk[start : start + step])
    except ContainerError as error:
        log.info("%s: the container's stream broke: %s", endpoint_name, error)
        yield event_stream.stream_exception(
            "ModelStreamError", container_failed(error), error_code="StreamBroken"
        )
    finally:
        upstream.close()


class ShadowCounters:
    """GET /shadow: what the shadow container was offered and what became of it."""

    def __init__(self, runtime: Runtime):
        self.runtime = runtime

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.runtime.shadow is None:
            message = "No shadow container; start the runtime with --shadow-container-url URL."
            answer = JSONResponse({"Message": message}, status_code=404)
        else:
            answer = JSONResponse(self.runtime.shadow.counters())
        await answer(scope, receive, send)


def create_app(
    runtime: Runtime,
    async_invocations: AsyncInvocations | None = None,
    tokens: BearerTokens | None = None,
) -> Starlette:
    """`tokens`: the bearer tokens the OpenAI path accepts (by default, those signed with the
    suite's `local` key)."""
    openai_path = OpenAIPath(runtime, tokens or BearerTokens(LOCAL_KEYS))

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        yield
        if async_invocations is not None:
            await async_invocations.aclose()
        await runtime.aclose()

    routes = [
        Route("/endpoints/{endpoint_name}/invocations", InvokeEndpoint(runtime), methods=["POST"]),
        Route(
            "/endpoints/{endpoint_name}/invocations-response-stream",
            InvokeEndpointWithResponseStream(runtime),
            methods=["POST"],
        ),
        Route(
            "/endpoints/{endpoint_name}/invocations-bidirectional-stream",
            InvokeEndpointWithBidirectionalStream(runtime),
            methods=["POST"],
        ),
        Route("/endpoints/{endpoint_name}/openai/v1/{route:path}", openai_path, methods=["POST"]),
        Route(
            "/endpoints/{endpoint_name}/inference-components/{component}/openai/v1/{route:path}",
            openai_path,
            methods=["POST"],
        ),
        Route("/shadow", ShadowCounters(runtime), methods=["GET"]),
    ]
    if async_invocations is not None:
        routes.append(
            Route(
                "/endpoints/{endpoint_name}/async-invocations",
                async_invocations,
                methods=["POST"],
            )
        )
    return Starlette(routes=routes, lifespan=lifespan)
