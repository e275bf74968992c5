"""Cold start: time to the first /ping 200 through the front and for bare vLLM, side by side.

Both start at the same moment with the same engine command line (the bare one is the very
argv the front would run, on another port), so the two share the machine's noise. The
front's engine runs at the bare engine's niceness here, so neither is favoured.
"""

from __future__ import annotations

import argparse
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

from bench import report
from bench.configuration import LocalContainer
from bench.options import add_local_command, configuration_of
from harness.configurations import Configuration
from harness.container import free_port
from serving.engine_args.argv import build_argv
from serving.settings import load_settings

TIMEOUT_SECONDS = 900.0


def bare_argv(container: LocalContainer, port: int) -> list[str]:
    settings = load_settings(container.environment())
    # Bare vLLM as a user would run it: on a TCP port instead of the front's private socket.
    argv = build_argv(settings, Path("unused.sock"))
    at = argv.index("--uds")
    argv[at : at + 2] = ["--host", "127.0.0.1", "--port", str(port)]
    return argv


def measure(
    configuration: Configuration, opt_ml_root: Path, enforce_eager: bool, log_dir: Path
) -> dict[str, float | str]:
    container = LocalContainer(
        configuration,
        opt_ml_root=opt_ml_root,
        enforce_eager=enforce_eager,
        log_path=log_dir / "coldstart-front.log",
        extra_env={"SERVING_ENGINE_NICE": "0"},
    )
    bare_port = free_port()
    argv = bare_argv(container, bare_port)
    log_dir.mkdir(parents=True, exist_ok=True)
    bare_log = (log_dir / "coldstart-bare.log").open("wb")
    began = time.monotonic()
    container.start()
    bare = subprocess.Popen(
        argv, env=container.environment(), stdout=bare_log, stderr=subprocess.STDOUT
    )
    ready: dict[str, float] = {}
    urls = {"front": f"{container.url}/ping", "bare_vllm": f"http://127.0.0.1:{bare_port}/ping"}
    try:
        with httpx.Client(timeout=2.0) as http:
            while len(ready) < len(urls) and time.monotonic() - began < TIMEOUT_SECONDS:
                for name, url in urls.items():
                    if name in ready:
                        continue
                    try:
                        if http.get(url).status_code == 200:
                            ready[name] = time.monotonic() - began
                    except httpx.TransportError:
                        pass
                time.sleep(0.25)
    finally:
        container.stop()
        bare.terminate()
        try:
            bare.wait(30)
        except subprocess.TimeoutExpired:
            bare.kill()
    return {
        "configuration": configuration.name,
        "enforce_eager": str(enforce_eager),
        "front_s": round(ready.get("front", float("nan")), 1),
        "bare_vllm_s": round(ready.get("bare_vllm", float("nan")), 1),
    }


HELP = "time to the first /ping 200: front and bare vLLM, side by side"


def add_parser(commands: Any) -> None:
    add_local_command(commands, "coldstart", command, HELP)


def command(args: argparse.Namespace) -> int:
    configuration = configuration_of(args)
    result = measure(configuration, args.opt_ml_root.absolute(), args.enforce_eager, args.out_dir)
    report.write_json(args.out_dir / "coldstart.json", result)
    print(
        f"cold start to first /ping 200 ({result['configuration']}, "
        f"enforce_eager={result['enforce_eager']}): front {result['front_s']} s, "
        f"bare vLLM {result['bare_vllm_s']} s"
    )
    return 0
