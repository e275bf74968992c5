"""`python -m local_runtime`: SageMaker Runtime's REST protocol on RUNTIME_PORT (default 8081)
in front of the container on PORT (default 8080).

    boto3.client("sagemaker-runtime", endpoint_url="http://127.0.0.1:8081").invoke_endpoint(
        EndpointName="any-name", ContentType="application/json", Body=...)

With --shadow-container-url, a second container is a shadow variant: --shadow-sample percent
of the calls (default 50) go to it too, its answers are read and discarded, and GET /shadow
counts what was mirrored. The answers the client gets are production's alone.

With --async-output-uri, boto3's invoke_endpoint_async works too: the payload is read from its
InputLocation in S3 (--s3-endpoint-url for a local S3 such as moto's server), and the answer
written under that prefix (local_runtime/async_inference.py).

With --http2-port, InvokeEndpointWithBidirectionalStream works too, over HTTPS with HTTP/2 on
that port (local_runtime/http2.py, local_runtime/bidirectional.py): each session is bridged
to the container's WebSocket at /invocations-bidirectional-stream.

`python -m local_runtime transform IN.jsonl OUT.jsonl` runs a Batch Transform job against the
container instead (local_runtime/transform_job.py).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from pathlib import Path

import uvicorn

from local_runtime import http2
from local_runtime.bearer import LOCAL_KEYS, BearerTokens
from local_runtime.http2 import CERTIFICATE_FILE, DEFAULT_CERTIFICATE_DIR
from local_runtime.runtime import INVOKE_TIMEOUT_SECONDS, Runtime
from local_runtime.runtime_routes import create_app
from local_runtime.shadow import DEFAULT_SAMPLE_PERCENT, Shadow

# uvicorn.run's exit status when its server could not start (a port taken, say).
STARTUP_FAILURE = 3


def percent(text: str) -> float:
    """--shadow-sample's type; argparse names the flag in the error."""
    wrong = argparse.ArgumentTypeError(f"{text!r} is not a percentage from 0 to 100")
    try:
        value = float(text)
    except ValueError:
        raise wrong from None
    if not 0 <= value <= 100:  # NaN fails this too
        raise wrong
    return value


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m local_runtime", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=int(os.environ.get("RUNTIME_PORT", "8081")))
    parser.add_argument(
        "--container-url",
        default=f"http://127.0.0.1:{os.environ.get('PORT', '8080')}",
        help="the container's base URL (default: http://127.0.0.1:$PORT, PORT=8080)",
    )
    parser.add_argument(
        "--invoke-timeout",
        type=float,
        default=INVOKE_TIMEOUT_SECONDS,
        help="seconds the container has to answer, as on SageMaker (default 60)",
    )
    parser.add_argument(
        "--part-bytes",
        type=int,
        help="cut each stream PayloadPart to this many bytes, to try a client against parts "
        "that split events as SageMaker's may (default: one part per container chunk)",
    )
    parser.add_argument(
        "--shadow-container-url",
        help="a shadow container's base URL: a sampled share of the calls is sent to it too, "
        "its answers read and discarded, as SageMaker's shadow variants do (default: none)",
    )
    parser.add_argument(
        "--shadow-sample",
        type=percent,
        metavar="PERCENT",
        help="the share of calls mirrored to the shadow, 0 to 100 "
        f"(default {DEFAULT_SAMPLE_PERCENT:g})",
    )
    parser.add_argument(
        "--async-output-uri",
        help="s3://.../ for invoke_endpoint_async's answers (default: no async route)",
    )
    parser.add_argument("--async-failure-uri", help="s3://.../ for failures (OUTPUT/failures/)")
    parser.add_argument("--s3-endpoint-url", help="the S3 to read and write (default: AWS's)")
    parser.add_argument(
        "--http2-port",
        type=int,
        help="also serve HTTPS with HTTP/2 on this port, the only way "
        "InvokeEndpointWithBidirectionalStream's client reaches an endpoint "
        "(default: no such listener)",
    )
    parser.add_argument(
        "--certificate-dir",
        type=Path,
        default=DEFAULT_CERTIFICATE_DIR,
        help="where the HTTPS listener's self-signed certificate is made once and kept; a "
        f"client trusts its {CERTIFICATE_FILE} (default: %(default)s)",
    )
    parser.add_argument(
        "--max-concurrent-invocations",
        type=int,
        default=4,
        help="async requests sent to the container at once (%(default)s)",
    )
    args = parser.parse_args(argv)
    if args.shadow_sample is not None and args.shadow_container_url is None:
        parser.error("--shadow-sample needs --shadow-container-url, the shadow to mirror to")
    return args


def runtime_from(args: argparse.Namespace) -> Runtime:
    """The runtime the command line asks for, with its shadow if it names one."""
    shadow = None
    if args.shadow_container_url is not None:
        sample = DEFAULT_SAMPLE_PERCENT if args.shadow_sample is None else args.shadow_sample
        shadow = Shadow(args.shadow_container_url, sample)
    return Runtime(args.container_url, args.invoke_timeout, args.part_bytes, shadow=shadow)


def tokens_from(environ) -> BearerTokens:
    """The OpenAI path's bearer tokens: those signed with this process's AWS key (as a
    client here would sign them), or with the suite's `local` key when it has none."""
    key, secret = environ.get("AWS_ACCESS_KEY_ID"), environ.get("AWS_SECRET_ACCESS_KEY")
    return BearerTokens({key: secret} if key and secret else LOCAL_KEYS)


def async_invocations_from(args: argparse.Namespace, runtime: Runtime):
    if args.async_output_uri is None:
        return None
    import boto3

    from local_runtime.async_inference import AsyncInvocations

    s3 = boto3.client("s3", endpoint_url=args.s3_endpoint_url)
    return AsyncInvocations(
        runtime,
        s3,
        args.async_output_uri,
        args.async_failure_uri,
        args.max_concurrent_invocations,
    )


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["transform"]:
        from local_runtime import transform_job

        sys.exit(transform_job.main(argv[1:]))
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    runtime = runtime_from(args)
    app = create_app(runtime, async_invocations_from(args, runtime), tokens_from(os.environ))
    # loop and http stay "auto": uvloop and httptools when installed (uvicorn[standard], which
    # vLLM brings), which take about 0.3 ms off each call against asyncio and h11 here.
    config = uvicorn.Config(
        app, host=args.host, port=args.port, log_level="warning", access_log=False
    )
    server = uvicorn.Server(config)
    with asyncio.Runner(loop_factory=config.get_loop_factory()) as runner:
        runner.run(serve(server, app, args))
    if not server.started:
        sys.exit(STARTUP_FAILURE)


async def serve(server: uvicorn.Server, app, args: argparse.Namespace) -> None:
    """uvicorn's listener, and the HTTP/2 one beside it when asked for; both stop when
    uvicorn does (SIGINT, SIGTERM)."""
    if args.http2_port is None:
        await server.serve()
        return
    stopped = asyncio.Event()
    http2_listener = asyncio.create_task(
        http2.serve(app, args.host, args.http2_port, args.certificate_dir, stopped)
    )
    try:
        await server.serve()
    finally:
        stopped.set()
        await http2_listener


if __name__ == "__main__":
    main()
