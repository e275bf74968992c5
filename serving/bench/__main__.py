"""`python -m serving.bench run|sweep|overhead|crosscheck|load`: measure the serving container.

  run         concurrency sweep against a URL or a SageMaker endpoint
  sweep       no speculation / EAGLE-3 K=3,7,11 / P-EAGLE K=3,7,11 on local containers
  overhead    the same load to the engine's port and through the front, interleaved
  crosscheck  our output tok/s and TTFT against `vllm bench serve` on the same endpoint
  load        N clients for T seconds; counts completed, refused, errors, lost; /ping latency

run, overhead, crosscheck and load take --url of a running container, or --start CONFIG
(none, eagle3:K or peagle:K) to start a local one for the duration.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from serving import paths
from serving.bench import report
from serving.bench.container import (
    EAGLE3_CHANNEL,
    LocalContainer,
    default_opt_ml_root,
    parse_configuration,
)
from serving.bench.prompts import load_payloads, sampled
from serving.bench.run import DEFAULT_CONCURRENCY

DEFAULT_OUT_DIR = Path("build") / "bench"


def int_list(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a comma-separated list of numbers"
        ) from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} needs numbers of 1 or more")
    return values


def add_prompt_args(parser: argparse.ArgumentParser, max_tokens: int = 128) -> None:
    group = parser.add_argument_group("prompts and generation")
    group.add_argument("--prompts", type=Path, help="JSONL of chat payloads (default: HumanEval)")
    group.add_argument("--num-prompts", type=int, help="use only the first N prompts")
    group.add_argument(
        "--api",
        choices=["chat", "completion"],
        default="chat",
        help="payload kind for HumanEval prompts (default chat)",
    )
    group.add_argument(
        "--max-tokens",
        type=int,
        default=max_tokens,
        help=f"fixed output length, with ignore_eos (default {max_tokens})",
    )
    group.add_argument("--temperature", type=float, default=0.0, help="default 0 (greedy)")
    group.add_argument(
        "--no-ignore-eos",
        dest="ignore_eos",
        action="store_false",
        help="stop at EOS (runs are then not comparable in length)",
    )


def add_target_args(parser: argparse.ArgumentParser, sagemaker: bool = False) -> None:
    group = parser.add_argument_group("target")
    group.add_argument(
        "--url",
        help="the container, e.g. http://127.0.0.1:8080 (/invocations), "
        "or .../v1 for the OpenAI routes",
    )
    if sagemaker:
        group.add_argument("--endpoint-name", help="a SageMaker endpoint instead of --url")
        group.add_argument("--region", help="AWS region of the endpoint")
    add_local_args(group)
    group.add_argument(
        "--start",
        metavar="CONFIG",
        help="start a local container first: none, eagle3:K or peagle:K",
    )
    group.add_argument(
        "--max-concurrent-requests",
        type=int,
        help="MAX_CONCURRENT_REQUESTS for a container started with --start",
    )


def add_local_args(group: Any) -> None:
    group.add_argument(
        "--opt-ml-root",
        type=Path,
        default=default_opt_ml_root(),
        help="model tree for local containers (default: build/opt_ml_trained when it is built,"
        " else build/opt_ml)",
    )
    group.add_argument(
        "--drafter",
        type=Path,
        help="P-EAGLE head for local containers (default: the eagle channel)",
    )
    group.add_argument("--port", type=int, help="front port for local containers (default: free)")
    group.add_argument(
        "--no-enforce-eager",
        dest="enforce_eager",
        action="store_false",
        help="let vLLM compile (slower start) in local containers",
    )


def drafter_of(args: argparse.Namespace) -> Path:
    return (args.drafter or paths.channel_dir(args.opt_ml_root)).absolute()


@contextlib.contextmanager
def container_urls(args: argparse.Namespace) -> Iterator[tuple[str, str | None]]:
    """(front URL, engine URL or None): the given --url, or a container started for the run."""
    if not args.start:
        if not args.url and not getattr(args, "endpoint_name", None):
            raise SystemExit("give a target: --url http://HOST:PORT, or --start CONFIG.")
        yield args.url, getattr(args, "engine_url", None)
        return
    configuration = parse_configuration(args.start, drafter_of(args))
    extra_env = {}
    if args.max_concurrent_requests:
        extra_env["MAX_CONCURRENT_REQUESTS"] = str(args.max_concurrent_requests)
    container = LocalContainer(
        configuration,
        opt_ml_root=args.opt_ml_root.absolute(),
        log_path=args.out_dir / "logs" / f"{configuration.name}.log",
        enforce_eager=args.enforce_eager,
        extra_env=extra_env,
    )
    if args.port:
        container.port = args.port
    with container.start():
        print(f"starting {configuration.name} on {container.url} ...", file=sys.stderr, flush=True)
        ready_after = container.wait_ready()
        print(f"ready after {ready_after:.0f} s", file=sys.stderr, flush=True)
        yield container.url, container.engine_url


def payloads_of(args: argparse.Namespace) -> list[dict[str, Any]]:
    return load_payloads(args.prompts, args.num_prompts, args.api)


def sampled_payloads(args: argparse.Namespace, stream: bool = True) -> list[dict[str, Any]]:
    return [
        sampled(payload, args.max_tokens, args.temperature, args.ignore_eos, stream)
        for payload in payloads_of(args)
    ]


def settings_of(args: argparse.Namespace) -> dict[str, Any]:
    return {
        key: str(value) if isinstance(value, Path) else value
        for key, value in vars(args).items()
        if key != "handler"
    }


def command_run(args: argparse.Namespace) -> int:
    from serving.bench.run import run_sweep
    from serving.bench.targets import make_target

    payloads = sampled_payloads(args)
    with container_urls(args) as (url, _):

        async def sweep() -> list[dict[str, Any]]:
            target = make_target(url, args.endpoint_name, args.region, max(args.concurrency) + 8)
            try:
                return await run_sweep(target, payloads, args.concurrency)
            finally:
                await target.aclose()

        levels = asyncio.run(sweep())
    table = report.write_run(args.out_dir, args.name, levels, {"settings": settings_of(args)})
    print(table)
    print(f"\nwrote {args.out_dir}/{args.name}.json, .md and .png")
    return 0


def command_sweep(args: argparse.Namespace) -> int:
    from serving.bench.sweep import default_configurations, run_configurations

    drafter = drafter_of(args)
    eagle3_drafter = args.eagle3_drafter or paths.channel_dir(args.opt_ml_root, EAGLE3_CHANNEL)
    eagle3_drafter = eagle3_drafter.absolute() if eagle3_drafter.is_dir() else None
    if args.configs:
        configurations = [
            parse_configuration(
                text, eagle3_drafter or drafter if text.startswith("eagle3") else drafter
            )
            for text in args.configs.split(",")
        ]
    else:
        configurations = default_configurations(drafter, eagle3_drafter, args.k)
    text = run_configurations(
        configurations,
        sampled_payloads(args),
        args.concurrency,
        args.opt_ml_root.absolute(),
        args.out_dir,
        settings_of(args),
        port=args.port,
        enforce_eager=args.enforce_eager,
    )
    print(text)
    print(f"wrote {args.out_dir}/sweep.json, sweep.md and sweep.png")
    return 0


def command_overhead(args: argparse.Namespace) -> int:
    from serving.bench.overhead import measure_overhead, overhead_table
    from serving.bench.targets import UrlTarget

    payloads = sampled_payloads(args)
    with container_urls(args) as (url, engine_url):
        if not engine_url:
            raise SystemExit(
                "the engine's address is needed: --engine-url http://127.0.0.1:PORT (the front "
                "logs 'engine on ...'), or --start CONFIG."
            )

        async def measure() -> list[dict[str, Any]]:
            connections = max(args.concurrency) + 8
            direct = UrlTarget(engine_url + "/invocations", connections)
            front = UrlTarget(
                url.rstrip("/").removesuffix("/invocations") + "/invocations", connections
            )
            try:
                return await measure_overhead(
                    direct, front, payloads, args.concurrency, args.rounds
                )
            finally:
                await direct.aclose()
                await front.aclose()

        results = asyncio.run(measure())
    table = overhead_table(results)
    report.write_json(
        args.out_dir / "overhead.json", {"settings": settings_of(args), "levels": results}
    )
    (args.out_dir / "overhead.md").write_text(f"# Front overhead\n\n{table}\n")
    print(table)
    print(f"\nwrote {args.out_dir}/overhead.json and overhead.md")
    return 0


def command_crosscheck(args: argparse.Namespace) -> int:
    from serving.bench.crosscheck import crosscheck, crosscheck_table

    payloads = payloads_of(args)
    with container_urls(args) as (url, _):
        result = asyncio.run(
            crosscheck(url, payloads, args.concurrency, args.max_tokens, args.temperature)
        )
    table, within = crosscheck_table(result)
    report.write_json(args.out_dir / "crosscheck.json", result)
    (args.out_dir / "crosscheck.md").write_text(f"# Cross-check with vllm bench serve\n\n{table}\n")
    print(table)
    print(f"\n{'agree' if within else 'DISAGREE'} within 10%; wrote {args.out_dir}/crosscheck.json")
    return 0 if within else 1


def command_load(args: argparse.Namespace) -> int:
    from serving.bench.load import load_table, run_load

    payloads = payloads_of(args)
    with container_urls(args) as (url, _):
        print(f"{args.clients} clients for {args.duration:.0f} s against {url} ...", flush=True)
        began = time.monotonic()
        result = asyncio.run(
            run_load(
                url, payloads, args.clients, args.duration, args.stream_fraction, args.max_tokens
            )
        )
    result["wall_s"] = time.monotonic() - began
    report.write_json(args.out_dir / "load.json", result)
    print(load_table(result))
    if result["error_samples"]:
        print("errors:", result["error_samples"])
    print(f"\nwrote {args.out_dir}/load.json")
    return 0 if result["lost"] == 0 else 1


def command_coldstart(args: argparse.Namespace) -> int:
    from serving.bench.coldstart import measure

    configuration = parse_configuration(args.config, drafter_of(args))
    result = measure(configuration, args.opt_ml_root.absolute(), args.enforce_eager, args.out_dir)
    report.write_json(args.out_dir / "coldstart.json", result)
    print(
        f"cold start to first /ping 200 ({result['configuration']}, "
        f"enforce_eager={result['enforce_eager']}): front {result['front_s']} s, "
        f"bare vLLM {result['bare_vllm_s']} s"
    )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m serving.bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)

    def command(
        name: str, handler: Any, help_text: str, max_tokens: int = 128
    ) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.set_defaults(handler=handler)
        sub.add_argument(
            "--out-dir",
            type=Path,
            default=DEFAULT_OUT_DIR,
            help=f"where results go (default {DEFAULT_OUT_DIR})",
        )
        add_prompt_args(sub, max_tokens)
        return sub

    run = command("run", command_run, "concurrency sweep against one target")
    add_target_args(run, sagemaker=True)
    run.add_argument(
        "--concurrency",
        type=int_list,
        default=list(DEFAULT_CONCURRENCY),
        help="levels, default 1,4,8,32",
    )
    run.add_argument("--name", default="bench", help="file name stem of the results")

    sweep = command("sweep", command_sweep, "every speculation configuration on local containers")
    add_local_args(sweep.add_argument_group("local containers"))
    sweep.add_argument(
        "--eagle3-drafter",
        type=Path,
        help="head for the sequential EAGLE-3 runs (default: the eagle3 channel when there is"
        " one, else --drafter)",
    )
    sweep.add_argument(
        "--k", type=int_list, default=[3, 7, 11], help="draft lengths, default 3,7,11"
    )
    sweep.add_argument("--configs", help="instead of the default set: e.g. none,eagle3:3,peagle:7")
    sweep.add_argument(
        "--concurrency",
        type=int_list,
        default=list(DEFAULT_CONCURRENCY),
        help="levels, default 1,4,8,32",
    )

    overhead = command("overhead", command_overhead, "front overhead against the bare engine", 64)
    add_target_args(overhead)
    overhead.add_argument("--engine-url", help="the engine behind --url, http://127.0.0.1:PORT")
    overhead.add_argument("--concurrency", type=int_list, default=[1, 32], help="default 1,32")
    overhead.add_argument(
        "--rounds",
        type=int,
        default=4,
        help="alternating engine/front rounds per level (default 4)",
    )

    check = command("crosscheck", command_crosscheck, "compare with vllm bench serve", 64)
    add_target_args(check)
    check.add_argument("--concurrency", type=int, default=4, help="default 4")

    load = command("load", command_load, "N clients for T seconds; nothing may be lost", 64)
    add_target_args(load)
    load.add_argument("--clients", type=int, default=64, help="default 64")
    load.add_argument("--duration", type=float, default=60.0, help="seconds, default 60")
    load.add_argument(
        "--stream-fraction", type=float, default=0.5, help="share of streamed requests, default 0.5"
    )

    cold = commands.add_parser(
        "coldstart",
        help="time to the first /ping 200: front and bare vLLM, side by side",
        description="time to the first /ping 200: front and bare vLLM, side by side",
    )
    cold.set_defaults(handler=command_coldstart)
    cold.add_argument("--out-dir", type=Path, default=DEFAULT_OUT_DIR)
    cold.add_argument("--config", default="peagle:3", help="none, eagle3:K or peagle:K")
    add_local_args(cold.add_argument_group("local containers"))
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
