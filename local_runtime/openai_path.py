"""SageMaker's OpenAI-compatible path: `/endpoints/<ep>/openai/v1/chat/completions` and the
inference-component form `/endpoints/<ep>/inference-components/<ic>/openai/v1/...`, called
by OpenAI clients with a bearer token (local_runtime/bearer.py) instead of SigV4.

The service forwards the body and the answer as they are, streamed or not, to the
container's `/v1/chat/completions` (read on 2026-12-03 in AWS's guide "Invoke endpoints
with OpenAI-compatible APIs"; only Chat Completions is routed). Its own errors come in
OpenAI's envelope, a container's error wrapped as a `model_error` naming the container's
status and message (as gateways that call the service quote them).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

from starlette.requests import ClientDisconnect
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from local_runtime.asgi import request_headers
from local_runtime.bearer import BearerTokens
from local_runtime.container import ContainerError, StreamedAnswer
from local_runtime.runtime import MAX_BODY_BYTES, Runtime, container_failed, read_limited
from local_runtime.runtime_errors import CONTAINER_NAME, LOCAL_ACCOUNT, TIMED_OUT

log = logging.getLogger("local_runtime")
CONTAINER_PATH = "/v1/chat/completions"
# What reaches the container: the body's type and what the client accepts.
TO_CONTAINER = ("content-type", "accept")


def openai_error(status: int, message: str, kind: str, code: str) -> JSONResponse:
    return JSONResponse(
        {"error": {"message": message, "type": kind, "code": code}}, status_code=status
    )


def validation(message: str) -> JSONResponse:
    return openai_error(400, message, "invalid_request_error", "validation_error")


def model_error(status: int, message: str) -> JSONResponse:
    """The container answered `status` >= 400 with `message`, or not at all (status 0)."""
    if status:
        side = "client" if status < 500 else "server"
        message = (
            f'Received {side} error ({status}) from {CONTAINER_NAME} with message "{message}". '
            "See the container's log for more information."
        )
    return openai_error(
        status if 400 <= status < 500 else 424, message, "server_error", "model_error"
    )


async def relayed(upstream: StreamedAnswer) -> AsyncIterator[bytes]:
    try:
        async for chunk in upstream.chunks():
            yield chunk
    except ContainerError as error:
        log.info("the container's answer broke off: %s", error)
    finally:
        upstream.close()


class OpenAIPath:
    """POST .../openai/v1/chat/completions: the token checked, the call relayed as it is."""

    def __init__(self, runtime: Runtime, tokens: BearerTokens):
        self.runtime = runtime
        self.tokens = tokens

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            answer = await self.answer(scope, receive)
        except ClientDisconnect:
            return
        await answer(scope, receive, send)

    async def answer(self, scope: Scope, receive: Receive) -> Response:
        headers = request_headers(scope)
        params = scope["path_params"]
        if (refused := self.tokens.check(headers.get("authorization"))) is not None:
            kind = "authentication_error" if refused.status == 401 else "permission_error"
            return openai_error(refused.status, refused.message, kind, refused.code)
        if params.get("route") != "chat/completions":
            route = params.get("route")
            message = f"SageMaker's OpenAI path routes only chat/completions, not {route}."
            return openai_error(404, message, "invalid_request_error", "unknown_route")
        body = await read_limited(headers, receive)
        if body is None:
            return validation(
                f"Request payload is larger than the {MAX_BODY_BYTES >> 20} MB limit."
            )
        name = params["endpoint_name"]
        if not await self.runtime.check_in_service():
            return validation(f"Endpoint {name} of account {LOCAL_ACCOUNT} not found.")
        forwarded = {key: headers[key] for key in TO_CONTAINER if key in headers}
        timeout = self.runtime.invoke_timeout
        try:
            async with asyncio.timeout(timeout):
                upstream = await self.runtime.container.stream(
                    CONTAINER_PATH, forwarded, body, read_timeout=timeout
                )
                if upstream.status >= 400:
                    try:
                        message = (await upstream.read()).decode(errors="replace")
                    finally:
                        upstream.close()
                    return model_error(upstream.status, message)
        except TimeoutError:
            return model_error(0, TIMED_OUT)
        except ContainerError as error:
            return model_error(0, container_failed(error))
        log.info("%s openai/v1/chat/completions %d", name, upstream.status)
        content_type = upstream.headers.get("content-type", "application/json")
        return StreamingResponse(relayed(upstream), media_type=content_type)
