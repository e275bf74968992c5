"""`make gpu-bundle` (`python -m gpu_check bundle`): one folder that lets any Linux machine
with an NVIDIA GPU, Python 3.12, torch >= 2.11 and Triton, no network and no vLLM installed,
run the product on vLLM's CUDA Python path: `python3 -m gpu_check image --host` (the
front and vLLM's server, P-EAGLE fixed and scheduled, compiled and eager), checked and
reported as `make gpu-check` reports the image.

What it holds (build/gpu-bundle/):
- `python-path.tar.xz`, unpacked there into two folders for PYTHONPATH:
  - `src/`: the CUDA wheel's `vllm/` (its .py files, gpu_check.vllm_source) with every
    vllm_patches module applied, less PRUNED; `vllm-<version>.dist-info`, because vLLM's
    platform detection reads the `vllm` distribution's version; this project's dist-info,
    for the front's vLLM plugin (an entry point); and a `sitecustomize.py` that installs
    gpu_check.compiled_ops_shims in every process vLLM starts;
  - `site/`: what such a machine lacks (WHEELS, each at the lock's version,
    deps/engine.lock), installed here by pip for CPython 3.12 on manylinux x86_64;
- `run.sh`: the command, run from the repository's root there.

It travels beside the repository (the device tool's `carry`), and the two together must stay
under 64 MiB (the repository's files are about 47 MiB): the builder says so when they do not.
One xz archive of both folders is about 7 MB smaller than the wheels and the source apart.
"""

from __future__ import annotations

import lzma
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from deps.__main__ import read as locked_versions
from deps.pins import VLLM_VERSION

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "build" / "gpu-bundle"
# What the device tool takes, the repository's files and the bundle together.
LIMIT_BYTES = 64 * 1024 * 1024
PYTHON = "3.12"
PLATFORMS = (
    "manylinux_2_39_x86_64", "manylinux_2_35_x86_64", "manylinux_2_34_x86_64",
    "manylinux_2_31_x86_64", "manylinux_2_28_x86_64", "manylinux_2_27_x86_64",
    "manylinux_2_26_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
    "manylinux_2_5_x86_64", "manylinux1_x86_64",
)  # fmt: skip
# What vLLM's server and the front need on this path that a bare torch machine lacks (its
# packages: the device tool's KINDS.md): what importing them there pulled in (a venv holding
# only those packages; tests/gpu_check/test_bundle.py imports them so again), and what they
# import later, when the server builds its app (SageMaker's standards, jmespath) or on a
# request (websockets, setproctitle, the server's instrumentator, jiter, blake3).
WHEELS = (
    "annotated-types", "apache-tvm-ffi", "blake3", "cachetools", "cbor2", "fastapi", "httpx2",
    "jiter", "jmespath", "llguidance", "model-hosting-container-standards", "msgspec",
    "openai", "oss-harmony", "partial-json-parser",
    "prometheus-fastapi-instrumentator", "pybase64", "pydantic", "pydantic-core",
    "pydantic-settings", "python-dotenv", "pyzmq", "setproctitle", "sniffio", "starlette",
    "typing-inspection", "uvicorn", "watchfiles", "websockets", "xgrammar",
)  # fmt: skip
# Parts of vLLM's source no Llama with TRITON_ATTN reaches: other attention kernels, other
# models' layers, the benchmark CLI.
PRUNED = (
    "third_party/fmha_sm100", "third_party/tml_fa4", "third_party/flash_linear_attention",
    "third_party/deep_gemm", "third_party/flashmla", "benchmarks",
)  # fmt: skip
ARCHIVE = "python-path.tar.xz"
SITECUSTOMIZE = '''"""gpu_check.bundle's: vLLM's compiled ops replaced, in every process."""
from gpu_check import compiled_ops_shims

compiled_ops_shims.install()
'''
ENTRY_POINTS = """[vllm.general_plugins]
parser_failures = serving.parser_failures:register
"""


class BundleError(Exception):
    """The bundle could not be made; the message says why and what to do."""


def install_wheels(into: Path, names: tuple[str, ...] = WHEELS) -> None:
    """Each name at the lock's version, installed into `into` as pip installs it for
    CPython 3.12 on manylinux x86_64 (wheels only, from the index)."""
    versions = locked_versions("engine")
    if missing := [name for name in names if name not in versions]:
        raise BundleError(f"deps/engine.lock holds no version of {missing}; lock them first")
    platforms = [argument for platform in PLATFORMS for argument in ("--platform", platform)]
    argv = [
        sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--only-binary=:all:",
        "--no-compile", "--python-version", PYTHON, "--implementation", "cp", *platforms,
        "--target", str(into), *(f"{name}=={versions[name]}" for name in names),
    ]  # fmt: skip
    ran = subprocess.run(argv, capture_output=True, text=True)
    if ran.returncode != 0:
        raise BundleError(f"pip could not install the wheels: {ran.stderr.strip()[-800:]}")
    shutil.rmtree(into / "bin", ignore_errors=True)  # console scripts: not used there


def patched_source(cuda_source: Path, into: Path) -> list[str]:
    """The CUDA wheel's vllm/ copied to `into` with every patch applied; the patches' lines."""
    from vllm_patches import apply_all

    shutil.copytree(cuda_source / "vllm", into / "vllm", dirs_exist_ok=True)
    for part in PRUNED:
        shutil.rmtree(into / "vllm" / part)
    return apply_all(into / "vllm")


def dist_info(into: Path, name: str, version: str, entry_points: str = "") -> None:
    folder = into / f"{name.replace('-', '_')}-{version}.dist-info"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    if entry_points:
        (folder / "entry_points.txt").write_text(entry_points)


def source_tree(cuda_source: Path, into: Path) -> list[str]:
    """Everything that goes on PYTHONPATH there, less the wheels and the repository."""
    lines = patched_source(cuda_source, into)
    dist_info(into, "vllm", VLLM_VERSION)
    dist_info(into, "sagemaker-vllm-peagle", "0.1.0", ENTRY_POINTS)
    (into / "sitecustomize.py").write_text(SITECUSTOMIZE)
    return lines


def archive(folders: list[Path], out: Path) -> None:
    """The folders (each by its name) as one tar.xz, bytecode left out."""
    with lzma.open(out, "wb", preset=9) as packed, tarfile.open(fileobj=packed, mode="w") as tar:
        for folder in folders:
            for path in sorted(folder.rglob("*")):
                if path.is_file() and "__pycache__" not in path.parts:
                    relative = path.relative_to(folder.parent).as_posix()
                    tar.add(path, relative, recursive=False)


def repository_bytes() -> int:
    """What the device tool sends of the repository: its tracked and untracked, not ignored
    files."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO, capture_output=True, check=True,
    ).stdout  # fmt: skip
    paths = (REPO / name for name in listed.decode().split("\0") if name)
    return sum(path.stat().st_size for path in paths if path.is_file())


RUN_SH = """#!/usr/bin/env bash
# gpu_check's Python path on this GPU machine, from the repository's root, after
# `make gpu-bundle` put this folder at build/gpu-bundle (the device tool: carry it).
# `run.sh compiled` (torch.compile and piecewise CUDA graphs, then the Triton kernels) or
# `run.sh eager`; `run.sh` runs both. Reports and logs go to ${OUT:-build}/<mode>/.
set -euo pipefail
bundle=build/gpu-bundle
out=${OUT:-build}
modes=${1:-compiled eager}
if ! python3 -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)'; then
    echo "gpu-bundle: no GPU found (torch.cuda.is_available() is False): nothing was run." >&2
    exit 3
fi
work=$(mktemp -d)
python3 -m tarfile -e "$bundle/python-path.tar.xz" "$work"
export PYTHONPATH="$work/src:$work/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
python3 -m model_data_sources build/opt_ml_quick --quick
status=0
for mode in $modes; do
    case "$mode" in
        compiled) flags=() ;;
        eager) flags=(--enforce-eager --skip-kernels) ;;
        *) echo "run.sh: unknown mode $mode (compiled or eager)" >&2; exit 2 ;;
    esac
    mkdir -p "$out/$mode"
    python3 -m gpu_check image --host --opt-ml-root build/opt_ml_quick "${flags[@]}" \\
        --report "$out/$mode/gpu-python-path.md" || status=1
done
exit $status
"""


def build(out: Path, cuda_source: Path, wheels: tuple[str, ...] = WHEELS) -> list[str]:
    """Make the bundle in `out`; the lines to print (what it holds, its size, the command)."""
    shutil.rmtree(out, ignore_errors=True)
    staging = out / "staging"
    lines = source_tree(cuda_source, staging / "src")
    install_wheels(staging / "site", wheels)
    archive([staging / "src", staging / "site"], out / ARCHIVE)
    shutil.rmtree(staging)
    (out / "run.sh").write_text(RUN_SH)
    (out / "run.sh").chmod(0o755)
    size = sum(path.stat().st_size for path in out.rglob("*") if path.is_file())
    together = size + repository_bytes()
    lines += [
        f"{ARCHIVE}: vLLM's patched source and {len(wheels)} packages, {size / 2**20:.1f} MiB",
        f"with the repository {together / 2**20:.1f} MiB of the {LIMIT_BYTES / 2**20:.0f} MiB "
        "a GPU machine takes",
    ]
    if together > LIMIT_BYTES:
        raise BundleError("; ".join([*lines, "the repository or the bundle must shrink"]))
    relative = out.relative_to(REPO) if out.is_relative_to(REPO) else out
    lines.append(f"on the GPU machine, from the repository's root: bash {relative}/run.sh")
    return lines
