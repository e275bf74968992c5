"""`fault`: a stalled and a killed engine, host process and image, against the cold start."""

from __future__ import annotations

import argparse
from typing import Any

from bench import report
from bench.commands.common import add_local_command, configuration_of
from image_build.build import CPU_IMAGE

HELP = "engine stall and kill: time to /ping 503 and back to 200, against the cold start"


def add_parser(commands: Any) -> None:
    parser = add_local_command(commands, "fault", command, HELP)
    parser.add_argument("--image", default=CPU_IMAGE, help="the built image (%(default)s)")
    parser.add_argument("--host-only", action="store_true", help="leave the image out")
    parser.add_argument(
        "--stall-seconds", type=float, default=10, help="SERVING_ENGINE_STALL_SECONDS (%(default)s)"
    )


def command(args: argparse.Namespace) -> int:
    from bench.fault import measure

    docker = None
    if not args.host_only:
        from image_build.engine import ensure_engine

        docker = ensure_engine()
    configuration = configuration_of(args)
    result = measure(
        configuration,
        args.opt_ml_root.absolute(),
        None if args.host_only else args.image,
        docker,
        args.stall_seconds,
        args.out_dir,
    )
    report.write_json(args.out_dir / "fault.json", result)
    rows = [
        "| backend | cold start s | stall -> /ping 503 s | stall -> /ping 200 s | "
        "kill -> /ping 503 s | kill -> /ping 200 s | kill recovery / cold start | "
        "stall recovery / cold start |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for backend in ("host", "image"):
        if (figures := result.get(backend)) is None:
            continue
        rows.append(
            f"| {backend} | {figures['cold_start_s']} | {figures['stall_to_ping_503_s']} "
            f"(window {figures['stall_window_s']:g}) | {figures['stall_to_ping_200_s']} | "
            f"{figures['kill_to_ping_503_s']} | {figures['kill_to_ping_200_s']} | "
            f"{figures['kill_recovery_over_cold_start']} | "
            f"{figures['stall_recovery_over_cold_start']} |"
        )
    print("\n".join(rows))
    return 0
