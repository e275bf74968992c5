"""`fidelity`: constrained answers against the target's free ones, before and after the
container's whitespace bound (bench/fidelity.py)."""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import ExitStack
from typing import Any

from bench.commands.common import add_local_command, configuration_of
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
    from bench.fidelity import COUNT, MAX_TOKENS

    parser = add_local_command(commands, "fidelity", command, HELP, config="none")
    parser.add_argument("--num-probes", type=int, default=COUNT, help=f"default {COUNT}")
    parser.add_argument("--max-tokens", type=int, default=MAX_TOKENS, help=f"default {MAX_TOKENS}")


def command(args: argparse.Namespace) -> int:
    from transformers import AutoTokenizer

    from bench.configuration import LocalContainer
    from bench.fidelity import KINDS, Prober, table
    from bench.report import write_json
    from serving import paths

    if args.port:
        raise SystemExit(
            "--port: fidelity starts two containers, each on a free port; leave it out."
        )
    configuration = configuration_of(args)
    tokenizer = AutoTokenizer.from_pretrained(paths.model_dir(args.opt_ml_root.absolute()))
    variants = {"before (no whitespace)": BEFORE, "after (whitespace bounded)": STRUCTURED_OUTPUTS}
    results = {}
    with ExitStack() as stack:
        containers = {}
        for index, (name, config) in enumerate(variants.items()):
            container = LocalContainer(
                configuration,
                opt_ml_root=args.opt_ml_root.absolute(),
                log_path=args.out_dir / "logs" / f"fidelity-{index}.log",
                enforce_eager=args.enforce_eager,
                extra_env={STRUCTURED_OUTPUTS_CONFIG_VAR: json.dumps(config)},
            )
            stack.enter_context(container.start())
            containers[name] = container
        for name, container in containers.items():
            print(f"starting {name} on {container.url} ...", file=sys.stderr, flush=True)
            container.wait_ready()
        for name, container in containers.items():
            prober = Prober(container.url, tokenizer, args.max_tokens)
            results[name] = prober.measure(args.num_probes)
            prober.close()
    text = table(results, args.num_probes)
    departures = [
        f"- {name}, `{kind}`: {departure}"
        for name, (tallies, _) in results.items()
        for kind in KINDS
        for departure in tallies[kind].departures[:3]
    ]
    if departures:
        text += "\n\nWhere a constrained answer left a valid free one (up to 3 per kind):\n"
        text += "\n".join(departures)
    write_json(
        args.out_dir / "fidelity.json",
        {
            "configuration": configuration.describe(),
            "variants": variants,
            "probes": args.num_probes,
            "results": {
                name: {"calls": calls, **{kind: vars(tally) for kind, tally in tallies.items()}}
                for name, (tallies, calls) in results.items()
            },
        },
    )
    (args.out_dir / "fidelity.md").write_text(f"# Fidelity: {configuration.name}\n\n{text}\n")
    print(text)
    print(f"\nwrote {args.out_dir}/fidelity.json and fidelity.md")
    return 0
