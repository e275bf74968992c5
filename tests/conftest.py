"""Shared fixtures: the demo model tree and real running containers (front + vLLM CPU build).

The demo tree is the trained pair when it is built (`make test` builds it), the random pair
otherwise; the trained one is what makes acceptance observable.

One container per configuration the session's tests use, started once, all in parallel: a
cold start costs about a minute and a half on two cores. `--backend host` (the default) runs
each as a process group here; `--backend docker` runs the built image (`make image-test`),
so the same test functions check both, and the image's own tests in tests/image run too.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import httpx
import pytest

from bench.container import (
    QUICK_DEMO_ROOT,
    RANDOM_DEMO_ROOT,
    REPO_ROOT,
    TRAINED_DEMO_ROOT,
    DockerContainer,
    HostContainer,
    default_opt_ml_root,
    host_environment,
)
from image_build.build import CPU_IMAGE
from serving.metrics import ENGINE_UP, metric_total
from tests.stalls import WATCH

ROOT = REPO_ROOT
DEMO_ROOT = default_opt_ml_root()
TRAINED = DEMO_ROOT == TRAINED_DEMO_ROOT
LOG_DIR = ROOT / "build" / "test-logs"
# Where the peagle container writes its capture (every request is captured).
CAPTURE_DIR = ROOT / "build" / "test-capture"
LOADING_PROBE = {"messages": [{"role": "user", "content": "Are you up?"}], "max_tokens": 4}
PEAGLE_MAX_CONCURRENT = 8
# How long a vLLM metric may be missing from the front's scrapes before a test fails.
ENGINE_SCRAPE_SECONDS = 60
PEAGLE_CONFIG = {"method": "eagle3", "num_speculative_tokens": 3, "parallel_drafting": True}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--backend",
        choices=["host", "docker"],
        default="host",
        help="run the containers as processes here (host) or as the built image (docker)",
    )
    parser.addoption("--image", default=CPU_IMAGE, help="the image --backend docker runs")


def pytest_sessionstart(session: pytest.Session) -> None:
    WATCH.start()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A failed test says whether the machine held a CPU while it ran (tests/stalls.py)."""
    report = (yield).get_result()
    end = time.monotonic()
    if report.failed and (stalled := WATCH.stalled(end - call.duration, end)):
        report.sections.append(
            ("machine stalls", f"the machine held a CPU for {stalled:.1f} s of this test")
        )


def pytest_terminal_summary(terminalreporter) -> None:
    if stalls := WATCH.stalls:
        longest = max(length for _, length in stalls)
        total = sum(length for _, length in stalls)
        terminalreporter.write_line(
            f"machine stalls: {len(stalls)}, {total:.1f} s in all, the longest "
            f"{longest:.1f} s (a CPU's run queue held while the other ran; tests/stalls.py)"
        )


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    # The image's own tests need the built image and an engine: `make image-test` runs them.
    if collection_path.name == "image" and config.getoption("--backend") != "docker":
        return True
    return None


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
        super().__init__(name, env, log_path=LOG_DIR / f"{name}.log")


class ImageContainer(Probes, DockerContainer):
    """A shared test container on the docker backend: the image, the demo tree mounted."""

    def __init__(self, name: str, env: Mapping[str, str], image: str):
        from image_build.engine import ensure_engine

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
            name, env, image, ensure_engine(), DEMO_ROOT, log_path=LOG_DIR / f"image-{name}.log",
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


def build_demo_pair(root: Path, *flags: str) -> None:
    """`python -m model_data_sources`: builds the pair at `root`, or checks its stamp."""
    command = [sys.executable, "-m", "model_data_sources", *flags, str(root)]
    subprocess.run(command, check=True, cwd=ROOT)


@pytest.fixture(scope="session")
def demo_root() -> Path:
    if not TRAINED:  # the random pair builds in seconds; the trained one is `make trained-model`
        build_demo_pair(RANDOM_DEMO_ROOT)
    return DEMO_ROOT


CONFIGURATIONS = {
    # The main container: P-EAGLE on, a small concurrency limit to reach 429 quickly,
    # SageMaker's stateful sessions on so session headers can be checked, EMF every 2 s,
    # every request captured.
    "peagle": lambda: demo_env(
        SM_VLLM_SPECULATIVE_CONFIG=json.dumps(PEAGLE_CONFIG),
        MAX_CONCURRENT_REQUESTS=str(PEAGLE_MAX_CONCURRENT),
        SAGEMAKER_ENABLE_STATEFUL_SESSIONS="true",
        SERVING_EMF_INTERVAL_SECONDS="2",
        SERVING_CAPTURE_DIR=str(CAPTURE_DIR),
    ),
    # The target alone, for the lossless comparison; JSON logs; a short body timeout (408);
    # vLLM's runtime LoRA routes on, so SageMaker's /adapters routes can be relayed; no EMF.
    "plain": lambda: demo_env(
        SERVING_LOG_FORMAT="json",
        SERVING_BODY_TIMEOUT_SECONDS="3",
        VLLM_ALLOW_RUNTIME_LORA_UPDATING="true",
        SERVING_EMF_INTERVAL_SECONDS="0",
    ),
    # What a newcomer's first `make serve` serves: the quick pair, P-EAGLE at K=3.
    "quick": lambda: host_environment(
        OPT_ML_ROOT=str(QUICK_DEMO_ROOT), SM_VLLM_SPECULATIVE_CONFIG=json.dumps(PEAGLE_CONFIG)
    ),
    # Containers that a test stops: one by SIGTERM, one by killing its engine.
    "drain": lambda: demo_env(SM_VLLM_SPECULATIVE_CONFIG=json.dumps(PEAGLE_CONFIG)),
    # Its front outlives the engine by 10 s (3 by default), longer than the checks made
    # after the kill take (up to 7 s), so they never race its exit.
    "doomed": lambda: demo_env(SERVING_ENGINE_EXIT_SECONDS="10"),
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Only the configurations some collected test asks for are started.
    used = {name for item in items for name in getattr(item, "fixturenames", ())}
    config.stash[USED_CONFIGURATIONS] = [name for name in CONFIGURATIONS if name in used]


USED_CONFIGURATIONS = pytest.StashKey[list[str]]()


@pytest.fixture(scope="session")
def containers(demo_root: Path, request: pytest.FixtureRequest):
    """The shared configurations the tests use, started together, stopped at the end."""
    # Timings are taken by this process: let it, like the fronts, win the CPU from the
    # engines (niced, their sessions' autogroups too), so a slow answer means a slow server
    # and not a starved client.
    with contextlib.suppress(PermissionError):
        os.nice(-5)
    config = request.config
    names = config.stash.get(USED_CONFIGURATIONS, list(CONFIGURATIONS))
    shutil.rmtree(CAPTURE_DIR, ignore_errors=True)
    if "quick" in names:  # `make test` has built it; this only checks its stamp
        build_demo_pair(QUICK_DEMO_ROOT, "--quick")
    if config.getoption("--backend") == "docker":
        image = config.getoption("--image")
        started = {
            name: ImageContainer(name, CONFIGURATIONS[name](), image).start() for name in names
        }
    else:
        started = {name: Container(name, CONFIGURATIONS[name]()).start() for name in names}
    try:
        for container in started.values():
            container.wait_ready()
        yield started
    finally:
        for container in started.values():
            container.stop()


@pytest.fixture(scope="session")
def peagle(containers) -> Container:
    return containers["peagle"]


@pytest.fixture(scope="session")
def plain(containers) -> Container:
    return containers["plain"]


@pytest.fixture(scope="session")
def quick(containers) -> Container:
    return containers["quick"]


@pytest.fixture(scope="session")
def drain(containers) -> Container:
    return containers["drain"]


@pytest.fixture(scope="session")
def doomed(containers) -> Container:
    return containers["doomed"]


@pytest.fixture()
def client(peagle: Container):
    with httpx.Client(base_url=peagle.url, timeout=120) as http:
        yield http
