"""The built image, run the way SageMaker runs it (`make image-test`, `--backend docker`):
`docker run IMAGE serve`, the trained pair mounted read-only at /opt/ml, P-EAGLE on.

The shared `peagle` container also runs tests/serving/test_app.py, and `doomed` the engine-death
test of tests/serving/test_lifecycle.py: the same test functions as the host suite. What only an
image has is checked here: PID 1, `docker stop`, the HEALTHCHECK, shared memory, the network.
"""

from __future__ import annotations

import json
import shutil
import threading
import time

import httpx
import pytest

from harness.docker import DockerContainer
from serving import exit_codes
from tests.support.containers import (
    DEMO_ROOT,
    LOG_DIR,
    PEAGLE_CONFIG,
    TRAINED,
    ImageContainer,
    demo_env,
)
from tests.support.image_runs import image_json, run_image
from tests.support.interrupts import Background, interrupted
from vllm_patches import patches, state

GREEDY_CHAT = {
    "messages": [{"role": "user", "content": "def fibonacci(n):"}],
    "max_tokens": 32,
    "temperature": 0,
}
# Long enough to be in flight when `docker stop` lands, short enough for the 20 s drain.
LONG_STREAM = {
    "prompt": "def parse(text):",
    "max_tokens": 600,
    "ignore_eos": True,
    "temperature": 0,
    "stream": True,
}
# Probes from inside a container with no network: the image has Python, not curl.
PING_SCRIPT = """
import sys, urllib.request, urllib.error
try:
    print(urllib.request.urlopen("http://127.0.0.1:8080/ping", timeout=2).status)
except urllib.error.HTTPError as error:
    print(error.code)
except OSError:
    print(0)
"""
CHAT_SCRIPT = """
import json, sys, urllib.request
request = urllib.request.Request(
    "http://127.0.0.1:8080/invocations", data=sys.argv[1].encode(),
    headers={"Content-Type": "application/json"},
)
print(urllib.request.urlopen(request, timeout=60).read().decode())
"""


@pytest.fixture(scope="module")
def docker(peagle) -> str:
    return peagle.docker


def test_p_eagle_drafts_are_accepted_in_the_image(client: httpx.Client, peagle):
    assert TRAINED, "make image-test runs the trained pair (make trained-model)"
    before = peagle.metric("vllm:spec_decode_num_accepted_tokens_total")
    answer = client.post("/invocations", json=GREEDY_CHAT)
    assert answer.status_code == 200, answer.text
    deadline = time.monotonic() + 10
    while peagle.metric("vllm:spec_decode_num_accepted_tokens_total") <= before:
        assert time.monotonic() < deadline, "no draft token was accepted"
        time.sleep(0.1)


def test_healthcheck_reaches_healthy_on_the_bound_port(peagle):
    # The shared container binds SAGEMAKER_BIND_TO_PORT (not 8080) on the host network; the
    # image's HEALTHCHECK must follow it. Its interval is shortened for the test (run_args).
    assert peagle.port != 8080
    deadline = time.monotonic() + 60
    while (status := peagle.inspect("{{.State.Health.Status}}")) != "healthy":
        assert time.monotonic() < deadline, f"health is {status!r}"
        time.sleep(1)


def test_tini_is_pid_1_and_reaps_what_ends(peagle):
    assert peagle.exec("cat", "/proc/1/comm").stdout.strip() == "tini"
    assert peagle.zombies() == []


def test_the_image_holds_the_front_only(docker, image):
    found = run_image(
        docker, image, "python3", "-c",
        "import importlib.util as u; print([bool(u.find_spec(m)) for m in "
        "('serving.server', 'bench', 'model_data_sources')])",
    )  # fmt: skip
    assert found.stdout.strip() == "[True, False, False]", found.stderr


def test_the_images_vllm_carries_our_fixes(docker, image):
    # vllm_patches/ applied at build time (the patches themselves are not in the image): each
    # patched file of the image's vLLM, read here, holds its patch once.
    paths = sorted({patch.path for patch in patches()})
    texts = image_json(
        docker, image,
        "import json, pathlib, sys, vllm; root = pathlib.Path(vllm.__file__).parent; "
        "print(json.dumps({path: (root / path).read_text() for path in sys.argv[1:]}))",
        *paths,
    )  # fmt: skip
    assert {patch.name: state(patch, texts[patch.path]) for patch in patches()} == {
        patch.name: "applied" for patch in patches()
    }


def test_the_images_packages_are_the_lock(docker, image):
    """The CPU image's Python holds exactly the lock's bootstrap, torch and engine layers
    (deps/), and our own package: what the host venv was tested with."""
    import deps.__main__ as deps

    distributions = image_json(
        docker, image,
        "import importlib.metadata as m, json; "
        "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))",
    )  # fmt: skip
    installed = {deps.canonicalize_name(name): version for name, version in distributions.items()}
    assert installed.pop("sagemaker-vllm-peagle", None), "our package is not in the image"
    wanted = deps.locked(("bootstrap", "torch", "engine"))
    assert deps.differences(installed, wanted) == []


def test_other_commands_pass_through(docker, image):
    ran = run_image(docker, image, "bash", "-c", "echo $((6 * 7))")
    assert (ran.returncode, ran.stdout) == (0, "42\n")


def test_check_with_a_broken_head_exits_2_in_seconds(docker, image, demo_root, tmp_path):
    head = tmp_path / "eagle"
    head.mkdir()
    shutil.copy(demo_root / "additional-model-data-sources/eagle/config.json", head)
    began = time.monotonic()
    options = (
        "--volume", f"{demo_root / 'model'}:/opt/ml/model:ro",
        "--volume", f"{head}:/opt/ml/additional-model-data-sources/eagle:ro",
        "--env", f"SM_VLLM_SPECULATIVE_CONFIG={json.dumps(PEAGLE_CONFIG)}",
    )  # fmt: skip
    checked = run_image(docker, image, "check", options=options)
    assert checked.returncode == exit_codes.BAD_CONFIG, checked.stdout + checked.stderr
    assert time.monotonic() - began < 30
    output = checked.stdout + checked.stderr
    assert "/opt/ml/additional-model-data-sources/eagle" in output
    assert "safetensors" in output
    assert "Traceback" not in output


def test_too_little_shared_memory_stops_at_once_with_the_fix(docker, image, demo_root):
    began = time.monotonic()
    options = ("--shm-size", "64m", "--volume", f"{demo_root / 'model'}:/opt/ml/model:ro")
    served = run_image(docker, image, "serve", options=options)
    output = served.stdout + served.stderr
    assert served.returncode == exit_codes.BAD_CONFIG, output
    assert time.monotonic() - began < 30
    assert "/dev/shm has 6" in output and "--shm-size" in output
    assert "starting engine" not in output


def stop_during_a_stream(container, outcome: dict) -> str | None:
    """`docker stop` while a stream is generating; None when the stream was in flight at
    SIGTERM (the front's log says what it drained), else why not."""
    if container.started_at is None:
        container.start()
        container.wait_ready()
    events: list[str] = []
    generating = threading.Event()

    def stream() -> None:
        url = f"{container.url}/invocations"
        with httpx.stream("POST", url, json=LONG_STREAM, timeout=60) as answer:
            for line in answer.iter_lines():
                if line.startswith("data: "):
                    events.append(line)
                    generating.set()

    reader = Background(stream)
    assert generating.wait(60), "the stream never started"
    began = time.monotonic()
    code = container.stop()  # docker stop: SIGTERM, SIGKILL 30 s later
    stopped_after = time.monotonic() - began
    reader.join(10)
    reader.value()
    if "draining: 0 request(s) in flight" in container.log_text():
        return "the stream had ended before docker stop"
    assert "draining: 1 request(s) in flight" in container.log_text(), container.tail()
    outcome.update(events=events, code=code, stopped_after=stopped_after)
    return None


def test_docker_stop_finishes_a_stream_and_exits_0(drain, image):
    outcome: dict = {}
    containers = iter([drain])

    def attempt() -> str | None:
        # The shared container first; a foiled attempt has stopped it, so then one of its own.
        container = next(containers, None) or ImageContainer(
            "drain-again", demo_env(SM_VLLM_SPECULATIVE_CONFIG=json.dumps(PEAGLE_CONFIG)), image
        )
        try:
            return stop_during_a_stream(container, outcome)
        finally:
            container.stop()

    interrupted("docker stop during a stream", attempt)
    assert outcome["events"][-1] == "data: [DONE]"
    assert outcome["code"] == 0
    assert outcome["stopped_after"] < 25, f"docker stop took {outcome['stopped_after']:.1f} s"


# JSON settings as users paste them from docs: pretty-printed, tabs and spaces, newlines, a
# trailing newline; an object, and a list for a flag that takes several values.
PRETTY_SPECULATIVE_CONFIG = json.dumps(PEAGLE_CONFIG, indent="\t") + "\n"
PRETTY_GENERATION_CONFIG = '{\n    "repetition_penalty": 1.0,\n\t"top_k": -1\n}\n'
PRETTY_NAMES = '[\n  "demo",\n  "my-endpoint"\n]\n'
# The engine's command line, as its process has it: one argument a line.
ENGINE_ARGV = """
import os
for pid in filter(str.isdigit, os.listdir("/proc")):
    argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\\0")
    if b"vllm.entrypoints.openai.api_server" in argv:
        print(__import__("json").dumps([part.decode() for part in argv if part]))
        break
"""
MODELS_SCRIPT = """
import urllib.request
print(urllib.request.urlopen("http://127.0.0.1:8080/v1/models", timeout=10).read().decode())
"""


@pytest.fixture(scope="module")
def isolated(image, docker):
    """A container with no network at all, started with its JSON settings pretty-printed."""
    env = demo_env(
        SM_VLLM_SPECULATIVE_CONFIG=PRETTY_SPECULATIVE_CONFIG,
        SM_VLLM_OVERRIDE_GENERATION_CONFIG=PRETTY_GENERATION_CONFIG,
        SM_VLLM_SERVED_MODEL_NAME=PRETTY_NAMES,
    )
    container = DockerContainer(
        "isolated", env, image, docker, DEMO_ROOT,
        log_path=LOG_DIR / "image-isolated.log", network="none",
    )  # fmt: skip
    with container.start():
        deadline = time.monotonic() + 600
        while (status := container.exec("python3", "-c", PING_SCRIPT).stdout.strip()) != "200":
            assert container.exit_code() is None, container.tail()
            assert time.monotonic() < deadline, f"/ping still {status}: {container.tail()}"
            time.sleep(1)
        yield container


def test_it_starts_and_serves_with_no_network_at_all(isolated):
    answer = isolated.exec("python3", "-c", CHAT_SCRIPT, json.dumps(GREEDY_CHAT))
    assert answer.returncode == 0, answer.stderr
    assert json.loads(answer.stdout)["choices"][0]["message"]["content"]
    assert isolated.exec("cat", "/sys/class/net/lo/operstate").returncode == 0
    assert isolated.exec("ls", "/sys/class/net").stdout.split() == ["lo"]


def test_pretty_printed_json_settings_reach_vllm_intact(isolated):
    """SageMaker passes each variable whole; every value reaches vLLM as the JSON it was."""
    listed = isolated.exec("python3", "-c", ENGINE_ARGV)
    assert listed.returncode == 0, listed.stderr
    argv = json.loads(listed.stdout)

    def value(flag: str) -> str:
        return argv[argv.index(flag) + 1]

    spec = json.loads(value("--speculative-config"))
    assert {key: spec[key] for key in PEAGLE_CONFIG} == PEAGLE_CONFIG
    generation = json.loads(value("--override-generation-config"))
    assert generation == json.loads(PRETTY_GENERATION_CONFIG)
    names = argv[argv.index("--served-model-name") + 1 :][:2]
    assert names == ["demo", "my-endpoint"]
    models = isolated.exec("python3", "-c", MODELS_SCRIPT)
    assert [model["id"] for model in json.loads(models.stdout)["data"]][:1] == ["demo"]


# Each process of the engine's session: its nice value and its autogroup's ("-" without one).
ENGINE_PRIORITIES = """
import os
def read(pid, name):
    try:
        return open(f"/proc/{pid}/{name}").read()
    except OSError:
        return ""
def session(stat):
    return stat[stat.rindex(")") + 2 :].split()[3] if stat else None
pids = [pid for pid in os.listdir("/proc") if pid.isdigit()]
engine = next(pid for pid in pids if "vllm.entrypoints" in read(pid, "cmdline"))
for pid in pids:
    stat = read(pid, "stat")
    if session(stat) == engine:
        group = read(pid, "autogroup").split()
        print(stat[stat.rindex(")") + 2 :].split()[16], group[-1] if group else "-")
"""


def test_the_engine_session_yields_the_cpu_to_the_front(peagle):
    listed = peagle.exec("python3", "-c", ENGINE_PRIORITIES)
    assert listed.returncode == 0, listed.stderr
    priorities = {tuple(line.split()) for line in listed.stdout.splitlines()}
    # Its processes at nice 10, and so is their session's autogroup where the kernel has one
    # (the image's user may raise it; tests/serving/test_engine.py says why it matters).
    assert priorities in ({("10", "10")}, {("10", "-")}), priorities


# The kernel's limit on autogroup changes, made hot just before the engine's: as when several
# containers start their engines together on one host (CI saw one engine left at nice 0).
CONTENDED_AUTOGROUP = """
import asyncio, subprocess
from pathlib import Path
from serving.engine import lower_priority
child = subprocess.Popen(["sleep", "30"], start_new_session=True)
Path("/proc/self/autogroup").write_text("5")
asyncio.run(lower_priority(child.pid, 10))
print(Path(f"/proc/{child.pid}/autogroup").read_text().split()[-1])
child.kill()
"""


def test_engines_started_together_all_yield_the_cpu(peagle):
    if peagle.exec("test", "-e", "/proc/self/autogroup").returncode != 0:
        pytest.skip("this kernel has no autogroup")
    niced = peagle.exec("python3", "-c", CONTENDED_AUTOGROUP)
    assert niced.returncode == 0, niced.stderr
    assert niced.stdout.split() == ["10"]
