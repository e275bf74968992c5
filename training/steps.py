"""The job's log lines and the steps it runs as processes of their own."""

from __future__ import annotations

import subprocess


def log(message: str) -> None:
    print(message, flush=True)


def metric(name: str, value: float) -> None:
    """One line a MetricDefinitions regex reads: `peagle_<name>=<value>`."""
    log(f"peagle_{name}={value:.6g}")


def run_step(argv: list[str], what: str) -> None:
    """A step as its own process: speculators' CLI, vLLM, or the trainer under the CPU shims."""
    log(f"{what}: {' '.join(argv)}")
    finished = subprocess.run(argv, check=False)
    if finished.returncode != 0:
        raise RuntimeError(
            f"{what} failed with exit code {finished.returncode}; see the log above."
        )
