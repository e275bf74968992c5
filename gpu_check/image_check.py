"""The serving image on one GPU, end to end: `make gpu-check` (python -m gpu_check image).

On a GPU box with the NVIDIA Container Toolkit and `make image` built, it starts the image
three times as SageMaker would (`docker run --gpus all IMAGE serve`, the quick demo pair
mounted), with CUDA graphs and torch.compile on (no enforce-eager) and vLLM's own scheduling
mode (asynchronous for P-EAGLE on a GPU):

1. no speculation, the reference;
2. P-EAGLE at a fixed K;
3. P-EAGLE with a K by batch size schedule that steps through K=3, 2, 1 and 0;

and for each one measures the cold start (`docker run` to the first `/ping` 200), sends the
same greedy prompts at 1, 3 and 12 clients (every schedule boundary is crossed), compares
every answer with the reference's, reads the drafts, acceptance and per-position draft
counts (which K ran) from `/metrics`, and makes a named tool call under the grammar. Last,
vLLM's P-EAGLE Triton kernels of the image itself are held to the reference
(gpu_check.kernels, run inside the image). It prints a Markdown report to paste into an
issue and writes it to --report. With --host it runs this Python's vLLM instead of the
image: on the CPU build (SERVING_TEST_CPU_ASYNC_SCHEDULING=1 puts the same scheduling mode
on), where the check itself is tested; and on a GPU machine without the image, vLLM's CUDA
Python source with its compiled ops shimmed (gpu_check.bundle's run.sh).
"""

from __future__ import annotations

import concurrent.futures
import json
import subprocess
import time
from pathlib import Path
from typing import Any

from gpu_check.outcomes import Outcome, engine_mode, report, spec_metrics, verdict

PROMPTS = [
    "def fibonacci(n):",
    "Write a Python function that reverses a string.",
    "import os\n\ndef list_files(path):",
    "class Stack:\n    def __init__(self):",
    "What does a list comprehension do?",
    "def is_prime(n):",
    "Sort a dictionary by value in Python.",
    "def merge(a, b):",
    "with open('data.txt') as f:",
    "How do I read a JSON file?",
    "def binary_search(items, target):",
    "Explain Python's GIL in one sentence.",
]
LEVELS = (1, 3, 12)  # clients at once: a schedule's ranges below are crossed by these
FIXED_K = 3  # the quick head is trained for 4 positions
SCHEDULE = [[1, 1, 3], [2, 4, 2], [5, 8, 1], [9, 1024, 0]]
MAX_TOKENS = 48
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {
            "type": "object",
            # Every value bounded, so the grammar ends the call whatever a tiny model says.
            "properties": {
                "city": {"enum": ["Paris", "Tokyo", "Lima"]},
                "unit": {"enum": ["C", "F"]},
            },
            "required": ["city", "unit"],
        },
    },
}


def speculative_config(schedule: bool) -> dict[str, Any]:
    config: dict[str, Any] = {"method": "eagle3", "parallel_drafting": True}
    if schedule:
        config["num_speculative_tokens"] = max(k for _, _, k in SCHEDULE)
        config["num_speculative_tokens_per_batch_size"] = SCHEDULE
    else:
        config["num_speculative_tokens"] = FIXED_K
    return config


def chat(http: Any, url: str, prompt: str) -> str:
    body = {
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": MAX_TOKENS,
        "temperature": 0,
    }
    answer = http.post(f"{url}/invocations", json=body, timeout=300)
    answer.raise_for_status()
    return answer.json()["choices"][0]["message"]["content"] or ""


def tool_call(http: Any, url: str) -> str:
    """A named tool call: its arguments held to the schema by the grammar."""
    body = {
        "messages": [{"role": "user", "content": "What is the weather in Lima?"}],
        "tools": [WEATHER_TOOL],
        "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
        "max_tokens": 64,
        "temperature": 0,
    }
    answer = http.post(f"{url}/invocations", json=body, timeout=300)
    if answer.status_code != 200:
        return f"HTTP {answer.status_code}: {answer.text[:200]}"
    calls = answer.json()["choices"][0]["message"].get("tool_calls") or []
    if not calls:
        return "no tool call"
    try:
        arguments = json.loads(calls[0]["function"]["arguments"])
    except ValueError:
        return f"INVALID JSON: {calls[0]['function']['arguments'][:200]!r}"
    valid = (
        isinstance(arguments, dict)
        and set(arguments) == {"city", "unit"}
        and arguments["city"] in ("Paris", "Tokyo", "Lima")
        and arguments["unit"] in ("C", "F")
    )
    return f"{'valid' if valid else 'INVALID'}: {calls[0]['function']['name']}({arguments})"


def run_one(container: Any, outcome: Outcome) -> Outcome:
    import httpx

    began = time.monotonic()
    try:
        container.start()
        outcome.cold_start_seconds = container.wait_ready()
        with httpx.Client() as http:
            for level in LEVELS:
                prompts = PROMPTS[:level]
                with concurrent.futures.ThreadPoolExecutor(level) as pool:
                    texts = pool.map(lambda p: chat(http, container.url, p), prompts)
                    for index, text in enumerate(texts):
                        outcome.answers[(level, index)] = text
            outcome.tool_call = tool_call(http, container.url)
            outcome.metrics = spec_metrics(http.get(f"{container.url}/metrics").text)
        outcome.engine_mode = engine_mode(container.log_text())
    except Exception as error:  # a failed start is a finding: the report says it
        outcome.error = f"{type(error).__name__}: {str(error)[-1500:]}"
        outcome.cold_start_seconds = outcome.cold_start_seconds or time.monotonic() - began
    finally:
        container.stop()
    return outcome


def kernel_check_in_image(docker: str, image: str) -> tuple[int, str]:
    """gpu_check.kernels inside the image, on the image's own vLLM source."""
    package = Path(__file__).resolve().parent
    argv = [
        docker, "run", "--rm", "--gpus", "all", "--network", "none",
        "--volume", f"{package}:/opt/gpu_check/gpu_check:ro", "--env", "PYTHONPATH=/opt/gpu_check",
        "--entrypoint", "bash", image, "-c",
        "python3 -m gpu_check kernels --vllm-source \"$(python3 -c "
        "'import pathlib, vllm; print(pathlib.Path(vllm.__file__).parent.parent)')\"",
    ]  # fmt: skip
    ran = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    return ran.returncode, (ran.stdout + ran.stderr).strip()


def kernel_check_here(gpu: bool) -> tuple[int, str]:
    """gpu_check.kernels on this Python's own vLLM source: on the GPU, or (the CPU build) in
    Triton's interpreter."""
    import sys

    import vllm

    source = str(Path(vllm.__file__).parent.parent)
    argv = [sys.executable, "-m", "gpu_check", "kernels", "--vllm-source", source]
    argv += [] if gpu else ["--interpret", "--cases", "1"]
    ran = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    return ran.returncode, (ran.stdout + ran.stderr).strip()


def has_gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def where(host: bool, gpu: bool, image: str | None) -> str:
    if not host:
        return str(image)
    if gpu:
        import vllm

        return f"vLLM's CUDA Python source at {Path(vllm.__file__).parent} (gpu_check.bundle)"
    return "the venv"


def main(
    image: str | None,
    opt_ml_root: Path,
    report_path: Path,
    host: bool,
    enforce_eager: bool,
    skip_kernels: bool = False,
) -> int:
    from harness.docker import DockerContainer
    from harness.host import HostContainer, host_environment

    outcomes = []
    docker = None
    gpu = host and has_gpu()
    if not host:
        from image_build.docker_daemon import ensure_engine

        docker = ensure_engine()
    for name, config in (
        ("none", None),
        (f"P-EAGLE K={FIXED_K}", speculative_config(schedule=False)),
        (f"P-EAGLE schedule {SCHEDULE}", speculative_config(schedule=True)),
    ):
        settings = {"OPT_ML_ROOT": str(opt_ml_root), "SM_VLLM_MAX_NUM_SEQS": "16"}
        if config is not None:
            if gpu:  # the drafter picks its own attention backend unless told
                from gpu_check.compiled_ops_shims import DRAFTER_SETTINGS

                config = {**config, **DRAFTER_SETTINGS}
            settings["SM_VLLM_SPECULATIVE_CONFIG"] = json.dumps(config)
        log_path = report_path.parent / f"gpu-check-{len(outcomes)}.log"
        if host:
            # On the CPU build, the test switch keeps vLLM's asynchronous scheduling on, as a
            # GPU runs P-EAGLE; on a GPU (gpu_check.bundle's Python path) vLLM's own choice.
            switch = {} if gpu else {"SERVING_TEST_CPU_ASYNC_SCHEDULING": "1"}
            env = host_environment(enforce_eager=enforce_eager, **switch, **settings)
            container = HostContainer(f"gpu-check-{len(outcomes)}", env, log_path=log_path)
        else:
            env = host_environment(enforce_eager=enforce_eager, **settings)
            run_args = ("--gpus", "all", "--shm-size", "1g")
            container = DockerContainer(
                f"gpu-check-{len(outcomes)}", env, image, docker, opt_ml_root,
                log_path=log_path, run_args=run_args,
            )  # fmt: skip
        print(f"gpu check: {name} ...", flush=True)
        outcomes.append(run_one(container, Outcome(name, config)))
    if skip_kernels:
        kernels_exit, kernels = 0, "The kernel check was skipped (--skip-kernels)."
    elif host:
        kernels_exit, kernels = kernel_check_here(gpu)
    else:
        kernels_exit, kernels = kernel_check_in_image(docker, image)
    passed = verdict(outcomes, kernels_exit)
    header = (
        f"## GPU check: {'PASS' if passed else 'FAIL'} "
        f"({where(host, gpu, image)}, {opt_ml_root.name}, "
        f"{'eager' if enforce_eager else 'compiled, CUDA graphs where there is a GPU'}, "
        f"{time.strftime('%Y-%m-%d')})"
    )
    text = report(outcomes, kernels, header)
    report_path.parent.mkdir(parents=True, exist_ok=True)
    report_path.write_text(text + "\n")
    print(text)
    return 0 if passed else 1
