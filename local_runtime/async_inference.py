"""InvokeEndpointAsync, here: the payload read from S3, the container called, the answer
written to S3, as an asynchronous endpoint does.

boto3's `invoke_endpoint_async(EndpointName, InputLocation=...)` gets 202 at once with the
inference id and the two places the answer may land: OutputLocation (`OUTPUT/<id>.out`) when
the container answered 2xx, FailureLocation (`FAILURE/<id>-error.out`) otherwise. The call
runs in the background, queued, at most `max_concurrent` at a time per runtime (the endpoint's
MaxConcurrentInvocationsPerInstance), with the asynchronous timeout (up to an hour, the call's
InvocationTimeoutSeconds) and no 6 MB limit (a payload may be up to 1 GB). The S3 here is
whatever `--s3-endpoint-url` names (moto's server in the tests), or AWS's.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from local_runtime.asgi import request_headers
from local_runtime.container import ContainerError
from local_runtime.passed_headers import to_container
from local_runtime.runtime_errors import validation_error

log = logging.getLogger("local_runtime.async")
ASYNC_TIMEOUT_SECONDS = 3600.0
DEFAULT_MAX_CONCURRENT = 4


def split_s3_uri(uri: str) -> tuple[str, str] | None:
    if not uri.startswith("s3://") or "/" not in uri[5:]:
        return None
    bucket, key = uri[5:].split("/", 1)
    return (bucket, key) if bucket and key else None


class AsyncInvocations:
    """POST /endpoints/{name}/async-invocations."""

    def __init__(
        self,
        runtime: Any,
        s3: Any,
        output_uri: str,
        failure_uri: str | None = None,
        max_concurrent: int = DEFAULT_MAX_CONCURRENT,
    ):
        self.runtime = runtime
        self.s3 = s3
        self.output_uri = output_uri.rstrip("/") + "/"
        self.failure_uri = (failure_uri or self.output_uri + "failures/").rstrip("/") + "/"
        self.slots = asyncio.Semaphore(max_concurrent)
        self.tasks: set[asyncio.Task] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        answer = await self.accept(scope)
        await answer(scope, receive, send)

    async def accept(self, scope: Scope) -> Response:
        headers = request_headers(scope)
        request_id = str(uuid.uuid4())
        location = headers.get("x-amzn-sagemaker-inputlocation", "")
        source = split_s3_uri(location)
        if source is None:
            return validation_error(
                f"InputLocation {location!r} is not an S3 URI (s3://bucket/key).", request_id
            )
        if not await self.runtime.check_in_service():
            return validation_error(
                f"Endpoint {scope['path_params']['endpoint_name']} is not in service yet.",
                request_id,
            )
        inference_id = headers.get("x-amzn-sagemaker-inference-id") or request_id
        output = f"{self.output_uri}{inference_id}.out"
        failure = f"{self.failure_uri}{inference_id}-error.out"
        timeout = float(
            headers.get("x-amzn-sagemaker-invocationtimeoutseconds") or ASYNC_TIMEOUT_SECONDS
        )
        content_type = headers.get("x-amzn-sagemaker-content-type", "application/json")
        task = asyncio.create_task(
            self.run(source, output, failure, content_type, headers, timeout)
        )
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return JSONResponse(
            {"InferenceId": inference_id},
            status_code=202,
            headers={
                "X-Amzn-SageMaker-OutputLocation": output,
                "X-Amzn-SageMaker-FailureLocation": failure,
                "x-amzn-RequestId": request_id,
            },
        )

    async def run(
        self,
        source: tuple[str, str],
        output: str,
        failure: str,
        content_type: str,
        headers: dict[str, str],
        timeout: float,
    ) -> None:
        async with self.slots:
            try:
                got = await asyncio.to_thread(self.s3.get_object, Bucket=source[0], Key=source[1])
                body = await asyncio.to_thread(got["Body"].read)
            except Exception as error:  # any S3 failure is the request's failure
                await self.write(
                    failure, f"reading s3://{'/'.join(source)} failed: {error}".encode()
                )
                return
            container_headers = to_container({**headers, "content-type": content_type}, False)
            try:
                async with asyncio.timeout(timeout):
                    answer = await self.runtime.container.fetch(
                        "POST", "/invocations", container_headers, body
                    )
            except TimeoutError:
                await self.write(failure, f"no answer within {timeout:g} s".encode())
                return
            except ContainerError as error:
                await self.write(failure, f"the container failed: {error}".encode())
                return
            await self.write(output if answer.status < 400 else failure, answer.body)

    async def write(self, uri: str, body: bytes) -> None:
        target = split_s3_uri(uri)
        assert target is not None
        await asyncio.to_thread(self.s3.put_object, Bucket=target[0], Key=target[1], Body=body)
        log.info("async answer written to %s", uri)

    async def aclose(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
