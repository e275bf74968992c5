"""The head-rollout rehearsal: a good head in production, a bad one (random weights) as the
shadow, the local SageMaker Runtime mirroring a sample of the requests, and `compare`'s
verdict; then what attaching a shadow costs the production path, side by side.

The runtime's own cost is measured with a stand-in shadow that answers at once, so the
production engine is the only engine on the machine, as on SageMaker, where the shadow has
instances of its own. With the shadow engine on the same two cores the figure is the
machine's contention, and it is reported too.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx

from bench import report
from bench.client import RequestResult
from bench.configuration import LocalContainer, up_together
from bench.options import (
    add_local_command,
    add_prompt_args,
    add_rounds,
    configuration_of,
    sampled_payloads,
)
from bench.overhead import measure_level
from bench.run import run_batch, warm_up
from bench.targets import UrlTarget
from deploy import container_figures
from harness.bad_heads import random_head_tree
from harness.configurations import Configuration
from harness.locations import REPO_ROOT
from harness.serving_container import free_port
from serving import paths

START_SECONDS = 30.0


def wait_for_port(port: int, process: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode} before listening")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen on port {port} within {START_SECONDS:.0f} s")


@contextlib.contextmanager
def process(argv: Sequence[str], port: int, what: str, log: Path) -> Iterator[str]:
    """A server process listening on `port` for the block; its URL."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as output:
        child = subprocess.Popen(argv, cwd=REPO_ROOT, stdout=output, stderr=subprocess.STDOUT)
        try:
            wait_for_port(port, child, what)
            yield f"http://127.0.0.1:{port}"
        finally:
            child.terminate()
            child.wait(timeout=30)


def runtime(
    container_url: str, out_dir: Path, name: str, shadow_url: str | None = None, sample: int = 50
):
    port = free_port()
    argv = [sys.executable, "-m", "local_runtime", "--port", str(port)]
    argv += ["--container-url", container_url]
    if shadow_url is not None:
        argv += ["--shadow-container-url", shadow_url, "--shadow-sample", str(sample)]
    return process(argv, port, f"runtime {name}", out_dir / "logs" / f"runtime-{name}.log")


def standin(out_dir: Path):
    """The container stand-in of the runtime's own benchmark: answers at once, no engine."""
    port = free_port()
    argv = [sys.executable, "-m", "tests.support.standin_container", "--port", str(port)]
    return process(argv, port, "stand-in shadow", out_dir / "logs" / "standin.log")


def invocations(runtime_url: str, connections: int = 8) -> UrlTarget:
    return UrlTarget(f"{runtime_url}/endpoints/rehearsal/invocations", connections)


def wait_for_mirrors(runtime_url: str, timeout: float = 600.0) -> dict[str, Any]:
    """The runtime's shadow counters once every mirror it sent has ended."""
    deadline = time.monotonic() + timeout
    while True:
        counters = httpx.get(f"{runtime_url}/shadow", timeout=5).json()
        if counters["answered"] + counters["failed"] >= counters["mirrored"]:
            return counters
        if time.monotonic() > deadline:
            raise RuntimeError(f"the shadow's mirrors did not end within {timeout:.0f} s")
        time.sleep(0.5)


async def send_all(target: UrlTarget, payloads: Sequence[dict[str, Any]]) -> list[RequestResult]:
    try:
        results, _ = await run_batch(target, payloads, 1)
        return results
    finally:
        await target.aclose()


def rehearse(
    production_url: str, shadow_url: str, payloads: Sequence[dict[str, Any]], out_dir: Path,
    sample: int,
) -> dict[str, Any]:  # fmt: skip
    """Every payload once through a runtime with the shadow attached, and once straight to
    the production container: the comparison, and whether production's answers changed."""
    with runtime(production_url, out_dir, "rehearsal", shadow_url, sample) as runtime_url:
        mirrored = asyncio.run(send_all(invocations(runtime_url), payloads))
        counters = wait_for_mirrors(runtime_url)
    # The window is the rehearsal's: read before production answers anything else.
    table = container_figures.local(production_url, shadow_url)
    direct = asyncio.run(send_all(UrlTarget(f"{production_url}/invocations", 8), payloads))
    identical = sum(
        a.ok and b.ok and a.text == b.text for a, b in zip(mirrored, direct, strict=True)
    )
    return {
        "requests": len(payloads),
        "shadow": counters,
        "answers_identical": identical,
        "comparison": table.render(),
        "verdict": table.headline().verdict(),
    }


async def paths_side_by_side(
    plain_url: str, shadowed_url: str, payloads: Sequence[dict[str, Any]], rounds: int
) -> dict[str, Any]:
    """Alternating rounds at one client, through a runtime without and one with a shadow:
    the front overhead measurement with the plain runtime as the base."""
    plain, shadowed = invocations(plain_url), invocations(shadowed_url)
    try:
        await warm_up(plain, payloads)
        await warm_up(shadowed, payloads)
        return await measure_level(plain, shadowed, payloads, 1, rounds)
    finally:
        await plain.aclose()
        await shadowed.aclose()


def overhead(
    production_url: str, shadow_url: str, payloads: Sequence[dict[str, Any]], out_dir: Path,
    rounds: int, sample: int,
) -> dict[str, Any]:  # fmt: skip
    figures: dict[str, Any] = {}
    with (
        runtime(production_url, out_dir, "plain") as plain_url,
        standin(out_dir) as standin_url,
        runtime(production_url, out_dir, "standin", standin_url, sample) as standin_runtime,
        runtime(production_url, out_dir, "engine", shadow_url, sample) as engine_runtime,
    ):
        for name, shadowed_url in (("standin", standin_runtime), ("engine", engine_runtime)):
            figures[name] = asyncio.run(
                paths_side_by_side(plain_url, shadowed_url, payloads, rounds)
            )
    return figures


def measure(
    configuration: Configuration,
    opt_ml_root: Path,
    rehearsal_payloads: Sequence[dict[str, Any]],
    overhead_payloads: Sequence[dict[str, Any]],
    out_dir: Path,
    sample: int,
    rounds: int,
    shadow_root: Path | None = None,
) -> dict[str, Any]:
    """The rehearsal with `shadow_root`'s head as the shadow (a random head when None), then
    the shadow's cost over `rounds` rounds (left out at 0)."""
    bad_tree = shadow_root or random_head_tree(opt_ml_root, out_dir / "random-head")
    # Both engines serve at once: each on a core of its own (up_together), as each has
    # instances of its own on SageMaker.
    good = LocalContainer(configuration, opt_ml_root, out_dir / "logs" / "production.log")
    bad = LocalContainer(
        replace(configuration, drafter=paths.channel_dir(bad_tree)),
        bad_tree,
        out_dir / "logs" / "shadow.log",
        extra_env={"SERVING_VARIANT_NAME": "Shadow"},
    )
    with up_together({"production": good, "shadow": bad}):
        rehearsal = rehearse(good.url, bad.url, rehearsal_payloads, out_dir, sample)
        print(rehearsal["comparison"], file=sys.stderr, flush=True)
        costs = (
            overhead(good.url, bad.url, overhead_payloads, out_dir, rounds, sample)
            if rounds
            else {}
        )
    return {"rehearsal": rehearsal, "overhead": costs}


HELP = (
    "head rollout rehearsal: a random head (or --shadow-opt-ml-root's) as the shadow, compare, "
    "and the shadow's cost"
)


def add_parser(commands: Any) -> None:
    parser = add_local_command(commands, "rollout", command, HELP)
    add_prompt_args(parser, max_tokens=64)
    parser.add_argument("--requests", type=int, default=64, help="rehearsal requests (%(default)s)")
    parser.add_argument(
        "--sample", type=int, default=50, help="percent mirrored to the shadow (%(default)s)"
    )
    parser.add_argument(
        "--overhead-prompts", type=int, default=32, help="prompts per overhead round (%(default)s)"
    )
    add_rounds(parser, 4, "alternating rounds; 0 leaves the shadow's cost out")
    parser.add_argument(
        "--shadow-opt-ml-root",
        type=Path,
        help="a model tree whose head is the shadow (e.g. a retrained head: make "
        "retrain-agent-demo's build/retrain-agent/opt_ml); default a random head",
    )


def command(args: argparse.Namespace) -> int:

    # Whole answers (the runtime mirrors InvokeEndpoint), ended by their grammar where the
    # workload has one: an agent turn's call ends it, and tokens forced past it are not traffic.
    payloads = sampled_payloads(args, stream=False)
    rehearsal = [payloads[index % len(payloads)] for index in range(args.requests)]
    overhead = payloads[: args.overhead_prompts]
    configuration = configuration_of(args)
    result = measure(
        configuration,
        args.opt_ml_root.absolute(),
        rehearsal,
        overhead,
        args.out_dir,
        args.sample,
        args.rounds,
        args.shadow_opt_ml_root.absolute() if args.shadow_opt_ml_root else None,
    )
    report.write_json(args.out_dir / "shadow.json", result)
    rehearsed = result["rehearsal"]
    lines = [
        f"rehearsal: {rehearsed['requests']} requests through the local runtime, "
        f"{rehearsed['shadow']['mirrored']} mirrored to the shadow "
        f"({rehearsed['shadow']['failed']} failed); production's answers identical to the "
        f"container's own: {rehearsed['answers_identical']}/{rehearsed['requests']}",
        "",
        rehearsed["comparison"],
        "| shadow attached | requests per path | latency p50 ms (no shadow / shadow) | "
        "added p50 ms | latency p99 ms (no shadow / shadow) | added p99 ms |",
        "|---|---|---|---|---|---|",
    ]
    labels = {
        "standin": "stand-in (the runtime's own cost)",
        "engine": "the shadow's engine on the same cores",
    }
    for name, label in labels.items():
        if name not in result["overhead"]:
            continue
        figures = result["overhead"][name]
        plain, shadowed = figures["direct"], figures["front"]
        lines.append(
            f"| {label} | {plain['completed']} | "
            f"{plain['latency_ms_p50']:.1f} / {shadowed['latency_ms_p50']:.1f} | "
            f"{figures['added_latency_ms_p50']:+.2f} | "
            f"{plain['latency_ms_p99']:.1f} / {shadowed['latency_ms_p99']:.1f} | "
            f"{figures['added_latency_ms_p99']:+.2f} |"
        )
    text = "\n".join(lines)
    (args.out_dir / "shadow.md").write_text(f"# Head rollout rehearsal\n\n{text}\n")
    print(text)
    return 0
