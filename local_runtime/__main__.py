"""`python -m local_runtime`: SageMaker Runtime's REST protocol on RUNTIME_PORT (default 8081)
in front of the container on PORT (default 8080).

    boto3.client("sagemaker-runtime", endpoint_url="http://127.0.0.1:8081").invoke_endpoint(
        EndpointName="any-name", ContentType="application/json", Body=...)
"""

from __future__ import annotations

import argparse
import logging
import os

import uvicorn

from local_runtime.app import INVOKE_TIMEOUT_SECONDS, Runtime, create_app


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
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    app = create_app(Runtime(args.container_url, args.invoke_timeout, args.part_bytes))
    # loop and http stay "auto": uvloop and httptools when installed (uvicorn[standard], which
    # vLLM brings), which take about 0.3 ms off each call against asyncio and h11 here.
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
