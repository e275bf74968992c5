"""`image`: the built image against the host process (start-up, docker stop, engine kill)."""

from __future__ import annotations

import argparse
from typing import Any

from bench import report
from bench.commands.common import add_local_command, configuration_of
from image_build.build import CPU_IMAGE

HELP = "the image against the host process: first /ping 200, docker stop, engine kill"


def add_parser(commands: Any) -> None:
    parser = add_local_command(commands, "image", command, HELP)
    parser.add_argument("--image", default=CPU_IMAGE, help="the built image")


def command(args: argparse.Namespace) -> int:
    from bench.image import measure
    from image_build.engine import ensure_engine

    configuration = configuration_of(args)
    result = measure(
        configuration, args.opt_ml_root.absolute(), args.image, ensure_engine(), args.out_dir
    )
    report.write_json(args.out_dir / "image.json", result)
    print(
        f"first /ping 200 ({result['configuration']}): host {result['host_ready_s']} s, "
        f"image {result['image_ready_s']} s (started together), image alone "
        f"{result['image_alone_ready_s']} s; "
        f"docker stop to exit {result['docker_stop_to_exit_s']} s "
        f"(code {result['docker_stop_exit_code']}); engine kill to exit "
        f"{result['engine_kill_to_exit_s']} s (code {result['engine_kill_exit_code']})"
    )
    return 0
