"""`bench prefix`: SageMaker's prefix-aware routing against random, on two containers of one
configuration. A few tenants each have a long system prompt that all their requests share,
then a short question; each request goes to the container its tenant hashes to (as
`PREFIX_AWARE` sends a shared prefix to one instance) or to either at random. Each turn has
tenants of its own, so no turn finds another's prefixes cached. Side by side: vLLM's
prefix-cache hit rate (hits / queried tokens over both containers, for the turn) and the
time to the first token, ABBA over --rounds.

The router here is the benchmark's stand-in for SageMaker's; the containers, their prefix
caches and the requests are the real ones. `--start CONFIG` starts the two containers; two
`--url`s take running ones.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import random
import statistics
from typing import Any

import httpx

from bench import report
from bench.compare import compare
from bench.configuration import up_together
from bench.options import add_local_args, add_out_dir, add_rounds, drafter_of, local_container
from bench.report import markdown
from bench.stats import ms, percentile
from bench.targets import UrlTarget
from harness.configurations import parse_configuration
from serving.metrics import metric_total

VARIANTS = ("prefix-aware", "random")
HITS, QUERIES = "vllm:prefix_cache_hits", "vllm:prefix_cache_queries"
WORDS = (
    "policy account refund order shipping invoice customer support ticket priority region "
    "warranty product return credit balance schedule contract renewal escalation agent"
).split()
QUESTIONS = ("Where is my order?", "Can I get a refund?", "Who do I call?", "What is due?")


def system_prompt(seed: int, words: int) -> str:
    chooser = random.Random(seed)
    return " ".join(chooser.choice(WORDS) for _ in range(words)) + "\n\nQuestion: "


def container_of(tenant: int, containers: int) -> int:
    """Where a prefix-aware router sends a tenant: the same container every time."""
    return int(hashlib.sha256(str(tenant).encode()).hexdigest(), 16) % containers


async def cache_counters(url: str) -> tuple[float, float]:
    async with httpx.AsyncClient(timeout=30) as http:
        text = (await http.get(f"{url}/metrics")).text
    return metric_total(text, HITS), metric_total(text, QUERIES)


async def turn(
    urls: list[str], variant: str, seed: int, args: argparse.Namespace
) -> dict[str, Any]:
    prompts = [
        system_prompt(seed * 1000 + tenant, args.prefix_words) for tenant in range(args.tenants)
    ]
    chooser = random.Random(seed)
    jobs = [
        (chooser.randrange(args.tenants), chooser.choice(QUESTIONS)) for _ in range(args.requests)
    ]
    targets = [UrlTarget(url) for url in urls]
    before = [await cache_counters(url) for url in urls]
    ttfts: list[float] = []
    failed = 0

    async def client() -> None:
        nonlocal failed
        while jobs:
            tenant, question = jobs.pop()
            index = (
                container_of(tenant, len(urls))
                if variant == "prefix-aware"
                else chooser.randrange(len(urls))
            )
            payload = {
                "prompt": prompts[tenant] + question, "max_tokens": 4, "temperature": 0,
                "stream": True,
            }  # fmt: skip
            result = await targets[index].send(payload)
            if result.ok and result.ttft is not None:
                ttfts.append(result.ttft)
            else:
                failed += 1

    try:
        await asyncio.gather(*(client() for _ in range(args.clients)))
    finally:
        for target in targets:
            await target.aclose()
    after = [await cache_counters(url) for url in urls]
    hits = sum(late[0] - early[0] for early, late in zip(before, after, strict=True))
    queries = sum(late[1] - early[1] for early, late in zip(before, after, strict=True))
    return {
        "hit_rate": hits / queries if queries else 0.0,
        "ttft_ms_p50": ms(percentile(ttfts, 50)),
        "ttft_ms_p90": ms(percentile(ttfts, 90)),
        "answered": len(ttfts),
        "failed": failed,
    }


def summary(measured: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    def median(variant: str, key: str) -> float:
        return statistics.median(turn_[key] for turn_ in measured[variant])

    aware, spread = "prefix-aware", "random"
    return {
        **{f"{variant} {key}": median(variant, key) for variant in VARIANTS
           for key in ("hit_rate", "ttft_ms_p50", "ttft_ms_p90")},
        "ttft_p50_ratio": median(aware, "ttft_ms_p50") / median(spread, "ttft_ms_p50"),
        "failed": sum(turn_["failed"] for turns in measured.values() for turn_ in turns),
    }  # fmt: skip


def table(measured: dict[str, list[dict[str, Any]]]) -> str:
    rows = [
        [variant, str(number), f"{turn_['hit_rate']:.1%}", f"{turn_['ttft_ms_p50']:.0f}",
         f"{turn_['ttft_ms_p90']:.0f}", str(turn_["failed"])]
        for variant in VARIANTS
        for number, turn_ in enumerate(measured[variant])
    ]  # fmt: skip
    headers = ["routing", "round", "prefix-cache hit rate", "TTFT p50 ms", "TTFT p90 ms", "failed"]
    return markdown(headers, rows)


def add_parser(commands: Any) -> None:
    parser = commands.add_parser("prefix", help="prefix-aware routing against random")
    parser.set_defaults(handler=command)
    add_out_dir(parser)
    group = parser.add_argument_group("target")
    group.add_argument("--url", action="append", default=[], help="a running container (twice)")
    group.add_argument("--start", metavar="CONFIG", help="start two local containers of CONFIG")
    add_local_args(group)
    parser.add_argument("--tenants", type=int, default=4, help="default 4")
    parser.add_argument("--prefix-words", type=int, default=400, help="system prompt, default 400")
    parser.add_argument("--requests", type=int, default=48, help="a turn, default 48")
    parser.add_argument("--clients", type=int, default=2, help="default 2")
    add_rounds(parser, 2, "ABBA rounds of prefix-aware and random")


@contextlib.contextmanager
def two_containers(args: argparse.Namespace):
    if not args.start:
        if len(args.url) != 2:
            raise SystemExit("give two containers: --url A --url B, or --start CONFIG.")
        yield args.url
        return
    configuration = parse_configuration(args.start, drafter_of(args))
    containers = {
        f"prefix-{number}": local_container(args, configuration, f"prefix-{number}")
        for number in (1, 2)
    }
    with up_together(containers):
        yield [container.url for container in containers.values()]


def command(args: argparse.Namespace) -> int:
    with two_containers(args) as urls:

        def measure(variant: str, _level: int, number: int) -> dict[str, Any]:
            seed = 2 * number + VARIANTS.index(variant) + 1
            print(f"{variant}, round {number} ...", flush=True)
            return asyncio.run(turn(urls, variant, seed, args))

        measured = compare(measure, VARIANTS, [args.clients], args.rounds, order="abba")
    by_variant = {name: levels[args.clients] for name, levels in measured.items()}
    result = {"urls": urls, "turns": by_variant, **summary(by_variant)}
    report.write_json(args.out_dir / "prefix.json", result)
    print(table(by_variant))
    print(
        f"\nTTFT p50 prefix-aware / random: {result['ttft_p50_ratio']:.2f}; hit rate "
        f"{result['prefix-aware hit_rate']:.1%} against {result['random hit_rate']:.1%}"
    )
    print(f"\nwrote {args.out_dir}/prefix.json")
    return 0 if result["failed"] == 0 else 1
