"""The demo tree the suite serves and its shared containers, the same test functions on both
backends: `Container` runs `entrypoint.sh serve` here (harness.host), `ImageContainer` the built
image (harness.docker). Both carry the probes the tests read off them. tests/conftest.py
starts one per configuration the session's tests use.

The demo tree is the trained pair when it is built (`make test` builds it), the random pair
otherwise; the trained one is what makes acceptance observable.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import httpx

from harness.configurations import speculative_config
from harness.cores import next_core
from harness.docker import DockerContainer
from harness.host import HostContainer, host_environment
from harness.locations import REPO_ROOT, TRAINED_DEMO_ROOT, default_opt_ml_root
from serving.metrics import ENGINE_UP, metric_total
from tests.support.stalls import WATCH

DEMO_ROOT = default_opt_ml_root()
TRAINED = DEMO_ROOT == TRAINED_DEMO_ROOT
LOG_DIR = REPO_ROOT / "build" / "test-logs"
# Where the peagle container writes its capture (every request is captured).
CAPTURE_DIR = REPO_ROOT / "build" / "test-capture"
LOADING_PROBE = {"messages": [{"role": "user", "content": "Are you up?"}], "max_tokens": 4}
PEAGLE_MAX_CONCURRENT = 8
# How long a vLLM metric may be missing from the front's scrapes before a test fails.
ENGINE_SCRAPE_SECONDS = 60
PEAGLE_CONFIG = speculative_config("peagle:3")
# The real pair's P-EAGLE head at the K its manifest records a held-out figure for (make
# serve's `real` schedule, harness.configurations, drafts K=3 for a request alone).
REAL_K = 5
REAL_CONFIG = speculative_config(f"peagle:{REAL_K}")
# K by batch size (num_speculative_tokens_per_batch_size): the largest K, one in between, K=1 (the
# proposer's one-slot path) and no drafts, each for a range
# tests/serving/test_speculation_schedule.py moves the batch size across.
SCHEDULE_MAX_NUM_SEQS = 16
SCHEDULED_CONFIG = speculative_config("peagle:7@1-1/3@2-2/1@3-4/0@5-16")


class Probes:
    """What the tests read off a shared container besides its answers: what /invocations
    answered while the model was loading, and metrics."""

    loading_invocation: tuple[int, dict] | None = None
    url: str

    def on_startup_ping(self, http: httpx.Client, status: int) -> None:
        if status == 503 and self.loading_invocation is None:
            answer = http.post(f"{self.url}/invocations", json=LOADING_PROBE)
            self.loading_invocation = (answer.status_code, answer.json())

    def ping(self) -> int:
        """/ping's status, checked to come within SageMaker's 2 s of the machine running."""
        began = time.monotonic()
        status = httpx.get(f"{self.url}/ping", timeout=60).status_code
        assert WATCH.since(began) < 2.0, f"{self.name}: /ping took over 2 s"
        return status

    def metric(
        self,
        name: str,
        client: httpx.Client | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> float:
        """Sum of a metric's samples on the front's /metrics (those with `labels`, if given).

        A scrape without the engine's part (`serving_engine_metrics_up` 0: vLLM did not answer
        the front within 5 s) would read a vLLM metric as 0, so it is scraped again: a busy
        vLLM API server can be slow to answer; a vLLM metric missing for a minute fails."""
        deadline = time.monotonic() + ENGINE_SCRAPE_SECONDS
        while True:
            text = (client or httpx).get(f"{self.url}/metrics", timeout=30).text
            if not name.startswith("vllm:") or metric_total(text, ENGINE_UP) == 1:
                break
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{self.name}: the front's /metrics carried no engine metrics for "
                    f"{ENGINE_SCRAPE_SECONDS} s, so {name} is unknown (vLLM not ready, or its "
                    "/metrics slower than the front's timeout)"
                )
            time.sleep(0.2)
        return metric_total(text, name, labels)


class Container(Probes, HostContainer):
    """A shared test container on the host backend, its log in build/test-logs."""

    def __init__(self, name: str, env: Mapping[str, str]):
        super().__init__(name, next_core(env), log_path=LOG_DIR / f"{name}.log")


class ImageContainer(Probes, DockerContainer):
    """A shared test container on the docker backend: the image, the demo tree mounted."""

    def __init__(self, name: str, env: Mapping[str, str], image: str):
        from image_build.docker_daemon import ensure_engine

        # Docker checks health every 2 s instead of the image's 30 s, so a test sees it. A
        # container is a CPU group of its own that weighs as much as this whole test session:
        # a tenth of that, as the engines' nice 10 is on the host backend, so the tests, which
        # stand in for clients on other machines, are not kept from running while vLLM works.
        run_args = ("--shm-size", "1g", "--health-interval", "2s", "--cpu-shares", "110")
        if "SERVING_CAPTURE_DIR" in env:
            # The same path inside, writable by the image's user, so tests read the capture.
            CAPTURE_DIR.mkdir(parents=True, exist_ok=True)
            CAPTURE_DIR.chmod(0o777)
            run_args += ("--volume", f"{CAPTURE_DIR}:{CAPTURE_DIR}")
        super().__init__(
            name, next_core(env), image, ensure_engine(), DEMO_ROOT,
            log_path=LOG_DIR / f"image-{name}.log",
            run_args=run_args,
        )  # fmt: skip


def demo_env(**overrides: str) -> dict[str, str]:
    """The runner's environment without container settings, the demo tree and `overrides`."""
    return host_environment(OPT_ML_ROOT=str(DEMO_ROOT), **overrides)


def serve_until_exit(env: Mapping[str, str]) -> subprocess.CompletedProcess:
    """`python -m serving serve` with `env`, for a start-up that must fail before vLLM."""
    return subprocess.run(
        [sys.executable, "-m", "serving", "serve"],
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=60,
    )


def build_demo_pair(root: Path, *flags: str, module: str = "model_data_sources") -> None:
    """`python -m model_data_sources`: builds the pair at `root`, or checks its stamp."""
    command = [sys.executable, "-m", module, *flags, str(root)]
    subprocess.run(command, check=True, cwd=REPO_ROOT)
