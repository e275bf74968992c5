"""Shared fixtures: the demo model tree and real running containers (front + vLLM CPU build),
the containers and their probes from tests/support/containers.py.

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
import time
from pathlib import Path

import httpx
import pytest

from harness.host import host_environment
from harness.locations import QUICK_DEMO_ROOT, RANDOM_DEMO_ROOT, REAL_ROOT
from image_build.build import CPU_IMAGE, CPU_TRAINING_IMAGE, STANDIN_TRAINING_IMAGE
from tests.support.containers import (
    CAPTURE_DIR,
    DEMO_ROOT,
    PEAGLE_CONFIG,
    PEAGLE_MAX_CONCURRENT,
    REAL_CONFIG,
    SCHEDULE_MAX_NUM_SEQS,
    SCHEDULED_CONFIG,
    TRAINED,
    Container,
    ImageContainer,
    build_demo_pair,
    demo_env,
)
from tests.support.stalls import WATCH


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--backend",
        choices=["host", "docker"],
        default="host",
        help="run the containers as processes here (host) or as the built image (docker)",
    )
    parser.addoption("--image", default=CPU_IMAGE, help="the image --backend docker runs")
    parser.addoption(
        "--training-image", default=CPU_TRAINING_IMAGE, help="the training image tests/image runs"
    )
    parser.addoption(
        "--standin-image", default=None, help="the GPU image on the stand-in base (tests/standin)"
    )
    parser.addoption(
        "--standin-training-image", default=STANDIN_TRAINING_IMAGE, help="its training image"
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "engine: needs an engine, a demo pair or an image (make unit-test: the rest)"
    )


def pytest_sessionstart(session: pytest.Session) -> None:
    WATCH.start()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A failed test says whether the machine held a CPU while it ran
    (tests/support/stalls.py)."""
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
            f"machine stalls: {len(stalls)}, {total:.1f} s in all, the longest {longest:.1f} s "
            "(a CPU's run queue held while the other ran; tests/support/stalls.py)"
        )


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    # The image's own tests need the built image and an engine: `make image-test` runs them.
    if collection_path.name == "image" and config.getoption("--backend") != "docker":
        return True
    # The GPU image's stand-in tests need that image: `make image-standin-test` runs them.
    if collection_path.name == "standin" and config.getoption("--standin-image") is None:
        return True
    return None


@pytest.fixture(scope="session")
def demo_root() -> Path:
    if not TRAINED:  # the random pair builds in seconds; the trained one is `make trained-model`
        build_demo_pair(RANDOM_DEMO_ROOT)
    return DEMO_ROOT


# What deploy puts in a model's environment for endpoint qwen-peagle, deployed at VERSION.
EMF_DIMENSIONS = {
    "SERVING_ENDPOINT_NAME": "qwen-peagle",
    "SERVING_VARIANT_NAME": "AllTraffic",
    "SERVING_HEAD_VERSION": "20250601120000",
}

TRANSFORM_JOB_ENV = {
    "SAGEMAKER_BATCH": "True",
    "SAGEMAKER_BATCH_STRATEGY": "MULTI_RECORD",
    "SAGEMAKER_MAX_CONCURRENT_TRANSFORMS": "3",
    "SAGEMAKER_MAX_PAYLOAD_IN_MB": "20",
}

CONFIGURATIONS = {
    # The main container: P-EAGLE on, a small concurrency limit to reach 429 quickly,
    # SageMaker's stateful sessions on so session headers can be checked, EMF every 2 s with
    # the dimensions deploy sets, every request captured.
    "peagle": lambda: demo_env(
        SM_VLLM_SPECULATIVE_CONFIG=json.dumps(PEAGLE_CONFIG),
        MAX_CONCURRENT_REQUESTS=str(PEAGLE_MAX_CONCURRENT),
        SAGEMAKER_ENABLE_STATEFUL_SESSIONS="true",
        SERVING_EMF_INTERVAL_SECONDS="2",
        **EMF_DIMENSIONS,
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
    # What `make serve` serves: the real pair (SmolLM2-135M-Instruct, its shipped P-EAGLE head)
    # in the dtype host_environment picks for this CPU, as the Makefile does.
    "real": lambda: host_environment(
        OPT_ML_ROOT=str(REAL_ROOT), SM_VLLM_SPECULATIVE_CONFIG=json.dumps(REAL_CONFIG)
    ),
    # P-EAGLE with a K for each batch size, from K=7 alone down to no drafts at 5 or more,
    # in a Batch Transform job's environment (the variables the service sets for one).
    "scheduled": lambda: demo_env(
        SM_VLLM_SPECULATIVE_CONFIG=json.dumps(SCHEDULED_CONFIG),
        SM_VLLM_MAX_NUM_SEQS=str(SCHEDULE_MAX_NUM_SEQS),
        **TRANSFORM_JOB_ENV,
    ),
    # The same schedule under the GPU's scheduling mode: asynchronous scheduling kept on
    # on the CPU by a test-only switch (harness/site/cpu_async_scheduling.py).
    "asynchronous": lambda: demo_env(
        SM_VLLM_SPECULATIVE_CONFIG=json.dumps(SCHEDULED_CONFIG),
        SM_VLLM_MAX_NUM_SEQS=str(SCHEDULE_MAX_NUM_SEQS),
        SERVING_TEST_CPU_ASYNC_SCHEDULING="1",
    ),
    # Containers that a test stops: one by SIGTERM, one by killing its engine.
    "drain": lambda: demo_env(SM_VLLM_SPECULATIVE_CONFIG=json.dumps(PEAGLE_CONFIG)),
    # Its front outlives the engine by 10 s (3 by default), longer than the checks made
    # after the kill take (up to 7 s), so they never race its exit; no restart, so the
    # engine's death ends it (SERVING_ENGINE_RESTARTS=0: exit at once, as before restarts).
    "doomed": lambda: demo_env(SERVING_ENGINE_EXIT_SECONDS="10", SERVING_ENGINE_RESTARTS="0"),
}


# Fixtures that start an engine, build or copy a demo pair, or run an image: a test that
# asks for one, itself or through another fixture, is an `engine` test. A module whose
# tests start engines of their own says so with `pytestmark = pytest.mark.engine`.
ENGINE_FIXTURES = {*CONFIGURATIONS, "containers", "demo_root", "training_image", "docker"}


def pytest_itemcollected(item: pytest.Item) -> None:
    # Marked as it is collected, so that `-m "not engine"` (make unit-test) deselects it.
    if ENGINE_FIXTURES.intersection(getattr(item, "fixturenames", ())):
        item.add_marker(pytest.mark.engine)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Only the configurations some selected test asks for are started (last, after
    # --deselect and -k have taken theirs out).
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
    if "real" in names:  # the same: `make test` has built it (make real-model)
        build_demo_pair(REAL_ROOT, module="model_data_sources.smollm2")
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


def container_fixture(name: str):
    """The session fixture named NAME: the container of that configuration."""

    @pytest.fixture(scope="session", name=name)
    def fixture(containers) -> Container:
        return containers[name]

    return fixture


# One fixture a configuration (peagle, plain, quick, real, scheduled, ...), each the
# container `containers` started for it.
globals().update({name: container_fixture(name) for name in CONFIGURATIONS})


@pytest.fixture(scope="session")
def training_image(request: pytest.FixtureRequest) -> str:
    return request.config.getoption("--training-image")


@pytest.fixture()
def client(peagle: Container):
    with httpx.Client(base_url=peagle.url, timeout=120) as http:
        yield http
