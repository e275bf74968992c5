"""`python3 -m gpu_check kernels --vllm-source DIR [--interpret]`: gpu_check/kernels.py;
`python -m gpu_check image [--image IMAGE | --host]`: gpu_check/image_check.py;
`python -m gpu_check bundle [--out DIR]`: gpu_check/bundle.py."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m gpu_check", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    kernels = commands.add_parser("kernels", help="vLLM's P-EAGLE Triton kernels on this GPU")
    kernels.add_argument(
        "--vllm-source", type=Path, required=True, help="a folder holding vLLM's vllm/ source"
    )
    kernels.add_argument(
        "--interpret", action="store_true", help="Triton's interpreter on the CPU, not a GPU"
    )
    kernels.add_argument("--seed", type=int, default=0)
    kernels.add_argument("--cases", type=int, default=2, help="cases per K pair (default 2)")
    kernels.add_argument(
        "--only", action="append", help="check only this kernel (repeatable; default: all)"
    )
    image = commands.add_parser("image", help="the serving image on this GPU, end to end")
    image.add_argument("--image", default="sagemaker-vllm-peagle:latest")
    image.add_argument("--opt-ml-root", type=Path, default=Path("build/opt_ml_quick"))
    image.add_argument("--report", type=Path, default=Path("build/gpu-check.md"))
    image.add_argument("--host", action="store_true", help="the venv's vLLM, not the image")
    image.add_argument(
        "--enforce-eager", action="store_true", help="no compile, no CUDA graphs (a fallback)"
    )
    image.add_argument("--skip-kernels", action="store_true", help="no kernel check")
    bundle = commands.add_parser(
        "bundle", help="what a bare GPU machine needs to run vLLM's CUDA Python path"
    )
    bundle.add_argument("--out", type=Path, default=None, help="default build/gpu-bundle")
    bundle.add_argument("--vllm-source", type=Path, default=None, help="default: the cache")
    args = parser.parse_args(argv)
    if args.command == "bundle":
        return make_bundle(args.out, args.vllm_source)
    if args.command == "image":
        from gpu_check import image_check

        return image_check.main(
            args.image,
            args.opt_ml_root.resolve(),
            args.report,
            args.host,
            args.enforce_eager,
            args.skip_kernels,
        )
    from gpu_check import kernels as kernel_check

    only = tuple(args.only or kernel_check.KERNELS)
    if unknown := sorted(set(only) - set(kernel_check.KERNELS)):
        parser.error(f"unknown kernel {unknown}; the kernels are {list(kernel_check.KERNELS)}")
    return kernel_check.main(args.vllm_source, args.interpret, args.seed, args.cases, only)


def make_bundle(out: Path | None, vllm_source: Path | None) -> int:
    from gpu_check import bundle
    from gpu_check import vllm_source as source

    try:
        lines = bundle.build(out or bundle.DEFAULT_OUT, vllm_source or source.ensure())
    except (bundle.BundleError, source.SourceError) as error:
        print(f"gpu_check bundle: {error}", file=sys.stderr)
        return 1
    for line in lines:
        print(f"gpu_check bundle: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
