"""The Python source of PyPI's `vllm` wheel (the CUDA build the GPU image runs), unpacked
once into a cache so that checks can read the GPU image's vLLM on a machine without it.

`python -m gpu_check.vllm_source [--dest DIR]` prints the folder holding `vllm/`. The wheel
is fetched with this Python's pip (about 330 MB, a few seconds on a fast link); only its
`.py` files are kept (about 45 MB), and the wheel is deleted.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from deps.pins import VLLM_VERSION

WHEEL_PLATFORM = "manylinux_2_28_x86_64"
STAMP = ".complete"


class SourceError(Exception):
    """The wheel could not be fetched or read; the message says what to do."""


def default_dest(version: str = VLLM_VERSION) -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "sagemaker-vllm-peagle" / f"vllm-{version}-cuda-source"


def _download(version: str, into: Path) -> Path:
    argv = [
        sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
        "--only-binary=:all:", "--platform", WHEEL_PLATFORM, "--python-version", "3.12",
        "--dest", str(into), f"vllm=={version}",
    ]  # fmt: skip
    result = subprocess.run(argv, capture_output=True, text=True)
    wheels = sorted(into.glob(f"vllm-{version}-*.whl"))
    if result.returncode != 0 or not wheels:
        raise SourceError(
            f"could not download vllm=={version} from the package index ({result.stderr.strip()}"
            "); check the network or pip's index settings, or pass --vllm-source with an "
            "unpacked copy."
        )
    return wheels[0]


def ensure(dest: Path | None = None, version: str = VLLM_VERSION) -> Path:
    """The folder holding `vllm/` of the CUDA wheel, unpacked on first use."""
    dest = dest or default_dest(version)
    if (dest / STAMP).exists():
        return dest
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent) as scratch:
        wheel = _download(version, Path(scratch))
        with zipfile.ZipFile(wheel) as archive:
            names = [n for n in archive.namelist() if n.startswith("vllm/") and n.endswith(".py")]
            archive.extractall(dest, members=names)
    (dest / STAMP).write_text(f"vllm=={version} {WHEEL_PLATFORM}\n")
    return dest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpu_check.vllm_source", description=__doc__)
    parser.add_argument("--dest", type=Path, default=None, help="where to unpack (default: cache)")
    parser.add_argument("--version", default=VLLM_VERSION)
    args = parser.parse_args(argv)
    try:
        print(ensure(args.dest, args.version))
    except SourceError as error:
        print(f"gpu_check.vllm_source: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
