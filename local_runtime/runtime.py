"""The container behind the runtime, one client call as SageMaker sees it, and SageMaker's
checks before the container sees that call: shared by every route (local_runtime/runtime_routes.py,
local_runtime/bidirectional.py)."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Mapping

from starlette.responses import Response
from starlette.types import Receive, Scope

from local_runtime.asgi import read_body, request_headers
from local_runtime.container import ContainerClient, ContainerError
from local_runtime.passed_headers import CUSTOM_ATTRIBUTES_MAX
from local_runtime.runtime_errors import CONTAINER_NAME, LOCAL_ACCOUNT, validation_error
from local_runtime.shadow import Shadow

log = logging.getLogger("local_runtime")
# SageMaker's limits: the time to answer, the /ping timeout, and the request body.
INVOKE_TIMEOUT_SECONDS = 60.0
PING_TIMEOUT_SECONDS = 2.0
MAX_BODY_BYTES = 6 * 1024 * 1024


class Runtime:
    """The container behind the runtime. Like an endpoint, it is in service from the first
    /ping 200 on; before that, invocations are refused as SageMaker refuses them."""

    def __init__(
        self,
        container_url: str,
        invoke_timeout: float = INVOKE_TIMEOUT_SECONDS,
        part_bytes: int | None = None,
        shadow: Shadow | None = None,
    ):
        self.invoke_timeout = invoke_timeout
        # SageMaker does not align PayloadParts with the container's events; cutting parts
        # to this size shows whether a client copes (None: one part per container chunk).
        self.part_bytes = part_bytes
        self.container = ContainerClient(container_url, connect_timeout=PING_TIMEOUT_SECONDS)
        self.in_service = False
        self.shadow = shadow

    async def check_in_service(self) -> bool:
        if not self.in_service:
            try:
                async with asyncio.timeout(PING_TIMEOUT_SECONDS):
                    ping = await self.container.fetch("GET", "/ping", {})
                self.in_service = ping.status == 200
            except (ContainerError, TimeoutError):
                pass
        return self.in_service

    def mirror(self, headers: Mapping[str, str], body: bytes, stream: bool) -> None:
        """Offer the call, as the container gets it, to the shadow. Synchronous: production
        never waits on the shadow."""
        if self.shadow is not None:
            self.shadow.offer(headers, body, stream, self.invoke_timeout)

    async def aclose(self) -> None:
        self.container.close()
        if self.shadow is not None:
            await self.shadow.aclose()


class Call:
    """One client call as SageMaker sees it: its endpoint name, headers and request id."""

    def __init__(self, scope: Scope):
        self.endpoint_name: str = scope["path_params"]["endpoint_name"]
        self.headers = request_headers(scope)
        self.request_id = str(uuid.uuid4())


async def refusal(
    runtime: Runtime, call: Call, validation_code: str = "ValidationError"
) -> Response | None:
    """SageMaker's checks before the container sees the request; `validation_code` names
    the error in the operation's own model."""
    attributes = call.headers.get("x-amzn-sagemaker-custom-attributes", "")
    if len(attributes) > CUSTOM_ATTRIBUTES_MAX:
        return validation_error(
            "1 validation error detected: Value at 'customAttributes' failed to satisfy "
            f"constraint: Member must have length less than or equal to {CUSTOM_ATTRIBUTES_MAX}",
            call.request_id,
            validation_code,
        )
    if not await runtime.check_in_service():
        log.info("%s: the container's /ping has not answered 200 yet", call.endpoint_name)
        return validation_error(
            f"Endpoint {call.endpoint_name} of account {LOCAL_ACCOUNT} not found.",
            call.request_id,
            validation_code,
        )
    return None


def container_failed(error: ContainerError) -> str:
    return (
        f"The connection to container {CONTAINER_NAME} failed ({error}); see the container's log."
    )


async def read_limited(headers: Mapping[str, str], receive: Receive) -> bytes | None:
    """The body, or None once it is over SageMaker's limit (at once when it says so)."""
    declared = headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        return None
    return await read_body(receive, MAX_BODY_BYTES)
