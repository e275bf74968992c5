"""The options the commands share, each declared once (prompts and generation, the target,
local containers, --rounds, --concurrency), and the container a run targets."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from bench.configuration import LocalContainer, default_configuration
from harness.configurations import DEMO_SCHEDULE, FIXED_DEFAULT, Configuration, parse_configuration
from harness.locations import default_opt_ml_root
from harness.serving_container import Container
from serving import paths
from workloads.prompts import load_payloads, sampled

DEFAULT_OUT_DIR = Path("build") / "bench"
Handler = Callable[[argparse.Namespace], int]


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


def main_of(prog: str, description: str, modules: Sequence[Any], argv: list[str] | None) -> int:
    """The command line of a package of commands: each module adds its parser (add_parser)
    and names its handler; the one chosen runs."""
    parser = argparse.ArgumentParser(
        prog=prog, description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for module in modules:
        module.add_parser(commands)
    args = parser.parse_args(argv)
    return args.handler(args)


def rounds(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of rounds") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give 0 or more rounds")
    return value


def add_rounds(parser: Any, default: int, what: str = "interleaved rounds") -> None:
    """--rounds, the same option in every command that repeats its comparison."""
    parser.add_argument(
        "--rounds", type=rounds, default=default, help=f"{what} (default %(default)s)"
    )


def add_command(
    commands: Any, name: str, handler: Handler, help_text: str, max_tokens: int = 128
) -> argparse.ArgumentParser:
    """A subcommand with --out-dir and the prompt arguments."""
    sub = commands.add_parser(name, help=help_text, description=help_text)
    sub.set_defaults(handler=handler)
    add_out_dir(sub)
    add_prompt_args(sub, max_tokens)
    return sub


def add_levels_command(
    commands: Any,
    name: str,
    handler: Handler,
    help_text: str,
    levels: list[int],
    max_tokens: int = 128,
    sagemaker: bool = False,
) -> argparse.ArgumentParser:
    """A subcommand that loads one target at concurrency levels (--concurrency)."""
    parser = add_command(commands, name, handler, help_text, max_tokens)
    add_target_args(parser, sagemaker=sagemaker)
    parser.add_argument(
        "--concurrency",
        type=int_list,
        default=list(levels),
        help=f"levels, default {','.join(map(str, levels))}",
    )
    return parser


def add_out_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out-dir",
        type=Path,
        default=DEFAULT_OUT_DIR,
        help=f"where results go (default {DEFAULT_OUT_DIR})",
    )


def add_prompt_args(parser: argparse.ArgumentParser, max_tokens: int = 128) -> None:
    group = parser.add_argument_group("prompts and generation")
    group.add_argument("--prompts", type=Path, help="JSONL of chat payloads (default: HumanEval)")
    group.add_argument(
        "--workload",
        choices=["humaneval", "structured", "json", "agent"],
        default="humaneval",
        help="humaneval (default); structured: tool calls (auto, required) and JSON-schema "
        "answers, each ended by its grammar (workloads/structured.py); json: its JSON questions "
        "alone, under json_schema and json_object, for a target without tool calls; agent: "
        "multi-turn agent sessions with tools replayed turn by turn, the call, its result, "
        "the answer (workloads/agent.py)",
    )
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
        group.add_argument(
            "--endpoint-url",
            help="SageMaker Runtime's URL, e.g. http://127.0.0.1:8081 for the local runtime "
            "(make local-runtime); default: AWS's for the region",
        )
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


def add_local_command(
    commands: Any, name: str, handler: Handler, help_text: str, config: str | None = None
) -> argparse.ArgumentParser:
    """A subcommand that starts local containers of one configuration (--config; CONFIG
    when given, else the demo's default for the head)."""
    parser = commands.add_parser(name, help=help_text, description=help_text)
    parser.set_defaults(handler=handler)
    add_out_dir(parser)
    default = (
        f"default: {config}"
        if config
        else f"default: {DEMO_SCHEDULE}, the schedule calibrated for the trained pair, when the"
        f" head was trained that deep; else {FIXED_DEFAULT}"
    )
    parser.add_argument(
        "--config",
        default=config,
        help="none, eagle3:K, peagle:K, or K by batch size as K@START-END ranges joined by /"
        f" ({default})",
    )
    add_local_args(parser.add_argument_group("local containers"))
    return parser


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


def local_container(
    args: argparse.Namespace,
    configuration: Configuration,
    log_name: str,
    extra_env: dict[str, str] | None = None,
    port: int | None = None,
) -> LocalContainer:
    """A container of `configuration` on the command's --opt-ml-root, compiled or not as
    --no-enforce-eager says, its log OUT_DIR/logs/LOG_NAME.log."""
    return LocalContainer(
        configuration,
        opt_ml_root=args.opt_ml_root.absolute(),
        log_path=args.out_dir / "logs" / f"{log_name}.log",
        enforce_eager=args.enforce_eager,
        extra_env=extra_env,
        port=port,
    )


def drafter_of(args: argparse.Namespace) -> Path:
    return (args.drafter or paths.channel_dir(args.opt_ml_root)).absolute()


def configuration_of(args: argparse.Namespace) -> Configuration:
    """The command's --config, or the demo's default for this head."""
    drafter = drafter_of(args)
    return parse_configuration(args.config or default_configuration(drafter), drafter)


@contextlib.contextmanager
def serving_target(args: argparse.Namespace) -> Iterator[tuple[str | None, Container | None]]:
    """(front URL, the container or None): the given --url, or a container started for the
    run (stopped when the block ends)."""
    if not args.start:
        if not args.url and not getattr(args, "endpoint_name", None):
            raise SystemExit("give a target: --url http://HOST:PORT, or --start CONFIG.")
        yield args.url, None
        return
    configuration = parse_configuration(args.start, drafter_of(args))
    extra_env = {}
    if args.max_concurrent_requests:
        extra_env["MAX_CONCURRENT_REQUESTS"] = str(args.max_concurrent_requests)
    container = local_container(args, configuration, configuration.name, extra_env, args.port)
    with container.start():
        print(f"starting {configuration.name} on {container.url} ...", file=sys.stderr, flush=True)
        ready_after = container.wait_ready()
        print(f"ready after {ready_after:.0f} s", file=sys.stderr, flush=True)
        yield container.url, container


def structured(args: argparse.Namespace) -> bool:
    """A workload of grammar-bound answers (tool calls, JSON), each ending where it ends."""
    return getattr(args, "workload", "humaneval") in ("structured", "json", "agent")


def payloads_of(args: argparse.Namespace) -> list[dict[str, Any]]:
    workload = getattr(args, "workload", "humaneval")
    if workload != "humaneval" and args.prompts is not None:
        raise SystemExit(f"--workload {workload} brings its own prompts; leave out --prompts.")
    if workload == "structured":
        from workloads.structured import structured_payloads

        return structured_payloads(args.num_prompts)
    if workload == "json":
        from workloads.structured import json_payloads

        return json_payloads(args.num_prompts)
    if workload == "agent":
        from workloads.agent import agent_payloads

        return agent_payloads(args.num_prompts)
    return load_payloads(args.prompts, args.num_prompts, args.api)


def sampled_payloads(args: argparse.Namespace, stream: bool = True) -> list[dict[str, Any]]:
    # A grammar ends a structured answer: past it only EOS is allowed, so no ignore_eos.
    ignore_eos = args.ignore_eos and not structured(args)
    return [
        sampled(payload, args.max_tokens, args.temperature, ignore_eos, stream)
        for payload in payloads_of(args)
    ]


def settings_of(args: argparse.Namespace) -> dict[str, Any]:
    return {
        key: str(value) if isinstance(value, Path) else value
        for key, value in vars(args).items()
        if key != "handler"
    }
