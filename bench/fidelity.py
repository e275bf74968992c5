"""`fidelity`: constrained answers against the target's free ones (bench/grammar_probe.py
says how they are probed), with vLLM's disable_any_whitespace and with the container's
whitespace bound side by side; or, with --url, one running container as it serves."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator, Mapping
from typing import Any

from bench.configuration import up_together
from bench.grammar_probe import CALL_KINDS, COUNT, KINDS, MAX_TOKENS, Prober, Tally
from bench.options import add_local_command, configuration_of, local_container
from bench.report import markdown, write_json
from harness.configurations import Configuration
from serving import paths
from serving.engine_args.agents import STRUCTURED_OUTPUTS
from serving.variables import STRUCTURED_OUTPUTS_CONFIG_VAR

HELP = (
    "constrained tool calls and JSON against the target's free answers, greedy: how far each "
    "follows the free one while it is valid, and how often it equals it, with vLLM's "
    "disable_any_whitespace (before) and the container's whitespace bound (after), side by side"
)
# What the container served JSON with before the bound: no whitespace at all.
BEFORE = {"backend": "xgrammar", "disable_any_whitespace": True}


def add_parser(commands: Any) -> None:
    parser = add_local_command(commands, "fidelity", command, HELP, config="none")
    parser.add_argument(
        "--url", help="probe this running container as it serves, instead of starting two"
    )
    parser.add_argument("--num-probes", type=int, default=COUNT, help=f"default {COUNT}")
    parser.add_argument("--max-tokens", type=int, default=MAX_TOKENS, help=f"default {MAX_TOKENS}")


def command(args: argparse.Namespace) -> int:
    from transformers import AutoTokenizer

    if args.port:
        raise SystemExit(
            "--port: fidelity starts its containers, each on a free port; leave it out."
        )
    tokenizer = AutoTokenizer.from_pretrained(paths.model_dir(args.opt_ml_root.absolute()))

    def probed(url: str) -> tuple[dict[str, Tally], int]:
        prober = Prober(url, tokenizer, args.max_tokens)
        try:
            return prober.measure(args.num_probes)
        finally:
            prober.close()

    if args.url:
        described, variants = {"url": args.url}, {"as served": None}
        results = {"as served": probed(args.url)}
    else:
        configuration = configuration_of(args)
        described = configuration.describe()
        variants = {
            "before (no whitespace)": BEFORE,
            "after (whitespace bounded)": STRUCTURED_OUTPUTS,
        }
        results = {name: probed(url) for name, url in started(args, configuration, variants)}
    text = report(results, args.num_probes)
    write_json(
        args.out_dir / "fidelity.json",
        {
            "configuration": described,
            "variants": variants,
            "probes": args.num_probes,
            "results": {
                name: {"calls": calls, **{kind: vars(tally) for kind, tally in tallies.items()}}
                for name, (tallies, calls) in results.items()
            },
        },
    )
    (args.out_dir / "fidelity.md").write_text(f"# Fidelity\n\n{text}\n")
    print(text)
    print(f"\nwrote {args.out_dir}/fidelity.json and fidelity.md")
    return 0


def started(
    args: argparse.Namespace, configuration: Configuration, variants: Mapping[str, dict]
) -> Iterator[tuple[str, str]]:
    """(variant, URL) for a container of each structured-outputs config, all up together."""
    containers = {
        name: local_container(
            args,
            configuration,
            f"fidelity-{index}",
            extra_env={STRUCTURED_OUTPUTS_CONFIG_VAR: json.dumps(config)},
        )
        for index, (name, config) in enumerate(variants.items())
    }
    with up_together(containers):
        for name, container in containers.items():
            yield name, container.url


def report(results: Mapping[str, tuple[dict[str, Tally], int]], count: int) -> str:
    """The table, and where a constrained answer left a valid free one."""
    text = table(results, count)
    departures = [
        f"- {name}, `{kind}`: {departure}"
        for name, (tallies, _) in results.items()
        for kind in KINDS
        for departure in tallies[kind].departures[:3]
    ]
    if departures:
        text += "\n\nWhere a constrained answer left a valid free one (up to 3 per kind):\n"
        text += "\n".join(departures)
    return text


def table(results: Mapping[str, tuple[dict[str, Tally], int]], count: int) -> str:
    """One column per variant (and probe set)."""
    rows = [
        ["free answers that open a call", *(f"{calls} of {count}" for _, calls in results.values())]
    ]
    for kind in KINDS:
        what = "call" if kind in CALL_KINDS else "answer to a JSON question"
        follows = [f"`{kind}` follows the free {what} while it is valid"]
        equal = [f"`{kind}` equals the free {what} where it is valid whole"]
        for tallies, _ in results.values():
            tally = tallies[kind]
            follows.append(share(tally.follows, tally.probes))
            equal.append(share(tally.equal, tally.whole))
        rows += [follows, equal]
    return markdown(["", *results], rows)


def share(part: int, whole: int) -> str:
    return f"{part / whole:.0%} ({part} of {whole})" if whole else "n/a (0 of 0)"
