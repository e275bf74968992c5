"""`python -m vllm_patches apply|check`: apply the patches to the installed vLLM, or show
whether each is applied (exit 1 when one is not)."""

from __future__ import annotations

import argparse
import sys

from vllm_patches import PatchError, apply, check


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vllm_patches", description=__doc__)
    parser.add_argument("command", choices=["apply", "check"])
    args = parser.parse_args(argv)
    try:
        if args.command == "apply":
            for line in apply():
                print(f"vllm_patches: {line}")
            return 0
        states = check()
    except PatchError as error:
        print(f"vllm_patches: {error}", file=sys.stderr)
        return 1
    for name, found in states.items():
        print(f"vllm_patches: {name}: {found}")
    return 0 if all(found == "applied" for found in states.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
