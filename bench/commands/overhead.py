"""`overhead`: the same load straight to vLLM (through the front's private Unix socket) and
through the front, interleaved."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

import httpx

from bench import report
from bench.client import RequestResult, send
from bench.commands.common import add_levels_command, sampled_payloads, serving_target, settings_of
from bench.targets import READ_TIMEOUT_SECONDS
from serving.engine_client import ENGINE_ORIGIN as ENGINE_BASE_URL


class EngineSocketTarget:
    """vLLM itself, reached the way the front reaches it: its /invocations over a Unix socket."""

    metrics_url = None  # the spec-decode counters are read through the front

    def __init__(self, socket_path: Path, max_connections: int):
        self.name = f"unix:{socket_path}"
        self.http = httpx.AsyncClient(
            base_url=ENGINE_BASE_URL,
            transport=httpx.AsyncHTTPTransport(
                uds=str(socket_path),
                limits=httpx.Limits(
                    max_connections=max_connections, max_keepalive_connections=max_connections
                ),
            ),
            timeout=httpx.Timeout(connect=10.0, read=READ_TIMEOUT_SECONDS, write=30.0, pool=None),
        )

    async def send(self, payload: dict[str, Any]) -> RequestResult:
        return await send(self.http, f"{ENGINE_BASE_URL}/invocations", payload)

    async def aclose(self) -> None:
        await self.http.aclose()


def process_cpu(container: Any):
    """CPU seconds of the container's front process, user and system (children not counted)."""
    import psutil

    front = psutil.Process(container.process.pid)

    def seconds() -> float:
        times = front.cpu_times()
        return times.user + times.system

    return seconds


def add_parser(commands: Any) -> None:
    parser = add_levels_command(
        commands, "overhead", command, "front overhead against the bare engine", [1, 32], 64
    )
    parser.add_argument(
        "--engine-socket",
        type=Path,
        help="the engine's Unix socket behind --url (the front logs 'engine on unix:PATH')",
    )
    parser.add_argument(
        "--runtime-url",
        help="measure the local SageMaker Runtime (make local-runtime) in front of --url "
        "instead: the same requests to the container and through the runtime",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=4,
        help="alternating engine/front rounds per level (default 4)",
    )


def command(args: argparse.Namespace) -> int:
    from bench.overhead import measure_overhead, overhead_table
    from bench.targets import UrlTarget

    # InvokeEndpoint answers whole bodies (the stream is another route, in event-stream frames).
    payloads = sampled_payloads(args, stream=not args.runtime_url)
    with serving_target(args) as (url, container):
        engine_socket = args.engine_socket or (container and container.engine_socket())
        if not engine_socket and not args.runtime_url:
            raise SystemExit(
                "the engine's socket is needed: --engine-socket PATH (the front logs "
                "'engine on unix:PATH'), or --start CONFIG."
            )

        front_cpu = None if container is None or args.runtime_url else process_cpu(container)

        async def measure() -> list[dict[str, Any]]:
            connections = max(args.concurrency) + 8
            front = UrlTarget(
                url.rstrip("/").removesuffix("/invocations") + "/invocations", connections
            )
            if args.runtime_url:
                # The legs shift one hop out: the container is the base, the runtime the extra.
                direct = front
                front = UrlTarget(
                    args.runtime_url.rstrip("/") + "/endpoints/bench/invocations", connections
                )
            else:
                direct = EngineSocketTarget(engine_socket, connections)
            try:
                return await measure_overhead(
                    direct, front, payloads, args.concurrency, args.rounds, front_cpu
                )
            finally:
                await direct.aclose()
                await front.aclose()

        results = asyncio.run(measure())
    table = overhead_table(results)
    if args.runtime_url:
        table = "engine = the container, front = the local runtime in front of it\n\n" + table
    report.write_json(
        args.out_dir / "overhead.json", {"settings": settings_of(args), "levels": results}
    )
    (args.out_dir / "overhead.md").write_text(f"# Front overhead\n\n{table}\n")
    print(table)
    print(f"\nwrote {args.out_dir}/overhead.json and overhead.md")
    return 0
