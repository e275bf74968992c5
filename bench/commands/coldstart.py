"""`coldstart`: time to the first /ping 200, through the front and for bare vLLM."""

from __future__ import annotations

import argparse
from typing import Any

from bench import report
from bench.commands.common import add_local_command, configuration_of

HELP = "time to the first /ping 200: front and bare vLLM, side by side"


def add_parser(commands: Any) -> None:
    add_local_command(commands, "coldstart", command, HELP)


def command(args: argparse.Namespace) -> int:
    from bench.coldstart import measure

    configuration = configuration_of(args)
    result = measure(configuration, args.opt_ml_root.absolute(), args.enforce_eager, args.out_dir)
    report.write_json(args.out_dir / "coldstart.json", result)
    print(
        f"cold start to first /ping 200 ({result['configuration']}, "
        f"enforce_eager={result['enforce_eager']}): front {result['front_s']} s, "
        f"bare vLLM {result['bare_vllm_s']} s"
    )
    return 0
