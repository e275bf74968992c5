"""python -m image_build cpu|gpu|standin|training-cpu|training-gpu|training-standin
[--tag TAG]: build the serving image, or the training image (see build.py)."""

from __future__ import annotations

import argparse
import sys

from image_build.build import build
from image_build.docker_daemon import EngineError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m image_build", description=__doc__)
    parser.add_argument(
        "target",
        choices=["cpu", "gpu", "standin", "training-cpu", "training-gpu", "training-standin"],
        help="cpu: on docker/cpu-base; standin: on docker/gpu-standin-base (vLLM's CUDA wheel)",
    )
    parser.add_argument("--tag", help="the image's tag")
    args = parser.parse_args(argv)
    try:
        build(args.target, args.tag)
    except EngineError as error:
        print(f"image_build: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
